"""A fusion plan written out as straight-line CuPy Python: what :class:`FusedProgram` does at
run time, as source (for ``dg.export``). Pure Python: no CuPy and no GPU needed.

For each step of the plan, either a kernel launch -- outputs allocated with ``xp.empty``,
the grid-reduction partials, the launch of the region's kernel and of the kernel that
finishes its grid reductions -- or the library call written from the registry's Python
template (:func:`~dualgpu.codegen.python.emit_equation`, as the NumPy source is); after each
step, ``del`` of the values the plan releases (``plan.releases``), so that a call holds what
is alive, as dualgpu's launcher does.

The kernels are generated for C-contiguous operands. The program's inputs (checked by the
caller), its constants and every kernel output are C-contiguous; a value a library call made
(possibly a view) reaches a kernel through ``_c(value, dtype)``, which copies it only when it
is not a C-contiguous array of the kernel's dtype. Matrix products and sums are library
calls (``xp.matmul``, ``xp.sum``): the module needs neither dualgpu's cuBLAS handle nor its
small-product kernels.

Example::

    >>> plan = plan_graph(dg.trace(lambda x: np.sum(np.exp(x) ** 2), np.ones(1000)))
    >>> prog = plan_program(plan, "program")
    >>> print(prog.source)  # doctest: +ELLIPSIS
    def program(x):
        # [0] kernel region 0: domain (1000); exp, multiply, reduce_sum (grid)
        t2 = xp.empty((), dtype=xp.float64)
        _part0 = xp.empty(4, dtype=xp.float64)
        _dg_fused_...((4,), (256,), (x, _part0))
        _dg_finish_...((1,), (256,), (_part0, t2))
        del _part0
        del x
        return (t2,)
    <BLANKLINE>
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..base import names as naming
from ..core import encode
from ..core.ir import Literal, Var
from ..core.pprint import Namer
from ..errors import library_location
from ..fusion import LibraryStep, Plan, plan_graph  # noqa: F401  (plan_graph: the examples)
from .cuda import BLOCK, RegionKernels, region_kernels
from .python import emit_equation, literal_source


@dataclass
class PlanProgram:
    """The source of one function running a plan on ``xp = cupy``, and what it reads from
    its module: the constants (by name), the kernels (name -> CUDA source, each once, in
    order of first launch) and the Python-run equations (for the ``ops`` the module needs)."""

    source: str
    consts: dict
    kernels: dict = field(default_factory=dict)
    library_eqns: list = field(default_factory=list)
    launches: int = 0


def _dtype(dtype) -> str:
    return "xp." + encode.py_dtype_attr(dtype, "a value's dtype")


def _shape(shape) -> str:
    return encode.py_literal(tuple(int(s) for s in shape), "a shape")


def _locations(eqns) -> str:
    """The user's source lines of ``eqns`` (distinct, in order; dualgpu's own left out)."""
    seen: list = []
    for e in eqns:
        loc = e.source
        if loc and not library_location(loc) and loc not in seen:
            seen.append(loc)
    # a file name is data: printable, one line
    return ", ".join("".join(c if c.isprintable() else "?" for c in loc) for loc in seen)


class _Writer:
    def __init__(self, plan: Plan, fn_name: str):
        self.plan = plan
        graph = plan.graph
        self.name = Namer(graph)
        # the user's argument names become parameters: off xp, ops, t0, c0, ...
        labels = [self.name(v) for v in graph.inputs]
        for v, safe in zip(graph.inputs, naming.safe_input_names(labels)):
            self.name.names[v.id] = safe
        for e in graph.eqns:  # values named in graph order, as str(graph) and the plan do
            for v in e.outs:
                self.name(v)
        self.fn_name = naming.function_name(fn_name)
        # values known to be C-contiguous arrays of their own dtype
        self.contiguous = {v.id for v in graph.inputs} | {c.id for c in graph.consts}
        self.out = PlanProgram(source="", consts={self.name(c): c.value for c in graph.consts})
        self.lines: list = []

    def arg(self, a) -> str:
        return literal_source(a.value) if isinstance(a, Literal) else self.name(a)

    def library(self, eqn) -> None:
        rhs = emit_equation(eqn, [self.arg(a) for a in eqn.inputs])
        self.lines.append(f"    {', '.join(self.name(v) for v in eqn.outs)} = {rhs}")
        self.out.library_eqns.append(eqn)

    def kernel_input(self, v: Var) -> str:
        if v.id in self.contiguous:
            return self.name(v)
        return f"_c({self.name(v)}, {_dtype(v.dtype)})"

    def launch(self, region, rk: RegionKernels) -> None:
        grid_ids = {e.outs[0].id for e in region.grid}
        for v in region.outputs:
            self.lines.append(f"    {self.name(v)} = xp.empty({_shape(v.shape)}, "
                              f"dtype={_dtype(v.dtype)})")
        parts = [f"_part{i}" for i in range(len(region.grid))]
        for p, e in zip(parts, region.grid):
            self.lines.append(f"    {p} = xp.empty({encode.py_literal(rk.blocks)}, "
                              f"dtype={_dtype(e.outs[0].dtype)})")
        args = [self.kernel_input(v) for v in region.inputs]
        args += [self.name(v) for v in region.outputs if v.id not in grid_ids]
        args += parts
        self.lines.append(f"    {self.call(rk.name, rk.blocks, args)}")
        if rk.finish_name is not None:
            fargs = []
            for p, e in zip(parts, region.grid):
                fargs += [p, self.name(e.outs[0])]
            self.lines.append(f"    {self.call(rk.finish_name, len(parts), fargs)}")
            self.out.kernels.setdefault(rk.finish_name, rk.finish_source)
            self.lines.append(f"    del {', '.join(parts)}")
        self.out.kernels.setdefault(rk.name, rk.source)
        self.contiguous.update(v.id for v in region.outputs)

    def call(self, kernel: str, blocks: int, args: list) -> str:
        self.out.launches += 1
        tup = ", ".join(args) + ("," if len(args) == 1 else "")
        return (f"{kernel_global(kernel)}(({encode.py_literal(int(blocks))},), "
                f"({encode.py_literal(BLOCK)},), ({tup}))")

    def region(self, i: int, region) -> None:
        rk = region_kernels(region)
        grid = {e.outs[0].id for e in region.grid}
        ops = ", ".join(dict.fromkeys(
            e.prim.name + (" (grid)" if e.outs[0].id in grid else "") for e in region.eqns))
        dom = ",".join(str(d) for d in region.domain)
        head = f"    # [{i}] kernel region {region.index}: domain ({dom})"
        if region.loop_axes:
            nd = len(region.domain)
            head += f", loop over axes {tuple(a + nd for a in region.loop_axes)}"
        self.lines.append(f"{head}; {ops}")
        self.where(region.eqns)
        if rk.threads == 0:  # an empty domain: nothing to launch, as FusedProgram does
            for eqn in region.eqns:
                self.library(eqn)
        else:
            self.launch(region, rk)

    def where(self, eqns) -> None:
        loc = _locations(eqns)
        if loc:
            self.lines.append(f"    #     from {loc}")

    def write(self) -> PlanProgram:
        graph = self.plan.graph
        params = ", ".join(self.name(v) for v in graph.inputs)
        self.lines.append(f"def {self.fn_name}({params}):")
        for c in graph.consts:
            self.lines.append(f"    # {self.name(c)}: constant {c.aval.str_short()}")
        for i, (step, dead) in enumerate(zip(self.plan.steps, self.plan.releases)):
            if isinstance(step, LibraryStep):
                loc = _locations([step.eqn])
                self.lines.append(f"    # [{i}] library {step.eqn.prim.name}"
                                  + (f"  -- {loc}" if loc else ""))
                self.library(step.eqn)
            else:
                self.region(i, step)
            if dead:
                self.lines.append(f"    del {', '.join(self.name.names[v] for v in dead)}")
        self.lines.append(f"    return {self.results()}")
        self.out.source = "\n".join(self.lines) + "\n"
        return self.out

    def results(self) -> str:
        """The returned tuple. A literal becomes a 0-d array; an input or a constant returned
        as it is, or an output repeated, is copied (results own their memory)."""
        graph = self.plan.graph
        owned = {v.id for v in graph.inputs} | {c.id for c in graph.consts}
        outs, seen = [], set()
        for a in graph.outputs:
            if isinstance(a, Literal):
                outs.append(f"xp.full((), {literal_source(a.value)}, dtype={_dtype(a.dtype)})")
            elif a.id in owned or a.id in seen:
                outs.append(f"xp.array({self.name(a)}, copy=True)")
            else:
                outs.append(self.name(a))
                seen.add(a.id)
        return "(" + ", ".join(outs) + ("," if len(outs) == 1 else "") + ")"


def kernel_global(kernel_name: str) -> str:
    """The module-level name of a compiled kernel (a leading ``_``: no parameter of the
    generated function can take it, since user names never start with one)."""
    return "_" + kernel_name


def plan_program(plan: Plan, fn_name: str) -> PlanProgram:
    """The CuPy source of a function running ``plan`` step by step (see the module
    docstring), with the constants and kernels it reads."""
    return _Writer(plan, fn_name).write()
