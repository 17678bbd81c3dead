"""The ``fold`` rules: exact algebraic identities on literals and fills, applied where an
equation would be recorded (``bind``), so that rules written naturally give lean graphs.

This module holds the helpers the op blocks write their fold rules with (``add``,
``subtract``, ``multiply``, ``true_divide`` and ``power`` in :mod:`dualgpu.ops.elementwise`).
A fold rule gets the op's arguments and returns the value that stands for the equation, or
``None`` to record it as it is. Only traced values fold; concrete arrays compute as NumPy
does. What folds:

* a neutral operand: ``x + (-0.0)``, ``x - 0``, ``x * 1``, ``x / 1``, ``x ** 1`` are ``x``
  (only ``-0.0`` is neutral for ``+``: ``-0.0 + 0.0`` is ``0.0``), ``x * -1`` is ``-x`` and
  ``x ** 2`` is ``x * x``, when the other operand changes neither shape nor dtype;
* fills with fills or Python numbers: ``0.25 * ones`` is a 0.25 fill, with no equation on data;
* a fill whose shape the other operand fixes is passed as its number (``x + fill`` records
  ``x + 0.5``).

:func:`dualgpu.transforms.fold.fold_fills` applies the same rules to a whole graph.

    >>> g = dg.trace(lambda x: np.multiply(x, 1.0) + np.zeros_like(x) * 3.0, np.ones(2))
    >>> [(e.prim.name, [getattr(a, "value", "x") for a in e.inputs]) for e in g.eqns]
    [('add', ['x', 0.0])]

(``x * 1`` is ``x``; ``zeros * 3`` a zero fill, added as the number ``0.0``, which is kept:
``-0.0 + 0.0`` is ``0.0``, so only ``-0.0`` is neutral for ``+``.)
"""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from ..core.trace import Tracer

# the ops this module's helpers equip belong to the block that calls them (op.sites)
RULE_KIT = True


def fill_of(x):
    return x.fill_value if isinstance(x, Tracer) else None


def is_number(x) -> bool:
    """A Python int or float (weakly typed); not a bool, not a NumPy scalar (np.float64 is a
    float, but ``x32 * np.float64(1.0)`` is float64: it is not neutral)."""
    return isinstance(x, (int, float)) and not isinstance(x, (bool, np.generic))


def is_literal(x, value) -> bool:
    """``x`` is the Python number ``value`` or a fill of it."""
    v = fill_of(x) if isinstance(x, Tracer) else x
    return is_number(v) and v == value


def is_zero_of_sign(x, negative: bool) -> bool:
    """``x`` is a zero number or fill whose sign is ``negative`` (ints count as +0)."""
    v = fill_of(x) if isinstance(x, Tracer) else x
    if not is_number(v) or v != 0:
        return False
    return (math.copysign(1.0, v) < 0) == negative


def passes_through(x, other) -> bool:
    """``x`` can stand for ``op(x, other)``: a float tracer whose shape and dtype ``other``
    (a neutral number or fill) changes neither of."""
    if not isinstance(x, Tracer) or x.dtype.kind not in "fc":
        return False
    if isinstance(other, Tracer):
        return (np.broadcast_shapes(x.shape, other.shape) == x.shape
                and np.result_type(x.dtype, other.dtype) == x.dtype)
    return True


def fill_arithmetic(op, x, y):
    """``op`` of two fills, or of a fill and a Python number, as a fill of the result."""
    fx, fy = fill_of(x) is not None, fill_of(y) is not None
    if not (fx or fy):
        return None
    if (isinstance(x, Tracer) and not fx) or (isinstance(y, Tracer) and not fy):
        return None
    if not all(isinstance(a, Tracer) or is_number(a) for a in (x, y)):
        return None
    base = x if fx else y
    if fx and fy and x.shape != y.shape:
        return None
    value = op(fill_of(x) if fx else x, fill_of(y) if fy else y)
    if base.dtype.kind not in "fc" or isinstance(value, complex) and base.dtype.kind != "c":
        return None
    return lax.fill_like(base, value=float(value) if base.dtype.kind == "f" else value)


def _number_forfill_of(x, other):
    """A fill ``x`` as its number when ``other`` alone fixes the result's shape and dtype."""
    if fill_of(x) is not None and passes_through(other, x):
        return fill_of(x)
    return x


def binary_fold(prim, op, neutral_right, neutral_left=None):
    """The fold rule of a binary arithmetic op: neutral operands, fill arithmetic, fills
    passed as numbers; ``None`` when nothing folds."""
    def fold(x, y):
        if neutral_right(y) and passes_through(x, y):
            return x
        if neutral_left is not None and neutral_left(x) and passes_through(y, x):
            return y
        folded = fill_arithmetic(op, x, y)
        if folded is not None:
            return folded
        nx, ny = _number_forfill_of(x, y), _number_forfill_of(y, x)
        if nx is x and ny is y:
            return None
        return prim.bind(nx, ny)

    return fold


def fold_power(x, y):
    # only where x ** y keeps x's dtype: a float x, or an integer x with an int exponent
    # (int8 ** 1.0 is float64, bool ** 2 int64 in NumPy)
    if not isinstance(x, Tracer) or isinstance(y, Tracer) or not (
            x.dtype.kind in "fc" or x.dtype.kind in "iu" and isinstance(y, int)):
        return None
    if is_literal(y, 1):
        return x
    if is_literal(y, 2):
        return lax.multiply(x, x)
    return None
