"""Elementwise ops, one block each: the declaration row (value: the NumPy function; dtype rule;
Python form; C expression; partial derivatives) and the op's other rules beside it. The JVP
and VJP follow from the partials (:mod:`dualgpu.rules.elementwise_rules`), the HVP too (the
partials are written with these ops, so they differentiate again), vmap, separability and
the forward Laplacian from the op's kind; what a row cannot give is written out after it:
folds of neutral operands (``fold=``, :mod:`dualgpu.rules.folding_rules`), Taylor-mode
recurrences, sparsity classes, and the rules of the ops that are not smooth functions of
their operands (``where``, casts, complex parts, ``stop_gradient``, ``abs`` of complex
values). The non-differentiable ops are in :mod:`dualgpu.ops.logical`, the special
functions in :mod:`dualgpu.ops.special_functions`.

>>> import numpy as np
>>> from dualgpu.ops import elementwise as ew
>>> ew.exp.c, ew.exp.has("elementwise"), float(ew.exp.bind(0.0))
('exp({0})', True, 1.0)
"""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from ..core.axes import broadcast_shapes
from ..core.dtypes import promote
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import Primitive, defrules, defstandalone
from ..errors import ArgumentTypeError, DualgpuError
from ..rules import folding_rules as folding
from ..rules import laplacian_rules
from ..rules import sparsity_rules as sparsity
from ..rules import taylor_rules as taylor
from ..rules.common import unbroadcast, wants_cotangent
from ..rules.elementwise_rules import (  # noqa: F401  (ELEMENTWISE, defpartials: public here)
    ELEMENTWISE,
    defpartials,
    elementwise,
    fit_shape,
    in_declared_dtype,
    shape_rule,
    special_function,
)
from .casts import conj, convert_element_type, real
from .logical import (
    equal,
    greater,
    isfinite,
    isnan,
    less,
    logical_and,
    logical_not,
    sign,
    trunc,
)

_NAN_MAX = "((({0}) > ({1}) || ({0}) != ({0})) ? ({0}) : ({1}))"  # NaN wins, as in NumPy

_NAN_MIN = "((({0}) < ({1}) || ({0}) != ({0})) ? ({0}) : ({1}))"

_TIES = "Ties send half the derivative to each argument."

_FTIES = _TIES + " A NaN argument gets none: the derivative follows the value returned."

# ------------------------------------------------------------ helpers of the partial derivatives
# A partial is a function of the primal inputs and the output ``ans``, written with these ops
# (so that it differentiates again); rules/elementwise.py derives the JVP and VJP from it.
def _astype(x, dtype):
    return x if x.dtype == dtype else convert_element_type(x, dtype=np.dtype(dtype).name)


def _recip(x):
    return true_divide(1.0, x)


def _sq(x):
    return multiply(x, x)


def _pow_dx(x, y, ans):
    """y * x**(y - 1), taken as 0 where y == 0 and x == 0 (x**0 is constant there, and
    x**-1 inf); elsewhere the product itself, so that its derivative in y at y == 0 is
    x**-1, not 0."""
    if isinstance(y, (int, float)):
        if y == 0:
            return 0.0
        if y == 1:
            return 1
        if y == 2:
            return multiply(2, x)
        return multiply(y, power(x, y - 1))
    y0 = logical_and(equal(y, 0), equal(x, 0))
    # x is replaced under the where too, so that the derivative of this partial (the HVP)
    # sees no 0 * inf where y == 0 and x == 0
    return where(y0, 0.0, y * power(where(y0, 1.0, x), y - 1))


def _pow_dy(x, y, ans):
    """log(x) * x**y, taken as 0 where x == 0 (the limit for y > 0, as JAX does), also for
    a constant base (np.power(0.0, y))."""
    safe = where(equal(x, 0), 1.0, x)
    return multiply(log(safe), ans)


def _win_weight(a, b, ans, larger: bool):
    """1 where ``a`` wins the max (or min) against ``b``, 1/2 on ties, 0 where it loses;
    in the output's dtype, so that float32 programs stay float32."""
    wins = greater(a, b) if larger else less(a, b)
    w = where(wins, 1.0, where(equal(a, b), 0.5, 0.0))
    return _astype(w, ans.dtype)


