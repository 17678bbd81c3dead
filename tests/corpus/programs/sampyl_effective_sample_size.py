# examples/effective_sample_size_example.py of mcleonard/sampyl (MIT licence, see
# tests/corpus/LICENSE-sampyl): NUTS against Metropolis on a correlated Gaussian.
# Changed: 1000 samples -> 25; no sys.path edit, TkAgg backend or seaborn; plotting off;
# the effective sample sizes (sampyl.diagnostics, on statsmodels) not computed: the chains
# are compared.
import sampyl as smp
from sampyl import np
import matplotlib.pyplot as plt

# correlated gaussian
def logp(x, y):
    icov = np.linalg.inv(np.array([[1., .8], [.8, 1.]]))
    d = np.array([x, y])
    return -.5 * np.dot(np.dot(d, icov), d)
#logp_xy = lambda(th): logp(th[0], th[1])

start = {'x': 1., 'y': 1.}
# compare the performance of NUTS and Metropolis by effective sample size
nuts = smp.NUTS(logp, start)
nuts_trace = nuts.sample(25)

met = smp.Metropolis(logp, start)
met_trace = met.sample(25)


# graphically compare samples
fig, axarr = plt.subplots(1, 2)
axarr[0].scatter(nuts_trace.x, nuts_trace.y)
axarr[0].set_title("NUTS samples")
axarr[1].scatter(met_trace.x, met_trace.y)
axarr[1].set_title("MH samples")
plt.show()
