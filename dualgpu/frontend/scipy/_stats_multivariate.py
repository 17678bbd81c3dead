"""The multivariate distributions of :mod:`.stats`: ``multivariate_normal`` and
``dirichlet``."""
from __future__ import annotations

import numpy as np

from ...errors import ArgumentTypeError, InvalidArgumentError, user_location
from ...lax import is_tracer, stop_gradient
from .. import numpy as dnp
from ..nn import xlogy
from ..numpy import linalg as dlinalg
from ._stats_base import INF, LOG_2PI, NAN, Distribution, float64_array, positive

_PSD_COND = 1e6 * float(np.finfo(np.float64).eps)  # SciPy's _eigvalsh_to_eps


def _squeeze(out):
    """SciPy's ``_squeeze_output``: size-1 axes dropped."""
    return dnp.squeeze(out)


class MultivariateNormal(Distribution):
    """``logpdf``, ``pdf`` of ``(x, mean=None, cov=1, allow_singular=False)``, the last axis
    of ``x`` the components, and ``entropy(mean=None, cov=1)``; the covariance (a scalar,
    its diagonal or the matrix) is factored by Cholesky, so it must be positive definite
    unless ``allow_singular=True`` (``cdf`` is refused).

    ``allow_singular=True`` (and ``entropy``, always) are SciPy's pseudo-determinant and
    pseudo-inverse: eigenvalues of ``cov`` up to SciPy's cutoff (``1e6`` ulps of the
    largest) span its null space ``V``, the rank counts the others, points off the support
    (``|(x - mean) V|`` above SciPy's tolerance) have density 0. ``cov + V Vᵀ`` is then
    factored by Cholesky: its log-determinant is the pseudo-determinant's and its inverse
    the pseudo-inverse on the support, and ``V`` (computed from the values) is constant, so
    a full-rank covariance has the ordinary derivatives of every order, and a singular one
    the derivatives at constant rank (as ``np.linalg.pinv``'s): the density jumps where the
    rank changes, so no other derivative exists.
    """

    name, methods = "multivariate_normal", ("logpdf", "pdf", "entropy")
    without_x = ("entropy",)
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
            if names.index(key) < len(args):  # (the keyword replaced the positional value)
                raise ArgumentTypeError(f"{label} got multiple values for argument {key!r} "
                                        f"(at {user_location()})")
            values[key] = value
        mean, cov = values["mean"], float64_array(values["cov"])
        dim = (dnp.size(mean) if mean is not None
               else (1 if dnp.ndim(cov) < 2 else dnp.shape(cov)[0]))
        mean = (np.zeros(dim) if mean is None
                else dnp.reshape(float64_array(mean), (dim,)) if dim == 1 else float64_array(mean))
        if dnp.ndim(mean) != 1:
            raise InvalidArgumentError(f"{label}: mean must be a vector of length {dim} "
                                       f"(at {user_location()})")
        if dim == 1 and dnp.size(cov) == 1:
            cov = dnp.reshape(cov, (1, 1))
        elif dnp.ndim(cov) == 0:
            cov = dnp.multiply(cov, np.eye(dim))
        elif dnp.ndim(cov) == 1:
            cov = dnp.diag(cov)
        if dnp.shape(cov) != (dim, dim):
            raise InvalidArgumentError(f"{label}: cov of shape {dnp.shape(cov)} does not fit "
                                       f"a mean of length {dim} (at {user_location()})")
        singular = values["allow_singular"]
        if is_tracer(singular) or singular not in (True, False):
            raise ArgumentTypeError(f"{label}: allow_singular must be True or False, got "
                                    f"{singular!r} (at {user_location()})")
        return dim, mean, cov, bool(singular)

    def logpdf(self, x, *args, **kwds):
        dim, mean, cov, singular = self._parse("logpdf", args, kwds)
        x = float64_array(x)
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
        if singular:
            null, rank, tol, invalid = _null_space(cov)
            cov = _completed(cov, null, invalid)
            off = dnp.matmul(diff, null)  # the components off the support
            outside = dnp.greater_equal(dnp.sqrt(dnp.sum(dnp.square(off), axis=1)), tol)
            diff = dnp.subtract(diff, dnp.matmul(off, dnp.transpose(null)))
        else:
            rank, outside, invalid = dim, False, False
        chol = dlinalg.cholesky(cov)
        white = dlinalg.solve(chol, dnp.transpose(diff))
        maha = dnp.sum(dnp.square(white), axis=0)
        log_det = dnp.multiply(2.0, dnp.sum(dnp.log(dnp.diagonal(chol))))
        out = dnp.multiply(-0.5, dnp.add(dnp.add(dnp.multiply(rank, LOG_2PI), log_det), maha))
        out = dnp.where(invalid, NAN, dnp.where(outside, -INF, out))
        return _squeeze(dnp.reshape(out, batch))

    def pdf(self, x, *args, **kwds):
        return dnp.exp(self.logpdf(x, *args, **kwds))

    def entropy(self, *args, **kwds):
        """SciPy's ``entropy(mean=None, cov=1)``: ``(rank (1 + log 2 pi) + log pdet) / 2``, by
        the pseudo-determinant whatever ``allow_singular`` (a frozen distribution's) says."""
        _, _, cov, _ = self._parse("entropy", args, kwds)
        null, rank, _, invalid = _null_space(cov)
        chol = dlinalg.cholesky(_completed(cov, null, invalid))
        log_det = dnp.multiply(2.0, dnp.sum(dnp.log(dnp.diagonal(chol))))
        out = dnp.multiply(0.5, dnp.add(dnp.multiply(rank, LOG_2PI + 1.0), log_det))
        return dnp.where(invalid, NAN, out)


def _completed(cov, null, invalid):
    """``cov + V Vᵀ``, positive definite; the identity where ``cov`` is not positive
    semidefinite (the result is NaN there: its Cholesky factorization raised)."""
    full = dnp.add(cov, dnp.matmul(null, dnp.transpose(null)))
    return dnp.where(invalid, np.eye(dnp.shape(cov)[-1]), full)


def _null_space(cov):
    """SciPy's ``_PSD`` of ``cov``, from its values (no derivative): the eigenvectors of its
    negligible eigenvalues as columns (the others zeroed), the rank, the tolerance of the
    support test and whether ``cov`` is not positive semidefinite."""
    s, u = dlinalg.eigh(stop_gradient(cov))
    eps = dnp.multiply(_PSD_COND, dnp.max(dnp.absolute(s)))
    negligible = dnp.less_equal(s, eps)
    rank = dnp.sum(dnp.logical_not(negligible).astype(np.float64))
    null = dnp.where(negligible, u, 0.0)
    return null, rank, dnp.multiply(1e3, eps), dnp.less(dnp.min(s), dnp.negative(eps))


    def pdf(self, x, *args, **kwds):
        return dnp.exp(self.logpdf(x, *args, **kwds))


class Dirichlet(Distribution):
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
        x = float64_array(x)
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
        return _squeeze(dnp.where(dnp.all(positive(alpha)), out, NAN))

    def pdf(self, x, *args, **kwds):
        return dnp.exp(self.logpdf(x, *args, **kwds))


def _check_simplex(x: np.ndarray, label: str) -> None:
    if np.min(x) < 0 or np.max(x) > 1 or (np.abs(np.sum(x, 0) - 1.0) > 10e-10).any():
        raise InvalidArgumentError(f"{label}: each point x must lie in the simplex (entries in "
                                   f"[0, 1] summing to 1), as SciPy requires "
                                   f"(at {user_location()})")
