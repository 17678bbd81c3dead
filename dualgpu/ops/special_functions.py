"""Special functions as elementwise ops, one block each: ``erf``, ``erfc``, ``gammaln``,
``digamma``, ``polygamma`` (any order: each derivative is the next order), ``gamma``, the
inverse error functions, the Bessel functions ``j0``, ``j1``, ``jv``, ``yn`` and the
modified ones ``i0``, ``i1``, ``iv``, ``ive`` (differentiable in x, not in the order), and the
regularized incomplete beta and gamma functions (differentiable in ``x`` only, as in JAX).
Values come from the array library's SciPy; those with a C form fuse into kernels, the
others are library calls. An exported module (``dg.export``) defines each as a function.

>>> from dualgpu.ops.special_functions import erf
>>> round(float(erf(1.0)), 6), erf.c
(0.842701, 'erf({0})')
"""
from __future__ import annotations

import math

from .. import lax
from ..backends import backend_for_xp
from ..core.primitives import Primitive, defrules, defstandalone
from ..errors import DualgpuError, UnsupportedOpError, user_location
from ..rules import laplacian_rules
from ..rules import taylor_rules as taylor
from ..rules.common import unbroadcast, wants_cotangent
from ..rules.elementwise_rules import elementwise, in_declared_dtype, special_function
from .elementwise import (
    add,
    exp,
    log,
    multiply,
    negative,
    power,
    subtract,
    true_divide,
    where,
)
from .logical import equal, less, sign, trunc

_SQRT_2_OVER_PI = 2.0 / math.sqrt(math.pi)


def _sq(x):
    return multiply(x, x)


def _astype(x, dtype):
    return lax.astype(x, dtype)

erf = elementwise("erf", None, 1, c="erf({0})", result="float", py="ops.erf({0})",
                  impl=special_function("erf"),
    partials=(lambda x, ans: _SQRT_2_OVER_PI * exp(-_sq(x)),))


erfc = elementwise("erfc", None, 1, c="erfc({0})", result="float", py="ops.erfc({0})",
                   impl=special_function("erfc"),
    partials=(lambda x, ans: -_SQRT_2_OVER_PI * exp(-_sq(x)),))


gammaln = elementwise("gammaln", None, 1, result="float", py="ops.gammaln({0})",
                      # -inf at -inf as SciPy and CuPy (C's lgamma gives inf)
                      c="((isinf({0}) && ({0}) < 0) ? ({0}) : lgamma({0}))",
                      impl=special_function("gammaln"),
    partials=(lambda x, ans: digamma(x),))


digamma: Primitive = elementwise("digamma", None, 1, c=None, result="float", py="ops.digamma({0})",
                      impl=special_function("digamma"),
                      doc="psi(x), the derivative of gammaln; its derivative is "
                          "polygamma(1, x).",
    partials=(lambda x, ans: polygamma(x, n=1),))


# no C form (C's tgamma agrees with SciPy's at the poles, not to its ulps everywhere, in
# float32 above all): a library call, as the functions below
gamma = elementwise("gamma", None, 1, c=None, result="float", py="ops.gamma({0})",
                    impl=special_function("gamma"),
                    doc="Gamma(x) (scipy.special.gamma); its derivative is Gamma(x) psi(x).",
    partials=(lambda x, ans: multiply(ans, digamma(x)),))


_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2


# the inverse error functions; no C form (C has none)
erfinv = elementwise("erfinv", None, 1, c=None, result="float", py="ops.erfinv({0})",
                     impl=special_function("erfinv"),
                     doc="The inverse of erf (scipy.special.erfinv), on (-1, 1).",
    partials=(lambda x, ans: _SQRT_PI_OVER_2 * exp(_sq(ans)),))


erfcinv = elementwise("erfcinv", None, 1, c=None, result="float", py="ops.erfcinv({0})",
                      impl=special_function("erfcinv"),
                      doc="The inverse of erfc (scipy.special.erfcinv), on (0, 2).",
    partials=(lambda x, ans: -_SQRT_PI_OVER_2 * exp(_sq(ans)),))


# I1(x) / x = sum_k (x²/4)^k / (2 k! (k+1)!): its series where the quotient would cancel
_I1_OVER_X = [0.5 / (math.factorial(k) * math.factorial(k + 1)) for k in range(7)]