def _nan_skip_weight(a, b, ans, larger: bool):
    """fmax/fmin: ``a``'s weight, where a NaN never wins: where exactly one argument is NaN
    the result is the other one and so is the whole derivative (as in JAX); where both are
    NaN, the first argument takes it (JAX's choice too)."""
    w = _win_weight(a, b, ans, larger)
    w = where(isnan(b), 1.0, where(isnan(a), 0.0, w))
    return _astype(w, ans.dtype)


def _nan_skip_weight_second(b, a, ans, larger: bool):
    w = _win_weight(b, a, ans, larger)
    w = where(isnan(b), 0.0, where(isnan(a), 1.0, w))
    return _astype(w, ans.dtype)


def _hypot_d(x, y):
    """x / hypot(x, y) as (x / m) / hypot(x / m, y / m), m = max(|x|, |y|): hypot(x, y)
    overflows past 1.3e308 and loses its digits among the subnormals, where the ratio is a
    number of [-1, 1] (the value does not depend on m, so neither does the derivative of
    this partial; an infinite or NaN m is not divided by); 0 where x == y == 0 (the kink
    of a norm, as for np.linalg.norm)."""
    m = maximum(absolute(x), absolute(y))
    zero = equal(m, 0)
    m = where(logical_and(isfinite(m), logical_not(zero)), m, 1.0)
    x, y = true_divide(x, m), true_divide(y, m)
    return where(zero, 0.0, true_divide(x, hypot(x, y)))


def _logaddexp_d(x, y):
    """d logaddexp / dx = logistic(x - y); where x and y are the same infinity (x - y is
    NaN), 1/2, the value on the diagonal logaddexp(a, a) = a + log 2."""
    same_inf = logical_and(equal(x, y), logical_not(isfinite(x)))
    return logistic(where(same_inf, 0.0, subtract(x, y)))


def _one_minus_x_sq(x):
    """1 - x**2 as (1 - x) * (1 + x): no cancellation next to |x| == 1 (1 - x is exact
    there), where 1 - x * x loses the bits of x * x's rounding."""
    return multiply(subtract(1.0, x), add(1.0, x))


_SQRT_2_OVER_PI = 2.0 / math.sqrt(math.pi)

# --------------------------------------------------------------------------- integer C forms
# C's integer division traps (SIGFPE) on x / 0 and on MIN / -1, and its signed overflow is
# undefined (a compiler may fold max(x + 1, x) to x + 1): the integer forms test both
# divisors first and add, subtract, multiply and negate in unsigned arithmetic, to give
# NumPy's values (x // 0 == x % 0 == 0, MIN // -1 == MIN, -MIN == MIN, MAX + 1 == MIN).
_NEG_INT = "(({T})(0ULL - (unsigned long long)({0})))"        # -x, wrapping as NumPy's

_WRAP = "(({{T}})((unsigned long long)({{0}}) {op} (unsigned long long)({{1}})))"

_MINUS_ONE = "(({1}) < 0 && ({1}) == -1)"     # y == -1 (never for an unsigned y)
# x ** y by squaring, wrapping as NumPy's (the low bits of the product in 64-bit unsigned
# arithmetic); a negative exponent (NumPy raises) gives x ** y truncated: 1 for x == 1,
# +-1 for x == -1, else 0
_IPOW = ("([]({T} b, {T} e) -> {T} {{ "
         "if (e < 0) return ({T})(b == 1 ? 1 : b == -1 ? (e % 2 ? -1 : 1) : 0); "
         "unsigned long long r = 1, s = (unsigned long long)b; "
         "for (; e != 0; e /= 2) {{ if (e % 2) r *= s; s *= s; }} "
         "return ({T})r; }}({0}, {1}))")


# --------------------------------------------------------------------------- arithmetic
add = elementwise("add", "add", 2, c="({0} + {1})", c_int=_WRAP.format(op="+"),
                 py="{0} + {1}", flags=(Flag.ADDITIVE,),
    partials=(lambda x, y, ans: 1, lambda x, y, ans: 1))

defrules(add, fold=folding.binary_fold(add, lambda a, b: a + b,
                                           lambda y: folding.is_zero_of_sign(y, True),
                                           lambda x: folding.is_zero_of_sign(x, True)),
         sparsity=sparsity.linear_elementwise)


