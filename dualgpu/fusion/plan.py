"""The fusion planner: regions (what one generated kernel evaluates), library steps and the
plan that orders them; see :mod:`dualgpu.fusion` for the model."""
from __future__ import annotations

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
    return np.dtype(aval.dtype).name in KERNEL_DTYPES


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
        self.inputs = _memory_reads(self)
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


def plan_graph(graph: Graph, recompute: bool = False) -> Plan:
    """Partition ``graph`` into fused regions and library steps, in execution order.

    With ``recompute``, a region recomputes the cheap elementwise values of an earlier region
    that only it reads, instead of reading them from memory (:func:`_recompute`).

    Example::

        >>> f = lambda x: np.sum(np.tanh(x) ** 2)
        >>> plan = plan_graph(dg.trace(dg.hvp(f), np.ones(3), np.ones(3)))
        >>> [type(s).__name__ for s in plan.steps]     # the whole HVP is one fused region
        ['Region']
    """
    steps = _partition(graph.eqns)
    if recompute:
        _recompute(steps, graph)
        _recompute_padded(steps, graph)
        _merge_neighbours(steps)
    _finish_regions(steps, graph)
    return Plan(graph, steps, _releases(steps, graph))


def _partition(eqns) -> list:
    """Greedy pass in graph order: each fusible equation joins the open region or starts a
    new one; the others are library steps (closing the region when they read from it)."""
    steps: list = []
    cur: Region | None = None
    count = 0
    eqns = _sink_padded_reads(eqns)

    def close():
        nonlocal cur
        if cur is not None and cur.eqns:
            steps.append(cur)
        cur = None

    for eqn in eqns:
        depends = cur is not None and any(cur.defines(a) for a in eqn.inputs)
        if fusible(eqn):
            if cur is not None and cur.try_add(eqn):
                continue
            if is_view(eqn.prim) and not depends:
                steps.append(LibraryStep(eqn))
                continue
            close()
            region = Region(index=count)
            if region.try_add(eqn):
                cur = region
                count += 1
                continue
            steps.append(LibraryStep(eqn))
            continue
        if depends:
            close()
        steps.append(LibraryStep(eqn))
    close()
    return steps


def _sink_padded_reads(eqns) -> list:
    """``eqns`` with each padded read moved to just before its first reader (a topological
    order still): the transposes of a graph's slices then meet in the region of the sum
    that reads them, instead of each one closing the region open where the graph made it.
    A padded read of a padded read (the gradient of ``p[1:-1][::2]``) goes before where
    its reader goes.

    Example (the transposes of ``[::2]`` and of ``[1:-1]``, in this order, before the
    ``add`` that reads the second)::

        >>> f = lambda p: np.sum(np.sin(p[1:-1][::2]) * p[2])
        >>> eqns = _sink_padded_reads(dg.trace(dg.grad(f), np.ones(9)).eqns)
        >>> [e.params.get("key") for e in eqns[-3:]]   # the last is the add
        [(('slice', None, None, 2),), (('slice', 1, -1, None),), None]
    """
    sunk = [k for k, e in enumerate(eqns) if padded_read(e) is not None and fusible(e)]
    readers: dict = {}
    for k, e in enumerate(eqns):
        for a in e.inputs:
            if isinstance(a, Var):
                readers.setdefault(a.id, []).append(k)
    # where each sunk equation goes: before its first reader, or before where that
    # reader goes when it is sunk too (readers come later: walk backwards)
    goes: dict = {}
    for k in reversed(sunk):
        goes[k] = min((goes.get(j, j) for j in readers.get(eqns[k].outs[0].id, ())),
                      default=len(eqns))
    before: dict[int, list] = {}
    for k in sunk:   # in graph order: a sunk input before the sunk reader at the same place
        before.setdefault(goes[k], []).append(eqns[k])
    order = []
    for k, e in enumerate(eqns):
        order += before.pop(k, [])
        if k not in goes:
            order.append(e)
    return order + before.pop(len(eqns), [])


def _finish_regions(steps: list, graph: Graph) -> None:
    """Give every region its inputs and the outputs that later steps or the graph read."""
    graph_outputs = {a.id for a in graph.outputs if isinstance(a, Var)}
    last_read = _last_reads(steps)
    for i, step in enumerate(steps):
        if isinstance(step, Region):
            later = {e.outs[0].id for e in step.eqns if last_read.get(e.outs[0].id, i) > i}
            step.finish(later, graph_outputs)


def _last_reads(steps: list) -> dict:
    """Var id -> index of the last step that reads it from memory (one pass over the plan;
    a region reading a value it computes itself does not count)."""
    return {a.id: i for i, step in enumerate(steps) for a in _memory_reads(step)}


def _memory_reads(step) -> list:
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


