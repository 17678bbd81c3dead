"""Graph coloring for compressed sparse derivatives (Curtis-Powell-Reid; Gebremedhin,
Manne and Pothen 2005).

Columns of a Jacobian that share no row can be computed with one JVP: the seed is the sum of
their unit vectors, and each entry of the compressed product belongs to exactly one of them.
:func:`column_coloring` colors the **column-intersection graph** (columns adjacent when they
share a row), :func:`row_coloring` the rows for VJPs, and :func:`symmetric_coloring` the
columns of a symmetric Hessian so that every entry is recovered directly from one HVP
(structurally orthogonal columns; every distance-2 coloring of the adjacency graph is one).

Greedy coloring in a good order is the standard heuristic. On small graphs the result is
the best of our greedy orders and of networkx's ``greedy_color`` strategies (largest first,
smallest last, connected sequential; DSATUR up to :data:`NETWORKX_DSATUR_VERTICES`
vertices), on the intersection graph and, for Hessians, on the distance-2 graph, so it never
uses more colors than networkx's best greedy distance-2 coloring. Our DSATUR (with a heap:
networkx's is quadratic) runs up to :data:`DSATUR_VERTICES` vertices; larger graphs use our
greedy in natural and largest-first order. Everything is deterministic.

>>> import scipy.sparse as sp
>>> tridiagonal = sp.diags([1, 1, 1], [-1, 0, 1], shape=(6, 6), format="csr", dtype=bool)
>>> symmetric_coloring(tridiagonal).tolist()
[0, 1, 2, 0, 1, 2]
"""
from __future__ import annotations

import heapq

import networkx as nx
import numpy as np
import scipy.sparse as sp

from .errors import InvalidArgumentError

# the largest graph (vertices) colored by our DSATUR too (about 2 s at 10^5 on one core)
DSATUR_VERTICES = 200_000
# the largest graph (edges) whose coloring also tries networkx's strategies
NETWORKX_EDGES = 20_000
NETWORKX_STRATEGIES = ("largest_first", "smallest_last", "DSATUR",
                       "connected_sequential_bfs", "connected_sequential_dfs")
# networkx's DSATUR takes time quadratic in the vertices (53 s at 10^4): only below this
NETWORKX_DSATUR_VERTICES = 2_000


def column_coloring(pattern) -> np.ndarray:
    """A color per column of ``pattern`` (m x n) such that columns of one color share no
    row: the JVPs of one seed per color give every entry.

    >>> import scipy.sparse as sp
    >>> column_coloring(sp.csr_matrix(np.array([[1, 1, 0], [0, 1, 1]]))).tolist()
    [0, 1, 0]
    """
    pattern = _pattern(pattern)
    return _best([_intersection_graph(pattern)])


def row_coloring(pattern) -> np.ndarray:
    """A color per row of ``pattern`` such that rows of one color share no column (the VJPs
    of one seed per color give every entry)."""
    return column_coloring(_pattern(pattern).T)


def symmetric_coloring(pattern) -> np.ndarray:
    """A color per column of a symmetric ``pattern`` (n x n) such that columns of one color
    share no row: every entry of the Hessian is read directly from one HVP per color."""
    pattern = _pattern(pattern)
    if pattern.shape[0] != pattern.shape[1]:
        raise InvalidArgumentError(f"symmetric_coloring: the pattern must be square, got "
                                   f"shape {pattern.shape}")
    graphs = [_intersection_graph(pattern)]
    if graphs[0].nnz <= 2 * NETWORKX_EDGES:
        graphs.append(distance2_graph(pattern))
    return _best(graphs)


def distance2_graph(pattern) -> sp.csr_matrix:
    """The graph joining columns at distance one or two in the adjacency graph of a
    symmetric pattern (diagonal ignored)."""
    adjacency = _pattern(pattern).astype(np.int64)
    adjacency.setdiag(0)
    adjacency.eliminate_zeros()
    reach = adjacency + adjacency @ adjacency
    return _without_diagonal(reach)


def is_valid_column_coloring(pattern, colors) -> bool:
    """Whether no row of ``pattern`` holds two columns of one color."""
    pattern = _pattern(pattern).tocoo()
    colors = np.asarray(colors)
    key = pattern.row.astype(np.int64) * (int(colors.max(initial=0)) + 1) + colors[pattern.col]
    return len(np.unique(key)) == len(key)


