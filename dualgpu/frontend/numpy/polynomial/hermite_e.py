"""``numpy.polynomial.hermite_e``: ``hermeval`` (the probabilists' Hermite series,
Clenshaw's recurrence as NumPy's) and its ``2d``/``3d`` forms."""
from __future__ import annotations

from ._series import clenshaw, prepare, valnd


def hermeval(x, c, tensor=True):
    """``numpy.polynomial.hermite_e.hermeval``: the series ``sum c[k] He_k(x)``."""
    c, x = prepare(c, x, tensor)
    c0, c1 = clenshaw(c, lambda ck, c0, c1, nd: (ck - c1 * (nd - 1), c0 + c1 * x))
    return c0 + c1 * x


def hermeval2d(x, y, c):
    """``numpy.polynomial.hermite_e.hermeval2d``: the 2-D series at the points ``(x, y)``."""
    return valnd(hermeval, c, x, y)


def hermeval3d(x, y, z, c):
    """``numpy.polynomial.hermite_e.hermeval3d``: the 3-D series at the points ``(x, y, z)``."""
    return valnd(hermeval, c, x, y, z)
