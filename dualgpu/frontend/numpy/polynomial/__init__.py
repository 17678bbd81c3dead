"""``numpy.polynomial`` on traced values: the evaluation of series of each basis
(``polynomial.polyval``, ``chebyshev.chebval``, ``legendre.legval``, ``hermite.hermval``,
``hermite_e.hermeval``, ``laguerre.lagval``, and their ``2d``/``3d`` forms), written as
NumPy writes them (Horner's scheme and Clenshaw's recurrences, in NumPy's order of
operations), differentiable in the points and in the coefficients.

    >>> from numpy.polynomial import hermite
    >>> dg.grad(lambda x: hermite.hermval(x, [0.0, 0.0, 1.0]))(np.array(1.5))
    array(12.)
"""
from . import chebyshev, hermite, hermite_e, laguerre, legendre, polynomial

__all__ = ["chebyshev", "hermite", "hermite_e", "laguerre", "legendre", "polynomial"]
