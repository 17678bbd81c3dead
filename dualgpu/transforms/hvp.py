"""Second order: the gradient graph and forward-over-reverse Hessian-vector products."""
from __future__ import annotations

from collections.abc import Sequence

from ..core.ir import Graph
from ..errors import NonScalarOutputError
from ._gc import collector_paused
from .jvp import jvp_graph
from .simplify import dce
from .stack_gemms import stack_gemms
from .vjp import vjp_graph


def grad_graph(graph: Graph, argnums: Sequence[int], *,
               stack: bool | str = False) -> Graph:
    """``(*args) -> (value, *grads)`` for a graph with one scalar output; ``stack=True``
    merges its matrix products where that saves GEMMs (:func:`stack_gemms`), ``"large"``
    only large products sharing an operand (``X @ [W1 | V1]``)."""
    if len(graph.outputs) != 1 or tuple(graph.outputs[0].shape) != ():
        shapes = ", ".join(str(tuple(o.shape)) for o in graph.outputs)
        raise NonScalarOutputError(
            f"{graph.name} must return one scalar to be differentiated by grad/hvp, but "
            f"returns shape(s) {shapes}. Reduce it (e.g. np.sum) or use dg.vjp / "
            "hvp(batch_axes=...)")
    wrt = [i in argnums for i in range(len(graph.inputs))]
    g = vjp_graph(graph, wrt, unit_cotangent=True)
    g = stack_gemms(g, large_only=stack == "large") if stack else g
    g.output_names = ["value"] + [f"grad {n}" for n in _names(graph, argnums)]
    return g


def _names(graph: Graph, argnums: Sequence[int]) -> list[str]:
    given = graph.input_names or []
    return [given[i] if i < len(given) else f"arg {i}" for i in argnums]


@collector_paused()
def hvp_graph(graph: Graph, argnums: Sequence[int], *, value: bool = True,
              grads: bool = True, stack: bool | str = False) -> Graph:
    """``(*args, *vs) -> (value, *grads, *hvps)``: forward-over-reverse.

    The tangent directions ``vs`` are fed into the differentiated arguments of the gradient
    graph, so one program yields the value, the gradient and ``H·v``. ``value=False`` and
    ``grads=False`` leave those outputs out, and with them every equation only they need
    (``dg.hvp`` computes neither). ``stack=True`` then merges matrix products
    (:func:`stack_gemms`: ``X·[W | V]``, ``[h | ḣ]·[W2 ; V2]``).

    Example::

        >>> g = dg.trace(lambda x: np.sum(np.sin(x)), np.ones(2))
        >>> print(hvp_graph(g, [0], value=False, grads=False))
        { lambda x:float64[2] x_dot:float64[2] .
          t0:float64[2] = sin x
          t1:float64[2] = negative t0
          t2:float64[2] = multiply t1 x_dot
          in ( t2 ) }
    """
    g = grad_graph(graph, argnums)
    with_tangent = [i in argnums for i in range(len(graph.inputs))]
    j = jvp_graph(g, with_tangent)
    # j outputs: value, grads..., value_dot, grads_dot...; value_dot is never kept
    k = len(argnums)
    outs = j.outputs
    j.outputs = (outs[:1] if value else []) + (outs[1:1 + k] if grads else []) + outs[2 + k:]
    # j is simplified already and CSE and the slice merge are idempotent: dropping an output
    # only leaves dead code
    j = dce(j)
    j = stack_gemms(j, large_only=stack == "large") if stack else j
    names = _names(graph, argnums)
    j.output_names = ((["value"] if value else []) + ([f"grad {n}" for n in names] if grads
                      else []) + [f"H·v {n}" for n in names])
    return j
