"""The functions of ``scipy.special`` that are more than an elementwise op under another name
(the namespace, :mod:`.special`, only imports)."""
from __future__ import annotations

from ... import lax
from ...ops import special_functions as _sf


def betainc(a, b, x):
    """``scipy.special.betainc``: the regularized incomplete beta function I_x(a, b),
    differentiable in ``x`` (``x**(a-1) (1-x)**(b-1) / B(a, b)``); derivatives in ``a`` and
    ``b`` are refused, as JAX has none.

    >>> import scipy.special
    >>> dg.grad(lambda x: scipy.special.betainc(2.0, 3.0, x))(np.array(0.5))
    array(1.5)
    """
    return _sf.betainc.bind(a, b, x)


def gammainc(a, x):
    """``scipy.special.gammainc``: the regularized lower incomplete gamma function P(a, x),
    differentiable in ``x`` (``x**(a-1) exp(-x) / Gamma(a)``); derivatives in ``a`` are
    refused (as for betainc).

    >>> import scipy.special
    >>> dg.grad(lambda x: scipy.special.gammainc(1.0, x))(np.array(0.0))
    array(1.)
    """
    return _sf.gammainc.bind(a, x)


def gammaincc(a, x):
    """``scipy.special.gammaincc``: the regularized upper incomplete gamma function
    Q(a, x) = 1 - P(a, x), differentiable in ``x``.

    >>> import scipy.special
    >>> dg.grad(lambda x: scipy.special.gammaincc(1.0, x))(np.array(0.0))
    array(-1.)
    """
    return _sf.gammaincc.bind(a, x)


def gamma(x):
    """``scipy.special.gamma``.

    >>> import scipy.special
    >>> dg.grad(lambda x: scipy.special.gamma(x))(np.array(1.0))  # -Euler's constant
    array(-0.57721566)
    """
    return _sf.gamma.bind(x)


def rgamma(x):
    """``scipy.special.rgamma``: ``1 / gamma(x)`` (0 at the poles)."""
    return lax.reciprocal(_sf.gamma.bind(x))


def erfinv(x):
    """``scipy.special.erfinv``."""
    return _sf.erfinv.bind(x)


def erfcinv(x):
    """``scipy.special.erfcinv``."""
    return _sf.erfcinv.bind(x)


def i0(x):
    """``scipy.special.i0``, the modified Bessel function of order 0."""
    return _sf.i0.bind(x)


def i1(x):
    """``scipy.special.i1``, the modified Bessel function of order 1.

    >>> import scipy.special
    >>> float(dg.grad(lambda x: scipy.special.i1(x))(np.array(0.0)))
    0.5
    """
    return _sf.i1.bind(x)
