# The tutorial of mcleonard/sampyl (docs_source/tutorial.rst, MIT licence, see
# tests/corpus/LICENSE-sampyl) made into a script: a Bayesian linear model, its maximum a
# posteriori by scipy.optimize.minimize with autograd's gradient, then NUTS samples.
# Changed: 200 data points -> 50, 2100 samples (burn 100) -> 6 (burn 2); the chain's means printed; plotting off.
import matplotlib.pyplot as plt
import sampyl as smp
from sampyl import np

# Number of data points
N = 50

# True parameters
sigma = 1
true_b = np.array([2, 1, 4])

# Features, including a constant
X = np.ones((N, len(true_b)))
X[:,1:] = np.random.rand(N, len(true_b)-1)

# Outcomes
y = np.dot(X, true_b) + np.random.randn(N)*sigma

# Here, b is a length 3 array of coefficients
def logp(b, sig):

    model = smp.Model()

    # Predicted value
    y_hat = np.dot(X, b)

    # Log-likelihood
    model.add(smp.normal(y, mu=y_hat, sig=sig))

    # log-priors
    model.add(smp.exponential(sig),
              smp.normal(b, mu=0, sig=100))

    return model()

start = smp.find_MAP(logp, {'b': np.ones(3), 'sig': 1.})
nuts = smp.NUTS(logp, start)
chain = nuts.sample(6, burn=2)

plt.plot(chain.b)
print(start['b'], start['sig'])
print(chain.b.mean(axis=0), chain.sig.mean())
