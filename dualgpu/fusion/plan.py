"""The fusion planner: a graph split into regions and library steps (:func:`plan_graph`),
the costly values a region would compute at each copy of a broadcast split into regions of
their own, and recomputation of cheap values into the regions that read them; see
:mod:`dualgpu.fusion` for the model."""
from __future__ import annotations

import numpy as np

from ..core.flags import Flag
from ..core.ir import Graph, Var
from .regions import (
    Cone,
    LibraryStep,
    Plan,
    Region,
    fusible,
    is_reduction,
    is_view,
    is_view_step,
    last_reads,
    memory_reads,
    padded_read,
    reads_no_values,
    recomputes_cheaply,
    releases,
    value_bytes,
)


def plan_graph(graph: Graph, recompute: bool = False, target: str = "device") -> Plan:
    """Partition ``graph`` into fused regions and library steps, in execution order.

    With ``recompute``, a region recomputes the cheap elementwise values of an earlier region
    that only it reads, instead of reading them from memory (:func:`_recompute`).
    ``target`` is what runs the regions, ``"device"`` (CUDA kernels) or ``"host"`` (the
    compiled host loops): how often a region may compute a costly value again
    (:data:`REPEAT_MAX`) is the target's.

    Example::

        >>> f = lambda x: np.sum(np.tanh(x) ** 2)
        >>> plan = plan_graph(dg.trace(dg.hvp(f), np.ones(3), np.ones(3)))
        >>> [type(s).__name__ for s in plan.steps]     # the whole HVP is one fused region
        ['Region']
    """
    repeat_max = REPEAT_MAX[target]
    steps = _partition(graph.eqns)
    _split_repeated(steps, repeat_max)
    if recompute:
        _recompute(steps, graph)
        _recompute_padded(steps, graph, repeat_max)
        _merge_neighbours(steps)
    _finish_regions(steps, graph)
    return Plan(graph, steps, releases(steps, graph))


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


# Times a kernel may compute each element of a value that costs more than a few instructions
# (:func:`~dualgpu.fusion.regions.recomputes_cheaply`): a kernel computes its values once per
# thread, so a value that varies along few of its thread axes (``sigmoid(x)`` in
# ``sigmoid(x) * U``, ``U`` ten copies of ``x``'s shape) is computed at each copy. Per target,
# measured in benchmarks/NOTES.md ("Issue 40"): the host loop is compute-bound in libm's
# functions (tanh split wins from 2 copies, sigmoid from 3), a GPU kernel memory-bound
# (sigmoid's split wins from about 10 copies, tanh's at none up to 16).
REPEAT_MAX = {"host": 2, "device": 8}
# ... in a region of at least this many threads: below, a GPU kernel's time is mostly its
# launch (a split adds one) and the host runs the program as Python (HOST_FUSED_MIN).
REPEAT_MIN_THREADS = 1 << 17


def _split_repeated(steps: list, repeat_max: int) -> None:
    """Split from each region the values it would compute more than ``repeat_max`` times
    each that are not cheap to compute (:func:`_split_region`), then number the regions."""
    split: list = []
    for step in steps:
        split += _split_region(step, repeat_max) if isinstance(step, Region) else [step]
    for k, region in enumerate(s for s in split if isinstance(s, Region)):
        region.index = k
    steps[:] = split


def _split_region(r: Region, repeat_max: int) -> list:
    """``[r]``, or ``[p, r]`` where ``p`` computes once, over the thread axes they vary
    along, the values that ``r`` computed more than ``repeat_max`` times per element and
    that are not cheap (with what they are computed from, and what is computed from them
    alone along those axes), and ``r`` reads them instead.

    A value at the region's level 0 (computed once per thread, outside any in-thread loop)
    that varies along few of the thread axes is computed again at each thread along the
    others; along a loop axis it is computed once. A split needs the region's readers of
    those values to read them along the axes they are computed along
    (:func:`_reads_as_computed`).

    Example (``1 / (1 + exp(-x))`` is computed once, not at each of the 10 rows of ``u``;
    ``-x`` alone is cheap, and recomputed)::

        >>> x, u = np.ones(1 << 14), np.ones((10, 1 << 14))
        >>> g = dg.trace(lambda x, u: 1 / (1 + np.exp(-x)) * u, x, u)
        >>> [r.domain for r in plan_graph(g).regions]
        [(1, 16384), (10, 16384)]
        >>> [r.domain for r in plan_graph(dg.trace(lambda x, u: -x * u, x, u)).regions]
        [(10, 16384)]
    """
    def movable(e) -> bool:
        return not r.level.get(e.outs[0].id, 0) and not is_reduction(e.prim) \
            and padded_read(e) is None and not r.varies_in_loop(r.dims[e.outs[0].id])

    costly = [e for e in r.eqns if movable(e) and not recomputes_cheaply(e)
              and _repeats(r, _spread(r, e.outs[0]), repeat_max)]
    axes = set().union(*(_spread(r, e.outs[0]) for e in costly))
    if not costly or not _repeats(r, axes, repeat_max):
        return [r]
    need = {e.outs[0].id for e in costly}
    moved = []
    for e in reversed(r.eqns):   # the costly values and what they are computed from
        if e.outs[0].id in need:
            if not movable(e):
                return [r]
            moved.append(e)
            need.update(a.id for a in e.inputs if r.defines(a))
    moved.reverse()
    dims = {e.outs[0].id: r.dims[e.outs[0].id] for e in moved}
    for e in r.eqns:   # and the values computed from those alone, along the same axes
        ins = [a.id for a in e.inputs if r.defines(a)]
        if e.outs[0].id not in dims and ins and all(i in dims for i in ins) and movable(e) \
                and _spread(r, e.outs[0]) <= axes:
            moved.append(e)
            dims[e.outs[0].id] = r.dims[e.outs[0].id]
    order = {id(e): k for k, e in enumerate(r.eqns)}
    moved.sort(key=lambda e: order[id(e)])
    rest = [e for e in r.eqns if e.outs[0].id not in dims]
    nd = len(r.domain)
    p = Region(domain=tuple(n if a - nd in axes else 1 for a, n in enumerate(r.domain)),
               eqns=moved, dims=dims, level=dict.fromkeys(dims, 0), frozen=True)
    q = Region(domain=r.domain, loop_axes=r.loop_axes, eqns=rest,
               dims={k: v for k, v in r.dims.items() if k not in dims},
               level={k: v for k, v in r.level.items() if k not in dims}, grid=r.grid,
               frozen=r.frozen, cones=r.cones, _grid_ids=r._grid_ids)
    if not rest or not _reads_as_computed(q, dims):
        return [r]
    return [p, q]