RECOMPUTE_MAX = 12   # equations a region may copy to recompute one value
# ... and a padded read (each read of the value evaluates its own copy at its own index;
# memory, not arithmetic, bounds these kernels)
PADDED_RECOMPUTE_MAX = 32


def _recompute(steps: list, graph: Graph) -> None:
    """Let a region recompute values of an earlier region instead of reading them.

    A value ``a`` that region ``R`` reads is recomputed in ``R`` when it is computed by an
    earlier region ``P`` of the same domain (neither with in-thread loops or grid
    reductions), no other step reads it and the graph does not return it, and the
    elementwise equations of ``P`` that compute it from ``P``'s own inputs are at most
    ``RECOMPUTE_MAX`` and read no more new bytes than ``a`` costs (written once by ``P``,
    read once by ``R``). ``P`` then no longer writes ``a``.

    Example (``t = exp(x + y)`` is read by the second region only: it recomputes ``t`` from
    ``x`` and ``y``, and the first region neither computes nor writes it any more)::

        >>> def f(x, y, w):
        ...     t = np.exp(x + y)
        ...     u = np.tanh(x) @ w
        ...     return t * np.sin(u)
        >>> x = y = w = np.ones((4, 4))
        >>> g = dg.trace(f, x, y, w)
        >>> [len(r.eqns) for r in plan_graph(g).regions]
        [3, 2]
        >>> [len(r.eqns) for r in plan_graph(g, recompute=True).regions]
        [1, 4]
    """
    outputs, readers, where = _who_reads_and_writes(steps, graph)
    order = {id(e): k for k, e in enumerate(graph.eqns)}
    for j, r in enumerate(steps):
        if not isinstance(r, Region) or r.loop_axes or r.grid:
            continue
        padded = {e.inputs[0].id for e in r.eqns if padded_read(e) is not None}
        changed = True
        while changed:
            changed = False
            for a in _memory_reads(r):
                i = where.get(a.id)
                if i is None or i == j or a.id in outputs or readers.get(a.id, set()) - {j} \
                        or a.id in padded:   # a padded read reads memory
                    continue
                p = steps[i]
                if p.loop_axes or p.grid or tuple(p.domain) != tuple(r.domain):
                    continue
                cone = _cone(p, a)
                if cone is None or len(cone) > RECOMPUTE_MAX:
                    continue
                new = {v.id: v for e in cone for v in e.inputs
                       if isinstance(v, Var) and not p.defines(v)}
                read = {v.id for v in _memory_reads(r)}
                extra = sum(_nbytes(v) for vid, v in new.items() if vid not in read)
                if extra > 2 * _nbytes(a) or not _reads_as_computed(
                        r, {e.outs[0].id: p.dims[e.outs[0].id] for e in cone}):
                    continue
                _copy_into(r, p, cone, order)
                for e in cone:   # r computes these now: it reads none of them from memory
                    readers.get(e.outs[0].id, set()).discard(j)
                for vid in new:
                    readers.setdefault(vid, set()).add(j)
                _prune(p, readers, outputs)
                changed = True
                break
    steps[:] = [s for s in steps if not isinstance(s, Region) or s.eqns]


def _who_reads_and_writes(steps: list, graph: Graph) -> tuple[set, dict, dict]:
    """The graph's output ids; var id -> the steps that read it from memory; var id -> the
    step of the region that computes it."""
    outputs = {a.id for a in graph.outputs if isinstance(a, Var)}
    readers: dict[int, set] = {}
    for i, step in enumerate(steps):
        for a in _memory_reads(step):
            readers.setdefault(a.id, set()).add(i)
    where = {e.outs[0].id: i for i, step in enumerate(steps) if isinstance(step, Region)
             for e in step.eqns}
    return outputs, readers, where


def _cone(p: Region, a) -> list | None:
    """The equations of ``p`` that compute ``a`` from ``p``'s inputs, in ``p``'s order;
    None when one of them is not a plain elementwise equation."""
    need, cone = {a.id}, []
    for e in reversed(p.eqns):
        if e.outs[0].id not in need:
            continue
        if not e.prim.has(Flag.ELEMENTWISE) or is_view(e.prim) or is_reduction(e.prim) \
                or p.level.get(e.outs[0].id, 0):
            return None
        cone.append(e)
        need.update(v.id for v in e.inputs if isinstance(v, Var) and p.defines(v))
    return cone[::-1]


