"""A whole tiny program as one generated CUDA kernel run by one block.

A program whose values are all small (the HVP of a Dense(10→1) layer on a batch of 4) costs
per-node latency, not arithmetic: its plan is 13 steps, ~20 µs as a CUDA graph.
:func:`tiny_program_kernel` writes the whole graph as one kernel of one block of
``TINY_THREADS`` threads:

* equations are grouped into *stages*; a stage is one loop
  ``for (int i = tid; i < n; i += nthreads)`` over the elements of equally sized values,
  computing element ``i`` of each of its equations in registers: elementwise ops through
  the region kernels' C expressions (:func:`~dualgpu.codegen.cuda.eqn_c_expr`), an element
  of a matmul or of a reduction as a short loop, of a concatenation as a choice of input;
* a value that a later stage reads at other indices is stored in shared memory (or straight
  into its output, when the program returns it), and ``__syncthreads()`` separates a stage
  from the stores it reads;
* reshapes, transposes, broadcasts and static getitems are views: strides over the memory of
  the value they view (the caller's arrays are read in place, their strides baked in);
* a reduction of many elements to one is a stage of its own: a block tree reduction.

:func:`tiny_refusal` is the rule: every equation one of these, in kernel dtypes, no empty
value, at most ``TINY_SHARED`` bytes of shared memory and ``TINY_STEPS`` serial steps per
thread; the launcher runs the program as one launch (a CUDA graph of one node) when that
pays for the launches of its plan (:func:`worth_one_kernel`).

The text needs no GPU: with ``__global__``, ``__shared__``, ``__syncthreads()``,
``threadIdx`` and ``blockDim`` defined for one thread it compiles as C++
(``tests/helpers/tiny_harness.py``), and one thread running every stage in order computes what the
block computes (no stage reads what the same stage writes).

Example::

    >>> g = dg.trace(lambda w, x: np.sum(np.tanh(x @ w) ** 2), np.ones((3, 2)), np.ones((4, 3)))
    >>> tk = tiny_program_kernel(g)
    >>> print(tk.source)
    extern "C" __global__ void __launch_bounds__(256) dg_tiny_...(
        const double* __restrict__ in0,
        const double* __restrict__ in1,
        double* out0) {
      const int tid = threadIdx.x, nthreads = blockDim.x;
      __shared__ double s0[8];
      // stage 0: matmul tanh multiply
      for (int i = tid; i < 8; i += nthreads) {
        const int a0_0 = (i / 2);
        const int a0_1 = (i % 2);
        double v0 = 0.0;
        for (int p = 0; p < 3; ++p) v0 += in1[a0_0 * 3 + p] * in0[p * 2 + a0_1];
        const double v1 = tanh(v0);
        const double v2 = (v1 * v1);
        s0[i] = v2;
      }
      __syncthreads();
      // stage 1: reduce_sum
      for (int i = tid; i < 1; i += nthreads) {
        double v3 = 0.0;
        for (int r = 0; r < 8; ++r) {
          const int b0_0 = (r / 2);
          const int b0_1 = (r % 2);
          v3 = (v3 + s0[b0_0 * 2 + b0_1]);
        }
        out0[i] = v3;
      }
    }
    <BLANKLINE>
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.ir import Literal, Var
from ..fusion import KERNEL_DTYPES, fusible, reads_no_values
from .c_source import (
    c_literal,
    combine,
    contiguous_strides,
    ctype,
    eqn_c_expr,
    identity_of,
    named,
    reshape_strides,
)
from .one_block import Refused, equation_form, view_strides

TINY_THREADS = 256       # one block; a power of two (the tree reductions halve it)
TINY_SHARED = 48 << 10   # static shared memory of a block (no opt-in needed on any GPU)
# Serial steps of one thread summed over the stages: an element of a stage of n elements
# costs ceil(n / TINY_THREADS) steps, times its loop length (a matmul's K). Estimated (not
# measured) at ~6 ns a step (a few dependent L1/shared loads and an FMA), against ~1.5 µs of
# latency per node of a plan replayed as a CUDA graph: one kernel pays when its steps are
# under STEPS_PER_LAUNCH per launch it saves (:func:`worth_one_kernel`), and never past
# TINY_STEPS (~6 µs).
TINY_STEPS = 1024
STEPS_PER_LAUNCH = 256
TINY_EQNS = 1024         # longer programs keep their plan (kernel text, compile time)
TREE_MIN = 64            # a reduction to one element of more elements is a tree
TINY_VALUE_MAX = 1 << 14  # elements of any one value (arguments and results included)


@dataclass
class TinyKernel:
    """The generated kernel of a tiny program: launch it as one block of ``TINY_THREADS``
    threads on ``(*inputs, *outputs)``: the graph's inputs, then its closed-over constants,
    then one C-contiguous array per graph output (literal outputs included)."""

    name: str
    source: str
    inputs: list          # graph inputs, then graph.consts
    outputs: list         # graph.outputs (Var or Literal)
    shared_bytes: int
    steps: int
    stages: list = field(default_factory=list)   # one line of text per stage
    syncs: int = 0
    work: int = 0         # serial steps of the whole kernel run by one thread (the host's)

    def describe(self) -> str:
        return (f"one tiny kernel {self.name}: 1 block of {TINY_THREADS} threads, "
                f"{len(self.stages)} stages, {self.syncs} __syncthreads, "
                f"{self.shared_bytes} bytes of shared memory")


@dataclass
class _Member:
    """One value of a stage: ``kind`` says how element ``i`` of ``var`` is computed."""

    kind: str        # ew, alias, copy, matmul, reduce, concat, out, literal
    var: Any         # the value computed (a Var; for out/literal, the output position)
    eqn: Any = None
    reads: dict = field(default_factory=dict)   # input var id -> "reg" or "mem"
    source: Any = None                          # out: the Var copied; literal: the Literal


@dataclass
class _Stage:
    index: int
    n: int                   # elements per value (tree: elements reduced)
    tree: Any = None         # the reduction equation of a tree stage
    members: list = field(default_factory=list)


class _Builder:
    """Pass 1 places every equation in a stage (which values it reads from registers and
    which from memory); pass 2 (:meth:`source`) writes the text."""

    def __init__(self, graph, strides: dict):
        self.graph = graph
        self.args = list(graph.inputs) + list(graph.consts)
        self.layout: dict = {}     # var id -> (root var id, element offset, strides)
        self.home: dict = {}       # root var id -> stage that writes it (-1: an argument)
        self.base: dict = {}       # root var id -> the C array holding it
        self.reg: dict = {}        # var id -> stage in which it is a register
        self.needed: set = set()   # roots read from memory
        self.stages: list[_Stage] = []
        self.vars: dict = {}       # var id -> Var (the members' values)
        for k, v in enumerate(self.args):
            self._check_value(v)
            if k >= len(graph.inputs) and getattr(v.value, "strides", None) is None:
                raise Refused("a closed-over constant that is not a dense array")
            st = strides.get(v.id) or contiguous_strides(v.shape)
            self.layout[v.id] = (v.id, 0, tuple(st))
            self.home[v.id], self.base[v.id] = -1, f"in{k}"
            if sum((n - 1) * abs(s) for n, s in zip(v.shape, st)) > 2 ** 31 - 1:
                raise Refused("an argument's offsets pass 32 bits")
        self.out_pos: dict = {}
        for k, a in enumerate(graph.outputs):
            if isinstance(a, Var):
                self.out_pos.setdefault(a.id, k)
        if len(graph.eqns) > TINY_EQNS:
            raise Refused(f"more than {TINY_EQNS} equations")
        for eqn in graph.eqns:
            self._add(eqn)
        for k, a in enumerate(graph.outputs):
            if isinstance(a, Literal):
                self._place(_Member("literal", k, source=a), 1, [])
            elif self.out_pos.get(a.id) != k or a.id not in self.vars:
                self._place(_Member("out", k, source=a), max(a.aval.size, 1), [(a, True)])

    # ------------------------------------------------------------------ pass 1
    @staticmethod
    def _check_value(v):
        if np.dtype(v.dtype).name not in KERNEL_DTYPES:
            raise Refused(f"dtype {v.dtype}")
        if not np.dtype(v.dtype).isnative:
            raise Refused(f"dtype {v.dtype} of non-native byte order")
        if v.aval.size == 0:
            raise Refused("an empty value")
        if v.aval.size > TINY_VALUE_MAX:
            raise Refused(f"a value of {v.aval.size} elements")

    def _add(self, eqn):
        form = equation_form(eqn, self._check_value)
        out = eqn.outs[0]
        ins = [a for a in eqn.inputs if isinstance(a, Var)]
        if form in ("permute", "broadcast", "index"):
            self._view(eqn, form)
        elif form == "reshape":
            self._reshape(eqn)
        elif form in ("matmul", "einsum", "concat"):
            self._place(_Member(form, out, eqn), out.aval.size, [(a, False) for a in ins])
        elif not fusible(eqn):
            raise Refused(f"{eqn.prim.name} has no tiny form")
        elif form == "reduce":
            if out.aval.size == 1 and ins[0].aval.size > TREE_MIN:
                self._tree(eqn)
            else:
                self._place(_Member("reduce", out, eqn), out.aval.size, [(ins[0], False)])
        else:
            reads = [] if reads_no_values(eqn.prim) else [(a, True) for a in ins]
            self._place(_Member("ew", out, eqn), out.aval.size, reads)

    def _open(self, n: int) -> _Stage:
        st = _Stage(len(self.stages), n)
        self.stages.append(st)
        return st

    def _modes(self, st: _Stage, reads) -> dict | None:
        """How a member of stage ``st`` reads each value: from a register of the stage
        (element ``i``: an operand of the stage's size is broadcast only by axes of size 1,
        and a reshape keeps the order of elements), else from memory written by an earlier
        stage; None when it would read memory that ``st`` itself writes."""
        modes = {}
        for a, can_reg in reads:
            if can_reg and self.reg.get(a.id) == st.index:   # a value of the stage's size
                modes[a.id] = "reg"
            elif self.home[self.layout[a.id][0]] == st.index:
                return None
            else:
                modes[a.id] = "mem"
        return modes

    def _place(self, m: _Member, n: int, reads: list):
        """Put ``m`` in the first stage of its size where its inputs are ready (a register
        of that stage, or memory of an earlier one), else in a new stage."""
        first = 0
        for a, can_reg in reads:
            reg = self.reg.get(a.id) if can_reg else None
            first = max(first, reg if reg is not None else self.home[self.layout[a.id][0]] + 1)
        for st in self.stages[first:]:
            modes = self._modes(st, reads) if st.tree is None and st.n == n else None
            if modes is not None:
                break
        else:
            st = self._open(n)
            modes = self._modes(st, reads)
            assert modes is not None  # a new stage writes no memory yet
        m.reads = modes
        st.members.append(m)
        for a, _ in reads:
            if modes[a.id] == "mem":
                self.needed.add(self.layout[a.id][0])
        if isinstance(m.var, Var):
            self._define(m.var, st.index)

    def _define(self, v, stage: int):
        self.vars[v.id] = v   # in definition order (the order of the shared arrays)
        self.reg[v.id] = stage
        self.layout[v.id] = (v.id, 0, contiguous_strides(v.shape))
        self.home[v.id] = stage

    def _tree(self, eqn):
        x = eqn.inputs[0]
        st = self._open(x.aval.size)
        st.tree = eqn
        self.needed.add(self.layout[x.id][0])
        out = eqn.outs[0]
        self.vars[out.id] = out   # not a register: thread 0 stores it
        self.layout[out.id] = (out.id, 0, contiguous_strides(out.shape))
        self.home[out.id] = st.index
        self.needed.add(out.id)   # thread 0 stores the result

    def _view(self, eqn, view: str):
        """A view of the op's ``view`` form (:data:`~dualgpu.core.primitives.LOWERING_FORMS`):
        new strides (and offset) over the memory its input reads."""
        root, off, st = self.layout[eqn.inputs[0].id]
        self.layout[eqn.outs[0].id] = (root,) + view_strides(eqn, view, off, st)

    def _reshape(self, eqn):
        x, out = eqn.inputs[0], eqn.outs[0]
        if x.id in self.reg:
            # element i of a register is element i of the reshape (in the same stage)
            self._place(_Member("alias", out, eqn), out.aval.size, [(x, True)])
            return
        root, off, st = self.layout[x.id]
        new = reshape_strides(x.shape, st, out.shape)
        if new is None:   # not a view of x's memory: copied, element i from x's element i
            self._place(_Member("copy", out, eqn), out.aval.size, [(x, False)])
        else:
            self.layout[out.id] = (root, off, new)

    # ------------------------------------------------------------------ pass 2
    def steps(self, threads: int = TINY_THREADS) -> int:
        """Serial steps of one of ``threads`` threads, summed over the stages (with
        ``threads=1``: the work of the whole kernel, as one host thread runs it)."""
        total = 0
        for st in self.stages:
            if st.tree is not None:
                total += -(-st.n // threads) + threads.bit_length()
                continue
            per = -(-st.n // threads)
            for m in st.members:
                inner = 1
                if m.kind == "matmul":
                    inner = m.eqn.inputs[0].shape[-1]
                elif m.kind == "reduce":
                    inner = m.eqn.inputs[0].aval.size // max(m.var.aval.size, 1)
                elif m.kind == "einsum":
                    inner = int(np.prod(list(_einsum_sizes(m.eqn)[1].values()), dtype=np.int64))
                total += per * inner
        return total

    def source(self) -> tuple[str, int, list, int]:
        """The kernel text (name ``@KERNEL@``), its shared bytes, stage lines, syncs."""
        shared, decls, k = 0, [], 0
        for vid in self.vars:
            if vid not in self.needed or vid in self.out_pos:
                continue
            v = self.vars[vid]
            self.base[vid] = f"s{k}"
            k += 1
            decls.append(f"__shared__ {ctype(v.dtype)} {self.base[vid]}[{v.aval.size}];")
            shared += -(-v.aval.size * v.dtype.itemsize // 8) * 8
        for vid, pos in self.out_pos.items():
            if vid in self.vars:
                self.base[vid] = f"out{pos}"
        trees = sorted({ctype(st.tree.outs[0].dtype) for st in self.stages if st.tree})
        for ct in trees:
            decls.append(f"__shared__ {ct} red_{_ident(ct)}[{TINY_THREADS}];")
            shared += TINY_THREADS * 8
        if shared > TINY_SHARED:
            raise Refused(f"{shared} bytes of shared memory")
        self.names: dict = {}
        body, visible, labels, syncs = [], 0, [], 0
        for st in self.stages:
            homes = [self.home[self.layout[vid][0]] for vid in self._mem_reads(st)]
            if max(homes, default=-1) >= visible:
                body.append("__syncthreads();")
                visible, syncs = st.index, syncs + 1
            label = (st.tree.prim.name + " (block tree)" if st.tree is not None else
                     " ".join(m.eqn.prim.name if m.eqn is not None else f"out{m.var}"
                              for m in st.members))
            labels.append(label)
            body.append(f"// stage {st.index}: {label}")
            if st.tree is not None:
                body += self._tree_lines(st)
                visible, syncs = st.index + 1, syncs + 1 + TINY_THREADS.bit_length()
            else:
                body += self._loop_lines(st)
        params = [f"const {ctype(v.dtype)}* __restrict__ in{k}"
                  for k, v in enumerate(self.args)]
        params += [f"{ctype(a.dtype)}* out{k}" for k, a in enumerate(self.graph.outputs)]
        head = [f'extern "C" __global__ void __launch_bounds__({TINY_THREADS}) @KERNEL@(',
                "    " + ",\n    ".join(params) + ") {"]
        lines = ["const int tid = threadIdx.x, nthreads = blockDim.x;"] + decls + body
        return "\n".join(head + ["  " + ln for ln in lines] + ["}"]) + "\n", shared, \
            labels, syncs

    def _mem_reads(self, st: _Stage) -> list:
        if st.tree is not None:
            return [st.tree.inputs[0].id]
        return [vid for m in st.members for vid, mode in m.reads.items() if mode == "mem"]

    def _name(self, v) -> str:
        name = self.names.get(v.id)
        if name is None:
            name = self.names[v.id] = f"v{len(self.names)}"
        return name

    def access(self, v, idx: list) -> str:
        """C expression of the element of ``v`` at the multi-index ``idx`` (C expressions,
        ``"0"`` for axes of size 1)."""
        root, off, st = self.layout[v.id]
        terms = [str(off)] if off else []
        for e, s in zip(idx, st):
            if e != "0" and s != 0:
                terms.append(e if s == 1 else f"{e} * {s}")
        return f"{self.base[root]}[{' + '.join(terms) or '0'}]"

    def _read(self, m: _Member, a, idx) -> str:
        return self._name(a) if m.reads.get(a.id) == "reg" else self.access(a, idx)

    def _loop_lines(self, st: _Stage) -> list:
        body: list = []
        index = _Index(body, "i", "a")
        for m in st.members:
            body += self._member_lines(m, index)
        return [f"for (int i = tid; i < {st.n}; i += nthreads) {{",
                *["  " + ln for ln in body], "}"]

    def _member_lines(self, m: _Member, index: _Index) -> list:
        if m.kind == "literal":
            return [f"out{m.var}[i] = {c_literal(m.source.value, m.source.dtype)};"]
        if m.kind == "out":
            a = m.source
            return [f"out{m.var}[i] = {self._read(m, a, index(a.shape))};"]
        v, eqn = m.var, m.eqn
        ct = ctype(v.dtype)
        if m.kind == "alias":
            self.names[v.id] = self._name(eqn.inputs[0])
        name = self._name(v)
        if m.kind == "alias":
            lines = []
        elif m.kind == "ew":
            out_idx = index(v.shape)
            operands = [None if isinstance(a, Literal) or reads_no_values(eqn.prim)
                        else self._read(m, a, _broadcast(out_idx, a.shape)) for a in eqn.inputs]
            lines = [f"const {ct} {name} = {eqn_c_expr(eqn, operands)};"]
        elif m.kind == "copy":
            x = eqn.inputs[0]
            lines = [f"const {ct} {name} = {self.access(x, index(x.shape))};"]
        elif m.kind == "matmul":
            lines = self._matmul_lines(m, name, ct, index(v.shape))
        elif m.kind == "reduce":
            lines = self._reduce_lines(m, name, ct, index(v.shape))
        elif m.kind == "einsum":
            lines = self._einsum_lines(m, name, ct, index(v.shape))
        else:
            lines = [f"const {ct} {name} = {self._concat_expr(m, ct, index(v.shape))};"]
        if v.id in self.needed or v.id in self.out_pos:
            lines.append(f"{self.base[v.id]}[i] = {name};")
        return lines

    def _matmul_lines(self, m, name, ct, out_idx) -> list:
        a, b = m.eqn.inputs
        k = a.shape[-1]
        batch = list(out_idx)
        row = col = "0"
        if b.ndim > 1:
            col = batch.pop()
        if a.ndim > 1:
            row = batch.pop()
        ia = ["p"] if a.ndim == 1 else _broadcast(batch, a.shape[:-2]) + [row, "p"]
        ib = ["p"] if b.ndim == 1 else _broadcast(batch, b.shape[:-2]) + ["p", col]
        return [f"{ct} {name} = {c_literal(0, m.var.dtype)};",
                f"for (int p = 0; p < {k}; ++p) "
                f"{name} += {self.access(a, ia)} * {self.access(b, ib)};"]

    def _reduce_lines(self, m, name, ct, out_idx) -> list:
        x, v = m.eqn.inputs[0], m.var
        axes = tuple(m.eqn.params["axes"])
        inner: list = []
        red = _Index(inner, "r", "b")(tuple(x.shape[a] for a in axes))
        kept, reduced = iter(out_idx), iter(red)
        idx = [next(reduced) if j in axes else next(kept) for j in range(x.ndim)]
        src = self.access(x, idx)
        if np.dtype(x.dtype) != np.dtype(v.dtype):
            src = f"(({ct}){src})"
        op = m.eqn.prim.monoid
        extent = x.aval.size // v.aval.size
        step = f"{name} = {combine(op, name, src)};"
        loop = ([f"for (int r = 0; r < {extent}; ++r) {step}"] if not inner else
                [f"for (int r = 0; r < {extent}; ++r) {{", *["  " + ln for ln in inner],
                 f"  {step}", "}"])
        return [f"{ct} {name} = {identity_of(op, v.dtype)};"] + loop

    def _einsum_lines(self, m, name, ct, out_idx) -> list:
        """Element ``i`` of an einsum: a loop over the contracted letters summing the
        product of the operands (a letter of size 1 in an operand broadcasts)."""
        eqn = m.eqn
        ins, out = eqn.params["spec"].split("->")
        _, contracted = _einsum_sizes(eqn)
        inner: list = []
        red = _Index(inner, "r", "b")(tuple(contracted.values()))
        at = dict(zip(out, out_idx)) | dict(zip(contracted, red))
        factors = []
        for spec, a in zip(ins.split(","), eqn.inputs):
            src = self.access(a, ["0" if n == 1 else at[c] for c, n in zip(spec, a.shape)])
            factors.append(src if np.dtype(a.dtype) == np.dtype(m.var.dtype) else
                           f"(({ct}){src})")
        step = f"{name} += {' * '.join(factors)};"
        extent = int(np.prod(list(contracted.values()), dtype=np.int64))
        return [f"{ct} {name} = {c_literal(0, m.var.dtype)};",
                f"for (int r = 0; r < {extent}; ++r) {{", *["  " + ln for ln in inner],
                f"  {step}", "}"]

    def _concat_expr(self, m, ct, out_idx) -> str:
        axis = m.eqn.params["axis"]
        parts, start = [], 0
        for a in m.eqn.inputs:
            idx = list(out_idx)
            if start:
                idx[axis] = f"({idx[axis]} - {start})"
            start += a.shape[axis]
            src = self.access(a, idx)
            if np.dtype(a.dtype) != np.dtype(m.var.dtype):
                src = f"(({ct}){src})"
            parts.append((start, src))
        expr = parts[-1][1]
        for end, src in reversed(parts[:-1]):
            expr = f"({out_idx[axis]} < {end} ? {src} : {expr})"
        return expr

    def _tree_lines(self, st: _Stage) -> list:
        eqn = st.tree
        x, v = eqn.inputs[0], eqn.outs[0]
        ct, op = ctype(v.dtype), eqn.prim.monoid
        red = f"red_{_ident(ct)}"
        inner: list = []
        src = self.access(x, _Index(inner, "r", "a")(x.shape))
        if np.dtype(x.dtype) != np.dtype(v.dtype):
            src = f"(({ct}){src})"
        a, b = f"{red}[tid]", f"{red}[tid + s]"
        return ["{",
                f"  {ct} acc = {identity_of(op, v.dtype)};",
                f"  for (int r = tid; r < {st.n}; r += nthreads) {{",
                *["    " + ln for ln in inner],
                f"    acc = {combine(op, 'acc', src)};",
                "  }",
                f"  {red}[tid] = acc;",
                "  __syncthreads();",
                "  for (int s = nthreads / 2; s > 0; s >>= 1) {",
                f"    if (tid < s) {a} = {combine(op, a, b)};",
                "    __syncthreads();",
                "  }",
                f"  if (tid == 0) {self.base[v.id]}[0] = {red}[0];",
                "  __syncthreads();   // the scratch array is free again",
                "}"]


class _Index:
    """The multi-index of flat position ``var`` in a C-ordered array of a given shape:
    defines the index variables in ``lines`` the first time a shape asks (size-1 axes are
    ``"0"``)."""

    def __init__(self, lines: list, var: str, prefix: str):
        self.lines, self.var, self.prefix = lines, var, prefix
        self.known: dict = {}

    def __call__(self, shape) -> list:
        shape = tuple(shape)
        got = self.known.get(shape)
        if got is not None:
            return got
        tag = f"{self.prefix}{len(self.known)}"   # a stage's loop is a scope of its own
        idx, outer = [], 1
        for k, n in enumerate(shape):
            if n == 1:
                idx.append("0")
                continue
            inner = int(np.prod(shape[k + 1:], dtype=np.int64))
            e = self.var if inner == 1 else f"({self.var} / {inner})"
            if outer > 1:
                e = f"({self.var} % {n})" if inner == 1 else f"({e} % {n})"
            outer *= n
            name = f"{tag}_{k}"
            self.lines.append(f"const int {name} = {e};")
            idx.append(name)
        self.known[shape] = idx
        return idx


def _einsum_sizes(eqn) -> tuple[dict, dict]:
    """The size of every letter of an einsum, and of its contracted letters (in order)."""
    ins, out = eqn.params["spec"].split("->")
    sizes: dict = {}
    for spec, a in zip(ins.split(","), eqn.inputs):
        for c, n in zip(spec, a.shape):
            sizes[c] = max(sizes.get(c, 1), n)
    return sizes, {c: n for c, n in sizes.items() if c not in out}


def _ident(ct: str) -> str:
    return ct.replace(" ", "_")


def _broadcast(idx: list, shape) -> list:
    """The index into an operand of ``shape`` broadcast against the multi-index ``idx``."""
    lead = len(idx) - len(shape)
    return ["0" if n == 1 else idx[lead + j] for j, n in enumerate(shape)]


def _build(graph, strides) -> tuple[_Builder, tuple]:
    b = _Builder(graph, dict(strides or {}))
    steps = b.steps()
    if steps > TINY_STEPS:
        raise Refused(f"{steps} serial steps per thread")
    return b, (steps, b.steps(1)) + b.source()


def worth_one_kernel(kernel: TinyKernel, launches: int) -> bool:
    """Whether ``kernel`` beats a plan of ``launches`` kernel launches and library calls:
    its serial steps cost less than the launch latency it saves (see ``STEPS_PER_LAUNCH``).

    Example::

        >>> g = dg.trace(lambda x: np.sum(np.sin(x)), np.ones(300))
        >>> tk = tiny_program_kernel(g)
        >>> tk.steps, worth_one_kernel(tk, 1), worth_one_kernel(tk, 2)
        (13, False, True)
    """
    return launches > 1 and kernel.steps <= STEPS_PER_LAUNCH * (launches - 1)


def tiny_refusal(graph, strides: dict | None = None) -> str | None:
    """Why ``graph`` does not run as one tiny kernel, or None when it does.

    Example::

        >>> tiny_refusal(dg.trace(lambda x: np.cumsum(x), np.ones(3)))
        'cumsum has no tiny form'
        >>> tiny_refusal(dg.trace(lambda x: np.exp(x), np.ones(1 << 16)))
        'a value of 65536 elements'
        >>> tiny_refusal(dg.trace(lambda x: np.sin(x), np.ones(3))) is None
        True
    """
    try:
        _build(graph, strides)
    except Refused as e:
        return str(e)
    return None


def tiny_program_kernel(graph, strides: dict | None = None) -> TinyKernel | None:
    """The one-block kernel of ``graph`` (:class:`TinyKernel`), or None when the program is
    not tiny (:func:`tiny_refusal` says why). ``strides`` maps each input's (and closed-over
    constant's) var id to its element strides (0 for axes of size 1); by default arguments
    are C-contiguous. The name is a hash of the source.

    Example::

        >>> g = dg.trace(dg.grad(lambda w: np.sum(np.tanh(w) ** 2)), np.ones(3))
        >>> tiny_program_kernel(g).describe()
        'one tiny kernel dg_tiny_...: 1 block of 256 threads, 2 stages, 1 __syncthreads, ...'
    """
    try:
        b, (steps, work, text, shared, labels, syncs) = _build(graph, strides)
    except Refused:
        return None
    name, source = named(text, "tiny")
    return TinyKernel(name=name, source=source, inputs=b.args, outputs=list(graph.outputs),
                      shared_bytes=shared, steps=steps, stages=labels, syncs=syncs,
                      work=work)
