"""Elementwise ops: each declares its value (NumPy name), its partial derivatives (in
registry ops) and its C expression once; the JVP, the VJP and the fused-kernel body are all
derived from that declaration (ChainRules' ``@scalar_rule`` idea).

A partial is a function of the primal inputs and the output ``ans``. ``1`` and ``-1`` are
recognised so that ``add``/``sub`` cost no multiplications.
"""
from __future__ import annotations

import math

import numpy as np

from .. import numpy_api as dnp
from ..errors import DualgpuError
from ..ir import Aval
from ..primitives import defprim
from ._util import (
    broadcast_shapes,
    float_dtype,
    promote,
    real_dtype,
    unbroadcast,
    wants_cotangent,
)

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


def _scale(partial, t):
    if isinstance(partial, (int, float)) and partial == 1:
        return t
    if isinstance(partial, (int, float)) and partial == -1:
        return dnp.negative(t)
    return dnp.multiply(partial, t)


def _fit_shape(t, ans):
    if tuple(np.shape(t)) != tuple(ans.shape):
        t = dnp.broadcast_to(t, ans.shape)
    if t.dtype != ans.dtype:
        t = dnp.astype(t, ans.dtype)
    return t


def elementwise(name: str, numpy_name: str | None, arity: int, *, c: str | None,
                partials=None, result: str = "same", py: str | None = None,
                impl=None, differentiable: bool = True, doc: str = ""):
    """Declare an elementwise primitive from its value, partials and C expression.

    Example::

        >>> my_exp = elementwise("my_exp", "exp", 1, c="exp({0})", partials=[lambda x, ans: ans])
        >>> dg.grad(lambda x: np.sum(my_exp(x)))(np.zeros(2))
        array([1., 1.])
    """
    if impl is None:
        def impl(xp, *args, _f=numpy_name):
            return getattr(xp, _f)(*args)

    prim_box = []

    def jvp(primals, tangents, **params):
        prim = prim_box[0]
        ans = prim.bind(*primals, **params)
        out_t = None
        for i, t in enumerate(tangents):
            if t is None:
                continue
            term = _scale(partials[i](*primals, ans), t)
            out_t = term if out_t is None else dnp.add(out_t, term)
        return ans, None if out_t is None else _fit_shape(out_t, ans)

    def vjp(g, primals, ans, **params):
        cts = []
        for i, x in enumerate(primals):
            aval = getattr(x, "aval", None)
            if aval is None or not wants_cotangent(x):
                cts.append(None)
                continue
            cts.append(unbroadcast(_scale(partials[i](*primals, ans), g), aval))
        return tuple(cts)

    prim = defprim(name, impl, _shape_rule(name, result),
                   jvp=jvp if differentiable else None, vjp=vjp if differentiable else None,
                   kind="elementwise", c=c, py=py or (f"xp.{numpy_name}(" + ", ".join(
                       f"{{{i}}}" for i in range(arity)) + ")"),
                   differentiable=differentiable, partials=partials, doc=doc)
    prim.arity = arity
    prim_box.append(prim)
    ELEMENTWISE[name] = prim
    return prim




# --------------------------------------------------------------------------- helpers in ops
def _recip(x):
    return dnp.true_divide(1.0, x)


def _sq(x):
    return dnp.multiply(x, x)


# --------------------------------------------------------------------------- arithmetic
add = elementwise("add", "add", 2, c="({0} + {1})", py="{0} + {1}",
                  partials=[lambda x, y, ans: 1, lambda x, y, ans: 1])
subtract = elementwise("subtract", "subtract", 2, c="({0} - {1})", py="{0} - {1}",
                       partials=[lambda x, y, ans: 1, lambda x, y, ans: -1])
multiply = elementwise("multiply", "multiply", 2, c="({0} * {1})", py="{0} * {1}",
                       partials=[lambda x, y, ans: y, lambda x, y, ans: x])
true_divide = elementwise(
    "true_divide", "true_divide", 2, c="({0} / {1})", py="{0} / {1}", result="float",
    partials=[lambda x, y, ans: _recip(y), lambda x, y, ans: dnp.negative(ans / y)])
negative = elementwise("negative", "negative", 1, c="(-{0})", py="-{0}",
                       partials=[lambda x, ans: -1])


