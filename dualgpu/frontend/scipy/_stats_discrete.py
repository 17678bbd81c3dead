"""The discrete distributions of :mod:`.stats`: SciPy's ``rv_discrete`` on the integers of
the support, shifted by ``loc``."""
from __future__ import annotations

from .. import numpy as dnp
from ..nn import xlogy
from ._special_functions import betainc, gammainc, gammaincc
from ._stats_base import INF, NAN, Distribution, all_of, float64_array
from ._stats_special import xlog1py


class Discrete(Distribution):
    """SciPy's ``rv_discrete`` on the integers of its support, shifted by ``loc``."""

    methods = ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf")
    params, defaults, x_name = ("loc",), (0.0,), "k"

    def _standard(self, method, k, args, kwds):
        """k - loc, the support, the (safe) shape parameters and the validity mask."""
        *shapes, loc = self._parse(method, args, kwds)
        ok = self._argcheck(*shapes)
        support = self._support(*shapes)
        return dnp.subtract(float64_array(k), loc), support, self._safe(ok, shapes), ok

    def _finish(self, out, k, ok):
        bad = dnp.logical_or(dnp.logical_not(ok), dnp.isnan(k))
        return dnp.where(bad, NAN, out)

    def _mass(self, method, k, args, kwds, log):
        k, (a, b), shapes, ok = self._standard(method, k, args, kwds)
        inside = all_of(ok, dnp.greater_equal(k, a), dnp.less_equal(k, b),
                      dnp.equal(dnp.floor(k), k))
        k_in = dnp.where(inside, k, 0.0)
        log_pmf = self._logpmf(k_in, *shapes)
        out = (dnp.where(inside, log_pmf, -INF) if log
               else dnp.where(inside, dnp.exp(log_pmf), 0.0))
        return self._finish(out, k, ok)

    def _cumulative(self, method, k, args, kwds, fn, end, at_end, outside):
        k, (a, b), shapes, ok = self._standard(method, k, args, kwds)
        inside = all_of(ok, dnp.greater_equal(k, a), dnp.less(k, b), dnp.isfinite(k))
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
        return self._cumulative("logcdf", k, args, kwds, log_cdf, "upper", 0.0, -INF)

    def sf(self, k, *args, **kwds):
        return self._cumulative("sf", k, args, kwds, self._sf, "lower", 1.0, 0.0)

    def logsf(self, k, *args, **kwds):
        log_sf = lambda k, *shapes: dnp.log(self._sf(k, *shapes))  # noqa: E731
        return self._cumulative("logsf", k, args, kwds, log_sf, "lower", 0.0, -INF)


class Poisson(Discrete):
    """``logpmf``, ``pmf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` of ``(k, mu, loc=0)``,
    differentiable in ``mu``."""

    name, shapes, safe_shapes = "poisson", ("mu",), (1.0,)

    def _argcheck(self, mu):
        return dnp.greater_equal(mu, 0)

    def _support(self, mu):
        return 0.0, INF

    def _logpmf(self, k, mu):
        return dnp.subtract(dnp.subtract(xlogy(k, mu), dnp.gammaln(dnp.add(k, 1.0))), mu)

    def _cdf(self, k, mu):  # pdtr
        return gammaincc(dnp.add(k, 1.0), mu)

    def _sf(self, k, mu):  # pdtrc
        return gammainc(dnp.add(k, 1.0), mu)


class Binom(Discrete):
    """``logpmf``, ``pmf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` of ``(k, n, p, loc=0)``,
    differentiable in ``p``."""

    name = "binom"
    shapes: tuple[str, ...] = ("n", "p")
    safe_shapes: tuple[float, ...] = (1.0, 0.5)

    def _argcheck(self, n, p):
        return all_of(dnp.greater_equal(n, 0), dnp.equal(dnp.floor(n), n),
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


class Bernoulli(Binom):
    """``logpmf``, ``pmf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` of ``(k, p, loc=0)``,
    differentiable in ``p``."""

    name, shapes, safe_shapes = "bernoulli", ("p",), (0.5,)

    def _argcheck(self, p):
        return all_of(dnp.greater_equal(p, 0), dnp.less_equal(p, 1))

    def _support(self, p):
        return 0.0, 1.0

    def _logpmf(self, k, p):
        return Binom._logpmf(self, k, 1.0, p)

    def _cdf(self, k, p):
        return Binom._cdf(self, k, 1.0, p)

    def _sf(self, k, p):
        return Binom._sf(self, k, 1.0, p)
