"""The seam of the interpreter layer: what a transform of graphs needs, documented and
public, so that a new interpreter is one module written against it (no transform imports
another's private names).

* the one equation walk (:func:`~dualgpu.core.interpret.walk`, :func:`propagate_states`)
  and :func:`user_lines` for walks of other shapes;
* :func:`forward_tangents`: the JVP of a graph, symbolic zeros kept (with its values:
  :func:`forward_values_and_tangents`);
* :func:`sub_trace`: an op applied to some traced operands, as a graph of its own (to
  differentiate it again), and :func:`derived_key`: the key of such graphs, so that one
  build derives them once per op, parameters and operand types;
* :func:`coordinate_layout`, :func:`batch_axes_of`, :func:`seed_coordinates`: the
  coordinates of the differentiated inputs (per instance with ``batch_axes``) and their
  seeds, the rows of the identity;
* :func:`batch_rule`: an op's batching rule, its kind's, or the per-example loop (the
  vectorised default of a rule an op does not have);
* an op's properties, by flag: ``prim.has(Flag.LINEAR)``, ``prim.has(Flag.MULTILINEAR)``
  (``prim.linear_operands``), ``prim.has(Flag.ELEMENTWISE)`` with ``prim.partials``; its own
  rule for an interpreter, ``prim.rule(kind)`` (:data:`~dualgpu.core.primitives.RULE_KINDS`).

Example (the Hessian-vector product's tangent of ``sum(sin(x) * x)``, read off a sub-trace)::

    >>> g = dg.trace(lambda x: np.sum(np.sin(x) * x), np.ones(2))
    >>> def program(x, v):
    ...     return forward_tangents(g, [x], [v])[0]
    >>> dg.trace(program, np.ones(2), np.ones(2)).eqns[-1].prim.name
    'reduce_sum'
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.interpret import propagate_states, user_lines, walk
from ..core.ir import Graph
from ..core.trace import Tracer, trace_to_graph
from ..ops import shape as _sh
from ..rules.laplacian_rules import traced_constant
from .jvp import jvp_rule
from .vmap import rule_for as batch_rule

__all__ = ["batch_axes_of", "batch_rule", "coordinate_layout", "derived_key",
           "forward_tangents", "forward_values_and_tangents", "propagate_states",
           "seed_coordinates", "sub_trace", "user_lines", "walk"]


def forward_tangents(graph: Graph, args: list, tangents: list) -> list:
    """The output tangents of ``graph`` at ``args`` along ``tangents`` (JVP rules; a None
    tangent is a symbolic zero and stays None)."""
    return forward_values_and_tangents(graph, args, tangents)[1]


def forward_values_and_tangents(graph: Graph, args: list, tangents: list) -> tuple:
    """``(outputs, output tangents)`` of ``graph`` at ``args`` along ``tangents``, as
    :func:`forward_tangents` (a None tangent is a symbolic zero and stays None)."""
    states = {v.id: t for v, t in zip(graph.inputs, tangents) if t is not None}
    return propagate_states(graph, args, states, jvp_rule)


def sub_trace(fn, values, extra_avals=()):
    """Trace ``fn(operands, extra)`` with the traced operands among ``values`` (and inputs
    of ``extra_avals``) as the graph's inputs, the other operands closed over: ``(graph,
    positions of the traced operands)``."""
    pos = [i for i, v in enumerate(values) if isinstance(v, Tracer)]

    def call(*xs):
        full = list(values)
        for i, x in zip(pos, xs):
            full[i] = x
        return fn(full, xs[len(pos):])

    xp = values[pos[0]]._builder.xp
    graph, _ = trace_to_graph(call, [values[i].aval for i in pos] + list(extra_avals), xp,
                              name="op")
    return graph, pos


def derived_key(kind, eqn, values, *extra, shapes: bool = True):
    """A key for graphs derived from ``eqn``'s op on these operands (traced ones by dtype,
    and by shape unless ``shapes`` is false; the others by value when they are Python
    scalars), or None when it cannot be keyed (an array operand closed over, unhashable
    parameters)."""
    parts: list = []
    for v in values:
        if isinstance(v, Tracer):
            parts.append(("t", tuple(v.shape) if shapes else None, str(v.dtype),
                          bool(v.aval.weak)))
        elif isinstance(v, (bool, int, float, complex)):
            parts.append(("s", type(v).__name__, v))
        else:
            return None
    try:
        key = (kind, eqn.prim.name, id(eqn.prim), tuple(sorted(eqn.params.items())),
               tuple(parts)) + extra
        hash(key)
    except TypeError:
        return None
    return key


def coordinate_layout(graph: Graph, wrt: Sequence[bool], batch_axes=None):
    """Per differentiated input: ``(input index, instance shape, offset)``, and ``D``."""
    layout, offset = [], 0
    for k, (v, w) in enumerate(zip(graph.inputs, wrt)):
        if not w:
            continue
        axes = batch_axes_of(v, batch_axes)
        inst = tuple(s for a, s in enumerate(v.shape) if a not in axes)
        layout.append((k, inst, offset))
        offset += int(np.prod(inst, dtype=np.int64))
    return layout, offset


def batch_axes_of(v, batch_axes) -> tuple:
    if batch_axes is None:
        return ()
    return tuple(a % v.ndim for a in batch_axes)


def seed_coordinates(x, inst, offset, D, axes, first=0, count=None):
    """``J`` of an input: rows ``offset..`` of the identity over its instance axes (its
    coordinates ``first .. first + count``, all of them by default), broadcast along its
    batch axes (recorded as a broadcast of a small constant, which the fused kernels read as
    a view)."""
    n = int(np.prod(inst, dtype=np.int64))
    count = n if count is None else count
    eye = np.zeros((D, n), dtype=x.dtype)
    eye[offset:offset + count, first:first + count] = np.eye(count, dtype=x.dtype)
    eye = eye.reshape([D] + [1 if a in axes else s for a, s in enumerate(x.shape)])
    full = (D,) + tuple(x.shape)
    if eye.shape == full:
        return traced_constant(x, eye)
    return x._builder.record(_sh.broadcast_to, [eye], {"shape": full})


