"""What one trace gives a sparse transform's compressed program
(:mod:`dualgpu.api.sparse_derivatives`): the pattern, the colors, the seeds, the index map
of the compressed products into the CSR values, and the blocks of the result when several
arrays are differentiated.

The matrix is over the differentiated leaves flattened and stacked in leaf order (columns;
a Hessian's rows too), so one coloring serves every block. A result of several leaves is
split into CSR blocks by precomputed gathers, as JAX's ``jacobian`` of a tuple ``argnums``
gives one block per argument.
"""
from __future__ import annotations

import copy
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..coloring import Decompression, bidirectional_index, decompress
from ..core.trace import Tracer
from ..frontend.scipy.sparse import Pattern, SparseValue


class Plan:
    """The pattern, colors, seeds and index map of one trace (host arrays; device copies on
    demand). A plan is the ``trees`` of one entry of the program cache, with the program
    built from the same trace: it is never paired with another trace's program.

    ``seed_shapes``/``seed_dtypes``: one per seeded leaf (the differentiated leaves; the
    output for ``"rev"``); ``row_sizes``/``col_sizes``: the entries of each block row and
    column of the result (one block: the whole matrix)."""

    def __init__(self, pattern: sp.csr_matrix, colors: np.ndarray, mode: str,
                 seed_shapes: list, seed_dtypes: list, dtype, decompression=None,
                 row_sizes: list | None = None, col_sizes: list | None = None):
        self.pattern = pattern
        self.colors = colors
        self.mode = mode
        self.seed_shapes = [tuple(s) for s in seed_shapes]
        self.seed_dtypes = [np.dtype(d) for d in seed_dtypes]
        self.dtype = np.dtype(dtype)            # the result's
        self.row_sizes = row_sizes or [pattern.shape[0]]
        self.col_sizes = col_sizes or [pattern.shape[1]]
        self.n_colors = int(colors.max()) + 1 if len(colors) else 0
        self.per_color = False   # the program is one product, run once per color (NumPy)
        self.guards: Any = None  # the constant arrays whose values the pattern was read from
        rows = np.repeat(np.arange(pattern.shape[0], dtype=np.int64), np.diff(pattern.indptr))
        cols = pattern.indices.astype(np.int64)
        if mode == "rev":   # product k holds row-colored rows: entry (i, j) at (colors[i], j)
            self.index = colors[rows] * pattern.shape[1] + cols
        else:               # product k holds column-colored columns: (i, j) at (colors[j], i)
            self.index = colors[cols] * pattern.shape[0] + rows
        # a Hessian's: direct (an index map, entries read from a column's or a row's
        # product) or substitution (dualgpu.coloring.decompress)
        self.substitution = None
        if decompression is not None and decompression.nodes is None:
            self.index = decompression.index
        elif decompression is not None:
            self.substitution = decompression
        self._on_device: dict = {}

    @property
    def n_blocks(self) -> int:
        return len(self.row_sizes) * len(self.col_sizes)

    def seeds(self, backend) -> list:
        """Per seeded leaf, one seed per color ``(n_colors, *shape)``: the sum of its unit
        vectors, split over the leaves (made once per library)."""
        key = ("seeds", backend.name)
        if key not in self._on_device:
            sizes = [int(np.prod(s, dtype=np.int64)) for s in self.seed_shapes]
            seeds = np.zeros((self.n_colors, sum(sizes)), dtype=np.float64)
            seeded = self.colors >= 0   # -1: in no seed (a bicoloring's)
            seeds[self.colors[seeded], np.arange(sum(sizes))[seeded]] = 1
            parts = np.split(seeds, np.cumsum(sizes)[:-1], axis=1)
            self._on_device[key] = [
                backend.xp.asarray(p.astype(dtype).reshape((self.n_colors,) + shape))
                for p, shape, dtype in zip(parts, self.seed_shapes, self.seed_dtypes)]
        return self._on_device[key]

    def index_arrays(self, backend) -> tuple:
        """The index map and the CSR structure on ``backend``'s device (made once; int32
        where every index fits, as cupyx's CSR wants)."""
        key = backend.name
        if key not in self._on_device:
            xp = backend.xp
            index_type = self._index_type()
            self._on_device[key] = (xp.asarray(self.index.astype(index_type)),
                                    xp.asarray(self.pattern.indices.astype(index_type)),
                                    xp.asarray(self.pattern.indptr.astype(index_type)))
        return self._on_device[key]

    def _index_type(self):
        reach = max(self.pattern.nnz, *self.pattern.shape,
                    self.n_colors * max(self.pattern.shape))
        return np.int32 if reach < 2 ** 31 else np.int64

    def block_arrays(self, backend) -> list:
        """Per block, row-major: the places of its entries in the CSR values and its own
        CSR structure (``indices``, ``indptr``, shape), on ``backend``'s device."""
        key = ("blocks", backend.name)
        if key not in self._on_device:
            xp = backend.xp
            index_type = self._index_type()
            p = self.pattern
            rows = np.repeat(np.arange(p.shape[0], dtype=np.int64), np.diff(p.indptr))
            row_of = np.repeat(np.arange(len(self.row_sizes)), self.row_sizes)
            col_of = np.repeat(np.arange(len(self.col_sizes)), self.col_sizes)
            row_start = np.cumsum([0] + self.row_sizes)
            col_start = np.cumsum([0] + self.col_sizes)
            block = row_of[rows] * len(self.col_sizes) + col_of[p.indices]
            blocks = []
            for r, m in enumerate(self.row_sizes):
                for c, n in enumerate(self.col_sizes):
                    places = np.flatnonzero(block == r * len(self.col_sizes) + c)
                    counts = np.bincount(rows[places] - row_start[r], minlength=m)
                    indptr = np.concatenate([[0], np.cumsum(counts)])
                    blocks.append((xp.asarray(places.astype(index_type)),
                                   xp.asarray((p.indices[places] - col_start[c])
                                              .astype(index_type)),
                                   xp.asarray(indptr.astype(index_type)), (m, n)))
            self._on_device[key] = blocks
        return self._on_device[key]

    def substitution_arrays(self, backend):
        """The arrays of the substitution (:class:`~dualgpu.coloring.Decompression`) on
        ``backend``'s device (made once)."""
        key = ("substitution", backend.name)
        if key not in self._on_device:
            arrays = {name: backend.xp.asarray(a)
                      for name, a in self.substitution.arrays().items()}
            self._on_device[key] = type(self.substitution)(**arrays)
        return self._on_device[key]

    def decompress(self, products, backend):
        """The CSR values from the products ``(n_colors, size)``."""
        flat = products.reshape(-1)
        if self.substitution is not None:
            return decompress(flat, self.substitution_arrays(backend))
        return flat[self.index_arrays(backend)[0]]

    def places_per_color(self) -> list:
        """Per color ``k``: the places in the CSR values of its entries and their positions
        in product ``k``."""
        if "per color" not in self._on_device:
            size = self.pattern.shape[0]
            order = np.argsort(self.index // size, kind="stable")
            bounds = np.searchsorted(self.index[order] // size, np.arange(self.n_colors + 1))
            self._on_device["per color"] = [
                (order[a:b], self.index[order[a:b]] - k * size)
                for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]))]
        return self._on_device["per color"]

    def csr(self, backend, values, indices, indptr, shape=None, block: int = 0):
        """The CSR matrix of ``values`` on this pattern (or a block of it: ``shape``),
        holding the arrays given (each result owns its index arrays: a caller may sort or
        edit them in place). The constructor of SciPy's and cupyx's CSR checks its arrays
        (cupyx with reductions on the device, ~0.1 ms a call); the structure is checked
        once, by the matrix made on a first call, and every later result is a shallow copy
        of it with its own arrays (``data``, ``indices`` and ``indptr`` are attributes both
        libraries let a caller set)."""
        shape = self.pattern.shape if shape is None else shape
        key = ("csr", backend.name, np.dtype(values.dtype).str, block)
        template = self._on_device.get(key)
        if template is None:
            template = self._on_device[key] = backend.sparse.csr_matrix(
                (values, indices.copy(), indptr.copy()), shape=shape)
            template.data = values[:0]   # the template keeps no result alive
        out = copy.copy(template)
        out.data, out.indices, out.indptr = values, indices, indptr
        return out

    def results(self, backend, values, indices=None, indptr=None) -> list:
        """The CSR blocks, row-major, of the CSR values ``values`` (traced values inside a
        trace: :class:`SparseValue` on the concrete pattern)."""
        traced = isinstance(values, Tracer)
        if self.n_blocks == 1:
            if traced or indices is None:
                _, indices, indptr = self.index_arrays(backend)
                if traced:
                    return [SparseValue(values, Pattern("csr", self.pattern.shape, indices,
                                                        indptr))]
                indices, indptr = indices.copy(), indptr.copy()
            return [self.csr(backend, values, indices, indptr)]
        out = []
        for block, (places, b_indices, b_indptr, shape) in enumerate(self.block_arrays(backend)):
            if traced:
                out.append(SparseValue(values[places], Pattern("csr", shape, b_indices,
                                                               b_indptr)))
            else:
                out.append(self.csr(backend, values[places], b_indices.copy(),
                                    b_indptr.copy(), shape, block))
        return out


