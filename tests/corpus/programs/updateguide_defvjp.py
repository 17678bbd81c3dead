# Source: HIPS/autograd, docs/updateguide.md ("New defvjp interface", "Gradient checking"),
# commit bff107b8d71a444a1160deade3e1cbd0b92f4fa6 (https://github.com/HIPS/autograd), MIT
# licence: tests/corpus/LICENSE-autograd.
# Changed: the new-interface snippet and the gradient-checking snippet joined (the old
# interface's snippet is not, as autograd no longer runs it); calls added at the end: the
# gradients in x and y at one point, and check_grads of func (the guide's my_func).
import autograd.numpy as np
from autograd.extend import primitive, defvjp  # defvjp is now a function

# primitives look the same as before
@primitive
def func(x, y, z):
    assert z != 0
    return x * y**2

# but we call defvjp differently
defvjp(func,
       lambda ans, x, y, z: lambda g: g * y**2,
       lambda ans, x, y, z: lambda g: 2 * g * x * y,
       None)

from autograd.test_util import check_grads

from autograd import grad

my_func = lambda x, y: np.sum(func(x, y, 3.0))
args_for_my_func = (np.array([1.0, -2.0]), np.array([0.5, 1.5]))
print(grad(my_func, 0)(*args_for_my_func), grad(my_func, 1)(*args_for_my_func))

# check reverse-mode to second order
check_grads(my_func, modes=['rev'], order=2)(*args_for_my_func)
