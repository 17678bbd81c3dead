"""``numpy.polynomial.legendre``: ``legval`` (Clenshaw's recurrence, as NumPy's) and its
``2d``/``3d`` forms."""
from __future__ import annotations

from ._series import clenshaw, prepare, valnd


def legval(x, c, tensor=True):
    """``numpy.polynomial.legendre.legval``: the Legendre series ``sum c[k] P_k(x)``."""
    c, x = prepare(c, x, tensor)
    c0, c1 = clenshaw(c, lambda ck, c0, c1, nd: (ck - c1 * ((nd - 1) / nd),
                                                 c0 + c1 * x * ((2 * nd - 1) / nd)))
    return c0 + c1 * x


def legval2d(x, y, c):
    """``numpy.polynomial.legendre.legval2d``: the 2-D series at the points ``(x, y)``."""
    return valnd(legval, c, x, y)


def legval3d(x, y, z, c):
    """``numpy.polynomial.legendre.legval3d``: the 3-D series at the points ``(x, y, z)``."""
    return valnd(legval, c, x, y, z)
