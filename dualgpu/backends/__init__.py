"""Array backends. ``backend_of(arrays)`` picks NumPy or CuPy from the arguments; what the
layers above ask of it is the :class:`~dualgpu.backends.base.Backend` protocol. Only
:mod:`dualgpu.backends.cupy` imports CuPy."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import BackendMismatchError
from . import cupy as _cupy
from .base import MEMBERS, Backend, missing_members
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
    """The backend whose namespace is ``xp`` (``numpy`` or ``cupy``)."""
    if xp is np:
        return _numpy()
    return _cupy.get_cupy_backend()


def backend_named(name: str) -> Backend:
    """The backend called ``name`` (``"numpy"`` or ``"cupy"``): what a task run in another
    process names its backend by.

    Example::

        >>> backend_named("numpy").xp is np
        True
    """
    if name == "numpy":
        return _numpy()
    if name == "cupy":
        return _cupy.get_cupy_backend()
    raise ValueError(f"no backend is called {name!r}; the backends are 'numpy' and 'cupy'")


__all__ = ["MEMBERS", "NUMPY", "Backend", "array_backend", "backend_for_xp", "backend_named",
           "backend_of", "missing_members", "namespace_of"]