def _spread(r: Region, v) -> set:
    """The thread axes of ``r`` along which its value ``v`` varies."""
    threads = set(r.thread_axes())
    return {d for d in r.dims[v.id] if d in threads}


def _repeats(r: Region, axes: set, repeat_max: int) -> bool:
    """Whether ``r``, a region of at least ``REPEAT_MIN_THREADS`` threads, computes a value
    that varies along thread ``axes`` only more than ``repeat_max`` times per element (once
    per thread along the other axes)."""
    points = int(np.prod([r.domain[d] for d in axes], dtype=np.int64))
    count = r.thread_count()
    return count >= REPEAT_MIN_THREADS and points * repeat_max < count


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
    last_read = last_reads(steps)
    for i, step in enumerate(steps):
        if isinstance(step, Region):
            later = {e.outs[0].id for e in step.eqns if last_read.get(e.outs[0].id, i) > i}
            step.finish(later, graph_outputs)


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
            for a in memory_reads(r):
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
                read = {v.id for v in memory_reads(r)}
                extra = sum(value_bytes(v) for vid, v in new.items() if vid not in read)
                if extra > 2 * value_bytes(a) or not _reads_as_computed(
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
        for a in memory_reads(step):
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


def _recompute_padded(steps: list, graph: Graph, repeat_max: int) -> None:
    """Let a padded read recompute its input instead of reading it from memory.

    When every reader of a value ``a`` is a padded read of one region ``R`` (the transposes
    of a stencil's slices), ``a`` is computed by an earlier region ``P`` (no in-thread loops,
    no grid reductions) from ``P``'s inputs by at most ``RECOMPUTE_MAX`` elementwise
    equations over ``a``'s own axes, the graph does not return it, and those inputs are no
    more bytes than ``a`` costs to write and read back: each padded read evaluates that
    cone at its shifted index (:class:`Cone`), ``P`` no longer writes ``a``, and a region
    left with nothing to do is dropped. A cone that is not cheap
    (:func:`~dualgpu.fusion.regions.recomputes_cheaply`) is not evaluated by a padded read
    that ``R`` computes more than ``repeat_max`` times per element (:func:`_repeats`).
    The chained Rosenbrock's compressed Hessian becomes one kernel.

    Example::

        >>> f = lambda x: np.sum(np.sin(x[1:] - x[:-1]) ** 2)
        >>> g = dg.trace(dg.hvp(f), np.ones(8), np.ones(8))
        >>> len(plan_graph(g).regions), len(plan_graph(g, recompute=True).regions)
        (2, 1)
    """
    outputs, readers, where = _who_reads_and_writes(steps, graph)
    root: dict = {}   # a view's var id -> the var whose memory it reads (x for x[1:], x[:-1])
    for step in steps:
        if isinstance(step, LibraryStep) and is_view_step(step.eqn, set()) \
                and isinstance(step.eqn.inputs[0], Var):
            base = step.eqn.inputs[0]
            root[step.eqn.outs[0].id] = root.get(base.id, base)

    def memory(vs) -> dict:
        return {root.get(v.id, v).id: root.get(v.id, v) for v in vs}

    for j, r in enumerate(steps):
        if not isinstance(r, Region):
            continue
        found = []   # (value, its producer, its cone, the padded reads of it)
        for a in memory_reads(r):
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
            if cone is None or len(cone.eqns) > PADDED_RECOMPUTE_MAX or (
                    not all(recomputes_cheaply(e) for e in cone.eqns)
                    and any(_repeats(r, _spread(r, e.outs[0]), repeat_max) for e in users)):
                continue   # too long, or costly and computed again at each copy
            found.append((a, p, cone, users))
        # the values recomputed together must not read more new memory than writing them
        # and reading them back costs (overlapping views of one array count once)
        read = memory(memory_reads(r))
        while found:
            new = memory(v for _, _, cone, _ in found for v in cone.inputs)
            extra = sum(value_bytes(v) for vid, v in new.items() if vid not in read)
            if extra <= 2 * sum(value_bytes(a) for a, _, _, _ in found):
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


