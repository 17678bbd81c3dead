"""``numpy.polynomial.polynomial``: ``polyval`` (Horner's scheme, lowest coefficient
first, as NumPy's) and its ``2d``/``3d`` forms."""
from __future__ import annotations

from ._series import prepare, valnd


def polyval(x, c, tensor=True):
    """``numpy.polynomial.polynomial.polyval``: ``c[0] + c[1] x + ...`` in NumPy's order.

    >>> from numpy.polynomial import polynomial as P
    >>> dg.grad(lambda c: P.polyval(2.0, c))(np.array([1.0, 1.0, 1.0]))
    array([1., 2., 4.])
    """
    c, x = prepare(c, x, tensor)
    c0 = c[-1] + x * 0
    for i in range(2, len(c) + 1):
        c0 = c[-i] + c0 * x
    return c0


def polyval2d(x, y, c):
    """``numpy.polynomial.polynomial.polyval2d``: the 2-D series at the points ``(x, y)``."""
    return valnd(polyval, c, x, y)


def polyval3d(x, y, z, c):
    """``numpy.polynomial.polynomial.polyval3d``: the 3-D series at the points ``(x, y, z)``."""
    return valnd(polyval, c, x, y, z)
