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

The cumulative functions of ``t``, ``beta``, ``gamma``, ``poisson`` and ``binom`` are
incomplete beta and gamma functions, differentiable in ``x`` (and ``loc``, ``scale``,
``mu``, ``p``) but not in their shape parameters (``df``, ``a``, ``b``, ``n``): those raise
a ``DualgpuError`` when differentiated, as ``scipy.special.betainc`` does.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import ArgumentTypeError, InvalidArgumentError, UnsupportedOpError, user_location
from ...lax import astype, dtype_of, is_tracer
from .. import numpy as dnp
from ..nn import xlogy
from ..numpy import linalg as dlinalg
from ..numpy.arguments import arraylike
from ._special_functions import betainc, gammainc, gammaincc
from ._stats_special import betaln, log_ndtr, ndtr, xlog1py

__all__ = ["bernoulli", "beta", "binom", "cauchy", "dirichlet", "expon", "gamma", "laplace",
           "multivariate_normal", "norm", "poisson", "t"]

_LOG_2PI = math.log(2 * math.pi)
_LOG_PI = math.log(math.pi)
_LOG_2 = math.log(2.0)
_INF, _NAN = math.inf, math.nan


def _float64(x):
    """``x`` as SciPy's distributions read it: a float64 array (traced or not)."""
    x = arraylike(x)
    if dtype_of(x).kind == "c":
        raise ArgumentTypeError(f"scipy.stats: complex arguments are not supported "
                                f"(at {user_location()})")
    if is_tracer(x) or hasattr(x, "dtype"):
        return astype(x, np.float64)
    return np.float64(x)


def _and(*conds):
    out = conds[0]
    for c in conds[1:]:
        out = dnp.logical_and(out, c)
    return out


def _positive(*xs):
    return _and(*(dnp.greater(x, 0) for x in xs))


# ----------------------------------------------------------------------- the distributions
class _Distribution:
    """What the continuous and discrete distributions share: SciPy's argument parsing and
    freezing."""

    name = ""
    methods: tuple[str, ...] = ()
    shapes: tuple[str, ...] = ()
    safe_shapes: tuple[float, ...] = ()  # valid values standing in for invalid parameters
    params: tuple[str, ...] = ("loc", "scale")
    defaults: tuple[object, ...] = (0.0, 1.0)
    x_name = "x"

    def _parse(self, method: str, args: tuple, kwds: dict) -> list:
        """The shape parameters, then loc (and scale), from SciPy's positional and keyword
        arguments, as float64 arrays."""
        names = self.shapes + self.params
        label = f"scipy.stats.{self.name}.{method}"
        if len(args) > len(names):
            raise ArgumentTypeError(
                f"{label} takes at most {len(names)} parameters after {self.x_name} "
                f"({', '.join(names)}), got {len(args)} (at {user_location()})")
        values = dict(zip(names, args))
        for key, value in kwds.items():
            if key not in names:
                raise ArgumentTypeError(
                    f"{label} got an unexpected keyword argument {key!r} (its parameters: "
                    f"{', '.join(names)}) (at {user_location()})")
            if key in values:
                raise ArgumentTypeError(f"{label} got multiple values for argument {key!r} "
                                        f"(at {user_location()})")
            values[key] = value
        missing = [n for n in self.shapes if n not in values]
        if missing:
            raise ArgumentTypeError(f"{label} is missing the shape parameter(s) "
                                    f"{', '.join(missing)} (at {user_location()})")
        defaults = dict(zip(self.params, self.defaults))
        return [_float64(values.get(n, defaults.get(n))) for n in names]

    def _safe(self, ok, shapes):
        """The shape parameters with a valid value where ``ok`` is false, so that the
        formulas (and their derivatives) stay finite where the answer is NaN anyway."""
        return [dnp.where(ok, s, safe) for s, safe in zip(shapes, self.safe_shapes)]

    def _argcheck(self, *shapes):
        return _positive(*shapes) if shapes else True

    def __call__(self, *args, **kwds) -> Frozen:
        """The frozen distribution: ``norm(loc, scale).logpdf(x)``."""
        self._parse("__call__", args, kwds)  # SciPy's errors at freezing time
        return Frozen(self, args, kwds)

    def __repr__(self) -> str:
        return f"<dualgpu's scipy.stats.{self.name} for traced values>"


