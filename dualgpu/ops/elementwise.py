"""Elementwise ops, one declaration each: value (the NumPy function), shape rule, Python form,
C expression and partial derivatives. :mod:`dualgpu.rules.elementwise` derives the JVP and VJP
from the partials; the fused kernels use the C expressions.

>>> import numpy as np
>>> from dualgpu.ops import elementwise as ew
>>> ew.exp.c, ew.exp.has("elementwise"), float(ew.exp.bind(0.0))
('exp({0})', True, 1.0)
"""
from __future__ import annotations

import math

import numpy as np

from ..backends import backend_for_xp
from ..core.axes import broadcast_shapes
from ..core.dtypes import float_dtype, promote, real_dtype
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import Primitive, defprim, defstandalone
from ..errors import ArgumentTypeError, DualgpuError, user_location

ELEMENTWISE: dict[str, Primitive] = {}


def _loop_dtype(ufunc, name: str, avals) -> np.dtype | None:
    """The output dtype of the loop NumPy's ``ufunc`` picks for these operands (weak ones
    as Python scalars): exp of int8 is float16, of int16 float32, bool ** bool is int8;
    None where every operand is weak. A DualgpuError where NumPy has no loop (bool - bool,
    fabs of complex values), as NumPy raises."""
    if all(a.weak for a in avals):
        return None
    operands = tuple(type(_WEAK[a.dtype.kind]) if a.weak and a.dtype.kind in "iufc"
                     else a.dtype for a in avals)
    try:
        return ufunc.resolve_dtypes(operands + (None,) * ufunc.nout)[ufunc.nin]
    except TypeError as e:
        kinds = ", ".join(str(a.dtype) for a in avals)
        raise ArgumentTypeError(f"numpy.{ufunc.__name__} of {kinds}: NumPy has no loop for "
                                f"these types ({e}) (at {user_location()})") from None


_WEAK = {"i": 0, "u": 0, "f": 0.0, "c": 0j}


def _shape_rule(name: str, result: str, ufunc=None):
    def rule(avals, **params):
        shape = broadcast_shapes(*[a.shape for a in avals], op=name)
        dtype = _loop_dtype(ufunc, name, avals) if ufunc is not None else None
        if dtype is None:
            dtype = promote(avals)
            if result == "float":
                dtype = float_dtype(dtype)
            elif result == "real":  # abs of complex values is real
                dtype = real_dtype(dtype)
            elif result == "bool":
                dtype = np.dtype(bool)
        weak = all(a.weak for a in avals)
        return Aval(shape, dtype, weak)

    return rule


def elementwise(name: str, numpy_name: str | None, arity: int, *, c: str | None,
                c_int: str | None = None, result: str = "same", py: str | None = None,
                impl=None, abstract_eval=None, differentiable: bool = True,
                partials=None, flags=(), doc: str = "") -> Primitive:
    """Declare an elementwise primitive: its value, Python form and C expression.

    ``result`` is the output dtype: ``"same"`` (promoted), ``"float"``, ``"real"`` or
    ``"bool"``. ``c_int`` is the C form used when the kernel computes in an integer or
    bool type (``{T}`` is that C type); an op on integers and bools only has ``c=None``
    and a ``c_int``. ``partials`` are its partial derivatives, one
    function of ``(*inputs, ans)`` per input, written with these ops so that they
    differentiate again: the JVP, VJP, HVP, the Laplacian's jets and the kernels' tangents
    all follow from them (:mod:`dualgpu.rules.elementwise`). Example::

        >>> my_exp2 = elementwise("my_exp2", "exp", 1, c="exp({0})", result="float")
        >>> my_exp2.c_for(np.float32), my_exp2.arity, float(my_exp2(0.0))
        ('exp({0})', 1, 1.0)
    """
    # the dtype rule of NumPy's own loops, where the op is a NumPy ufunc computed by it
    ufunc = getattr(np, numpy_name, None) if numpy_name and impl is None else None
    if not isinstance(ufunc, np.ufunc) or ufunc.nin != arity:
        ufunc = None
    if impl is None:
        def impl(xp, *args, _f=numpy_name):
            return getattr(xp, _f)(*args)

    prim = defprim(name, impl, abstract_eval or _shape_rule(name, result, ufunc),
                   kind=Flag.ELEMENTWISE, c=c, c_int=c_int, arity=arity, flags=flags,
                   py=py or (f"xp.{numpy_name}(" + ", ".join(
                       f"{{{i}}}" for i in range(arity)) + ")"),
                   differentiable=differentiable, doc=doc,
                   partials=list(partials) if partials is not None else None)
    ELEMENTWISE[name] = prim
    return prim


