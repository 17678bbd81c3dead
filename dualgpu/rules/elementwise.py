"""Derivatives of the elementwise ops. Each op declares its partial derivatives in its
declaration row (``partials=`` in :mod:`dualgpu.ops.elementwise`, ChainRules' ``@scalar_rule``
idea); ``defpartials`` derives the JVP (``sum_i d_i f * x_dot_i``) and the VJP
(``unbroadcast(d_i f * y_bar)``) from them. The fused kernels differentiate nothing
themselves: they run the graphs these rules record. ``1`` and ``-1`` partials are recognised
so that ``add``/``sub`` cost no multiplications.

The ops whose rules are not partials (``where``, casts, complex parts, ``polygamma`` with its
order, ``abs`` of complex values) and the forward Laplacian's jets of the non-smooth ones are
written out below.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.primitives import defrules
from ..ops import elementwise as ew
from . import laplacian_rules
from . import sparsity_rules as sparsity
from . import taylor_rules as taylor
from .common import unbroadcast, wants_cotangent


def _scale(partial, t):
    if isinstance(partial, (int, float)) and partial == 1:
        return t
    if isinstance(partial, (int, float)) and partial == -1:
        return lax.negative(t)
    return lax.multiply(partial, t)


def _fit_shape(t, ans):
    if tuple(np.shape(t)) != tuple(ans.shape):
        t = lax.broadcast_to(t, ans.shape)
    if t.dtype != ans.dtype:
        t = lax.astype(t, ans.dtype)
    return t


def defpartials(prim, *partials):
    """Attach the JVP and VJP derived from ``prim``'s partial derivatives.

    Example (an op declared after this module was imported)::

        >>> from dualgpu.ops.elementwise import elementwise
        >>> my_exp = elementwise("my_exp", "exp", 1, c="exp({0})", result="float")
        >>> _ = defpartials(my_exp, lambda x, ans: ans)
        >>> dg.grad(lambda x: np.sum(my_exp(x)))(np.zeros(2))
        array([1., 1.])
    """
    def jvp(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        out_t = None
        for i, t in enumerate(tangents):
            if t is None:
                continue
            term = _scale(partials[i](*primals, ans), t)
            out_t = term if out_t is None else lax.add(out_t, term)
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

    return defrules(prim, jvp=jvp, vjp=vjp, partials=list(partials))


# --------------------------------------------------------------------------- by kind
# an elementwise op declared with partials (ops/elementwise.py) gets its JVP and VJP from them
for _prim in ew.ELEMENTWISE.values():
    if _prim.partials is not None:
        defpartials(_prim, *_prim.partials)


# --------------------------------------------------------------------------- written out
def _polygamma_jvp(primals, tangents, n):
    ans = ew.polygamma.bind(primals[0], n=n)
    t = tangents[0]
    return ans, None if t is None else lax.multiply(ew.polygamma.bind(primals[0], n=n + 1), t)


def _polygamma_vjp(g, primals, ans, n):
    x = primals[0]
    if not wants_cotangent(x):
        return (None,)
    return (unbroadcast(lax.multiply(ew.polygamma.bind(x, n=n + 1), g), x.aval),)


defrules(ew.polygamma, jvp=_polygamma_jvp, vjp=_polygamma_vjp)


# --------------------------------------------------------------------------- complex parts
# real, imag and conj are not holomorphic: their rules are written out, with JAX's
# conventions. A tangent is pushed forward as real(t), imag(t), conj(t); a cotangent is pulled
# back by the transposes for the bilinear pairing <a, b> = real(sum(a * b)) that every other
# rule here uses (the VJP of a holomorphic op multiplies by its derivative, unconjugated):
# real: g -> g + 0j, imag: g -> -1j * g, conj: g -> conj(g).
def _complex_part_rules(prim, push, pull):
    def jvp(primals, tangents):
        ans = prim.bind(primals[0])
        t = tangents[0]
        if t is None:
            return ans, None
        if t.dtype.kind != "c":  # a real tangent of a complex primal (a fill, say)
            t = lax.astype(t, primals[0].dtype)
        return ans, push(t)

    def vjp(g, primals, ans):
        x = primals[0]
        if not wants_cotangent(x):
            return (None,)
        return (lax.astype(pull(g), x.dtype),)

    defrules(prim, jvp=jvp, vjp=vjp)


_complex_part_rules(ew.real, lambda t: ew.real.bind(t), lambda g: g)
_complex_part_rules(ew.imag, lambda t: ew.imag.bind(t), lambda g: lax.multiply(g, -1j))
_complex_part_rules(ew.conj, lambda t: ew.conj.bind(t),
                    lambda g: ew.conj.bind(g) if g.dtype.kind == "c" else g)


def _abs_complex_factor(x, ans):
    """conj(x) / |x|, 0 where x == 0 (as JAX), and so is its own derivative (the HVP of
    abs at 0 is 0, as for real abs and the norms)."""
    zero = lax.equal(ans, 0)
    safe = lax.astype(lax.where(zero, 1.0, ans), x.dtype)
    return lax.where(zero, 0.0, lax.true_divide(ew.conj.bind(x), safe))


def _abs_complex_jvp(primals, tangents):
    x = primals[0]
    ans = ew.absolute.bind(x)
    t = tangents[0]
    if t is None:
        return ans, None
    return ans, ew.real.bind(lax.multiply(_abs_complex_factor(x, ans), t))


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


_with_complex_rule(ew.absolute, _abs_complex_jvp, _abs_complex_vjp)


# --------------------------------------------------------------------------- selection
def _where_jvp(primals, tangents, **params):
    c, x, y = primals
    ans = ew.where.bind(c, x, y)
    _, tx, ty = tangents
    if tx is None and ty is None:
        return ans, None
    out_t = lax.where(c, 0.0 if tx is None else tx, 0.0 if ty is None else ty)
    return ans, _fit_shape(out_t, ans)


def _where_vjp(g, primals, ans, **params):
    c, x, y = primals
    cx = unbroadcast(lax.where(c, g, 0.0), x.aval) if wants_cotangent(x) else None
    cy = unbroadcast(lax.where(c, 0.0, g), y.aval) if wants_cotangent(y) else None
    return None, cx, cy


defrules(ew.where, jvp=_where_jvp, vjp=_where_vjp)


# --------------------------------------------------------------------------- dtype and fills
def _convert_jvp(primals, tangents, dtype):
    ans = ew.convert_element_type.bind(primals[0], dtype=dtype)
    t = tangents[0]
    if t is None or np.dtype(dtype).kind not in "fc":
        return ans, None
    return ans, ew.convert_element_type.bind(t, dtype=dtype)


def _convert_vjp(g, primals, ans, dtype):
    x = primals[0]
    if not wants_cotangent(x):
        return (None,)
    if x.dtype.kind == "f" and np.dtype(g.dtype).kind == "c":
        g = ew.real.bind(g)  # a real value cast to complex: the real part (no ComplexWarning)
    return (ew.convert_element_type.bind(g, dtype=x.dtype),)


defrules(ew.convert_element_type, jvp=_convert_jvp, vjp=_convert_vjp)
defrules(ew.stop_gradient, jvp=lambda primals, tangents: (ew.stop_gradient.bind(primals[0]),
                                                          None),
         vjp=lambda g, primals, ans: (None,))

# ------------------------------------------------------------------ jets (forward Laplacian)
def _where_jet(eqn, values, jets, mode):
    c, x, y = values
    ans = ew.where.bind(c, x, y)
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


def _cast_jet(eqn, values, jets, mode):
    """Linear over the reals: applied to ``J`` and ``S`` (a real tangent of a complex
    value is made complex first, as the JVP rules do)."""
    def apply(x):
        if x is None:
            return None
        if eqn.prim in (ew.real, ew.imag, ew.conj) and x.dtype.kind != "c":
            x = lax.astype(x, values[0].dtype)
        out = eqn.prim.bind(x, **eqn.params)
        if eqn.outs[0].dtype.kind not in "fc":
            return None
        return out

    J, S = jets[0]
    return [(apply(J), apply(S))]


def _stop_jet(eqn, values, jets, mode):
    return [None]


def _polygamma_jet(eqn, values, jets, mode):
    x, n = values[0], eqn.params["n"]
    ans = ew.polygamma.bind(x, n=n)
    d1 = ew.polygamma.bind(x, n=n + 1)
    d2 = ew.polygamma.bind(x, n=n + 2)
    J, S = jets[0]
    Sy = lax.multiply(d2, mode.pair(J, J))
    if S is not None:
        Sy = lax.add(Sy, lax.multiply(d1, S))
    return [(lax.multiply(d1, J), laplacian_rules.fit(Sy, ((mode.size,) if mode.diag else ()) +
                                       tuple(ans.shape), ans.dtype))]


defrules(ew.where, laplacian=_where_jet)
for _prim in (ew.convert_element_type, ew.real, ew.imag, ew.conj):
    defrules(_prim, laplacian=_cast_jet)  # linear over the reals
defrules(ew.stop_gradient, laplacian=_stop_jet)
defrules(ew.polygamma, laplacian=_polygamma_jet)


# ------------------------------------------------------------------ sparsity patterns
# the other elementwise ops go by their flag: each operand pair may interact
for _prim in (ew.add, ew.subtract, ew.negative, ew.where, ew.real, ew.imag, ew.conj,
              ew.convert_element_type):
    defrules(_prim, sparsity=sparsity.linear_elementwise)
defrules(ew.multiply, sparsity=sparsity.bilinear_elementwise)
defrules(ew.true_divide, sparsity=sparsity.quotient_elementwise)
defrules(ew.stop_gradient, sparsity=sparsity.no_derivative)


# ------------------------------------------------------------------ Taylor mode (any order)
# the other elementwise ops go by their partials (Faà di Bruno) or the nested-JVP fallback
def _cast_coefficient(eqn, c, mode):
    """A cast or complex part of one coefficient (a real coefficient of a complex value
    made complex first, as the JVP rules do); None for a non-floating result."""
    if eqn.outs[0].dtype.kind not in "fc":
        return None
    if eqn.prim in (ew.real, ew.imag, ew.conj) and c.dtype.kind != "c":
        c = lax.astype(c, eqn.inputs[0].dtype)
    return eqn.prim.bind(c, **eqn.params)


defrules(ew.multiply, taylor=taylor.multilinear_rule)   # bilinear: a Cauchy product
defrules(ew.true_divide, taylor=taylor.divide_rule)
defrules(ew.power, taylor=taylor.power_rule)
for _prim, _step in ((ew.exp, taylor.exp_step), (ew.log, taylor.log_step),
                     (ew.log1p, taylor.log1p_step), (ew.sqrt, taylor.sqrt_step),
                     (ew.reciprocal, taylor.reciprocal_step), (ew.tan, taylor.tan_step)):
    defrules(_prim, taylor=taylor.unary_recurrence(_step))  # the op's ODE, O(K**2)
# the ODE's right-hand side at t = 0 from the declared partial: it cancels in the tails
for _prim, _rhs in ((ew.expm1, taylor.expm1_step), (ew.tanh, taylor.tanh_step),
                    (ew.logistic, taylor.logistic_step)):
    defrules(_prim, taylor=taylor.unary_recurrence(_rhs, first=True))
for _prim in (ew.sin, ew.cos, ew.sinh, ew.cosh):
    defrules(_prim, taylor=taylor.sin_cos_rule(_prim.name))
defrules(ew.where, taylor=taylor.where_rule)
for _prim in (ew.convert_element_type, ew.real, ew.imag, ew.conj):
    defrules(_prim, taylor=taylor.coefficientwise(_cast_coefficient))  # linear over the reals
defrules(ew.stop_gradient, taylor=taylor.stop_rule)
defrules(ew.polygamma, taylor=taylor.unary_derivatives_rule(
    lambda x, m, eqn: ew.polygamma.bind(x, n=eqn.params["n"] + m)))
