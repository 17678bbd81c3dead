"""Bicoloring of Jacobians (rows and columns, direct decompression; Coleman and Verma 1998,
Gebremedhin, Manne and Pothen 2005 section 5): some entries from forward products ``J V``
(one seed per column color), the others from reverse products ``W^T J`` (one per row
color). A dense row costs every column its own color in forward mode and a dense column
every row in reverse mode; together they cost one product each. An arrowhead (one dense row,
one dense column and the diagonal) takes 3 products, not n.

The heuristic splits the entries: the rows ``R`` denser than a threshold are read from
reverse products (rows of ``R`` colored so that rows of one color share no column), every
other entry from forward products (columns colored on the rows outside ``R``); or, mirrored,
dense columns forward and the rest reverse. It tries the thresholds at the few largest row
and column counts and keeps the split with the fewest products, pure forward and pure
reverse included: never more products than :func:`~dualgpu.coloring.column_coloring` or
:func:`~dualgpu.coloring.row_coloring`.

>>> n = 6
>>> arrow = np.eye(n) + np.eye(n)[0] + np.eye(n)[:, [0]]
>>> columns, rows = bicoloring(arrow)
>>> columns.tolist(), rows.tolist()        # -1: not in any seed
([0, 1, 1, 1, 1, 1], [0, -1, -1, -1, -1, -1])
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidArgumentError
from .distance import as_pattern, column_coloring, row_coloring

# the thresholds tried: rows (columns) with at least this many times the mean count and at
# most this many of the largest distinct counts
DENSE_FACTOR = 2.0
THRESHOLDS = 3


def bicoloring(pattern, columns=None, rows=None) -> tuple[np.ndarray, np.ndarray]:
    """Colors for a bidirectional evaluation of the Jacobian ``pattern`` (m x n): per
    column its forward seed (``-1``: none), per row its reverse seed (``-1``: none); every
    entry is read directly from one product (:func:`bidirectional_index`). ``columns`` and
    ``rows``: the pattern's column and row colorings if already computed."""
    p = as_pattern(pattern)
    m, n = p.shape
    columns = column_coloring(p) if columns is None else columns
    rows = row_coloring(p) if rows is None else rows
    candidates = [(columns, np.full(m, -1, dtype=np.int64)),
                  (np.full(n, -1, dtype=np.int64), rows)]
    for dense in _dense_sets(np.diff(p.indptr)):
        candidates.append(_split(p, dense))
    for dense in _dense_sets(np.diff(p.tocsc().indptr)):
        rows, columns = _split(p.T.tocsr(), dense)   # the mirror: dense columns forward
        candidates.append((columns, rows))
    return min(candidates, key=lambda c: products(*c))


def has_dense_lines(pattern) -> bool:
    """Whether some row or column of ``pattern`` has :data:`DENSE_FACTOR` times the mean
    count of entries: where a bicoloring may take fewer products."""
    p = as_pattern(pattern)
    return bool(_dense_sets(np.diff(p.indptr)) or _dense_sets(np.diff(p.tocsc().indptr)))


def products(column_colors, row_colors) -> int:
    """The number of products a bicoloring takes: forward plus reverse seeds."""
    return int(np.max(column_colors, initial=-1)) + 1 + int(np.max(row_colors, initial=-1)) + 1


def bidirectional_index(pattern, column_colors, row_colors) -> np.ndarray:
    """Where each entry of the CSR ``pattern`` (m x n, its stored order) lies in the flat
    products ``[F.reshape(-1), G.reshape(-1)]``, ``F`` the ``(k_columns, m)`` forward
    products and ``G`` the ``(k_rows, n)`` reverse ones: forward when no other seeded
    column of the entry's column color has an entry in its row, else reverse when no other
    seeded row of its row color has one in its column; an
    :class:`~dualgpu.errors.InvalidArgumentError` when neither holds."""
    p = sp.csr_matrix(pattern)
    m, n = p.shape
    columns = np.asarray(column_colors, dtype=np.int64)
    rows_of = np.asarray(row_colors, dtype=np.int64)
    if columns.shape != (n,) or rows_of.shape != (m,):
        raise InvalidArgumentError(f"bidirectional_index: {n} column colors and {m} row colors "
                                   f"wanted, got {columns.shape} and {rows_of.shape}")
    rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(p.indptr))
    cols = p.indices.astype(np.int64)
    k_col = int(columns.max(initial=-1)) + 1
    k_row = int(rows_of.max(initial=-1)) + 1
    forward = _alone(rows, columns[cols], m, k_col)
    reverse = _alone(cols, rows_of[rows], n, k_row)
    if not np.all(forward | reverse):
        bad = int(np.nonzero(~(forward | reverse))[0][0])
        raise InvalidArgumentError(
            f"bidirectional_index: entry ({rows[bad]}, {cols[bad]}) is read from no product: "
            f"its column's color is unseeded or shared in its row, and its row's in its column")
    return np.where(forward, columns[cols] * m + rows, k_col * m + rows_of[rows] * n + cols)


def _alone(lines, colors, count: int, k: int) -> np.ndarray:
    """Per entry: whether its seed color (``-1``: none) is held by no other entry of its
    line (row for forward, column for reverse)."""
    seeded = colors >= 0
    if k == 0:
        return seeded
    held = np.bincount(lines[seeded] * k + colors[seeded], minlength=count * k)
    return seeded & (held[lines * k + np.maximum(colors, 0)] == 1)


def _dense_sets(counts) -> list[np.ndarray]:
    """The sets of lines (boolean masks) at least as dense as each threshold tried."""
    if len(counts) == 0:
        return []
    levels = np.unique(counts[counts >= DENSE_FACTOR * max(counts.mean(), 1)])[::-1]
    return [counts >= level for level in levels[:THRESHOLDS]]


def _split(p, dense) -> tuple[np.ndarray, np.ndarray]:
    """Dense rows reverse, every other entry forward: (column colors, row colors)."""
    m, n = p.shape
    rest = p[~dense]
    columns = column_coloring(rest)
    columns[np.diff(rest.tocsc().indptr) == 0] = -1   # no entry read forward: unseeded
    rows = np.full(m, -1, dtype=np.int64)
    rows[dense] = row_coloring(p[dense])
    return _compact(columns), _compact(rows)


def _compact(colors) -> np.ndarray:
    """The colors renumbered 0, 1, ... in order (``-1`` kept)."""
    used, inverse = np.unique(colors, return_inverse=True)
    return (inverse - int(used[0] < 0) if len(used) else inverse).astype(np.int64)
