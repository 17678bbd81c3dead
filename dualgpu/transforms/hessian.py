"""The dense Hessian's program: the HVP graph batched over the basis vectors of every
differentiated input (JAX's ``jacfwd(jacrev(f))``).

Example::

    >>> g = dg.trace(lambda x: np.sum(x ** 3), np.ones(2))
    >>> H = hessian_graph(g, 0)
    >>> [tuple(o.shape) for o in H.outputs]
    [(2, 2)]
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.interpret import eval_graph
from ..core.ir import Graph
from ..core.trace import trace_to_graph
from .hvp import hvp_graph
from .simplify import simplify
from .vmap import batch_graph


def hessian_graph(graph: Graph, ks) -> Graph:
    """``(*inputs) -> H``: the blocks ``H[i][j]`` of the Hessian of ``graph``'s scalar
    output with respect to inputs ``ks`` (an int: one input), in that order, each of shape
    ``x_i.shape + x_j.shape``: ``H[i][j][a, b] = (H e_b)_i[a]``, the HVP graph batched over
    the basis vectors ``e_b`` of every input at once."""
    ks = [ks] if isinstance(ks, (int, np.integer)) else list(ks)
    xs = [graph.inputs[k] for k in ks]
    shapes = [tuple(x.shape) for x in xs]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    n = sum(sizes)
    hv = hvp_graph(graph, ks, value=False, grads=False)
    batched = None
    if n:
        batched, _ = batch_graph(hv, [None] * len(graph.inputs) + [0] * len(ks), n,
                                 [0] * len(ks))

    def run(*inputs):
        xp = graph.xp or np
        if batched is None:  # no variables: the Hessian is empty
            return [xp.zeros(si + sj, dtype=np.result_type(xi.dtype, xj.dtype))
                    for xi, si in zip(xs, shapes) for xj, sj in zip(xs, shapes)]
        basis, start = [], 0  # basis[j]: (n, *x_j.shape), rows start..start+size_j = I
        for x, shape, size in zip(xs, shapes, sizes):
            block = xp.zeros((n, size), dtype=x.dtype)
            block[start:start + size] = xp.eye(size, dtype=x.dtype)
            basis.append(block.reshape((n,) + shape))
            start += size
        columns = eval_graph(batched, list(inputs) + basis)  # columns[i][b] = (H e_b)_i
        blocks = []
        for col, si in zip(columns, shapes):
            start = 0
            for sj, size in zip(shapes, sizes):
                part = lax.getitem(col, (slice(start, start + size),)) if len(ks) > 1 else col
                block = lax.reshape(part, sj + si)
                blocks.append(lax.transpose(block, list(range(len(sj), len(sj) + len(si)))
                                            + list(range(len(sj)))))
                start += size
        return blocks

    new, _ = trace_to_graph(run, [v.aval for v in graph.inputs], graph.xp,
                            name=f"hessian_{graph.name}", input_names=graph.input_names)
    return simplify(new)