subtract = elementwise("subtract", "subtract", 2, c="({0} - {1})",
                      c_int=_WRAP.format(op="-"), py="{0} - {1}", flags=(Flag.ADDITIVE,),
    partials=(lambda x, y, ans: 1, lambda x, y, ans: -1))

defrules(subtract, fold=folding.binary_fold(subtract, lambda a, b: a - b,
                                                lambda y: folding.is_zero_of_sign(y, False)),
         sparsity=sparsity.linear_elementwise)


multiply = elementwise("multiply", "multiply", 2, c="({0} * {1})",
                      c_int=_WRAP.format(op="*"), py="{0} * {1}", flags=(Flag.MULTILINEAR,),
    partials=(lambda x, y, ans: y, lambda x, y, ans: x))

_fold_multiply_neutral = folding.binary_fold(
    multiply, lambda a, b: a * b, lambda y: folding.is_literal(y, 1),
    lambda x: folding.is_literal(x, 1))


def _fold_multiply(x, y):
    for a, b in ((x, y), (y, x)):
        if folding.is_literal(b, -1) and folding.passes_through(a, b):
            return negative.bind(a)
    return _fold_multiply_neutral(x, y)


defrules(multiply, fold=_fold_multiply, sparsity=sparsity.bilinear_elementwise,
         taylor=taylor.multilinear_rule)   # bilinear: a Cauchy product


true_divide = elementwise("true_divide", "true_divide", 2, c="({0} / {1})", py="{0} / {1}",
                          result="float",
    partials=(lambda x, y, ans: _recip(y), lambda x, y, ans: negative(ans / y)))

defrules(true_divide, fold=folding.binary_fold(true_divide, lambda a, b: a / b,
                                                   lambda y: folding.is_literal(y, 1)),
         sparsity=sparsity.quotient_elementwise, taylor=taylor.divide_rule)


negative: Primitive = elementwise("negative", "negative", 1, c="(-{0})", c_int=_NEG_INT, py="-{0}",
    partials=(lambda x, ans: -1,))

defrules(negative, sparsity=sparsity.linear_elementwise)


power = elementwise("power", "power", 2, c="pow({0}, {1})", py="{0} ** {1}",
                    c_int=_IPOW,
    partials=(_pow_dx, _pow_dy))

defrules(power, fold=folding.fold_power, taylor=taylor.power_rule)


square = elementwise("square", "square", 1, c="({0} * {0})",
                    c_int=_WRAP.format(op="*").replace("{1}", "{0}"),
    partials=(lambda x, ans: multiply(2, x),))
# NumPy's integer loops divide in double and cast; 1 / 0 is the cast of inf, which x86 makes
# the lowest int32/int64 (0 in narrower and unsigned types) and a GPU saturates: written out
reciprocal = elementwise("reciprocal", "reciprocal", 1, c="(1 / {0})", result="float",
                         c_int="(({0}) == 0 ? ((({T})-1 < 0 && sizeof({T}) >= 4) ? "
                               "({T})(1ULL << (8 * sizeof({T}) - 1)) : ({T})0) : "
                               "({T})(1.0 / ({0})))",
    partials=(lambda x, ans: negative(_sq(ans)),))

defrules(reciprocal, taylor=taylor.unary_recurrence(taylor.reciprocal_step))


absolute = elementwise(
    "absolute", "abs", 1, c="fabs({0})", c_int=f"(({{0}}) < 0 ? {_NEG_INT} : ({{0}}))",
    result="real",
    doc="The derivative at 0 is 0 (sign(0)). For complex z, d|z| = Re(conj(z) dz) / |z| "
        "(0 at z == 0), with JAX's cotangent convention: the cotangent of z is "
        "g * conj(z) / |z|.",
    partials=(lambda x, ans: sign(x),))


def _abs_complex_factor(x, ans):
    """conj(x) / |x|, 0 where x == 0 (as JAX), and so is its own derivative (the HVP of
    abs at 0 is 0, as for real abs and the norms)."""
    zero = lax.equal(ans, 0)
    safe = lax.astype(lax.where(zero, 1.0, ans), x.dtype)
    return lax.where(zero, 0.0, lax.true_divide(conj.bind(x), safe))