class Frozen:
    """A distribution with its parameters fixed (SciPy's ``rv_frozen``): each method is the
    distribution's with those parameters.

    >>> import scipy.stats
    >>> float(dg.grad(lambda s: scipy.stats.norm(0.0, s).logpdf(2.0))(np.array(1.0)))
    3.0
    """

    def __init__(self, dist: _Distribution, args: tuple, kwds: dict):
        self.dist, self.args, self.kwds = dist, tuple(args), dict(kwds)

    @property
    def methods(self) -> tuple[str, ...]:
        return self.dist.methods

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self.dist.methods:
            raise UnsupportedOpError(
                f"scipy.stats.{self.dist.name}(...).{name} is not supported with traced "
                f"parameters (at {user_location()}); the traced methods are "
                f"{', '.join(self.dist.methods)}")
        bound = getattr(self.dist, name)

        def call(x, *args, **kwds):
            return bound(x, *self.args, *args, **self.kwds, **kwds)

        return call

    def __repr__(self) -> str:
        return f"<dualgpu's frozen scipy.stats.{self.dist.name}>"


class _Continuous(_Distribution):
    """A location-scale family of SciPy's ``rv_continuous``: subclasses give the standard
    form's ``_logpdf`` (and ``_pdf``, ``_cdf``, ``_sf``, ``_logcdf``, ``_logsf`` where they
    are more than exp/log of another) of ``y = (x - loc) / scale``."""

    methods = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")
    support = (-_INF, _INF)
    inside = 0.0  # a point of the support's interior, standing in for those outside it

    def _standard(self, method, x, args, kwds):
        """y, the (safe) shape parameters, the (safe) scale, and the validity mask."""
        *shapes, loc, scale = self._parse(method, args, kwds)
        x = _float64(x)
        ok = _and(self._argcheck(*shapes), dnp.greater(scale, 0))
        shapes = self._safe(ok, shapes)
        scale = dnp.where(ok, scale, 1.0)
        y = dnp.true_divide(dnp.subtract(x, loc), scale)
        return y, shapes, scale, ok

    def _support(self, *shapes):
        return self.support

    def _finish(self, out, y, ok):
        bad = dnp.logical_or(dnp.logical_not(ok), dnp.isnan(y))
        return dnp.where(bad, _NAN, out)

    def _density(self, method, x, args, kwds, log):
        y, shapes, scale, ok = self._standard(method, x, args, kwds)
        a, b = self._support(*shapes)
        inside = _and(ok, dnp.less_equal(a, y), dnp.less_equal(y, b))
        y_in = dnp.where(inside, y, self.inside)
        if log:
            out = dnp.where(inside, dnp.subtract(self._logpdf(y_in, *shapes), dnp.log(scale)),
                            -_INF)
        else:
            out = dnp.where(inside, dnp.true_divide(self._pdf(y_in, *shapes), scale), 0.0)
        return self._finish(out, y, ok)

    def _cumulative(self, method, x, args, kwds, fn, end, at_end, outside):
        """``fn`` inside the open support, ``at_end`` past its ``end`` (``upper`` for the
        cdf, ``lower`` for the sf), ``outside`` past the other."""
        y, shapes, _, ok = self._standard(method, x, args, kwds)
        a, b = self._support(*shapes)
        inside = _and(ok, dnp.less(a, y), dnp.less(y, b))
        y_in = dnp.where(inside, y, self.inside)
        beyond = dnp.greater_equal(y, b) if end == "upper" else dnp.less_equal(y, a)
        out = dnp.where(inside, fn(y_in, *shapes), dnp.where(beyond, at_end, outside))
        return self._finish(out, y, ok)

    def logpdf(self, x, *args, **kwds):
        return self._density("logpdf", x, args, kwds, log=True)

    def pdf(self, x, *args, **kwds):
        return self._density("pdf", x, args, kwds, log=False)

    def cdf(self, x, *args, **kwds):
        return self._cumulative("cdf", x, args, kwds, self._cdf, "upper", 1.0, 0.0)

    def logcdf(self, x, *args, **kwds):
        return self._cumulative("logcdf", x, args, kwds, self._logcdf, "upper", 0.0, -_INF)

    def sf(self, x, *args, **kwds):
        return self._cumulative("sf", x, args, kwds, self._sf, "lower", 1.0, 0.0)

    def logsf(self, x, *args, **kwds):
        return self._cumulative("logsf", x, args, kwds, self._logsf, "lower", 0.0, -_INF)

    # the standard form's defaults, as rv_continuous's
    def _pdf(self, y, *shapes):
        return dnp.exp(self._logpdf(y, *shapes))

    def _logcdf(self, y, *shapes):
        return dnp.log(self._cdf(y, *shapes))

    def _logsf(self, y, *shapes):
        return dnp.log(self._sf(y, *shapes))


