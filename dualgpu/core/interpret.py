"""The reference semantics of a graph: apply each primitive in order.

With concrete arrays this computes the result; with tracers it re-records the graph into the
current trace (which is how transforms build new graphs).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .ir import Const, Graph, Literal
from .trace import current_builder


def read(env: dict, atom) -> Any:
    if isinstance(atom, Literal):
        return atom.value
    if isinstance(atom, Const):
        builder = current_builder()
        if builder is not None:
            # re-traced (a transform): a traced value that reads the array when the new
            # program runs, so that no op on it is evaluated now into a frozen copy
            return builder.read_const(atom)
        return atom.value
    return env[atom.id]


def eval_graph(graph: Graph, args: Sequence[Any]) -> list:
    """Evaluate ``graph`` on ``args``; returns the list of outputs.

    Example::

        >>> g = dg.trace(lambda x: np.sin(x) * 2, np.ones(3))
        >>> eval_graph(g, [np.zeros(3)])
        [array([0., 0., 0.])]
    """
    env = eval_environment(graph, args)
    return [read(env, a) for a in graph.outputs]


def eval_environment(graph: Graph, args: Sequence[Any]) -> dict:
    """Evaluate every equation; returns the map from variable id to value."""
    env: dict[int, Any] = {}
    for v, a in zip(graph.inputs, args):
        env[v.id] = a
    builder = current_builder()
    outer = builder.rule_source if builder is not None else None
    for eqn in graph.eqns:
        if builder is not None:  # re-recorded equations keep the user's line
            builder.rule_source = eqn.source or outer
        ins = [read(env, a) for a in eqn.inputs]
        outs = eqn.prim.bind(*ins, **eqn.params)
        if not eqn.prim.multiple_results:
            outs = [outs]
        for v, o in zip(eqn.outs, outs):
            env[v.id] = o
    if builder is not None:
        builder.rule_source = outer
    return env