def _abs_complex_jvp(primals, tangents):
    x = primals[0]
    ans = absolute.bind(x)
    t = tangents[0]
    if t is None:
        return ans, None
    return ans, real.bind(lax.multiply(_abs_complex_factor(x, ans), t))


def _abs_complex_vjp(g, primals, ans):
    x = primals[0]
    if not wants_cotangent(x):
        return (None,)
    gc = lax.astype(g, x.dtype)
    return (unbroadcast(lax.multiply(_abs_complex_factor(x, ans), gc), x.aval),)


def _with_complex_rule(prim, jvp_c, vjp_c):
    """Rules that switch to ``jvp_c``/``vjp_c`` on complex inputs."""
    jvp_r, vjp_r = prim.jvp, prim.vjp

    def jvp(primals, tangents, **params):
        if getattr(primals[0], "dtype", np.dtype(float)).kind == "c":
            return jvp_c(primals, tangents)
        return jvp_r(primals, tangents, **params)

    def vjp(g, primals, ans, **params):
        if getattr(primals[0], "dtype", np.dtype(float)).kind == "c":
            return vjp_c(g, primals, ans)
        return vjp_r(g, primals, ans, **params)

    defrules(prim, jvp=jvp, vjp=vjp)


_with_complex_rule(absolute, _abs_complex_jvp, _abs_complex_vjp)


sqrt = elementwise("sqrt", "sqrt", 1, c="sqrt({0})", result="float",
    partials=(lambda x, ans: true_divide(0.5, ans),))

defrules(sqrt, taylor=taylor.unary_recurrence(taylor.sqrt_step))


cbrt = elementwise("cbrt", "cbrt", 1, c="cbrt({0})", result="float",
    partials=(lambda x, ans: true_divide(1.0, 3 * _sq(ans)),))

maximum = elementwise("maximum", "maximum", 2, c=_NAN_MAX, doc=_TIES,
    partials=(lambda x, y, ans: _win_weight(x, y, ans, True),
              lambda x, y, ans: _win_weight(y, x, ans, True)))

minimum = elementwise("minimum", "minimum", 2, c=_NAN_MIN, doc=_TIES,
    partials=(lambda x, y, ans: _win_weight(x, y, ans, False),
              lambda x, y, ans: _win_weight(y, x, ans, False)))

fmax = elementwise("fmax", "fmax", 2, c="fmax({0}, {1})",
                   c_int="(({0}) > ({1}) ? ({0}) : ({1}))", doc=_FTIES,
    partials=(lambda x, y, ans: _nan_skip_weight(x, y, ans, True),
              lambda x, y, ans: _nan_skip_weight_second(y, x, ans, True)))

fmin = elementwise("fmin", "fmin", 2, c="fmin({0}, {1})",
                   c_int="(({0}) < ({1}) ? ({0}) : ({1}))", doc=_FTIES,
    partials=(lambda x, y, ans: _nan_skip_weight(x, y, ans, False),
              lambda x, y, ans: _nan_skip_weight_second(y, x, ans, False)))
# hypot as m * sqrt(1 + (n / m)**2), m and n the larger and smaller magnitude: CUDA's double
# hypot overflows to inf next to the largest finite value (hypot(DBL_MAX, 0.75)); an
# infinity wins over NaN, as in NumPy
_BIG, _SMALL = "fmax(fabs({0}), fabs({1}))", "fmin(fabs({0}), fabs({1}))"

hypot = elementwise(
    "hypot", "hypot", 2, result="float", doc="Derivatives at (0, 0) are 0.",
    c=f"(isinf({{0}}) ? fabs({{0}}) : isinf({{1}}) ? fabs({{1}}) : "
      f"({{0}} != {{0}} || {{1}} != {{1}}) ? {{0}} + {{1}} : {_BIG} == 0 ? {_BIG} : "
      f"{_BIG} * sqrt(1 + ({_SMALL} / {_BIG}) * ({_SMALL} / {_BIG})))",
    partials=(lambda x, y, ans: _hypot_d(x, y), lambda x, y, ans: _hypot_d(y, x)))

copysign = elementwise("copysign", "copysign", 2, c="copysign({0}, {1})", result="float",
    partials=(lambda x, y, ans: sign(x) * sign(ans), lambda x, y, ans: 0.0))

