from vittles.sensitivity_lib import \
    HyperparameterSensitivityLinearApproximation, \
    ParametricSensitivityTaylorExpansion

from vittles.sparse_hessian_lib import SparseBlockHessian
from vittles.lr_cov_lib import LinearResponseCovariances
import vittles.solver_lib
import vittles.bivariate_sensitivity_lib

from ._version import get_versions
__version__ = get_versions()['version']
del get_versions
