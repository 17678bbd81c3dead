"""Array API standard names that NumPy/CuPy spell differently, written in registry ops.

Traced values implement ``__array_namespace__``: the namespace is the tracing namespace of
their array library, so code written against the array API standard traces and
differentiates::

    def f(x):
        xp = x.__array_namespace__()
        return xp.sum(xp.exp(x) * xp.acos(x / 2))

    dg.grad(f)(np.linspace(0, 1, 5))

:func:`lookup` maps a name (``"acos"``, ``"linalg.vector_norm"``) to its implementation; the
tracing namespace consults it before the NumPy names of :mod:`dualgpu.frontend.numpy`.
"""
from __future__ import annotations

from collections.abc import Callable

from ..core.axes import normalize_axes
from ..errors import InvalidArgumentError, UnsupportedOpError, user_location
from ..lax import shape_of
from . import numpy as dnp
from .numpy.linalg import matrix_norm_of, vector_norm_of

# array API name -> the numpy namespace's name (same signature)
_RENAMED = {
    "acos": "arccos", "asin": "arcsin", "atan": "arctan", "atan2": "arctan2",
    "acosh": "arccosh", "asinh": "arcsinh", "atanh": "arctanh", "pow": "power",
    "bitwise_invert": "invert", "linalg.matmul": "matmul", "linalg.tensordot": "tensordot",
}


def concat(arrays, /, *, axis=0):
    if axis is None:
        return dnp.concatenate([dnp.reshape(a, (-1,)) for a in arrays], axis=0)
    return dnp.concatenate(list(arrays), axis=axis)


def permute_dims(x, /, axes):
    return dnp.transpose(x, tuple(axes))


def matrix_transpose(x, /):
    return dnp.swapaxes(x, -1, -2)


def vecdot(x1, x2, /, *, axis=-1):
    return dnp.sum(dnp.multiply(dnp.conj(x1), x2), axis=axis)


def linalg_diagonal(x, /, *, offset=0):
    """``np.linalg.diagonal``: the diagonals of the matrices of the last two axes (not
    ``np.diagonal``'s first two)."""
    return dnp.diagonal(x, offset, -2, -1)


def linalg_trace(x, /, *, offset=0, dtype=None):
    """``np.linalg.trace``: the traces of the matrices of the last two axes."""
    return dnp.sum(dnp.diagonal(x, offset, -2, -1), axis=-1, dtype=dtype)


def linalg_outer(x1, x2, /):
    """``np.linalg.outer``: of vectors only (``np.outer`` flattens its arguments)."""
    if dnp.ndim(x1) != 1 or dnp.ndim(x2) != 1:
        raise InvalidArgumentError(f"np.linalg.outer: input arrays must be one-dimensional, "
                                   f"but they are x1.ndim={dnp.ndim(x1)} and "
                                   f"x2.ndim={dnp.ndim(x2)} (at {user_location()})")
    return dnp.outer(x1, x2)


def positive(x, /):
    return x


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    ndim = len(shape_of(x))
    if axis is None:
        if ndim != 1:
            raise UnsupportedOpError("cumulative_sum needs axis= for arrays of more than one "
                                     "dimension")
        axis = 0
    out = dnp.cumsum(x, axis=axis, dtype=dtype)
    if include_initial:
        axis = axis % ndim
        first = tuple([slice(None)] * axis + [slice(0, 1)])
        out = dnp.concatenate([dnp.multiply(dnp.getitem(out, first), 0), out], axis=axis)
    return out


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The array API's vector norm: over ``axis`` (all axes when None, several axes as one
    flattened vector); the same conventions as ``np.linalg.norm`` (gradient 0 at zero)."""
    nd = len(shape_of(x))
    axes = normalize_axes(axis, nd, "vector_norm")
    if isinstance(ord, str) or not isinstance(ord, (int, float)):
        raise UnsupportedOpError(f"vector_norm(ord={ord!r}) is not a vector norm order")
    return vector_norm_of(x, ord, axes, keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """The array API's matrix norm over the last two axes, ``np.linalg.norm``'s conventions
    (the spectral (2, -2) and nuclear norms from the singular values)."""
    nd = len(shape_of(x))
    if nd < 2:
        raise UnsupportedOpError(f"matrix_norm needs an array of at least 2 dimensions, got "
                                 f"{nd}")
    return matrix_norm_of(x, ord, (nd - 2, nd - 1), keepdims)


_DEFINED: dict[str, Callable] = {
    "concat": concat, "permute_dims": permute_dims, "matrix_transpose": matrix_transpose,
    "vecdot": vecdot, "positive": positive, "cumulative_sum": cumulative_sum,
    "linalg.vector_norm": vector_norm, "linalg.matrix_norm": matrix_norm,
    "linalg.matrix_transpose": matrix_transpose, "linalg.vecdot": vecdot,
    "linalg.diagonal": linalg_diagonal, "linalg.trace": linalg_trace,
    "linalg.outer": linalg_outer,
}


def lookup(path: str) -> Callable | None:
    """The implementation of array-API name ``path`` on traced values, or None."""
    fn = _DEFINED.get(path)
    if fn is not None:
        return fn
    name = _RENAMED.get(path)
    return getattr(dnp, name, None) if name else None
