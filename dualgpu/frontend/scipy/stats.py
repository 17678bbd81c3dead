"""``scipy.stats`` on traced values: the distributions people differentiate, with SciPy's
arguments and conventions, written in registry ops (so every derivative comes from the ops'
rules, in every parameter).

Inside a traced function ``scipy.stats.norm.logpdf(x, loc, scale)``, ``norm.logpdf`` after
``from scipy.stats import norm`` and the frozen ``norm(loc, scale).logpdf(x)`` reach the
distribution of this module of the same name when a traced value is among the arguments
(:mod:`dualgpu.frontend.namespace`); on concrete values SciPy's own runs. As SciPy's: shape
parameters come first in SciPy's order, then ``loc`` (and ``scale``), positionally or by
keyword; arguments broadcast; values out of the support give -inf (log densities) or 0
(densities and probabilities), invalid parameters NaN; results are float64 (SciPy promotes
every input to float64).

    >>> import scipy.stats
    >>> dg.grad(lambda mu: scipy.stats.norm.logpdf(1.0, mu, 2.0))(np.array(0.0))
    array(0.25)

The cumulative functions of ``t``, ``beta``, ``gamma``, ``chi2``, ``poisson`` and ``binom`` are
incomplete beta and gamma functions, differentiable in ``x`` (and ``loc``, ``scale``,
``mu``, ``p``) but not in their shape parameters (``df``, ``a``, ``b``, ``n``): those raise
a ``DualgpuError`` when differentiated, as ``scipy.special.betainc`` does.
"""
from __future__ import annotations

from ._stats_base import Frozen
from ._stats_continuous import Beta, Cauchy, Chi2, Expon, Gamma, Laplace, Norm, T
from ._stats_discrete import Bernoulli, Binom, Poisson
from ._stats_multivariate import Dirichlet, MultivariateNormal

__all__ = ["Frozen", "bernoulli", "beta", "binom", "cauchy", "chi2", "counterpart",
           "dirichlet", "expon", "gamma", "laplace", "multivariate_normal", "norm", "poisson", "t"]

norm, t, gamma, beta, chi2 = Norm(), T(), Gamma(), Beta(), Chi2()
expon, laplace, cauchy = Expon(), Laplace(), Cauchy()
poisson, binom, bernoulli = Poisson(), Binom(), Bernoulli()
multivariate_normal, dirichlet = MultivariateNormal(), Dirichlet()
_BY_NAME = {d.name: d for d in (norm, t, gamma, beta, chi2, expon, laplace, cauchy, poisson,
                                binom, bernoulli, multivariate_normal, dirichlet)}


def counterpart(obj):
    """This module's distribution (or frozen distribution) for a SciPy one, or None.

    >>> import scipy.stats
    >>> counterpart(scipy.stats.norm) is norm, counterpart(scipy.stats.norm(1.0, 2.0)).args
    (True, (1.0, 2.0))
    """
    name = type(obj).__name__
    if name.endswith("_gen"):
        return _BY_NAME.get(getattr(obj, "name", None) or name.removesuffix("_gen"))
    dist = getattr(obj, "dist", None)
    if dist is not None and hasattr(obj, "args"):  # rv_frozen
        ours = _BY_NAME.get(getattr(dist, "name", None))
        return None if ours is None else Frozen(ours, obj.args, obj.kwds)
    if name == "multivariate_normal_frozen":
        return Frozen(multivariate_normal, (obj.mean, obj.cov, obj.allow_singular), {})
    if name == "dirichlet_frozen":
        return Frozen(dirichlet, (obj.alpha,), {})
    return None
