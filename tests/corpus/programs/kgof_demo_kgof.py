# Source: wittawatj/kernel-gof, ipynb/demo_kgof.ipynb, commit 039a95ed9d8062e283da6bd051b7161a190b4876
# (https://github.com/wittawatj/kernel-gof), MIT licence: tests/corpus/LICENSE-kgof.
# The notebook's code cells, in order, made into a script (its '%' magic lines left out).
# Changed: 400 data points -> 200, 50 optimization steps -> 10; plotting by the stand-in.

import kgof
import kgof.data as data
import kgof.density as density
import kgof.goftest as gof
import kgof.kernel as kernel
import kgof.util as util
import matplotlib
import matplotlib.pyplot as plt
import autograd.numpy as np
import scipy.stats as stats

# Assume two dimensions.
d = 2
def isogauss_log_den(X):
    """
    Evaluate the log density at the points (rows) in X 
    of the standard isotropic Gaussian.
    Note that the density is NOT normalized. 
    
    X: n x d nd-array
    return a length-n array
    """
    mean = np.zeros(d)
    variance = 1
    unden = -np.sum((X-mean)**2, 1)/(2.0*variance)
    return unden

# p is an UnnormalizedDensity object
p = density.from_log_den(d, isogauss_log_den)

# Let's assume that m = 1.

# If m=0, then p=q and H_0 is true.
# m = 0
m = 1

# Draw n points from q
seed = 4
np.random.seed(seed)
n = 200
X = np.random.randn(n, 2) + np.array([m, 0])

plt.plot(X[:, 0], X[:, 1], 'ko', label='Data from $q$')
plt.legend()

# dat will be fed to the test.
dat = data.Data(X)

# We will use 20% of the data for parameter tuning, and 80% for testing.
tr, te = dat.split_tr_te(tr_proportion=0.2, seed=2)

# J is the number of test locations (or features). Typically not larger than 10.
J = 1

# There are many options for the optimization. 
# Almost all of them have default values. 
# Here, we will list a few to give you a sense of what you can control.
# Full options can be found in gof.GaussFSSD.optimize_locs_widths(..)
opts = {
    'reg': 1e-2, # regularization parameter in the optimization objective
    'max_iter': 10, # maximum number of gradient ascent iterations
    'tol_fun':1e-7, # termination tolerance of the objective
}

# make sure to give tr (NOT te).
# do the optimization with the options in opts.
V_opt, gw_opt, opt_info = gof.GaussFSSD.optimize_auto_init(p, tr, J, **opts)

opt_info

# alpha = significance level of the test
alpha = 0.01
fssd_opt = gof.GaussFSSD(p, gw_opt, V_opt, alpha)

# return a dictionary of testing results
test_result = fssd_opt.perform_test(te)
test_result

# xtr is an n x d numpy array
xtr = tr.data()

# training data
plt.plot(xtr[:, 0], xtr[:, 1], 'ko', label='Training data')

# feature
plt.plot(V_opt[:, 0], V_opt[:, 1], 'r*', label='Learned feature(s)', markersize=20)

max0, max1 = np.max(xtr, 0)
min0, min1 = np.min(xtr, 0)

sd0, sd1 = ((max0-min0)*0.4, (max1-min1)*0.4)
# form a test location grid to try 
nd0 = 30
nd1 = 30
loc0_cands = np.linspace(min0-sd0/2, max0+sd0/2, nd0)
loc1_cands = np.linspace(min1-sd1/2, max1+sd1/2, nd1)
lloc0, lloc1 = np.meshgrid(loc0_cands, loc1_cands)
# nd1 x nd0 x 2
loc3d = np.dstack((lloc0, lloc1))
# #candidates x 2
all_loc2s = np.reshape(loc3d, (-1, 2) )

den_grid = np.exp(p.log_den(all_loc2s))
den_grid = np.reshape(den_grid, (nd1, nd0))

# plt.figure(figsize=(10, 6))
# Plot the unnormalized density
CS = plt.contour(lloc0, lloc1, den_grid, alpha=0.7)
plt.legend(numpoints=1, loc='best')

def isogauss_grad_log(X):
    """
    Evaluate the gradient of the log density of N(0, I) at the points (rows) in X.
    
    X: n x d nd-array
    Return an n x d numpy array of gradients
    """
    return -X

p1 = density.from_grad_log(d, isogauss_grad_log)






