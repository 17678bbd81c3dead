"""Arrays made from traced values: ``linspace``, ``logspace`` and ``geomspace`` from traced
endpoints, the grids of ``meshgrid``, ``full`` and ``full_like`` from a traced fill value
(``np.array`` of nested lists is :mod:`.arguments`')."""
from __future__ import annotations

import math
import operator

import numpy as np

from ...errors import InvalidArgumentError, UnsupportedOpError, user_location
from ...lax import (
    add,
    astype,
    broadcast_to,
    dtype_of,
    equal,
    expand_dims,
    floor,
    log10,
    moveaxis,
    multiply,
    reshape,
    sign,
    subtract,
    true_divide,
    where,
)
from ...lax import full_like as _fill_like
from ...lax import is_tracer as _is_tracer
from ...lax import shape_of as _shape
from .arguments import arraylike, as_array, host_value, unsupported_kwargs
from .elementwise import power
from .introspection import result_type
from .joining import concatenate
from .reductions import any_


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """``np.linspace``, differentiable in ``start`` and ``stop`` (arrays broadcast, as
    NumPy's), in NumPy's steps (``arange(num) * (delta / div) + start``; where a step
    underflows to 0, ``arange(num) / div * delta``); the last sample is exactly ``stop``
    when ``endpoint``; an integer ``dtype`` takes the floor, as NumPy's.

    >>> dg.grad(lambda b: np.sum(np.linspace(0.0, b, 5)))(np.array(2.0))
    array(2.5)
    """
    if not (_is_tracer(start) or _is_tracer(stop)):
        return np.linspace(start, stop, num, endpoint=endpoint, retstep=retstep,
                           dtype=dtype, axis=axis,
                           **({} if device is None else {"device": device}))
    unsupported_kwargs("linspace", {"device": None if device == "cpu" else device})
    num = operator.index(num)
    if num < 0:
        raise InvalidArgumentError(f"linspace: num={num} must be non-negative "
                                   f"(at {user_location()})")
    div = (num - 1) if endpoint else num
    dt = result_type(start, stop, 1.0)
    start, stop = astype(arraylike(start), dt), astype(arraylike(stop), dt)
    delta = subtract(stop, start)
    bshape = _shape(delta)
    y = np.arange(num, dtype=dt).reshape((num,) + (1,) * len(bshape))
    if div > 0:
        step = true_divide(delta, div)
        underflow = any_(equal(step, 0))  # NumPy: any step 0 takes the other path for all
        y = where(underflow, multiply(y / div, delta), multiply(y, step))
    else:
        step = math.nan
        y = multiply(y, delta)
    y = add(y, start)
    if endpoint and num > 1:
        y = concatenate([y[:-1], expand_dims(broadcast_to(stop, bshape), 0)], axis=0)
    if axis != 0:
        y = moveaxis(y, 0, axis)
    if dtype is not None:
        y = astype(floor(y) if np.dtype(dtype).kind in "iu" else y, dtype)
    return (y, step) if retstep else y


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``np.logspace``: ``base ** linspace(start, stop)``."""
    y = power(base, linspace(start, stop, num, endpoint=endpoint, axis=axis))
    return y if dtype is None else astype(y, dtype)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``np.geomspace`` of traced endpoints, as NumPy computes it (``logspace`` between the
    logarithms of the endpoints made positive, the ends set to ``start`` and ``stop``
    exactly, the sign restored); differentiable in ``start`` and ``stop``. Constant
    endpoints of zero are refused as NumPy refuses them; traced ones cannot be checked
    before the program runs (a zero there gives nan). Complex endpoints are refused.

    >>> dg.grad(lambda b: np.geomspace(1.0, b, 3)[1])(np.array(4.0))
    array(0.25)
    """
    if not (_is_tracer(start) or _is_tracer(stop)):
        return np.geomspace(start, stop, num, endpoint=endpoint, dtype=dtype, axis=axis)
    start, stop = arraylike(start), arraylike(stop)
    for end in (start, stop):
        if not _is_tracer(end) and np.any(host_value(end) == 0):
            raise InvalidArgumentError(f"np.geomspace: a geometric sequence cannot include "
                                       f"zero (at {user_location()})")
    num = operator.index(num)
    dt = result_type(start, stop, float(num), np.zeros((), dtype))
    if dt.kind == "c":
        raise UnsupportedOpError(f"np.geomspace: complex endpoints are not supported on "
                                 f"traced values (at {user_location()})")
    start, stop = astype(start, dt), astype(stop, dt)
    out_sign = sign(start)
    start = true_divide(start, out_sign)
    stop = true_divide(stop, out_sign)
    result = logspace(log10(start), log10(stop), num=num, endpoint=endpoint, base=10.0,
                      dtype=dt)
    bshape = _shape(result)[1:]
    if num > 0:  # the ends exactly (10 ** log10(x) need not be x)
        ends = [expand_dims(broadcast_to(start, bshape), 0)]
        middle_end = num - 1 if num > 1 and endpoint else num
        parts = ends + ([result[1:middle_end]] if middle_end > 1 else [])
        if num > 1 and endpoint:
            parts.append(expand_dims(broadcast_to(stop, bshape), 0))
        result = concatenate(parts, axis=0)
    result = multiply(result, out_sign)
    if axis != 0:
        result = moveaxis(result, 0, axis)
    return astype(result, dt if dtype is None else dtype)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """``np.meshgrid`` (``indexing`` "xy" or "ij", ``sparse``, ``copy``): each input
    raveled along its own axis and broadcast, differentiable in each.

    >>> X, Y = dg.jit(lambda x: np.meshgrid(x, 2 * x))(np.array([0.0, 1.0]))
    >>> Y
    array([[0., 0.],
           [2., 2.]])
    """
    if indexing not in ("xy", "ij"):
        raise InvalidArgumentError(f"np.meshgrid: valid values for indexing are 'xy' and "
                                   f"'ij', got {indexing!r} (at {user_location()})")
    ndim = len(xi)
    shapes = [(1,) * i + (-1,) + (1,) * (ndim - i - 1) for i in range(ndim)]
    if indexing == "xy" and ndim > 1:
        shapes[0] = (1, -1) + (1,) * (ndim - 2)
        shapes[1] = (-1, 1) + (1,) * (ndim - 2)
    output = [reshape(as_array(x), s) for x, s in zip(xi, shapes)]
    if not sparse:
        shape = np.broadcast_shapes(*[_shape(o) for o in output])
        output = [broadcast_to(o, shape) for o in output]
    return tuple(output) if copy or not sparse else output


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
