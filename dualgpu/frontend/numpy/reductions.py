"""NumPy's reductions (``sum``, ``max``, ``mean``, ``var``, ...) and their NaN-aware forms.

Defined as ``sum_``, ``amax``, ``amin``, ``all_`` and ``any_`` (NumPy's names are exported by
:mod:`dualgpu.frontend.numpy`), so that this module does not shadow Python's builtins."""
from __future__ import annotations

import math

import numpy as np

from ... import lax
from ...core.axes import normalize_axes
from ...errors import InvalidArgumentError, ShapeMismatchError, user_location
from ...lax import (
    add,
    astype,
    equal,
    isnan,
    logical_not,
    maximum,
    minimum,
    multiply,
    not_equal,
    subtract,
    true_divide,
    where,
)
from ...lax import dtype_of as _dtype
from ...lax import is_tracer as _is_tracer
from ...lax import shape_of as _shape
from .arguments import arraylike, as_float, host_value, unsupported_kwargs
from .elementwise import abs2, safe_sqrt


def _mask(a, where_, name):
    """NumPy's ``where=`` of a reduction: None for ``True`` (every element), else the mask
    broadcast to ``a``'s shape (a constant or a traced boolean array)."""
    if where_ is None or where_ is True:
        return None
    mask = arraylike(where_)
    if _dtype(mask).kind != "b":
        mask = astype(mask, bool)
    try:
        fits = np.broadcast_shapes(_shape(mask), _shape(a)) == _shape(a)
    except ValueError:
        fits = False
    if not fits:
        raise ShapeMismatchError(f"np.{name}: where= of shape {_shape(mask)} does not broadcast "
                                 f"to the array's shape {_shape(a)} (at {user_location()})")
    return lax.broadcast_to(mask, _shape(a))


def _masked(a, mask, fill):
    """``a`` with the elements ``where=`` leaves out replaced by the reduction's identity
    (their derivative is zero)."""
    return a if mask is None else where(mask, a, fill)


def _initial(initial, dtype):
    """``initial=`` in the reduction's dtype, as NumPy casts it (``initial=1.5`` of an
    integer sum is 1)."""
    return astype(initial, dtype) if _is_tracer(initial) else np.asarray(initial).astype(dtype)


def sum_(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``np.sum``, with NumPy's ``where=`` (the elements left out count as 0) and
    ``initial=`` (added to each sum).

    >>> dg.grad(lambda x: np.sum(x, where=x > 0, initial=1.0))(np.array([-1.0, 2.0]))
    array([0., 1.])
    """
    unsupported_kwargs("sum", {"out": out})
    a = arraylike(a)
    r = lax.sum(_masked(a, _mask(a, where, "sum"), 0), axis, dtype, keepdims)
    return r if initial is None else add(r, _initial(initial, _dtype(r)))


def amax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """``np.max``; ``where=`` needs ``initial=``, as NumPy's (the elements left out count
    as ``initial``, which also bounds each maximum from below)."""
    unsupported_kwargs("max", {"out": out})
    return _extremum(lax.max, maximum, "max", a, axis, keepdims, initial, where)


def amin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """``np.min``; ``where=`` needs ``initial=``, as NumPy's."""
    unsupported_kwargs("min", {"out": out})
    return _extremum(lax.min, minimum, "min", a, axis, keepdims, initial, where)