class _Norm(_Continuous):
    """``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` of ``(x, loc=0, scale=1)``;
    ``logcdf`` and ``logsf`` by ``log_ndtr``, finite (with their derivatives) far in the
    tails."""

    name = "norm"

    def _logpdf(self, y):
        return dnp.subtract(dnp.multiply(-0.5, dnp.square(y)), 0.5 * _LOG_2PI)

    def _cdf(self, y):
        return ndtr(y)

    def _sf(self, y):
        return ndtr(dnp.negative(y))

    def _logcdf(self, y):
        return log_ndtr(y)

    def _logsf(self, y):
        return log_ndtr(dnp.negative(y))


class _T(_Continuous):
    """``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` of ``(x, df, loc=0,
    scale=1)`` (``df = inf``: the normal); the cumulative functions are not differentiable in
    ``df``."""

    name, shapes, safe_shapes = "t", ("df",), (1.0,)

    def _logpdf(self, y, df):
        finite = dnp.isfinite(df)
        df = dnp.where(finite, df, 1.0)
        half = dnp.multiply(0.5, df)
        t_form = dnp.subtract(
            dnp.subtract(dnp.gammaln(dnp.add(half, 0.5)), dnp.gammaln(half)),
            dnp.add(dnp.multiply(0.5, dnp.add(dnp.log(df), _LOG_PI)),
                    dnp.multiply(dnp.add(half, 0.5),
                                 dnp.log1p(dnp.true_divide(dnp.square(y), df)))))
        return dnp.where(finite, t_form, _Norm._logpdf(self, y))  # df = inf: the normal

    def _tail(self, y, df):
        """P(T < -|y|) = I_{df / (df + y^2)}(df / 2, 1 / 2) / 2, and whether df is finite."""
        finite = dnp.isfinite(df)
        df = dnp.where(finite, df, 1.0)
        z = dnp.true_divide(df, dnp.add(df, dnp.square(y)))
        return dnp.multiply(0.5, betainc(dnp.multiply(0.5, df), 0.5, z)), finite

    def _cdf(self, y, df):
        # at y == 0 the tail's argument df / (df + y^2) has a zero derivative and betainc an
        # infinite one: there the cdf is 1/2 + y pdf(0), exact to first and second order
        center = dnp.equal(y, 0)
        y_off = dnp.where(center, 1.0, y)
        tail, finite = self._tail(y_off, df)
        t_form = dnp.where(dnp.less(y_off, 0), tail, dnp.subtract(1.0, tail))
        off_center = dnp.where(finite, t_form, ndtr(y_off))
        at_center = dnp.add(0.5, dnp.multiply(y, dnp.exp(self._logpdf(0.0, df))))
        return dnp.where(center, at_center, off_center)

    def _sf(self, y, df):
        return self._cdf(dnp.negative(y), df)


class _Gamma(_Continuous):
    """``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` of ``(x, a, loc=0,
    scale=1)``; the cumulative functions are not differentiable in ``a``."""

    name, shapes, safe_shapes = "gamma", ("a",), (1.0,)
    support, inside = (0.0, _INF), 1.0

    def _logpdf(self, y, a):
        return dnp.subtract(dnp.subtract(xlogy(dnp.subtract(a, 1.0), y), y), dnp.gammaln(a))

    def _cdf(self, y, a):
        return gammainc(a, y)

    def _sf(self, y, a):
        return gammaincc(a, y)


