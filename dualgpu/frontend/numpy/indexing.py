"""Gathering and masking: ``take``, ``diag``, ``tril``/``triu``, ``select``, ``bincount``,
``trim_zeros``, and the slice of a range along one axis that the other modules use."""
from __future__ import annotations

import operator

import numpy as np

from ...core.axes import check_axis as _check_axis
from ...core.axes import normalize_axes
from ...errors import (
    DualgpuError,
    InvalidArgumentError,
    ShapeMismatchError,
    TracerControlFlowError,
    user_location,
)
from ...lax import (
    astype,
    diagonal,
    flip,
    getitem,
    maximum,
    minimum,
    not_equal,
    ones_like,
    ravel,
    remainder,
    where,
)
from ...lax import max as _max
from ...lax import min as _min
from ...lax import shape_of as _shape
from ...ops import shape as _sh
from ...ops.sorting import argmax


def take(a, indices, axis=None, out=None, mode="raise"):
    """``mode="wrap"`` and ``"clip"`` as NumPy's (indices modulo n, or clipped to [0, n-1]).
    """
    if out is not None:
        raise DualgpuError(f"take: out= is not supported on traced values; use the result "
                           f"(at {user_location()})")
    if mode not in ("raise", "wrap", "clip"):
        raise InvalidArgumentError(f"take: mode must be 'raise', 'wrap' or 'clip', got "
                                   f"{mode!r} (at {user_location()})")
    if axis is None:
        a, axis = ravel(a), 0
    axis = _check_axis(axis, len(_shape(a)), "take")
    n = _shape(a)[axis]
    if mode != "raise" and n == 0:
        raise IndexError("cannot do a non-empty take from an empty axes.")
    if mode == "wrap":
        indices = remainder(indices, n)
    elif mode == "clip":
        indices = maximum(minimum(indices, n - 1), 0)
    return getitem(a, (slice(None),) * axis + (indices,))


def diag(v, k=0):
    s = _shape(v)
    if len(s) == 2:
        return diagonal(v, k)
    n = s[0] + abs(k)
    i = np.arange(s[0])
    rows, cols = (i, i + k) if k >= 0 else (i - k, i)
    return _sh.scatter_add.bind(v, rows, cols, key=(("array", 0), ("array", 1)), shape=(n, n))


def bincount(x, weights=None, minlength=0):
    """``np.bincount``: how often each value of the non-negative integers ``x`` occurs (the
    sum of their ``weights``, in float64 as NumPy's), differentiable in ``weights``. The
    length, one more than the largest value and at least ``minlength``, is read from the
    values, as Python reads a number: a decision the program checks at every call where
    values are known (``grad`` on arrays), a clear refusal under ``jit``.

        >>> dg.grad(lambda w, x: np.sum(np.bincount(x, w) ** 2))(
        ...     np.array([1.0, 2.0, 3.0]), np.array([0, 2, 0]))
        array([8., 4., 8.])
    """
    x = x if hasattr(x, "dtype") else np.asarray(x)
    if len(_shape(x)) != 1 or np.dtype(x.dtype).kind not in "biu":
        raise InvalidArgumentError(f"bincount: x must be a 1-D array of non-negative "
                                   f"integers, got {x.dtype} of shape {tuple(_shape(x))} "
                                   f"(at {user_location()})")
    if weights is not None and tuple(_shape(weights)) != tuple(_shape(x)):
        raise ShapeMismatchError(f"bincount: weights of shape {tuple(_shape(weights))} for x "
                                 f"of shape {tuple(_shape(x))} (at {user_location()})")
    n = int(minlength)
    try:
        if _shape(x)[0] and bool(_min(x) < 0):
            raise InvalidArgumentError(f"bincount: x has negative values (at "
                                       f"{user_location()})")
        n = max(n, operator.index(_max(x)) + 1) if _shape(x)[0] else n
    except TracerControlFlowError:
        raise TracerControlFlowError(
            f"bincount at {user_location()}: its length (one more than the largest value of "
            "x) is read from x's values, which dg.jit does not know; call it where values "
            "are known (grad, hvp, jvp on arrays) or count outside the jit") from None
    counted = ones_like(x, dtype=np.int64) if weights is None else astype(weights, np.float64)
    return bin_sums(counted, x, n)


def bin_sums(values, index, n: int):
    """The sums of ``values`` over each of ``n`` bins, ``index`` (integers in ``[0, n)``)
    naming each value's bin: ``bincount``'s and ``histogram``'s scatter-add."""
    return _sh.scatter_add.bind(values, astype(index, np.int64), key=(("array", 0),),
                                shape=(n,))


def tril(m, k=0):
    n, p = _shape(m)[-2:]
    return where(np.tri(n, p, k, dtype=bool), m, 0.0)


def triu(m, k=0):
    n, p = _shape(m)[-2:]
    return where(np.tri(n, p, k - 1, dtype=bool), 0.0, m)


def select(condlist, choicelist, default=0):
    """``np.select``: the first true condition picks its choice."""
    if len(condlist) != len(choicelist):
        raise ShapeMismatchError(f"select: list of cases must be same length as list of "
                                 f"conditions (at {user_location()})")
    result = default
    for cond, choice in zip(reversed(condlist), reversed(choicelist)):
        result = where(cond, choice, result)
    return result


def trim_zeros(filt, trim="fb", axis=None):
    """``np.trim_zeros``: the leading (``"f"``) and trailing (``"b"``) zeros cut off along
    each axis of ``axis`` (all by default), as NumPy's; differentiable in what is kept (so
    ``np.poly1d`` takes traced coefficients). Where to cut is read from the values, as
    Python reads a number: a decision the program checks at every call where values are
    known (``grad``, ``jacfwd`` on arrays), a clear refusal under ``jit``.

    >>> dg.grad(lambda c: np.sum(np.trim_zeros(c) ** 2))(np.array([0.0, 1.0, 2.0, 0.0]))
    array([0., 2., 4., 0.])
    """
    if not isinstance(trim, str) or trim.lower() not in ("fb", "bf", "f", "b"):
        raise InvalidArgumentError(f"np.trim_zeros: unexpected character(s) in trim: "
                                   f"{trim!r} (at {user_location()})")
    trim = trim.lower()
    nd = len(_shape(filt))
    axes = tuple(range(nd)) if axis is None else normalize_axes(axis, nd, "trim_zeros")
    if not axes:
        return filt
    nonzero = not_equal(filt, 0)
    key = [slice(None)] * nd
    try:
        for ax in axes:
            n = _shape(filt)[ax]
            along = _max(nonzero, tuple(i for i in range(nd) if i != ax)) if nd > 1 else nonzero
            if not n or not bool(_max(along)):  # all zeros: an empty slice (NumPy's)
                key = [slice(0, 0)] * nd
                break
            start = operator.index(argmax(along)) if "f" in trim else None
            stop = n - operator.index(argmax(flip(along, 0))) if "b" in trim else None
            key[ax] = slice(start, stop)
    except TracerControlFlowError:
        raise TracerControlFlowError(
            f"np.trim_zeros at {user_location()}: where to cut is read from the values, "
            "which dg.jit does not know; call it where values are known (grad, hvp, jvp "
            "on arrays) or trim outside the jit") from None
    return getitem(filt, tuple(key))


newaxis = None


def axis_slice(nd, axis, sl):
    return (slice(None),) * axis + (sl,) + (slice(None),) * (nd - axis - 1)


def take_range(a, axis, lo, hi):
    return getitem(a, axis_slice(len(_shape(a)), axis, slice(lo, hi)))
