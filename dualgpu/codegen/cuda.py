"""CUDA source for fused regions (see :mod:`dualgpu.fusion`); the small products' kernels are
in :mod:`dualgpu.codegen.products`, the CuPy launcher in :mod:`dualgpu.codegen.launcher`.

Source generation needs neither CuPy nor a GPU: :func:`region_kernels` turns a planned
region into the text of its kernel(s); only :func:`compile_fused` touches CuPy.

The kernel of a region runs one thread per point of the region's thread axes. Inside a
thread the code is a list of *sections* and *loops*: section ``k`` computes the per-thread
values defined after ``k`` in-thread reductions, loop ``k`` walks the reduced axes and
computes the values that vary along them (accumulating the reductions of loop ``k``). A loop
over at most ``UNROLL_MAX`` elements is unrolled and keeps the values later loops need in
local arrays (registers once unrolled); longer loops recompute them. Grid reductions are
accumulated per thread, reduced per block in shared memory, written as one partial per block
and finished by a second kernel, in a fixed order (results are deterministic).

Example (a small elementwise chain)::

    >>> from dualgpu.fusion import plan_graph
    >>> plan = plan_graph(dg.trace(lambda x: np.exp(-x * x), np.ones(8, np.float32)))
    >>> print(region_kernels(plan.regions[0]).source)
    extern "C" __global__ void __launch_bounds__(256) dg_fused_...(
        const float* __restrict__ in0,
        float* __restrict__ out0) {
      const int tid = (int)blockIdx.x * 256 + (int)threadIdx.x;
      if (tid < 8) {
        int q = tid;
        const int i0 = q;
        const float v0 = in0[i0];  // load
        const float v1 = (-v0);  // negative
        const float v2 = (v1 * v0);  // multiply
        const float v3 = exp(v2);  // exp
        out0[i0] = v3;
      }
    }
    <BLANKLINE>
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ..base import names as naming
from ..core.ir import Eqn, Literal, Var
from ..fusion import Region, is_reduction, is_reshape, padded_read, reads_no_values
from .c_source import (
    combine,
    contiguous_strides,
    ctype,
    eqn_c_expr,
    identity_of,
    indent,
    named,
)

BLOCK = 256


# A C literal of a value typed as a dtype (``2.0f`` for float32, ``2.0`` for float64): the
# one encoder writes every number printed into a kernel.


@dataclass
class RegionKernels:
    """The generated source of one region: the main kernel and, with grid reductions, the
    kernel that finishes them. ``inputs``/``outputs`` give the argument order."""

    name: str
    source: str
    threads: int
    inputs: list
    outputs: list
    grid: list = field(default_factory=list)   # (output Var, op, ctype) per grid reduction
    finish_name: str | None = None
    finish_source: str | None = None

    @property
    def blocks(self) -> int:
        return max(1, -(-self.threads // BLOCK))

    def full_source(self) -> str:
        return self.source + ("\n" + self.finish_source if self.finish_source else "")


class Node(NamedTuple):
    """One value a kernel thread computes, in dependency order: a load of a region input
    (``eqn`` is None) or the output of one of the region's equations."""

    key: Any            # the var id of an equation's output; ("load", var id, dims) of a load
    var: Var            # the loaded input, or the equation's output
    eqn: Eqn | None     # None for a load
    dims: tuple         # domain axis of each of the value's axes (None: broadcast)
    level: int          # in-thread reductions computed before this value

    @property
    def is_load(self) -> bool:
        return self.eqn is None

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.var.dtype)


class GridReduction(NamedTuple):
    """A reduction over the whole grid: accumulated per thread in ``name``, reduced per block
    into ``part_<name>``, finished by the second kernel into the output ``var``."""

    name: str
    op: str
    var: Var

    @property
    def ctype(self) -> str:
        return ctype(self.var.dtype)


@dataclass
class _Loop:
    """Loop ``level`` of a kernel's thread code: the lines of its body, placed (with the stores
    of the values later loops read back) once every loop is built."""

    level: int
    body: list


