"""``numpy.polynomial.chebyshev``: ``chebval`` (Clenshaw's recurrence, as NumPy's) and its
``2d``/``3d`` forms."""
from __future__ import annotations

from ._series import clenshaw, prepare, valnd


def chebval(x, c, tensor=True):
    """``numpy.polynomial.chebyshev.chebval``: the Chebyshev series ``sum c[k] T_k(x)``."""
    c, x = prepare(c, x, tensor)
    x2 = 2 * x
    c0, c1 = clenshaw(c, lambda ck, c0, c1, nd: (ck - c1, c0 + c1 * x2))
    return c0 + c1 * x


def chebval2d(x, y, c):
    """``numpy.polynomial.chebyshev.chebval2d``: the 2-D series at the points ``(x, y)``."""
    return valnd(chebval, c, x, y)


def chebval3d(x, y, z, c):
    """``numpy.polynomial.chebyshev.chebval3d``: the 3-D series at the points ``(x, y, z)``."""
    return valnd(chebval, c, x, y, z)
