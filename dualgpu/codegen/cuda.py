"""CUDA source for fused regions (see :mod:`dualgpu.fusion`), and the CuPy launcher.

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

import hashlib
from dataclasses import dataclass, field
from string import Formatter
from typing import Any, NamedTuple

import numpy as np

from .. import names as N
from ..backends.cublas import WORKSPACE_BYTES, CublasGemm, gemm_dtype_ok, gemm_layout
from ..core import encode as E
from ..core.dtypes import promote
from ..core.flags import Flag
from ..core.ir import Eqn, Literal, Var
from ..errors import CodegenSafetyError
from ..fusion import LibraryStep, Region, is_reduction, is_reshape, plan_graph, reads_no_values
from ..ops import elementwise as _ew
from ..ops.linalg import matmul
from ..ops.reductions import reduce_sum

BLOCK = 256


def ctype(dtype) -> str:
    """The C type of a NumPy dtype (kernel dtypes only)."""
    return E.c_type(dtype)


# A C literal of a value typed as a dtype (``2.0f`` for float32, ``2.0`` for float64): the
# one encoder writes every number printed into a kernel.
c_literal = E.c_literal


def _identity(op: str, dtype) -> str:
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


def _combine(op: str, a: str, b: str) -> str:
    if op == "sum":
        return f"({a} + {b})"
    if op == "prod":
        return f"({a} * {b})"
    cmp = ">" if op == "max" else "<"
    # NaN wins, as in NumPy's max/min
    return f"((({b}) {cmp} ({a}) || ({b}) != ({b})) ? ({b}) : ({a}))"


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


def contiguous_strides(shape) -> tuple:
    strides, acc = [], 1
    for s in reversed(tuple(shape)):
        strides.append(acc if s != 1 else 0)
        acc *= s
    return tuple(reversed(strides))


def _named(template: str, prefix: str) -> tuple[str, str]:
    digest = hashlib.sha1(template.encode()).hexdigest()[:16]
    name = N.kernel_name(prefix, digest)
    return name, template.replace("@KERNEL@", name)


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
    return "\n".join(head + _indent(body) + ["}"]) + "\n"


def _indent(lines: list) -> list:
    return ["  " + ln for ln in lines]


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
            f"  if (threadIdx.x < s) {a} = {_combine(g.op, a, b)};",
            "  __syncthreads();",
            "}",
            f"if (threadIdx.x == 0) {dest} = {sh}[0];"]


class _Emitter:
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
        self.in_names = {v.id: N.input_name(i) for i, v in enumerate(region.inputs)}
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
                if reads_no_values(eqn.prim):
                    break  # reads no element of its input
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
        return N.var_name(k).replace("t", "v", 1)

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
        return not node.is_load and is_reduction(node.eqn.prim)

    def deps(self, k: int) -> list:
        node = self.nodes[k]
        if node.is_load or reads_no_values(node.eqn.prim):
            return []
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
        if node.is_load:
            v = node.var
            return f"{self.in_names[v.id]}[{self.offset(node.dims, self.strides[v.id])}]"
        eqn = node.eqn
        if is_reduction(eqn.prim):
            return f"acc{k}"
        if is_reshape(eqn.prim):
            return self.vname(self.deps(k)[0])
        comp = self.compute_dtype(eqn)
        template = eqn.prim.c_for(comp)
        return template.format(*self._args(k, comp), **self._params(eqn, template, comp))

    def _args(self, k: int, comp) -> list:
        """The C operands of node k's template, each cast to the dtype the template reads."""
        eqn = self.nodes[k].eqn
        prim = eqn.prim
        args = []
        deps = iter(self.deps(k))
        for pos, a in enumerate(eqn.inputs):
            if reads_no_values(prim):
                args.append("")
                continue
            want = np.dtype(bool) if (prim is _ew.where and pos == 0) else comp
            if prim is _ew.convert_element_type:  # its C form casts the operand itself
                want = a.dtype
            if isinstance(a, Literal):
                args.append(c_literal(a.value, want))
                continue
            s = self.vname(next(deps))
            if np.dtype(a.dtype) != want and not eqn.prim.has(Flag.VIEW):
                s = f"(({ctype(want)}){s})"
            args.append(s)
        return args

    @staticmethod
    def _params(eqn, template: str, comp) -> dict:
        """The parameters the C template prints: every one through the encoder, as a C type
        or a number (values are data, never code)."""
        name = eqn.prim.name
        E.check_params(name, eqn.params)
        params = {}
        for p in {f for _, f, _, _ in Formatter().parse(template) if f and not f.isdigit()}:
            if p == "T" and template is eqn.prim.c_int:  # the C type of an integer form
                params[p] = ctype(comp)
            elif p not in eqn.params:
                raise CodegenSafetyError(f"{name}: the C template uses {{{p}}}, which is "
                                           "not a parameter of the equation")
            elif p == "dtype":
                params[p] = E.c_type(eqn.params[p], f"{name}: parameter 'dtype'")
            else:
                params[p] = E.c_param(name, p, eqn.params[p],
                                      eqn.outs[0].dtype if p == "value" else comp)
        return params

    @staticmethod
    def compute_dtype(eqn):
        out = eqn.outs[0]
        if eqn.prim is _ew.where:
            return np.dtype(out.dtype)
        if out.dtype.kind == "b" and eqn.prim is not _ew.convert_element_type:
            return promote([a.aval for a in eqn.inputs])
        return np.dtype(out.dtype)

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
        note = "load" if node.is_load else node.eqn.prim.name
        return f"const {self._ctype_of(k)} {self.vname(k)} = {self.expr(k)};  // {note}"

    def accumulate(self, k: int, acc: str) -> str:
        """``acc = combine(acc, source)`` for reduction node k, the source cast to the
        reduction's dtype when they differ."""
        node = self.nodes[k]
        source = self.deps(k)[0]
        src = self.vname(source)
        if self.nodes[source].dtype != node.dtype:
            src = f"(({ctype(node.dtype)}){src})"
        return f"{acc} = {_combine(_reduction_op(node.eqn), acc, src)};"

    def _ctype_of(self, k) -> str:
        return ctype(self.nodes[k].dtype)

    # ------------------------------------------------------------------ kernel
    def generate(self) -> str:
        """The main kernel's text (its name left as ``@KERNEL@``)."""
        self.cached, self.used_cache = {}, set()
        levels = max([n.level for n in self.nodes], default=0)
        by_level = self.nodes_by_level(levels)
        thread = self._thread_index()
        for lv in range(levels + 1):
            thread += self._section(by_level[lv])
            thread += self._loop(lv, by_level)
        idx = self.idx
        body = [f"const {idx} tid = ({idx})blockIdx.x * {BLOCK} + ({idx})threadIdx.x;"]
        body += [f"{g.ctype} {g.name} = {_identity(g.op, g.var.dtype)};" for g in self.grid]
        body += [f"if (tid < {self.r.thread_count()}) {{", *_indent(self._place_loops(thread)),
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
                         f"{_identity(_reduction_op(self.nodes[k].eqn), dt)};")
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
            lines += _indent(item.body + [f"c{k}[r] = {self.vname(k)};" for k in stored])
            lines.append("}")
        return lines