class _Beta(_Continuous):
    """``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` of ``(x, a, b, loc=0,
    scale=1)``; the cumulative functions are not differentiable in ``a`` and ``b``."""

    name, shapes, safe_shapes = "beta", ("a", "b"), (1.0, 1.0)
    support, inside = (0.0, 1.0), 0.5

    def _logpdf(self, y, a, b):
        log_px = dnp.add(xlog1py(dnp.subtract(b, 1.0), dnp.negative(y)),
                         xlogy(dnp.subtract(a, 1.0), y))
        return dnp.subtract(log_px, betaln(a, b))

    def _cdf(self, y, a, b):
        return betainc(a, b, y)

    def _sf(self, y, a, b):
        return betainc(b, a, dnp.subtract(1.0, y))


class _Expon(_Continuous):
    """``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` of ``(x, loc=0,
    scale=1)``."""

    name, support, inside = "expon", (0.0, _INF), 1.0

    def _logpdf(self, y):
        return dnp.negative(y)

    def _cdf(self, y):
        return dnp.negative(dnp.expm1(dnp.negative(y)))

    def _sf(self, y):
        return dnp.exp(dnp.negative(y))

    def _logcdf(self, y):  # SciPy's: log(cdf) below the median log 2, log1p(-sf) above
        below = dnp.less(y, _LOG_2)
        return dnp.where(below, dnp.log(self._cdf(dnp.where(below, y, 0.5))),
                         dnp.log1p(dnp.negative(self._sf(dnp.where(below, 1.0, y)))))

    def _logsf(self, y):
        return dnp.negative(y)


class _Laplace(_Continuous):
    """``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` of ``(x, loc=0,
    scale=1)``."""

    name = "laplace"

    def _logpdf(self, y):
        return dnp.subtract(dnp.negative(dnp.absolute(y)), _LOG_2)

    # written in y, not |y|: the derivative at y == 0 is the density's (|y|'s is 0 there)
    def _cdf(self, y):
        above = dnp.greater(y, 0)
        lower = dnp.multiply(0.5, dnp.exp(dnp.where(above, 0.0, y)))
        upper = dnp.subtract(1.0, dnp.multiply(0.5, dnp.exp(dnp.negative(
            dnp.where(above, y, 0.0)))))
        return dnp.where(above, upper, lower)

    def _sf(self, y):
        return self._cdf(dnp.negative(y))

    def _logcdf(self, y):
        above = dnp.greater(y, 0)
        upper_tail = dnp.multiply(0.5, dnp.exp(dnp.negative(dnp.where(above, y, 0.0))))
        return dnp.where(above, dnp.log1p(dnp.negative(upper_tail)),
                         dnp.subtract(y, _LOG_2))

    def _logsf(self, y):
        return self._logcdf(dnp.negative(y))


class _Cauchy(_Continuous):
    """``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` of ``(x, loc=0,
    scale=1)``."""

    name = "cauchy"

    def _logpdf(self, y):
        # SciPy's forms: log1p(y^2) below |y| = 1, 2 log|y| + log1p(1/y^2) above (no overflow)
        small = dnp.less(dnp.absolute(y), 1.0)
        y_small = dnp.where(small, y, 0.0)
        abs_large = dnp.absolute(dnp.where(small, 1.0, y))
        by_small = dnp.log1p(dnp.square(y_small))
        by_large = dnp.add(dnp.multiply(2.0, dnp.log(abs_large)),
                           dnp.log1p(dnp.reciprocal(dnp.square(abs_large))))
        return dnp.subtract(dnp.negative(dnp.where(small, by_small, by_large)), _LOG_PI)

    def _pdf(self, y):
        return dnp.true_divide(1.0 / math.pi, dnp.add(1.0, dnp.square(y)))

    def _cdf(self, y):
        return dnp.multiply(1.0 / math.pi, dnp.arctan2(1.0, dnp.negative(y)))

    def _sf(self, y):
        return dnp.multiply(1.0 / math.pi, dnp.arctan2(1.0, y))

    def _logcdf(self, y):  # SciPy's: log(cdf) below the median, log1p(-sf) above
        below = dnp.less(y, 0)
        return dnp.where(below, dnp.log(self._cdf(dnp.where(below, y, -1.0))),
                         dnp.log1p(dnp.negative(self._sf(dnp.where(below, 1.0, y)))))

    def _logsf(self, y):
        return self._logcdf(dnp.negative(y))


