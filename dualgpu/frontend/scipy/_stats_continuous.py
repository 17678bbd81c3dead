"""The continuous distributions of :mod:`.stats`: SciPy's location-scale families, each
its standard form's log density (and cumulative functions) in registry ops."""
from __future__ import annotations

import math

from .. import numpy as dnp
from ..nn import xlogy
from ._special_functions import betainc, gammainc, gammaincc
from ._stats_base import INF, LOG_2, LOG_2PI, LOG_PI, NAN, Distribution, all_of, float64_array
from ._stats_special import betaln, log_ndtr, ndtr, xlog1py


class Continuous(Distribution):
    """A location-scale family of SciPy's ``rv_continuous``: subclasses give the standard
    form's ``_logpdf`` (and ``_pdf``, ``_cdf``, ``_sf``, ``_logcdf``, ``_logsf`` where they
    are more than exp/log of another) of ``y = (x - loc) / scale``."""

    methods = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")
    support = (-INF, INF)
    inside = 0.0  # a point of the support's interior, standing in for those outside it

    def _standard(self, method, x, args, kwds):
        """y, the (safe) shape parameters, the (safe) scale, and the validity mask."""
        *shapes, loc, scale = self._parse(method, args, kwds)
        x = float64_array(x)
        ok = all_of(self._argcheck(*shapes), dnp.greater(scale, 0))
        shapes = self._safe(ok, shapes)
        scale = dnp.where(ok, scale, 1.0)
        y = dnp.true_divide(dnp.subtract(x, loc), scale)
        return y, shapes, scale, ok

    def _support(self, *shapes):
        return self.support

    def _finish(self, out, y, ok):
        bad = dnp.logical_or(dnp.logical_not(ok), dnp.isnan(y))
        return dnp.where(bad, NAN, out)

    def _density(self, method, x, args, kwds, log):
        y, shapes, scale, ok = self._standard(method, x, args, kwds)
        a, b = self._support(*shapes)
        inside = all_of(ok, dnp.less_equal(a, y), dnp.less_equal(y, b))
        y_in = dnp.where(inside, y, self.inside)
        if log:
            out = dnp.where(inside, dnp.subtract(self._logpdf(y_in, *shapes), dnp.log(scale)),
                            -INF)
        else:
            out = dnp.where(inside, dnp.true_divide(self._pdf(y_in, *shapes), scale), 0.0)
        return self._finish(out, y, ok)

    def _cumulative(self, method, x, args, kwds, fn, end, at_end, outside):
        """``fn`` inside the open support, ``at_end`` past its ``end`` (``upper`` for the
        cdf, ``lower`` for the sf), ``outside`` past the other."""
        y, shapes, _, ok = self._standard(method, x, args, kwds)
        a, b = self._support(*shapes)
        inside = all_of(ok, dnp.less(a, y), dnp.less(y, b))
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
        return self._cumulative("logcdf", x, args, kwds, self._logcdf, "upper", 0.0, -INF)

    def sf(self, x, *args, **kwds):
        return self._cumulative("sf", x, args, kwds, self._sf, "lower", 1.0, 0.0)

    def logsf(self, x, *args, **kwds):
        return self._cumulative("logsf", x, args, kwds, self._logsf, "lower", 0.0, -INF)

    # the standard form's defaults, as rv_continuous's
    def _pdf(self, y, *shapes):
        return dnp.exp(self._logpdf(y, *shapes))

    def _logcdf(self, y, *shapes):
        return dnp.log(self._cdf(y, *shapes))

    def _logsf(self, y, *shapes):
        return dnp.log(self._sf(y, *shapes))


class Norm(Continuous):
    """``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` of ``(x, loc=0, scale=1)``;
    ``logcdf`` and ``logsf`` by ``log_ndtr``, finite (with their derivatives) far in the
    tails."""

    name = "norm"

    def _logpdf(self, y):
        return dnp.subtract(dnp.multiply(-0.5, dnp.square(y)), 0.5 * LOG_2PI)

    def _cdf(self, y):
        return ndtr(y)

    def _sf(self, y):
        return ndtr(dnp.negative(y))

    def _logcdf(self, y):
        return log_ndtr(y)

    def _logsf(self, y):
        return log_ndtr(dnp.negative(y))


class T(Continuous):
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
            dnp.add(dnp.multiply(0.5, dnp.add(dnp.log(df), LOG_PI)),
                    dnp.multiply(dnp.add(half, 0.5),
                                 dnp.log1p(dnp.true_divide(dnp.square(y), df)))))
        return dnp.where(finite, t_form, Norm._logpdf(self, y))  # df = inf: the normal

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


class Gamma(Continuous):
    """``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` of ``(x, a, loc=0,
    scale=1)``; the cumulative functions are not differentiable in ``a``."""

    name, shapes, safe_shapes = "gamma", ("a",), (1.0,)
    support, inside = (0.0, INF), 1.0

    def _logpdf(self, y, a):
        return dnp.subtract(dnp.subtract(xlogy(dnp.subtract(a, 1.0), y), y), dnp.gammaln(a))

    def _cdf(self, y, a):
        return gammainc(a, y)

    def _sf(self, y, a):
        return gammaincc(a, y)


class Chi2(Continuous):
    """``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` of ``(x, df, loc=0,
    scale=1)``: the gamma distribution of shape ``df / 2`` and scale 2; the cumulative
    functions are not differentiable in ``df``."""

    name, shapes, safe_shapes = "chi2", ("df",), (2.0,)
    support, inside = (0.0, INF), 1.0

    def _logpdf(self, y, df):
        half = dnp.multiply(0.5, df)
        return dnp.subtract(dnp.subtract(xlogy(dnp.subtract(half, 1.0), y),
                                         dnp.multiply(0.5, y)),
                            dnp.add(dnp.gammaln(half), dnp.multiply(LOG_2, half)))

    def _cdf(self, y, df):
        return gammainc(dnp.multiply(0.5, df), dnp.multiply(0.5, y))

    def _sf(self, y, df):
        return gammaincc(dnp.multiply(0.5, df), dnp.multiply(0.5, y))


class Beta(Continuous):
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


class Expon(Continuous):
    """``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` of ``(x, loc=0,
    scale=1)``."""

    name, support, inside = "expon", (0.0, INF), 1.0

    def _logpdf(self, y):
        return dnp.negative(y)

    def _cdf(self, y):
        return dnp.negative(dnp.expm1(dnp.negative(y)))

    def _sf(self, y):
        return dnp.exp(dnp.negative(y))

    def _logcdf(self, y):  # SciPy's: log(cdf) below the median log 2, log1p(-sf) above
        below = dnp.less(y, LOG_2)
        return dnp.where(below, dnp.log(self._cdf(dnp.where(below, y, 0.5))),
                         dnp.log1p(dnp.negative(self._sf(dnp.where(below, 1.0, y)))))

    def _logsf(self, y):
        return dnp.negative(y)


class Laplace(Continuous):
    """``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` of ``(x, loc=0,
    scale=1)``."""

    name = "laplace"

    def _logpdf(self, y):
        return dnp.subtract(dnp.negative(dnp.absolute(y)), LOG_2)

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
                         dnp.subtract(y, LOG_2))

    def _logsf(self, y):
        return self._logcdf(dnp.negative(y))


class Cauchy(Continuous):
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
        return dnp.subtract(dnp.negative(dnp.where(small, by_small, by_large)), LOG_PI)

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
