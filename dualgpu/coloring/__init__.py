"""Graph coloring for compressed sparse derivatives (Curtis-Powell-Reid; Gebremedhin,
Manne and Pothen 2005).

Columns of a Jacobian that share no row can be computed with one JVP: the seed is the sum of
their unit vectors, and each entry of the compressed product belongs to exactly one of them.
:func:`column_coloring` colors the **column-intersection graph** (columns adjacent when they
share a row), :func:`row_coloring` the rows for VJPs, and :func:`symmetric_coloring` the
columns of a symmetric Hessian so that every entry is recovered directly from one HVP
(structurally orthogonal columns; every distance-2 coloring of the adjacency graph is one).

Greedy coloring in a good order is the standard heuristic. The result is the best of greedy
in largest-first order (networkx's ``largest_first``, so never more colors than it) and in
natural order, both linear in the entries and without building the graph (each row's colors
held as the bits of one int); on graphs of up to a few 10^5 edges also greedy in smallest-last
order and our DSATUR (with a heap: networkx's is quadratic), and on small graphs networkx's
``greedy_color`` strategies (for Hessians on the distance-2 graph too). Everything is
deterministic.

Banded and stencil patterns (a chain, a 2-D grid in row-major order) are first tried with
**lattice colorings**, ``(j + s * (j // w)) mod k`` for the pattern's own offsets ``w``,
checked in NumPy in milliseconds: when one uses as many colors as the densest row has
entries, no coloring can use fewer, and the greedy passes are skipped (3 colors for chained
Rosenbrock, 5 for the 5-point Laplacian, at any size).

Hessians can do with fewer colors (:mod:`~dualgpu.coloring.symmetric`): **star** colorings
read every entry directly from its column's or its row's product, **acyclic** colorings
recover the entries by substitution along two-colored trees. Jacobians with dense rows and
columns take fewer products with a **bicoloring** (:mod:`~dualgpu.coloring.bicoloring`):
forward products for some entries, reverse products for the others.

>>> import scipy.sparse as sp
>>> tridiagonal = sp.diags([1, 1, 1], [-1, 0, 1], shape=(6, 6), format="csr", dtype=bool)
>>> symmetric_coloring(tridiagonal).tolist()
[0, 1, 2, 0, 1, 2]
"""
from ..errors import InvalidArgumentError
from .bicoloring import bicoloring, bidirectional_index, has_dense_lines, products
from .distance import (
    DSATUR_EDGES,
    NETWORKX_EDGES,
    column_coloring,
    distance2_graph,
    dsatur,
    greedy,
    greedy_columns,
    intersection_degrees,
    is_structurally_symmetric,
    is_valid_column_coloring,
    lattice_coloring,
    networkx_coloring,
    row_coloring,
    smallest_last_order,
    symmetric_coloring,
)
from .symmetric import (
    METHODS,
    STAR_AUTO_EDGES,
    Decompression,
    acyclic_coloring,
    decompress,
    greedy_acyclic,
    greedy_star,
    hessian_coloring,
    is_acyclic_coloring,
    is_star_coloring,
    star_coloring,
    symmetric_decompression,
)

__all__ = ["InvalidArgumentError", "bicoloring", "bidirectional_index", "has_dense_lines",
           "products", "DSATUR_EDGES", "NETWORKX_EDGES", "column_coloring", "distance2_graph",
           "dsatur", "greedy", "greedy_columns", "intersection_degrees",
           "is_structurally_symmetric", "is_valid_column_coloring", "lattice_coloring",
           "networkx_coloring", "row_coloring", "smallest_last_order", "symmetric_coloring",
           "METHODS", "STAR_AUTO_EDGES", "Decompression", "acyclic_coloring", "decompress",
           "greedy_acyclic", "greedy_star", "hessian_coloring", "is_acyclic_coloring",
           "is_star_coloring", "star_coloring", "symmetric_decompression"]
