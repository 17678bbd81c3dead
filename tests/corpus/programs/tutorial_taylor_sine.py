# Source: HIPS/autograd, docs/tutorial.md (the while-loop example), commit
# bff107b8d71a444a1160deade3e1cbd0b92f4fa6 (https://github.com/HIPS/autograd), MIT licence:
# tests/corpus/LICENSE-autograd.
# Changed: Python 2's print statement as print(); also the gradient at 1.0 and a second call.
import autograd.numpy as np   # Thinly-wrapped version of Numpy
from autograd import grad

def taylor_sine(x):  # Taylor approximation to sine function
    ans = currterm = x
    i = 0
    while np.abs(currterm) > 0.001:
        currterm = -currterm * x**2 / ((2 * i + 3) * (2 * i + 2))
        ans = ans + currterm
        i += 1
    return ans

grad_sine = grad(taylor_sine)
print("Gradient of sin(pi) is", grad_sine(np.pi))
print("Gradient of sin(1) is", grad_sine(1.0))