# ------------------------------------------------------------------- discrete distributions
class _Discrete(_Distribution):
    """SciPy's ``rv_discrete`` on the integers of its support, shifted by ``loc``."""

    methods = ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf")
    params, defaults, x_name = ("loc",), (0.0,), "k"

    def _standard(self, method, k, args, kwds):
        """k - loc, the support, the (safe) shape parameters and the validity mask."""
        *shapes, loc = self._parse(method, args, kwds)
        ok = self._argcheck(*shapes)
        support = self._support(*shapes)
        return dnp.subtract(_float64(k), loc), support, self._safe(ok, shapes), ok

    def _finish(self, out, k, ok):
        bad = dnp.logical_or(dnp.logical_not(ok), dnp.isnan(k))
        return dnp.where(bad, _NAN, out)

    def _mass(self, method, k, args, kwds, log):
        k, (a, b), shapes, ok = self._standard(method, k, args, kwds)
        inside = _and(ok, dnp.greater_equal(k, a), dnp.less_equal(k, b),
                      dnp.equal(dnp.floor(k), k))
        k_in = dnp.where(inside, k, 0.0)
        log_pmf = self._logpmf(k_in, *shapes)
        out = (dnp.where(inside, log_pmf, -_INF) if log
               else dnp.where(inside, dnp.exp(log_pmf), 0.0))
        return self._finish(out, k, ok)

    def _cumulative(self, method, k, args, kwds, fn, end, at_end, outside):
        k, (a, b), shapes, ok = self._standard(method, k, args, kwds)
        inside = _and(ok, dnp.greater_equal(k, a), dnp.less(k, b), dnp.isfinite(k))
        k_in = dnp.floor(dnp.where(inside, k, 0.0))
        beyond = dnp.greater_equal(k, b) if end == "upper" else dnp.less(k, a)
        out = dnp.where(inside, fn(k_in, *shapes), dnp.where(beyond, at_end, outside))
        out = self._finish(out, k, ok)
        if method == "logcdf":  # SciPy's rv_discrete.logcdf: 0 past the support, even for
            out = dnp.where(beyond, 0.0, out)  # invalid parameters
        return out

    def logpmf(self, k, *args, **kwds):
        return self._mass("logpmf", k, args, kwds, log=True)

    def pmf(self, k, *args, **kwds):
        return self._mass("pmf", k, args, kwds, log=False)

    def cdf(self, k, *args, **kwds):
        return self._cumulative("cdf", k, args, kwds, self._cdf, "upper", 1.0, 0.0)

    def logcdf(self, k, *args, **kwds):
        log_cdf = lambda k, *shapes: dnp.log(self._cdf(k, *shapes))  # noqa: E731
        return self._cumulative("logcdf", k, args, kwds, log_cdf, "upper", 0.0, -_INF)

    def sf(self, k, *args, **kwds):
        return self._cumulative("sf", k, args, kwds, self._sf, "lower", 1.0, 0.0)

    def logsf(self, k, *args, **kwds):
        log_sf = lambda k, *shapes: dnp.log(self._sf(k, *shapes))  # noqa: E731
        return self._cumulative("logsf", k, args, kwds, log_sf, "lower", 0.0, -_INF)


class _Poisson(_Discrete):
    """``logpmf``, ``pmf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` of ``(k, mu, loc=0)``,
    differentiable in ``mu``."""

    name, shapes, safe_shapes = "poisson", ("mu",), (1.0,)

    def _argcheck(self, mu):
        return dnp.greater_equal(mu, 0)

    def _support(self, mu):
        return 0.0, _INF

    def _logpmf(self, k, mu):
        return dnp.subtract(dnp.subtract(xlogy(k, mu), dnp.gammaln(dnp.add(k, 1.0))), mu)

    def _cdf(self, k, mu):  # pdtr
        return gammaincc(dnp.add(k, 1.0), mu)

    def _sf(self, k, mu):  # pdtrc
        return gammainc(dnp.add(k, 1.0), mu)


