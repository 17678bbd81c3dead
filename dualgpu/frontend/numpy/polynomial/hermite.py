"""``numpy.polynomial.hermite``: ``hermval`` (the physicists' Hermite series, Clenshaw's
recurrence as NumPy's) and its ``2d``/``3d`` forms."""
from __future__ import annotations

from ._series import clenshaw, prepare, valnd


def hermval(x, c, tensor=True):
    """``numpy.polynomial.hermite.hermval``: the Hermite series ``sum c[k] H_k(x)``."""
    c, x = prepare(c, x, tensor)
    x2 = x * 2
    c0, c1 = clenshaw(c, lambda ck, c0, c1, nd: (ck - c1 * (2 * (nd - 1)), c0 + c1 * x2))
    return c0 + c1 * x2


def hermval2d(x, y, c):
    """``numpy.polynomial.hermite.hermval2d``: the 2-D series at the points ``(x, y)``."""
    return valnd(hermval, c, x, y)


def hermval3d(x, y, z, c):
    """``numpy.polynomial.hermite.hermval3d``: the 3-D series at the points ``(x, y, z)``."""
    return valnd(hermval, c, x, y, z)