def _pow_dx(x, y, ans):
    """y * x**(y - 1), taken as 0 where y == 0 (as JAX does: x**0 is constant, also at
    x == 0 where x**-1 is inf)."""
    if isinstance(y, (int, float)):
        if y == 0:
            return 0.0
        if y == 1:
            return 1
        if y == 2:
            return dnp.multiply(2, x)
        return dnp.multiply(y, dnp.power(x, y - 1))
    y0 = dnp.equal(y, 0)
    # x is replaced under the where too, so that the derivative of this partial (the HVP)
    # sees no 0 * inf where y == 0 and x == 0
    return dnp.where(y0, 0.0, y * dnp.power(dnp.where(y0, 1.0, x), y - 1))


def _pow_dy(x, y, ans):
    """log(x) * x**y, taken as 0 where x == 0 (the limit for y > 0, as JAX does), also for
    a constant base (np.power(0.0, y))."""
    safe = dnp.where(dnp.equal(x, 0), 1.0, x)
    return dnp.multiply(dnp.log(safe), ans)


power = elementwise(
    "power", "power", 2, c="pow({0}, {1})", py="{0} ** {1}", partials=[_pow_dx, _pow_dy])
square = elementwise("square", "square", 1, c="({0} * {0})",
                     partials=[lambda x, ans: dnp.multiply(2, x)])
reciprocal = elementwise("reciprocal", "reciprocal", 1, c="(1 / {0})", result="float",
                         partials=[lambda x, ans: dnp.negative(_sq(ans))])
absolute = elementwise("absolute", "abs", 1, c="fabs({0})", result="real",
                       partials=[lambda x, ans: dnp.sign(x)],
                       doc="The derivative at 0 is 0 (sign(0)). For complex z, d|z| = "
                           "Re(conj(z) dz) / |z| (0 at z == 0), with JAX's cotangent "
                           "convention: the cotangent of z is g * conj(z) / |z|.")
sqrt = elementwise("sqrt", "sqrt", 1, c="sqrt({0})", result="float",
                   partials=[lambda x, ans: dnp.true_divide(0.5, ans)])
cbrt = elementwise("cbrt", "cbrt", 1, c="cbrt({0})", result="float",
                   partials=[lambda x, ans: dnp.true_divide(1.0, 3 * _sq(ans))])
def _win_weight(a, b, ans, larger: bool):
    """1 where ``a`` wins the max (or min) against ``b``, 1/2 on ties, 0 where it loses;
    in the output's dtype, so that float32 programs stay float32."""
    wins = dnp.greater(a, b) if larger else dnp.less(a, b)
    w = dnp.where(wins, 1.0, dnp.where(dnp.equal(a, b), 0.5, 0.0))
    return dnp.astype(w, ans.dtype)


def _nan_skip_weight(a, b, ans, larger: bool):
    """fmax/fmin: ``a``'s weight, where a NaN never wins: where exactly one argument is NaN
    the result is the other one and so is the whole derivative (as in JAX); where both are
    NaN, the first argument takes it (JAX's choice too)."""
    w = _win_weight(a, b, ans, larger)
    w = dnp.where(dnp.isnan(b), 1.0, dnp.where(dnp.isnan(a), 0.0, w))
    return dnp.astype(w, ans.dtype)


def _nan_skip_weight_second(b, a, ans, larger: bool):
    w = _win_weight(b, a, ans, larger)
    w = dnp.where(dnp.isnan(b), 0.0, dnp.where(dnp.isnan(a), 1.0, w))
    return dnp.astype(w, ans.dtype)


_TIES = "Ties send half the derivative to each argument."
maximum = elementwise(
    "maximum", "maximum", 2, c="fmax({0}, {1})", doc=_TIES,
    partials=[lambda x, y, ans: _win_weight(x, y, ans, True),
              lambda x, y, ans: _win_weight(y, x, ans, True)])
minimum = elementwise(
    "minimum", "minimum", 2, c="fmin({0}, {1})", doc=_TIES,
    partials=[lambda x, y, ans: _win_weight(x, y, ans, False),
              lambda x, y, ans: _win_weight(y, x, ans, False)])
_FTIES = _TIES + " A NaN argument gets none: the derivative follows the value returned."
fmax = elementwise(
    "fmax", "fmax", 2, c="fmax({0}, {1})", doc=_FTIES,
    partials=[lambda x, y, ans: _nan_skip_weight(x, y, ans, True),
              lambda x, y, ans: _nan_skip_weight_second(y, x, ans, True)])
