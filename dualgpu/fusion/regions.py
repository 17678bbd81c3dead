"""What the planner makes: regions (what one generated kernel evaluates, with the cones of
the values they recompute), library steps, the plan that orders them and the memory it holds
(:func:`memory_profile`); the kinds of ops a kernel evaluates, asked by flag. See
:mod:`dualgpu.fusion` for the model."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.flags import Flag
from ..core.ir import Graph, Var
from ..core.pprint import Namer, param_str


# the kinds of ops a kernel evaluates, asked by flag (never by name)
def is_reduction(prim) -> bool:
    """A reduction over static axes (its ``monoid``: sum, max, min or prod)."""
    return prim.has(Flag.REDUCTION)


def is_view(prim) -> bool:
    """Moves no data in a kernel: only relabels the axes of a value."""
    return prim.has(Flag.VIEW)


def is_reshape(prim) -> bool:
    """A view that changes the shape (not an elementwise broadcast)."""
    return prim.has(Flag.VIEW) and not prim.has(Flag.ELEMENTWISE)


def reads_no_values(prim) -> bool:
    """Reads only the shape of its input (fill_like)."""
    return prim.has(Flag.IGNORES_VALUES)


_CALL = re.compile(r"[A-Za-z_]\w*\s*\(")


def recomputes_cheaply(eqn) -> bool:
    """Whether a kernel computes ``eqn`` in a few plain instructions, cheaper than reading
    its value back from memory: a view, a cast, a fill, or an op whose C form calls no
    function and takes no remainder (a negation, a sum, a product, a quotient, a comparison,
    a select); measured in benchmarks/NOTES.md ("Issue 40").

    Example::

        >>> g = dg.trace(lambda x: np.exp(-x) / 2, np.ones(3))
        >>> [(e.prim.name, recomputes_cheaply(e)) for e in g.eqns]
        [('negative', True), ('exp', False), ('true_divide', True)]
    """
    prim = eqn.prim
    if is_view(prim) or reads_no_values(prim) or prim.has(Flag.CASTS):
        return True
    c = prim.c_for(eqn.outs[0].dtype) if prim.has(Flag.ELEMENTWISE) else None
    return c is not None and "%" not in c and _CALL.search(c) is None


def padded_read(eqn) -> tuple | None:
    """How a kernel reads the output of ``eqn`` straight from its input's memory, when its
    op lowers as a ``padded_read`` (the transpose of a slice: ``scatter_add`` of a key of
    slices into zeros) and the key allows it: per output axis ``(start, step, count)``,
    element ``i`` being the input's ``(i - start) / step`` where that is an integer in
    ``[0, count)``, else zero. None for any other equation or key.

    Example (the gradient of ``x[1:]``: element 0 is zero, element ``i`` is ``g[i - 1]``)::

        >>> g = dg.trace(dg.grad(lambda x: np.sum(np.sin(x[1:]))), np.ones(5))
        >>> [padded_read(e) for e in g.eqns if e.prim.name == "scatter_add"]
        [((1, 1, 4),)]
    """
    if eqn.prim.lowering("kernel") != "padded_read" or len(eqn.inputs) != 1:
        return None
    g, key, shape = eqn.inputs[0], eqn.params["key"], tuple(eqn.outs[0].shape)
    if not isinstance(g, Var) or len(g.shape) != len(shape) or len(key) > len(shape) \
            or any(e is None or e[0] != "slice" for e in key):
        return None
    axes = []
    for j, n in enumerate(shape):
        e = key[j] if j < len(key) else ("slice", None, None, None)
        start, stop, step = slice(e[1], e[2], e[3]).indices(n)
        count = len(range(start, stop, step))
        if count != g.shape[j] or count == 0:
            return None
        axes.append((start, step, count))
    return tuple(axes)
KERNEL_DTYPES = frozenset("bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 "
                          "float32 float64".split())
UNROLL_MAX = 32        # loops over at most this many reduced elements are fully unrolled
LOOP_MAX = 1024        # longer in-thread reductions are left to the library
LOOP_MIN_THREADS = 2048  # ... and so are rolled loops with too few threads to fill the GPU
# A rolled loop recomputes the loop-varying values it needs from earlier loops (an unrolled
# one keeps them in registers), so a region holds at most this many rolled loops: the kernel
# text then stays linear in the region's size (a time-stepping loop would otherwise make it
# quadratic).
ROLLED_LOOPS_MAX = 8


def _dtype_ok(aval) -> bool:
    ok = _KERNEL_DTYPE_OK.get(aval.dtype)   # a dtype's name is slow: once per dtype
    if ok is None:
        ok = _KERNEL_DTYPE_OK[aval.dtype] = np.dtype(aval.dtype).name in KERNEL_DTYPES
    return ok


_KERNEL_DTYPE_OK: dict = {}


def fusible(eqn) -> bool:
    """Whether ``eqn`` can be evaluated inside a generated kernel."""
    prim = eqn.prim
    if prim.multiple_results or len(eqn.outs) != 1:
        return False
    if not all(_dtype_ok(a.aval) for a in eqn.inputs) or not _dtype_ok(eqn.outs[0].aval):
        return False
    if is_reduction(prim):
        return True
    if is_reshape(prim) or padded_read(eqn) is not None:
        return True
    return prim.has(Flag.ELEMENTWISE) and prim.has_c_form


@dataclass
class Cone:
    """What a padded read recomputes instead of reading its input from memory: the
    elementwise equations (``eqns``, in order, the last computing the input) of an earlier
    region, evaluated at the read's shifted index. ``axes[var id]``, and ``loads[(k, p)]``
    for operand ``p`` of ``eqns[k]`` read from memory, give for each axis of the value the
    axis of the padded read's input that indexes it (None: broadcast). ``inputs``: the
    arrays in memory the cone reads, first-use order."""

    eqns: list
    axes: dict
    loads: dict
    inputs: list


@dataclass
class Region:
    """Equations evaluated by one generated kernel (see the module docstring)."""

    domain: tuple = ()
    loop_axes: tuple = ()          # negative domain axes reduced inside each thread
    eqns: list = field(default_factory=list)
    dims: dict = field(default_factory=dict)      # var id -> domain axis per own axis
    level: dict = field(default_factory=dict)     # var id -> loop index that defines it
    grid: list = field(default_factory=list)      # grid-reduction equations
    frozen: bool = False           # no growth of the domain, no new loop axes
    inputs: list = field(default_factory=list)    # external Vars read, first-use order
    outputs: list = field(default_factory=list)   # Vars used after the region
    index: int = 0
    cones: dict = field(default_factory=dict)     # padded read's output id -> its Cone
    _grid_ids: set = field(default_factory=set, repr=False)  # grid_outs() while building

    # ------------------------------------------------------------------ queries
    def defines(self, a) -> bool:
        return isinstance(a, Var) and a.id in self.dims

    def grid_outs(self) -> set:
        return {e.outs[0].id for e in self.grid}

    def varies_in_loop(self, dims) -> bool:
        return any(d in self.loop_axes for d in dims if d is not None)

    def thread_axes(self) -> list:
        """Negative domain axes of size > 1 that index threads."""
        nd = len(self.domain)
        return [a - nd for a in range(nd)
                if self.domain[a] != 1 and (a - nd) not in self.loop_axes]

    def thread_count(self) -> int:
        return int(np.prod([self.domain[a] for a in self.thread_axes()], dtype=np.int64))

    def loop_extent(self) -> int:
        return int(np.prod([self.domain[a] for a in self.loop_axes], dtype=np.int64))

    def unrolled(self) -> bool:
        return 0 < self.loop_extent() <= UNROLL_MAX

    def kernel_count(self) -> int:
        return 1 + (1 if self.grid else 0)

    # ------------------------------------------------------------------ building
    def try_add(self, eqn) -> bool:
        """Add ``eqn`` if the kernel can compute it; return whether it was added."""
        if not self.eqns:
            return self._start(eqn)
        if not reads_no_values(eqn.prim) and any(
                isinstance(a, Var) and a.id in self._grid_ids for a in eqn.inputs):
            return False  # a grid reduction is finished only after the kernel
        if is_reduction(eqn.prim):
            return self._add_reduction(eqn)
        if is_reshape(eqn.prim):
            return self._add_reshape(eqn)
        return self._add_elementwise(eqn)

    def _start(self, eqn) -> bool:
        x = eqn.inputs[0]
        shape = x.shape if is_reduction(eqn.prim) else eqn.outs[0].shape
        self.domain = tuple(shape)
        if is_reshape(eqn.prim):
            return False
        ok = self.try_add_unchecked(eqn)
        if not ok:
            self.domain = ()
        return ok

    def try_add_unchecked(self, eqn) -> bool:
        if is_reduction(eqn.prim):
            return self._add_reduction(eqn)
        return self._add_elementwise(eqn)

    def _in_level(self, eqn) -> int:
        return max([self.level[a.id] for a in eqn.inputs if self.defines(a)], default=0)

    def _commit(self, eqn, dims, level, domain=None):
        if domain is not None:
            self.domain = domain
        v = eqn.outs[0]
        self.dims[v.id] = tuple(dims)
        self.level[v.id] = level
        self.eqns.append(eqn)
        return True

    def _default_axis(self, j: int, nd: int, size: int, domain) -> int | None:
        d = j - nd
        if -d > len(domain) or domain[d] != size:
            return None
        return d

    def _grown(self, shape):
        """The domain after broadcasting with ``shape``, or None if it may not grow so."""
        try:
            new = tuple(np.broadcast_shapes(self.domain, tuple(shape)))
        except ValueError:
            return None
        if new != self.domain and (self.frozen or self.loop_axes):
            return None
        return new

    def _add_elementwise(self, eqn) -> bool:
        if is_view(eqn.prim) and not any(self.defines(a) for a in eqn.inputs):
            return False  # a view of an array made elsewhere: the library does it for free
        if padded_read(eqn) is not None and self.defines(eqn.inputs[0]):
            return False  # a padded read reads memory: its input is made before the kernel
        domain = self._grown(eqn.outs[0].shape)
        if domain is None:
            return False
        dims = self._elementwise_dims(eqn, domain)
        if dims is None:
            return False
        return self._commit(eqn, dims, self._in_level(eqn), domain)

    def _elementwise_dims(self, eqn, domain) -> list | None:
        """The domain axis of each axis of ``eqn``'s output (None for size 1), or None when
        the kernel cannot index the output by the domain."""
        shape = tuple(eqn.outs[0].shape)
        nd = len(shape)
        dims = []
        for j in range(nd):
            cands = self._input_axes(eqn, j, nd)
            if len(cands) > 1:
                return None
            if cands:
                d = cands.pop()
            elif shape[j] == 1:
                d = None
            else:
                d = self._default_axis(j, nd, shape[j], domain)
                if d is None:
                    return None
            if d is not None and domain[d] != shape[j]:
                return None
            dims.append(d)
        used = [d for d in dims if d is not None]
        return dims if len(set(used)) == len(used) else None

    def _input_axes(self, eqn, j: int, nd: int) -> set:
        """The domain axes that ``eqn``'s inputs defined in the region put on output axis j."""
        cands = set()
        for a in eqn.inputs:
            if not self.defines(a):
                continue
            k = j - (nd - len(a.shape))
            if k >= 0 and self.dims[a.id][k] is not None:
                cands.add(self.dims[a.id][k])
        return cands

    def _add_reshape(self, eqn) -> bool:
        x = eqn.inputs[0]
        if not self.defines(x):
            return False
        out_shape = tuple(eqn.outs[0].shape)
        if [s for s in x.shape if s != 1] != [s for s in out_shape if s != 1]:
            return False
        it = iter(d for d in self.dims[x.id] if d is not None)
        dims = [None if s == 1 else next(it) for s in out_shape]
        return self._commit(eqn, dims, self.level[x.id])

    def _add_reduction(self, eqn) -> bool:
        x = eqn.inputs[0]
        axes = tuple(eqn.params["axes"])
        if not isinstance(x, Var):
            return False
        xd = self._reduced_dims(x)
        if xd is None:
            return False
        reduced = {xd[a] for a in axes if xd[a] is not None}
        out_dims = [d for i, d in enumerate(xd) if i not in axes]
        level = self.level.get(x.id, 0)
        if any(d is not None for d in out_dims) or not self._is_grid(xd, reduced):
            return self._add_loop_reduction(eqn, xd, reduced, out_dims, level)
        return self._add_grid_reduction(eqn, out_dims, level)

    def _reduced_dims(self, x) -> list | None:
        """Domain axes of the reduced value ``x`` (an external array is read along the
        trailing domain axes), or None when an axis of ``x`` is not one of the domain's."""
        if self.defines(x):
            return self.dims[x.id]
        nd = len(x.shape)
        xd = []
        for j, s in enumerate(x.shape):
            d = None if s == 1 else self._default_axis(j, nd, s, self.domain)
            if s != 1 and d is None:
                return None
            xd.append(d)
        return xd

    def _add_grid_reduction(self, eqn, out_dims, level) -> bool:
        if eqn.outs[0].dtype.kind not in "fiub":
            return False
        self.grid.append(eqn)
        self._grid_ids.add(eqn.outs[0].id)
        self.frozen = True
        return self._commit(eqn, out_dims, level)

    def _is_grid(self, xd, reduced) -> bool:
        # each (thread, loop step) must hold a distinct element of the reduced value
        if self.varies_in_loop(xd) and not set(self.loop_axes) <= reduced:
            return False
        threads = set(self.thread_axes())
        return bool(threads) and threads <= reduced

    def _add_loop_reduction(self, eqn, xd, reduced, out_dims, level) -> bool:
        if not reduced:
            return False
        if self.loop_axes:
            if reduced != set(self.loop_axes):
                return False
            if level + 1 > ROLLED_LOOPS_MAX and not self.unrolled():
                return False
        else:
            if self.frozen:
                return False
            self.loop_axes = tuple(sorted(reduced))
            extent, threads = self.loop_extent(), self.thread_count()
            if extent > UNROLL_MAX and (extent > LOOP_MAX or threads < LOOP_MIN_THREADS):
                self.loop_axes = ()
                return False
        return self._commit(eqn, out_dims, level + 1)

    def load_dims(self, eqn, a) -> tuple:
        """Domain axes of external array ``a`` as read by ``eqn`` (NumPy broadcasting)."""
        if is_reduction(eqn.prim):
            n = len(a.shape)
            return tuple(None if s == 1 else j - n for j, s in enumerate(a.shape))
        od = self.dims[eqn.outs[0].id]
        k = len(eqn.outs[0].shape) - len(a.shape)
        return tuple(None if s == 1 else od[j + k] for j, s in enumerate(a.shape))

    # ------------------------------------------------------------------ finishing
    def finish(self, used_later: set, graph_outputs: set) -> None:
        """Work out the region's inputs (external arrays) and outputs (values used later)."""
        self.inputs = memory_reads(self)
        grid = self.grid_outs()  # written by the finishing kernel even if unused
        self.outputs = [e.outs[0] for e in self.eqns if e.outs[0].id in used_later
                        or e.outs[0].id in graph_outputs or e.outs[0].id in grid]


