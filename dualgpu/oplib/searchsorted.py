"""``np.searchsorted``: where values would be inserted into a sorted 1-D array.

One module holds everything about the op:

* the declaration (value: the library's ``searchsorted``; shape rule; Python form; flags:
  a library call whose integer output carries no derivative);
* its rules: ``vmap`` (values batched: the op itself; the sorted array batched: for each
  value, the number of entries that sort before it, NumPy's answer for a sorted array),
  ``separability`` (each output reads its own value and the whole sorted array);
  derivatives need none (not differentiable), nor does the forward Laplacian;
* :func:`searchsorted`, the NumPy-compatible function (arguments checked as NumPy does).

    >>> import dualgpu as dg
    >>> knots = np.array([0.0, 1.0, 2.0])
    >>> f = dg.jit(lambda x: x * np.searchsorted(knots, x))
    >>> f(np.array([-0.5, 0.5, 1.0, 7.0]))
    array([-0. ,  0.5,  1. , 21. ])
    >>> dg.grad(lambda x: np.sum(x ** 2 * np.searchsorted(knots, x, side="right")))(
    ...     np.array([0.5, 1.0]))
    array([1., 4.])
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import defprim, defrules
from ..errors import DualgpuError, user_location
from ..rules import batching_rules as batching
from ..rules.separability_rules import Coupling

SIDES = ("left", "right")


def _impl(xp, a, v, side):
    return xp.searchsorted(a, v, side=side).astype(np.int64, copy=False)


def _shape(avals, side):
    a, v = avals
    if a.ndim != 1:
        raise DualgpuError(f"searchsorted: the sorted array must be 1-D, got {a.str_short()}")
    return Aval(tuple(v.shape), np.dtype(np.int64))


searchsorted_p = defprim(
    "searchsorted", _impl, _shape, kind=Flag.LIBRARY, arity=2, differentiable=False,
    py="xp.searchsorted({0}, {1}, side={side}).astype(xp.int64, copy=False)",
    doc="Insertion indices of values into a sorted 1-D array (int64); no derivative.")


# --------------------------------------------------------------------------- rules
def _sorts_before(x, y):
    """``x`` sorts before ``y`` in NumPy's order (NaN last): ``x < y``, or ``y`` is NaN and
    ``x`` is not."""
    return lax.logical_or(lax.less(x, y),
                          lax.logical_and(lax.isnan(y), lax.logical_not(lax.isnan(x))))


def _vmap(eqn, args, batched, size):
    a, v = args
    if not batched[0]:  # one sorted array: the op itself, on all the values at once
        return batching.one(searchsorted_p.bind(a, v, **eqn.params))
    # a sorted array per example: the index is the number of its entries that sort before
    # the value (side="left") or not after it ("right"), which is what searchsorted returns
    # for a sorted array, NaN included
    if not batched[1]:
        v = batching.batched(v, size)
    extra = len(v.shape) - 1
    a = lax.reshape(a, tuple(a.shape) + (1,) * extra)
    v = lax.expand_dims(v, 1)
    if eqn.params["side"] == "left":
        counted = _sorts_before(a, v)
    else:
        counted = lax.logical_not(_sorts_before(v, a))
    return batching.one(lax.sum(lax.astype(counted, np.int64), axis=1))


def _separability(eqn, dep, sizes):
    if any(i == 0 for i, _ in dep):  # the sorted array
        raise Coupling("every output of searchsorted reads the whole sorted array")
    (_, m), = dep
    return m  # one output per value, where the value sits


defrules(searchsorted_p, vmap=_vmap, separability=_separability)


# --------------------------------------------------------------------------- NumPy's function
def searchsorted(a, v, side="left", sorter=None):
    """``np.searchsorted(a, v, side, sorter)`` on traced or concrete values: the int64
    indices that keep ``a`` (1-D, sorted ascending, or sorted by ``sorter``) sorted if each
    value of ``v`` were inserted before them (``side="left"``) or after equal entries
    (``"right"``). The result is constant: it passes no derivative on."""
    if side not in SIDES:
        raise DualgpuError(f"searchsorted: side must be 'left' or 'right', got {side!r} "
                           f"(at {user_location()})")
    if not (lax.is_tracer(a) or hasattr(a, "dtype")):
        a = np.asarray(a)
    if len(lax.shape_of(a)) != 1:
        raise DualgpuError(f"searchsorted: the sorted array must be 1-D, got shape "
                           f"{lax.shape_of(a)} (at {user_location()})")
    if sorter is not None:
        a = lax.getitem(a, (sorter,))
    return searchsorted_p.bind(a, v, side=side)
