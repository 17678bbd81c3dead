# rgiordan/vittles's package (https://github.com/rgiordan/vittles), commit
# 73990cae90bd9147990b27953621a0539e54a237, Apache licence 2.0: tests/corpus/LICENSE-vittles.
# Changed: its tests/ left out; _version.py's keywords filled in as `git archive` does (as in
# paragami's copy), so that importing it runs no git command.
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
