# Source: pierreablin/autoptim, tutorials/rosenbrock.py, commit 0b03d0f8c5b54000d679009640303fad2caf1ebf
# (https://github.com/pierreablin/autoptim), MIT licence: tests/corpus/LICENSE-autoptim.
# Changed: nothing.
# Author: Pierre Ablin <pierreablin@gmail.com>
# License: MIT

# This is the simplest example of autoptim use.


import autograd.numpy as np
from autoptim import minimize


# Specify the loss function :
def rosenbrock(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2

# Choose the starting point:


x0 = np.zeros(2)

x_min, _ = minimize(rosenbrock, x0)
print(x_min)
