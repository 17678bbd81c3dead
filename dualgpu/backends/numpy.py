"""The NumPy backend: the embedded default, runs anywhere."""
from __future__ import annotations

import contextlib

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg
import scipy.special

from .base import Backend


class NumpyBackend(Backend):
    """NumPy and SciPy on the host: generated Python (or, for tiny programs with
    ``dg.config["host_kernel"]``, a kernel compiled for the host CPU)."""

    name = "numpy"
    export_target = "numpy"
    xp = np
    special = scipy.special
    linalg = scipy.linalg
    sparse = sp
    sparse_linalg = scipy.sparse.linalg
    on_device = False
    runs_fused_kernels = False
    runs_host_kernels = True
    replays_cuda_graphs = False
    checks_indices = True

    def is_array(self, x) -> bool:
        return isinstance(x, np.ndarray)

    def is_sparse(self, x) -> bool:
        return sp.issparse(x)

    @staticmethod
    def to_device(a):
        return a

    @staticmethod
    def to_host(a):
        return np.asarray(a)

    @staticmethod
    def as_arrays(values: list) -> list:
        # NumPy's generated Python returns NumPy scalars for 0-d values
        return [o if isinstance(o, np.ndarray) else np.asarray(o) for o in values]

    @staticmethod
    def device_of(a):
        return "cpu"

    @staticmethod
    def default_device():
        return "cpu"

    @staticmethod
    def synchronize() -> None:
        return None

    @staticmethod
    def stable_sort(x, axis: int):
        return np.sort(x, axis=axis, kind="stable")

    @staticmethod
    def stable_argsort(x, axis: int):
        return np.argsort(x, axis=axis, kind="stable")

    @staticmethod
    def scatter_add(out, key, values):
        np.add.at(out, key, values)
        return out

    @staticmethod
    def linear_operator_class():
        """SciPy's LinearOperator (HessianOperator subclasses it for NumPy inputs)."""
        return scipy.sparse.linalg.LinearOperator

    @staticmethod
    def matmul_precision(precision: str):
        return contextlib.nullcontext()  # NumPy has no TF32


NUMPY = NumpyBackend()
