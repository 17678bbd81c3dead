"""Forward mode: ``jvp_graph(g)`` maps (primals, tangents) to (outputs, output tangents)."""
from __future__ import annotations

from collections.abc import Sequence

from .. import lax
from ..core.interpret import propagate_states
from ..core.ir import Aval, Graph
from ..core.trace import Tracer, trace_to_graph
from ..errors import DualgpuError
from ._gc import collector_paused
from .simplify import simplify


def jvp_rule(eqn, primals, tangents):
    """Apply one equation's JVP rule (tangent ``None`` is a symbolic zero)."""
    prim = eqn.prim
    if all(t is None for t in tangents) or not prim.differentiable:
        outs = prim.bind(*primals, **eqn.params)
        outs_list = outs if prim.multiple_results else [outs]
        return outs_list, [None] * len(outs_list)
    if prim.jvp is None:
        raise DualgpuError(
            f"primitive {prim.name} has no JVP rule: forward mode (jvp, hvp) cannot go "
            "through it. Give it a jvp= or a vjp= (dualgpu derives the JVP from a VJP).")
    out, out_t = prim.jvp(primals, tangents, **eqn.params)
    if prim.multiple_results:
        return list(out), list(out_t)
    return [out], [out_t]


@collector_paused()
def jvp_graph(graph: Graph, with_tangent: Sequence[bool] | None = None) -> Graph:
    """A graph computing ``(*outputs, *output_tangents)`` from ``(*primals, *tangents)``.

    Tangent inputs exist only for inputs flagged in ``with_tangent`` (default: all float
    inputs). Output tangents that are symbolically zero become zeros arrays.

    Example::

        >>> print(jvp_graph(dg.trace(lambda x: np.sin(x), np.ones(3))))
        { lambda x:float64[3] x_dot:float64[3] .
          t0:float64[3] = sin x
          t1:float64[3] = cos x
          t2:float64[3] = multiply t1 x_dot
          in ( t0 t2 ) }
    """
    if with_tangent is None:
        with_tangent = [v.dtype.kind in "fc" for v in graph.inputs]
    avals = [v.aval for v in graph.inputs]
    tangent_avals = [Aval(a.shape, a.dtype) for a, w in zip(avals, with_tangent) if w]
    n = len(avals)

    def run(*args):
        tangent_iter = iter(args[n:])
        tangents = {v.id: next(tangent_iter) for v, w in zip(graph.inputs, with_tangent) if w}
        outs, outs_t = propagate_states(graph, args[:n], tangents, jvp_rule)
        return outs + [_materialize(t, o) for t, o in zip(outs_t, outs)]

    names = None
    if graph.input_names:
        names = list(graph.input_names) + [
            f"{n}_dot" for n, w in zip(graph.input_names, with_tangent) if w]
    new, _ = trace_to_graph(run, avals + tangent_avals, _xp_of(graph),
                            name=f"jvp_{graph.name}", input_names=names)
    return simplify(new)


def _materialize(t, o):
    if t is not None:
        return t
    if isinstance(o, Tracer):
        return lax.zeros_like(o)
    return lax.zeros_like(o) if hasattr(o, "shape") else 0.0


def _xp_of(graph: Graph):
    return getattr(graph, "xp", None) or __import__("numpy")

