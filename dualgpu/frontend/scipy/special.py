"""``scipy.special`` (and ``cupyx.scipy.special``) on traced values, under SciPy's names:
the special functions that are elementwise primitives, and the composites of :mod:`..nn`.

    >>> import scipy.special
    >>> dg.grad(lambda x: scipy.special.expit(x))(np.array(0.0))
    array(0.25)
"""
from .. import nn as _nn
from ..nn import log_sigmoid as log_expit
from ..nn import logit, logsumexp, xlogy
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
from ._special_functions import betainc


def softmax(x, axis=None):
    """``scipy.special.softmax``: over every element by default (``axis=None``, SciPy's
    default; ``dg.nn.softmax`` takes the last axis); integers in ``np.exp``'s float type."""
    return _nn.softmax(_nn.exp_float(x), axis=axis)


def log_softmax(x, axis=None):
    """``scipy.special.log_softmax``: over every element by default, as SciPy."""
    return _nn.log_softmax(_nn.exp_float(x), axis=axis)

__all__ = ["betainc", "cbrt", "digamma", "erf", "erfc", "exp2", "expit", "expm1", "gammaln",
           "log1p", "log_expit", "log_softmax", "logit", "logsumexp", "polygamma", "psi",
           "round", "sinc", "softmax", "xlogy"]