def greedy(graph, order) -> np.ndarray:
    """Greedy coloring of ``graph`` (a symmetric CSR adjacency matrix) visiting vertices in
    ``order``: each takes the smallest color none of its colored neighbours has."""
    indptr = graph.indptr.tolist()
    indices = graph.indices.tolist()
    colors = [-1] * graph.shape[0]
    for v in np.asarray(order).tolist():
        used = {colors[u] for u in indices[indptr[v]:indptr[v + 1]]}
        c = 0
        while c in used:
            c += 1
        colors[v] = c
    return np.asarray(colors, dtype=np.int64)


def dsatur(graph) -> np.ndarray:
    """DSATUR (Brélaz 1979) on ``graph`` (a symmetric CSR adjacency matrix): repeatedly color
    the uncolored vertex with the most distinct colors among its neighbours (ties: the
    larger degree, then the smaller index) with the smallest color free there. A heap with
    lazy entries: O((n + edges) log n), where networkx's DSATUR is quadratic."""
    indptr = graph.indptr.tolist()
    indices = graph.indices.tolist()
    n = graph.shape[0]
    degree = [indptr[v + 1] - indptr[v] for v in range(n)]
    colors = [-1] * n
    seen: list[set] = [set() for _ in range(n)]
    heap = [(0, -degree[v], v) for v in range(n)]
    heapq.heapify(heap)
    while heap:
        neg_sat, _, v = heapq.heappop(heap)
        if colors[v] >= 0 or -neg_sat != len(seen[v]):
            continue   # colored already, or a stale entry
        used = seen[v]
        c = 0
        while c in used:
            c += 1
        colors[v] = c
        for u in indices[indptr[v]:indptr[v + 1]]:
            if colors[u] < 0 and c not in seen[u]:
                seen[u].add(c)
                heapq.heappush(heap, (-len(seen[u]), -degree[u], u))
    return np.asarray(colors, dtype=np.int64)


def networkx_coloring(graph, strategy: str) -> np.ndarray:
    """networkx's ``greedy_color`` of ``graph`` (a CSR adjacency matrix) with ``strategy``."""
    g = nx.Graph()
    g.add_nodes_from(range(graph.shape[0]))
    coo = sp.triu(graph, k=1).tocoo()
    g.add_edges_from(zip(coo.row.tolist(), coo.col.tolist()))
    found = nx.greedy_color(g, strategy=strategy)
    return np.asarray([found[v] for v in range(graph.shape[0])], dtype=np.int64)


def _pattern(pattern) -> sp.csr_matrix:
    m = sp.csr_matrix(pattern)
    m = sp.csr_matrix((np.ones(m.nnz, dtype=np.int8), m.indices, m.indptr), shape=m.shape)
    m.sum_duplicates()
    return m


def _without_diagonal(m) -> sp.csr_matrix:
    m = sp.csr_matrix(m)
    m.setdiag(0)
    m.eliminate_zeros()
    m.sort_indices()
    return m


def _intersection_graph(pattern) -> sp.csr_matrix:
    """Columns adjacent when they share a row (in CSR, symmetric, no diagonal)."""
    p = pattern.astype(np.int64)
    return _without_diagonal(p.T @ p)


def _best(graphs) -> np.ndarray:
    """The coloring with the fewest colors among the candidates (the first on ties): our
    greedy in natural and largest-first order on the first graph (the one that decides
    validity), and networkx's strategies on every graph when they are small."""
    first = graphs[0]
    n = first.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    degree = np.diff(first.indptr)
    candidates = [greedy(first, np.arange(n)),
                  greedy(first, np.argsort(-degree, kind="stable"))]
    if n <= DSATUR_VERTICES:
        candidates.append(dsatur(first))
    for graph in graphs:
        if graph.nnz <= 2 * NETWORKX_EDGES:
            candidates += [networkx_coloring(graph, s) for s in NETWORKX_STRATEGIES
                           if s != "DSATUR" or n <= NETWORKX_DSATUR_VERTICES]
    return min(candidates, key=lambda c: int(c.max()) + 1)