def _order_one_dx(x, ans, order_zero, over_x_series):
    """d/dx of an order-one Bessel function ``ans`` (I1, J1) = ``order_zero(x) - ans / x``,
    ``ans / x`` by its series (``over_x_series``, in ``x²/4``) for |x| < 0.5: exact to
    rounding there, and differentiable again without the quotient's cancellation."""
    small = less(multiply(x, x), 0.25)
    q = multiply(0.25, _sq(x))
    series = over_x_series[-1]
    for c in reversed(over_x_series[:-1]):
        series = add(c, multiply(q, series))
    ratio = where(small, series, true_divide(ans, where(small, 1, x)))
    return subtract(order_zero(x), ratio)


def _i1_dx(x, ans):
    """d/dx I1(x) = I0(x) - I1(x) / x."""
    return _order_one_dx(x, ans, i0, _I1_OVER_X)


# the modified Bessel functions of the first kind, orders 0 and 1; no C form (C has none)
i0: Primitive = elementwise("i0", None, 1, c=None, result="float", py="ops.i0({0})",
                 impl=special_function("i0"),
                 doc="I0(x) (scipy.special.i0); its derivative is I1(x).",
    partials=(lambda x, ans: i1(x),))


i1: Primitive = elementwise("i1", None, 1, c=None, result="float", py="ops.i1({0})",
                 impl=special_function("i1"),
                 doc="I1(x) (scipy.special.i1); its derivative is I0(x) - I1(x) / x.",
    partials=(_i1_dx,))


# J1(x) / x = sum_k (-x²/4)^k / (2 k! (k+1)!): its series where the quotient would cancel
_J1_OVER_X = [(-1) ** k * 0.5 / (math.factorial(k) * math.factorial(k + 1)) for k in range(7)]


def _j1_dx(x, ans):
    """d/dx J1(x) = J0(x) - J1(x) / x."""
    return _order_one_dx(x, ans, j0, _J1_OVER_X)


# the Bessel functions of the first kind, orders 0 and 1; no C form: C's j0 and j1 (glibc's,
# CUDA's) give 0 at +-inf where SciPy gives NaN, and differ from SciPy's by hundreds of ulps
# at large arguments (1.5e-13 at x = 700), as gamma's: library calls
j0: Primitive = elementwise("j0", None, 1, c=None, result="float", py="ops.j0({0})",
                 impl=special_function("j0"),
                 doc="J0(x) (scipy.special.j0); its derivative is -J1(x).",
    partials=(lambda x, ans: negative(j1(x)),))


j1: Primitive = elementwise("j1", None, 1, c=None, result="float", py="ops.j1({0})",
                 impl=special_function("j1"),
                 doc="J1(x) (scipy.special.j1); its derivative is J0(x) - J1(x) / x.",
    partials=(_j1_dx,))


def _bessel(name):
    """The value of a Bessel function of two arguments (order, x) by the array library's
    SciPy; cupyx.scipy.special has yn but not jv, iv or ive."""
    def impl(xp, v, x):
        fn = getattr(backend_for_xp(xp).special, name, None)
        if fn is None:
            raise UnsupportedOpError(
                f"scipy.special.{name} has no counterpart in cupyx.scipy.special: call it on "
                f"NumPy arrays (cupy.asnumpy), or use j0/j1/y0/y1/yn, i0/i1")
        return in_declared_dtype(fn(v, x), (v, x))

    return impl


def _yn(xp, v, x):
    """Y_n(x), of a negative order by Y_-n = (-1)^n Y_n (cupyx's yn gives NaN there)."""
    n = xp.asarray(v)
    y = _yn_of_order(xp, xp.abs(n), x)
    odd = xp.remainder(xp.trunc(n) if n.dtype.kind == "f" else n, 2) != 0
    return in_declared_dtype(xp.where((n < 0) & odd, -y, y), (v, x))  # (v: a weak int too)


_yn_of_order = _bessel("yn")


def _no_order_derivative(name, order="v"):
    def partial(v, x, ans):
        raise DualgpuError(
            f"scipy.special.{name}({order}, x): no derivative in the order {order} (autograd and "
            f"JAX have none): pass {order} as a constant, or through dg.lax.stop_gradient; the "
            f"derivative in x is defined (at {user_location(skip_stdlib=True)})")

    return partial


def _half_difference(op, v, x, sign):
    """(op(v - 1, x) + sign op(v + 1, x)) / 2, the recurrence of the Bessel derivatives."""
    below, above = op(subtract(v, 1), x), op(add(v, 1), x)
    return multiply(0.5, add(below, above) if sign > 0 else subtract(below, above))


