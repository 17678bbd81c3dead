# Source: HIPS/autograd, README.md ("Example use"), commit
# bff107b8d71a444a1160deade3e1cbd0b92f4fa6 (https://github.com/HIPS/autograd), MIT licence:
# tests/corpus/LICENSE-autograd.
# Changed: the interactive session as a script (each >>> expression printed); x has 70
# points, not 700.
import autograd.numpy as np  # Thinly-wrapped numpy
from autograd import grad    # The only autograd function you may ever need

def tanh(x):                 # Define a function
    return (1.0 - np.exp((-2 * x))) / (1.0 + np.exp(-(2 * x)))

grad_tanh = grad(tanh)       # Obtain its gradient function
print(grad_tanh(1.0))               # Evaluate the gradient at x = 1.0
print((tanh(1.0001) - tanh(0.9999)) / 0.0002)  # Compare to finite differences

from autograd import elementwise_grad as egrad  # for functions that vectorize over inputs
import matplotlib.pyplot as plt
x = np.linspace(-7, 7, 70)
plt.plot(x, tanh(x),
         x, egrad(tanh)(x),                                     # first  derivative
         x, egrad(egrad(tanh))(x),                              # second derivative
         x, egrad(egrad(egrad(tanh)))(x),                       # third  derivative
         x, egrad(egrad(egrad(egrad(tanh))))(x),)               # fourth derivative
plt.show()