def _recompute_padded(steps: list, graph: Graph) -> None:
    """Let a padded read recompute its input instead of reading it from memory.

    When every reader of a value ``a`` is a padded read of one region ``R`` (the transposes
    of a stencil's slices), ``a`` is computed by an earlier region ``P`` (no in-thread loops,
    no grid reductions) from ``P``'s inputs by at most ``RECOMPUTE_MAX`` elementwise
    equations over ``a``'s own axes, the graph does not return it, and those inputs are no
    more bytes than ``a`` costs to write and read back: each padded read evaluates that
    cone at its shifted index (:class:`Cone`), ``P`` no longer writes ``a``, and a region
    left with nothing to do is dropped. The chained Rosenbrock's compressed Hessian becomes
    one kernel.

    Example::

        >>> f = lambda x: np.sum(np.sin(x[1:] - x[:-1]) ** 2)
        >>> g = dg.trace(dg.hvp(f), np.ones(8), np.ones(8))
        >>> len(plan_graph(g).regions), len(plan_graph(g, recompute=True).regions)
        (2, 1)
    """
    outputs, readers, where = _who_reads_and_writes(steps, graph)
    root: dict = {}   # a view's var id -> the var whose memory it reads (x for x[1:], x[:-1])
    for step in steps:
        if isinstance(step, LibraryStep) and _is_view_step(step.eqn, set()) \
                and isinstance(step.eqn.inputs[0], Var):
            base = step.eqn.inputs[0]
            root[step.eqn.outs[0].id] = root.get(base.id, base)

    def memory(vs) -> dict:
        return {root.get(v.id, v).id: root.get(v.id, v) for v in vs}

    for j, r in enumerate(steps):
        if not isinstance(r, Region):
            continue
        found = []   # (value, its producer, its cone, the padded reads of it)
        for a in _memory_reads(r):
            i = where.get(a.id)
            if i is None or i == j or a.id in outputs or readers.get(a.id, set()) - {j}:
                continue
            users = [e for e in r.eqns if any(b is a for b in e.inputs)]
            if not users or any(padded_read(e) is None or e.outs[0].id in r.cones
                                for e in users):
                continue
            p = steps[i]
            if p.loop_axes or p.grid:
                continue
            cone = _padded_cone(p, a)
            if cone is None or len(cone.eqns) > PADDED_RECOMPUTE_MAX:
                continue
            found.append((a, p, cone, users))
        # the values recomputed together must not read more new memory than writing them
        # and reading them back costs (overlapping views of one array count once)
        read = memory(_memory_reads(r))
        while found:
            new = memory(v for _, _, cone, _ in found for v in cone.inputs)
            extra = sum(_nbytes(v) for vid, v in new.items() if vid not in read)
            if extra <= 2 * sum(_nbytes(a) for a, _, _, _ in found):
                break
            found.pop()
        for a, p, cone, users in found:
            for e in users:
                r.cones[e.outs[0].id] = cone
            readers[a.id].discard(j)
            for v in cone.inputs:
                readers.setdefault(v.id, set()).add(j)
            _prune(p, readers, outputs)
    steps[:] = [s for s in steps if not isinstance(s, Region) or s.eqns]


def _merge_neighbours(steps: list) -> None:
    """Merge a region into the region right before it when both have the same domain, the
    first has no in-thread loops or grid reductions, the second no in-thread loops, and the
    second reads every value the first computes as the first computes it
    (:func:`_reads_as_computed`): what recomputation left as two kernels becomes one."""
    merged: list = []
    for step in steps:
        prev = merged[-1] if merged else None
        if isinstance(step, Region) and isinstance(prev, Region) \
                and tuple(prev.domain) == tuple(step.domain) and not prev.loop_axes \
                and not prev.grid and not step.loop_axes \
                and _reads_as_computed(step, prev.dims):
            # an equation both recompute (a cone copied from an earlier region) runs once
            prev.eqns += [e for e in step.eqns if not prev.defines(e.outs[0])]
            prev.dims.update(step.dims)
            prev.level.update(step.level)
            prev.cones.update(step.cones)
            prev.grid += step.grid
            prev._grid_ids |= step._grid_ids
            prev.frozen = prev.frozen or step.frozen
            continue
        merged.append(step)
    steps[:] = merged


def _reads_as_computed(r: Region, dims: dict) -> bool:
    """Whether ``r`` may compute the values of ``dims`` (var id -> the domain axis of each
    of its axes, in a region of ``r``'s domain) instead of reading them from memory.

    A kernel indexes a value it computes by the thread's point of the domain, and an array
    in memory as its reader broadcasts it: every equation of ``r`` that reads one of these
    values must read it along the axes it is computed along (``x * (x + y)[:, None]``
    reads ``x + y`` along the rows; a kernel that computes it along the columns cannot
    serve that read), and no padded read (nor the cone it recomputes) may read one: those
    read memory.

    Example (the first kernel computes ``x + y`` along the columns of its domain)::

        >>> x, w = np.ones(3), np.ones((3, 1))
        >>> g = dg.trace(lambda x, w: (w * x, x * (x + x).reshape(-1, 1)), x, w)
        >>> first, second = plan_graph(g).regions
        >>> _reads_as_computed(second, first.dims)
        False
    """
    for e in r.eqns:
        cone = r.cones.get(e.outs[0].id)
        if cone is not None or padded_read(e) is not None:
            memory = cone.inputs if cone is not None else e.inputs
            if any(isinstance(v, Var) and v.id in dims for v in memory):
                return False
            continue
        if reads_no_values(e.prim):
            continue
        for v in e.inputs:
            if isinstance(v, Var) and v.id in dims and not r.defines(v) \
                    and _live_axes(v, r.load_dims(e, v)) != _live_axes(v, dims[v.id]):
                return False
    return True