class _Binom(_Discrete):
    """``logpmf``, ``pmf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` of ``(k, n, p, loc=0)``,
    differentiable in ``p``."""

    name = "binom"
    shapes: tuple[str, ...] = ("n", "p")
    safe_shapes: tuple[float, ...] = (1.0, 0.5)

    def _argcheck(self, n, p):
        return _and(dnp.greater_equal(n, 0), dnp.equal(dnp.floor(n), n),
                    dnp.greater_equal(p, 0), dnp.less_equal(p, 1))

    def _support(self, n, p):
        return 0.0, n

    def _logpmf(self, k, n, p):
        n_minus_k = dnp.subtract(n, k)
        log_choose = dnp.subtract(dnp.gammaln(dnp.add(n, 1.0)),
                                  dnp.add(dnp.gammaln(dnp.add(k, 1.0)),
                                          dnp.gammaln(dnp.add(n_minus_k, 1.0))))
        return dnp.add(log_choose, dnp.add(xlogy(k, p), xlog1py(n_minus_k, dnp.negative(p))))

    def _cdf(self, k, n, p):  # bdtr, for 0 <= k < n
        return betainc(dnp.subtract(n, k), dnp.add(k, 1.0), dnp.subtract(1.0, p))

    def _sf(self, k, n, p):  # bdtrc, for 0 <= k < n
        return betainc(dnp.add(k, 1.0), dnp.subtract(n, k), p)


class _Bernoulli(_Binom):
    """``logpmf``, ``pmf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` of ``(k, p, loc=0)``,
    differentiable in ``p``."""

    name, shapes, safe_shapes = "bernoulli", ("p",), (0.5,)

    def _argcheck(self, p):
        return _and(dnp.greater_equal(p, 0), dnp.less_equal(p, 1))

    def _support(self, p):
        return 0.0, 1.0

    def _logpmf(self, k, p):
        return _Binom._logpmf(self, k, 1.0, p)

    def _cdf(self, k, p):
        return _Binom._cdf(self, k, 1.0, p)

    def _sf(self, k, p):
        return _Binom._sf(self, k, 1.0, p)


# ----------------------------------------------------------------- multivariate distributions
def _squeeze(out):
    """SciPy's ``_squeeze_output``: size-1 axes dropped."""
    return dnp.squeeze(out)


class _MultivariateNormal(_Distribution):
    """``logpdf``, ``pdf`` of ``(x, mean=None, cov=1, allow_singular=False)``, the last axis
    of ``x`` the components; the covariance (a scalar, its diagonal or the matrix) is
    factored by Cholesky, so it must be positive definite (``cdf`` is refused)."""

    name, methods = "multivariate_normal", ("logpdf", "pdf")
    params, defaults = ("mean", "cov", "allow_singular"), (None, 1.0, False)

    def _parse(self, method, args, kwds):
        names = self.params
        label = f"scipy.stats.{self.name}.{method}"
        if len(args) > len(names):
            raise ArgumentTypeError(f"{label} takes at most 3 parameters after x (mean, cov, "
                                    f"allow_singular), got {len(args)} (at {user_location()})")
        values = dict(zip(names, self.defaults))
        values.update(zip(names, args))
        for key, value in kwds.items():
            if key not in names:
                raise ArgumentTypeError(f"{label} got an unexpected keyword argument {key!r} "
                                        f"(at {user_location()})")
            values[key] = value
        mean, cov = values["mean"], _float64(values["cov"])
        dim = (dnp.size(mean) if mean is not None
               else (1 if dnp.ndim(cov) < 2 else dnp.shape(cov)[0]))
        mean = (np.zeros(dim) if mean is None
                else dnp.reshape(_float64(mean), (dim,)) if dim == 1 else _float64(mean))
        if dnp.ndim(mean) != 1:
            raise InvalidArgumentError(f"{label}: mean must be a vector of length {dim} "
                                       f"(at {user_location()})")
        if dim == 1:
            cov = dnp.reshape(cov, (1, 1))
        elif dnp.ndim(cov) == 0:
            cov = dnp.multiply(cov, np.eye(dim))
        elif dnp.ndim(cov) == 1:
            cov = dnp.diag(cov)
        if dnp.shape(cov) != (dim, dim):
            raise InvalidArgumentError(f"{label}: cov of shape {dnp.shape(cov)} does not fit "
                                       f"a mean of length {dim} (at {user_location()})")
        return dim, mean, cov

    def logpdf(self, x, *args, **kwds):
        dim, mean, cov = self._parse("logpdf", args, kwds)
        x = _float64(x)
        if dnp.ndim(x) == 0:
            x = dnp.reshape(x, (1,))
        if dnp.ndim(x) == 1:
            x = dnp.reshape(x, (-1, 1) if dim == 1 else (1, -1))
        if dnp.shape(x)[-1] != dim:
            raise InvalidArgumentError(
                f"scipy.stats.multivariate_normal.logpdf: x's last axis has "
                f"{dnp.shape(x)[-1]} components, the mean {dim} (at {user_location()})")
        batch = dnp.shape(x)[:-1]
        diff = dnp.reshape(dnp.subtract(x, mean), (-1, dim))
        chol = dlinalg.cholesky(cov)
        white = dlinalg.solve(chol, dnp.transpose(diff))
        maha = dnp.sum(dnp.square(white), axis=0)
        log_det = dnp.multiply(2.0, dnp.sum(dnp.log(dnp.diagonal(chol))))
        out = dnp.multiply(-0.5, dnp.add(dnp.add(dim * _LOG_2PI, log_det), maha))
        return _squeeze(dnp.reshape(out, batch))

    def pdf(self, x, *args, **kwds):
        return dnp.exp(self.logpdf(x, *args, **kwds))