def _reduction_op(eqn) -> str:
    """``sum``, ``prod``, ``max`` or ``min``: the combining operation of a reduction."""
    return eqn.prim.monoid


def _finish_source(emitter: _Emitter, blocks: int) -> str:
    """The kernel that finishes the grid reductions: block ``i`` reduces the partials of
    grid reduction ``i``."""
    params, body = [], []
    for i, g in enumerate(emitter.grid):
        out = emitter.out_names[g.var.id]
        params.append(f"const {g.ctype}* __restrict__ part_{g.name}")
        params.append(f"{g.ctype}* __restrict__ {out}")
        prelude = (f"{g.ctype} acc = {_identity(g.op, g.var.dtype)};",
                   f"for (int k = threadIdx.x; k < {blocks}; k += {BLOCK}) "
                   f"acc = {_combine(g.op, 'acc', f'part_{g.name}[k]')};")
        body += [f"if (blockIdx.x == {i}) {{",
                 *_indent(_block_reduce(g, "acc", f"{out}[0]", prelude)),
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
    em = _Emitter(region, strides)
    name, source = _named(em.generate(), "fused")
    rk = RegionKernels(name=name, source=source, threads=region.thread_count(),
                       inputs=list(region.inputs), outputs=list(region.outputs))
    if region.grid:
        finish_name, finish = _named(_finish_source(em, rk.blocks), "finish")
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


# --------------------------------------------------------------------------- small matmul
SMALL_MATMUL = 1 << 16  # M*N*K up to which matmul runs as our kernel (capturable, no cuBLAS)
THIN_K = 16             # products over at most this many terms: one thread per output element
SKINNY_N = 16           # products with at most this many columns: one warp per output row
SKINNY_SHARED = 48 << 10  # ... when the right operand fits in a block's shared memory
SKINNY_MIN_ROWS = 256
ROWS_PER_BLOCK = BLOCK // 32


def matmul_kernel_choice(m: int, n: int, k: int, a_strides, b_strides, itemsize: int):
    """Which of our kernels computes a 2-D product ``(m, k) @ (k, n)`` (element strides
    given), or None for cuBLAS. cuBLAS is slow on the skinny products of small networks
    (4096×512 @ 512×10: 12 µs for 8 MB read, H200 float32; 4096×10 @ 10×512: 7 µs):

    * ``"tiny"``: M·N·K ≤ ``SMALL_MATMUL``, or K ≤ ``THIN_K`` with ``b`` read along its rows
      (one thread per output element, loads and stores coalesced);
    * ``"skinny"``: N ≤ ``SKINNY_N``, ``a``'s rows contiguous, ``b`` fits in shared memory,
      at least ``SKINNY_MIN_ROWS`` rows (one warp per row of ``a``, read once, coalesced).

    Example::

        >>> matmul_kernel_choice(4096, 10, 512, (512, 1), (10, 1), 4)
        'skinny'
        >>> matmul_kernel_choice(4096, 512, 10, (10, 1), (512, 1), 4)
        'tiny'
        >>> matmul_kernel_choice(4096, 512, 784, (784, 1), (512, 1), 4) is None
        True
    """
    if m * n * k <= SMALL_MATMUL:
        return "tiny"
    if m * n >= 1 << 31:
        return None
    if k <= THIN_K and (b_strides[1] == 1 or n == 1):
        return "tiny"
    if n <= SKINNY_N and (a_strides[1] == 1 or k == 1) and m >= SKINNY_MIN_ROWS \
            and k * n * itemsize <= SKINNY_SHARED:
        return "skinny"
    return None


def skinny_matmul_kernel(m: int, n: int, k: int, a_row: int, b_strides, dtype):
    """Name and source of ``c[m, n] = a[m, k] @ b[k, n]`` for few columns ``n``: ``b`` is
    staged in shared memory, each warp reads one row of ``a`` (row stride ``a_row``, unit
    stride along it) and keeps ``n`` accumulators, reduced across the warp by shuffles.

    Example::

        >>> name, src = skinny_matmul_kernel(4096, 10, 512, 512, (10, 1), np.float32)
        >>> "__shfl_xor_sync" in src and "__shared__ float bs[5120]" in src
        True
    """
    ct = ctype(dtype)
    b0, b1 = b_strides
    zero = c_literal(0, dtype)
    acc = "\n".join(f"  {ct} acc{j} = {zero};" for j in range(n))
    fma = "\n".join(f"    acc{j} += x * bs[p * {n} + {j}];" for j in range(n))
    red = "\n".join(f"    acc{j} += __shfl_xor_sync(0xffffffffu, acc{j}, o);"
                     for j in range(n))
    store = "\n".join(f"  if (lane == {j}) c[row * {n} + {j}] = acc{j};" for j in range(n))
    template = "\n".join([
        f'extern "C" __global__ void __launch_bounds__({BLOCK}) @KERNEL@(',
        f"    const {ct}* __restrict__ a, const {ct}* __restrict__ b, {ct}* __restrict__ c) {{",
        f"  __shared__ {ct} bs[{k * n}];",
        f"  for (int t = threadIdx.x; t < {k * n}; t += {BLOCK}) {{",
        f"    const int p = t / {n}, j = t % {n};",
        f"    bs[t] = b[(long long)p * {b0} + (long long)j * {b1}];",
        "  }",
        "  __syncthreads();",
        "  const int lane = threadIdx.x & 31;",
        f"  const long long row = (long long)blockIdx.x * {ROWS_PER_BLOCK} + (threadIdx.x >> 5);",
        f"  if (row >= {m}) return;   // the whole warp: no shuffle is left half-done",
        acc,
        f"  const {ct}* ar = a + row * {a_row};",
        f"  for (int p = lane; p < {k}; p += 32) {{",
        f"    const {ct} x = ar[p];",
        fma,
        "  }",
        "  for (int o = 16; o > 0; o >>= 1) {",
        red,
        "  }",
        store,
        "}"]) + "\n"
    return _named(template, "skinny")


def matmul_kernel(m: int, n: int, k: int, a_strides, b_strides, dtype) -> tuple[str, str]:
    """Name and source of ``c[m, n] = a[m, k] @ b[k, n]`` (element strides given), one thread
    per output element: for the tiny products of small networks, where launching cuBLAS
    costs more than the product, and which CUDA-graph capture cannot hold.

    Example::

        >>> name, src = matmul_kernel(4, 1, 10, (10, 1), (1, 0), np.float64)
        >>> name
        'dg_matmul_6b4cc3fee5a2faf4'
    """
    ct = ctype(dtype)
    a0, a1 = a_strides
    b0, b1 = b_strides
    # 64-bit indices once an offset (a thin slice of a big array: x[:, :8]) or the thread
    # index may pass INT_MAX; else the text (and its hash) of the 32-bit kernel
    reach = max(m * n + BLOCK, (m - 1) * abs(a0) + (k - 1) * abs(a1),
                (k - 1) * abs(b0) + (n - 1) * abs(b1))
    it, w = ("long long", "(long long)") if reach > 2 ** 31 - 1 else ("int", "")
    template = "\n".join([
        f'extern "C" __global__ void __launch_bounds__({BLOCK}) @KERNEL@(',
        f"    const {ct}* __restrict__ a, const {ct}* __restrict__ b, {ct}* __restrict__ c) {{",
        f"  const {it} t = ({it})blockIdx.x * {BLOCK} + ({it})threadIdx.x;",
        f"  if (t >= {m * n}) return;",
        f"  const {it} i = t / {max(n, 1)}, j = t % {max(n, 1)};",
        f"  {ct} acc = {c_literal(0, dtype)};",
        f"  for (int p = 0; p < {k}; ++p) "
        f"acc += a[i * {a0} + {w}p * {a1}] * b[{w}p * {b0} + j * {b1}];",
        "  c[t] = acc;",
        "}"]) + "\n"
    return _named(template, "matmul")


# --------------------------------------------------------------------------- CuPy launcher
class FusedProgram:
    """Runs a plan on CuPy: library steps by their registry impls, regions as kernels.

    Calls are asynchronous: nothing here reads device memory from the host.
    """

    def __init__(self, graph, backend, precision: str = "float32", recompute: bool = False):
        self.graph = graph
        self.backend = backend
        self.cp = backend.xp
        self.precision = precision
        self.gemm_calls = 0   # products run on dualgpu's cuBLAS handle (capturable)
        self.plan = plan_graph(graph, recompute=recompute)
        self.kernels = {r.index: region_kernels(r) for r in self.plan.regions}
        self.source = plan_source(self.plan, self.kernels)
        self._compiled: dict = {}
        # positions, among a region's outputs, of its grid reductions (in region.grid order)
        self._grid_positions = {
            r.index: _positions(r.outputs, [e.outs[0] for e in r.grid])
            for r in self.plan.regions}
        self._ones: dict = {}   # (length, dtype char) -> ones vector of _sum_as_product
        self._consts = {c.id: self.cp.asarray(c.value) if not backend.is_sparse(c.value)
                        else c.value for c in graph.consts}

    def _functions(self, region, arrays):
        key = (region.index,) + tuple(a.strides for a in arrays)
        fns = self._compiled.get(key)
        if fns is None:
            strides = {}
            for v, a in zip(region.inputs, arrays):
                item = a.itemsize
                strides[v.id] = tuple(0 if n == 1 else s // item
                                      for n, s in zip(a.shape, a.strides))
            rk = region_kernels(region, strides)
            main = self.cp.RawKernel(rk.source, rk.name)
            finish = self.cp.RawKernel(rk.finish_source, rk.finish_name) \
                if rk.finish_source else None
            fns = self._compiled[key] = (rk, main, finish)
        return fns

    def _run_region(self, region, env):
        cp = self.cp
        arrays = [self._as_input(self._read(env, v), v) for v in region.inputs]
        rk, main, finish = self._functions(region, arrays)
        if rk.threads == 0:
            self._eager_region(region, env)
            return
        outs = [self._dest(env, v) for v in region.outputs]
        grid = self._grid_positions[region.index]
        parts = [cp.empty(rk.blocks, dtype=e.outs[0].dtype) for e in region.grid]
        main((rk.blocks,), (BLOCK,),
             tuple(arrays + [o for i, o in enumerate(outs) if i not in grid] + parts))
        if finish is not None:
            fargs = []
            for p, i in zip(parts, grid):
                fargs += [p, outs[i]]
            finish((len(parts),), (BLOCK,), tuple(fargs))
        for v, o in zip(region.outputs, outs):
            env[v.id] = o

    def _dest(self, env, v):
        """Where the value ``v`` is written: its slot of the caller's output block when it
        is a program output (``__call__(..., out=)``), else a new array."""
        dests = env.get(_DESTS)
        if dests is not None:
            d = dests.pop(v.id, None)
            if d is not None:
                return d
        return self.cp.empty(v.shape, dtype=v.dtype)

    def _as_input(self, a, v):
        if not isinstance(a, self.cp.ndarray):
            a = self.cp.asarray(a)
        return a if a.dtype == v.dtype else a.astype(v.dtype)

    def _eager_region(self, region, env):
        for eqn in region.eqns:
            self._library(eqn, env)

    def _read(self, env, a):
        if isinstance(a, Literal):
            return a.value
        if a.id in self._consts:
            return self._consts[a.id]
        return env[a.id]

    def _small_matmul(self, eqn, env):
        """Our kernel for a 1-D/2-D float product that cuBLAS runs badly (tiny, thin or
        skinny: :func:`matmul_kernel_choice`), else None (cuBLAS does it)."""
        a, b = (self._read(env, x) for x in eqn.inputs)
        if not (isinstance(a, self.cp.ndarray) and isinstance(b, self.cp.ndarray)) \
                or a.ndim not in (1, 2) or b.ndim not in (1, 2) or a.dtype != b.dtype \
                or a.dtype.kind != "f" or a.size == 0 or b.size == 0:
            return None
        m, k = (1, a.shape[0]) if a.ndim == 1 else a.shape
        n = 1 if b.ndim == 1 else b.shape[1]
        item = a.itemsize
        sa = (0, a.strides[0] // item) if a.ndim == 1 else tuple(s // item for s in a.strides)
        sb = (b.strides[0] // item, 0) if b.ndim == 1 else tuple(s // item for s in b.strides)
        choice = matmul_kernel_choice(m, n, k, sa, sb, item)
        if choice is None:
            return None
        key = (choice, m, n, k, sa, sb, a.dtype.char)
        fn = self._compiled.get(key)
        if fn is None:
            if choice == "tiny":
                name, src = matmul_kernel(m, n, k, sa, sb, a.dtype)
            else:
                name, src = skinny_matmul_kernel(m, n, k, sa[0], sb, a.dtype)
            fn = self._compiled[key] = self.cp.RawKernel(src, name)
        out = self._dest(env, eqn.outs[0])
        if choice == "tiny":
            fn((max(1, -(-(m * n) // BLOCK)),), (BLOCK,), (a, b, out))
        else:
            fn((-(-m // ROWS_PER_BLOCK),), (BLOCK,), (a, b, out))
        return out

    def _sum_as_product(self, eqn, env):
        """A float sum over the leading (or the trailing) axes of a C-contiguous array as a
        product with a vector of ones on our cuBLAS handle, at full precision: reading
        the array once, coalesced (CuPy reduces a long leading axis with one thread per
        column: 44 µs for 4096×512 float32 on the H200, against ~3 µs); else None."""
        cp = self.cp
        x = self._read(env, eqn.inputs[0])
        axes = tuple(sorted(eqn.params["axes"]))
        if not isinstance(x, cp.ndarray) or not gemm_dtype_ok(x.dtype) \
                or not x.flags.c_contiguous or x.size == 0 or not axes or len(axes) == x.ndim:
            return None
        nd, r = x.ndim, len(axes)
        if axes == tuple(range(r)):
            rows = int(np.prod(x.shape[:r]))
            leading = True
        elif axes == tuple(range(nd - r, nd)):
            rows = int(np.prod(x.shape[: nd - r]))
            leading = False
        else:
            return None
        a = x.reshape(rows, x.size // rows)
        length = a.shape[0] if leading else a.shape[1]
        ones = self._ones.get((length, x.dtype.char))
        if ones is None:
            ones = cp.ones(length, dtype=x.dtype)
            stream = cp.cuda.get_current_stream()
            if not stream.is_capturing():
                # filled before any stream reads it (another thread's call may, at once)
                stream.synchronize()
            self._ones[(length, x.dtype.char)] = ones
        left, right = (ones, a) if leading else (a, ones)
        lay = gemm_layout(left.shape, left.strides, right.shape, right.strides, x.itemsize)
        out = self._dest(env, eqn.outs[0])
        CublasGemm.get().run(lay, left, right, out, "float32")
        self.gemm_calls += 1
        return out

    def _gemm(self, eqn, env):
        """A float32/float64 product on dualgpu's own cuBLAS handle (a CUDA-graph capture
        holds it; CuPy's own cuBLAS calls are refused there), else None."""
        a, b = (self._read(env, x) for x in eqn.inputs)
        cp = self.cp
        if not (isinstance(a, cp.ndarray) and isinstance(b, cp.ndarray)) \
                or a.dtype != b.dtype or not gemm_dtype_ok(a.dtype):
            return None
        lay = gemm_layout(a.shape, a.strides, b.shape, b.strides, a.itemsize)
        if lay is None:
            if 0 in a.shape or 0 in b.shape:
                return None
            a, b = cp.ascontiguousarray(a), cp.ascontiguousarray(b)
            lay = gemm_layout(a.shape, a.strides, b.shape, b.strides, a.itemsize)
            if lay is None:
                return None
        out = self._dest(env, eqn.outs[0])
        CublasGemm.get().run(lay, a, b, out, self.precision)
        self.gemm_calls += 1
        return out

    def _library(self, eqn, env):
        if eqn.prim is reduce_sum:
            out = self._sum_as_product(eqn, env)
            if out is not None:
                env[eqn.outs[0].id] = out
                return
        if eqn.prim is matmul:
            out = self._small_matmul(eqn, env)
            if out is None:
                out = self._gemm(eqn, env)
            if out is not None:
                env[eqn.outs[0].id] = out
                return
        outs = eqn.prim.impl(self.cp, *[self._read(env, a) for a in eqn.inputs], **eqn.params)
        outs = outs if eqn.prim.multiple_results else [outs]
        for v, o in zip(eqn.outs, outs):
            env[v.id] = o

    def __call__(self, *arrays, out=None):
        """The outputs of the program on ``arrays``; with ``out`` (one C-contiguous array
        per output), every output is written into its array, produced there directly where
        a kernel or GEMM computes it, copied there otherwise."""
        cp = self.cp
        env = {v.id: a for v, a in zip(self.graph.inputs, arrays)}
        if out is not None:
            env[_DESTS] = self._destinations(out)
        for step, dead in zip(self.plan.steps, self.plan.releases):
            if isinstance(step, LibraryStep):
                self._library(step.eqn, env)
            else:
                self._run_region(step, env)
            for vid in dead:  # back to the pool: a call holds what is alive, not all it made
                env.pop(vid, None)
        res = []
        for a in self.graph.outputs:
            if isinstance(a, Literal):
                res.append(cp.full((), a.value, dtype=a.dtype))
            else:
                res.append(self._read(env, a))
        if out is not None:
            for i, (o, d) in enumerate(zip(res, out)):
                if o is not d:
                    cp.copyto(d, o)
                    res[i] = d
        return res

    def step_times(self, *arrays, repeat: int = 20) -> list:
        """``[(step index, label, microseconds)]``: the device time of each step of the plan,
        for profiling. Each step is captured alone as a CUDA graph and replayed ``repeat``
        times between two events, so the time is the step's own GPU time, without the host
        time of launching it (a step that cannot be captured is timed eagerly instead, and
        its label says so).

        Example::

            >>> import cupy as cp
            >>> from dualgpu.backends.cupy import get_cupy_backend
            >>> g = dg.trace(dg.grad(lambda w, x: cp.sum(cp.tanh(x @ w))), cp.ones((8, 4)),
            ...              cp.ones((16, 8)))
            >>> rows = FusedProgram(g, get_cupy_backend()).step_times(cp.ones((8, 4)),
            ...                                                      cp.ones((16, 8)))
            >>> [label.split()[0] for _, label, _ in rows]
            ['library', 'kernel', 'library']
        """
        cp = self.cp
        gemm = CublasGemm.get()
        workspace = cp.empty(WORKSPACE_BYTES, dtype=cp.uint8)
        stream = cp.cuda.Stream(non_blocking=True)
        env = {v.id: a for v, a in zip(self.graph.inputs, arrays)}
        rows = []
        with stream:
            for i, step in enumerate(self.plan.steps):
                if isinstance(step, LibraryStep):
                    def run(step=step):
                        self._library(step.eqn, env)
                    e = step.eqn
                    label = (f"library {e.prim.name} " + " ".join(
                        str(tuple(getattr(a, "shape", ()))) for a in e.inputs))
                else:
                    def run(step=step):
                        self._run_region(step, env)
                    label = (f"kernel region {step.index}: {len(step.eqns)} eqns, domain "
                             f"{tuple(step.domain)}, loop axes {tuple(step.loop_axes)}")
                run()   # compiles, and fills env for the steps after
                t = self._graph_time(run, stream, gemm, workspace, repeat)
                if t is None:
                    t = self._eager_time(run, stream, repeat)
                    label += " (not capturable: eager, launch included)"
                rows.append((i, label, t))
        stream.synchronize()
        return rows

    def _graph_time(self, run, stream, gemm, workspace, repeat):
        cp = self.cp
        gemm.capture_workspace = lambda: workspace
        try:
            stream.begin_capture(cp.cuda.runtime.streamCaptureModeRelaxed)
            try:
                run()
            finally:
                graph = stream.end_capture()
        except Exception:  # noqa: BLE001 - this step cannot be captured
            return None
        finally:
            gemm.capture_workspace = None
        graph.launch(stream)
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        for _ in range(repeat):
            graph.launch(stream)
        stop.record(stream)
        stop.synchronize()
        return cp.cuda.get_elapsed_time(start, stop) * 1e3 / repeat

    def _eager_time(self, run, stream, repeat):
        cp = self.cp
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        for _ in range(repeat):
            run()
        stop.record(stream)
        stop.synchronize()
        return cp.cuda.get_elapsed_time(start, stop) * 1e3 / repeat

    def _destinations(self, out) -> dict:
        """Var id -> the caller's array for each output computed by an equation of the
        program (first occurrence only: a repeated output or an input is copied)."""
        inputs = {v.id for v in self.graph.inputs} | set(self._consts)
        dests = {}
        for a, d in zip(self.graph.outputs, out):
            if isinstance(a, Var) and a.id not in inputs and a.id not in dests \
                    and d.flags.c_contiguous and d.dtype == a.dtype \
                    and tuple(d.shape) == tuple(a.shape):
                dests[a.id] = d
        return dests


_DESTS = ("destinations",)   # env key of the output destinations (never a var id)


def _positions(vars_: list, wanted: list) -> list:
    """Positions in ``vars_`` of each of ``wanted`` (by id)."""
    where = {v.id: i for i, v in enumerate(vars_)}
    return [where[v.id] for v in wanted]


def compile_fused(graph, backend, precision: str = "float32", recompute: bool = False):
    """Plan ``graph``, generate its kernels and return ``(fn, source_text)``; ``fn(*arrays)``
    returns the list of outputs (CuPy arrays). Kernels compile on first use, once per input
    stride pattern.

    Example::

        >>> import cupy as cp
        >>> from dualgpu.backends.cupy import get_cupy_backend
        >>> x = v = cp.ones(3)
        >>> f = lambda x: cp.sum(cp.tanh(x) ** 2)
        >>> fn, text = compile_fused(dg.trace(dg.hvp(f), x, v), get_cupy_backend())
        >>> hv = fn(x, v)[-1]
        >>> hv.shape
        (3,)
    """
    program = FusedProgram(graph, backend, precision, recompute)
    return program, program.source