def _special(name):
    def impl(xp, x):
        return getattr(backend_for_xp(xp).special, name)(x)

    return impl


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


def _tanh_d(x, ans):
    """tanh'(x) = 1 - tanh(x)**2, accurate over the whole range and again when differentiated:
    ``1 - ans**2`` where |x| < 1 (no cancellation there: ans**2 < 0.59; its derivative
    ``-2 ans tanh'`` keeps tanh''(x) ~ -2x exact next to 0), ``4 logistic(2x) logistic(-2x)``
    elsewhere (``1 - ans**2`` is 0 from |x| ~ 19 on, where the derivative is ~4 exp(-2|x|);
    the logistic form's own derivative cancels next to 0). 1 / cosh(x)**2 would differentiate
    into inf / inf past |x| ~ 710."""
    tails = multiply(4.0, multiply(logistic(multiply(2.0, x)), logistic(multiply(-2.0, x))))
    return where(less(absolute(x), 1.0), subtract(1.0, _sq(ans)), tails)


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
                 py="{0} + {1}",
    partials=(lambda x, y, ans: 1, lambda x, y, ans: 1))
subtract = elementwise("subtract", "subtract", 2, c="({0} - {1})",
                      c_int=_WRAP.format(op="-"), py="{0} - {1}",
    partials=(lambda x, y, ans: 1, lambda x, y, ans: -1))
multiply = elementwise("multiply", "multiply", 2, c="({0} * {1})",
                      c_int=_WRAP.format(op="*"), py="{0} * {1}", flags=(Flag.MULTILINEAR,),
    partials=(lambda x, y, ans: y, lambda x, y, ans: x))
true_divide = elementwise("true_divide", "true_divide", 2, c="({0} / {1})", py="{0} / {1}",
                          result="float",
    partials=(lambda x, y, ans: _recip(y), lambda x, y, ans: negative(ans / y)))
negative: Primitive = elementwise("negative", "negative", 1, c="(-{0})", c_int=_NEG_INT, py="-{0}",
    partials=(lambda x, ans: -1,))
power = elementwise("power", "power", 2, c="pow({0}, {1})", py="{0} ** {1}",
                    c_int=_IPOW,
    partials=(_pow_dx, _pow_dy))
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
absolute = elementwise(
    "absolute", "abs", 1, c="fabs({0})", c_int=f"(({{0}}) < 0 ? {_NEG_INT} : ({{0}}))",
    result="real",
    doc="The derivative at 0 is 0 (sign(0)). For complex z, d|z| = Re(conj(z) dz) / |z| "
        "(0 at z == 0), with JAX's cotangent convention: the cotangent of z is "
        "g * conj(z) / |z|.",
    partials=(lambda x, ans: sign(x),))
sqrt = elementwise("sqrt", "sqrt", 1, c="sqrt({0})", result="float",
    partials=(lambda x, ans: true_divide(0.5, ans),))
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

# --------------------------------------------------------------------------- complex parts
# real, imag and conj of complex values; on real values lax returns x, zeros and x
# without binding these, so they see complex inputs only.


def _complex_shape(to_real: bool):
    def rule(avals):
        a = avals[0]
        if a.dtype.kind != "c":
            raise DualgpuError(f"internal: complex-part primitive on {a.str_short()}")
        return Aval(tuple(a.shape), real_dtype(a.dtype) if to_real else a.dtype, a.weak)

    return rule


real = elementwise("real", "real", 1, c=None, abstract_eval=_complex_shape(True),
                   doc="The real part of complex values (real inputs never reach it).")
