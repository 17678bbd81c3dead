"""Reverse mode: ``vjp_graph(g)`` maps (primals, output cotangent) to (output, input
cotangents), by a forward sweep recorded into the new graph and a backward sweep of VJP
rules. Cotangents of ``None`` are symbolic zeros; only equations on a path from a
differentiated input to the output are transposed."""
from __future__ import annotations

from collections.abc import Sequence

from .. import lax
from ..core.interpret import eval_environment, read, user_lines
from ..core.ir import Aval, Graph, Var
from ..core.trace import trace_to_graph
from ..errors import DualgpuError
from ..rules.common import add_any, inactive_primals
from ._gc import collector_paused
from .simplify import simplify


def active_vars(graph: Graph, wrt: Sequence[bool]) -> set:
    """Ids of the variables that depend on a differentiated input."""
    active = {v.id for v, w in zip(graph.inputs, wrt) if w}
    for eqn in graph.eqns:
        if eqn.prim.differentiable and any(
                isinstance(a, Var) and a.id in active for a in eqn.inputs):
            for v in eqn.outs:
                if v.dtype.kind in "fc":
                    active.add(v.id)
    return active


def backward_pass(graph: Graph, env: dict, active: set, out_cts: list) -> dict:
    """Run VJP rules from the outputs back to the inputs; returns var id -> cotangent."""
    ct_env: dict[int, object] = {}
    for a, ct in zip(graph.outputs, out_cts):
        if isinstance(a, Var) and a.id in active and ct is not None:
            ct_env[a.id] = add_any(ct_env.get(a.id), ct)
    with user_lines() as at:
        for eqn in reversed(graph.eqns):
            at(eqn)  # the transposed equations carry the user's line
            _transpose(eqn, env, active, ct_env)
    return ct_env


def _transpose(eqn, env: dict, active: set, ct_env: dict) -> None:
    """The cotangents of ``eqn``'s active inputs from its outputs' (``ct_env``, by var id)."""
    cts_out = [ct_env.pop(v.id, None) for v in eqn.outs]
    if all(c is None for c in cts_out):
        return
    if not any(isinstance(a, Var) and a.id in active for a in eqn.inputs):
        return
    prim = eqn.prim
    if prim.vjp is None:
        raise DualgpuError(
            f"primitive {prim.name} has no VJP rule: reverse mode (grad, vjp, hvp) "
            "cannot go through it. Give it a vjp= (docs/custom_rules.md).")
    primals = [read(env, a) for a in eqn.inputs]
    ans = [env[v.id] for v in eqn.outs]
    inactive = [p for p, a in zip(primals, eqn.inputs)
                if not (isinstance(a, Var) and a.id in active)]
    with inactive_primals(inactive):
        if prim.multiple_results:
            cts_in = prim.vjp(cts_out, primals, ans, **eqn.params)
        else:
            cts_in = prim.vjp(cts_out[0], primals, ans[0], **eqn.params)
    for a, ct in zip(eqn.inputs, cts_in):
        if ct is None or not isinstance(a, Var) or a.id not in active:
            continue
        if tuple(getattr(ct, "shape", ())) != tuple(a.shape):
            raise DualgpuError(
                f"the VJP rule of {prim.name} returned a cotangent of shape "
                f"{getattr(ct, 'shape', ())} for an input of shape {a.shape}")
        if getattr(ct, "dtype", a.dtype) != a.dtype and a.dtype.kind in "fc":
            # a cotangent has its primal's dtype (float32 x @ float64 A: float32 grad)
            ct = lax.astype(ct, a.dtype)
        ct_env[a.id] = add_any(ct_env.get(a.id), ct)


@collector_paused()
def vjp_graph(graph: Graph, wrt: Sequence[bool] | None = None, *,
              unit_cotangent: bool = False) -> Graph:
    """A graph computing ``(*outputs, *cotangents of the wrt inputs)``.

    Inputs are ``(*primals, *output_cotangents)``; with ``unit_cotangent`` the graph must
    have one scalar output and takes no cotangent input (this is ``grad``).

    Example::

        >>> g = dg.trace(lambda x: np.sum(np.sin(x)), np.ones(3))
        >>> print(vjp_graph(g, unit_cotangent=True))     # the value, then the gradient
        { lambda x:float64[3] .
          t0:float64[3] = sin x
          t1:float64[] = reduce_sum t0 axes=(0,)
          t2:float64[3] = cos x
          in ( t1 t2 ) }
    """
    if wrt is None:
        wrt = [v.dtype.kind in "fc" for v in graph.inputs]
    avals = [v.aval for v in graph.inputs]
    n = len(avals)
    ct_avals = [] if unit_cotangent else [Aval(tuple(a.shape), a.dtype)
                                          for a in graph.outputs]
    active = active_vars(graph, wrt)

    def run(*args):
        env = eval_environment(graph, args[:n])
        outs = [read(env, a) for a in graph.outputs]
        if unit_cotangent:
            out_cts = [lax.ones_like(outs[0])]
        else:
            out_cts = list(args[n:])
        ct_env = backward_pass(graph, env, active, out_cts)
        grads = []
        for v, w in zip(graph.inputs, wrt):
            if not w:
                continue
            ct = ct_env.get(v.id)
            if ct is None:
                ct = lax.zeros_like(env[v.id])
            elif tuple(getattr(ct, "shape", ())) != tuple(v.shape):
                ct = lax.broadcast_to(ct, v.shape)
            grads.append(ct)
        return outs + grads

    names = None
    if graph.input_names:
        names = list(graph.input_names) + [f"out{i}_bar" for i in range(len(ct_avals))]
    new, _ = trace_to_graph(run, avals + ct_avals, graph.xp, name=f"vjp_{graph.name}",
                            input_names=names)
    return simplify(new)
