"""A tiny program run by the prebuilt interpreter (:mod:`dualgpu.codegen.interp_lib`): the
program is data, so no call compiles (``dg.config["host_interpreter"]``, see docs/api.md).

:func:`interpreted_program` encodes a graph as a tape of instructions (integers: opcodes,
shapes, slots, offsets and strides) and a pool of ``double`` constants; every number goes
through this one encoder and nothing user-given becomes text. It covers what the tiny
kernel (:mod:`dualgpu.codegen.tiny`) covers, in ``float64``, ``float32`` and ``bool``:

* views (transposes, broadcasts, reshapes that keep the memory order, static getitems) are
  no instruction: new strides over the memory of the value they view, as in the kernel;
* an elementwise op of the built-in ops' table, a cast, a fill, a concatenation and a
  reshape that is no view are ``EW`` instructions; a matmul, an einsum of one or two
  operands and a reduction (sum, prod, max, min) are ``RED`` instructions;
* every value lives in a workspace of the call, the program's outputs are copied into fresh
  C-contiguous arrays at the end.

Anything else (another dtype, an op outside the table, a gather, a program whose work passes
:data:`INTERP_WORK_MAX` element steps, where NumPy's vectorised calls win) makes
:func:`interpreted_program` return None when the program is built: the program then runs
as Python, so a cached call and a fresh build always take the same path.

Example::

    >>> g = dg.trace(lambda w, x: np.sum(np.tanh(x @ w) ** 2), np.ones((3, 2)), np.ones((4, 3)))
    >>> prog = interpreted_program(g)      # None where no compiler is found
    >>> prog is None or np.allclose(prog(np.ones((3, 2)), np.ones((4, 3)))[0],
    ...                             8 * np.tanh(3.0) ** 2)
    True
    >>> print(prog.note.strip() if prog else "# host interpreter: 5 instructions ...")
    # host interpreter: 5 instructions ...
"""
from __future__ import annotations

from math import prod

import numpy as np

from ..core.flags import Flag
from ..core.ir import Graph, Literal, Var
from .c_source import array_strides, compute_dtype, contiguous_strides, reshape_strides
from .interp_lib import (
    DIVIDE,
    DTYPE_CODES,
    EW,
    FAILED,
    INVALID,
    MAXD,
    MONOIDS,
    OVER,
    REC,
    RED,
    interpreter_library,
    op_table,
)
from .one_block import Refused, equation_form, view_strides
from .python import compile_python

INTERP_WORK_MAX = 1 << 14   # element steps of a whole program (elementwise and folds)
VALUE_MAX = 1 << 14         # elements of any one value
SLOTS_MAX = 250             # arrays and constants of one program (the library's slots)
EQNS_MAX = 1024             # longer programs run as Python (as the tiny kernel's bound)


def _code(dtype) -> int:
    code = DTYPE_CODES.get(np.dtype(dtype))
    if code is None or not np.dtype(dtype).isnative:
        raise Refused(f"dtype {dtype}")
    return code


