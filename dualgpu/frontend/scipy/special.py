"""``scipy.special`` (and ``cupyx.scipy.special``) on traced values, under SciPy's names:
the special functions that are elementwise primitives, and the composites of :mod:`..nn`.

    >>> import scipy.special
    >>> dg.grad(lambda x: scipy.special.expit(x))(np.array(0.0))
    array(0.25)
"""
from ...lax import cbrt, exp2, expm1, log1p
from ..nn import log_sigmoid as log_expit
from ..nn import logit, logsumexp, xlogy
from ..nn import scipy_log_softmax as log_softmax
from ..nn import scipy_softmax as softmax
from ..numpy.elementwise import digamma, erf, erfc, expit, gammaln, polygamma, sinc
from ..numpy.elementwise import digamma as psi
from ..numpy.elementwise import round_ as round
from ._special_functions import (
    beta,
    betainc,
    entr,
    erfcinv,
    erfinv,
    gamma,
    gammainc,
    gammaincc,
    gammasgn,
    i0,
    i1,
    iv,
    ive,
    j0,
    j1,
    jv,
    kl_div,
    multigammaln,
    rel_entr,
    rgamma,
    y0,
    y1,
    yn,
)
from ._special_functions import jv as jn
from ._stats_special import betaln, log_ndtr, ndtr, xlog1py

__all__ = ["beta", "betainc", "betaln", "cbrt", "digamma", "entr", "erf", "erfc", "erfcinv",
           "erfinv", "exp2", "expit", "expm1", "gamma", "gammainc", "gammaincc", "gammaln",
           "gammasgn", "i0", "i1", "iv", "ive", "j0", "j1", "jn", "jv", "kl_div", "log1p",
           "log_expit", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr",
           "polygamma", "psi", "rel_entr", "rgamma", "round", "sinc", "softmax", "xlog1py", "xlogy",
           "y0", "y1", "yn"]