imag = elementwise("imag", "imag", 1, c=None, abstract_eval=_complex_shape(True),
                   doc="The imaginary part of complex values (real inputs never reach it).")
conj = elementwise("conj", "conj", 1, c=None, abstract_eval=_complex_shape(False),
                   doc="The complex conjugate of complex values (real inputs never reach "
                       "it).")

# --------------------------------------------------------------------------- exp and log
exp = elementwise("exp", "exp", 1, c="exp({0})", result="float",
    partials=(lambda x, ans: ans,))
exp2 = elementwise("exp2", "exp2", 1, c="exp2({0})", result="float",
    partials=(lambda x, ans: multiply(math.log(2.0), ans),))
# exp(x), not ans + 1: expm1(x) rounds to -1 from x ~ -37 on, where exp(x) is ~1e-16
expm1 = elementwise("expm1", "expm1", 1, c="expm1({0})", result="float",
    partials=(lambda x, ans: exp(x),))
# CUDA's double logarithms give -inf for a negative subnormal (NumPy: NaN); the square root
# of a negative value is NaN
log = elementwise("log", "log", 1, c="(({0}) < 0 ? sqrt({0}) : log({0}))", result="float",
    partials=(lambda x, ans: _recip(x),))
log2 = elementwise("log2", "log2", 1, c="(({0}) < 0 ? sqrt({0}) : log2({0}))",
                   result="float",
    partials=(lambda x, ans: true_divide(1 / math.log(2.0), x),))
log10 = elementwise("log10", "log10", 1, c="(({0}) < 0 ? sqrt({0}) : log10({0}))",
                    result="float",
    partials=(lambda x, ans: true_divide(1 / math.log(10.0), x),))
log1p = elementwise("log1p", "log1p", 1, c="log1p({0})", result="float",
    partials=(lambda x, ans: _recip(add(x, 1.0)),))
logaddexp = elementwise(
    "logaddexp", "logaddexp", 2,
    # x == y takes a difference of 0: also for two equal infinities (inf - inf is NaN)
    c="(fmax({0}, {1}) + log1p(exp(-fabs((({0}) == ({1})) ? 0 : (({0}) - ({1}))))))",
    result="float", doc="Derivatives are finite at infinities: 1/2 each at (-inf, -inf).",
    partials=(lambda x, y, ans: _logaddexp_d(x, y), lambda x, y, ans: _logaddexp_d(y, x)))

# --------------------------------------------------------------------------- trigonometry
sin = elementwise("sin", "sin", 1, c="sin({0})", result="float",
    partials=(lambda x, ans: cos(x),))
cos: Primitive = elementwise("cos", "cos", 1, c="cos({0})", result="float",
    partials=(lambda x, ans: negative(sin(x)),))
tan = elementwise("tan", "tan", 1, c="tan({0})", result="float",
    partials=(lambda x, ans: add(1.0, _sq(ans)),))
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
cosh: Primitive = elementwise("cosh", "cosh", 1, c="cosh({0})", result="float",
    partials=(lambda x, ans: sinh(x),))
tanh = elementwise("tanh", "tanh", 1, c="tanh({0})", result="float",
    partials=(lambda x, ans: _tanh_d(x, ans),))
arcsinh = elementwise("arcsinh", "arcsinh", 1, c="asinh({0})", result="float",
    partials=(lambda x, ans: _recip(hypot(x, 1.0)),))     # x**2 + 1 overflows
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
    impl=_special("expit"), doc="The logistic sigmoid 1/(1+exp(-x)).",
    # logistic' = tanh'(x/2) / 4: exact in the tails and, differentiated, next to 0 (where
    # ans * (1 - ans) and ans * logistic(-x) differentiate into cancelling terms)
    partials=(lambda x, ans: multiply(0.25, _tanh_d(multiply(0.5, x), tanh(multiply(0.5, x)))),))
erf = elementwise("erf", None, 1, c="erf({0})", result="float", py="ops.erf({0})",
                  impl=_special("erf"),
    partials=(lambda x, ans: _SQRT_2_OVER_PI * exp(-_sq(x)),))
