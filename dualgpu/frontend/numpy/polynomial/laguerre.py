"""``numpy.polynomial.laguerre``: ``lagval`` (Clenshaw's recurrence, as NumPy's) and its
``2d``/``3d`` forms."""
from __future__ import annotations

from ._series import clenshaw, prepare, valnd


def lagval(x, c, tensor=True):
    """``numpy.polynomial.laguerre.lagval``: the Laguerre series ``sum c[k] L_k(x)``."""
    c, x = prepare(c, x, tensor)
    c0, c1 = clenshaw(c, lambda ck, c0, c1, nd: (ck - (c1 * (nd - 1)) / nd,
                                                 c0 + (c1 * ((2 * nd - 1) - x)) / nd))
    return c0 + c1 * (1 - x)


def lagval2d(x, y, c):
    """``numpy.polynomial.laguerre.lagval2d``: the 2-D series at the points ``(x, y)``."""
    return valnd(lagval, c, x, y)


def lagval3d(x, y, z, c):
    """``numpy.polynomial.laguerre.lagval3d``: the 3-D series at the points ``(x, y, z)``."""
    return valnd(lagval, c, x, y, z)