# --------------------------------------------------------------------------- exp and log
exp = elementwise("exp", "exp", 1, c="exp({0})", result="float",
    partials=(lambda x, ans: ans,))

defrules(exp, taylor=taylor.unary_recurrence(taylor.exp_step))  # the ODE, O(K**2)


exp2 = elementwise("exp2", "exp2", 1, c="exp2({0})", result="float",
    partials=(lambda x, ans: multiply(math.log(2.0), ans),))
# exp(x), not ans + 1: expm1(x) rounds to -1 from x ~ -37 on, where exp(x) is ~1e-16
expm1 = elementwise("expm1", "expm1", 1, c="expm1({0})", result="float",
    partials=(lambda x, ans: exp(x),))

# the ODE's right-hand side at t = 0 from the declared partial: it cancels in the tails
defrules(expm1, taylor=taylor.unary_recurrence(taylor.expm1_step, first=True))

# CUDA's double logarithms give -inf for a negative subnormal (NumPy: NaN); the square root
# of a negative value is NaN
log = elementwise("log", "log", 1, c="(({0}) < 0 ? sqrt({0}) : log({0}))", result="float",
    partials=(lambda x, ans: _recip(x),))

defrules(log, taylor=taylor.unary_recurrence(taylor.log_step))


log2 = elementwise("log2", "log2", 1, c="(({0}) < 0 ? sqrt({0}) : log2({0}))",
                   result="float",
    partials=(lambda x, ans: true_divide(1 / math.log(2.0), x),))

log10 = elementwise("log10", "log10", 1, c="(({0}) < 0 ? sqrt({0}) : log10({0}))",
                    result="float",
    partials=(lambda x, ans: true_divide(1 / math.log(10.0), x),))

log1p = elementwise("log1p", "log1p", 1, c="log1p({0})", result="float",
    partials=(lambda x, ans: _recip(add(x, 1.0)),))

defrules(log1p, taylor=taylor.unary_recurrence(taylor.log1p_step))


logaddexp = elementwise(
    "logaddexp", "logaddexp", 2,
    # x == y takes a difference of 0: also for two equal infinities (inf - inf is NaN)
    c="(fmax({0}, {1}) + log1p(exp(-fabs((({0}) == ({1})) ? 0 : (({0}) - ({1}))))))",
    result="float", doc="Derivatives are finite at infinities: 1/2 each at (-inf, -inf).",
    partials=(lambda x, y, ans: _logaddexp_d(x, y), lambda x, y, ans: _logaddexp_d(y, x)))

# --------------------------------------------------------------------------- trigonometry
sin = elementwise("sin", "sin", 1, c="sin({0})", result="float",
    partials=(lambda x, ans: cos(x),))

defrules(sin, taylor=taylor.sin_cos_rule("sin"))


cos: Primitive = elementwise("cos", "cos", 1, c="cos({0})", result="float",
    partials=(lambda x, ans: negative(sin(x)),))

defrules(cos, taylor=taylor.sin_cos_rule("cos"))


tan = elementwise("tan", "tan", 1, c="tan({0})", result="float",
    partials=(lambda x, ans: add(1.0, _sq(ans)),))

defrules(tan, taylor=taylor.unary_recurrence(taylor.tan_step))


arcsin = elementwise("arcsin", "arcsin", 1, c="asin({0})", result="float",
    partials=(lambda x, ans: _recip(sqrt(_one_minus_x_sq(x))),))

arccos = elementwise("arccos", "arccos", 1, c="acos({0})", result="float",
    partials=(lambda x, ans: negative(_recip(sqrt(_one_minus_x_sq(x)))),))

arctan = elementwise("arctan", "arctan", 1, c="atan({0})", result="float",
    partials=(lambda x, ans: _recip(1.0 + _sq(x)),))
# x / (x**2 + y**2) as x / h / h, h = hypot(x, y): the squares overflow past 1e154 and
# underflow below 1e-154 where the derivatives are finite
arctan2 = elementwise("arctan2", "arctan2", 2, c="atan2({0}, {1})", result="float",
    partials=(lambda y, x, ans: true_divide(true_divide(x, hypot(x, y)), hypot(x, y)),
              lambda y, x, ans: negative(true_divide(true_divide(y, hypot(x, y)),
                                                     hypot(x, y)))))