fmin = elementwise(
    "fmin", "fmin", 2, c="fmin({0}, {1})", doc=_FTIES,
    partials=[lambda x, y, ans: _nan_skip_weight(x, y, ans, False),
              lambda x, y, ans: _nan_skip_weight_second(y, x, ans, False)])
def _safe_ratio(x, ans):
    """x / ans where ans != 0; 0 where ans == 0 (then x == 0 too: the kink of a norm, where
    0 is the subgradient taken, as for np.linalg.norm)."""
    zero = dnp.equal(ans, 0)
    return dnp.where(zero, 0.0, dnp.true_divide(x, dnp.where(zero, 1.0, ans)))


hypot = elementwise("hypot", "hypot", 2, c="hypot({0}, {1})", result="float",
                    partials=[lambda x, y, ans: _safe_ratio(x, ans),
                              lambda x, y, ans: _safe_ratio(y, ans)],
                    doc="Derivatives at (0, 0) are 0.")
copysign = elementwise(
    "copysign", "copysign", 2, c="copysign({0}, {1})", result="float",
    partials=[lambda x, y, ans: dnp.sign(x) * dnp.sign(ans), lambda x, y, ans: 0.0])

# --------------------------------------------------------------------------- complex parts
# real, imag and conj of complex values (on real values numpy_api returns x, zeros and x
# without binding these). Not holomorphic: their rules are written out, with JAX's
# conventions. A tangent is pushed forward as real(t), imag(t), conj(t); a cotangent is pulled
# back by the transposes for the bilinear pairing <a, b> = real(sum(a * b)) that every other
# rule here uses (the VJP of a holomorphic op multiplies by its derivative, unconjugated):
# real: g -> g + 0j, imag: g -> -1j * g, conj: g -> conj(g).
def _complex_shape(to_real: bool):
    def rule(avals):
        a = avals[0]
        if a.dtype.kind != "c":
            raise DualgpuError(f"internal: complex-part primitive on {a.str_short()}")
        return Aval(tuple(a.shape), real_dtype(a.dtype) if to_real else a.dtype, a.weak)

    return rule


def _complex_part(name, numpy_name, to_real, push, pull, doc):
    def jvp(primals, tangents):
        ans = prim.bind(primals[0])
        t = tangents[0]
        if t is None:
            return ans, None
        if t.dtype.kind != "c":  # a real tangent of a complex primal (a fill, say)
            t = dnp.astype(t, primals[0].dtype)
        return ans, push(t)

    def vjp(g, primals, ans):
        x = primals[0]
        if not wants_cotangent(x):
            return (None,)
        return (dnp.astype(pull(g), x.dtype),)

    prim = defprim(name, lambda xp, x: getattr(xp, numpy_name)(x), _complex_shape(to_real),
                   jvp=jvp, vjp=vjp, kind="elementwise", c=None,
                   py=f"xp.{numpy_name}({{0}})", doc=doc)
    prim.arity = 1
    ELEMENTWISE[name] = prim
    return prim


real = _complex_part(
    "real", "real", True, lambda t: real.bind(t), lambda g: g,
    "The real part of complex values (real inputs never reach it).")
imag = _complex_part(
    "imag", "imag", True, lambda t: imag.bind(t), lambda g: dnp.multiply(g, -1j),
    "The imaginary part of complex values (real inputs never reach it).")
conj = _complex_part(
    "conj", "conj", False, lambda t: conj.bind(t), lambda g: conj.bind(g) if g.dtype.kind
    == "c" else g, "The complex conjugate of complex values (real inputs never reach it).")


def _abs_complex_jvp(primals, tangents):
    x = primals[0]
    ans = absolute.bind(x)
    t = tangents[0]
    if t is None:
        return ans, None
    return ans, real.bind(dnp.multiply(_abs_complex_factor(x, ans), t))


def _abs_complex_factor(x, ans):
    """conj(x) / |x|, 0 where x == 0 (as JAX), and so is its own derivative (the HVP of
    abs at 0 is 0, as for real abs and the norms)."""
    zero = dnp.equal(ans, 0)
    safe = dnp.astype(dnp.where(zero, 1.0, ans), x.dtype)
    return dnp.where(zero, 0.0, dnp.true_divide(conj.bind(x), safe))


