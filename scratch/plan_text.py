import sys
import numpy as np
import dualgpu as dg
from dualgpu import api
from dualgpu.vectorize import vmap
sys.path.insert(0, ".")
from benchmarks.sparse_derivatives import rosenbrock, poisson, make_point, hand_seeds
n = 1000
f = rosenbrock(np)
def compressed(x, seeds):
    return vmap(api.hvp(f), in_axes=(None, 0))(x, seeds)
x = make_point(n); s = hand_seeds("rosenbrock", n)
print(dg.export(compressed, x, s, backend="cupy"))