sinh = elementwise("sinh", "sinh", 1, c="sinh({0})", result="float",
    partials=(lambda x, ans: cosh(x),))

defrules(sinh, taylor=taylor.sin_cos_rule("sinh"))


cosh: Primitive = elementwise("cosh", "cosh", 1, c="cosh({0})", result="float",
    partials=(lambda x, ans: sinh(x),))

defrules(cosh, taylor=taylor.sin_cos_rule("cosh"))


def _sech2_impl(xp, x):
    _sech2_shape([Aval((), np.result_type(getattr(x, "dtype", x)))])   # complex: refused
    with np.errstate(under="ignore"):    # exp(-2|x|) underflows where the value does
        e = xp.exp(-2 * xp.abs(in_declared_dtype(xp.asarray(x), (x,))))  # integers as floats
        return 4 * e / ((1 + e) * (1 + e))


def _sech2_shape(avals, **params):
    """sech2's value is real: a complex operand is refused (tanh's derivative there is
    ``1 - tanh(z)**2``, :func:`_tanh_d`)."""
    for a in avals:
        if a.dtype.kind == "c":
            raise ArgumentTypeError(f"sech2 of complex values ({a.str_short()}): sech2 is the "
                                    "real function 4e / (1 + e)**2, e = exp(-2|x|)")
    return _SECH2_SHAPE(avals, **params)


_SECH2_SHAPE = shape_rule("sech2", "float")


def _tanh_d(x, ans):
    """tanh'(x): sech2(x), exact over the real line; ``1 - tanh(z)**2`` for complex z."""
    if np.dtype(getattr(x, "dtype", np.float64)).kind == "c":
        return subtract(1.0, _sq(ans))
    return sech2(x)


# tanh' = 1 / cosh(x)**2 as 4 e / (1 + e)**2 with e = exp(-2|x|) <= 1: no cancellation
# (1 - tanh(x)**2 is 0 from |x| ~ 19 on, where the value is ~4 exp(-2|x|)) and no overflow
# (cosh(x)**2 is inf past |x| ~ 355); its derivative -2 tanh(x) sech2(x) is exact next to 0
# (tanh''(x) ~ -2x) and in the tails, and differentiated again it stays a short polynomial
# in tanh(x) and sech2(x) (the derivative towers of the biharmonic and of Taylor mode)
sech2: Primitive = elementwise(
    "sech2", None, 1, result="float", py="ops.sech2({0})", impl=_sech2_impl,
    abstract_eval=_sech2_shape,
    c="(4 * exp(-2 * fabs({0})) / ((1 + exp(-2 * fabs({0}))) * (1 + exp(-2 * fabs({0})))))",
    doc="sech(x)**2, the derivative of tanh, exact over the whole range.",
    partials=(lambda x, ans: multiply(-2.0, multiply(tanh(x), ans)),))


tanh: Primitive = elementwise("tanh", "tanh", 1, c="tanh({0})", result="float",
    partials=(_tanh_d,))

defrules(tanh, taylor=taylor.unary_recurrence(taylor.tanh_step, first=True))


def _arcsinh_d(x, ans):
    """arcsinh'(x): 1 / hypot(x, 1) for real x (x**2 + 1 overflows), 1 / sqrt(1 + z**2) for
    complex z (hypot has no complex form)."""
    if np.dtype(getattr(x, "dtype", np.float64)).kind == "c":
        return _recip(sqrt(add(1.0, _sq(x))))
    return _recip(hypot(x, 1.0))


arcsinh = elementwise("arcsinh", "arcsinh", 1, c="asinh({0})", result="float",
    partials=(_arcsinh_d,))

arccosh = elementwise("arccosh", "arccosh", 1, c="acosh({0})", result="float",
    partials=(lambda x, ans: _recip(multiply(sqrt(subtract(x, 1.0)),
                                             sqrt(add(x, 1.0)))),))

arctanh = elementwise("arctanh", "arctanh", 1, c="atanh({0})", result="float",
    partials=(lambda x, ans: _recip(_one_minus_x_sq(x)),))