@dataclass
class LibraryStep:
    """One equation run by its registry implementation on plain arrays."""

    eqn: Any


@dataclass
class Plan:
    """Steps in execution order: :class:`LibraryStep` and :class:`Region`."""

    graph: Graph
    steps: list
    releases: list = field(default_factory=list)  # per step: var ids dead after it

    @property
    def regions(self) -> list:
        return [s for s in self.steps if isinstance(s, Region)]

    @property
    def library_steps(self) -> list:
        return [s for s in self.steps if isinstance(s, LibraryStep)]

    def kernel_count(self) -> int:
        """Generated kernels launched per call (library calls not counted)."""
        return sum(r.kernel_count() for r in self.regions)

    def describe(self, kernel_names: dict | None = None) -> str:
        """The plan as text: one block per step, naming each equation as ``str(graph)`` does."""
        name = Namer(self.graph)
        for v in self.graph.inputs:
            name(v)
        for e in self.graph.eqns:  # name values in graph order, as str(graph) does
            for v in e.outs:
                name(v)
        lines = [f"# fusion plan of {self.graph.name}: {len(self.regions)} fused region(s), "
                 f"{self.kernel_count()} generated kernel(s), "
                 f"{len(self.library_steps)} library call(s)"]
        for i, step in enumerate(self.steps):
            if isinstance(step, LibraryStep):
                lines.append(f"[{i}] library: {_format_eqn(step.eqn, name)}")
                continue
            kn = (kernel_names or {}).get(step.index, f"region {step.index}")
            dom = ",".join(str(d) for d in step.domain)
            desc = f"[{i}] kernel {kn}: domain ({dom})"
            if step.loop_axes:
                nd = len(step.domain)
                axes = tuple(a + nd for a in step.loop_axes)
                how = "unrolled" if step.unrolled() else "rolled"
                desc += (f", one thread per {step.thread_count()} points, loop over axes "
                         f"{axes} ({step.loop_extent()}, {how})")
            lines.append(desc)
            grid = step.grid_outs()
            for eqn in step.eqns:
                tag = "   [grid reduction, finished by a second kernel]" \
                    if eqn.outs[0].id in grid else ""
                cone = step.cones.get(eqn.outs[0].id)
                if cone is not None:
                    tag = (f"   [recomputes its input: {len(cone.eqns)} equation(s) of "
                           + " ".join(name(v) for v in cone.inputs) + "]")
                lines.append(f"      {_format_eqn(eqn, name)}{tag}")
            lines.append("      reads: " + (" ".join(name(v) for v in step.inputs) or "-")
                         + "; writes: " + (" ".join(name(v) for v in step.outputs) or "-"))
        return "\n".join(lines)


