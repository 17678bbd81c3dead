"""The functions of ``scipy.special`` that are more than an elementwise op under another name
(the namespace, :mod:`.special`, only imports)."""
from __future__ import annotations

import math

import numpy as np

from ... import lax
from ...errors import ArgumentTypeError, InvalidArgumentError, user_location
from ...ops import special_functions as _sf
from ..nn import scipy_float
from ._stats_special import betaln


def _loop(name: str, *xs) -> tuple:
    """The dtypes of SciPy's ufunc ``name``'s loop for operands ``xs`` (inputs, then the
    output), a Python number (or a traced one) weak as in NumPy: rel_entr of float32 is
    float32, y0 of float16 float64, beta of float32 and 2.0 float64, yn of 0 and float32
    float64. Operands SciPy has no loop for (complex ones mostly) are refused, as SciPy
    raises (entr of complex values was computed; others raised a raw TypeError when run)."""
    import scipy.special

    def key(x):
        if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
            return type(x)
        dt = lax.dtype_of(x)
        if getattr(getattr(x, "aval", None), "weak", False):
            return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[dt.kind]
        return dt

    keys = tuple(map(key, xs))
    try:
        return getattr(scipy.special, name).resolve_dtypes((*keys, None))
    except TypeError:
        kinds = ", ".join(getattr(k, "__name__", str(k)) for k in keys)
        raise ArgumentTypeError(f"scipy.special.{name} of {kinds}: SciPy has no loop for these "
                                f"types (at {user_location()})") from None


def _in_loop(name: str, *xs) -> list:
    """The arrays among ``xs`` in the input dtypes of SciPy's loop for them, so that the
    op computes in (and gives) SciPy's dtype; Python numbers stay."""
    loop = _loop(name, *xs)
    return [x if isinstance(x, (bool, int, float, complex)) or lax.dtype_of(x) == dt
            else lax.astype(x, dt) for x, dt in zip(xs, loop)]


def _as_loop(out, name: str, *xs):
    """``out`` in the output dtype of SciPy's loop for ``xs`` (see :func:`_loop`)."""
    loop = _loop(name, *xs)
    return out if lax.dtype_of(out) == loop[-1] else lax.astype(out, loop[-1])


def betainc(a, b, x):
    """``scipy.special.betainc``: the regularized incomplete beta function I_x(a, b),
    differentiable in ``x`` (``x**(a-1) (1-x)**(b-1) / B(a, b)``); derivatives in ``a`` and
    ``b`` are refused, as JAX has none.

    >>> import scipy.special
    >>> dg.grad(lambda x: scipy.special.betainc(2.0, 3.0, x))(np.array(0.5))
    array(1.5)
    """
    return _sf.betainc.bind(*_in_loop("betainc", a, b, x))


def gammainc(a, x):
    """``scipy.special.gammainc``: the regularized lower incomplete gamma function P(a, x),
    differentiable in ``x`` (``x**(a-1) exp(-x) / Gamma(a)``); derivatives in ``a`` are
    refused (as for betainc).

    >>> import scipy.special
    >>> dg.grad(lambda x: scipy.special.gammainc(1.0, x))(np.array(0.0))
    array(1.)
    """
    return _sf.gammainc.bind(*_in_loop("gammainc", a, x))


def gammaincc(a, x):
    """``scipy.special.gammaincc``: the regularized upper incomplete gamma function
    Q(a, x) = 1 - P(a, x), differentiable in ``x``.

    >>> import scipy.special
    >>> dg.grad(lambda x: scipy.special.gammaincc(1.0, x))(np.array(0.0))
    array(-1.)
    """
    return _sf.gammaincc.bind(*_in_loop("gammaincc", a, x))


def gamma(x):
    """``scipy.special.gamma``.

    >>> import scipy.special
    >>> dg.grad(lambda x: scipy.special.gamma(x))(np.array(1.0))  # -Euler's constant
    array(-0.57721566)
    """
    return _sf.gamma.bind(*_in_loop("gamma", x))


def rgamma(x):
    """``scipy.special.rgamma``: ``1 / gamma(x)`` (0 at the poles)."""
    return lax.reciprocal(_sf.gamma.bind(*_in_loop("rgamma", x)))


def erfinv(x):
    """``scipy.special.erfinv``."""
    return _sf.erfinv.bind(*_in_loop("erfinv", x))


def erfcinv(x):
    """``scipy.special.erfcinv``."""
    return _sf.erfcinv.bind(*_in_loop("erfcinv", x))


def i0(x):
    """``scipy.special.i0``, the modified Bessel function of order 0."""
    return _sf.i0.bind(*_in_loop("i0", x))


