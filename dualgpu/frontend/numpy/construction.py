"""Arrays made from traced values: ``linspace`` and ``logspace`` from traced endpoints,
``full`` and ``full_like`` from a traced fill value (``np.array`` of nested lists is
:mod:`.arguments`')."""
from __future__ import annotations

import math

import numpy as np

from ...errors import InvalidArgumentError, user_location
from ...lax import (
    add,
    astype,
    broadcast_to,
    dtype_of,
    expand_dims,
    moveaxis,
    multiply,
    subtract,
    true_divide,
)
from ...lax import full_like as _fill_like
from ...lax import is_tracer as _is_tracer
from ...lax import shape_of as _shape
from .arguments import arraylike
from .elementwise import power
from .introspection import result_type
from .joining import concatenate


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """``np.linspace``, differentiable in ``start`` and ``stop`` (arrays broadcast, as
    NumPy's); the last sample is exactly ``stop`` when ``endpoint``.

    >>> dg.grad(lambda b: np.sum(np.linspace(0.0, b, 5)))(np.array(2.0))
    array(2.5)
    """
    if not (_is_tracer(start) or _is_tracer(stop)):
        return np.linspace(start, stop, num, endpoint=endpoint, retstep=retstep,
                           dtype=dtype, axis=axis)
    num = int(num)
    if num < 0:
        raise InvalidArgumentError(f"linspace: num={num} must be non-negative "
                                   f"(at {user_location()})")
    div = (num - 1) if endpoint else num
    dt = result_type(start, stop, 1.0)
    start, stop = astype(arraylike(start), dt), astype(arraylike(stop), dt)
    delta = subtract(stop, start)
    bshape = _shape(delta)
    frac = np.arange(num, dtype=np.float64) / (div if div > 0 else 1)
    frac = frac.reshape((num,) + (1,) * len(bshape)).astype(dt)
    y = add(multiply(frac, delta), start)
    if endpoint and num > 1:
        y = concatenate([y[:-1], expand_dims(broadcast_to(stop, bshape), 0)], axis=0)
    if axis != 0:
        y = moveaxis(y, 0, axis)
    if dtype is not None:
        y = astype(y, dtype)
    if retstep:
        return y, true_divide(delta, float(div)) if div > 0 else math.nan
    return y


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``np.logspace``: ``base ** linspace(start, stop)``."""
    y = power(base, linspace(start, stop, num, endpoint=endpoint, axis=axis))
    return y if dtype is None else astype(y, dtype)


def full(shape, fill_value, dtype=None, order="C", **kwargs):
    """``np.full`` with a traced fill value (a scalar, or an array that broadcasts to
    ``shape``), differentiable in it: the value broadcast, in ``dtype`` (by default the fill
    value's, as NumPy's).

    >>> dg.grad(lambda a: np.sum(np.full((2, 3), a) * np.arange(6.0).reshape(2, 3)))(2.0)
    array(15.)
    """
    if not _is_tracer(fill_value):
        return np.full(shape, fill_value, dtype=dtype, order=order, **kwargs)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(
        int(n) for n in shape)
    return _broadcast_fill(fill_value, shape, dtype, "full")


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kwargs):
    """``np.full_like``; a traced fill value is broadcast to ``a``'s shape (or ``shape``)
    and cast to its dtype (or ``dtype``), as NumPy's, and differentiable in it.

    >>> dg.grad(lambda a: np.sum(np.full_like(np.zeros(3), a)))(2.0)
    array(3.)
    """
    if not _is_tracer(fill_value):
        if shape is None:
            return _fill_like(a, fill_value, dtype)
        return full(shape, fill_value, dtype=dtype or dtype_of(a))
    target = _shape(a) if shape is None else (
        (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape))
    return _broadcast_fill(fill_value, target, dtype or dtype_of(a), "full_like")


def _broadcast_fill(fill_value, shape, dtype, what: str):
    value = arraylike(fill_value)
    if dtype is not None:
        value = astype(value, dtype)
    try:
        fits = np.broadcast_shapes(_shape(value), shape) == tuple(shape)
    except ValueError:
        fits = False
    if not fits:
        raise InvalidArgumentError(
            f"{what}: a fill value of shape {_shape(value)} does not broadcast to the shape "
            f"{tuple(shape)} (at {user_location()})")
    return broadcast_to(value, tuple(shape))
