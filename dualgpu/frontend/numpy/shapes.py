"""Rearranging an array's elements: ``tile``, ``repeat``, ``roll``, ``rot90``, ``flipud``, ...
(reshape, transpose and the like are :mod:`dualgpu.lax`'s, exported as they are)."""
from __future__ import annotations

import numpy as np

from ...core.axes import check_axis as _check_axis
from ...errors import AxisError as _AxisError
from ...errors import InvalidArgumentError, ShapeMismatchError, user_location
from ...lax import broadcast_to, flip, moveaxis, ravel, reshape, transpose
from ...lax import shape_of as _shape
from .indexing import take, take_range
from .joining import concatenate


def copy(a, order="K"):
    return a


def broadcast_arrays(*args):
    shape = np.broadcast_shapes(*[_shape(a) for a in args])
    return [broadcast_to(a, shape) for a in args]


def tile(a, reps):
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    shape = _shape(a)
    nd = max(len(shape), len(reps))
    shape = (1,) * (nd - len(shape)) + shape
    reps = (1,) * (nd - len(reps)) + reps
    a = reshape(a, shape)
    expanded = reshape(a, tuple(x for d in shape for x in (1, d)))
    big = broadcast_to(expanded, tuple(x for r, d in zip(reps, shape) for x in (r, d)))
    return reshape(big, tuple(r * d for r, d in zip(reps, shape)))


def repeat(a, repeats, axis=None):
    if axis is None:
        a, axis = ravel(a), 0
    n = _shape(a)[_check_axis(axis, len(_shape(a)), "repeat")]
    try:
        idx = np.repeat(np.arange(n), repeats)
    except ValueError as e:
        raise InvalidArgumentError(f"repeat: {e} (repeats={repeats!r}, "
                                   f"at {user_location()})") from None
    return take(a, idx, axis=axis)


def flipud(m):
    return flip(m, axis=0)


def fliplr(m):
    if len(_shape(m)) < 2:
        raise ShapeMismatchError(f"fliplr: the array must be at least 2-D (at {user_location()})")
    return flip(m, axis=1)


def rot90(m, k=1, axes=(0, 1)):
    """``np.rot90``: ``k`` quarter turns in the plane of ``axes``."""
    nd = len(_shape(m))
    a0, a1 = (_check_axis(a, nd, "rot90") for a in axes)
    if a0 == a1:
        raise _AxisError(f"rot90: axes must be different (at {user_location()})")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, a0), a1)
    perm = list(range(nd))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    return transpose(flip(m, a1), perm) if k == 1 else flip(transpose(m, perm), a1)


def roll(a, shift, axis=None):
    """``np.roll``: two slices and a concatenation per rolled axis."""
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), _shape(a))
    nd = len(_shape(a))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    shifts = (shift,) * len(axes) if isinstance(shift, (int, np.integer)) else tuple(shift)
    if len(shifts) != len(axes):
        raise InvalidArgumentError(f"roll: shift and axis must have the same length "
                                   f"(at {user_location()})")
    for ax, s in zip(axes, shifts):
        ax = _check_axis(ax, nd, "roll")
        n = _shape(a)[ax]
        s = int(s) % n if n else 0
        if s:
            a = concatenate([take_range(a, ax, n - s, n), take_range(a, ax, 0, n - s)],
                            axis=ax)
    return a


def rollaxis(a, axis, start=0):
    """``np.rollaxis``: the old spelling of ``moveaxis``."""
    nd = len(_shape(a))
    axis = _check_axis(axis, nd, "rollaxis")
    if start < 0:
        start += nd
    if not 0 <= start <= nd:
        raise _AxisError(f"rollaxis: start={start} is out of range for {nd} dimensions "
                         f"(at {user_location()})")
    if axis < start:
        start -= 1
    return a if axis == start else moveaxis(a, axis, start)
