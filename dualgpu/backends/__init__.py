"""Array backends. ``backend_of(arrays)`` picks NumPy or CuPy from the arguments; only
:mod:`dualgpu.backends.cupy` imports CuPy."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import BackendMismatchError
from . import cupy as _cupy
from .base import Backend
from .numpy import NUMPY


def _is_cupy_object(x) -> bool:
    mod = type(x).__module__ or ""
    return mod.startswith("cupy") or mod.startswith("cupyx")


def array_backend(x) -> Backend | None:
    """The backend owning array (or sparse matrix) ``x``, or None for anything else."""
    if isinstance(x, np.ndarray):
        return _numpy()
    if isinstance(x, (int, float, complex, bool, str, type(None))):
        return None
    if _numpy().is_sparse(x):
        return _numpy()
    if _is_cupy_object(x):
        b = _cupy.get_cupy_backend()
        if b.is_array(x) or b.is_sparse(x):
            return b
    return None


def _numpy() -> Backend:
    return NUMPY


def backend_of(args: Sequence[Any], what: str = "arguments") -> Backend:
    """The one backend of the array arguments (NumPy when there are none)."""
    found: Backend | None = None
    for a in args:
        b = array_backend(a)
        if b is None:
            continue
        if found is not None and b is not found:
            raise BackendMismatchError(
                f"the {what} mix NumPy and CuPy arrays; move them to one library first "
                "(cupy.asarray(x) or x.get())")
        found = b
    return found or _numpy()


def namespace_of(args: Sequence[Any]):
    """``numpy`` or ``cupy``, for eager evaluation of a primitive."""
    return backend_of(args).xp


def backend_for_xp(xp) -> Backend:
    if xp is np:
        return _numpy()
    return _cupy.get_cupy_backend()
