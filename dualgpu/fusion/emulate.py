"""A NumPy evaluator of fusion plans that computes each region the way its kernel does:
point by point of the region's domain, only the region's outputs leaving it (so a wrong plan
fails here, without a GPU)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.interpret import read
from ..core.ir import Const, Literal
from .regions import LibraryStep, Plan, Region, is_reduction, is_view, padded_read


def _to_domain(arr, dims, nd):
    """An array over the value's own axes -> an array over the domain (size 1 elsewhere)."""
    arr = np.asarray(arr)
    own = [j for j, d in enumerate(dims) if d is not None]
    sub = arr.reshape([arr.shape[j] for j in own]) if own else arr.reshape(())
    order = sorted(range(len(own)), key=lambda k: dims[own[k]])
    sub = np.transpose(sub, order)
    shape = [1] * nd
    for k in order:
        shape[dims[own[k]] + nd] = arr.shape[own[k]]
    return sub.reshape(shape)


def _from_domain(arr, dims, shape, domain):
    """The inverse of :func:`_to_domain`: read the value's elements back from the domain."""
    nd = len(domain)
    keep = sorted({d + nd for d in dims if d is not None})
    arr = np.asarray(arr)
    arr = np.broadcast_to(arr, tuple(domain[a] if a in keep else arr.shape[a]
                                     for a in range(nd)))
    index = tuple(slice(None) if a in keep else 0 for a in range(nd))
    sub = arr[index] if nd else arr
    own_order = sorted([d + nd for d in dims if d is not None])
    perm = [own_order.index(d + nd) for d in dims if d is not None]
    sub = np.transpose(sub, perm) if perm else sub
    return np.ascontiguousarray(sub).reshape(shape)


def emulate_region(region: Region, env: dict) -> None:
    """Evaluate ``region`` point by point of its domain, as its kernel does (NumPy)."""
    dom: dict[int, Any] = {}
    grid_outs = region.grid_outs()
    for eqn in region.eqns:
        out = eqn.outs[0]
        if padded_read(eqn) is not None:   # its input is in memory, or recomputed whole
            cone = region.cones.get(out.id)
            g = _cone_value(cone, env) if cone is not None else read(env, eqn.inputs[0])
            res = eqn.prim.impl(np, np.asarray(g), **eqn.params)
            dom[out.id] = _to_domain(np.asarray(res).astype(out.dtype), region.dims[out.id],
                                     len(region.domain))
            continue
        args = _region_args(region, eqn, dom, env)
        if is_view(eqn.prim):
            res = args[0]
        elif is_reduction(eqn.prim) and out.id in grid_outs:
            res = _grid_reduce(region, eqn, args[0])
        elif is_reduction(eqn.prim):
            res = _loop_reduce(region, eqn, args[0])
        else:
            res = eqn.prim.impl(np, *args, **eqn.params)
        dom[out.id] = np.asarray(res).astype(out.dtype)
    for v in region.outputs:
        env[v.id] = _from_domain(dom[v.id], region.dims[v.id], tuple(v.shape), region.domain)


def _cone_value(cone, env: dict):
    """The value a padded read's :class:`~dualgpu.fusion.regions.Cone` recomputes, whole."""
    vals: dict = {}
    for e in cone.eqns:
        args = [a.value if isinstance(a, Literal) else vals[a.id] if a.id in vals
                else np.asarray(read(env, a)) for a in e.inputs]
        vals[e.outs[0].id] = np.asarray(e.prim.impl(np, *args, **e.params)).astype(
            e.outs[0].dtype)
    return vals[cone.eqns[-1].outs[0].id]


def _region_args(region: Region, eqn, dom: dict, env: dict) -> list:
    """``eqn``'s operands over the domain: literals, region values, and external arrays
    placed on the domain axes they are read along."""
    nd = len(region.domain)
    args = []
    for a in eqn.inputs:
        if isinstance(a, Literal):
            args.append(a.value)
        elif region.defines(a):
            args.append(dom[a.id])
        else:
            val = np.asarray(read(env, a))
            args.append(_to_domain(val, region.load_dims(eqn, a), nd))
    return args


def _grid_reduce(region: Region, eqn, x):
    """A grid reduction: over every thread, and over the loop axes its operand lies along
    (the kernel evaluates such a value, and accumulates it, once per loop iteration -- a
    broadcast view along a loop axis too, though its emulated array is not expanded)."""
    nd = len(region.domain)
    threads = region.thread_axes()
    src = eqn.inputs[0]
    dims = region.dims[src.id] if region.defines(src) else region.load_dims(eqn, src)
    along = {d for d in dims if d is not None}
    full = np.broadcast_to(x, region.domain)
    keep = [(a - nd) in threads
            or ((a - nd) in region.loop_axes and ((a - nd) in along or x.shape[a] > 1))
            for a in range(nd)]
    res = eqn.prim.impl(np, full[tuple(slice(None) if k else slice(0, 1) for k in keep)],
                        axes=tuple(range(nd)))
    return np.reshape(res, (1,) * nd)


def _loop_reduce(region: Region, eqn, x):
    """An in-thread reduction over the region's loop axes (kept as size-1 axes)."""
    nd = len(region.domain)
    loop = tuple(a + nd for a in region.loop_axes)
    full = np.broadcast_to(x, np.broadcast_shapes(
        x.shape, tuple(region.domain[a] if a in loop else 1 for a in range(nd))))
    return np.expand_dims(eqn.prim.impl(np, full, axes=loop), loop)


def emulate(plan: Plan, args: Sequence[Any]) -> list:
    """Run ``plan`` with NumPy: library steps by their impls, regions by
    :func:`emulate_region`. Only a region's outputs leave it, so a wrong plan fails here.

    Example::

        plan = plan_graph(dg.trace(dg.hvp(f), x, v))
        hv, = emulate(plan, (x, v))
    """
    env: dict[int, Any] = {}
    for v, a in zip(plan.graph.inputs, args):
        env[v.id] = np.asarray(a)
    for c in plan.graph.consts:
        env[c.id] = np.asarray(c.value)
    for step, dead in zip(plan.steps, plan.releases):
        if isinstance(step, LibraryStep):
            run_library_step(step.eqn, env)
        else:
            emulate_region(step, env)
        for vid in dead:  # as the CuPy runner does: a value read later must not be here
            del env[vid]
    return [read(env, a) if not isinstance(a, Const) else a.value for a in plan.graph.outputs]


def run_library_step(eqn, env: dict) -> None:
    """Run ``eqn`` by its op's NumPy implementation on the values in ``env`` (literals and
    constants read from the equation), binding its outputs there."""
    outs = eqn.prim.impl(np, *[read(env, a) for a in eqn.inputs], **eqn.params)
    outs = outs if eqn.prim.multiple_results else [outs]
    for v, o in zip(eqn.outs, outs):
        env[v.id] = o