def i1(x):
    """``scipy.special.i1``, the modified Bessel function of order 1.

    >>> import scipy.special
    >>> float(dg.grad(lambda x: scipy.special.i1(x))(np.array(0.0)))
    0.5
    """
    return _sf.i1.bind(*_in_loop("i1", x))


# ----------------------------------------------------------------------- Bessel functions
def j0(x):
    """``scipy.special.j0``, the Bessel function of the first kind of order 0.

    >>> import scipy.special
    >>> float(dg.grad(lambda x: scipy.special.j0(x))(np.array(0.0)))  # -J1(0)
    -0.0
    """
    return _sf.j0.bind(*_in_loop("j0", x))


def j1(x):
    """``scipy.special.j1``, the Bessel function of the first kind of order 1 (its derivative
    ``J0(x) - J1(x) / x``, 1/2 at 0)."""
    return _sf.j1.bind(*_in_loop("j1", x))


def jv(v, x):
    """``scipy.special.jv`` (and ``jn``, the same function): the Bessel function of the
    first kind of real order ``v``, differentiable in ``x`` (``(J_{v-1} - J_{v+1}) / 2``);
    the derivative in ``v`` is refused.

    >>> import scipy.special
    >>> round(float(dg.grad(lambda x: scipy.special.jn(2, x))(np.array(1.0))), 6)  # (J1 - J3) / 2
    0.210244
    """
    return _sf.jv.bind(*_in_loop("jv", v, x))


def yn(n, x):
    """``scipy.special.yn``: the Bessel function of the second kind of integer order ``n``
    (truncated, as SciPy), differentiable in ``x``; the derivative in ``n`` is refused."""
    return _sf.yn.bind(*_in_loop("yn", n, x))


def y0(x):
    """``scipy.special.y0``: ``yn(0, x)`` (SciPy's yn of orders 0 and 1 is its y0 and y1)."""
    return _sf.yn.bind(0, *_in_loop("y0", x))


def y1(x):
    """``scipy.special.y1``: ``yn(1, x)``."""
    return _sf.yn.bind(1, *_in_loop("y1", x))


def iv(v, x):
    """``scipy.special.iv``: the modified Bessel function of the first kind of real order
    ``v``, differentiable in ``x`` (``(I_{v-1} + I_{v+1}) / 2``); the derivative in ``v``
    is refused.

    >>> import scipy.special
    >>> float(dg.grad(lambda x: scipy.special.iv(0, x))(np.array(0.0)))  # I1(0)
    0.0
    """
    return _sf.iv.bind(*_in_loop("iv", v, x))


def ive(v, x):
    """``scipy.special.ive``: ``iv(v, x) * exp(-|x|)``, finite where ``iv`` overflows."""
    return _sf.ive.bind(*_in_loop("ive", v, x))


# ----------------------------------------------------------------------- gamma and beta
def gammasgn(x):
    """``scipy.special.gammasgn``: the sign of Gamma(x) -- 1 for x > 0 (and +0), -1 for -0,
    (-1)**ceil(-x) between the poles below 0, NaN at the poles (0 excluded), -inf and NaN;
    piecewise constant, so its derivative is 0.

    >>> import scipy.special
    >>> dg.jit(scipy.special.gammasgn)(np.array([2.5, -0.5, -1.5, -2.0]))
    array([ 1., -1.,  1., nan])
    """
    (x,) = scipy_float(x)
    finite = lax.isfinite(x)
    floor = lax.floor(lax.where(finite, x, 0.0))
    odd = lax.not_equal(lax.fmod(floor, 2.0), 0.0)
    pole = lax.logical_or(lax.equal(floor, x), lax.logical_not(finite))  # -inf and NaN too
    between_poles = lax.where(pole, math.nan, lax.where(odd, -1.0, 1.0))
    at_zero = lax.copysign(1.0, x)
    out = lax.where(lax.greater(x, 0.0), 1.0,
                    lax.where(lax.equal(x, 0.0), at_zero, between_poles))
    return lax.astype(out, lax.dtype_of(x))


def beta(a, b):
    """``scipy.special.beta``: ``Gamma(a) Gamma(b) / Gamma(a + b)``, as its sign (by
    :func:`gammasgn`) times ``exp(betaln(a, b))``, so it neither overflows nor loses its
    derivatives (``beta(a, b) (psi(a) - psi(a + b))`` in ``a``); 0 at the poles of
    ``Gamma(a + b)``, NaN at those of ``Gamma(a)`` and ``Gamma(b)`` (where SciPy gives
    infinities or limits).

    >>> import scipy.special
    >>> float(dg.grad(lambda a: scipy.special.beta(a, 1.0))(np.array(1.0)))  # -1 / a**2
    -1.0
    """
    a0, b0 = a, b
    a, b = scipy_float(a, b)
    sign_ab = gammasgn(lax.add(a, b))  # NaN at its poles, where exp(betaln) is 0
    sign_ab = lax.where(lax.isnan(sign_ab), lax.sign(lax.add(a, b)), sign_ab)
    # a -0 pole counts as +0's (SciPy's +inf), whose sign gammasgn gives -1
    sa, sb = (gammasgn(lax.where(lax.equal(x, 0.0), 0.0, x)) for x in (a, b))
    sign = lax.multiply(lax.multiply(sa, sb), sign_ab)
    return _as_loop(lax.multiply(sign, lax.exp(betaln(a, b))), "beta", a0, b0)


