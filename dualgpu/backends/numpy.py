"""The NumPy backend: the embedded default, runs anywhere."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.special
from scipy.sparse.linalg import LinearOperator

from .base import Backend


class NumpyBackend(Backend):
    name = "numpy"
    is_cupy = False
    xp = np
    special = scipy.special
    sparse = sp

    def is_array(self, x) -> bool:
        return isinstance(x, np.ndarray)

    def is_sparse(self, x) -> bool:
        return sp.issparse(x)

    @staticmethod
    def scatter_add(out, key, values):
        np.add.at(out, key, values)
        return out

    @staticmethod
    def linear_operator_class():
        """SciPy's LinearOperator (HessianOperator subclasses it for NumPy inputs)."""
        return LinearOperator


NUMPY = NumpyBackend()
