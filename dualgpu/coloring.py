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

Banded and stencil patterns (a chain, a 2-D grid in row-major order) are first tried with
**lattice colorings**, ``(j + s * (j // w)) mod k`` for the pattern's own offsets ``w``,
checked in NumPy in milliseconds: when one uses as many colors as the densest row has
entries, no coloring can use fewer, and the graphs and greedy passes are skipped (3 colors
for chained Rosenbrock, 5 for the 5-point Laplacian, at any size).

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


# lattice colorings: at most this many offsets w, and k up to the lower bound plus this
LATTICE_WIDTHS = 6
LATTICE_EXTRA_COLORS = 2
LATTICE_MAX_COLORS = 64
LATTICE_PROBE_ROWS = 2048   # rows checked first (start and middle) before the full check


def column_coloring(pattern) -> np.ndarray:
    """A color per column of ``pattern`` (m x n) such that columns of one color share no
    row: the JVPs of one seed per color give every entry.

    >>> import scipy.sparse as sp
    >>> column_coloring(sp.csr_matrix(np.array([[1, 1, 0], [0, 1, 1]]))).tolist()
    [0, 1, 0]
    """
    pattern = _pattern(pattern)
    lattice, optimal = _lattice_attempt(pattern)
    if optimal:
        return lattice
    return _best([_intersection_graph(pattern)], lattice)


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
    lattice, optimal = _lattice_attempt(pattern)
    if optimal:
        return lattice
    graphs = [_intersection_graph(pattern)]
    if graphs[0].nnz <= 2 * NETWORKX_EDGES:
        graphs.append(distance2_graph(pattern))
    return _best(graphs, lattice)


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
    pattern = _pattern(pattern)
    return _rows_distinct(pattern.indptr, pattern.indices, np.asarray(colors, dtype=np.int64))


def lattice_coloring(n: int, k: int, width: int = 0, shift: int = 0) -> np.ndarray:
    """The color ``(j + shift * (j // width)) mod k`` of each column ``j < n`` (``width=0``:
    ``j mod k``): for a 2-D grid of rows of ``width`` in row-major order, the colors
    ``(column + (width + shift) * row) mod k``.

    >>> lattice_coloring(8, 3).tolist()
    [0, 1, 2, 0, 1, 2, 0, 1]
    >>> lattice_coloring(6, 5, width=3, shift=1).tolist()   # (column + 4 * row) mod 5
    [0, 1, 2, 4, 0, 1]
    """
    j = np.arange(n, dtype=np.int64)
    return (j + shift * (j // width) if width else j) % k


def _rows_distinct(indptr, indices, colors) -> bool:
    """Whether the columns of each CSR row have distinct colors."""
    if len(indices) == 0:
        return True
    k = int(colors.max(initial=0)) + 1
    rows = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
    counts = np.bincount(rows * k + colors[indices], minlength=(len(indptr) - 1) * k)
    return int(counts.max()) <= 1


def _lattice_widths(pattern) -> list[int]:
    """The most frequent offsets of the pattern's columns from the first column of their
    row (and from the row's index when square): a grid's row width is among them."""
    rows = np.repeat(np.arange(pattern.shape[0], dtype=np.int64), np.diff(pattern.indptr))
    cols = pattern.indices.astype(np.int64)
    first = pattern.indices[np.minimum(pattern.indptr[:-1], max(pattern.nnz - 1, 0))]
    offsets = [cols - first[rows].astype(np.int64)]
    if pattern.shape[0] == pattern.shape[1]:
        offsets.append(np.abs(cols - rows))
    offsets = np.concatenate(offsets)
    offsets = offsets[(offsets > 1) & (offsets < pattern.shape[1])]
    if len(offsets) == 0:
        return []
    values, counts = np.unique(offsets, return_counts=True)
    top = np.argsort(-counts, kind="stable")[:LATTICE_WIDTHS]
    return [int(v) for v in values[top]]


def _lattice_attempt(pattern) -> tuple[np.ndarray | None, bool]:
    """The valid lattice coloring with the fewest colors (``None`` if none is), and whether
    it is optimal: as many colors as the densest row has entries (they all differ)."""
    m, n = pattern.shape
    lower = int(np.diff(pattern.indptr).max(initial=0))
    if n == 0 or lower == 0:
        return np.zeros(n, dtype=np.int64), True
    if lower > LATTICE_MAX_COLORS:
        return None, False
    widths = _lattice_widths(pattern)
    probes = [slice(0, LATTICE_PROBE_ROWS), slice(m // 2, m // 2 + LATTICE_PROBE_ROWS)]
    for k in range(lower, min(lower + LATTICE_EXTRA_COLORS, n) + 1):
        for width, shift in [(0, 0)] + [(w, s) for w in widths for s in range(1, k)]:
            colors = lattice_coloring(n, k, width, shift)
            if all(_rows_distinct(pattern[p].indptr, pattern[p].indices, colors)
                   for p in probes) and _rows_distinct(pattern.indptr, pattern.indices,
                                                       colors):
                return colors, k == lower
    return None, False


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


def _best(graphs, lattice=None) -> np.ndarray:
    """The coloring with the fewest colors among the candidates (the first on ties): our
    greedy in natural and largest-first order on the first graph (the one that decides
    validity), networkx's strategies on every graph when they are small, and a valid
    lattice coloring if there is one."""
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
    if lattice is not None:
        candidates.append(lattice)
    return min(candidates, key=lambda c: int(c.max()) + 1)
