"""``scipy.special`` (and ``cupyx.scipy.special``) on traced values, under SciPy's names:
the special functions that are elementwise primitives, and the composites of :mod:`..nn`.

    >>> import scipy.special
    >>> dg.grad(lambda x: scipy.special.expit(x))(np.array(0.0))
    array(0.25)
"""
from ...ops import elementwise as _ew
from ..nn import log_softmax, logit, logsumexp, softmax, xlogy
from ..numpy.elementwise import (
    cbrt,
    digamma,
    erf,
    erfc,
    exp2,
    expit,
    expm1,
    gammaln,
    log1p,
    polygamma,
    sinc,
)
from ..numpy.elementwise import digamma as psi
from ..numpy.elementwise import round_ as round


def betainc(a, b, x):
    """``scipy.special.betainc``: the regularized incomplete beta function I_x(a, b),
    differentiable in ``x`` (``x**(a-1) (1-x)**(b-1) / B(a, b)``); derivatives in ``a`` and
    ``b`` are refused, as JAX has none.

    >>> import scipy.special
    >>> dg.grad(lambda x: scipy.special.betainc(2.0, 3.0, x))(np.array(0.5))
    array(1.5)
    """
    return _ew.betainc.bind(a, b, x)


__all__ = ["betainc", "cbrt", "digamma", "erf", "erfc", "exp2", "expit", "expm1", "gammaln",
           "log1p", "log_softmax", "logit", "logsumexp", "polygamma", "psi", "round", "sinc",
           "softmax", "xlogy"]
