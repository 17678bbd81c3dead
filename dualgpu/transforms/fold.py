"""Fill folding as a graph pass: ``fold_fills(graph)`` re-records every equation, so each
op's ``fold`` rule (exact identities on literals and fills, :mod:`dualgpu.rules.folding_rules`)
applies to the whole graph.

Tracing applies the same rules as it records, so a traced graph is already folded; the pass
is for graphs built otherwise (by hand, or traced with a rule switched off) and is how the
rules are tested: a folded graph computes exactly, bit for bit, what the graph did.

    >>> from dualgpu.core.ir import Aval, Eqn, Graph, Literal, Var
    >>> from dualgpu.ops.elementwise import multiply
    >>> x, y = Var(Aval((3,), np.dtype("float64"))), Var(Aval((3,), np.dtype("float64")))
    >>> g = Graph([x], [y], [Eqn(multiply, [x, Literal(1.0)], {}, [y])], xp=np)
    >>> len(g.eqns), len(fold_fills(g).eqns)
    (1, 0)
"""
from __future__ import annotations

from ..core.interpret import eval_graph
from ..core.ir import Graph
from ..core.trace import trace_to_graph
from .simplify import dce


def fold_fills(graph: Graph) -> Graph:
    """``graph`` with the fold rules of its ops applied and the equations left unread
    dropped (same inputs, same outputs)."""
    folded, _ = trace_to_graph(lambda *xs: list(eval_graph(graph, xs)),
                               [v.aval for v in graph.inputs], graph.xp, name=graph.name,
                               input_names=graph.input_names)
    return dce(folded)  # the fills that folded into others are left unread