class BidirectionalPlan(Plan):
    """``mode="bidirectional"``: forward products for the column colors and reverse products
    for the row colors (:func:`~dualgpu.coloring.bicoloring`), each entry gathered from
    the flat ``[forward..., reverse...]`` products."""

    def __init__(self, pattern, column_colors, row_colors, xs: list, out, col_sizes=None):
        index = bidirectional_index(pattern, column_colors, row_colors)
        shapes, dtypes = [x.shape for x in xs], [x.dtype for x in xs]
        dtype = np.result_type(*dtypes)
        super().__init__(pattern, column_colors, "bidirectional", shapes, dtypes, dtype,
                         Decompression(index), col_sizes=col_sizes)
        self.row_colors = row_colors
        self.forward = Plan(pattern, column_colors, "fwd", shapes, dtypes, dtype)
        self.reverse = Plan(pattern, row_colors, "rev", [out.shape], [out.dtype], dtype)
        self.n_colors = self.forward.n_colors + self.reverse.n_colors


class PerColor:
    """The NumPy Hessian's program: its one HVP run once per color, each product read into
    the CSR values as it comes (on the host the batched program costs 2-4 HVPs per color at
    10^6 variables: wider temporaries, no launches to save). Reads as the
    :class:`~dualgpu.runtime.executor.Executable` it wraps."""

    def __init__(self, exe, plan: Plan):
        self.exe = exe
        self.plan = plan

    def _product(self, inputs, seeds, k):
        outs = self.exe(*inputs, *(s[k] for s in seeds))
        return outs[0].reshape(-1) if len(outs) == 1 else \
            np.concatenate([o.reshape(-1) for o in outs])

    def __call__(self, *inputs) -> list:
        plan = self.plan
        seeds = plan.seeds(self.exe.backend)
        if plan.substitution is not None:   # every product first, then substitution
            products = np.stack([self._product(inputs, seeds, k)
                                 for k in range(plan.n_colors)])
            return [plan.decompress(products, self.exe.backend).astype(plan.dtype, copy=False)]
        values = np.empty(plan.pattern.nnz, dtype=plan.dtype)
        for k, (places, rows) in enumerate(plan.places_per_color()):
            values[places] = self._product(inputs, seeds, k)[rows]
        return [values]

    def __getattr__(self, name):
        return getattr(self.exe, name)