def multigammaln(a, d):
    """``scipy.special.multigammaln(a, d)``: the log of the multivariate gamma function of
    dimension ``d`` (a Python int), ``d (d - 1) / 4 log(pi) + sum_j gammaln(a - j / 2)``
    over ``j = 0 .. d-1``. SciPy raises where ``a <= (d - 1) / 2``; on traced values those
    entries are NaN.

    >>> import scipy.special
    >>> float(dg.grad(lambda a: scipy.special.multigammaln(a, 1))(np.array(1.0)))  # psi(1)
    -0.5772156649015329
    """
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise InvalidArgumentError(f"scipy.special.multigammaln: d must be a positive Python "
                                   f"int, got {d!r} (at {user_location()})")
    _loop("gammaln", a)  # (complex values refused, as SciPy's)
    (a,) = scipy_float(a)
    terms = _sf.gammaln.bind(a)
    for j in range(1, int(d)):
        terms = lax.add(terms, _sf.gammaln.bind(lax.subtract(a, j / 2)))
    # as SciPy's: the sum in a's type, then float64 with the constant
    terms = lax.astype(terms, np.result_type(lax.dtype_of(terms), np.float64))
    out = lax.add(d * (d - 1) / 4 * math.log(math.pi), terms)
    return lax.where(lax.greater(a, (d - 1) / 2), out, math.nan)


# ----------------------------------------------------------------------- entropies
def _both_positive(x, y):
    return lax.logical_and(lax.greater(x, 0.0), lax.greater(y, 0.0))


def _x_log_x_over_y(x, y, ok):
    """``x log(x / y)`` where ``ok`` (both positive), with the other entries' operands
    replaced by 1 so that no NaN reaches the derivatives."""
    sx, sy = lax.where(ok, x, 1.0), lax.where(ok, y, 1.0)
    return lax.multiply(sx, lax.subtract(lax.log(sx), lax.log(sy)))


def _outside(x, y, at_zero):
    """SciPy's values off the positive quadrant: ``at_zero`` where ``x == 0 <= y``, NaN
    where an operand is NaN, +inf elsewhere."""
    nan = lax.logical_or(lax.isnan(x), lax.isnan(y))
    zero = lax.logical_and(lax.equal(x, 0.0), lax.greater_equal(y, 0.0))
    return lax.where(nan, math.nan, lax.where(zero, at_zero, math.inf))


def entr(x):
    """``scipy.special.entr``: ``-x log x`` for ``x > 0``, 0 at 0, ``-inf`` below 0;
    derivative ``-(log x + 1)``.

    >>> import scipy.special
    >>> float(dg.grad(lambda x: scipy.special.entr(x))(np.array(1.0)))
    -1.0
    """
    x0, (x,) = x, scipy_float(x)
    pos = lax.greater(x, 0.0)
    sx = lax.where(pos, x, 1.0)
    inside = lax.negative(lax.multiply(sx, lax.log(sx)))
    outside = lax.where(lax.equal(x, 0.0), 0.0, lax.where(lax.isnan(x), math.nan, -math.inf))
    return _as_loop(lax.where(pos, inside, lax.astype(outside, lax.dtype_of(x))), "entr", x0)


def rel_entr(x, y):
    """``scipy.special.rel_entr``: ``x log(x / y)`` for ``x, y > 0``, 0 where
    ``x == 0 <= y``, ``+inf`` elsewhere (NaN for a NaN operand)."""
    x0, y0_, (x, y) = x, y, scipy_float(x, y)
    ok = _both_positive(x, y)
    out = lax.where(ok, _x_log_x_over_y(x, y, ok), _outside(x, y, 0.0))
    return _as_loop(out, "rel_entr", x0, y0_)


def kl_div(x, y):
    """``scipy.special.kl_div``: ``x log(x / y) - x + y`` for ``x, y > 0``, ``y`` where
    ``x == 0 <= y``, ``+inf`` elsewhere (NaN for a NaN operand)."""
    x0, y0_, (x, y) = x, y, scipy_float(x, y)
    ok = _both_positive(x, y)
    inside = lax.add(lax.subtract(_x_log_x_over_y(x, y, ok), x), y)
    return _as_loop(lax.where(ok, inside, _outside(x, y, y)), "kl_div", x0, y0_)