# --------------------------------------------------------------------------- special functions
# SciPy's expit, and its formula in C: 1 / (1 + exp(-x)) has no cancellation for either
# sign (exp(-x) overflows to inf where the value underflows to 0); its derivative is
# logistic(x) * logistic(-x), not ans * (1 - ans), 0 from x ~ 37 on
logistic = elementwise(
    "logistic", None, 1, c="(1 / (1 + exp(-{0})))", result="float", py="ops.logistic({0})",
    impl=special_function("expit"), doc="The logistic sigmoid 1/(1+exp(-x)).",
    # logistic' = sech2(x/2) / 4: exact in the tails and, differentiated, next to 0 (where
    # ans * (1 - ans) and ans * logistic(-x) differentiate into cancelling terms)
    partials=(lambda x, ans: multiply(0.25, sech2(multiply(0.5, x))),))

defrules(logistic, taylor=taylor.unary_recurrence(taylor.logistic_step, first=True))


def _two_to_the(e, dtype):
    """2**e in ``dtype`` for an integer ``e`` (traced or a constant): ldexp's partial."""
    if hasattr(e, "aval"):
        return exp2(_astype(e, dtype))
    with np.errstate(over="ignore"):
        return np.ldexp(np.ones((), dtype), np.asarray(e))


def _ldexp_shape(avals, **params):
    x, e = avals
    if e.dtype.kind not in "biu":
        raise DualgpuError(f"ldexp: the exponent (second argument) must be an integer array, "
                           f"got {e.dtype}; round it and cast it, e.g. "
                           f"np.rint(e).astype(np.int32)")
    shape = broadcast_shapes(x.shape, e.shape, op="ldexp")
    # NumPy's loops: the smallest float that holds x's values (int8 -> float16, ...)
    dtype = np.ldexp(np.zeros((), x.dtype), np.zeros((), e.dtype)).dtype
    return Aval(shape, dtype, x.weak)


# x * 2**e for an integer e, exact (no overflow of 2**e where the product is finite)
ldexp = elementwise(
    # the exponent (read as a float) clamped into C's int, as NumPy clamps a wider one (no
    # fmin/fmax: CUDA finds them ambiguous between float and double)
    "ldexp", "ldexp", 2, c="ldexp({0}, (({1}) > 1e6 ? 1e6 : ({1}) < -1e6 ? -1e6 : ({1})))",
    abstract_eval=_ldexp_shape,
    doc="x * 2**e for integer e; the derivative in x is 2**e, e has none.",
    partials=(lambda x, e, ans: _two_to_the(e, ans.dtype), lambda x, e, ans: 0))

# --------------------------------------------------------------------------- selection


def _where_shape(avals, **params):
    shape = broadcast_shapes(*[a.shape for a in avals], op="where")
    # np.where returns an array even when both branches are Python scalars: the result is
    # not weakly typed (x32 * where(c, 1.0, 0.0) is float64 in NumPy, and must be here)
    return Aval(shape, promote(avals[1:]), False)


where = elementwise("where", "where", 3, c="({0} ? {1} : {2})", abstract_eval=_where_shape,
                    flags=(Flag.CONDITION,))


def _where_jvp(primals, tangents, **params):
    c, x, y = primals
    ans = where.bind(c, x, y)
    _, tx, ty = tangents
    if tx is None and ty is None:
        return ans, None
    out_t = lax.where(c, 0.0 if tx is None else tx, 0.0 if ty is None else ty)
    return ans, fit_shape(out_t, ans)


def _where_vjp(g, primals, ans, **params):
    c, x, y = primals
    cx = unbroadcast(lax.where(c, g, 0.0), x.aval) if wants_cotangent(x) else None
    cy = unbroadcast(lax.where(c, 0.0, g), y.aval) if wants_cotangent(y) else None
    return None, cx, cy


def _where_jet(eqn, values, jets, mode):
    c, x, y = values
    ans = where.bind(c, x, y)
    shape, D = tuple(ans.shape), mode.size
    rank = len(shape)

    def select(part, batched_part):
        jx = jets[1][part] if jets[1] is not None else None
        jy = jets[2][part] if jets[2] is not None else None
        if jx is None and jy is None:
            return None
        lead = (D,) if batched_part else ()
        jx = 0.0 if jx is None else (laplacian_rules.lift(jx, rank) if batched_part else jx)
        jy = 0.0 if jy is None else (laplacian_rules.lift(jy, rank) if batched_part else jy)
        return laplacian_rules.fit(lax.where(c, jx, jy), lead + shape, ans.dtype)

    return [(select(0, True), select(1, mode.diag))]