def _with_complex_rule(prim, jvp_c, vjp_c):
    jvp_r, vjp_r = prim.jvp, prim.vjp

    def jvp(primals, tangents, **params):
        x = primals[0]
        if getattr(x, "dtype", np.dtype(float)).kind == "c":
            return jvp_c(primals, tangents)
        return jvp_r(primals, tangents, **params)

    def vjp(g, primals, ans, **params):
        x = primals[0]
        if getattr(x, "dtype", np.dtype(float)).kind == "c":
            return vjp_c(g, primals, ans)
        return vjp_r(g, primals, ans, **params)

    prim.jvp, prim.vjp = jvp, vjp


def _abs_complex_vjp(g, primals, ans):
    x = primals[0]
    if not wants_cotangent(x):
        return (None,)
    gc = dnp.astype(g, x.dtype)
    return (unbroadcast(dnp.multiply(_abs_complex_factor(x, ans), gc), x.aval),)


_with_complex_rule(absolute, _abs_complex_jvp, _abs_complex_vjp)


# --------------------------------------------------------------------------- exp and log
exp = elementwise("exp", "exp", 1, c="exp({0})", result="float",
                  partials=[lambda x, ans: ans])
exp2 = elementwise("exp2", "exp2", 1, c="exp2({0})", result="float",
                   partials=[lambda x, ans: dnp.multiply(math.log(2.0), ans)])
expm1 = elementwise("expm1", "expm1", 1, c="expm1({0})", result="float",
                    partials=[lambda x, ans: dnp.add(ans, 1.0)])
log = elementwise("log", "log", 1, c="log({0})", result="float",
                  partials=[lambda x, ans: _recip(x)])
log2 = elementwise("log2", "log2", 1, c="log2({0})", result="float",
                   partials=[lambda x, ans: dnp.true_divide(1 / math.log(2.0), x)])
log10 = elementwise("log10", "log10", 1, c="log10({0})", result="float",
                    partials=[lambda x, ans: dnp.true_divide(1 / math.log(10.0), x)])
log1p = elementwise("log1p", "log1p", 1, c="log1p({0})", result="float",
                    partials=[lambda x, ans: _recip(dnp.add(x, 1.0))])
def _logaddexp_d(x, y):
    """d logaddexp / dx = logistic(x - y); where x and y are the same infinity (x - y is
    NaN), 1/2, the value on the diagonal logaddexp(a, a) = a + log 2."""
    same_inf = dnp.logical_and(dnp.equal(x, y), dnp.logical_not(dnp.isfinite(x)))
    return logistic.bind(dnp.where(same_inf, 0.0, dnp.subtract(x, y)))


logaddexp = elementwise(
    "logaddexp", "logaddexp", 2,
    # x == y takes a difference of 0: also for two equal infinities (inf - inf is NaN)
    c="(fmax({0}, {1}) + log1p(exp(-fabs((({0}) == ({1})) ? 0 : (({0}) - ({1}))))))",
    result="float", doc="Derivatives are finite at infinities: 1/2 each at (-inf, -inf).",
    partials=[lambda x, y, ans: _logaddexp_d(x, y), lambda x, y, ans: _logaddexp_d(y, x)])

# --------------------------------------------------------------------------- trigonometry
sin = elementwise("sin", "sin", 1, c="sin({0})", result="float",
                  partials=[lambda x, ans: dnp.cos(x)])
cos = elementwise("cos", "cos", 1, c="cos({0})", result="float",
                  partials=[lambda x, ans: dnp.negative(dnp.sin(x))])
tan = elementwise("tan", "tan", 1, c="tan({0})", result="float",
                  partials=[lambda x, ans: dnp.add(1.0, _sq(ans))])
arcsin = elementwise("arcsin", "arcsin", 1, c="asin({0})", result="float",
                     partials=[lambda x, ans: _recip(dnp.sqrt(1.0 - _sq(x)))])
arccos = elementwise("arccos", "arccos", 1, c="acos({0})", result="float",
                     partials=[lambda x, ans: dnp.negative(_recip(dnp.sqrt(1.0 - _sq(x))))])
arctan = elementwise("arctan", "arctan", 1, c="atan({0})", result="float",
                     partials=[lambda x, ans: _recip(1.0 + _sq(x))])
arctan2 = elementwise(
    "arctan2", "arctan2", 2, c="atan2({0}, {1})", result="float",
    partials=[lambda y, x, ans: x / (_sq(x) + _sq(y)),
              lambda y, x, ans: dnp.negative(y / (_sq(x) + _sq(y)))])
sinh = elementwise("sinh", "sinh", 1, c="sinh({0})", result="float",
                   partials=[lambda x, ans: dnp.cosh(x)])