# the Bessel functions of real order (jv, SciPy's jn too), of integer order of the second
# kind (yn: SciPy truncates the order), and the modified ones of real order (iv, and ive,
# iv(v, x) exp(-|x|)); differentiable in x only, no C form (C has jn and yn of an int order
# only, with j0's differences from SciPy's): library calls
jv: Primitive = elementwise(
    "jv", None, 2, c=None, result="float", py="ops.jv({0}, {1})", impl=_bessel("jv"),
    doc="J_v(x) (scipy.special.jv and jn); differentiable in x: (J_{v-1} - J_{v+1}) / 2.",
    partials=(_no_order_derivative("jv"),
              lambda v, x, ans: _half_difference(jv, v, x, -1)))


yn: Primitive = elementwise(
    "yn", None, 2, c=None, result="float", py="ops.yn({0}, {1})", impl=_yn,
    doc="Y_n(x) (scipy.special.yn, n truncated to an integer); differentiable in x: "
        "(Y_{n-1} - Y_{n+1}) / 2.",
    partials=(_no_order_derivative("yn", "n"),
              lambda n, x, ans: _half_difference(yn, trunc(n), x, -1)))


iv: Primitive = elementwise(
    "iv", None, 2, c=None, result="float", py="ops.iv({0}, {1})", impl=_bessel("iv"),
    doc="I_v(x) (scipy.special.iv); differentiable in x: (I_{v-1} + I_{v+1}) / 2.",
    partials=(_no_order_derivative("iv"),
              lambda v, x, ans: _half_difference(iv, v, x, 1)))


ive: Primitive = elementwise(
    "ive", None, 2, c=None, result="float", py="ops.ive({0}, {1})", impl=_bessel("ive"),
    doc="I_v(x) exp(-|x|) (scipy.special.ive); differentiable in x: "
        "(ive(v-1, x) + ive(v+1, x)) / 2 - sign(x) ive(v, x).",
    partials=(_no_order_derivative("ive"),
              lambda v, x, ans: subtract(_half_difference(ive, v, x, 1),
                                         multiply(sign(x), ans))))


def _betainc_ab(a, b, x, ans):
    raise DualgpuError(
        "scipy.special.betainc(a, b, x): no derivative in a or b (JAX has none either): pass "
        "a and b as constants, or through dg.lax.stop_gradient; the derivative in x is "
        f"x**(a-1) * (1-x)**(b-1) / B(a, b) (at {user_location(skip_stdlib=True)})")


def _betainc_dx(a, b, x, ans):
    """d/dx I_x(a, b) = x**(a-1) (1-x)**(b-1) / B(a, b), B from gammaln."""
    log_beta = subtract(add(gammaln(a), gammaln(b)), gammaln(add(a, b)))
    density = multiply(power(x, subtract(a, 1)), power(subtract(1, x), subtract(b, 1)))
    return _astype(multiply(density, exp(negative(log_beta))), ans.dtype)


# the regularized incomplete beta function; no C form (CUDA has none): a library call
betainc = elementwise(
    "betainc", None, 3, c=None, result="float", py="ops.betainc({0}, {1}, {2})",
    impl=special_function("betainc"),
    doc="I_x(a, b) (scipy.special.betainc); differentiable in x only, as in JAX.",
    partials=(_betainc_ab, _betainc_ab, _betainc_dx))


def _gammainc_a(a, x, ans):
    raise DualgpuError(
        "scipy.special.gammainc/gammaincc(a, x): no derivative in a (JAX's needs a series "
        "of its own): pass a as a constant, or through dg.lax.stop_gradient; the derivative "
        f"in x is +-x**(a-1) * exp(-x) / Gamma(a) (at {user_location(skip_stdlib=True)})")


def _gamma_density(a, x, ans):
    """d/dx P(a, x) = x**(a-1) exp(-x) / Gamma(a), in logs (no overflow for large a); its
    limit at x == 0 for a == 1 (1) is kept by taking (a-1) log x as 0 where a == 1."""
    a_m1 = subtract(a, 1)
    log_x = log(where(equal(a_m1, 0), 1, x))
    log_density = subtract(multiply(a_m1, log_x), add(x, gammaln(a)))
    return _astype(exp(log_density), ans.dtype)


# the regularized lower and upper incomplete gamma functions P(a, x) and Q(a, x) = 1 - P;
# no C form (CUDA has none): library calls
gammainc = elementwise(
    "gammainc", None, 2, c=None, result="float", py="ops.gammainc({0}, {1})",
    impl=special_function("gammainc"),
    doc="P(a, x) (scipy.special.gammainc); differentiable in x only, as betainc.",
    partials=(_gammainc_a, _gamma_density))


