"""The walk that the forward-propagating transforms share (the forward Laplacian, Taylor
mode, the forward biharmonic): every equation of a graph applied in the current trace, each
value carrying a transform's *state* beside it (its jet, its series, ...).

Example (a state that counts the equations a value depends on; the walk records into the
trace it runs in)::

    >>> g = dg.trace(lambda x: np.sin(x) * 2, np.ones(2))
    >>> def rule(eqn, values, states):
    ...     outs = [eqn.prim.bind(*values, **eqn.params)]
    ...     return outs, [1 + max((s for s in states if s is not None), default=0)]
    >>> depth = {}
    >>> def program(x):
    ...     outs, depth["out"] = propagate_states(g, [x], {g.inputs[0].id: 0}, rule)
    ...     return outs[0]
    >>> _ = dg.trace(program, np.ones(2)); depth["out"]
    [2]
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from ..core.interpret import read
from ..core.ir import Graph, Var
from ..core.trace import current_builder

__all__ = ["propagate_states"]


def propagate_states(graph: Graph, args: Sequence, states: dict,
                     rule: Callable) -> tuple[list, list]:
    """``graph``'s equations on ``args`` in the current trace, with the states of the
    values (``states``: var id -> the inputs' states) pushed through
    ``rule(eqn, values, in_states) -> (outputs, out_states)``; a None state is a symbolic
    zero and is not kept. What each equation records carries the user's line. Returns the
    outputs and their states (None where they have none)."""
    env = {v.id: a for v, a in zip(graph.inputs, args)}
    senv = dict(states)
    builder = current_builder()
    outer = builder.rule_source
    try:
        for eqn in graph.eqns:
            builder.rule_source = eqn.source or outer  # what it records: the user's line
            values = [read(env, a) for a in eqn.inputs]
            ins = [senv.get(a.id) if isinstance(a, Var) else None for a in eqn.inputs]
            outs, out_states = rule(eqn, values, ins)
            for v, o, s in zip(eqn.outs, outs, out_states):
                env[v.id] = o
                if s is not None:
                    senv[v.id] = s
    finally:
        builder.rule_source = outer
    return ([read(env, a) for a in graph.outputs],
            [senv.get(a.id) if isinstance(a, Var) else None for a in graph.outputs])
