"""The C source shared by the kernel generators (the region kernels of :mod:`.cuda`, the
tiny kernel of :mod:`.tiny`, the host regions of :mod:`.host_regions`, the product kernels
of :mod:`.products`): C types, an equation's C expression, reduction identities and
combiners, names made unique, strides.

Example::

    >>> ctype(np.float32), combine("sum", "a", "b"), contiguous_strides((2, 3))
    ('float', '(a + b)', (3, 1))
"""
from __future__ import annotations

import hashlib
from string import Formatter

import numpy as np

from ..base import names as naming
from ..core import encode
from ..core.dtypes import promote
from ..core.flags import Flag
from ..core.ir import Literal
from ..errors import CodegenSafetyError
from ..fusion import reads_no_values

c_literal = encode.c_literal


def ctype(dtype) -> str:
    """The C type of a NumPy dtype (kernel dtypes only)."""
    return encode.c_type(dtype)


def identity_of(op: str, dtype) -> str:
    dt = np.dtype(dtype)
    if op == "sum":
        return c_literal(0, dt)
    if op == "prod":
        return c_literal(1, dt)
    if dt.kind == "f":
        return c_literal(-np.inf if op == "max" else np.inf, dt)
    if dt.kind == "b":
        return c_literal(op == "min", dt)
    info = np.iinfo(dt)
    return c_literal(info.min if op == "max" else info.max, dt)


def combine(op: str, a: str, b: str) -> str:
    if op == "sum":
        return f"({a} + {b})"
    if op == "prod":
        return f"({a} * {b})"
    cmp = ">" if op == "max" else "<"
    # NaN wins, as in NumPy's max/min
    return f"((({b}) {cmp} ({a}) || ({b}) != ({b})) ? ({b}) : ({a}))"


def contiguous_strides(shape) -> tuple:
    strides, acc = [], 1
    for s in reversed(tuple(shape)):
        strides.append(acc if s != 1 else 0)
        acc *= s
    return tuple(reversed(strides))


def array_strides(a) -> tuple:
    """The element strides of a NumPy or CuPy array as kernels are specialised on them
    (0 for axes of size 1).

    >>> array_strides(np.ones((3, 1, 4))[:, :, ::2])
    (4, 0, 2)
    """
    return tuple(0 if n == 1 else s // a.itemsize for n, s in zip(a.shape, a.strides))


def named(template: str, prefix: str) -> tuple[str, str]:
    digest = hashlib.sha1(template.encode()).hexdigest()[:16]
    name = naming.kernel_name(prefix, digest)
    return name, template.replace("@KERNEL@", name)


def indent(lines: list) -> list:
    return ["  " + ln for ln in lines]


def compute_dtype(eqn) -> np.dtype:
    """The dtype an elementwise equation's C form computes in (a comparison computes in its
    operands' promoted type; an op with a condition operand, ``where``, and a cast in their
    output's)."""
    out = eqn.outs[0]
    if eqn.prim.has(Flag.CONDITION):
        return np.dtype(out.dtype)
    if out.dtype.kind == "b" and not eqn.prim.has(Flag.CASTS):
        return promote([a.aval for a in eqn.inputs])
    return np.dtype(out.dtype)


def eqn_c_expr(eqn, operands: list) -> str:
    """The C expression of the elementwise equation ``eqn`` (its op's C template), given the
    C expression of each of its inputs (``operands[i]`` for ``eqn.inputs[i]``; unused for
    literals and for ops that read no values); each operand is cast to the dtype the
    template reads. The one place kernel expressions are written: the region kernels and
    the tiny-program kernels (:mod:`dualgpu.codegen.tiny`) both call it.

    Example::

        >>> g = dg.trace(lambda x: np.exp(x) * 2.0, np.ones(3, np.float32))
        >>> e0, e1 = g.eqns
        >>> eqn_c_expr(e1, [eqn_c_expr(e0, ["x[i]"]), None])
        '(exp(x[i]) * 2.0f)'
    """
    comp = compute_dtype(eqn)
    template = eqn.prim.c_for(comp)
    return template.format(*_c_args(eqn, operands, comp), **_c_params(eqn, template, comp))


def _c_args(eqn, operands: list, comp) -> list:
    """The C operands of ``eqn``'s template, each cast to the dtype the template reads."""
    prim = eqn.prim
    args = []
    for pos, a in enumerate(eqn.inputs):
        if reads_no_values(prim):
            args.append("")
            continue
        want = np.dtype(bool) if (pos == 0 and prim.has(Flag.CONDITION)) else comp
        if prim.has(Flag.CASTS):  # its C form casts the operand itself
            want = a.dtype
        if isinstance(a, Literal):
            args.append(c_literal(a.value, want))
            continue
        s = operands[pos]
        if np.dtype(a.dtype) != want and not prim.has(Flag.VIEW):
            s = f"(({ctype(want)}){s})"
        args.append(s)
    return args


def _c_params(eqn, template: str, comp) -> dict:
    """The parameters the C template prints: every one through the encoder, as a C type
    or a number (values are data, never code)."""
    name = eqn.prim.name
    encode.check_params(name, eqn.params)
    params = {}
    for p in {f for _, f, _, _ in Formatter().parse(template) if f and not f.isdigit()}:
        if p == "T" and template is eqn.prim.c_int:  # the C type of an integer form
            params[p] = ctype(comp)
        elif p not in eqn.params:
            raise CodegenSafetyError(f"{name}: the C template uses {{{p}}}, which is "
                                     "not a parameter of the equation")
        elif p == "dtype":
            params[p] = encode.c_type(eqn.params[p], f"{name}: parameter 'dtype'")
        else:
            params[p] = encode.c_param(name, p, eqn.params[p],
                                  eqn.outs[0].dtype if p == "value" else comp)
    return params


def reshape_strides(shape, strides, new_shape) -> tuple | None:
    """Strides of ``x.reshape(new_shape)`` over ``x``'s memory, or None when that is not a
    view (NumPy's no-copy reshape rule)."""
    old = [(n, s) for n, s in zip(shape, strides) if n != 1]
    new_shape = tuple(new_shape)
    out = [0] * len(new_shape)
    ni = oi = 0
    while ni < len(new_shape) and oi < len(old):
        np_, op = new_shape[ni], old[oi][0]
        nj, oj = ni + 1, oi + 1
        while np_ != op:
            if np_ < op:
                np_ *= new_shape[nj]
                nj += 1
            else:
                op *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        out[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            out[k - 1] = out[k] * new_shape[k]
        ni, oi = nj, oj
    return tuple(0 if n == 1 else s for n, s in zip(new_shape, out))
