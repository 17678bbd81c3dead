"""Distance-1 colorings of the column-intersection graph (Jacobians) and distance-2
colorings of a symmetric pattern (Hessians, direct): greedy in several orders, DSATUR, lattice
colorings of stencils. :mod:`dualgpu.coloring` tells the whole story.

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

from ..errors import InvalidArgumentError

# the largest graphs (edges) also colored by our DSATUR (O(edges log n), about 1 s at 10^6
# edges in Python) and by greedy in smallest-last order (O(edges), set operations)
DSATUR_EDGES = 200_000
SMALLEST_LAST_EDGES = 400_000
# the largest graph (edges) whose coloring also tries networkx's strategies
NETWORKX_EDGES = 5_000
NETWORKX_STRATEGIES = ("largest_first", "smallest_last", "DSATUR",
                       "connected_sequential_bfs", "connected_sequential_dfs")
# networkx's DSATUR takes time quadratic in the vertices (53 s at 10^4): only below this
NETWORKX_DSATUR_VERTICES = 2_000


# lattice colorings: at most this many offsets w, and k up to the lower bound plus this
LATTICE_WIDTHS = 6
LATTICE_EXTRA_COLORS = 2
LATTICE_MAX_COLORS = 64
LATTICE_QUICK_ROWS = 128    # rows checked first,
LATTICE_PROBE_ROWS = 2048   # then these (start and middle), before the full check
LATTICE_WIDTH_ROWS = 8192   # rows (start and middle) whose offsets propose the widths


def column_coloring(pattern) -> np.ndarray:
    """A color per column of ``pattern`` (m x n) such that columns of one color share no
    row: the JVPs of one seed per color give every entry.

    >>> import scipy.sparse as sp
    >>> column_coloring(sp.csr_matrix(np.array([[1, 1, 0], [0, 1, 1]]))).tolist()
    [0, 1, 0]
    """
    pattern = as_pattern(pattern)
    lattice = _Lattice(pattern)
    optimal = lattice.fewest(lattice.lower)
    return optimal if optimal is not None else _best(pattern, lattice)


def row_coloring(pattern) -> np.ndarray:
    """A color per row of ``pattern`` such that rows of one color share no column (the VJPs
    of one seed per color give every entry). A structurally symmetric pattern's rows get
    its columns' coloring."""
    pattern = as_pattern(pattern)
    if is_structurally_symmetric(pattern):
        return column_coloring(pattern)
    return column_coloring(pattern.T)


def is_structurally_symmetric(pattern) -> bool:
    """Whether ``pattern`` is square with its entries placed symmetrically.

    >>> is_structurally_symmetric(np.array([[1, 2], [0, 1]]))
    False
    """
    p = as_pattern(pattern)
    return p.shape[0] == p.shape[1] and (p != p.T).nnz == 0


def symmetric_coloring(pattern) -> np.ndarray:
    """A color per column of a symmetric ``pattern`` (n x n) such that columns of one color
    share no row: every entry of the Hessian is read directly from one HVP per color."""
    pattern = as_pattern(pattern)
    if pattern.shape[0] != pattern.shape[1]:
        raise InvalidArgumentError(f"symmetric_coloring: the pattern must be square, got "
                                   f"shape {pattern.shape}")
    lattice = _Lattice(pattern)
    optimal = lattice.fewest(lattice.lower)
    return optimal if optimal is not None else _best(pattern, lattice, distance2=True)


def distance2_graph(pattern) -> sp.csr_matrix:
    """The graph joining columns at distance one or two in the adjacency graph of a
    symmetric pattern (diagonal ignored)."""
    adjacency = as_pattern(pattern).astype(np.int64)
    adjacency.setdiag(0)
    adjacency.eliminate_zeros()
    reach = adjacency + adjacency @ adjacency
    return without_diagonal(reach)