class _Dirichlet(_Distribution):
    """``logpdf``, ``pdf`` of ``(x, alpha)``, the first axis of ``x`` the components (SciPy's
    layout), which may omit the last (then ``1 - sum``); SciPy's check that ``x`` lies in the
    simplex needs values, so it is made where ``x`` is concrete."""

    name, methods, shapes, params, defaults = "dirichlet", ("logpdf", "pdf"), ("alpha",), (), ()

    def logpdf(self, x, *args, **kwds):
        (alpha,) = self._parse("logpdf", args, kwds)
        label = "scipy.stats.dirichlet.logpdf"
        if dnp.ndim(alpha) != 1:
            raise InvalidArgumentError(f"{label}: alpha must be a vector, got shape "
                                       f"{dnp.shape(alpha)} (at {user_location()})")
        k = dnp.shape(alpha)[0]
        x = _float64(x)
        if dnp.ndim(x) == 0 or dnp.shape(x)[0] not in (k - 1, k):
            raise InvalidArgumentError(
                f"{label}: x must have {k} or {k - 1} entries along its first axis (alpha has "
                f"{k}), got shape {dnp.shape(x)} (at {user_location()})")
        if dnp.shape(x)[0] == k - 1:
            last = dnp.subtract(1.0, dnp.sum(x, axis=0, keepdims=True))
            x = dnp.concatenate([x, last], axis=0)
        if isinstance(x, np.ndarray):  # concrete (on the host): SciPy's check
            _check_simplex(x, label)
        log_b = dnp.subtract(dnp.sum(dnp.gammaln(alpha)), dnp.gammaln(dnp.sum(alpha)))
        terms = dnp.transpose(xlogy(dnp.subtract(alpha, 1.0), dnp.transpose(x)))
        out = dnp.subtract(dnp.sum(terms, axis=0), log_b)
        return _squeeze(dnp.where(dnp.all(_positive(alpha)), out, _NAN))

    def pdf(self, x, *args, **kwds):
        return dnp.exp(self.logpdf(x, *args, **kwds))


def _check_simplex(x: np.ndarray, label: str) -> None:
    if np.min(x) < 0 or np.max(x) > 1 or (np.abs(np.sum(x, 0) - 1.0) > 10e-10).any():
        raise InvalidArgumentError(f"{label}: each point x must lie in the simplex (entries in "
                                   f"[0, 1] summing to 1), as SciPy requires "
                                   f"(at {user_location()})")


norm, t, gamma, beta = _Norm(), _T(), _Gamma(), _Beta()
expon, laplace, cauchy = _Expon(), _Laplace(), _Cauchy()
poisson, binom, bernoulli = _Poisson(), _Binom(), _Bernoulli()
multivariate_normal, dirichlet = _MultivariateNormal(), _Dirichlet()
_BY_NAME = {d.name: d for d in (norm, t, gamma, beta, expon, laplace, cauchy, poisson, binom,
                                bernoulli, multivariate_normal, dirichlet)}


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
        return Frozen(multivariate_normal, (obj.mean, obj.cov), {})
    if name == "dirichlet_frozen":
        return Frozen(dirichlet, (obj.alpha,), {})
    return None