def _extremum(reduce, pairwise, name, a, axis, keepdims, initial, where_):
    a = arraylike(a)
    mask = _mask(a, where_, name)
    if initial is None:
        if mask is not None:
            raise InvalidArgumentError(
                f"np.{name}: where= needs initial= (the {name}imum of no element has no "
                f"identity), as NumPy's (at {user_location()})")
        return reduce(a, axis, keepdims)
    if _empty_reduction(a, axis):
        raise InvalidArgumentError(f"np.{name}: initial= with a zero-size reduction is not "
                                   f"supported on traced values (at {user_location()})")
    initial = _initial(initial, _dtype(a))
    r = reduce(_masked(a, mask, initial), axis, keepdims)
    return pairwise(r, initial)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``np.prod``, with ``where=`` (the elements left out count as 1) and ``initial=``
    (a factor of each product)."""
    unsupported_kwargs("prod", {"out": out})
    a = arraylike(a)
    r = lax.prod(_masked(a, _mask(a, where, "prod"), 1), axis, dtype, keepdims)
    return r if initial is None else multiply(r, _initial(initial, _dtype(r)))


def ptp(a, axis=None, out=None, keepdims=False):
    """``np.ptp``: ``max - min`` along ``axis`` (the derivative of each, ties shared as
    theirs)."""
    unsupported_kwargs("ptp", {"out": out})
    a = arraylike(a)
    return subtract(lax.max(a, axis, keepdims), lax.min(a, axis, keepdims))


def cumsum(a, axis=None, dtype=None, out=None):
    unsupported_kwargs("cumsum", {"out": out})
    return lax.cumsum(arraylike(a), axis, dtype)


def cumprod(a, axis=None, dtype=None, out=None):
    unsupported_kwargs("cumprod", {"out": out})
    return lax.cumprod(arraylike(a), axis, dtype)


def _float_and_count(a, axis, dtype, name):
    """``a`` in ``dtype`` (integers and bools in float64, as NumPy's mean and var compute)
    and the number of elements each result reduces."""
    a = arraylike(a)
    if dtype is not None:
        a = astype(a, dtype)
    elif _dtype(a).kind in "biu":
        a = astype(a, np.float64)
    axes = normalize_axes(axis, len(_shape(a)), name)
    return a, int(np.prod([_shape(a)[i] for i in axes], dtype=np.int64))


def _count(n, mask, axis, keepdims):
    """How many elements each result reduces: NumPy's ``_count_reduce_items`` (``n``, the
    count of :func:`_float_and_count`, or with ``where=`` the count of its true entries, an
    ``intp`` array)."""
    return n if mask is None else lax.sum(astype(mask, np.intp), axis, None, keepdims)


def _divided(total, count):
    """``total / count`` in ``total``'s dtype (NumPy divides into the sum: ``out=ret``)."""
    if isinstance(count, int):
        return true_divide(total, float(count))
    return astype(true_divide(total, count), _dtype(total))


def mean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """``np.mean``, with NumPy's ``where=`` (the mean of the elements it marks).

    >>> dg.grad(lambda x: np.mean(x, where=x > 0))(np.array([-1.0, 2.0, 4.0]))
    array([0. , 0.5, 0.5])
    """
    unsupported_kwargs("mean", {"out": out})
    a, n = _float_and_count(a, axis, dtype, "mean")
    mask = _mask(a, where, "mean")
    total = sum_(_masked(a, mask, 0), axis=axis, keepdims=keepdims)
    return _divided(total, _count(n, mask, axis, keepdims))


_mean = mean  # var's keyword `mean` shadows the function there


def _ddof(name, ddof, correction):
    if correction is None:
        return ddof
    if ddof != 0:
        raise InvalidArgumentError(f"{name}: ddof and correction cannot both be given "
                                   f"(at {user_location()})")
    return correction


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, *,
        correction=None, mean=None, **kw):
    """``np.var``; complex values give the (real) variance of their modulus, as NumPy's.
    ``where=`` takes the variance of the elements it marks (the degrees of freedom their
    count minus ``ddof``, at least 0, as NumPy's).

    ``ddof`` at least the number of reduced elements is refused: NumPy returns inf or nan
    with a warning there, and no derivative exists."""
    unsupported_kwargs("var", {"out": out, "mean": mean, **kw})
    ddof = _ddof("var", ddof, correction)
    a, n = _float_and_count(a, axis, dtype, "var")
    mask = _mask(a, where, "var")
    if mask is not None and not _is_tracer(mask):
        n = int(np.min(np.sum(host_value(mask), axis=axis), initial=n))
    if n - ddof <= 0:
        raise InvalidArgumentError(
            f"var/std: ddof={ddof} with {n} element(s) per result leaves no degrees of "
            f"freedom: NumPy returns inf or nan (with a RuntimeWarning) and there is no "
            f"derivative; dualgpu refuses it (at {user_location()}). Use ddof < {n}.")
    # the elements left out are 0 before squaring (a NaN there would reach the derivative)
    centered = _masked(subtract(a, _mean(a, axis=axis, keepdims=True, where=where)), mask, 0)
    total = sum_(abs2(centered), axis=axis, keepdims=keepdims)
    if mask is None:
        return true_divide(total, float(n - ddof))
    return _divided(total, maximum(subtract(_count(n, mask, axis, keepdims), ddof), 0))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, *,
        correction=None, mean=None, **kw):
    """``np.std``: ``sqrt(var)``, with gradient (and HVP) 0 where the variance is 0 (one
    element, or all equal: the kink of a norm) instead of NaN."""
    return safe_sqrt(var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims,
                          where=where, correction=correction, mean=mean, **kw))


