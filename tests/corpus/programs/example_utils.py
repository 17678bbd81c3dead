# Source: rgiordan/paragami, docs/source/example_notebooks/example_utils.py, commit 059bb354b816bafe821d446ece2fb9b968a39d83
# (https://github.com/rgiordan/paragami; the same file in rgiordan/vittles at 73990cae90bd9147990b27953621a0539e54a237),
# Apache licence 2.0: tests/corpus/LICENSE-paragami. Changed: nothing.
import autograd
import autograd.numpy as np
import autograd.scipy as sp

def regularizer(par_dict, lam):
    return np.sum(lam * (par_dict['mu'] ** 2))

def get_normal_log_prob(x, sigma, mu):
    sigma_inv = np.linalg.inv(sigma)
    sigma_det_sign, sigma_log_det = np.linalg.slogdet(sigma)
    if sigma_det_sign <= 0:
        return np.full(float('inf'), x.shape[0])
    else:
        x_centered = x - np.expand_dims(mu, axis=0)
        return -0.5 * (
            np.einsum('ni,ij,nj->n', x_centered, sigma_inv, x_centered) + \
            sigma_log_det)

def draw_bootstrap_weights(n):
    return np.random.multinomial(n, np.full(n, 1 / n))
