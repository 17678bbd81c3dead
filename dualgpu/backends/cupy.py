"""The CuPy backend. This is the only module of dualgpu that imports CuPy."""
from __future__ import annotations

import functools

from . import Backend


class CupyBackend(Backend):
    name = "cupy"
    is_cupy = True

    def __init__(self):
        import cupy
        import cupyx
        import cupyx.scipy.sparse
        import cupyx.scipy.special

        self.xp = cupy
        self.cupyx = cupyx
        self.special = cupyx.scipy.special
        self.sparse = cupyx.scipy.sparse

    def is_array(self, x) -> bool:
        return isinstance(x, self.xp.ndarray)

    def is_sparse(self, x) -> bool:
        return self.sparse.issparse(x)

    def scatter_add(self, out, key, values):
        self.cupyx.scatter_add(out, key, values)
        return out

    def linear_operator(self, shape, matvec, dtype):
        from cupyx.scipy.sparse.linalg import LinearOperator

        return LinearOperator(shape, matvec=matvec, rmatvec=matvec, dtype=dtype)


@functools.lru_cache(maxsize=1)
def get_cupy_backend() -> CupyBackend:
    return CupyBackend()


def cupy_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False
