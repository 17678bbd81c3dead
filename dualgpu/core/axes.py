"""Axis and shape arguments: broadcasting, axis normalization with NumPy's errors.

>>> from dualgpu.core.axes import normalize_axes
>>> normalize_axes(-1, 3), normalize_axes(None, 2)
((2,), (0, 1))
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..errors import ArgumentTypeError, AxisError, ShapeMismatchError, user_location


def broadcast_shapes(*shapes: tuple[int, ...], op: str = "op") -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ShapeMismatchError(
            f"{op}: shapes {', '.join(str(tuple(s)) for s in shapes)} do not broadcast") from None


def check_axis(axis: Any, ndim: int, op: str) -> int:
    """``axis`` normalized into ``range(ndim)``; out of bounds raises :class:`AxisError` as
    NumPy does (negative axes in range count from the end)."""
    try:
        a = operator.index(axis)  # NumPy refuses 1.5 and (0,) where one axis is expected
    except TypeError:
        raise ArgumentTypeError(f"{op}: axis {axis!r} is not an integer (at {user_location()})"
                                ) from None
    if not -ndim <= a < ndim:
        raise AxisError(f"{op}: axis {a} is out of bounds for an array of dimension {ndim} "
                        f"(at {user_location()})")
    return a % ndim


def normalize_axes(axis: Any, ndim: int, op: str = "op") -> tuple[int, ...]:
    """A sorted tuple of distinct axes in ``range(ndim)`` (all of them for ``None``)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (int(axis),)
    elif not isinstance(axis, (tuple, list)):
        axis = (axis,)  # check_axis refuses what is not an integer
    out = [check_axis(a, ndim, op) for a in axis]
    if len(set(out)) != len(out):
            raise AxisError(f"{op}: repeated axis in {tuple(axis)} (at {user_location()})")
    return tuple(sorted(out))
