"""Elementwise ops: value (the NumPy function), shape rule, Python form and C expression,
one line each. Their derivatives are in :mod:`dualgpu.rules.elementwise` (one partials line
per op); the fused kernels use the C expressions.

>>> import numpy as np
>>> from dualgpu.ops import elementwise as ew
>>> ew.exp.c, ew.exp.has("elementwise"), float(ew.exp.bind(0.0))
('exp({0})', True, 1.0)
"""
from __future__ import annotations

import numpy as np

from ..backends import backend_for_xp
from ..core.axes import broadcast_shapes
from ..core.dtypes import float_dtype, promote, real_dtype
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import defprim, defstandalone
from ..errors import DualgpuError

ELEMENTWISE: dict[str, object] = {}


def _shape_rule(name: str, result: str):
    def rule(avals, **params):
        shape = broadcast_shapes(*[a.shape for a in avals], op=name)
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
                flags=(), doc: str = ""):
    """Declare an elementwise primitive: its value, Python form and C expression.

    ``result`` is the output dtype: ``"same"`` (promoted), ``"float"``, ``"real"`` or
    ``"bool"``. ``c_int`` is the C form used when the kernel computes in an integer or
    bool type (``{T}`` is that C type). Example::

        >>> my_exp2 = elementwise("my_exp2", "exp", 1, c="exp({0})", result="float")
        >>> my_exp2.c_for(np.float32), my_exp2.arity, float(my_exp2(0.0))
        ('exp({0})', 1, 1.0)
    """
    if impl is None:
        def impl(xp, *args, _f=numpy_name):
            return getattr(xp, _f)(*args)

    prim = defprim(name, impl, abstract_eval or _shape_rule(name, result),
                   kind=Flag.ELEMENTWISE, c=c, c_int=c_int, arity=arity, flags=flags,
                   py=py or (f"xp.{numpy_name}(" + ", ".join(
                       f"{{{i}}}" for i in range(arity)) + ")"),
                   differentiable=differentiable, doc=doc)
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

# --------------------------------------------------------------------------- arithmetic
add = elementwise("add", "add", 2, c="({0} + {1})", py="{0} + {1}")
subtract = elementwise("subtract", "subtract", 2, c="({0} - {1})", py="{0} - {1}")
multiply = elementwise("multiply", "multiply", 2, c="({0} * {1})", py="{0} * {1}")
true_divide = elementwise("true_divide", "true_divide", 2, c="({0} / {1})", py="{0} / {1}",
                          result="float")
negative = elementwise("negative", "negative", 1, c="(-{0})", py="-{0}")
power = elementwise("power", "power", 2, c="pow({0}, {1})", py="{0} ** {1}",
                    c_int="(({T})pow((double)({0}), (double)({1})))")
square = elementwise("square", "square", 1, c="({0} * {0})")
reciprocal = elementwise("reciprocal", "reciprocal", 1, c="(1 / {0})", result="float")
absolute = elementwise(
    "absolute", "abs", 1, c="fabs({0})", c_int="(({0}) < 0 ? -({0}) : ({0}))", result="real",
    doc="The derivative at 0 is 0 (sign(0)). For complex z, d|z| = Re(conj(z) dz) / |z| "
        "(0 at z == 0), with JAX's cotangent convention: the cotangent of z is "
        "g * conj(z) / |z|.")
sqrt = elementwise("sqrt", "sqrt", 1, c="sqrt({0})", result="float")
cbrt = elementwise("cbrt", "cbrt", 1, c="cbrt({0})", result="float")
maximum = elementwise("maximum", "maximum", 2, c=_NAN_MAX, doc=_TIES)
minimum = elementwise("minimum", "minimum", 2, c=_NAN_MIN, doc=_TIES)
fmax = elementwise("fmax", "fmax", 2, c="fmax({0}, {1})",
                   c_int="(({0}) > ({1}) ? ({0}) : ({1}))", doc=_FTIES)
