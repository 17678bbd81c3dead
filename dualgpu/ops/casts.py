"""The elementwise ops that change a value's type rather than compute with it, one block
each: the complex parts ``real``, ``imag`` and ``conj`` (not holomorphic: their rules are
written out), ``convert_element_type`` (``astype``), ``stop_gradient`` (the value, with no
derivative) and ``fill_like`` (an array of one value, shaped like its operand). All are
linear over the reals, which is how the forward Laplacian, Taylor mode and the sparsity
patterns treat them.

>>> import numpy as np
>>> from dualgpu.ops.casts import convert_element_type
>>> convert_element_type(np.array([1.5, 2.5]), dtype="int64")
array([1, 2])
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.dtypes import real_dtype
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import defrules
from ..errors import DualgpuError
from ..rules import sparsity_rules as sparsity
from ..rules import taylor_rules as taylor
from ..rules.common import wants_cotangent
from ..rules.elementwise_rules import elementwise

# --------------------------------------------------------------------------- complex parts
# real, imag and conj of complex values; on real values lax returns x, zeros and x
# without binding these, so they see complex inputs only.


def _cast_jet(eqn, values, jets, mode):
    """Linear over the reals: applied to ``J`` and ``S`` (a real tangent of a complex
    value is made complex first, as the JVP rules do)."""
    def apply(x):
        if x is None:
            return None
        if eqn.prim in (real, imag, conj) and x.dtype.kind != "c":
            x = lax.astype(x, values[0].dtype)
        out = eqn.prim.bind(x, **eqn.params)
        if eqn.outs[0].dtype.kind not in "fc":
            return None
        return out

    J, S = jets[0]
    return [(apply(J), apply(S))]


def _cast_coefficient(eqn, c, mode):
    """A cast or complex part of one coefficient (a real coefficient of a complex value
    made complex first, as the JVP rules do); None for a non-floating result."""
    if eqn.outs[0].dtype.kind not in "fc":
        return None
    if eqn.prim in (real, imag, conj) and c.dtype.kind != "c":
        c = lax.astype(c, eqn.inputs[0].dtype)
    return eqn.prim.bind(c, **eqn.params)


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


_complex_part_rules(real, lambda t: real.bind(t), lambda g: g)
_complex_part_rules(imag, lambda t: imag.bind(t), lambda g: g * -1j)
_complex_part_rules(conj, lambda t: conj.bind(t),
                    lambda g: conj.bind(g) if g.dtype.kind == "c" else g)


for _prim in (real, imag, conj):  # linear over the reals
    defrules(_prim, laplacian=_cast_jet, sparsity=sparsity.linear_elementwise,
             taylor=taylor.coefficientwise(_cast_coefficient))


# --------------------------------------------------------------------------- dtype and fills


def _convert_shape(avals, dtype):
    return Aval(tuple(avals[0].shape), np.dtype(dtype))


convert_element_type = elementwise(
    "convert_element_type", None, 1, c="(({dtype}){0})", py="{0}.astype(xp.{dtype})",
    impl=lambda xp, x, dtype: xp.asarray(x).astype(dtype), abstract_eval=_convert_shape,
    flags=(Flag.CASTS,))


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
    if x.dtype.kind == "f" and np.dtype(g.dtype).kind == "c":
        g = real.bind(g)  # a real value cast to complex: the real part (no ComplexWarning)
    return (convert_element_type.bind(g, dtype=x.dtype),)


defrules(convert_element_type, jvp=_convert_jvp, vjp=_convert_vjp, laplacian=_cast_jet,
         sparsity=sparsity.linear_elementwise,  # linear over the reals
         taylor=taylor.coefficientwise(_cast_coefficient))


stop_gradient = elementwise(
    "stop_gradient", None, 1, c="{0}", py="{0}", impl=lambda xp, x: x,
    abstract_eval=lambda avals: avals[0], flags=(Flag.VIEW, Flag.SELECTS), differentiable=False)


def _stop_jet(eqn, values, jets, mode):
    return [None]


defrules(stop_gradient, jvp=lambda primals, tangents: (stop_gradient.bind(primals[0]), None),
         vjp=lambda g, primals, ans: (None,), laplacian=_stop_jet,
         sparsity=sparsity.no_derivative, taylor=taylor.stop_rule)



def _fill_shape(avals, value):
    a = avals[0]
    return Aval(tuple(a.shape), a.dtype)


fill_like = elementwise(
    "fill_like", None, 1, c="{value}", py="xp.full_like({0}, {value})",
    impl=lambda xp, x, value: xp.full_like(x, value), abstract_eval=_fill_shape,
    differentiable=False, flags=(Flag.IGNORES_VALUES,),
    doc="An array shaped and typed like x, every element equal to value (x's values are "
        "not read).")

