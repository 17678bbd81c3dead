"""Ops that order entries along an axis, one block each (declaration, rules, lowerings):

* ``sort`` (the values, differentiable as the gather of the sorting permutation) and
  ``argsort`` (the permutation, no derivative). Both are stable, so ties keep NumPy's order:
  the first of two equal elements sorts first and takes its own tangent. Library ops:
  NumPy's stable sort on the CPU, CuPy's (thrust, always stable) on the GPU.
* ``argmax`` / ``argmin``: the index of the first largest (smallest) entry along an axis,
  NaN counting as the extreme (NumPy's rule); int64, no derivative.
* ``searchsorted``: where values would be inserted into a sorted 1-D array; int64, no
  derivative.

The blocks of ``argmax``, ``argmin`` and ``searchsorted`` end with their NumPy functions
(arguments checked as NumPy does), which the front end exports.

>>> import numpy as np
>>> from dualgpu.ops.sorting import argsort
>>> argsort(np.array([2.0, 1.0, 2.0]), axis=0)
array([1, 0, 2])
>>> x = np.array([[1.0, 5.0, 5.0], [7.0, -1.0, 0.0]])
>>> dg.jit(lambda x: np.argmax(x, axis=1))(x)
array([1, 0])
>>> dg.grad(lambda x: np.sum(x[np.arange(2), np.argmin(x, axis=1)]))(x)
array([[1., 0., 0.],
       [0., 1., 0.]])
>>> knots = np.array([0.0, 1.0, 2.0])
>>> dg.jit(lambda x: x * np.searchsorted(knots, x))(np.array([-0.5, 0.5, 1.0, 7.0]))
array([-0. ,  0.5,  1. , 21. ])
>>> dg.grad(lambda x: np.sum(x ** 2 * np.searchsorted(knots, x, side="right")))(
...     np.array([0.5, 1.0]))
array([1., 4.])
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..backends import backend_for_xp
from ..core.axes import check_axis
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import defprim, defrules, defstandalone
from ..errors import DualgpuError, UnsupportedOpError, user_location
from ..rules import batching_rules as batching
from ..rules import separability_rules as separability
from ..rules import sparsity_rules as sparsity
from ..rules.separability_rules import Coupling


# --------------------------------------------------------------------------- sort, argsort
def _sort_impl(xp, x, axis):
    return backend_for_xp(xp).stable_sort(x, axis)


def _argsort_impl(xp, x, axis):
    return backend_for_xp(xp).stable_argsort(x, axis)


def _sort_shape(avals, axis):
    a = avals[0]
    check_axis(axis, a.ndim, "sort")
    return Aval(tuple(a.shape), a.dtype)


def _argsort_shape(avals, axis):
    a = avals[0]
    check_axis(axis, a.ndim, "argsort")
    return Aval(tuple(a.shape), np.dtype(np.int64))


sort = defprim("sort", _sort_impl, _sort_shape, kind=Flag.LIBRARY, arity=1,
               py="ops.sort({0}, axis={axis})",
               doc="Stable sort along a (non-negative) axis; the derivative is the gather "
                   "of the sorting permutation, ties in NumPy's stable order.")
argsort = defprim("argsort", _argsort_impl, _argsort_shape, kind=Flag.LIBRARY, arity=1,
                  flags={Flag.INDICES_OF_AXIS}, py="ops.argsort({0}, axis={axis})",
                  differentiable=False,
                  doc="The stable sorting permutation along a (non-negative) axis (int64).")


def _sort_jvp(primals, tangents, axis):
    x = primals[0]
    ans = sort.bind(x, axis=axis)
    t = tangents[0]
    if t is None:
        return ans, None
    return ans, lax.take_along_axis(t, argsort.bind(x, axis=axis), axis)


def _sort_vjp(g, primals, ans, axis):
    x = primals[0]
    return (lax.put_along_axis_add(g, argsort.bind(x, axis=axis), axis, x.shape),)


defrules(sort, jvp=_sort_jvp, vjp=_sort_vjp, vmap=batching.axis_rule,  # one static axis
         sparsity=sparsity.along_axis, separability=separability.along_axis)
defrules(argsort, vmap=batching.axis_rule)  # no derivative, no sparsity: by its flag
defstandalone(sort, (
        'def sort(x, axis):\n'
        "    return xp.sort(x, axis=axis, kind='stable')\n"),
              cupy=(
                  'def sort(x, axis):\n'
                  '    return xp.sort(x, axis=axis)\n'))
defstandalone(argsort, (
        'def argsort(x, axis):\n'
        "    return xp.argsort(x, axis=axis, kind='stable')\n"),
              cupy=(
                  'def argsort(x, axis):\n'
                  '    return xp.argsort(x, axis=axis).astype(np.int64, copy=False)\n'))


# --------------------------------------------------------------------------- argmax, argmin
def _declare(name: str):
    def impl(xp, x, axis):
        return getattr(xp, name)(x, axis=axis).astype(np.int64, copy=False)

    def shape(avals, axis):
        a = avals[0]
        check_axis(axis, a.ndim, name)
        return Aval(tuple(d for i, d in enumerate(a.shape) if i != axis), np.dtype(np.int64))

    return defprim(name, impl, shape, kind=Flag.LIBRARY, arity=1, differentiable=False,
                   flags={Flag.INDICES_OF_AXIS},
                   py=f"xp.{name}({{0}}, axis={{axis}}).astype(xp.int64, copy=False)",
                   doc=f"np.{name} along one (non-negative) axis (int64); no derivative.")


argmax_p = _declare("argmax")
argmin_p = _declare("argmin")


def _arg_extremum_separability(eqn, dep, sizes):
    axis = eqn.params["axis"]
    (_, m), = dep
    if any(at.pos == axis for at in m):
        raise Coupling(f"{eqn.prim.name} compares entries along an instance axis")
    return tuple(at.moved(at.pos - (1 if at.pos > axis else 0)) for at in m)


for _prim in (argmax_p, argmin_p):
    defrules(_prim, vmap=batching.axis_rule, separability=_arg_extremum_separability)


def _arg_extremum(prim, a, axis, out, keepdims):
    if out is not None:
        raise UnsupportedOpError(f"np.{prim.name}(out=...) is not supported on traced values "
                                 f"(at {user_location()})")
    if not (lax.is_tracer(a) or hasattr(a, "dtype")):
        a = np.asarray(a)
    shape = lax.shape_of(a)
    if axis is None:
        r = prim.bind(lax.ravel(a), axis=0)
        return lax.reshape(r, (1,) * len(shape)) if keepdims else r
    axis = check_axis(axis, len(shape), prim.name)
    r = prim.bind(a, axis=axis)
    return lax.expand_dims(r, axis) if keepdims else r


def argmax(a, axis=None, out=None, *, keepdims=False):
    """``np.argmax``: the index of the first largest entry (of the flattened array when
    ``axis`` is None), int64; a NaN counts as the largest. It passes no derivative on."""
    return _arg_extremum(argmax_p, a, axis, out, keepdims)


def argmin(a, axis=None, out=None, *, keepdims=False):
    """``np.argmin``: the index of the first smallest entry (NaN counts as the smallest)."""
    return _arg_extremum(argmin_p, a, axis, out, keepdims)


# --------------------------------------------------------------------------- searchsorted
SIDES = ("left", "right")


def _searchsorted_impl(xp, a, v, side):
    return xp.searchsorted(a, v, side=side).astype(np.int64, copy=False)


def _searchsorted_shape(avals, side):
    a, v = avals
    if a.ndim != 1:
        raise DualgpuError(f"searchsorted: the sorted array must be 1-D, got {a.str_short()}")
    return Aval(tuple(v.shape), np.dtype(np.int64))


searchsorted_p = defprim(
    "searchsorted", _searchsorted_impl, _searchsorted_shape, kind=Flag.LIBRARY, arity=2,
    differentiable=False,
    py="xp.searchsorted({0}, {1}, side={side}).astype(xp.int64, copy=False)",
    doc="Insertion indices of values into a sorted 1-D array (int64); no derivative.")


def _sorts_before(x, y):
    """``x`` sorts before ``y`` in NumPy's order (NaN last): ``x < y``, or ``y`` is NaN and
    ``x`` is not."""
    return lax.logical_or(lax.less(x, y),
                          lax.logical_and(lax.isnan(y), lax.logical_not(lax.isnan(x))))


def _searchsorted_vmap(eqn, args, batched, size):
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


def _searchsorted_separability(eqn, dep, sizes):
    if any(i == 0 for i, _ in dep):  # the sorted array
        raise Coupling("every output of searchsorted reads the whole sorted array")
    (_, m), = dep
    return m  # one output per value, where the value sits


defrules(searchsorted_p, vmap=_searchsorted_vmap,
         separability=_searchsorted_separability)


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
