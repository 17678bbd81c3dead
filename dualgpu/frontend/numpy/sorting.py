"""Sorting and order statistics: ``sort``, ``argsort``, ``partition``, ``quantile``,
``percentile``, ``median``."""
from __future__ import annotations

import numpy as np

from ...core.axes import check_axis as _check_axis
from ...errors import DualgpuError, UnsupportedOpError, user_location
from ...lax import ravel, reshape, squeeze
from ...lax import shape_of as _shape
from ...ops import sorting as _sorting
from .arguments import arraylike, as_float, unsupported_kwargs
from .elementwise import add, multiply, subtract
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
        raise DualgpuError(f"quantile: quantiles must be in [0, 1], got {q!r} "
                           f"(at {user_location()})")
    outs = []
    for qk in qs.ravel():
        pos = qk * (n - 1)
        lo, frac = int(np.floor(pos)), pos - np.floor(pos)
        hi = min(lo + 1, n - 1)
        low = take_range(s, axis, lo, lo + 1)
        r = low if frac == 0 else add(low, multiply(frac, subtract(
            take_range(s, axis, hi, hi + 1), low)))
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
    a = as_float(arraylike(a))
    nd = len(_shape(a))
    if axis is None:
        s = sort(ravel(a), axis=0)
        r = _quantile_of_sorted(s, q, 0, False)
        return reshape(r, np.shape(q) + (1,) * nd) if keepdims else r
    axis = _check_axis(axis, nd, "quantile")
    return _quantile_of_sorted(sort(a, axis=axis), q, axis, keepdims)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, **kw):
    return quantile(a, np.asarray(q, dtype=np.float64) / 100.0, axis=axis, out=out,
                    method=method, keepdims=keepdims, **kw)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """``np.median``: the mean of the two middle order statistics for even counts."""
    return quantile(a, 0.5, axis=axis, out=out, keepdims=keepdims)