cosh = elementwise("cosh", "cosh", 1, c="cosh({0})", result="float",
                   partials=[lambda x, ans: dnp.sinh(x)])
tanh = elementwise("tanh", "tanh", 1, c="tanh({0})", result="float",
                   partials=[lambda x, ans: 1.0 - _sq(ans)])
arcsinh = elementwise("arcsinh", "arcsinh", 1, c="asinh({0})", result="float",
                      partials=[lambda x, ans: _recip(dnp.sqrt(_sq(x) + 1.0))])
arccosh = elementwise("arccosh", "arccosh", 1, c="acosh({0})", result="float",
                      partials=[lambda x, ans: _recip(dnp.sqrt(_sq(x) - 1.0))])
arctanh = elementwise("arctanh", "arctanh", 1, c="atanh({0})", result="float",
                      partials=[lambda x, ans: _recip(1.0 - _sq(x))])

# --------------------------------------------------------------------------- special functions
logistic = elementwise(
    "logistic", None, 1, c="(1 / (1 + exp(-{0})))", result="float", py="ops.logistic({0})",
    impl=lambda xp, x: 0.5 * (xp.tanh(0.5 * x) + 1),
    partials=[lambda x, ans: ans * (1.0 - ans)], doc="The logistic sigmoid 1/(1+exp(-x)).")
_SQRT_2_OVER_PI = 2.0 / math.sqrt(math.pi)


def _special(name):
    def impl(xp, x):
        from ..backends import backend_for_xp

        return getattr(backend_for_xp(xp).special, name)(x)

    return impl


erf = elementwise("erf", None, 1, c="erf({0})", result="float", py="ops.erf({0})",
                  impl=_special("erf"),
                  partials=[lambda x, ans: _SQRT_2_OVER_PI * dnp.exp(-_sq(x))])
erfc = elementwise("erfc", None, 1, c="erfc({0})", result="float", py="ops.erfc({0})",
                   impl=_special("erfc"),
                   partials=[lambda x, ans: -_SQRT_2_OVER_PI * dnp.exp(-_sq(x))])
gammaln = elementwise("gammaln", None, 1, c="lgamma({0})", result="float",
                      py="ops.gammaln({0})", impl=_special("gammaln"),
                      partials=[lambda x, ans: dnp.digamma(x)])


digamma = elementwise("digamma", None, 1, c=None, result="float", py="ops.digamma({0})",
                      impl=_special("digamma"),
                      partials=[lambda x, ans: polygamma.bind(x, n=1)],
                      doc="psi(x), the derivative of gammaln; its derivative is polygamma(1, x).")


def _polygamma_impl(xp, x, n):
    from ..backends import backend_for_xp

    # cupyx's polygamma needs an array order (it calls n.astype); SciPy takes either
    x = xp.asarray(x)
    out = backend_for_xp(xp).special.polygamma(xp.asarray(n), x)
    return out.astype(x.dtype, copy=False) if x.dtype.kind == "f" else out


def _polygamma_jvp(primals, tangents, n):
    ans = polygamma.bind(primals[0], n=n)
    t = tangents[0]
    return ans, None if t is None else dnp.multiply(polygamma.bind(primals[0], n=n + 1), t)


def _polygamma_vjp(g, primals, ans, n):
    x = primals[0]
    if not wants_cotangent(x):
        return (None,)
    return (unbroadcast(dnp.multiply(polygamma.bind(x, n=n + 1), g), x.aval),)


polygamma = defprim(
    "polygamma", _polygamma_impl, _shape_rule("polygamma", "float"), jvp=_polygamma_jvp,
    vjp=_polygamma_vjp, kind="elementwise", c=None, py="ops.polygamma({0}, n={n})",
    doc="The n-th derivative of digamma (scipy.special.polygamma(n, x)); differentiable to "
        "any order, so gammaln is.")
polygamma.arity = 1
ELEMENTWISE["polygamma"] = polygamma

# --------------------------------------------------------------------------- selection
where = elementwise(
    "where", "where", 3, c="({0} ? {1} : {2})",
    partials=[None, lambda c, x, y, ans: dnp.where(c, 1.0, 0.0),
              lambda c, x, y, ans: dnp.where(c, 0.0, 1.0)])


def _where_shape(avals, **params):
    shape = broadcast_shapes(*[a.shape for a in avals], op="where")
    # np.where returns an array even when both branches are Python scalars: the result is
    # not weakly typed (x32 * where(c, 1.0, 0.0) is float64 in NumPy, and must be here)
    return Aval(shape, promote(avals[1:]), False)