def _kernel_text(params: list, body: list) -> str:
    head = [f'extern "C" __global__ void __launch_bounds__({BLOCK}) @KERNEL@(',
            "    " + ",\n    ".join(params) + ") {"]
    return "\n".join(head + indent(body) + ["}"]) + "\n"


def _block_reduce(g: GridReduction, value: str, dest: str, prelude: tuple = ()) -> list:
    """Shared-memory tree reduction of ``value`` over the threads of a block, written to
    ``dest`` by thread 0; ``prelude`` lines come after the shared array's declaration."""
    sh = f"sh_{g.name}"
    a, b = f"{sh}[threadIdx.x]", f"{sh}[threadIdx.x + s]"
    return [f"__shared__ {g.ctype} {sh}[{BLOCK}];",
            *prelude,
            f"{sh}[threadIdx.x] = {value};",
            "__syncthreads();",
            f"for (int s = {BLOCK // 2}; s > 0; s >>= 1) {{",
            f"  if (threadIdx.x < s) {a} = {combine(g.op, a, b)};",
            "  __syncthreads();",
            "}",
            f"if (threadIdx.x == 0) {dest} = {sh}[0];"]


class Emitter:
    """Builds the body of one region's main kernel."""

    def __init__(self, region: Region, strides: dict):
        self.r = region
        self.nd = len(region.domain)
        self.strides = strides
        # 64-bit indices for a domain past INT_MAX, or an input whose offsets pass it (a
        # strided view of a big array: x[:, :8] of a 300000 x 8192 x)
        reach = max((sum((n - 1) * abs(st) for n, st in zip(v.shape, strides[v.id]))
                     for v in region.inputs), default=0)
        big = int(np.prod(region.domain, dtype=np.int64)) >= 2 ** 31 - 1 \
            or reach > 2 ** 31 - 1
        self.idx = "long long" if big else "int"
        self.in_names = {v.id: naming.input_name(i) for i, v in enumerate(region.inputs)}
        self.out_names = {v.id: f"out{i}" for i, v in enumerate(region.outputs)}
        self.grid = [GridReduction(f"g{i}", _reduction_op(e), e.outs[0])
                     for i, e in enumerate(region.grid)]
        self.grid_names = {g.var.id: g.name for g in self.grid}
        self.outputs = {v.id for v in region.outputs}
        self.nodes: list[Node] = []    # in dependency order
        self.node_of: dict = {}        # Node.key -> node index
        self.cached: dict[int, int] = {}   # node -> unrolled loop that keeps it in c<k>[]
        self.used_cache: set = set()       # cached nodes that a later loop reads back
        self._build_nodes()

    # ------------------------------------------------------------------ nodes
    def _build_nodes(self):
        r = self.r
        for eqn in r.eqns:
            for a in eqn.inputs:
                if reads_no_values(eqn.prim) or padded_read(eqn) is not None:
                    break  # reads no element of its input, or reads it in its own node
                if isinstance(a, Var) and not r.defines(a):
                    dims = r.load_dims(eqn, a)
                    self._add_node(Node(("load", a.id, dims), a, None, dims, 0))
            v = eqn.outs[0]
            self._add_node(Node(v.id, v, eqn, r.dims[v.id], r.level[v.id]))

    def _add_node(self, node: Node):
        if node.key not in self.node_of:
            self.node_of[node.key] = len(self.nodes)
            self.nodes.append(node)

    def nodes_by_level(self, levels: int) -> dict:
        """Level -> node indices of that level, in node order (each level's section and
        loop then visit only their own nodes: linear in the region's size)."""
        by_level: dict[int, list] = {lv: [] for lv in range(levels + 1)}
        for k, node in enumerate(self.nodes):
            by_level[node.level].append(k)
        return by_level

    def vname(self, k: int) -> str:
        return naming.var_name(k).replace("t", "v", 1)

    def in_loop(self, k: int) -> bool:
        return self.r.varies_in_loop(self.nodes[k].dims)

    def is_output(self, k: int) -> bool:
        node = self.nodes[k]
        return not node.is_load and node.var.id in self.outputs

    def is_grid(self, k: int) -> bool:
        node = self.nodes[k]
        return not node.is_load and node.var.id in self.grid_names

    def is_reduction(self, k: int) -> bool:
        node = self.nodes[k]
        return node.eqn is not None and is_reduction(node.eqn.prim)

    def deps(self, k: int) -> list:
        node = self.nodes[k]
        if node.eqn is None or reads_no_values(node.eqn.prim) or padded_read(node.eqn):
            return []  # a load, or an op that reads no operand's value
        out = []
        for a in node.eqn.inputs:
            if isinstance(a, Literal):
                continue
            if self.r.defines(a):
                out.append(self.node_of[a.id])
            else:
                out.append(self.node_of[("load", a.id, self.r.load_dims(node.eqn, a))])
        return out

    def axis(self, d) -> str:
        return f"i{d + self.nd}"

    def offset(self, dims, strides) -> str:
        terms = []
        for d, st in zip(dims, strides):
            if d is None or st == 0:
                continue
            terms.append(self.axis(d) if st == 1 else f"{self.axis(d)} * {st}")
        return " + ".join(terms) if terms else "0"

    def expr(self, k: int) -> str:
        """The C expression of node k."""
        node = self.nodes[k]
        eqn = node.eqn
        if eqn is None:  # a load
            v = node.var
            return f"{self.in_names[v.id]}[{self.offset(node.dims, self.strides[v.id])}]"
        if is_reduction(eqn.prim):
            return f"acc{k}"
        if is_reshape(eqn.prim):
            return self.vname(self.deps(k)[0])
        if padded_read(eqn):
            return self.padded_read(eqn, node.dims)
        deps = iter(self.deps(k))
        operands = [None if isinstance(a, Literal) or reads_no_values(eqn.prim)
                    else self.vname(next(deps)) for a in eqn.inputs]
        return eqn_c_expr(eqn, operands)

    def padded_read(self, eqn, dims) -> str:
        """The element of a padded read (:func:`dualgpu.fusion.padded_read`): its input's
        element where every output index falls in the key's slices, else zero."""
        g = eqn.inputs[0]
        conds, ks = [], []   # the slices' conditions; the input's C index on each axis
        slices = padded_read(eqn)
        assert slices is not None  # expr() calls this for a padded read only
        for d, (start, step, count) in zip(dims, slices):
            if d is None:     # an axis of size 1: element 0, always in the slices
                ks.append("0")
                continue
            i = self.axis(d)
            shifted = f"({i} - {start})" if start else i
            last = start + step * (count - 1)
            low, high = min(start, last), max(start, last)
            if low > 0:
                conds.append(f"{i} >= {low}")
            if high < self.r.domain[d] - 1:
                conds.append(f"{i} <= {high}")
            if abs(step) != 1:
                conds.append(f"{shifted} % {step} == 0")
            ks.append(shifted if step == 1 else f"({shifted} / {step})" if step != -1
                      else f"(-{shifted})")
        t = ctype(eqn.outs[0].dtype)
        cone = self.r.cones.get(eqn.outs[0].id)
        if cone is not None:
            return self.recomputed(cone, conds, ks, t)
        read = self.element(g, ks, range(len(ks)))
        if not conds:
            return read
        return f"(({' && '.join(conds)}) ? {read} : ({t})0)"

    def element(self, v, ks: list, axes) -> str:
        """Input ``v``'s element whose axis ``m`` is at C index ``ks[axes[m]]`` (None in
        ``axes``: a broadcast axis)."""
        terms = [ks[j] if st == 1 else f"{ks[j]} * {st}"
                 for j, st in zip(axes, self.strides[v.id]) if j is not None and st]
        return f"{self.in_names[v.id]}[{' + '.join(terms) or '0'}]"

    def recomputed(self, cone, conds: list, ks: list, t: str) -> str:
        """A padded read whose input is recomputed (:class:`dualgpu.fusion.regions.Cone`): a
        lambda that returns zero outside the slices, else evaluates the cone's equations
        at the input's index ``ks`` (one C index per axis of the input)."""
        lines = [f"if (!({' && '.join(conds)})) return ({t})0;"] if conds else []
        names: dict = {}
        for k, e in enumerate(cone.eqns):
            operands: list[str | None] = []
            for pos, a in enumerate(e.inputs):
                if isinstance(a, Literal) or reads_no_values(e.prim):
                    operands.append(None)
                elif a.id in names:
                    operands.append(names[a.id])
                else:
                    operands.append(self.element(a, ks, cone.loads[(k, pos)]))
            names[e.outs[0].id] = f"c{k}"
            lines.append(f"const {ctype(e.outs[0].dtype)} c{k} = {eqn_c_expr(e, operands)};")
        lines.append(f"return c{len(cone.eqns) - 1};")
        return f"[&]() -> {t} {{ " + " ".join(lines) + " }()"

    # ------------------------------------------------------------------ lines
    def guard(self, dims, in_loop: bool) -> str:
        have = {d for d in dims if d is not None}
        conds = []
        for a in range(self.nd):
            d = a - self.nd
            if not in_loop and d in self.r.loop_axes:
                continue
            if self.r.domain[a] != 1 and d not in have:
                conds.append(f"{self.axis(d)} == 0")
        return " && ".join(conds)

    def write(self, k: int) -> str:
        node = self.nodes[k]
        st = contiguous_strides(node.var.shape)
        line = f"{self.out_names[node.var.id]}[{self.offset(node.dims, st)}] = {self.vname(k)};"
        g = self.guard(node.dims, self.in_loop(k))
        return f"if ({g}) {line}" if g else line

    def decl(self, k: int) -> str:
        node = self.nodes[k]
        note = "load" if node.eqn is None else node.eqn.prim.name
        return f"const {self._ctype_of(k)} {self.vname(k)} = {self.expr(k)};  // {note}"

    def accumulate(self, k: int, acc: str) -> str:
        """``acc = combine(acc, source)`` for reduction node k, the source cast to the
        reduction's dtype when they differ."""
        node = self.nodes[k]
        source = self.deps(k)[0]
        src = self.vname(source)
        if self.nodes[source].dtype != node.dtype:
            src = f"(({ctype(node.dtype)}){src})"
        return f"{acc} = {combine(_reduction_op(node.eqn), acc, src)};"

    def _ctype_of(self, k) -> str:
        return ctype(self.nodes[k].dtype)

    # ------------------------------------------------------------------ kernel
    def thread_code(self) -> list:
        """The lines one thread runs for its point ``tid`` (declared by the caller, as are
        the grid reductions' accumulators): index decomposition, sections and loops."""
        self.cached, self.used_cache = {}, set()
        levels = max([n.level for n in self.nodes], default=0)
        by_level = self.nodes_by_level(levels)
        thread = self._thread_index()
        for lv in range(levels + 1):
            thread += self._section(by_level[lv])
            thread += self._loop(lv, by_level)
        return self._place_loops(thread)

    def generate(self) -> str:
        """The main kernel's text (its name left as ``@KERNEL@``)."""
        idx = self.idx
        body = [f"const {idx} tid = ({idx})blockIdx.x * {BLOCK} + ({idx})threadIdx.x;"]
        body += [f"{g.ctype} {g.name} = {identity_of(g.op, g.var.dtype)};" for g in self.grid]
        body += [f"if (tid < {self.r.thread_count()}) {{", *indent(self.thread_code()),
                 "}"]
        for g in self.grid:
            body += _block_reduce(g, g.name, f"part_{g.name}[blockIdx.x]")
        return _kernel_text(self._parameters(), body)

    def _parameters(self) -> list:
        """Inputs, then the outputs other than grid reductions, then one partial per grid
        reduction."""
        r = self.r
        params = [f"const {ctype(v.dtype)}* __restrict__ {self.in_names[v.id]}"
                  for v in r.inputs]
        params += [f"{ctype(v.dtype)}* __restrict__ {self.out_names[v.id]}"
                   for v in r.outputs if v.id not in self.grid_names]
        params += [f"{g.ctype}* __restrict__ part_{g.name}" for g in self.grid]
        return params

    def _thread_index(self) -> list:
        """Thread index -> thread-axis indices (innermost axis fastest)."""
        threads, idx = self.r.thread_axes(), self.idx
        if not threads:
            return []
        lines = [f"{idx} q = tid;"]
        for n, d in enumerate(reversed(threads)):
            size = self.r.domain[d]
            if n == len(threads) - 1:
                lines.append(f"const {idx} {self.axis(d)} = q;")
            else:
                lines.append(f"const {idx} {self.axis(d)} = q % {size}; q /= {size};")
        return lines

    def _section(self, level_nodes: list) -> list:
        """Section of one level: its per-thread values, their stores, and the grid
        reductions of per-thread values."""
        lines = []
        for k in level_nodes:
            if self.in_loop(k):
                continue
            if self.is_grid(k):
                if not self.in_loop(self.deps(k)[0]):  # else accumulated inside the loop
                    lines.append(self.accumulate(k, self.grid_names[self.nodes[k].var.id]))
                continue
            lines.append(self.decl(k))
            if self.is_output(k):
                lines.append(self.write(k))
        return lines

    def _loop(self, lv: int, by_level: dict) -> list:
        """Loop ``lv``: the values varying along the loop axes that outputs and reductions
        need, and the reductions they feed (those of level lv + 1, and grid reductions).
        Returns the accumulators' declarations and the loop, or nothing."""
        reductions = [k for k in by_level.get(lv + 1, ())
                      if self.is_reduction(k) and not self.is_grid(k)]
        roots = [k for k in by_level[lv] if self.in_loop(k) and self.is_output(k)]
        grid_in_loop = [k for k in by_level[lv]
                        if self.is_grid(k) and self.in_loop(self.deps(k)[0])]
        roots += [self.deps(k)[0] for k in reductions + grid_in_loop]
        if not roots:
            return []
        decls = []
        for k in reductions:
            dt = self.nodes[k].var.dtype
            decls.append(f"{ctype(dt)} acc{k} = "
                         f"{identity_of(_reduction_op(self.nodes[k].eqn), dt)};")
        body = self._loop_index() + self._loop_values(lv, self._loop_needs(roots))
        body += [self.accumulate(k, f"acc{k}") for k in reductions]
        body += [self.accumulate(k, self.grid_names[self.nodes[k].var.id])
                 for k in grid_in_loop]
        return decls + [_Loop(lv, body)]

    def _loop_needs(self, roots: list) -> set:
        """The in-loop nodes the roots depend on, stopping at values an earlier unrolled
        loop cached."""
        need: set = set()
        stack = list(roots)
        while stack:
            k = stack.pop()
            if k in need:
                continue
            need.add(k)
            if k in self.cached:
                continue
            stack.extend(d for d in self.deps(k) if self.in_loop(d))
        return need

    def _loop_index(self) -> list:
        """Loop counter ``r`` -> loop-axis indices (innermost axis fastest)."""
        lines, stride, idx = [], 1, self.idx
        for d in reversed(list(self.r.loop_axes)):
            size = self.r.domain[d]
            lines.append(f"const {idx} {self.axis(d)} = (r / {stride}) % {size};"
                         if stride > 1 else f"const {idx} {self.axis(d)} = r % {size};")
            stride *= size
        return lines

    def _loop_values(self, lv: int, need: set) -> list:
        """The needed values of loop ``lv``: read back from an earlier loop's cache, or
        computed (and stored, for outputs of this level; cached when loops unroll)."""
        lines = []
        unrolled = self.r.unrolled()
        for k in sorted(need):
            if k in self.cached:
                lines.append(f"const {self._ctype_of(k)} {self.vname(k)} = "
                             f"c{k}[r];  // from loop {self.cached[k]}")
                self.used_cache.add(k)
                continue
            lines.append(self.decl(k))
            if self.is_output(k) and self.nodes[k].level == lv:
                lines.append(self.write(k))
            if unrolled:
                self.cached[k] = lv
        return lines

    def _place_loops(self, thread: list) -> list:
        """The thread code with every loop written out: before a loop, the arrays of the
        values it keeps for later loops; at the end of its body, their stores."""
        stored_by_loop: dict[int, list] = {}
        for k in sorted(self.used_cache):
            stored_by_loop.setdefault(self.cached[k], []).append(k)
        extent = self.r.loop_extent()
        lines = []
        for item in thread:
            if not isinstance(item, _Loop):
                lines.append(item)
                continue
            stored = stored_by_loop.get(item.level, [])
            lines += [f"{self._ctype_of(k)} c{k}[{extent}];" for k in stored]
            if self.r.unrolled():
                lines.append("#pragma unroll")
            lines.append(f"for (int r = 0; r < {extent}; ++r) {{")
            lines += indent(item.body + [f"c{k}[r] = {self.vname(k)};" for k in stored])
            lines.append("}")
        return lines


