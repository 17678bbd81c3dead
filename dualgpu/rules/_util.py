"""Helpers shared by the rule modules: shape inference, dtype promotion, unbroadcasting."""
from __future__ import annotations

import operator

import numpy as np

from ..core.ir import Aval
from ..errors import AxisError, DualgpuError

_WEAK_EXAMPLE = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}


def promote(avals) -> np.dtype:
    """NumPy's result type; weak (Python scalar) operands promote as Python scalars do."""
    parts = []
    for a in avals:
        parts.append(_WEAK_EXAMPLE[a.dtype.kind] if a.weak else a.dtype)
    return np.result_type(*parts)


def broadcast_shapes(*shapes, op: str = "op") -> tuple:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise DualgpuError(
            f"{op}: shapes {', '.join(str(tuple(s)) for s in shapes)} do not broadcast") from None


def is_float(dtype) -> bool:
    return np.dtype(dtype).kind in "fc"


def float_dtype(dtype) -> np.dtype:
    """The floating type an op like exp gives for ``dtype`` (ints become float64)."""
    dtype = np.dtype(dtype)
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def real_dtype(dtype) -> np.dtype:
    """The real type of ``dtype``'s values: float32 for complex64, float64 for complex128;
    other dtypes unchanged."""
    dtype = np.dtype(dtype)
    return np.empty(0, dtype).real.dtype if dtype.kind == "c" else dtype


def check_axis(axis, ndim: int, op: str) -> int:
    """``axis`` normalized into ``range(ndim)``; out of bounds raises :class:`AxisError` as
    NumPy does (negative axes in range count from the end)."""
    from ..errors import user_location

    try:
        a = operator.index(axis)  # NumPy refuses 1.5 and (0,) where one axis is expected
    except TypeError:
        raise DualgpuError(f"{op}: axis {axis!r} is not an integer (at {user_location()})"
                           ) from None
    if not -ndim <= a < ndim:
        raise AxisError(f"{op}: axis {a} is out of bounds for an array of dimension {ndim} "
                        f"(at {user_location()})")
    return a % ndim


def normalize_axes(axis, ndim: int, op: str = "op") -> tuple:
    """A sorted tuple of distinct axes in ``range(ndim)`` (all of them for ``None``)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (int(axis),)
    elif not isinstance(axis, (tuple, list)):
        axis = (axis,)  # check_axis refuses what is not an integer
    out = [check_axis(a, ndim, op) for a in axis]
    if len(set(out)) != len(out):
        from ..errors import user_location

        raise AxisError(f"{op}: repeated axis in {tuple(axis)} (at {user_location()})")
    return tuple(sorted(out))


def unbroadcast(g, aval: Aval):
    """Sum ``g`` down to ``aval``'s shape (undoing NumPy broadcasting) and cast to its dtype."""
    from .. import numpy_api as dnp

    if g is None:
        return None
    shape = tuple(aval.shape)
    gshape = tuple(np.shape(g))
    if gshape != shape:
        lead = len(gshape) - len(shape)
        axes = tuple(range(lead)) + tuple(
            lead + i for i, s in enumerate(shape) if s == 1 and gshape[lead + i] != 1)
        if axes:
            g = dnp.sum(g, axis=axes)
        if tuple(np.shape(g)) != shape:
            g = dnp.reshape(g, shape)
    dt = getattr(g, "dtype", None)
    if dt is not None and dt.kind == "c" and aval.dtype.kind == "f":
        # the cotangent of a real value under a complex op: its real part (JAX's rule)
        g = dnp.real(g)
        dt = g.dtype
    if dt is not None and dt != aval.dtype and is_float(aval.dtype):
        g = dnp.astype(g, aval.dtype)
    return g


def wants_cotangent(x) -> bool:
    """True for a traced floating-point primal: the only kind a VJP rule gives a cotangent."""
    from ..core.trace import Tracer

    return isinstance(x, Tracer) and x.dtype.kind in "fc"


def add_any(a, b):
    """Add two cotangents or tangents, either of which may be a symbolic zero (None)."""
    from .. import numpy_api as dnp

    if a is None:
        return b
    if b is None:
        return a
    return dnp.add(a, b)