def _format_eqn(eqn, name) -> str:
    outs = " ".join(f"{name(v)}:{v.aval.str_short()}" for v in eqn.outs)
    args = " ".join(name(a) for a in eqn.inputs)
    params = " ".join(param_str(k, v) for k, v in eqn.params.items())
    return f"{outs} = {eqn.prim.name} {args}" + (f" {params}" if params else "")


def memory_reads(step) -> list:
    """The values ``step`` reads from memory, in first-use order: a library step's variable
    operands; a region's operands that it does not compute itself (its inputs)."""
    region = isinstance(step, Region)
    seen, out = set(), []
    for e in step.eqns if region else [step.eqn]:
        cone = step.cones.get(e.outs[0].id) if region else None
        for a in cone.inputs if cone is not None else e.inputs:
            if isinstance(a, Var) and not (region and step.defines(a)) and a.id not in seen:
                seen.add(a.id)
                out.append(a)
    return out


def last_reads(steps: list) -> dict:
    """Var id -> index of the last step that reads it from memory (one pass over the plan;
    a region reading a value it computes itself does not count)."""
    return {a.id: i for i, step in enumerate(steps) for a in memory_reads(step)}


def value_bytes(v) -> int:
    return int(np.prod(v.shape, dtype=np.int64)) * np.dtype(v.dtype).itemsize