defrules(where, jvp=_where_jvp, vjp=_where_vjp, laplacian=_where_jet,
         sparsity=sparsity.linear_elementwise, taylor=taylor.where_rule)

# 0 for x < 0, 1 for x > 0, h0 at x == 0 (NaN at NaN): flat in x; h0 is the value at the jump
heaviside = elementwise(
    "heaviside", "heaviside", 2, result="float",
    c="(({0}) != ({0}) ? ({0}) : ({0}) < 0 ? 0 : ({0}) > 0 ? 1 : ({1}))",
    doc="The step function; its derivative in x is 0 (also at the jump, as JAX's), in h0 it "
        "is 1 where x == 0.",
    partials=(lambda x, h0, ans: 0,
              lambda x, h0, ans: _astype(where(equal(x, 0), 1.0, 0.0), ans.dtype)))
# floor_divide and remainder as NumPy computes them (npy_divmod): the remainder is fmod moved
# to the divisor's sign, a zero remainder signed as the divisor; the quotient is
# (x - fmod) / y, less one where fmod was moved, snapped to an integer and signed as x / y;
# a zero divisor gives x / y (fmod: NaN). So x // inf is 0 or -1 and x % inf is x or inf
# (floor(x / y) and x - floor(x / y) * y give NaN), and huge quotients keep their remainders.
# (fmod's result is 0, NaN or signed as x: the test of x's sign stands for fmod's.)
_FMOD = "fmod({0}, {1})"

_MOVED = f"({_FMOD} != 0 && ({{1}} < 0) != ({{0}} < 0))"

_QUOTIENT = f"(({{0}} - {_FMOD}) / {{1}} - {_MOVED})"

floor_divide = elementwise(
    "floor_divide", "floor_divide", 2, differentiable=False,
    c=f"({{1}} == 0 ? {{0}} / {{1}} : copysign(floor({_QUOTIENT}) + "
      f"(2 * ({_QUOTIENT} - floor({_QUOTIENT})) > 1), {{0}} / {{1}}))",
    c_int=f"(({{1}}) == 0 ? 0 : {_MINUS_ONE} ? {_NEG_INT} : "  # x // 0 is 0
          "((({0}) / ({1})) - (((({0}) % ({1})) != 0) && ((({0}) < 0) != (({1}) < 0)))))")
# x mod y = x - floor(x / y) * y: differentiable between the jumps
remainder = elementwise(
    "remainder", "remainder", 2,
    c=f"({_MOVED} ? {_FMOD} + {{1}} : copysign({_FMOD}, {{1}}))",
    c_int=f"((({{1}}) == 0 || {_MINUS_ONE}) ? 0 : "
          "((({0}) % ({1})) != 0 && ((({0}) < 0) != (({1}) < 0))) ? "
          "(({0}) % ({1})) + ({1}) : (({0}) % ({1})))",
    partials=(lambda x, y, ans: 1, lambda x, y, ans: negative(floor_divide(x, y))))

# C's remainder, signed as x (np.fmod): x - trunc(x / y) * y; an integer x % 0 is 0
fmod = elementwise("fmod", "fmod", 2, c="fmod({0}, {1})",
                   c_int=f"((({{1}}) == 0 || {_MINUS_ONE}) ? 0 : ({{0}}) % ({{1}}))",
                   doc="Derivatives hold between the jumps (where x / y is an integer).",
    partials=(lambda x, y, ans: 1, lambda x, y, ans: negative(trunc(true_divide(x, y)))))

# --------------------------------------------------------------------------- exported modules
# the functions a module of dg.export defines for the ops it calls as ops.<name>
defstandalone(logistic, 'def logistic(x):\n    return _special().expit(x)\n')
defstandalone(sech2, 'def sech2(x):\n    with np.errstate(under="ignore"):\n'
                     '        e = xp.exp(-2 * xp.abs(x * 1.0))\n'
                     '        return 4 * e / ((1 + e) * (1 + e))\n')
