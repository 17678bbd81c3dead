"""The special functions ``scipy.stats`` is written in that are compositions of registry ops:
the normal distribution's ``ndtr`` and its stable logarithm ``log_ndtr``, ``xlog1py`` and
``betaln`` (``scipy.special`` exports them under these names)."""
from __future__ import annotations

import math

from .. import numpy as dnp
from ..nn import scipy_float

_SQRT1_2 = math.sqrt(0.5)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_LOG_NDTR_LOWER = -20.0  # below: the asymptotic series (erfc would reach subnormals ~ -37)
_LOG_NDTR_TERMS = 10  # the series' terms: (2k-1)!! / x**(2k) < 1e-17 from x = -20 on


def ndtr(x):
    """``scipy.special.ndtr``: the standard normal CDF, ``erfc(-x / sqrt(2)) / 2``.

    >>> import scipy.special
    >>> dg.grad(lambda x: scipy.special.ndtr(x))(np.array(0.0))
    array(0.39894228)
    """
    (x,) = scipy_float(x)
    return dnp.multiply(0.5, dnp.erfc(dnp.multiply(-_SQRT1_2, x)))


def log_ndtr(x):
    """``scipy.special.log_ndtr``: ``log(ndtr(x))``, accurate for every ``x`` (SciPy's
    forms): ``log1p(-ndtr(-x))`` from -1 on, ``log(ndtr(x))`` down to -20, and the
    asymptotic series of Mills' ratio below, where ``ndtr`` underflows; each branch sees only
    the inputs of its range, so the derivative is finite everywhere.

    >>> import scipy.special
    >>> dg.grad(lambda x: scipy.special.log_ndtr(x))(np.array(-50.0))
    array(50.01998403)
    """
    (x,) = scipy_float(x)
    upper = dnp.greater_equal(x, -1.0)
    lower = dnp.less(x, _LOG_NDTR_LOWER)
    x_upper = dnp.where(upper, x, 0.0)
    x_middle = dnp.where(dnp.logical_or(upper, lower), -2.0, x)
    x_lower = dnp.where(lower, x, 2 * _LOG_NDTR_LOWER)
    by_upper = dnp.log1p(dnp.negative(ndtr(dnp.negative(x_upper))))
    by_middle = dnp.log(ndtr(x_middle))
    by_lower = _log_ndtr_asymptotic(x_lower)
    return dnp.where(upper, by_upper, dnp.where(lower, by_lower, by_middle))


def _log_ndtr_asymptotic(x):
    """log ndtr(x) for x << 0: -x**2/2 - log(-x) - log(2 pi)/2 + log(1 + sum_k (-1)**k
    (2k-1)!! / x**(2k))."""
    inv_x2 = dnp.reciprocal(dnp.square(x))
    series, power, double_factorial = 0.0, 1.0, 1.0
    for k in range(1, _LOG_NDTR_TERMS + 1):
        power = dnp.multiply(power, inv_x2)
        double_factorial *= 2 * k - 1
        series = dnp.add(series, dnp.multiply((-1) ** k * double_factorial, power))
    head = dnp.subtract(dnp.multiply(-0.5, dnp.square(x)), dnp.log(dnp.negative(x)))
    return dnp.add(dnp.subtract(head, _HALF_LOG_2PI), dnp.log1p(series))


def xlog1py(x, y):
    """``scipy.special.xlog1py``: ``x * log1p(y)``, zero where ``x == 0`` (whatever ``y``).

    Derivatives as :func:`~dualgpu.frontend.nn.xlogy`'s: ``log1p(y)`` in ``x`` and
    ``x / (1 + y)`` in ``y``, also at ``x == 0`` (a Beta(a, 1) log-density's gradient in
    ``b``); 0 there where ``y`` is not above -1 and finite.

    >>> import scipy.special
    >>> dg.grad(lambda y: scipy.special.xlog1py(2.0, y))(np.array(1.0))
    array(1.)
    >>> float(dg.grad(lambda x: scipy.special.xlog1py(x, np.e - 1))(0.0))
    1.0
    """
    x, y = scipy_float(x, y)
    y_ok = dnp.logical_and(dnp.greater(y, -1.0), dnp.isfinite(y))
    safe_y = dnp.where(dnp.logical_and(dnp.equal(x, 0), dnp.logical_not(y_ok)), 0.0, y)
    # + 0.0: SciPy's 0.0 where x == 0 and log1p(y) < 0 (the product is -0.0)
    return dnp.add(dnp.multiply(x, dnp.log1p(safe_y)), 0.0)


def betaln(a, b):
    """``scipy.special.betaln``: ``log |B(a, b)|`` as ``gammaln(a) + gammaln(b) -
    gammaln(a + b)``.

    >>> import scipy.special
    >>> float(np.exp(dg.jit(lambda a: scipy.special.betaln(a, 2.0))(np.array(1.0))))
    0.5
    """
    a, b = scipy_float(a, b)
    return dnp.subtract(dnp.add(dnp.gammaln(a), dnp.gammaln(b)), dnp.gammaln(dnp.add(a, b)))