def releases(steps: list, graph: Graph) -> list:
    """Per step, the ids of the values (inputs included) that no later step reads and the
    graph does not return: a runner drops them after the step, so that the memory of a
    call holds what is alive, not everything the call computed.

    Example::

        >>> g = dg.trace(lambda x, w: np.sum(np.tanh(x @ w) @ w), np.ones((2, 2)), np.ones((2, 2)))
        >>> from dualgpu.fusion import plan_graph
        >>> plan = plan_graph(g)
        >>> [len(r) for r in plan.releases]   # x; x @ w; its tanh and w; the second product
        [1, 1, 2, 1]
    """
    keep = {a.id for a in graph.outputs if isinstance(a, Var)}
    keep.update(c.id for c in graph.consts)
    last = last_reads(steps)
    out: list = [[] for _ in steps]
    seen: set = set()
    for i, step in enumerate(steps):
        if isinstance(step, LibraryStep):
            read, made = [a for a in step.eqn.inputs if isinstance(a, Var)], step.eqn.outs
        else:
            read, made = step.inputs, step.outputs
        for v in list(read) + list(made):
            if v.id not in seen and v.id not in keep and last.get(v.id, i) <= i:
                seen.add(v.id)
                out[i].append(v.id)
    return out


def is_view_step(eqn, broadcasts: set) -> bool:
    """Whether the CuPy runner gets a view from this library step: an op of the view forms
    permute and broadcast, an index of slices, ints and new axes (no index arrays), and
    reshapes of values that are not broadcasts (those copy)."""
    view = eqn.prim.lowering("view")
    if view in ("permute", "broadcast"):
        return True
    if is_reshape(eqn.prim):
        return not any(getattr(a, "id", None) in broadcasts for a in eqn.inputs)
    if view == "index":
        return all(k is None or k[0] in ("slice", "int") for k in eqn.params["key"])
    return False


