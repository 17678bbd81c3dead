"""What a program run as one block makes of each equation: the one classification the tiny
CUDA kernel (:mod:`dualgpu.codegen.tiny`) and the host interpreter
(:mod:`dualgpu.codegen.interpreter`) share, and the refusal both raise.
"""
from __future__ import annotations

import numpy as np

from ..core.flags import Flag
from ..core.indexing import key_to_source
from ..core.ir import Var
from ..fusion import is_reduction, is_reshape


class Refused(Exception):
    """The program has no one-block form (the message says why)."""


def equation_form(eqn, check_value, what: str = "tiny") -> str:
    """What a one-block program makes of ``eqn`` (the tiny kernel's and the host
    interpreter's one classification): ``"permute"``, ``"broadcast"`` or ``"index"`` (a
    view of its input), ``"reshape"``, ``"matmul"``, ``"einsum"``, ``"concat"``, ``"reduce"``
    or ``"elementwise"``; raises :class:`Refused` for anything else. ``check_value(v)``
    raises :class:`Refused` for a value the caller does not hold (its dtype, its size);
    ``what`` names the caller's form in the refusal.

    Example::

        >>> g = dg.trace(lambda x: np.sum(np.sin(x).T), np.ones((2, 3)))
        >>> [equation_form(e, lambda v: None) for e in g.eqns]
        ['elementwise', 'permute', 'reduce']
    """
    prim = eqn.prim
    if prim.multiple_results or len(eqn.outs) != 1:
        raise Refused(f"{prim.name} has several results")
    out = eqn.outs[0]
    check_value(out)
    ins = [a for a in eqn.inputs if isinstance(a, Var)]
    for a in ins:
        check_value(a)
    elementwise = prim.has(Flag.ELEMENTWISE) and not is_reshape(prim)
    if len(ins) != len(eqn.inputs) and not elementwise:
        raise Refused(f"{prim.name} of a literal")
    view, form = prim.lowering("view"), prim.lowering("tiny")
    if view in ("permute", "broadcast") or (view == "index" and len(ins) == 1):
        return view
    if is_reshape(prim):
        return "reshape"
    if form == "matmul":
        if len({np.dtype(a.dtype) for a in ins + [out]}) != 1 or out.dtype.kind != "f":
            raise Refused(f"{prim.name} of mixed or non-float dtypes")
        return "matmul"
    if form == "einsum":
        if out.dtype.kind == "b":
            raise Refused(f"{prim.name} of bools")
        return "einsum"
    if form == "concat":
        return "concat"
    if is_reduction(prim):
        return "reduce"
    if elementwise:
        return "elementwise"
    raise Refused(f"{prim.name} has no {what} form")


def view_strides(eqn, view: str, off: int, strides: tuple) -> tuple[int, tuple]:
    """Offset and strides (in elements) of the output of ``eqn``, a view of the form
    ``view`` (:func:`equation_form`'s ``"permute"``, ``"broadcast"`` or ``"index"``), over
    the memory its input reads at ``off`` with ``strides``; an axis of length 1 gets stride
    0. Raises :class:`Refused` for a getitem that is no view.

    Example::

        >>> eqn = dg.trace(lambda x: x[1:, ::2], np.ones((3, 4))).eqns[0]
        >>> view_strides(eqn, "index", 0, (4, 1))
        (4, (4, 2))
    """
    x, out = eqn.inputs[0], eqn.outs[0]
    if view == "permute":
        new = tuple(strides[p] for p in eqn.params["perm"])
    elif view == "broadcast":
        lead = out.ndim - x.ndim
        new = (0,) * lead + tuple(0 if n == 1 else s for n, s in zip(x.shape, strides))
    else:
        off, new = _getitem_view(eqn.params["key"], x.shape, off, strides)
        if len(new) != out.ndim:
            raise Refused(f"getitem [{key_to_source(eqn.params['key'], [])}]")
    return off, tuple(0 if n == 1 else s for n, s in zip(out.shape, new))


def _getitem_view(key, shape, off: int, strides) -> tuple[int, tuple]:
    """Offset and strides of ``x[key]`` (static slices, integers, new axes)."""
    axis, new = 0, []
    for e in key:
        if e is None:
            new.append(0)
            continue
        if e[0] == "int":
            off += (e[1] + (shape[axis] if e[1] < 0 else 0)) * strides[axis]
        elif e[0] == "slice":
            start, _, step = slice(e[1], e[2], e[3]).indices(shape[axis])
            off += start * strides[axis]
            new.append(strides[axis] * step)
        else:
            raise Refused("getitem with an index array")
        axis += 1
    return off, tuple(new) + tuple(strides[axis:])
