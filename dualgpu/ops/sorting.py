"""Sorting along one axis: ``argsort`` (a permutation, no derivative) and ``sort`` (the
values, differentiable as the gather of that permutation). Both are stable, so ties keep
NumPy's order: the first of two equal elements sorts first and takes its own tangent.
Library ops: NumPy's stable sort on the CPU, CuPy's (thrust, always stable) on the GPU.
Derivatives: :mod:`dualgpu.rules.sorting`.

>>> import numpy as np
>>> from dualgpu.ops.sorting import argsort
>>> argsort(np.array([2.0, 1.0, 2.0]), axis=0)
array([1, 0, 2])
"""
from __future__ import annotations

import numpy as np

from ..backends import backend_for_xp
from ..core.axes import check_axis
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import defprim, defstandalone


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

# --------------------------------------------------------------------------- exported modules
# the functions a module of dg.export defines for the ops it calls as ops.<name>
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