def memory_profile(plan: Plan, min_bytes: int = 0) -> dict:
    """What a call of the plan holds, counted on the CPU: ``peak`` is the most bytes of
    values alive at once when each is dropped after its last read (:attr:`Plan.releases`),
    ``materialised`` the bytes of every value written (a view shares its base's memory and
    counts nothing), ``large`` the shapes of those values in order; values under
    ``min_bytes`` are left out. Inputs, library workspaces and the pool's rounding come on
    top of these counts.

    Example::

        >>> g = dg.trace(lambda x, w: np.sum(np.tanh(x @ w) @ w), np.ones((64, 64)),
        ...              np.ones((64, 64)))
        >>> from dualgpu.fusion import plan_graph
        >>> prof = memory_profile(plan_graph(g))
        >>> prof["peak"], prof["materialised"]          # x @ w and its tanh, then one more
        (65536, 98312)
    """
    buffer_of: dict = {}          # var id -> buffer id (a view shares its base's)
    sizes: dict = {}              # live buffer id -> bytes
    users: dict = {}              # buffer id -> live var ids on it
    broadcasts: set = set()
    live = peak = materialised = 0
    large = []
    for step, dead in zip(plan.steps, plan.releases):
        view, src = False, None
        if isinstance(step, LibraryStep):
            eqn, outs = step.eqn, step.eqn.outs
            view, src = is_view_step(eqn, broadcasts), eqn.inputs[0]
            if eqn.prim.lowering("view") == "broadcast" \
                    or (view and getattr(src, "id", None) in broadcasts):
                broadcasts.update(v.id for v in outs)
        else:
            outs = step.outputs
        for v in outs:
            if view:
                b = buffer_of.get(getattr(src, "id", None))
                if b is not None:
                    buffer_of[v.id] = b
                    users[b].add(v.id)
                continue
            size = value_bytes(v)
            if size < min_bytes:
                continue
            buffer_of[v.id] = v.id
            sizes[v.id], users[v.id] = size, {v.id}
            live += size
            materialised += size
            large.append(tuple(v.shape))
        peak = max(peak, live)
        for vid in dead:
            b = buffer_of.pop(vid, None)
            if b is not None:
                users[b].discard(vid)
                if not users[b]:
                    live -= sizes.pop(b)
    return {"peak": peak, "materialised": materialised, "large": large}
