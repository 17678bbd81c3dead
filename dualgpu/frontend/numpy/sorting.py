"""Sorting and order statistics: ``sort``, ``argsort``, ``partition``, ``quantile``,
``percentile``, ``median``."""
from __future__ import annotations

import math

import numpy as np

from ...core.axes import check_axis as _check_axis
from ...errors import InvalidArgumentError, ShapeMismatchError, UnsupportedOpError, user_location
from ...lax import add, astype, isnan, multiply, ravel, reshape, squeeze, subtract, where
from ...lax import dtype_of as _dtype
from ...lax import shape_of as _shape
from ...ops import sorting as _sorting
from . import reductions as _reductions
from .arguments import arraylike, unsupported_kwargs
from .indexing import take_range
from .joining import stack


def _sort_axis(a, axis, name):
    a = arraylike(a)
    if axis is None:
        return ravel(a), 0
    return a, _check_axis(axis, len(_shape(a)), name)


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``np.sort`` (always stable): differentiable, ties in NumPy's stable order.

    >>> dg.grad(lambda x: np.sort(x)[-1])(np.array([3.0, 1.0, 2.0]))
    array([1., 0., 0.])
    """
    unsupported_kwargs("sort", {"order": order})
    a, axis = _sort_axis(a, axis, "sort")
    return _sorting.sort.bind(a, axis=axis)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``np.argsort`` (always stable): integer indices, no derivative."""
    unsupported_kwargs("argsort", {"order": order})
    a, axis = _sort_axis(a, axis, "argsort")
    return _sorting.argsort.bind(a, axis=axis)


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """``np.partition``, as a full sort: element ``kth`` is in its sorted place with no
    larger element before and no smaller one after, NumPy's contract (NumPy's order of the
    other elements is unspecified, and differs)."""
    return sort(a, axis=axis, order=order)


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """``np.argpartition`` as a full ``argsort`` (see :func:`partition`)."""
    return argsort(a, axis=axis, order=order)


def _quantile_of_sorted(s, q, axis, keepdims):
    """Linear interpolation between order statistics (NumPy's default 'linear' method)."""
    n = _shape(s)[axis]
    qs = np.atleast_1d(np.asarray(q, dtype=np.float64))
    if np.any((qs < 0) | (qs > 1)):
        raise InvalidArgumentError(f"quantile: quantiles must be in [0, 1], got {q!r} "
                                   f"(at {user_location()})")
    # NumPy's lerp, step for step: the difference in the array's dtype (int8 wraps, as in
    # NumPy), from the lower value below t = 1/2 and from the upper one above; a slice
    # holding a NaN (sorted last) gives NaN
    has_nan = isnan(take_range(s, axis, n - 1, n)) if _dtype(s).kind in "fc" else None
    outs = []
    for qk in qs.ravel():
        pos = float(qk) * (n - 1)
        lo = int(math.floor(pos))
        t = pos - lo
        hi = min(lo + 1, n - 1)
        low, high = take_range(s, axis, lo, lo + 1), take_range(s, axis, hi, hi + 1)
        diff = subtract(high, low)
        r = (add(low, multiply(diff, t)) if t < 0.5
             else subtract(high, multiply(diff, 1.0 - t)))
        if has_nan is not None:
            r = where(has_nan, math.nan, r)
        outs.append(r if keepdims else squeeze(r, axis))
    if np.ndim(q) == 0:
        return outs[0]
    return reshape(stack(outs), qs.shape + _shape(outs[0]))


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, **kw):
    """``np.quantile`` with the default ``method='linear'``; ``q`` constant."""
    unsupported_kwargs("quantile", {"out": out, **kw})
    if method != "linear":
        raise UnsupportedOpError(f"quantile(method={method!r}) is not supported on traced "
                                 f"values; use method='linear' (at {user_location()})")
    a = _q_dtype(arraylike(a), q)
    nd = len(_shape(a))
    if axis is None:
        s = sort(ravel(a), axis=0)
        r = _quantile_of_sorted(s, q, 0, False)
        return reshape(r, np.shape(q) + (1,) * nd) if keepdims else r
    axis = _check_axis(axis, nd, "quantile")
    return _quantile_of_sorted(sort(a, axis=axis), q, axis, keepdims)


def _q_dtype(a, q):
    """``a`` in NumPy's dtype of the interpolation: a Python number ``q`` takes a float
    array's dtype; an array or NumPy scalar ``q`` promotes with it (float32 values at
    np.float64(0.3) are interpolated in float64)."""
    if type(q) in (int, float) or _dtype(a).kind != "f":  # np.float64 is a float subclass
        return a
    dt = np.promote_types(_dtype(a), np.asarray(q).dtype)
    return astype(a, dt) if dt != _dtype(a) else a


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, **kw):
    q = q / 100.0 if type(q) in (int, float) else np.asarray(q, dtype=np.float64) / 100.0
    return quantile(a, q, axis=axis, out=out,
                    method=method, keepdims=keepdims, **kw)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """``np.median``: as NumPy, the mean of the middle order statistic (two for even counts:
    their mean in float64 for integers, no wrapped difference); NaN for a slice holding one."""
    unsupported_kwargs("median", {"out": out})
    a = arraylike(a)
    nd = len(_shape(a))
    if axis is None:
        s, axis = sort(ravel(a), axis=0), 0
    else:
        axis = _check_axis(axis, nd, "median")
        s = sort(a, axis=axis)
    n = _shape(s)[axis]
    if n == 0:
        raise ShapeMismatchError(f"median of an empty array (at {user_location()})")
    r = _reductions.mean(take_range(s, axis, (n - 1) // 2, n // 2 + 1), axis=axis,
                         keepdims=True)
    if _dtype(s).kind in "fc":
        r = where(isnan(take_range(s, axis, n - 1, n)), math.nan, r)
    if not keepdims:
        r = squeeze(r, axis)
    elif len(_shape(r)) != nd:  # axis=None keeps every axis as size 1
        r = reshape(r, (1,) * nd)
    return r
