"""The reference semantics of a graph: apply each primitive in order.

With concrete arrays this computes the result; with tracers it re-records the graph into the
current trace (which is how transforms build new graphs).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .ir import Atom, Const, Graph, Literal, Var
from .trace import current_builder


def read(env: dict, atom: Atom) -> Any:
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
    env, _ = walk(graph, args)
    return [read(env, a) for a in graph.outputs]


def eval_environment(graph: Graph, args: Sequence[Any]) -> dict:
    """Evaluate every equation; returns the map from variable id to value."""
    return walk(graph, args)[0]


def walk(graph: Graph, args: Sequence[Any] | None, states: dict | None = None,
         rule: Callable | None = None) -> tuple[dict, dict]:
    """The equation walk of every interpreter: ``graph``'s equations applied in order to
    ``args``, each value with an optional *state* beside it (a tangent, a batch flag, a
    jet...: ``states`` maps the inputs' var ids to theirs; a None state is "none" and is
    not kept), by ``rule(eqn, values, in_states) -> (outputs, out_states)`` (default: the
    op itself, no states). Inside a trace, what an equation records carries the user's
    line of the equation walked, and the enclosing line is restored afterwards, on error
    too. Returns the values and the states, by var id (:func:`read`, :func:`read_states`).
    With ``args=None`` only the states are walked (an analysis that computes no value:
    sparsity detection); the rule gets None for the values and returns None for them.

    Example (a state that counts the equations a value depends on)::

        >>> g = dg.trace(lambda x: np.sin(x) * 2, np.ones(2))
        >>> def depth(eqn, values, states):
        ...     outs = [eqn.prim.bind(*values, **eqn.params)]
        ...     return outs, [1 + max((s for s in states if s is not None), default=0)]
        >>> env, senv = walk(g, [np.zeros(2)], {g.inputs[0].id: 0}, depth)
        >>> read(env, g.outputs[0]), read_states(senv, g.outputs)
        (array([0., 0.]), [2])
    """
    values_too = args is not None
    env: dict[int, Any] = {v.id: a for v, a in zip(graph.inputs, args or ())}
    senv: dict[int, Any] = dict(states) if states else {}
    builder = current_builder()
    outer = builder.rule_source if builder is not None else None
    try:
        for eqn in graph.eqns:
            if builder is not None:  # what it records: the user's line
                builder.rule_source = eqn.source or outer
            values = [read(env, a) for a in eqn.inputs] if values_too else None
            if rule is None:
                outs = eqn.prim.bind(*(values or ()), **eqn.params)
                for v, o in zip(eqn.outs, outs if eqn.prim.multiple_results else [outs]):
                    env[v.id] = o
                continue
            outs, out_states = rule(eqn, values, read_states(senv, eqn.inputs))
            for k, (v, st) in enumerate(zip(eqn.outs, out_states)):
                if values_too:
                    env[v.id] = outs[k]
                if st is not None:
                    senv[v.id] = st
    finally:
        if builder is not None:
            builder.rule_source = outer
    return env, senv


def propagate_states(graph: Graph, args: Sequence, states: dict,
                     rule: Callable) -> tuple[list, list]:
    """:func:`walk` with states, returning ``graph``'s outputs and their states (None where
    they have none): the form the forward interpreters use (the forward Laplacian, Taylor
    mode, the forward biharmonic, jvp, vmap)."""
    env, senv = walk(graph, args, states, rule)
    return [read(env, a) for a in graph.outputs], read_states(senv, graph.outputs)


def read_states(senv: dict, atoms: Sequence) -> list:
    """The states of ``atoms`` (None for literals, constants and values without one)."""
    return [senv.get(a.id) if isinstance(a, Var) else None for a in atoms]


@contextmanager
def user_lines() -> Iterator[Callable[[Any], None]]:
    """Within: ``at(eqn)`` makes what is recorded carry the user's line of ``eqn`` (an
    equation, or anything with a ``source``), for the walks that are not a forward
    :func:`walk` (the backward pass, the index bounds); the enclosing line is restored at
    the end, on error too."""
    builder = current_builder()
    outer = builder.rule_source if builder is not None else None

    def at(eqn: Any) -> None:
        if builder is not None:
            builder.rule_source = eqn.source or outer

    try:
        yield at
    finally:
        if builder is not None:
            builder.rule_source = outer
