"""The CuPy backend. CuPy is imported here and, lazily, by the two modules beside it that
run it: :mod:`~dualgpu.backends.cublas` (GEMMs on our own handle) and
:mod:`~dualgpu.backends.cuda_graphs` (graph replay)."""
from __future__ import annotations

import functools
import importlib

from ..errors import CupyImportError
from .base import Backend


class CupyBackend(Backend):
    """CuPy on the current CUDA device: fused-kernel plans replayed as CUDA graphs (or, with
    ``dg.config["fuse"] = False``, the generated Python run op by op)."""

    name = "cupy"
    export_target = "cupy"
    on_device = True
    runs_fused_kernels = True
    runs_host_kernels = False
    replays_cuda_graphs = True
    checks_indices = False

    def __init__(self):  # without CuPy there is no backend: fail here, not at a first use
        for name in ("cupy", "cupyx.scipy.sparse", "cupyx.scipy.special"):
            import_cupy(name)

    # the modules, imported at first use (then plain instance attributes)
    @functools.cached_property
    def xp(self):
        return import_cupy("cupy")

    @functools.cached_property
    def cupyx(self):
        return import_cupy("cupyx")

    @functools.cached_property
    def special(self):
        return import_cupy("cupyx.scipy.special")

    @functools.cached_property
    def linalg(self):
        return import_cupy("cupyx.scipy.linalg")

    @functools.cached_property
    def sparse(self):
        return import_cupy("cupyx.scipy.sparse")

    @functools.cached_property
    def sparse_linalg(self):
        return import_cupy("cupyx.scipy.sparse.linalg")

    def is_array(self, x) -> bool:
        return isinstance(x, self.xp.ndarray)

    def is_sparse(self, x) -> bool:
        return self.sparse.issparse(x)

    def to_device(self, a):
        return self.xp.asarray(a)

    def to_host(self, a):
        return self.xp.asnumpy(a)

    def as_arrays(self, values: list) -> list:
        return values  # CuPy returns 0-d arrays, never scalars

    def device_of(self, a):
        return a.device

    def default_device(self):
        return self.xp.cuda.Device()

    def synchronize(self) -> None:
        self.xp.cuda.Device().synchronize()

    def stable_sort(self, x, axis: int):
        return self.xp.sort(x, axis=axis)  # thrust's sort: always stable

    def stable_argsort(self, x, axis: int):
        import numpy as np

        return self.xp.argsort(x, axis=axis).astype(np.int64, copy=False)

    def scatter_add(self, out, key, values):
        self.cupyx.scatter_add(out, key, values)
        return out

    def linear_operator_class(self):
        """cupyx's LinearOperator (HessianOperator subclasses it for CuPy inputs)."""
        return self.sparse_linalg.LinearOperator

    def matmul_precision(self, precision: str):
        return MatmulPrecision(precision)

    @staticmethod
    def keep_freed_memory() -> None:
        pass  # CuPy's memory pool keeps what its arrays free


def import_cupy(name: str):
    """Import CuPy's module ``name`` (``"cupy"``, ``"cupyx.scipy.special"``...). CuPy that
    is missing, or installed without one of its own dependencies (a half-installed wheel:
    ``No module named 'fastrlock'``), is a :class:`~dualgpu.errors.CupyImportError` that
    says which module is missing and how to fix the installation."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise cupy_import_error(name, e) from e


def cupy_import_error(name: str, e: ImportError) -> CupyImportError:
    """The error for ``import name`` failing with ``e`` (see :func:`import_cupy`)."""
    import importlib.metadata  # the error path only (it costs 10 ms at import)

    dists = sorted(importlib.metadata.packages_distributions().get("cupy", ()))
    wheel = dists[0] if dists else "cupy-cuda12x"
    missing = getattr(e, "name", None)
    if not dists and missing in (None, "cupy", "cupyx"):
        return CupyImportError(
            f"CuPy is not installed (import {name}: {e}); install the CuPy wheel of your "
            "CUDA version: pip install cupy-cuda12x (CUDA 12) or cupy-cuda13x (CUDA 13), or "
            "from a dualgpu checkout pip install '.[cuda12]'", name=missing)
    what = (f"the module {missing!r} that CuPy imports is missing" if missing and
            not missing.startswith(("cupy", "cupyx")) else str(e))
    return CupyImportError(
        f"CuPy ({', '.join(dists) or 'installed'}) cannot be imported: import {name} failed: "
        f"{what}. CuPy is installed without all of its dependencies; reinstall it with "
        f"them: pip install --force-reinstall {wheel}, then check with python -c "
        f"\"import cupy; cupy.show_config()\" (docs/getting_started.md, Install)", name=missing)


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


def _linalg_module():
    """CuPy's matmul module: its per-dtype cuBLAS compute type is what TF32 switches."""
    from cupy._core import _routines_linalg

    return _routines_linalg


class MatmulPrecision:
    """A reusable context that runs CuPy's float32 matmul/einsum library calls with the
    cuBLAS compute type of ``precision`` and restores the previous one afterwards.

    ``"tf32"`` is ``COMPUTE_TYPE_TF32`` (tensor cores, 10-bit mantissa products, float32
    accumulation); ``"float32"`` is ``COMPUTE_TYPE_DEFAULT`` (full float32, even when
    ``CUPY_TF32=1`` is set), and so is ``"tf32x3"``: only the products on dualgpu's own
    cuBLAS handle split their operands (:mod:`dualgpu.backends.cublas`), CuPy's stay
    float32. CuPy keeps the compute type in one process-wide table, so a CuPy matmul of
    another thread made during the call sees it too.

    Example::

        >>> import cupy as cp
        >>> with MatmulPrecision("tf32"):
        ...     y = cp.ones((64, 64), dtype=cp.float32) @ cp.ones((64, 64), dtype=cp.float32)
    """

    __slots__ = ("precision", "_saved")

    def __init__(self, precision: str):
        self.precision = precision
        self._saved: list = []

    def _wanted(self, linalg) -> int:
        if self.precision == "tf32":
            return getattr(linalg, "COMPUTE_TYPE_TF32", 7)
        return getattr(linalg, "COMPUTE_TYPE_DEFAULT", 1)

    def __enter__(self):
        import numpy as np

        linalg = _linalg_module()
        previous = linalg.get_compute_type(np.float32)
        wanted = self._wanted(linalg)
        if previous != wanted:
            linalg.set_compute_type(np.float32, wanted)
            self._saved.append(previous)
        else:
            self._saved.append(None)
        return self

    def __exit__(self, *exc):
        import numpy as np

        previous = self._saved.pop()
        if previous is not None:
            _linalg_module().set_compute_type(np.float32, previous)
        return False
