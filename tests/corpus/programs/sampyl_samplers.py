# The sampler tests of mcleonard/sampyl (sampyl/tests/test_samplers.py and its models,
# sampyl/tests/logps.py; MIT licence, see tests/corpus/LICENSE-sampyl) made into a script:
# NUTS on a logp that returns its own autograd gradient (grad_logp=True), a Chain of
# Metropolis and NUTS steps each conditioned on the other's variable, Hamiltonian and NUTS
# on a linear model whose logp returns -inf out of bounds (a Python `if` on the values).
# Changed: the tests' bodies run in sequence at module level (their traces kept), 100
# samples -> 5; the tests of parallel chains (multiprocessing), of the NumPy-only
# fallback and of bad arguments left out; smp.outofbounds, since renamed, as
# smp.fails_constraints.
from __future__ import division

from sampyl.core import np, auto_grad_logp
import sampyl as smp

n_samples = 5

###### Poisson model ######
before = np.random.poisson(7, size=12)
after = np.random.poisson(9, size=12)
def poisson_logp(lam1, lam2):
    # Rates for Poisson must be > 0
    if lam1 <= 0 or lam2 <=0:
        return -np.inf
    else:
        # logps for likelihoods
        llh1 = np.sum(before*np.log(lam1)) - before.size*lam1
        llh2 = np.sum(after*np.log(lam2)) - after.size*lam2

        # logps for priors
        lam1_prior = -lam1
        lam2_prior = -lam2
        return llh1 + llh2 + lam1_prior + lam2_prior


def poisson_with_grad(lam1, lam2):
    grad_logp = auto_grad_logp(poisson_logp)
    grad = np.array([grad_logp[each](lam1, lam2) for each in ['lam1', 'lam2']])
    return poisson_logp(lam1, lam2), grad

###### Linear model ##########
true_b = np.random.randn(5)
x = np.random.rand(5, 10)
data = np.dot(true_b, x)
def linear_model_logp(b, sig):
    if smp.fails_constraints(sig > 0):
        return -np.inf
    mu = np.dot(b, x)
    n = len(data)
    likelihood = -n*0.5*np.log(2*np.pi) - \
                  n*0.5*np.log(sig**2) - \
                  np.sum((data - mu)**2)/(2*sig**2)
    prior_sig = -np.log(np.abs(sig))
    prior_b = smp.uniform(b, lower=-5, upper=10)
    return likelihood + prior_sig + prior_b


# test_logp_with_grad
logp = poisson_with_grad
start = {'lam1':1., 'lam2': 1.}
nuts = smp.NUTS(logp, start, grad_logp=True)
chain = nuts.sample(n_samples)
assert(len(chain)==n_samples)

# test_sample_chain
start = {'lam1': 1., 'lam2': 1.}
step1 = smp.Metropolis(poisson_logp, start, condition=['lam2'])
step2 = smp.NUTS(poisson_logp, start, condition=['lam1'])
chain = smp.Chain([step1, step2], start)
trace = chain.sample(n_samples)
assert(trace.shape == (n_samples,))

# test_hamiltonian_linear_model
logp = linear_model_logp
start = {'b': np.zeros(5), 'sig': 1.}
hmc = smp.Hamiltonian(logp, start)
hmc_trace = hmc.sample(n_samples)
assert(hmc_trace.shape == (n_samples,))

# test_nuts_linear_model
logp = linear_model_logp
start = {'b': np.zeros(5), 'sig': 1.}
nuts = smp.NUTS(logp, start)
nuts_trace = nuts.sample(n_samples)
assert(nuts_trace.shape == (n_samples,))