fmin = elementwise("fmin", "fmin", 2, c="fmin({0}, {1})",
                   c_int="(({0}) < ({1}) ? ({0}) : ({1}))", doc=_FTIES)
# hypot as m * sqrt(1 + (n / m)**2), m and n the larger and smaller magnitude: CUDA's double
# hypot overflows to inf next to the largest finite value (hypot(DBL_MAX, 0.75)); an
# infinity wins over NaN, as in NumPy
_BIG, _SMALL = "fmax(fabs({0}), fabs({1}))", "fmin(fabs({0}), fabs({1}))"
hypot = elementwise(
    "hypot", "hypot", 2, result="float", doc="Derivatives at (0, 0) are 0.",
    c=f"(isinf({{0}}) ? fabs({{0}}) : isinf({{1}}) ? fabs({{1}}) : "
      f"({{0}} != {{0}} || {{1}} != {{1}}) ? {{0}} + {{1}} : {_BIG} == 0 ? {_BIG} : "
      f"{_BIG} * sqrt(1 + ({_SMALL} / {_BIG}) * ({_SMALL} / {_BIG})))")
copysign = elementwise("copysign", "copysign", 2, c="copysign({0}, {1})", result="float")

# --------------------------------------------------------------------------- complex parts
# real, imag and conj of complex values; on real values numpy_api returns x, zeros and x
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
exp = elementwise("exp", "exp", 1, c="exp({0})", result="float")
exp2 = elementwise("exp2", "exp2", 1, c="exp2({0})", result="float")
expm1 = elementwise("expm1", "expm1", 1, c="expm1({0})", result="float")
# CUDA's double logarithms give -inf for a negative subnormal (NumPy: NaN); the square root
# of a negative value is NaN
log = elementwise("log", "log", 1, c="(({0}) < 0 ? sqrt({0}) : log({0}))", result="float")
log2 = elementwise("log2", "log2", 1, c="(({0}) < 0 ? sqrt({0}) : log2({0}))",
                   result="float")
log10 = elementwise("log10", "log10", 1, c="(({0}) < 0 ? sqrt({0}) : log10({0}))",
                    result="float")
log1p = elementwise("log1p", "log1p", 1, c="log1p({0})", result="float")
logaddexp = elementwise(
    "logaddexp", "logaddexp", 2,
    # x == y takes a difference of 0: also for two equal infinities (inf - inf is NaN)
    c="(fmax({0}, {1}) + log1p(exp(-fabs((({0}) == ({1})) ? 0 : (({0}) - ({1}))))))",
    result="float", doc="Derivatives are finite at infinities: 1/2 each at (-inf, -inf).")

# --------------------------------------------------------------------------- trigonometry
sin = elementwise("sin", "sin", 1, c="sin({0})", result="float")
cos = elementwise("cos", "cos", 1, c="cos({0})", result="float")
tan = elementwise("tan", "tan", 1, c="tan({0})", result="float")
arcsin = elementwise("arcsin", "arcsin", 1, c="asin({0})", result="float")
arccos = elementwise("arccos", "arccos", 1, c="acos({0})", result="float")
arctan = elementwise("arctan", "arctan", 1, c="atan({0})", result="float")
arctan2 = elementwise("arctan2", "arctan2", 2, c="atan2({0}, {1})", result="float")
sinh = elementwise("sinh", "sinh", 1, c="sinh({0})", result="float")
cosh = elementwise("cosh", "cosh", 1, c="cosh({0})", result="float")
tanh = elementwise("tanh", "tanh", 1, c="tanh({0})", result="float")
arcsinh = elementwise("arcsinh", "arcsinh", 1, c="asinh({0})", result="float")
arccosh = elementwise("arccosh", "arccosh", 1, c="acosh({0})", result="float")
arctanh = elementwise("arctanh", "arctanh", 1, c="atanh({0})", result="float")

