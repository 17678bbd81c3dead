# Source: HIPS/autograd, docs/tutorial.md ("Extend Autograd by defining your own
# primitives"), commit bff107b8d71a444a1160deade3e1cbd0b92f4fa6
# (https://github.com/HIPS/autograd), MIT licence: tests/corpus/LICENSE-autograd.
# Changed: the snippets joined; Python 2's print statement as print() (and its missing
# closing parenthesis added).
import autograd.numpy as np
from autograd.extend import primitive, defvjp

@primitive
def logsumexp(x):
    """Numerically stable log(sum(exp(x)))"""
    max_x = np.max(x)
    return max_x + np.log(np.sum(np.exp(x - max_x)))

def logsumexp_vjp(ans, x):
    x_shape = x.shape
    return lambda g: np.full(x_shape, g) * np.exp(x - np.full(x_shape, ans))

defvjp(logsumexp, logsumexp_vjp)

from autograd import grad

def example_func(y):
    z = y**2
    lse = logsumexp(z)
    return np.sum(lse)

grad_of_example = grad(example_func)
print("Gradient: ", grad_of_example(np.array([1.5, 6.7, 1e-10])))
