"""Batching: ``batch_graph(graph, in_dims, size)`` turns a per-example graph into the graph
of the same program applied to ``size`` examples at once.

The new graph is traced like every other transform's (evaluate the old graph equation by
equation, each primitive's *batching rule* recording registry ops), so it is an ordinary
graph: it prints, simplifies, fuses, compiles and can be differentiated again.

Where the batch dimension lives: every batched value carries it at axis 0. Inputs mapped
along another axis are moved there once on entry, and outputs are moved to their
``out_dims`` once on exit. One convention keeps each rule short (a rule only says how its
op treats one extra leading axis) at the price of an occasional transpose, which NumPy does
as a view and the fused kernels fold into their indexing. Values that do not depend on a
mapped input stay unbatched: the rule of an op sees which operands are batched, so a
weight matrix is never copied ``size`` times and ``W @ V`` stays one GEMM.

This module holds the traversal and the rules by flag. An op's own batching rule sits beside
its derivatives (``defrules(prim, vmap=rule)`` in :mod:`dualgpu.rules`, written with the
helpers of :mod:`dualgpu.rules.batching_rules`); an op without one is batched by its flags:
elementwise ops (custom ops with a C expression too), reductions and scans share one rule
each (custom ops: one batched custom op, :mod:`dualgpu.api.custom_batching`). An op with
neither -- a custom op whose body runs on values, for instance -- is run once per example
and the results stacked (``loop_rule``): correct for every op, but ``size`` equations
instead of one.

Example::

    g = dg.trace(lambda x: np.sum(np.sin(x)), np.ones(3))
    b, out_dims = batch_graph(g, [0], 5)     # float64[5,3] -> float64[5]
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .. import lax
from ..core.flags import Flag
from ..core.interpret import propagate_states
from ..core.ir import Aval, Graph
from ..core.trace import trace_to_graph
from ..errors import DualgpuError, InvalidArgumentError
from ..rules import batching_rules as batching
from ._gc import collector_paused
from .simplify import simplify

# rule(eqn, args, batched, size) -> (outputs, output batched flags): ``args`` are the
# equation's operands in the new trace, batched ones with the batch dimension at axis 0.
BatchRule = Callable[..., tuple]


@collector_paused()
def batch_graph(graph: Graph, in_dims: Sequence[int | None], size: int,
                out_dims: Sequence[int | None] | None = None) -> tuple[Graph, list]:
    """The graph of ``graph`` mapped over ``size`` examples.

    ``in_dims[k]`` is the axis of input ``k`` that holds the examples (``None``: the input
    is shared by all examples). With ``out_dims``, output ``k`` gets its examples along
    axis ``out_dims[k]`` (an unbatched output is broadcast; ``None`` requires the output to
    be unbatched); without it, batched outputs have them along axis 0 and unbatched ones
    stay as they are. Returns ``(new graph, out_dims)``.
    """
    if len(in_dims) != len(graph.inputs):
        raise DualgpuError(f"batch_graph: {len(in_dims)} in_dims for {len(graph.inputs)} "
                           "inputs")
    avals = []
    for v, d in zip(graph.inputs, in_dims):
        shape = list(v.shape)
        if d is not None:
            shape.insert(d, size)
        avals.append(Aval(tuple(shape), v.dtype))

    result_dims: list = []

    def run(*args):
        # a value's state: True where it is batched (examples along axis 0)
        moved = [a if d in (None, 0) else lax.moveaxis(a, d, 0) for a, d in zip(args, in_dims)]
        batched = {v.id: True for v, d in zip(graph.inputs, in_dims) if d is not None}

        def rule(eqn, values, states):
            flags = [s is True for s in states]
            if any(flags):
                outs, out_flags = rule_for(eqn.prim)(eqn, values, flags, size)
            else:
                outs = eqn.prim.bind(*values, **eqn.params)
                outs = list(outs) if eqn.prim.multiple_results else [outs]
                out_flags = [False] * len(outs)
            return outs, [True if b else None for b in out_flags]

        values, states = propagate_states(graph, moved, batched, rule)
        results = []
        for k, (x, s) in enumerate(zip(values, states)):
            b = s is True
            if out_dims is None:
                results.append(x)
                result_dims.append(0 if b else None)
                continue
            d = out_dims[k]
            if d is None:
                if b:
                    raise InvalidArgumentError(
                        f"vmap: out_axes is None for output {k}, but that output depends on "
                        "the mapped inputs (give it an int axis, e.g. out_axes=0)")
                results.append(x)
            else:
                if not b:
                    x = lax.broadcast_to(x, (size,) + tuple(np.shape(x)))
                results.append(lax.moveaxis(x, 0, d) if d else x)
            result_dims.append(d)
        return results

    names = list(graph.input_names) if graph.input_names else None
    new, _ = trace_to_graph(run, avals, graph.xp, name=f"vmap_{graph.name}",
                            input_names=names)
    return simplify(new), result_dims


def rule_for(prim) -> BatchRule:
    """The batching rule of ``prim``: its own, its kind's, or the per-example loop."""
    rule = prim.rule("vmap")
    if rule is not None:
        return rule
    if prim.has(Flag.ELEMENTWISE):  # custom ops with a C expression too
        return elementwise_rule
    if prim.has(Flag.REDUCTION):
        return reduction_rule
    if prim.has(Flag.SCAN):
        return batching.axis_rule
    return batching.loop_rule


# ------------------------------------------------------------------------------ by flag
def elementwise_rule(eqn, args, batched, size):
    """Batched operands are lifted to the op's per-example rank; NumPy broadcasting does
    the rest (unbatched operands are never copied)."""
    rank = max(batching.rank(a, b) for a, b in zip(args, batched))
    lifted = [batching.lift(a, rank) if b else a for a, b in zip(args, batched)]
    return batching.one(eqn.prim.bind(*lifted, **eqn.params))


def reduction_rule(eqn, args, batched, size):
    """The reduced axes move one place right."""
    axes = tuple(a + 1 for a in eqn.params["axes"])
    return batching.one(eqn.prim.bind(args[0], **{**eqn.params, "axes": axes}))
