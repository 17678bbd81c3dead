"""Graph clean-up: common-subexpression elimination and dead-code elimination."""
from __future__ import annotations

from ..ir import Const, Eqn, Graph, Literal, Var


def _atom_key(a, rename):
    if isinstance(a, Literal):
        return ("lit", type(a.value).__name__, a.value)
    if isinstance(a, Const):
        return ("const", a.id)
    return ("var", rename.get(a.id, a).id)


def _params_key(params):
    try:
        key = tuple(sorted(params.items()))
        hash(key)
        return key
    except TypeError:
        return None


def cse(graph: Graph) -> Graph:
    """Merge equations that apply the same primitive to the same inputs and params."""
    rename: dict[int, Var] = {}
    seen: dict = {}
    eqns = []
    for eqn in graph.eqns:
        inputs = [rename.get(a.id, a) if isinstance(a, Var) and not isinstance(a, Const)
                  else a for a in eqn.inputs]
        pkey = _params_key(eqn.params)
        key = None
        if pkey is not None:
            key = (eqn.prim.name, tuple(_atom_key(a, rename) for a in inputs), pkey)
            hit = seen.get(key)
            if hit is not None:
                for v, w in zip(eqn.outs, hit.outs):
                    rename[v.id] = w
                continue
        new = Eqn(eqn.prim, inputs, eqn.params, eqn.outs, eqn.source)
        if key is not None:
            seen[key] = new
        eqns.append(new)
    outputs = [rename.get(a.id, a) if isinstance(a, Var) and not isinstance(a, Const) else a
               for a in graph.outputs]
    return _replace(graph, eqns, outputs)


def dce(graph: Graph) -> Graph:
    """Drop equations none of whose outputs reach a graph output."""
    live = {a.id for a in graph.outputs if isinstance(a, Var)}
    kept = []
    for eqn in reversed(graph.eqns):
        if any(v.id in live for v in eqn.outs):
            kept.append(eqn)
            for a in eqn.inputs:
                if isinstance(a, Var):
                    live.add(a.id)
    kept.reverse()
    return _replace(graph, kept, graph.outputs)


def _replace(graph: Graph, eqns, outputs) -> Graph:
    return Graph(graph.inputs, list(outputs), eqns, name=graph.name,
                 input_names=graph.input_names, xp=graph.xp)


def simplify(graph: Graph) -> Graph:
    """CSE then DCE.

    Example::

        simplify(dg.trace(lambda x: np.sin(x) + np.sin(x), x))   # one sin
    """
    return dce(cse(graph))