def all_(a, axis=None, out=None, keepdims=False, *, where=None):
    """``np.all``; ``where=`` tests only the elements it marks (the others count as
    True)."""
    unsupported_kwargs("all", {"out": out})
    a = astype(arraylike(a), bool)
    a = _masked(a, _mask(a, where, "all"), True)
    if _empty_reduction(a, axis):  # NumPy: True (min of nothing has no identity)
        return equal(sum_(logical_not(a), axis=axis, keepdims=keepdims), 0)
    return equal(amin(a, axis=axis, keepdims=keepdims), True)


def any_(a, axis=None, out=None, keepdims=False, *, where=None):
    """``np.any``; ``where=`` tests only the elements it marks (the others count as
    False)."""
    unsupported_kwargs("any", {"out": out})
    a = astype(arraylike(a), bool)
    a = _masked(a, _mask(a, where, "any"), False)
    if _empty_reduction(a, axis):  # NumPy: False
        return not_equal(sum_(a, axis=axis, keepdims=keepdims), 0)
    return equal(amax(a, axis=axis, keepdims=keepdims), True)


def count_nonzero(a, axis=None, *, keepdims=False):
    """``np.count_nonzero``: how many entries are not zero (an integer count, no
    derivative)."""
    return sum_(astype(not_equal(arraylike(a), 0), np.intp), axis=axis, keepdims=keepdims)


def _empty_reduction(a, axis) -> bool:
    """Whether reducing ``a`` over ``axis`` reduces over no element."""
    shape = _shape(a)
    if axis is None:
        return 0 in shape
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return any(shape[int(i)] == 0 for i in axes if -len(shape) <= int(i) < len(shape))


def _nan_filled(a, value):
    a = arraylike(a)
    return where(isnan(a), value, a) if _dtype(a).kind in "fc" else a


def _not_nan_count(a, axis, keepdims):
    return sum_(astype(logical_not(isnan(a)), _dtype(a)), axis=axis,
               keepdims=keepdims)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    unsupported_kwargs("nansum", {"out": out, **kw})
    return sum_(_nan_filled(a, 0.0), axis=axis, dtype=dtype, keepdims=keepdims)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    unsupported_kwargs("nanprod", {"out": out, **kw})
    return prod(_nan_filled(a, 1.0), axis=axis, dtype=dtype, keepdims=keepdims)


def _nan_extremum(reduce, fill, a, axis, keepdims):
    a = arraylike(a)
    if _dtype(a).kind not in "fc":  # no NaN: NumPy's max, in the array's dtype
        return reduce(a, axis=axis, keepdims=keepdims)
    r = reduce(_nan_filled(a, fill), axis=axis, keepdims=keepdims)
    all_nan = all_(isnan(a), axis=axis, keepdims=keepdims)
    return where(all_nan, math.nan, r)  # NumPy: NaN (with a warning) for all-NaN slices


def nanmax(a, axis=None, out=None, keepdims=False, **kw):
    unsupported_kwargs("nanmax", {"out": out, **kw})
    return _nan_extremum(amax, -math.inf, a, axis, keepdims)


def nanmin(a, axis=None, out=None, keepdims=False, **kw):
    unsupported_kwargs("nanmin", {"out": out, **kw})
    return _nan_extremum(amin, math.inf, a, axis, keepdims)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    unsupported_kwargs("nanmean", {"out": out, **kw})
    a = as_float(arraylike(a)) if dtype is None else astype(arraylike(a), dtype)
    return true_divide(nansum(a, axis=axis, keepdims=keepdims),
                       _not_nan_count(a, axis, keepdims))


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    """``np.nanvar``: the variance of the non-NaN values (their count minus ``ddof``)."""
    unsupported_kwargs("nanvar", {"out": out, **kw})
    a = as_float(arraylike(a)) if dtype is None else astype(arraylike(a), dtype)
    # the NaN entries are filled with 0 before squaring: a NaN squared would give its
    # derivative (2 * NaN) a place in the backward pass, and 0 * NaN is NaN
    centered = _nan_filled(subtract(a, nanmean(a, axis=axis, keepdims=True)), 0.0)
    total = sum_(abs2(centered), axis=axis, keepdims=keepdims)
    return true_divide(total, subtract(_not_nan_count(a, axis, keepdims), float(ddof)))


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    return safe_sqrt(nanvar(a, axis=axis, dtype=dtype, out=out, ddof=ddof,
                             keepdims=keepdims, **kw))


def nancumsum(a, axis=None, dtype=None, out=None):
    return cumsum(_nan_filled(a, 0.0), axis=axis, dtype=dtype, out=out)


def nancumprod(a, axis=None, dtype=None, out=None):
    return cumprod(_nan_filled(a, 1.0), axis=axis, dtype=dtype, out=out)
