"""Helpers of the derivative rules, written in registry ops: unbroadcasting cotangents,
adding symbolic zeros, and which primals get a cotangent."""
from __future__ import annotations

import contextlib
import contextvars

import numpy as np

from .. import lax
from ..core.dtypes import is_float
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import defrules
from ..core.trace import Tracer

# the ops this module's helpers equip belong to the block that calls them (op.sites)
RULE_KIT = True


def unbroadcast(g, aval: Aval):
    """Sum ``g`` down to ``aval``'s shape (undoing NumPy broadcasting) and cast to its dtype."""
    if g is None:
        return None
    shape = tuple(aval.shape)
    gshape = tuple(np.shape(g))
    if gshape != shape:
        lead = len(gshape) - len(shape)
        axes = tuple(range(lead)) + tuple(
            lead + i for i, s in enumerate(shape) if s == 1 and gshape[lead + i] != 1)
        if axes:
            g = lax.sum(g, axis=axes)
        if tuple(np.shape(g)) != shape:
            g = lax.reshape(g, shape)
    dt = getattr(g, "dtype", None)
    if dt is not None and dt.kind == "c" and aval.dtype.kind == "f":
        # the cotangent of a real value under a complex op: its real part (JAX's rule)
        g = lax.real(g)
        dt = g.dtype
    if dt is not None and dt != aval.dtype and is_float(aval.dtype):
        g = lax.astype(g, aval.dtype)
    return g


# the primals of the equation being transposed that depend on no differentiated input (a
# closed-over constant read as a traced value, an argument not in argnums): no cotangent
_INACTIVE: contextvars.ContextVar[frozenset] = contextvars.ContextVar("inactive",
                                                                     default=frozenset())


@contextlib.contextmanager
def inactive_primals(values):
    """While a VJP rule runs: ``values`` (its primals that depend on no differentiated input)
    want no cotangent (:func:`wants_cotangent` is False for them)."""
    token = _INACTIVE.set(frozenset(id(v) for v in values))
    try:
        yield
    finally:
        _INACTIVE.reset(token)


def wants_cotangent(x) -> bool:
    """True for a traced floating-point primal that depends on a differentiated input: the
    only kind a VJP rule gives a cotangent."""
    return isinstance(x, Tracer) and x.dtype.kind in "fc" and id(x) not in _INACTIVE.get()


def add_any(a, b):
    """Add two cotangents or tangents, either of which may be a symbolic zero (None)."""
    if a is None:
        return b
    if b is None:
        return a
    return lax.add(a, b)


def deflinear(prim, transpose):
    """Rules of an op linear in its first operand (later operands, index arrays say, are
    constants): the JVP applies the op to the tangent, the VJP is
    ``transpose(g, *primals, **params)``, the cotangent of the first operand.

    Marks the op :data:`~dualgpu.core.flags.Flag.LINEAR`, which is how the interpreters
    recognise it.

    Example: ``deflinear(reshape, lambda g, x, new_shape: reshape.bind(g, new_shape=x.shape))``.
    """
    prim.add_flags(Flag.LINEAR)

    def jvp(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        t = tangents[0]
        return ans, None if t is None else prim.bind(t, *primals[1:], **params)

    def vjp(g, primals, ans, **params):
        return (transpose(g, *primals, **params),) + (None,) * (len(primals) - 1)

    return defrules(prim, jvp=jvp, vjp=vjp)


def defmultilinear(prim, vjp, linear=(0, 1)):
    """Rules of an op linear in each of the operands at positions ``linear`` separately
    (matmul, einsum, the sparse products): the JVP is the sum over those operands of the op
    with one operand replaced by its tangent; ``vjp`` gives the transposes.

    Marks the op :data:`~dualgpu.core.flags.Flag.MULTILINEAR` (with ``linear`` as its
    ``linear_operands``), which is how the interpreters recognise a product.

    Example: ``defmultilinear(matmul, _matmul_vjp)``.
    """
    prim.add_flags(Flag.MULTILINEAR)
    prim.linear_operands = None if linear is None else tuple(linear)
    def jvp(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        out = None
        positions = range(len(primals)) if linear is None else linear
        for i in positions:
            t = tangents[i]
            if t is None:
                continue
            ops = list(primals)
            ops[i] = t
            out = add_any(out, prim.bind(*ops, **params))
        return ans, out

    return defrules(prim, jvp=jvp, vjp=vjp)