def is_valid_column_coloring(pattern, colors) -> bool:
    """Whether no row of ``pattern`` holds two columns of one color."""
    pattern = as_pattern(pattern)
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
    return _lattice_of(np.arange(n, dtype=np.int64), k, width, shift)


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
    row (and from the row's index when square), in :data:`LATTICE_WIDTH_ROWS` rows at the
    start and in the middle: a grid's row width is among them."""
    m = pattern.shape[0]
    sample = np.unique(np.concatenate([np.arange(s, min(s + LATTICE_WIDTH_ROWS, m))
                                       for s in (0, m // 2)]))
    part = pattern[sample]   # rows at the start and in the middle suffice to find widths
    per_row = np.diff(part.indptr)
    rows = np.repeat(sample.astype(np.int64), per_row)
    cols = part.indices.astype(np.int64)
    first = np.repeat(part.indices[np.minimum(part.indptr[:-1], max(part.nnz - 1, 0))],
                      per_row)
    parts = [cols - first.astype(np.int64)]
    if pattern.shape[0] == pattern.shape[1]:
        parts.append(np.abs(cols - rows))
    offsets = np.concatenate(parts)
    offsets = offsets[(offsets > 1) & (offsets < pattern.shape[1])]
    if len(offsets) == 0:
        return []
    values, counts = np.unique(offsets, return_counts=True)
    top = np.argsort(-counts, kind="stable")[:LATTICE_WIDTHS]
    return [int(v) for v in values[top]]


class _Lattice:
    """Lattice colorings of a pattern: the candidates ``(width, shift)`` from its own
    offsets, each checked first on a few rows (their columns' colors alone), then whole.
    ``lower``: the entries of the densest row, which any coloring needs."""

    def __init__(self, pattern):
        self.pattern = pattern
        m, n = pattern.shape
        self.lower = int(np.diff(pattern.indptr).max(initial=0))
        self.widths: list[int] | None = None   # proposed at the first search
        starts = (0,) if m <= LATTICE_PROBE_ROWS else (0, m // 2)   # small: one probe
        # a few rows first: most candidates fail there
        self.probes = [pattern[:LATTICE_QUICK_ROWS]] + \
            [pattern[s:s + LATTICE_PROBE_ROWS] for s in starts]

    def fewest(self, most: int, least: int = 0) -> np.ndarray | None:
        """The valid lattice coloring with the fewest colors, from ``least`` to ``most`` (and
        at most :data:`LATTICE_EXTRA_COLORS` above ``lower``), or None."""
        pattern = self.pattern
        n = pattern.shape[1]
        if n == 0 or self.lower == 0:
            return np.zeros(n, dtype=np.int64)
        if self.lower > LATTICE_MAX_COLORS:
            return None
        if self.widths is None:
            self.widths = _lattice_widths(pattern)
        probe_columns = [p.indices.astype(np.int64) for p in self.probes]
        probe_rows = [np.repeat(np.arange(p.shape[0], dtype=np.int64), np.diff(p.indptr))
                      for p in self.probes]
        for k in range(max(self.lower, least),
                       min(self.lower + LATTICE_EXTRA_COLORS, n, most) + 1):
            for width, shift in [(0, 0)] + [(w, s) for w in self.widths for s in range(1, k)]:
                if not all(_entries_distinct(rows, _lattice_of(j, k, width, shift), k)
                           for rows, j in zip(probe_rows, probe_columns)):
                    continue
                colors = lattice_coloring(n, k, width, shift)
                if _rows_distinct(pattern.indptr, pattern.indices, colors):
                    return colors
        return None


def _lattice_of(j, k: int, width: int, shift: int) -> np.ndarray:
    return (j + shift * (j // width) if width else j) % k


def _entries_distinct(rows, entry_colors, k: int) -> bool:
    """Whether the entries of each row (their rows and colors given, ``< k``) differ."""
    if len(entry_colors) == 0:
        return True
    return int(np.bincount(rows * k + entry_colors).max()) <= 1


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


def greedy_columns(pattern, order) -> np.ndarray:
    """Greedy distance-1 coloring of the column-intersection graph of ``pattern`` (m x n),
    visiting columns in ``order``, without building the graph: each column takes the
    smallest color no row of it holds yet. Each row's colors are one int's bits, so a
    column costs a few integer operations per entry (about 0.1 s for 10^5 columns of 6
    entries); the colors are those of :func:`greedy` on the intersection graph.

    >>> import scipy.sparse as sp
    >>> greedy_columns(sp.csr_matrix(np.array([[1, 1, 0], [0, 1, 1]])), [0, 1, 2]).tolist()
    [0, 1, 0]
    """
    order = np.asarray(order, dtype=np.int64)
    by_column = sp.csc_matrix(pattern)[:, order]
    indptr = by_column.indptr.tolist()
    indices = by_column.indices.tolist()
    held = [0] * pattern.shape[0]   # per row: the bits of the colors its columns have
    found = []
    for a, b in zip(indptr[:-1], indptr[1:]):
        rows = indices[a:b]
        used = 0
        for r in rows:
            used |= held[r]
        bit = ~used & (used + 1)   # the lowest color not used
        for r in rows:
            held[r] |= bit
        found.append(bit.bit_length() - 1)
    colors = np.empty(len(order), dtype=np.int64)
    colors[order] = found
    return colors


def smallest_last_order(graph) -> np.ndarray:
    """The smallest-last order of ``graph`` (a symmetric CSR adjacency matrix; Matula and
    Beck 1983): repeatedly remove a vertex of least degree in what remains; visit them in
    the reverse order of removal. Buckets of vertices by degree: O(n + edges)."""
    indptr = graph.indptr.tolist()
    indices = graph.indices.tolist()
    n = graph.shape[0]
    degree = [indptr[v + 1] - indptr[v] for v in range(n)]
    buckets: list[dict] = [{} for _ in range(max(degree, default=0) + 1)]
    for v in range(n):
        buckets[degree[v]][v] = None   # dicts: insertion-ordered, so deterministic
    removed = [False] * n
    removal = []
    d = 0
    for _ in range(n):
        while not buckets[d]:
            d += 1
        v = next(iter(buckets[d]))
        del buckets[d][v]
        removed[v] = True
        removal.append(v)
        for u in indices[indptr[v]:indptr[v + 1]]:
            if not removed[u]:
                del buckets[degree[u]][u]
                degree[u] -= 1
                buckets[degree[u]][u] = None
        d = max(d - 1, 0)
    return np.asarray(removal[::-1], dtype=np.int64)


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
    """networkx's ``greedy_color`` of ``graph`` (a CSR adjacency matrix, or the
    :func:`networkx_graph` of one) with ``strategy``."""
    g = graph if isinstance(graph, nx.Graph) else networkx_graph(graph)
    found = nx.greedy_color(g, strategy=strategy)
    return np.asarray([found[v] for v in range(g.number_of_nodes())], dtype=np.int64)


def networkx_graph(graph) -> nx.Graph:
    """``graph`` (a symmetric CSR adjacency matrix) as a networkx graph (built once for
    all of networkx's strategies: building it costs more than most of them)."""
    g = nx.Graph()
    g.add_nodes_from(range(graph.shape[0]))
    coo = sp.triu(graph, k=1).tocoo()
    g.add_edges_from(zip(coo.row.tolist(), coo.col.tolist()))
    return g


def as_pattern(pattern) -> sp.csr_matrix:
    m = sp.csr_matrix(pattern)
    m = sp.csr_matrix((np.ones(m.nnz, dtype=np.int8), m.indices, m.indptr), shape=m.shape)
    m.sum_duplicates()
    return m


def without_diagonal(m) -> sp.csr_matrix:
    m = sp.csr_matrix(m, copy=True)
    m.setdiag(0)
    m.eliminate_zeros()
    m.sort_indices()
    return m


def _intersection_graph(pattern) -> sp.csr_matrix:
    """Columns adjacent when they share a row (in CSR, symmetric, no diagonal)."""
    p = pattern.astype(bool)
    return without_diagonal((p.T @ p).astype(np.int8))


def intersection_degrees(pattern) -> np.ndarray:
    """The degree of each column in the column-intersection graph (a boolean product)."""
    p = sp.csr_matrix(pattern).astype(bool)
    reach = (p.T.tocsr() @ p).tocsr()
    return np.diff(reach.indptr) - (np.diff(p.tocsc().indptr) > 0)


def _best(pattern, lattice: _Lattice | None = None, distance2: bool = False) -> np.ndarray:
    """The coloring of the column-intersection graph of ``pattern`` with the fewest colors
    among the candidates (the first on ties): greedy in largest-first order (networkx's
    ``largest_first``: by degree, ties by index, so never more colors than it) and in
    natural order, both without the graph; on graphs of up to :data:`SMALLEST_LAST_EDGES`
    and :data:`DSATUR_EDGES` edges, greedy in smallest-last order and our DSATUR; on small
    graphs, networkx's strategies (``distance2``: on the distance-2 graph too); a valid
    lattice coloring with fewer colors than the greedy ones (the lattice's ``lower``
    colors were tried before). Linear in the entries for bounded degree."""
    n = pattern.shape[1]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    degree = intersection_degrees(pattern)
    edges = int(degree.sum()) // 2
    largest_first = np.argsort(-degree, kind="stable")
    natural = np.arange(n)
    candidates = [greedy_columns(pattern, largest_first)]
    # on a regular graph (a periodic stencil: every column of one degree) largest-first is
    # the natural order: its coloring again would double the time (0.1 s at n = 131,072)
    if not np.array_equal(largest_first, natural):
        candidates.append(greedy_columns(pattern, natural))
    # the slower orders where the order matters: the two greedy orders disagree (random
    # and irregular patterns), or the graph is small; on stencils both greedy orders
    # agree and smallest-last and DSATUR lose to them (periodic Brusselator 2,048: 8
    # colors against 12 and 11, and 20 of the first call's 45 ms)
    order_matters = candidates[0].max() != candidates[-1].max() or edges <= NETWORKX_EDGES
    if order_matters and edges <= max(SMALLEST_LAST_EDGES, DSATUR_EDGES):
        graph = _intersection_graph(pattern)
        if edges <= SMALLEST_LAST_EDGES:
            candidates.append(greedy(graph, smallest_last_order(graph)))
        if edges <= DSATUR_EDGES:
            candidates.append(dsatur(graph))
        if edges <= NETWORKX_EDGES:
            graphs = [networkx_graph(g) for g in
                      [graph] + ([distance2_graph(pattern)] if distance2 else [])]
            candidates += [networkx_coloring(g, s) for g in graphs for s in NETWORKX_STRATEGIES
                           if s != "DSATUR" or n <= NETWORKX_DSATUR_VERTICES]
    if lattice is not None:
        fewest = min(int(c.max()) + 1 for c in candidates)
        found = lattice.fewest(fewest - 1, least=lattice.lower + 1)
        if found is not None:
            candidates.append(found)
    return min(candidates, key=lambda c: int(c.max()) + 1)
