"""The NumPy backend: the embedded default, runs anywhere."""
from __future__ import annotations

import contextlib
import ctypes
import os
import platform

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

    @staticmethod
    def keep_freed_memory() -> None:
        keep_freed_host_memory()


# glibc's malloc options (malloc.h): M_TRIM_THRESHOLD, M_MMAP_THRESHOLD
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_kept: list[bool] = []


def keep_freed_host_memory() -> bool:
    """Have glibc's ``malloc`` keep freed memory in the process, once; whether it applied.

    By default glibc gives the top of its heap back to the kernel whenever more than 128 KiB
    of it is free, and the next allocation faults the pages in again, one by one: a training
    loop on NumPy arrays of tens of KiB spends more time in those page faults than in its
    arithmetic (examples/pinn_poisson.py: 1.9 s of system time against 1.5 s of user time).
    The thresholds set here, 32 MiB for ``mmap`` and 64 MiB for giving memory back, are
    those glibc itself moves to once a large array was freed (its dynamic threshold's
    maximum on 64-bit machines, and twice that). Nothing is changed where the process has
    its own settings (a ``MALLOC_*`` environment variable), or the C library is not glibc.
    """
    if _kept:
        return _kept[0]
    applied = False
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc" and \
            not any(name.startswith("MALLOC_") for name in os.environ):
        try:
            mallopt = ctypes.CDLL(None).mallopt
        except (OSError, AttributeError):
            mallopt = None
        if mallopt is not None:
            applied = bool(mallopt(_M_MMAP_THRESHOLD, 32 << 20)) and \
                bool(mallopt(_M_TRIM_THRESHOLD, 64 << 20))
    _kept.append(applied)
    return applied


NUMPY = NumpyBackend()