where.abstract_eval = _where_shape


def _where_jvp(primals, tangents, **params):
    c, x, y = primals
    ans = where.bind(c, x, y)
    _, tx, ty = tangents
    if tx is None and ty is None:
        return ans, None
    out_t = dnp.where(c, 0.0 if tx is None else tx, 0.0 if ty is None else ty)
    return ans, _fit_shape(out_t, ans)


def _where_vjp(g, primals, ans, **params):
    c, x, y = primals
    cx = unbroadcast(dnp.where(c, g, 0.0), x.aval) if wants_cotangent(x) else None
    cy = unbroadcast(dnp.where(c, 0.0, g), y.aval) if wants_cotangent(y) else None
    return None, cx, cy


where.jvp, where.vjp = _where_jvp, _where_vjp

# --------------------------------------------------------------------------- non-differentiable
for _name, _c in [("sign", "(({0} > 0) - ({0} < 0))"), ("floor", "floor({0})"),
                  ("ceil", "ceil({0})"), ("rint", "rint({0})"), ("trunc", "trunc({0})")]:
    elementwise(_name, _name, 1, c=_c, differentiable=False)
for _name, _c in [("less", "({0} < {1})"), ("less_equal", "({0} <= {1})"),
                  ("greater", "({0} > {1})"), ("greater_equal", "({0} >= {1})"),
                  ("equal", "({0} == {1})"), ("not_equal", "({0} != {1})"),
                  ("logical_and", "({0} && {1})"), ("logical_or", "({0} || {1})")]:
    elementwise(_name, _name, 2, c=_c, result="bool", differentiable=False)
elementwise("logical_not", "logical_not", 1, c="(!{0})", result="bool", differentiable=False)
elementwise("isnan", "isnan", 1, c="isnan({0})", result="bool", differentiable=False)
elementwise("isfinite", "isfinite", 1, c="(!isnan({0}) && !isinf({0}))", result="bool",
            differentiable=False)
elementwise("floor_divide", "floor_divide", 2, c="floor({0} / {1})", differentiable=False)
# x mod y = x - floor(x / y) * y: slope 1 in x and -floor(x / y) in y (between the jumps)
elementwise("remainder", "remainder", 2, c="({0} - floor({0} / {1}) * {1})",
            partials=[lambda x, y, ans: 1,
                      lambda x, y, ans: dnp.negative(dnp.floor_divide(x, y))])

# --------------------------------------------------------------------------- dtype conversion


def _convert_shape(avals, dtype):
    return Aval(tuple(avals[0].shape), np.dtype(dtype))


def _convert_jvp(primals, tangents, dtype):
    ans = convert_element_type.bind(primals[0], dtype=dtype)
    t = tangents[0]
    if t is None or np.dtype(dtype).kind not in "fc":
        return ans, None
    return ans, convert_element_type.bind(t, dtype=dtype)


def _convert_vjp(g, primals, ans, dtype):
    x = primals[0]
    if not wants_cotangent(x):
        return (None,)
    return (convert_element_type.bind(g, dtype=x.dtype),)


convert_element_type = defprim(
    "convert_element_type", lambda xp, x, dtype: xp.asarray(x).astype(dtype), _convert_shape,
    jvp=_convert_jvp, vjp=_convert_vjp, kind="elementwise", c="(({dtype}){0})",
    py="{0}.astype(xp.{dtype})")
convert_element_type.arity = 1
ELEMENTWISE["convert_element_type"] = convert_element_type


def _stop_jvp(primals, tangents):
    return stop_gradient.bind(primals[0]), None


stop_gradient = defprim("stop_gradient", lambda xp, x: x, lambda avals: avals[0],
                        jvp=_stop_jvp, vjp=lambda g, primals, ans: (None,),
                        kind="elementwise", c="{0}", py="{0}")
stop_gradient.arity = 1
ELEMENTWISE["stop_gradient"] = stop_gradient


def _fill_shape(avals, value):
    a = avals[0]
    return Aval(tuple(a.shape), a.dtype)


fill_like = defprim(
    "fill_like", lambda xp, x, value: xp.full_like(x, value), _fill_shape,
    differentiable=False, kind="elementwise", c="{value}",
    py="xp.full_like({0}, {value})", doc="An array shaped and typed like x, every element "
    "equal to value (x's values are not read).")
fill_like.arity = 1
ELEMENTWISE["fill_like"] = fill_like