# --------------------------------------------------------------------------- special functions
logistic = elementwise(
    "logistic", None, 1, c="(1 / (1 + exp(-{0})))", result="float", py="ops.logistic({0})",
    impl=lambda xp, x: 0.5 * (xp.tanh(0.5 * x) + 1), doc="The logistic sigmoid 1/(1+exp(-x)).")
erf = elementwise("erf", None, 1, c="erf({0})", result="float", py="ops.erf({0})",
                  impl=_special("erf"))
erfc = elementwise("erfc", None, 1, c="erfc({0})", result="float", py="ops.erfc({0})",
                   impl=_special("erfc"))
gammaln = elementwise("gammaln", None, 1, result="float", py="ops.gammaln({0})",
                      # -inf at -inf as SciPy and CuPy (C's lgamma gives inf)
                      c="((isinf({0}) && ({0}) < 0) ? ({0}) : lgamma({0}))",
                      impl=_special("gammaln"))
digamma = elementwise("digamma", None, 1, c=None, result="float", py="ops.digamma({0})",
                      impl=_special("digamma"),
                      doc="psi(x), the derivative of gammaln; its derivative is "
                          "polygamma(1, x).")


def _polygamma_impl(xp, x, n):
    # cupyx's polygamma needs an array order (it calls n.astype); SciPy takes either
    x = xp.asarray(x)
    out = backend_for_xp(xp).special.polygamma(xp.asarray(n), x)
    return out.astype(x.dtype, copy=False) if x.dtype.kind == "f" else out


polygamma = elementwise(
    "polygamma", None, 1, c=None, result="float", py="ops.polygamma({0}, n={n})",
    impl=_polygamma_impl,
    doc="The n-th derivative of digamma (scipy.special.polygamma(n, x)); differentiable to "
        "any order, so gammaln is.")

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
sign = elementwise("sign", "sign", 1, c=f"((({{0}}) != ({{0}})) ? ({{0}}) : {_SIGN_INT})",
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
isnan = elementwise("isnan", "isnan", 1, c="isnan({0})", result="bool", differentiable=False)
isfinite = elementwise("isfinite", "isfinite", 1, c="(!isnan({0}) && !isinf({0}))",
                       result="bool", differentiable=False)
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
    c_int="(({1}) == 0 ? 0 : ((({0}) / ({1})) - (((({0}) % ({1})) != 0) && "  # x // 0 is 0
          "((({0}) < 0) != (({1}) < 0)))))")
# x mod y = x - floor(x / y) * y: differentiable between the jumps
remainder = elementwise(
    "remainder", "remainder", 2,
    c=f"({_MOVED} ? {_FMOD} + {{1}} : copysign({_FMOD}, {{1}}))",
    c_int="(({1}) == 0 ? 0 : ((({0}) % ({1})) != 0 && ((({0}) < 0) != (({1}) < 0))) ? "
          "(({0}) % ({1})) + ({1}) : (({0}) % ({1})))")

# C's remainder, signed as x (np.fmod): x - trunc(x / y) * y; an integer x % 0 is 0
fmod = elementwise("fmod", "fmod", 2, c="fmod({0}, {1})",
                   c_int="(({1}) == 0 ? 0 : ({0}) % ({1}))",
                   doc="Derivatives hold between the jumps (where x / y is an integer).")

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
defstandalone(logistic, 'def logistic(x):\n    return 0.5 * (xp.tanh(0.5 * x) + 1)\n')
defstandalone(erf, 'def erf(x):\n    return _special().erf(x)\n')
defstandalone(erfc, 'def erfc(x):\n    return _special().erfc(x)\n')
defstandalone(gammaln, 'def gammaln(x):\n    return _special().gammaln(x)\n')
defstandalone(digamma, 'def digamma(x):\n    return _special().digamma(x)\n')
defstandalone(polygamma, (
        'def polygamma(x, n):\n'
        '    x = xp.asarray(x)\n'
        '    out = _special().polygamma(xp.asarray(n), x)\n'
        "    return out.astype(x.dtype, copy=False) if x.dtype.kind == 'f' else out\n"))