gammaincc = elementwise(
    "gammaincc", None, 2, c=None, result="float", py="ops.gammaincc({0}, {1})",
    impl=special_function("gammaincc"),
    doc="Q(a, x) = 1 - P(a, x) (scipy.special.gammaincc); differentiable in x only.",
    partials=(_gammainc_a, lambda a, x, ans: negative(_gamma_density(a, x, ans))))


def _polygamma_impl(xp, x, n):
    # cupyx's polygamma needs an array order (it calls n.astype); SciPy takes either
    x = xp.asarray(x)
    out = backend_for_xp(xp).special.polygamma(xp.asarray(n), x)
    return out.astype(x.dtype, copy=False) if x.dtype.kind == "f" else out


polygamma: Primitive = elementwise(
    "polygamma", None, 1, c=None, result="float", py="ops.polygamma({0}, n={n})",
    impl=_polygamma_impl,
    doc="The n-th derivative of digamma (scipy.special.polygamma(n, x)); differentiable to "
        "any order, so gammaln is.")


def _polygamma_jvp(primals, tangents, n):
    ans = polygamma.bind(primals[0], n=n)
    t = tangents[0]
    return ans, None if t is None else lax.multiply(polygamma.bind(primals[0], n=n + 1), t)


def _polygamma_vjp(g, primals, ans, n):
    x = primals[0]
    if not wants_cotangent(x):
        return (None,)
    return (unbroadcast(lax.multiply(polygamma.bind(x, n=n + 1), g), x.aval),)


def _polygamma_jet(eqn, values, jets, mode):
    x, n = values[0], eqn.params["n"]
    ans = polygamma.bind(x, n=n)
    d1 = polygamma.bind(x, n=n + 1)
    d2 = polygamma.bind(x, n=n + 2)
    J, S = jets[0]
    Sy = lax.multiply(d2, mode.pair(J, J))
    if S is not None:
        Sy = lax.add(Sy, lax.multiply(d1, S))
    return [(lax.multiply(d1, J), laplacian_rules.fit(Sy, ((mode.size,) if mode.diag else ()) +
                                       tuple(ans.shape), ans.dtype))]


defrules(polygamma, jvp=_polygamma_jvp, vjp=_polygamma_vjp, laplacian=_polygamma_jet,
         taylor=taylor.unary_derivatives_rule(
             lambda x, m, eqn: polygamma.bind(x, n=eqn.params["n"] + m)))


# --------------------------------------------------------------------------- exported modules
defstandalone(erf, 'def erf(x):\n    return _special().erf(x)\n')
defstandalone(erfc, 'def erfc(x):\n    return _special().erfc(x)\n')
defstandalone(gammaln, 'def gammaln(x):\n    return _special().gammaln(x)\n')
defstandalone(digamma, 'def digamma(x):\n    return _special().digamma(x)\n')
defstandalone(gamma, 'def gamma(x):\n    return _special().gamma(x)\n')
defstandalone(erfinv, 'def erfinv(x):\n    return _special().erfinv(x)\n')
defstandalone(erfcinv, 'def erfcinv(x):\n    return _special().erfcinv(x)\n')
defstandalone(i0, 'def i0(x):\n    return _special().i0(x)\n')
defstandalone(i1, 'def i1(x):\n    return _special().i1(x)\n')
defstandalone(j0, 'def j0(x):\n    return _special().j0(x)\n')
defstandalone(j1, 'def j1(x):\n    return _special().j1(x)\n')
defstandalone(jv, 'def jv(v, x):\n    return _special().jv(v, x)\n')
defstandalone(yn, 'def yn(n, x):\n    return _special().yn(n, x)\n')
defstandalone(iv, 'def iv(v, x):\n    return _special().iv(v, x)\n')
defstandalone(ive, 'def ive(v, x):\n    return _special().ive(v, x)\n')
defstandalone(betainc, 'def betainc(a, b, x):\n    return _special().betainc(a, b, x)\n')
defstandalone(gammainc, 'def gammainc(a, x):\n    return _special().gammainc(a, x)\n')
defstandalone(gammaincc, 'def gammaincc(a, x):\n    return _special().gammaincc(a, x)\n')
defstandalone(polygamma, (
        'def polygamma(x, n):\n'
        '    x = xp.asarray(x)\n'
        '    out = _special().polygamma(xp.asarray(n), x)\n'
        "    return out.astype(x.dtype, copy=False) if x.dtype.kind == 'f' else out\n"))