erfc = elementwise("erfc", None, 1, c="erfc({0})", result="float", py="ops.erfc({0})",
                   impl=_special("erfc"),
    partials=(lambda x, ans: -_SQRT_2_OVER_PI * exp(-_sq(x)),))
gammaln = elementwise("gammaln", None, 1, result="float", py="ops.gammaln({0})",
                      # -inf at -inf as SciPy and CuPy (C's lgamma gives inf)
                      c="((isinf({0}) && ({0}) < 0) ? ({0}) : lgamma({0}))",
                      impl=_special("gammaln"),
    partials=(lambda x, ans: digamma(x),))
digamma: Primitive = elementwise("digamma", None, 1, c=None, result="float", py="ops.digamma({0})",
                      impl=_special("digamma"),
                      doc="psi(x), the derivative of gammaln; its derivative is "
                          "polygamma(1, x).",
    partials=(lambda x, ans: polygamma(x, n=1),))


def _betainc_ab(a, b, x, ans):
    raise DualgpuError(
        "scipy.special.betainc(a, b, x): no derivative in a or b (JAX has none either): pass "
        "a and b as constants, or through dg.lax.stop_gradient; the derivative in x is "
        f"x**(a-1) * (1-x)**(b-1) / B(a, b) (at {user_location()})")


def _betainc_dx(a, b, x, ans):
    """d/dx I_x(a, b) = x**(a-1) (1-x)**(b-1) / B(a, b), B from gammaln."""
    log_beta = subtract(add(gammaln(a), gammaln(b)), gammaln(add(a, b)))
    density = multiply(power(x, subtract(a, 1)), power(subtract(1, x), subtract(b, 1)))
    return _astype(multiply(density, exp(negative(log_beta))), ans.dtype)


# the regularized incomplete beta function; no C form (CUDA has none): a library call
betainc = elementwise(
    "betainc", None, 3, c=None, result="float", py="ops.betainc({0}, {1}, {2})",
    impl=lambda xp, a, b, x: backend_for_xp(xp).special.betainc(a, b, x),
    doc="I_x(a, b) (scipy.special.betainc); differentiable in x only, as in JAX.",
    partials=(_betainc_ab, _betainc_ab, _betainc_dx))



def _gammainc_a(a, x, ans):
    raise DualgpuError(
        "scipy.special.gammainc/gammaincc(a, x): no derivative in a (JAX's needs a series "
        "of its own): pass a as a constant, or through dg.lax.stop_gradient; the derivative "
        f"in x is +-x**(a-1) * exp(-x) / Gamma(a) (at {user_location()})")


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
    impl=lambda xp, a, x: backend_for_xp(xp).special.gammainc(a, x),
    doc="P(a, x) (scipy.special.gammainc); differentiable in x only, as betainc.",
    partials=(_gammainc_a, _gamma_density))
