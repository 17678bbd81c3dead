# Source: wittawatj/kernel-gof, ipynb/gof_linear_kernel_stein.ipynb, commit 039a95ed9d8062e283da6bd051b7161a190b4876
# (https://github.com/wittawatj/kernel-gof), MIT licence: tests/corpus/LICENSE-kgof.
# The notebook's code cells, in order, made into a script (its '%' magic lines left out).
# Changed: nothing else (the time its test reports is not compared).
#%config InlineBackend.figure_format = 'svg'
#%config InlineBackend.figure_format = 'pdf'

import kgof
import kgof.data as data
import kgof.density as density
import kgof.goftest as gof
import kgof.kernel as ker
import kgof.util as util
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import scipy.stats as stats

# font options
font = {
    #'family' : 'normal',
    #'weight' : 'bold',
    'size'   : 18
}

plt.rc('font', **font)
plt.rc('lines', linewidth=2)
matplotlib.rcParams['pdf.fonttype'] = 42
matplotlib.rcParams['ps.fonttype'] = 42

# true p
seed = 20
d = 1
mean = np.zeros(d)
variance = 1
isonorm = density.IsotropicNormal(mean, variance)

# sample
n = 1000

# only one dimension of the mean is shifted
#draw_mean = mean + np.hstack((1, np.zeros(d-1)))
draw_mean = mean + 0
draw_variance = variance + 0
X = util.randn(n, d, seed=seed+2)*np.sqrt(draw_variance) + draw_mean
dat = data.Data(X)

# Test
alpha = 0.01

sig2 = util.meddistance(X, subsample=1000)**2
k = ker.KGauss(sig2)
#k = ker.KGauss(1)

lin_kstein = gof.LinearKernelSteinTest(isonorm, k, alpha=alpha, seed=seed+1)

lin_kstein_result = lin_kstein.perform_test(dat)
lin_kstein_result
#kstein.compute_stat(dat)