class _Encoder:
    """Places every value (slot, dtype code, element offset, strides) and writes the
    instructions."""

    def __init__(self, graph: Graph, consts: list):
        self.graph = graph
        n_in, n_out = len(graph.inputs), len(graph.outputs)
        if n_in + n_out + len(consts) + 2 > SLOTS_MAX:
            raise Refused("too many arrays")
        if len(graph.eqns) > EQNS_MAX:
            raise Refused(f"more than {EQNS_MAX} equations")
        self.pool_slot = n_in + n_out + len(consts)
        self.work_slot = self.pool_slot + 1
        self.layout: dict = {}   # var id -> (slot, code, offset, strides)
        self.work_bytes = 0
        self.work = 0
        self.pool: list = []
        self.instrs: list = []
        self.checked: set = set()
        for k, v in enumerate(graph.inputs):
            self._check(v)
            self.layout[v.id] = (k, _code(v.dtype), 0, contiguous_strides(v.shape))
        for k, (c, value) in enumerate(zip(graph.consts, consts)):
            self._check(c)
            self.layout[c.id] = (n_in + n_out + k, _code(c.dtype), 0, array_strides(value))
        for eqn in graph.eqns:
            self._add(eqn)
        for k, a in enumerate(graph.outputs):
            dst = (n_in + k, _code(a.dtype), 0, contiguous_strides(a.shape))
            src = self._literal(a.value, a.dtype) if isinstance(a, Literal) else \
                self.layout[a.id]
            self._ew(0, _code(a.dtype), a.shape, dst, [src])

    def _check(self, v):
        if v.id in self.checked:
            return
        _code(v.dtype)
        size = prod(v.shape)
        if size == 0 or size > VALUE_MAX:
            raise Refused(f"a value of {size} elements")
        if len(v.shape) > MAXD:
            raise Refused(f"a value of {len(v.shape)} axes")
        self.checked.add(v.id)

    def _buffer(self, v) -> tuple:
        """A new C-contiguous buffer of the workspace for ``v``."""
        itemsize = np.dtype(v.dtype).itemsize
        off = self.work_bytes // itemsize
        self.work_bytes += -(-prod(v.shape) * itemsize // 8) * 8
        return (self.work_slot, _code(v.dtype), off, contiguous_strides(v.shape))

    def _literal(self, value, dtype) -> tuple:
        """A pool entry holding ``value`` as ``dtype`` would (read with strides 0)."""
        arr = np.asarray(value)
        if arr.size != 1 or arr.dtype.kind not in "biuf":
            raise Refused("a literal that is not a real number")
        self.pool.append(float(np.asarray(value, dtype=np.dtype(dtype))))
        return (self.pool_slot, DTYPE_CODES[np.dtype(np.float64)], len(self.pool) - 1, ())

    # ------------------------------------------------------------------ equations
    def _add(self, eqn):
        prim = eqn.prim
        form = equation_form(eqn, self._check, "interpreted")
        out = eqn.outs[0]
        if form in ("permute", "broadcast", "index"):
            self.layout[out.id] = self._view(eqn, form)
        elif form == "reshape":
            self._reshape(eqn)
        elif form == "matmul":
            self._matmul(eqn)
        elif form == "einsum":
            if sum(isinstance(a, Var) for a in eqn.inputs) > 2:
                raise Refused(f"{prim.name} of more than two operands")
            self._einsum(eqn)
        elif form == "concat":
            self._concat(eqn)
        elif form == "reduce":
            if prim.monoid not in MONOIDS:
                raise Refused(f"{prim.name} has no interpreted form")
            if prim.monoid in ("sum", "prod") and out.dtype.kind != "f":
                raise Refused(f"{prim.name} of bools")
            self._reduce(eqn)
        else:   # an op of the table (dtypes checked above), a cast or a fill
            self._elementwise(eqn)

    def _view(self, eqn, view: str) -> tuple:
        slot, code, off, st = self.layout[eqn.inputs[0].id]
        return (slot, code) + view_strides(eqn, view, off, st)

    def _reshape(self, eqn):
        x, out = eqn.inputs[0], eqn.outs[0]
        slot, code, off, st = self.layout[x.id]
        new = reshape_strides(x.shape, st, out.shape)
        if new is not None:
            self.layout[out.id] = (slot, code, off, new)
            return
        dst = self._buffer(out)   # copied in C order, then read with the new shape
        self._ew(0, code, x.shape, dst[:3] + (contiguous_strides(x.shape),),
                 [self.layout[x.id]])
        self.layout[out.id] = dst

    def _elementwise(self, eqn):
        out = eqn.outs[0]
        prim = eqn.prim
        if prim.name == "convert_element_type":
            (x,) = eqn.inputs
            src = self._literal(x.value, x.dtype) if isinstance(x, Literal) else \
                self._operand(x, out.shape)
            dst = self._buffer(out)
            self._ew(0, _code(x.dtype), out.shape, dst, [src])
            self.layout[out.id] = dst
            return
        if prim.name == "fill_like":
            dst = self._buffer(out)
            self._ew(0, _code(out.dtype), out.shape, dst,
                     [self._literal(eqn.params["value"], out.dtype)])
            self.layout[out.id] = dst
            return
        comp = compute_dtype(eqn)
        entry = op_table().get((prim.name, DTYPE_CODES.get(np.dtype(comp))))
        if entry is None or entry[1] is not prim or eqn.params:
            raise Refused(f"{prim.name} in {comp} is not in the interpreter's table")
        srcs = [self._literal(a.value, bool if (k == 0 and prim.has(Flag.CONDITION)) else comp)
                if isinstance(a, Literal) else self._operand(a, out.shape)
                for k, a in enumerate(eqn.inputs)]
        if not 1 <= len(srcs) <= 3:
            raise Refused(f"{prim.name} of {len(srcs)} operands")
        dst = self._buffer(out)
        self._ew(entry[0], _code(comp), out.shape, dst, srcs)
        self.layout[out.id] = dst

    def _operand(self, a, shape) -> tuple:
        """``a``'s layout broadcast against the index space ``shape``."""
        slot, code, off, st = self.layout[a.id]
        lead = len(shape) - a.ndim
        return (slot, code, off, (0,) * lead + tuple(0 if n == 1 else s
                                                      for n, s in zip(a.shape, st)))

    def _concat(self, eqn):
        out = eqn.outs[0]
        axis = eqn.params["axis"]
        dst = self._buffer(out)
        slot, code, off, st = dst
        start = 0
        for a in eqn.inputs:
            self._ew(0, code, a.shape, (slot, code, off + start * st[axis], st),
                     [self.layout[a.id]])
            start += a.shape[axis]
        self.layout[out.id] = dst

    def _matmul(self, eqn):
        a, b = eqn.inputs
        out = eqn.outs[0]
        sa, sb = self._operand(a, a.shape)[3], self._operand(b, b.shape)[3]
        nb = out.ndim - (a.ndim > 1) - (b.ndim > 1)   # batch axes of the output
        a_out = _lead(sa[:-2], nb) if a.ndim > 1 else ()
        b_out = _lead(sb[:-2], nb) if b.ndim > 1 else ()
        a_out = a_out or (0,) * nb
        b_out = b_out or (0,) * nb
        if a.ndim > 1:
            a_out, b_out = a_out + (sa[-2],), b_out + (0,)
        if b.ndim > 1:
            a_out, b_out = a_out + (0,), b_out + (sb[-1],)
        k_a = sa[-1]
        k_b = sb[0] if b.ndim == 1 else sb[-2]
        self._red(eqn, out.shape, (a.shape[-1],), [(a, a_out, (k_a,)), (b, b_out, (k_b,))],
                  "sum")

    def _einsum(self, eqn):
        ins, outs = eqn.params["spec"].split("->")
        sizes: dict = {}
        for spec, a in zip(ins.split(","), eqn.inputs):
            for c, n in zip(spec, a.shape):
                sizes[c] = max(sizes.get(c, 1), n)
        contracted = [c for c in sizes if c not in outs]
        ops = []
        for spec, a in zip(ins.split(","), eqn.inputs):
            st = self.layout[a.id][3]
            by = {}
            for c, n, s in zip(spec, a.shape, st):
                by[c] = by.get(c, 0) + (0 if n == 1 else s)   # a repeated letter: diagonal
            ops.append((a, tuple(by.get(c, 0) for c in outs),
                        tuple(by.get(c, 0) for c in contracted)))
        self._red(eqn, eqn.outs[0].shape, tuple(sizes[c] for c in contracted), ops, "sum")

    def _reduce(self, eqn):
        x, out = eqn.inputs[0], eqn.outs[0]
        axes = tuple(eqn.params["axes"])
        st = self.layout[x.id][3]
        kept = tuple(s for j, s in enumerate(st) if j not in axes)
        red = tuple(st[j] for j in axes)
        self._red(eqn, out.shape, tuple(x.shape[j] for j in axes), [(x, kept, red)],
                  eqn.prim.monoid)

    # ------------------------------------------------------------------ instructions
    def _ew(self, opcode: int, comp: int, shape, dst: tuple, srcs: list):
        rec = [EW, opcode, comp, len(srcs), len(shape), *_pad(shape)]
        for slot, code, off, st in [dst, *srcs]:
            rec += [slot, code, off, *_pad(st)]
        self.work += prod(shape)
        self.instrs.append(_pad(rec, REC))

    def _red(self, eqn, shape, rshape, ops: list, monoid: str):
        out = eqn.outs[0]
        if len(shape) > MAXD or len(rshape) > MAXD:
            raise Refused("an index space of too many axes")
        dst = self._buffer(out)
        rec = [RED, MONOIDS[monoid], _code(out.dtype), len(ops), len(shape), *_pad(shape),
               len(rshape), *_pad(rshape), dst[0], dst[1], dst[2], *_pad(dst[3])]
        for a, st, rst in ops + ops[:1] * (2 - len(ops)):
            slot, code, off, _ = self.layout[a.id]
            rec += [slot, code, off, *_pad(st), *_pad(rst)]
        self.work += prod(shape) * prod(rshape)
        self.instrs.append(_pad(rec, REC))
        self.layout[out.id] = dst


def _pad(seq, n: int = MAXD) -> list:
    seq = [int(s) for s in seq]
    if len(seq) > n:
        raise Refused("an index space of too many axes")
    return seq + [0] * (n - len(seq))


def _lead(strides: tuple, n: int) -> tuple:
    """Batch strides broadcast to ``n`` leading axes."""
    return (0,) * (n - len(strides)) + tuple(strides)


class InterpretedProgram:
    """A tiny program run by the prebuilt interpreter: ``prog(*inputs) -> list of arrays``
    (fresh, C-contiguous, of the graph's output shapes and dtypes). Inputs of another dtype
    or layout are copied first; closed-over constants are read in place. ``source`` lists
    the instructions."""

    def __init__(self, enc: _Encoder, consts: list, lib):
        graph = enc.graph
        self._in_dtypes = [np.dtype(v.dtype) for v in graph.inputs]
        self._out_specs = [(tuple(a.shape), np.dtype(a.dtype)) for a in graph.outputs]
        self._consts = consts        # kept alive: the tape holds their data pointers
        head = [len(enc.instrs), enc.work_bytes, len(graph.inputs) + len(graph.outputs),
                len(consts), *[c.ctypes.data for c in consts]]
        self._tape = np.concatenate([np.array(head, np.int64),
                                     np.array(enc.instrs, np.int64).reshape(-1)])
        self._pool = np.array(enc.pool or [0.0], np.float64)
        self._tape_ptr, self._pool_ptr = self._tape.ctypes.data, self._pool.ctypes.data
        self._fn = lib.dg_interp_run
        self.instructions = len(enc.instrs)
        self.work = enc.work
        self.graph = graph
        self._python = None
        self.note = (f"# host interpreter: {len(enc.instrs)} instructions run by the "
                     "prebuilt interpreter (dg.config['host_interpreter'])\n")

    def __call__(self, *arrays) -> list:
        if len(arrays) != len(self._in_dtypes):
            raise TypeError(f"the program takes {len(self._in_dtypes)} arrays, "
                            f"got {len(arrays)}")
        for a, dt in zip(arrays, self._in_dtypes):
            if type(a) is not np.ndarray or a.dtype != dt or not a.flags.c_contiguous or \
                    not a.flags.aligned:
                arrays = tuple(np.array(a, dtype=dt, order="C")   # copies: aligned, dense
                               for a, dt in zip(arrays, self._in_dtypes))
                break
        outs = tuple([np.empty(shape, dt) for shape, dt in self._out_specs])
        objs = arrays + outs      # alive through the call: the library reads its items
        rc = self._fn(self._tape_ptr, self._pool_ptr, id(objs))
        if rc:
            if rc & FAILED:
                raise MemoryError("the tiny-program interpreter could not allocate its "
                                  "workspace")
            if rc & (DIVIDE | OVER | INVALID) or np.geterr()["under"] != "ignore":
                # an inf or NaN on the way: the Python program, whose NumPy calls warn or
                # raise as np.errstate says (the same choice for every call of these inputs)
                return self.python()(*arrays)
        return list(outs)

    def python(self):
        """The generated Python program of the graph (made when first asked)."""
        fn = self._python
        if fn is None:
            fn = self._python = compile_python(self.graph, np, arrays=True)
        return fn

    @property
    def source(self) -> str:
        """The generated Python program's text (which runs where the interpreter's run
        raises a floating-point exception), and a last line saying what runs."""
        return self.python().__dualgpu_source__ + self.note


def _const_arrays(graph: Graph) -> list | None:
    consts = []
    for c in graph.consts:
        value = c.value
        if type(value) is not np.ndarray or value.dtype != np.dtype(c.dtype) or \
                not value.flags.aligned or any(s % value.itemsize for s in value.strides):
            return None
        consts.append(value)
    return consts


def interpreted_refusal(graph: Graph) -> str | None:
    """Why the interpreter does not run ``graph`` (None: it does, given a compiler).

    Example::

        >>> interpreted_refusal(dg.trace(lambda x: np.cumsum(x), np.ones(3)))
        'cumsum has no interpreted form'
        >>> interpreted_refusal(dg.trace(lambda x: np.sin(x), np.ones(3))) is None
        True
    """
    consts = _const_arrays(graph)
    if consts is None:
        return "a closed-over constant that is not an aligned NumPy array"
    try:
        enc = _Encoder(graph, consts)
    except Refused as e:
        return str(e)
    if enc.work > INTERP_WORK_MAX:
        return f"{enc.work} element steps"
    return None


def interpreted_program(graph: Graph) -> InterpretedProgram | None:
    """``graph`` run by the prebuilt interpreter, or None: no interpreter library
    (:func:`~dualgpu.codegen.interp_lib.interpreter_library`: no compiler) or a program it
    does not run (:func:`interpreted_refusal`)."""
    consts = _const_arrays(graph)
    if consts is None:
        return None
    try:
        enc = _Encoder(graph, consts)
    except Refused:
        return None
    if enc.work > INTERP_WORK_MAX:
        return None
    lib = interpreter_library()
    if lib is None:
        return None
    return InterpretedProgram(enc, consts, lib)
