"""Star and acyclic colorings of symmetric patterns (Hessians) and their decompression
(Gebremedhin, Manne and Pothen, SIAM Review 2005, sections 4-6; Gebremedhin, Tarafdar,
Manne and Pothen, SIAM J. Sci. Comput. 2007).

Every color is one HVP: the products are ``B = H S``, ``S`` the columns' color indicators,
laid out as ``(n_colors, n)`` (product ``k`` is ``H @ seed_k``).

* A **distance-2** coloring (:func:`~dualgpu.coloring.symmetric_coloring`): columns of one
  color share no row, every entry ``H[i, j]`` is ``B[i, color(j)]``.
* A **star** coloring: adjacent columns differ and every path on four vertices uses at least
  three colors (each two-colored subgraph is a union of stars). ``H[i, j]`` is
  ``B[i, color(j)]`` when ``j`` is the only column of its color in row ``i``, else
  ``B[j, color(i)]`` (symmetry): still read directly, with fewer colors.
* An **acyclic** coloring: adjacent columns differ and every cycle uses at least three colors
  (each two-colored subgraph is a forest). The entries are recovered by **substitution**
  along the trees: ``B[u, b]`` is the sum of the tree edges at ``u``, so the edge from ``u``
  to its parent is the alternating sum of ``B`` over the subtree of ``u``; laid out in DFS
  preorder, each subtree is a contiguous range, and every edge is a difference of one
  prefix sum (:func:`decompress`: gathers and one ``cumsum``, on any array library).

Every distance-2 coloring is a star coloring and every star coloring an acyclic one, so
:func:`star_coloring` and :func:`acyclic_coloring` keep the best of the weaker colorings as
candidates: never more colors than the distance-2 coloring.

>>> import scipy.sparse as sp
>>> arrow = sp.csr_matrix(np.eye(5) + np.eye(5)[0] + np.eye(5)[:, [0]])  # one hub
>>> int(symmetric_coloring(arrow).max()) + 1, int(star_coloring(arrow).max()) + 1
(5, 2)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from ..errors import InvalidArgumentError
from .distance import as_pattern, symmetric_coloring, without_diagonal

# the largest patterns (entries / 2, about the edges) whose "auto" coloring also tries greedy
# star coloring (Python, O(edges x degree): about 0.25 s at 10^5 edges of degree 4)
STAR_AUTO_EDGES = 100_000
METHODS = ("auto", "distance2", "star", "acyclic")


def hessian_coloring(pattern, method: str = "auto") -> np.ndarray:
    """A color per column of the symmetric ``pattern`` for ``method``: ``"distance2"``
    (:func:`~dualgpu.coloring.symmetric_coloring`), ``"star"`` (:func:`star_coloring`),
    ``"acyclic"`` (:func:`acyclic_coloring`, decompressed by substitution) or ``"auto"``
    (direct decompression: distance-2, and star on patterns of up to twice
    :data:`STAR_AUTO_EDGES` entries)."""
    pattern = _square(pattern, "hessian_coloring")
    if method == "distance2":
        return symmetric_coloring(pattern)
    if method == "star":
        return star_coloring(pattern)
    if method == "acyclic":
        return acyclic_coloring(pattern)
    if method == "auto":
        if pattern.nnz // 2 <= STAR_AUTO_EDGES:
            return star_coloring(pattern)
        return symmetric_coloring(pattern)
    raise InvalidArgumentError(f"hessian coloring: method must be one of "
                               f"{', '.join(map(repr, METHODS))}, got {method!r}")


def star_coloring(pattern) -> np.ndarray:
    """A star coloring of the symmetric ``pattern``'s adjacency graph: the best of greedy
    star coloring in largest-first and natural order and of the distance-2 coloring.

    >>> import scipy.sparse as sp
    >>> path = sp.diags([1, 1, 1], [-1, 0, 1], shape=(6, 6), format="csr")
    >>> star_coloring(path).tolist()
    [0, 1, 2, 0, 1, 2]
    """
    pattern = _square(pattern, "star_coloring")
    graph = without_diagonal(pattern)
    candidates = [symmetric_coloring(pattern)]
    candidates += [greedy_star(graph, order) for order in _orders(graph)]
    return min(candidates, key=_count)


def acyclic_coloring(pattern) -> np.ndarray:
    """An acyclic coloring of the symmetric ``pattern``'s adjacency graph (for
    substitution): the best of greedy acyclic coloring in largest-first and natural order
    and of :func:`star_coloring`. Where the pattern's diagonal has zeros, the best may be
    the distance-2 coloring, whose adjacent columns can share a color: every entry of it
    is then recovered directly (:func:`symmetric_decompression`), no substitution needed.

    >>> import scipy.sparse as sp
    >>> path = sp.diags([1, 1, 1], [-1, 0, 1], shape=(6, 6), format="csr")
    >>> acyclic_coloring(path).tolist()
    [1, 0, 1, 0, 1, 0]
    """
    pattern = _square(pattern, "acyclic_coloring")
    graph = without_diagonal(pattern)
    candidates = [greedy_acyclic(graph, order) for order in _orders(graph)]
    candidates.append(star_coloring(pattern))
    return min(candidates, key=_count)


def greedy_star(graph, order) -> np.ndarray:
    """Greedy star coloring of ``graph`` (symmetric CSR adjacency, no diagonal) visiting
    vertices in ``order``. A vertex ``v`` may not take a color that would make a path on
    four vertices two-colored: the colors of its neighbours; for a neighbour ``w`` and a
    neighbour ``x`` of ``w`` that has another neighbour of ``w``'s color, ``x``'s color
    (``v-w-x-y``); and when two neighbours share a color, the colors of their other
    neighbours (``w-v-x-y``). Each vertex keeps the count of its colored neighbours per
    color."""
    indptr = graph.indptr.tolist()
    indices = graph.indices.tolist()
    n = graph.shape[0]
    colors = [-1] * n
    counts: list[dict] = [{} for _ in range(n)]   # per vertex: color -> colored neighbours
    for v in np.asarray(order).tolist():
        neighbours = [w for w in indices[indptr[v]:indptr[v + 1]] if colors[w] >= 0]
        forbidden = {colors[w] for w in neighbours}
        mine = counts[v]
        for w in neighbours:
            cw = colors[w]
            shared = mine[cw] >= 2
            for x in indices[indptr[w]:indptr[w + 1]]:
                cx = colors[x]
                if cx < 0 or x == v:
                    continue
                if shared or counts[x].get(cw, 0) >= 2:
                    forbidden.add(cx)
        c = 0
        while c in forbidden:
            c += 1
        colors[v] = c
        for w in indices[indptr[v]:indptr[v + 1]]:
            counts[w][c] = counts[w].get(c, 0) + 1
    return np.asarray(colors, dtype=np.int64)


def greedy_acyclic(graph, order) -> np.ndarray:
    """Greedy acyclic coloring of ``graph`` (symmetric CSR adjacency, no diagonal) visiting
    vertices in ``order``. The two-colored forests are kept in one union-find over the
    nodes ``(u, b)``: vertex ``u`` in the subgraph of its color and color ``b``. ``v`` may
    not take a color of a neighbour, nor a color ``c`` for which two neighbours of one
    color ``a`` are already joined in the ``{a, c}`` forest (a two-colored cycle)."""
    indptr = graph.indptr.tolist()
    indices = graph.indices.tolist()
    n = graph.shape[0]
    colors = [-1] * n
    parent: dict = {}

    def root(key):
        path = []
        while key in parent:
            path.append(key)
            key = parent[key]
        for k in path:
            parent[k] = key
        return key

    for v in np.asarray(order).tolist():
        neighbours = [w for w in indices[indptr[v]:indptr[v + 1]] if colors[w] >= 0]
        forbidden = {colors[w] for w in neighbours}
        by_color: dict = {}
        for w in neighbours:
            by_color.setdefault(colors[w], []).append(w)
        groups = [g for g in by_color.values() if len(g) > 1]
        c = 0
        while True:
            while c in forbidden:
                c += 1
            if all(len({root(c * n + w) for w in g}) == len(g) for g in groups):
                break
            c += 1
        colors[v] = c
        for w in neighbours:
            a, b = root(colors[w] * n + v), root(c * n + w)
            if a != b:
                parent[a] = b
    return np.asarray(colors, dtype=np.int64)


def is_star_coloring(pattern, colors) -> bool:
    """Whether ``colors`` is a star coloring of the symmetric ``pattern``: every entry can
    be read directly (from its column's product or, by symmetry, its row's)."""
    try:
        symmetric_decompression(pattern, colors, "star")
    except InvalidArgumentError:
        return False
    return True


def is_acyclic_coloring(pattern, colors) -> bool:
    """Whether ``colors`` is an acyclic coloring of the symmetric ``pattern``."""
    try:
        symmetric_decompression(pattern, colors, "acyclic")
    except InvalidArgumentError:
        return False
    return True


@dataclass
class Decompression:
    """How the CSR values of a symmetric pattern come from the flat products
    ``B.T.reshape(-1)`` (entry ``color * n + row``). Direct (``nodes is None``): the values
    are ``flat[index]``. Substitution: ``index`` gathers the entries read directly (the
    diagonal), ``nodes``/``signs`` the tree nodes' products in DFS preorder with the sign
    of their depth, ``start``/``end``/``edge_signs`` each tree edge's subtree range, and
    ``order`` puts ``[direct..., edges...]`` into CSR order."""

    index: np.ndarray
    nodes: np.ndarray | None = None
    signs: np.ndarray | None = None
    start: np.ndarray | None = None
    end: np.ndarray | None = None
    edge_signs: np.ndarray | None = None
    order: np.ndarray | None = None

    def arrays(self) -> dict:
        """The index arrays by name (those that are set)."""
        return {k: v for k, v in vars(self).items() if v is not None}


def decompress(flat, d) -> object:
    """The CSR values from the flat products ``flat`` (``n_colors * n``) and the arrays of
    :class:`Decompression` ``d`` (any object with its attributes, on the products' device:
    NumPy, CuPy or traced values; only gathers, products, a cumsum and concatenations).

    >>> import scipy.sparse as sp
    >>> h = sp.csr_matrix(np.array([[2., 1, 0], [1, 3, 4], [0, 4, 5]]))
    >>> colors = np.array([0, 1, 0])                       # acyclic: a path in two colors
    >>> seeds = np.eye(2)[colors]                          # n x n_colors
    >>> flat = (h @ seeds).T.reshape(-1)
    >>> decompress(flat, symmetric_decompression(h, colors, "acyclic")).tolist()
    [2.0, 1.0, 1.0, 3.0, 4.0, 4.0, 5.0]
    """
    if d.nodes is None:
        return flat[d.index]
    terms = flat[d.nodes] * d.signs
    prefix = np.concatenate([terms[:1] * 0, np.cumsum(terms)])
    edges = (prefix[d.end] - prefix[d.start]) * d.edge_signs
    return np.concatenate([flat[d.index], edges])[d.order]


def symmetric_decompression(pattern, colors, method: str) -> Decompression:
    """The :class:`Decompression` of the symmetric ``pattern``'s CSR values (sorted
    indices) for ``colors``: direct for ``"distance2"``, ``"star"`` and ``"auto"``,
    substitution for ``"acyclic"``. An :class:`~dualgpu.errors.InvalidArgumentError` when
    the coloring does not allow it."""
    p = _square(pattern, "symmetric_decompression")
    p.sort_indices()
    colors = np.asarray(colors, dtype=np.int64)
    n = p.shape[0]
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(p.indptr))
    cols = p.indices.astype(np.int64)
    k = int(colors.max(initial=-1)) + 1
    place = colors[cols] * n + rows
    per_row_color = np.bincount(place, minlength=n * k)
    own = per_row_color[place] == 1     # j alone of its color in row i
    if own.all():   # every entry from its column's product (for "acyclic" too: the best
        return Decompression(place)     # coloring found may be a distance-2 one, whose
                                        # adjacent columns share colors where a diagonal is 0
    if (p != p.T).nnz:
        raise InvalidArgumentError("symmetric_decompression: the pattern must be "
                                   "structurally symmetric")
    if method == "acyclic":
        return _substitution(p, colors, rows, cols)
    mirror = per_row_color[colors[rows] * n + cols] == 1  # i alone of its color in row j
    if not np.all(own | mirror):
        (bad,) = np.nonzero(~(own | mirror))[:1]
        i, j = int(rows[bad[0]]), int(cols[bad[0]])
        raise InvalidArgumentError(
            f"symmetric_decompression: the coloring is not a star coloring: entry ({i}, {j}) "
            f"shares its color {int(colors[j])} with another column of row {i} and its row's "
            f"color {int(colors[i])} with another column of row {j}")
    return Decompression(np.where(own, place, colors[rows] * n + cols))


def _substitution(p, colors, rows, cols) -> Decompression:
    n = p.shape[0]
    off = rows != cols
    if np.any(colors[rows[off]] == colors[cols[off]]):
        raise InvalidArgumentError("symmetric_decompression: the coloring is not acyclic: "
                                   "two adjacent columns share a color")
    upper = np.nonzero(rows < cols)[0]
    a_keys = colors[cols[upper]] * n + rows[upper]   # node (i, color(j)): B[i, color(j)]
    b_keys = colors[rows[upper]] * n + cols[upper]   # node (j, color(i))
    keys, inverse = np.unique(np.concatenate([a_keys, b_keys]), return_inverse=True)
    a, b = inverse[:len(upper)], inverse[len(upper):]
    count = len(keys)
    forest = sp.coo_matrix((np.ones(len(upper)), (a, b)), shape=(count + 1, count + 1))
    n_trees, labels = csgraph.connected_components(forest, directed=False)
    if len(upper) != count - (n_trees - 1):   # the virtual root is a tree of its own
        raise InvalidArgumentError("symmetric_decompression: the coloring is not acyclic: "
                                   "a two-colored subgraph has a cycle")
    # one DFS from a virtual root joined to one node of each tree: every tree in preorder
    _, first = np.unique(labels[:count], return_index=True)
    joined = sp.coo_matrix((np.ones(len(upper) + len(first)),
                            (np.concatenate([a, np.full(len(first), count)]),
                             np.concatenate([b, first]))), shape=(count + 1, count + 1))
    preorder, parent = csgraph.depth_first_order(joined, count, directed=False,
                                                 return_predecessors=True)
    depth, size = _depths_and_sizes(preorder, parent)
    position = np.empty(count + 1, dtype=np.int64)
    position[preorder] = np.arange(count + 1) - 1   # the virtual root at -1
    nodes = preorder[1:]
    child = np.where(parent[a] == b, a, b)          # each edge: its node farther from a root
    start = position[child]
    signs = np.where(depth[nodes] % 2 == 0, 1, -1).astype(np.int8)
    # per CSR entry: the diagonal read directly, an off-diagonal entry its edge's value
    edge_of = np.full(len(rows), -1, dtype=np.int64)
    edge_of[upper] = np.arange(len(upper))
    mirror = np.lexsort((rows, cols))   # sorted by (column, row): entry k's mirror is mirror[k]
    lower = np.nonzero(rows > cols)[0]
    edge_of[lower] = edge_of[mirror[lower]]
    diagonal = np.nonzero(~off)[0]
    order = np.empty(len(rows), dtype=np.int64)
    order[diagonal] = np.arange(len(diagonal))
    order[edge_of >= 0] = len(diagonal) + edge_of[edge_of >= 0]
    return Decompression(
        index=colors[rows[diagonal]] * n + rows[diagonal],
        nodes=keys[nodes], signs=signs, start=start, end=start + size[child],
        edge_signs=signs[start], order=order)


def _depths_and_sizes(preorder, parent) -> tuple[np.ndarray, np.ndarray]:
    """Depth below the virtual root's children and subtree sizes, from a DFS preorder."""
    order = preorder.tolist()
    up = parent.tolist()
    depth = [0] * len(order)
    for v in order[1:]:
        u = up[v]
        depth[v] = depth[u] + 1 if up[u] >= 0 else 0
    size = [1] * len(order)
    for v in reversed(order[1:]):
        size[up[v]] += size[v]
    return np.asarray(depth, dtype=np.int64), np.asarray(size, dtype=np.int64)


def _orders(graph) -> list[np.ndarray]:
    n = graph.shape[0]
    return [np.argsort(-np.diff(graph.indptr), kind="stable"), np.arange(n)]


def _count(colors) -> int:
    return int(colors.max(initial=-1)) + 1


def _square(pattern, what: str) -> sp.csr_matrix:
    p = as_pattern(pattern)
    if p.shape[0] != p.shape[1]:
        raise InvalidArgumentError(f"{what}: the pattern must be square, got shape {p.shape}")
    return p