def _reduction_op(eqn) -> str:
    """``sum``, ``prod``, ``max`` or ``min``: the combining operation of a reduction."""
    return eqn.prim.monoid


def _finish_source(emitter: Emitter, blocks: int) -> str:
    """The kernel that finishes the grid reductions: block ``i`` reduces the partials of
    grid reduction ``i``."""
    params, body = [], []
    for i, g in enumerate(emitter.grid):
        out = emitter.out_names[g.var.id]
        params.append(f"const {g.ctype}* __restrict__ part_{g.name}")
        params.append(f"{g.ctype}* __restrict__ {out}")
        prelude = (f"{g.ctype} acc = {identity_of(g.op, g.var.dtype)};",
                   f"for (int k = threadIdx.x; k < {blocks}; k += {BLOCK}) "
                   f"acc = {combine(g.op, 'acc', f'part_{g.name}[k]')};")
        body += [f"if (blockIdx.x == {i}) {{",
                 *indent(_block_reduce(g, "acc", f"{out}[0]", prelude)),
                 "}"]
    return _kernel_text(params, body)


def region_kernels(region: Region, strides: dict | None = None) -> RegionKernels:
    """Generate the CUDA source of a planned region.

    ``strides`` maps each input's var id to its element strides (0 for broadcast axes);
    by default inputs are C-contiguous. Kernel names are hashes of the sources, so the same
    region always gives the same text and CuPy's compile cache hits across runs.

    Example::

        >>> from dualgpu.fusion import plan_graph
        >>> plan = plan_graph(dg.trace(lambda x: np.tanh(x) * 2, np.ones(3)))
        >>> rk = region_kernels(plan.regions[0])
        >>> rk.name.startswith("dg_fused_"), rk.blocks
        (True, 1)
        >>> print(rk.full_source())
        extern "C" __global__ void __launch_bounds__(256) dg_fused_...(
        ...
    """
    strides = dict(strides or {})
    for v in region.inputs:
        strides.setdefault(v.id, contiguous_strides(v.shape))
    em = Emitter(region, strides)
    name, source = named(em.generate(), "fused")
    rk = RegionKernels(name=name, source=source, threads=region.thread_count(),
                       inputs=list(region.inputs), outputs=list(region.outputs))
    if region.grid:
        finish_name, finish = named(_finish_source(em, rk.blocks), "finish")
        rk.finish_name, rk.finish_source = finish_name, finish
        rk.grid = [(g.var, g.op, g.ctype) for g in em.grid]
    return rk


def plan_source(plan, kernels: dict | None = None) -> str:
    """``dg.source`` text of a plan: the plan, then every generated kernel's source."""
    kernels = kernels if kernels is not None else {
        r.index: region_kernels(r) for r in plan.regions}
    names = {i: rk.name + (f" + {rk.finish_name}" if rk.finish_name else "")
             for i, rk in kernels.items()}
    parts = [plan.describe(names), "",
             "// Generated CUDA (shown for C-contiguous inputs; kernels are specialised on",
             "// the strides of the arrays they read)."]
    for r in plan.regions:
        parts.append(f"// ---- region {r.index}")
        parts.append(kernels[r.index].full_source())
    return "\n".join(parts)
