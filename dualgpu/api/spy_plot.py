"""Pictures of sparsity patterns: :func:`spy` draws a pattern (a SciPy sparse matrix, or
dense), each entry in the color of its group when a coloring is given (matplotlib, imported
only when a picture is asked for).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import DualgpuError, InvalidArgumentError

__all__ = ["PlottingUnavailableError", "spy"]

SPY_MARKERS = 100_000   # patterns with more entries are drawn as an image of at most
SPY_PIXELS = 1_000      # this many pixels a side (each pixel: the largest color in it)


class PlottingUnavailableError(DualgpuError, ImportError):
    """A picture was asked for and matplotlib is not installed."""


def spy(pattern, coloring=None, ax=None, rows: bool = False, markersize: float | None = None):
    """Draw the sparsity ``pattern`` (any matrix: ``scipy.sparse``, ``cupyx.scipy.sparse``
    or dense; its nonzeros) as a spy plot with matplotlib, each entry in the color of its
    column (``coloring``, one int per column; per row with ``rows=True``), and return the
    axes. Entries of one color come from one product. Large patterns (more than
    :data:`SPY_MARKERS` entries) are drawn as an image of at most :data:`SPY_PIXELS` pixels
    a side. ``.spy(*args)`` on ``dg.hessian_sparsity(f)``, ``dg.sparse_hessian(f)`` and the
    Jacobian transforms draws their pattern and coloring.

    Example (needs matplotlib)::

        >>> import matplotlib; matplotlib.use("Agg")       # doctest: +SKIP
        >>> f = lambda x: np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
        >>> ax = dg.sparse_hessian(f).spy(np.zeros(12))  # doctest: +SKIP
        >>> ax.figure.savefig("rosenbrock_hessian.png")  # doctest: +SKIP
    """
    if hasattr(pattern, "get"):
        pattern = pattern.get()
    pattern = sp.coo_matrix(pattern)
    pattern.sum_duplicates()
    pattern.eliminate_zeros()
    m, n = pattern.shape
    if coloring is not None:
        coloring = np.asarray(coloring.get() if hasattr(coloring, "get") else coloring)
        along = m if rows else n
        if coloring.ndim != 1 or len(coloring) != along or coloring.dtype.kind not in "iu":
            raise InvalidArgumentError(
                f"spy: coloring must hold one int per {'row' if rows else 'column'} of the "
                f"pattern ({along}), got {coloring.dtype} of shape {coloring.shape}; pass "
                "transform.coloring(*args)" + (" and rows=True for mode='rev'" if not rows
                                              else ""))
        entry_colors = coloring[pattern.row if rows else pattern.col]
        n_colors = int(coloring.max(initial=-1)) + 1
    else:
        entry_colors = np.zeros(pattern.nnz, dtype=np.int64)
        n_colors = 1
    try:
        import matplotlib.pyplot as plt
        from matplotlib.colors import ListedColormap
    except ImportError:
        raise PlottingUnavailableError(
            "spy: drawing a sparsity pattern needs matplotlib, which is not installed "
            "(pip install matplotlib, or the checkout's extra: pip install '.[plot]'); the "
            "pattern itself is a scipy.sparse matrix: pattern.nonzero() gives its entries"
        ) from None
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 5))
    palette = plt.get_cmap("tab10" if n_colors <= 10 else "tab20")
    cmap = ListedColormap([palette(k % palette.N) for k in range(max(n_colors, 1))])
    if pattern.nnz <= SPY_MARKERS:
        cell = 300 / max(m, n)   # points per row or column of a ~5-inch plot
        size = markersize if markersize is not None else min(60.0, max(0.5, cell ** 2))
        ax.scatter(pattern.col, pattern.row, c=entry_colors, cmap=cmap, vmin=-0.5,
                   vmax=max(n_colors, 1) - 0.5, s=size, marker="s", linewidths=0)
        ax.set_xlim(-0.5, n - 0.5)
        ax.set_ylim(m - 0.5, -0.5)
    else:
        high, wide = min(m, SPY_PIXELS), min(n, SPY_PIXELS)
        pixel = (pattern.row.astype(np.int64) * high // m) * wide \
            + pattern.col.astype(np.int64) * wide // n
        image = np.full(high * wide, -1, dtype=np.int64)
        np.maximum.at(image, pixel, entry_colors)
        shown = np.ma.masked_less(image.reshape(high, wide), 0)
        ax.imshow(shown, cmap=cmap, vmin=-0.5, vmax=max(n_colors, 1) - 0.5,
                  extent=(-0.5, n - 0.5, m - 0.5, -0.5), interpolation="nearest")
    ax.set_aspect("equal" if 0.05 < m / max(n, 1) < 20 else "auto")
    colors = f", {n_colors} colors" if coloring is not None else ""
    ax.set_title(f"{m} x {n}, {pattern.nnz} nonzeros{colors}")
    return ax