gammaincc = elementwise(
    "gammaincc", None, 2, c=None, result="float", py="ops.gammaincc({0}, {1})",
    impl=lambda xp, a, x: backend_for_xp(xp).special.gammaincc(a, x),
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

# --------------------------------------------------------------------------- non-differentiable
# (comparisons, rounding, logic: their outputs carry no derivative)
_SIGN_INT = "((({0}) > 0) - (({0}) < 0))"
sign: Primitive = elementwise(
    "sign", "sign", 1, c=f"((({{0}}) != ({{0}})) ? ({{0}}) : {_SIGN_INT})",
    c_int=_SIGN_INT, differentiable=False)  # NaN: NaN
floor = elementwise("floor", "floor", 1, c="floor({0})", c_int="({0})", differentiable=False)
ceil = elementwise("ceil", "ceil", 1, c="ceil({0})", c_int="({0})", differentiable=False)
rint = elementwise("rint", "rint", 1, c="rint({0})", c_int="({0})", differentiable=False)
trunc = elementwise("trunc", "trunc", 1, c="trunc({0})", c_int="({0})", differentiable=False)
less = elementwise("less", "less", 2, c="({0} < {1})", result="bool", differentiable=False)
less_equal = elementwise("less_equal", "less_equal", 2, c="({0} <= {1})", result="bool",
                         differentiable=False)
greater = elementwise("greater", "greater", 2, c="({0} > {1})", result="bool",
                      differentiable=False)
greater_equal = elementwise("greater_equal", "greater_equal", 2, c="({0} >= {1})",
                            result="bool", differentiable=False)
equal = elementwise("equal", "equal", 2, c="({0} == {1})", result="bool", differentiable=False)
not_equal = elementwise("not_equal", "not_equal", 2, c="({0} != {1})", result="bool",
                        differentiable=False)
logical_and = elementwise("logical_and", "logical_and", 2, c="({0} && {1})", result="bool",
                          differentiable=False)
logical_or = elementwise("logical_or", "logical_or", 2, c="({0} || {1})", result="bool",
                         differentiable=False)
logical_not = elementwise("logical_not", "logical_not", 1, c="(!{0})", result="bool",
                          differentiable=False)
# CUDA's isnan/isinf/signbit take floating types only (an integer argument is ambiguous
# between their overloads): integer and bool forms of their own
isnan = elementwise("isnan", "isnan", 1, c="isnan({0})", c_int="(({0}) != ({0}))",
                    result="bool", differentiable=False)
isfinite = elementwise("isfinite", "isfinite", 1, c="(!isnan({0}) && !isinf({0}))",
                       c_int="(({0}) == ({0}))", result="bool", differentiable=False)
isinf = elementwise("isinf", "isinf", 1, c="isinf({0})", c_int="(({0}) != ({0}))",
                    result="bool", differentiable=False)
signbit = elementwise("signbit", "signbit", 1, c="signbit({0})", c_int="(({0}) < 0)",
                      result="bool", differentiable=False)
# the next representable value after x toward y: a step of one ulp, no derivative
nextafter = elementwise("nextafter", "nextafter", 2, c="nextafter({0}, {1})", result="float",
                        differentiable=False)
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

# --------------------------------------------------------------------------- bitwise
# On bools and integers only, as in NumPy (a float operand is refused), with NumPy's promotion
# (bool & int8 is int8, a Python int weak); the shifts compute bools as int8, as NumPy does.
# No float C form: the kernels compute them by the integer forms (``{T}``: the C type). C's
# ~ of a uint8 is a negative int, and of a bool true again: ~x is x ^ (T)-1. C's shifts by a
# count < 0 or >= the width are undefined, and a left shift of a negative value too: the
# count is tested first (NumPy's values: 0, or -1 for a negative value shifted right) and the
# left shift is made in 64-bit unsigned arithmetic.
_WEAK_NAMES = {"b": "bool", "i": "int", "u": "int", "f": "float", "c": "complex"}


def _bitwise_shape(name: str, shift: bool = False):
    same = _shape_rule(name, "same")

    def rule(avals, **params):
        aval = same(avals)
        if aval.dtype.kind not in "biu":
            types = ", ".join(f"Python {_WEAK_NAMES[a.dtype.kind]}" if a.weak else a.dtype.name
                              for a in avals)
            mixed = (" (signed and unsigned integers promote to a float)"
                     if all(a.dtype.kind in "biu" for a in avals) else "")
            raise ArgumentTypeError(
                f"np.{name}: ufunc '{name}' not supported for the input types ({types}), as in "
                f"NumPy: it takes integers and bools{mixed}; cast the operands, e.g. "
                f"x.astype(np.int64)")
        if shift and aval.dtype.kind == "b":
            return Aval(aval.shape, np.dtype(np.int8), aval.weak)
        return aval

    return rule


_BITWISE = "On bools and integers (floats are refused, as in NumPy)."
_SHIFTS = "On integers (bools as int8, floats refused, as in NumPy)."
_COUNT_IN_RANGE = "((unsigned long long)({1}) < 8 * sizeof({T}))"
bitwise_and = elementwise("bitwise_and", "bitwise_and", 2, c=None,
                          c_int="(({T})(({0}) & ({1})))", differentiable=False,
                          abstract_eval=_bitwise_shape("bitwise_and"), doc=_BITWISE)
bitwise_or = elementwise("bitwise_or", "bitwise_or", 2, c=None,
                         c_int="(({T})(({0}) | ({1})))", differentiable=False,
                         abstract_eval=_bitwise_shape("bitwise_or"), doc=_BITWISE)
bitwise_xor = elementwise("bitwise_xor", "bitwise_xor", 2, c=None,
                          c_int="(({T})(({0}) ^ ({1})))", differentiable=False,
                          abstract_eval=_bitwise_shape("bitwise_xor"), doc=_BITWISE)
invert = elementwise("invert", "invert", 1, c=None, c_int="(({T})(({0}) ^ (({T})-1)))",
                     differentiable=False, abstract_eval=_bitwise_shape("invert"),
                     doc=_BITWISE + " ~ of a bool is its logical not, as in NumPy.")
left_shift = elementwise(
    "left_shift", "left_shift", 2, c=None, differentiable=False,
    c_int=f"({_COUNT_IN_RANGE} ? ({{T}})((unsigned long long)({{0}}) << ({{1}})) : ({{T}})0)",
    abstract_eval=_bitwise_shape("left_shift", shift=True),
    doc=_SHIFTS + " A count < 0 or >= the width gives 0.")
right_shift = elementwise(
    "right_shift", "right_shift", 2, c=None, differentiable=False,
    c_int=f"({_COUNT_IN_RANGE} ? ({{T}})(({{0}}) >> ({{1}})) : ({{T}})(({{0}}) < 0 ? -1 : 0))",
    abstract_eval=_bitwise_shape("right_shift", shift=True),
    doc=_SHIFTS + " A count < 0 or >= the width gives 0, or -1 for a negative value.")

# --------------------------------------------------------------------------- dtype and fills


def _convert_shape(avals, dtype):
    return Aval(tuple(avals[0].shape), np.dtype(dtype))


convert_element_type = elementwise(
    "convert_element_type", None, 1, c="(({dtype}){0})", py="{0}.astype(xp.{dtype})",
    impl=lambda xp, x, dtype: xp.asarray(x).astype(dtype), abstract_eval=_convert_shape,
    flags=(Flag.CASTS,))
stop_gradient = elementwise(
    "stop_gradient", None, 1, c="{0}", py="{0}", impl=lambda xp, x: x,
    abstract_eval=lambda avals: avals[0], flags=(Flag.VIEW, Flag.SELECTS))


def _fill_shape(avals, value):
    a = avals[0]
    return Aval(tuple(a.shape), a.dtype)


fill_like = elementwise(
    "fill_like", None, 1, c="{value}", py="xp.full_like({0}, {value})",
    impl=lambda xp, x, value: xp.full_like(x, value), abstract_eval=_fill_shape,
    differentiable=False, flags=(Flag.IGNORES_VALUES,),
    doc="An array shaped and typed like x, every element equal to value (x's values are "
        "not read).")

# --------------------------------------------------------------------------- exported modules
# the functions a module of dg.export defines for the ops it calls as ops.<name>
defstandalone(logistic, 'def logistic(x):\n    return _special().expit(x)\n')
defstandalone(erf, 'def erf(x):\n    return _special().erf(x)\n')
defstandalone(erfc, 'def erfc(x):\n    return _special().erfc(x)\n')
defstandalone(gammaln, 'def gammaln(x):\n    return _special().gammaln(x)\n')
defstandalone(digamma, 'def digamma(x):\n    return _special().digamma(x)\n')
defstandalone(betainc, 'def betainc(a, b, x):\n    return _special().betainc(a, b, x)\n')
defstandalone(gammainc, 'def gammainc(a, x):\n    return _special().gammainc(a, x)\n')
defstandalone(gammaincc, 'def gammaincc(a, x):\n    return _special().gammaincc(a, x)\n')
defstandalone(polygamma, (
        'def polygamma(x, n):\n'
        '    x = xp.asarray(x)\n'
        '    out = _special().polygamma(xp.asarray(n), x)\n'
        "    return out.astype(x.dtype, copy=False) if x.dtype.kind == 'f' else out\n"))