def _live_axes(v, dims) -> tuple:
    """``dims`` (the domain axis of each axis of ``v``) with the axes of size 1, which
    every point reads alike, as None."""
    return tuple(None if n == 1 else d for n, d in zip(v.shape, dims))


def _padded_cone(p: Region, a) -> Cone | None:
    """The :class:`Cone` of ``a`` in ``p``: its elementwise equations, each value's axes as
    axes of ``a``; None when ``_cone`` refuses, it is too long, or a value varies along a
    domain axis that ``a`` does not have."""
    eqns = _cone(p, a)
    if eqns is None:
        return None
    own = {d: j for j, d in enumerate(p.dims[a.id]) if d is not None}

    def as_a(dims):
        if any(d is not None and d not in own for d in dims):
            return None
        return tuple(None if d is None else own[d] for d in dims)

    axes, loads, inputs, seen = {}, {}, [], set()
    for k, e in enumerate(eqns):
        mapped = as_a(p.dims[e.outs[0].id])
        if mapped is None:
            return None
        axes[e.outs[0].id] = mapped
        for pos, v in enumerate(e.inputs):
            if not isinstance(v, Var) or v.id in axes:
                continue
            if reads_no_values(e.prim):
                break
            mapped = as_a(p.load_dims(e, v))
            if mapped is None:
                return None
            loads[(k, pos)] = mapped
            if v.id not in seen:
                seen.add(v.id)
                inputs.append(v)
    return Cone(eqns, axes, loads, inputs)


def _copy_into(r: Region, p: Region, cone: list, order: dict) -> None:
    """Add ``cone`` (equations of ``p``, same domain) to ``r``, keeping ``r``'s equations
    in graph order (``p``'s all come before ``r``'s: regions are built in graph order)."""
    fresh = [e for e in cone if not r.defines(e.outs[0])]
    for e in fresh:
        v = e.outs[0]
        r.dims[v.id] = p.dims[v.id]
        r.level[v.id] = 0
    r.eqns[:] = sorted(r.eqns + fresh, key=lambda e: order[id(e)])


def _prune(p: Region, readers: dict, outputs: set) -> None:
    """Drop the equations of ``p`` whose values nothing reads any more (``p`` has no grid
    reductions: every equation is elementwise or an in-thread value)."""
    need: set = set()
    kept = []
    for e in reversed(p.eqns):
        v = e.outs[0]
        if v.id in need or v.id in outputs or readers.get(v.id):
            kept.append(e)
            need.update(a.id for a in e.inputs if isinstance(a, Var) and p.defines(a))
        else:
            del p.dims[v.id]
            p.level.pop(v.id, None)
    p.eqns[:] = kept[::-1]


def _nbytes(v) -> int:
    return int(np.prod(v.shape, dtype=np.int64)) * np.dtype(v.dtype).itemsize


def _releases(steps: list, graph: Graph) -> list:
    """Per step, the ids of the values (inputs included) that no later step reads and the
    graph does not return: a runner drops them after the step, so that the memory of a
    call holds what is alive, not everything the call computed.

    Example::

        >>> g = dg.trace(lambda x, w: np.sum(np.tanh(x @ w) @ w), np.ones((2, 2)), np.ones((2, 2)))
        >>> plan = plan_graph(g)
        >>> [len(r) for r in plan.releases]   # x; x @ w; its tanh and w; the second product
        [1, 1, 2, 1]
    """
    keep = {a.id for a in graph.outputs if isinstance(a, Var)}
    keep.update(c.id for c in graph.consts)
    last = _last_reads(steps)
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


def _is_view_step(eqn, broadcasts: set) -> bool:
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
            view, src = _is_view_step(eqn, broadcasts), eqn.inputs[0]
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
            nbytes = _nbytes(v)
            if nbytes < min_bytes:
                continue
            buffer_of[v.id] = v.id
            sizes[v.id], users[v.id] = nbytes, {v.id}
            live += nbytes
            materialised += nbytes
            large.append(tuple(v.shape))
        peak = max(peak, live)
        for vid in dead:
            b = buffer_of.pop(vid, None)
            if b is not None:
                users[b].discard(vid)
                if not users[b]:
                    live -= sizes.pop(b)
    return {"peak": peak, "materialised": materialised, "large": large}

