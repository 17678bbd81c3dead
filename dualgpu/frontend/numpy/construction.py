"""Arrays made from traced endpoints: ``linspace`` and ``logspace`` (``np.array`` of nested
lists is :mod:`.arguments`')."""
from __future__ import annotations

import math

import numpy as np

from ...errors import InvalidArgumentError, user_location
from ...lax import add, astype, broadcast_to, expand_dims, moveaxis, multiply, subtract, true_divide
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
