"""Sparse Jacobians and Hessians, detected from the graph and computed compressed.

``dg.jacobian_sparsity(f)(x)`` and ``dg.hessian_sparsity(f)(x)`` read the patterns from the
traced graph (:mod:`dualgpu.transforms.sparsity`: global patterns, valid for every value of
the arguments). ``dg.sparse_jacobian(f)(x)`` and ``dg.sparse_hessian(f)(x)`` color the
pattern (:mod:`dualgpu.coloring`), evaluate one JVP, VJP or HVP per color in one program
(``vmap`` over the seed matrix) and decompress the products into a CSR matrix with a
precomputed index map: ``scipy.sparse`` on NumPy, ``cupyx.scipy.sparse`` on CuPy. The
pattern, the coloring, the index map and the program are built once per signature (shapes
and dtypes of the arguments) and reused. :func:`spy` (and ``.spy(*args)`` on the four
transforms) draws a pattern with its coloring. docs/sparse_ad.md tells the story.
"""
from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from . import api
from .backends import array_backend
from .coloring import column_coloring, row_coloring, symmetric_coloring
from .errors import (
    ArgumentTypeError,
    DualgpuError,
    IntegerInputError,
    InvalidArgumentError,
    NonScalarOutputError,
)
from .guards import Guards, collect_guards
from .transforms.sparsity import hessian_pattern, jacobian_pattern
from .vectorize import jacobian, vmap

__all__ = ["jacobian_sparsity", "hessian_sparsity", "sparse_jacobian", "sparse_hessian"]

MODES = ("fwd", "rev", "auto")
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
            "(pip install matplotlib); the pattern itself is a scipy.sparse matrix: "
            "pattern.nonzero() gives its entries") from None
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
_PLANS_PER_FUNCTION = 8   # signatures whose pattern, coloring and program are kept


class _Plan:
    """What one signature needs: the pattern, the colors, the seeds and the index map of
    the compressed products into the CSR values (host arrays; device copies on demand)."""

    def __init__(self, pattern: sp.csr_matrix, colors: np.ndarray, mode: str):
        self.pattern = pattern
        self.colors = colors
        self.mode = mode
        self.n_colors = int(colors.max()) + 1 if len(colors) else 0
        rows = np.repeat(np.arange(pattern.shape[0], dtype=np.int64), np.diff(pattern.indptr))
        cols = pattern.indices.astype(np.int64)
        if mode == "rev":   # product k holds row-colored rows: entry (i, j) at (colors[i], j)
            self.index = colors[rows] * pattern.shape[1] + cols
        else:               # product k holds column-colored columns: (i, j) at (colors[j], i)
            self.index = colors[cols] * pattern.shape[0] + rows
        self._on_device: dict = {}
        self.out_shape: tuple = ()
        self.guards = Guards()   # what the function read outside its arguments, as traced
        self.programs: dict = {}  # library name -> the compiled compressed program

    def seeds(self, backend, shape: tuple, dtype) -> object:
        """One seed per color, ``(n_colors, *shape)``: the sum of its unit vectors (made
        once per library, shape and dtype)."""
        key = ("seeds", backend.name, tuple(shape), np.dtype(dtype).str)
        if key not in self._on_device:
            size = int(np.prod(shape, dtype=np.int64))
            seeds = np.zeros((self.n_colors, size), dtype=dtype)
            seeds[self.colors, np.arange(size)] = 1
            self._on_device[key] = backend.xp.asarray(
                seeds.reshape((self.n_colors,) + tuple(shape)))
        return self._on_device[key]

    def index_arrays(self, backend) -> tuple:
        """The index map and the CSR structure on ``backend``'s device (made once; int32
        where every index fits, as cupyx's CSR wants)."""
        key = backend.name
        if key not in self._on_device:
            xp = backend.xp
            reach = max(self.pattern.nnz, *self.pattern.shape,
                        self.n_colors * max(self.pattern.shape))
            index_type = np.int32 if reach < 2 ** 31 else np.int64
            self._on_device[key] = (xp.asarray(self.index.astype(index_type)),
                                    xp.asarray(self.pattern.indices.astype(index_type)),
                                    xp.asarray(self.pattern.indptr.astype(index_type)))
        return self._on_device[key]

    def decompress_each(self, product_of_color, dtype) -> sp.csr_matrix:
        """The CSR matrix (NumPy) from ``product_of_color(k)``, called once per color: each
        product is read into the CSR values as it comes, never stacked."""
        if "per color" not in self._on_device:
            size = self.pattern.shape[0]
            order = np.argsort(self.index // size, kind="stable")
            bounds = np.searchsorted(self.index[order] // size, np.arange(self.n_colors + 1))
            self._on_device["per color"] = [
                (order[a:b], self.index[order[a:b]] - k * size)
                for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]))]
        values = np.empty(self.pattern.nnz, dtype=dtype)
        for k, (places, rows) in enumerate(self._on_device["per color"]):
            values[places] = product_of_color(k).reshape(-1)[rows]
        backend = array_backend(values)
        _, indices, indptr = self.index_arrays(backend)
        return self.csr(backend, values, indices.copy(), indptr.copy())

    def csr(self, backend, values, indices, indptr):
        """The CSR matrix of ``values`` on this pattern, holding the arrays given (each
        result owns its index arrays: a caller may sort or edit them in place). The
        constructor of SciPy's and cupyx's CSR checks its arrays (cupyx with reductions
        on the device, ~0.1 ms a call); the structure is checked once, by the matrix made
        on a first call, and every later result is a shallow copy of it with its own
        arrays (``data``, ``indices`` and ``indptr`` are attributes both libraries let a
        caller set)."""
        key = ("csr", backend.name, np.dtype(values.dtype).str)
        template = self._on_device.get(key)
        if template is None:
            template = self._on_device[key] = backend.sparse.csr_matrix(
                (values, indices.copy(), indptr.copy()), shape=self.pattern.shape)
            template.data = values[:0]   # the template keeps no result alive
        out = copy.copy(template)
        out.data, out.indices, out.indptr = values, indices, indptr
        return out


class _Sparse:
    """The shared machinery of the four transforms: argument checks, the trace, and the
    plans per signature."""

    what = "sparse"

    def __init__(self, fn: Callable, argnums, pattern=None, check_pattern: bool = False):
        if not callable(fn):
            raise ArgumentTypeError(f"dg.{self.what} expects a function, got "
                                    f"{type(fn).__name__}")
        if isinstance(argnums, bool) or not isinstance(argnums, int | np.integer):
            raise InvalidArgumentError(
                f"dg.{self.what}: argnums must be one int (the position of the argument to "
                f"differentiate), got {argnums!r}; to differentiate several arguments, "
                "concatenate them into one array")
        self.fn = fn
        self.argnums = int(argnums)
        self.user_pattern = pattern
        self.check_pattern = bool(check_pattern)
        self._plans: OrderedDict = OrderedDict()
        self.__name__ = f"{self.what}_{getattr(fn, '__name__', 'f')}"
        self.__wrapped__ = fn

    # ------------------------------------------------------------------ arguments
    def _split(self, args: tuple):
        k = self.argnums if self.argnums >= 0 else len(args) + self.argnums
        if not 0 <= k < len(args):
            raise InvalidArgumentError(f"dg.{self.what}: argnums={self.argnums} but the "
                                       f"function was called with {len(args)} arguments")
        x = args[k]
        backend = array_backend(x)
        if backend is None:
            x = np.asarray(x)
            backend = array_backend(x)
        if x.dtype.kind in "iub":
            raise IntegerInputError(
                f"dg.{self.what}: argument {k} has dtype {x.dtype}; only floating-point "
                f"arguments are differentiated (pass x.astype(float))")
        if x.dtype.kind != "f":
            raise ArgumentTypeError(
                f"dg.{self.what}: argument {k} has dtype {x.dtype}; sparse derivatives "
                "take real floating-point arguments (split a complex one into real and "
                "imaginary parts)")
        others = args[:k] + args[k + 1:]
        return k, x, others, backend

    def _call_with(self, k: int, others: tuple) -> Callable:
        fn = self.fn
        return lambda y, *rest: fn(*rest[:k], y, *rest[k:])

    def _graph(self, k, x, others):
        graph = api.trace(self._call_with(k, others), x, *others)
        out = graph.outputs[0] if len(graph.outputs) == 1 else None
        if out is None:
            raise ArgumentTypeError(f"dg.{self.what}: the function must return one array, "
                                    f"but it returns {len(graph.outputs)} outputs")
        if out.dtype.kind != "f":
            raise ArgumentTypeError(f"dg.{self.what}: the function returns dtype "
                                    f"{out.dtype}; sparse derivatives take real "
                                    "floating-point outputs")
        return graph

    @staticmethod
    def _key(args: tuple) -> tuple:
        key = []
        for a in args:
            backend = array_backend(a)
            if backend is not None:
                key.append((backend.name, tuple(a.shape), a.dtype.str))
            elif isinstance(a, bool | int | np.integer | np.bool_):
                key.append((type(a), a))   # may be static: it may shape the pattern
            elif isinstance(a, float | complex | np.generic):
                key.append(type(a))   # traced: the pattern holds for every value
            else:
                try:
                    hash(a)
                    key.append(("value", type(a), a))
                except TypeError:
                    key.append(("object", id(a)))
        return tuple(key)

    def _plan(self, args: tuple) -> _Plan:
        key = self._key(args)
        plan = self._plans.get(key)
        if plan is not None and plan.guards.hold():
            self._plans.move_to_end(key)
            return plan
        if plan is not None:
            # a global, closure cell or default the function read has changed: every plan
            # and program bakes in what it read, so all are built again (the compiled
            # programs are dualgpu's functions, whose own guards stop at the user's)
            self._plans.clear()
            self._forget_programs()
        k, x, others, _ = self._split(args)
        before = collect_guards(self.fn)
        graph = self._graph(k, x, others)
        plan = self._build(graph, k, x, others)
        plan.guards = collect_guards(self.fn, before)
        plan.out_shape = tuple(graph.outputs[0].shape)
        # an argument keyed by identity is kept alive with its plan: its id is not reused
        plan.held = [a for a, part in zip(args, key) if isinstance(part, tuple)
                     and part[:1] == ("object",)]
        self._plans[key] = plan
        if len(self._plans) > _PLANS_PER_FUNCTION:
            self._plans.popitem(last=False)
        return plan

    def _forget_programs(self) -> None:
        """Drop the compiled programs that are not a plan's (a transform's own)."""

    def _products(self, g: Callable, x, seeds, mode: str):
        """The compressed products of ``g`` at ``x``, one per seed (traced)."""
        raise NotImplementedError

    def _compressed(self, plan: _Plan, k: int, backend, x) -> Callable:
        """The function compiled for ``plan`` on ``backend``: the compressed products of
        the seeds, the CSR values gathered from them by the index map, and copies of the
        CSR structure (a program's output that is one of its constants is copied). Seeds
        and index arrays are the program's constants, so a cached call is one program run
        on the arguments alone, decompression included."""
        fn, products_of, mode = self.fn, self._products, plan.mode
        seed_shape = plan.out_shape if mode == "rev" else tuple(x.shape)
        seeds = plan.seeds(backend, seed_shape, x.dtype)
        index, indices, indptr = plan.index_arrays(backend)

        def compressed(x, *rest):
            def g(y):
                return fn(*rest[:k], y, *rest[k:])
            products = products_of(g, x, seeds, mode)
            return products.reshape(-1)[index], indices, indptr

        compressed.__name__ = f"compressed_{mode}_{getattr(fn, '__name__', 'f')}"
        return compressed

    def _run(self, plan: _Plan, k: int, x, others: tuple, backend):
        """The CSR derivative by the plan's compiled program (one per library)."""
        program = plan.programs.get(backend.name)
        if program is None:
            program = plan.programs[backend.name] = api.jit(
                self._compressed(plan, k, backend, x))
        return plan.csr(backend, *program(x, *others))

    def _given_pattern(self, shape: tuple) -> sp.csr_matrix:
        p = self.user_pattern
        p = sp.csr_matrix(p.get() if hasattr(p, "get") else p)
        if p.shape != shape:
            raise InvalidArgumentError(f"dg.{self.what}: pattern= has shape {p.shape}, but "
                                       f"the derivative has shape {shape}")
        p = sp.csr_matrix((np.ones(p.nnz, dtype=bool), p.indices, p.indptr), shape=p.shape)
        p.sum_duplicates()
        p.eliminate_zeros()
        return p

    def _check_superset(self, pattern, dense_at, args, k, x):
        """``check_pattern=True``: the dense derivative at the call's point and at a random
        point near it has no nonzero outside ``pattern`` (costs a dense derivative)."""
        rng = np.random.default_rng(0)
        host = np.asarray(array_backend(x).to_host(x))
        noise = rng.standard_normal(host.shape).astype(host.dtype)
        for point in (host, host + 1e-2 * (np.abs(host) + 1) * noise):
            moved = args[:k] + (array_backend(x).to_device(point),) + args[k + 1:]
            dense = np.asarray(array_backend(x).to_host(dense_at(moved)))
            dense = dense.reshape(pattern.shape)
            missed = np.argwhere((np.nan_to_num(dense) != 0) & ~pattern.toarray())
            if len(missed):
                i, j = missed[0]
                raise InvalidArgumentError(
                    f"dg.{self.what}: pattern= misses entry ({i}, {j}) of the derivative "
                    f"(and {len(missed) - 1} more): it is not a superset of the sparsity "
                    "pattern; leave pattern= out to detect it from the graph")

    def coloring(self, *args) -> np.ndarray:
        """The color of each column (of each row for ``mode="rev"``): the entries of one
        color come from one product."""
        return self._plan(args).colors

    def sparsity(self, *args) -> sp.csr_matrix:
        """The pattern the transform uses at this signature (boolean CSR)."""
        return self._plan(args).pattern

    def spy(self, *args, ax=None, markersize: float | None = None):
        """Draw the pattern at this signature with its coloring (:func:`spy`, matplotlib);
        returns the axes."""
        plan = self._plan(args)
        return spy(plan.pattern, plan.colors, ax=ax, rows=plan.mode == "rev",
                   markersize=markersize)


class _Detect:
    """``dg.jacobian_sparsity`` and ``dg.hessian_sparsity``."""

    def __init__(self, fn, argnums, hessian: bool):
        self.transform = (_SparseHessian if hessian else _SparseJacobian)(fn, argnums)
        self.transform.what = "hessian_sparsity" if hessian else "jacobian_sparsity"
        self.hessian = hessian
        self.__wrapped__ = fn

    def __call__(self, *args) -> sp.csr_matrix:
        t = self.transform
        k, x, others, _ = t._split(args)
        graph = t._graph(k, x, others)
        return (hessian_pattern if self.hessian else jacobian_pattern)(graph, [0])

    def spy(self, *args, ax=None, markersize: float | None = None):
        """Draw the pattern with the coloring the sparse transform would use (:func:`spy`:
        the symmetric coloring for a Hessian, columns or rows, whichever are fewer, for a
        Jacobian); returns the axes."""
        return self.transform.spy(*args, ax=ax, markersize=markersize)


class _SparseJacobian(_Sparse):
    what = "sparse_jacobian"

    def __init__(self, fn, argnums=0, mode: str = "auto", pattern=None,
                 check_pattern: bool = False):
        if mode not in MODES:
            raise InvalidArgumentError(f"dg.sparse_jacobian: mode must be one of "
                                       f"{', '.join(map(repr, MODES))}, got {mode!r}")
        super().__init__(fn, argnums, pattern, check_pattern)
        self.mode = mode

    def _build(self, graph, k, x, others) -> _Plan:
        m = int(np.prod(graph.outputs[0].shape, dtype=np.int64))
        n = int(x.size)
        if self.user_pattern is None:
            pattern = jacobian_pattern(graph, [0])
        else:
            pattern = self._given_pattern((m, n))
            if self.check_pattern:
                args = others[:k] + (x,) + others[k:]
                self._check_superset(pattern, lambda a: jacobian(self.fn, argnums=k)(*a),
                                     args, k, x)
        mode = self.mode
        columns = rows = None
        if mode in ("fwd", "auto"):
            columns = column_coloring(pattern)
        if mode in ("rev", "auto"):
            rows = row_coloring(pattern)
        if mode == "auto":
            mode = "fwd" if columns.max(initial=-1) <= rows.max(initial=-1) else "rev"
        return _Plan(pattern, columns if mode == "fwd" else rows, mode)

    def _products(self, g, x, seeds, mode: str):
        if mode == "fwd":
            return vmap(lambda s: api.jvp(g, (x,), (s,))[1])(seeds)
        return vmap(lambda w: api.vjp(g, x)[1](w)[0])(seeds)

    def __call__(self, *args):
        plan = self._plan(args)
        k, x, others, backend = self._split(args)
        m, n = plan.pattern.shape
        if plan.n_colors == 0:
            return backend.sparse.csr_matrix((m, n), dtype=x.dtype)
        return self._run(plan, k, x, others, backend)


class _SparseHessian(_Sparse):
    what = "sparse_hessian"

    def __init__(self, fn, argnums=0, pattern=None, check_pattern: bool = False):
        super().__init__(fn, argnums, pattern, check_pattern)
        self._forget_programs()

    def _forget_programs(self) -> None:
        self._one_hvp_fn = None

    def _graph(self, k, x, others):
        graph = super()._graph(k, x, others)
        size = int(np.prod(graph.outputs[0].shape, dtype=np.int64))
        if size != 1:
            from_shape = tuple(graph.outputs[0].shape)
            raise NonScalarOutputError(
                f"dg.{self.what}: the function must return a scalar, but it returns shape "
                f"{from_shape}; sum it or take the entry you need (for the Hessians of "
                "several outputs, one sparse_hessian per output)")
        return graph

    def _build(self, graph, k, x, others) -> _Plan:
        n = int(x.size)
        if self.user_pattern is None:
            pattern = hessian_pattern(graph, [0])
        else:
            pattern = self._given_pattern((n, n))
            pattern = (pattern + pattern.T).tocsr()   # a Hessian is symmetric
            if self.check_pattern:
                args = others[:k] + (x,) + others[k:]
                self._check_superset(pattern, lambda a: api.hessian(self.fn, argnums=k)(*a),
                                     args, k, x)
        return _Plan(pattern, symmetric_coloring(pattern), "fwd")

    def _products(self, g, x, seeds, mode: str):
        return vmap(api.hvp(g), in_axes=(None, 0))(x, seeds)

    def __call__(self, *args):
        plan = self._plan(args)
        k, x, others, backend = self._split(args)
        n = plan.pattern.shape[0]
        if plan.n_colors == 0:
            return backend.sparse.csr_matrix((n, n), dtype=x.dtype)
        if backend.name == "numpy":
            # on the host one HVP per color beats the batched program (which costs 2-4
            # HVPs per color at 10^6 variables: wider temporaries, no launches to save)
            seeds = plan.seeds(backend, tuple(x.shape), x.dtype)
            hvp_once = self._one_hvp(k)
            return plan.decompress_each(lambda c: hvp_once(x, seeds[c], *others), x.dtype)
        return self._run(plan, k, x, others, backend)

    def _one_hvp(self, k: int):
        if self._one_hvp_fn is None:
            fn = self.fn

            def one_hvp(x, seed, *rest):
                return api.hvp(lambda y: fn(*rest[:k], y, *rest[k:]))(x, seed)

            one_hvp.__name__ = f"hvp_{getattr(fn, '__name__', 'f')}"
            self._one_hvp_fn = api.jit(one_hvp)
        return self._one_hvp_fn


def jacobian_sparsity(fn: Callable, argnums: int = 0) -> Callable:
    """``jacobian_sparsity(f)(*args)``: the boolean pattern of the Jacobian of ``f`` with
    respect to argument ``argnums``, read from the graph (a ``scipy.sparse`` CSR matrix,
    ``f``'s output entries by the argument's entries, both flattened in C order). Valid for
    every value of the arguments.

    Example::

        >>> f = lambda x: x[1:] ** 2 - x[:-1]
        >>> dg.jacobian_sparsity(f)(np.ones(4)).toarray()
        array([[ True,  True, False, False],
               [False,  True,  True, False],
               [False, False,  True,  True]])
    """
    return _Detect(fn, argnums, hessian=False)


def hessian_sparsity(fn: Callable, argnums: int = 0) -> Callable:
    """``hessian_sparsity(f)(*args)``: the boolean, symmetric pattern of the Hessian of the
    scalar ``f`` with respect to argument ``argnums`` (n x n, flattened in C order), read from
    the graph; valid for every value of the arguments.

    Example::

        >>> f = lambda x: np.sum(x[1:] * x[:-1]) + np.sum(x ** 3)
        >>> dg.hessian_sparsity(f)(np.ones(3)).toarray().astype(int)
        array([[1, 1, 0],
               [1, 1, 1],
               [0, 1, 1]])
    """
    return _Detect(fn, argnums, hessian=True)


def sparse_jacobian(fn: Callable, argnums: int = 0, mode: str = "auto", pattern=None,
                    check_pattern: bool = False):
    """``sparse_jacobian(f)(*args)``: the Jacobian of ``f`` with respect to argument
    ``argnums`` as a CSR matrix (``scipy.sparse`` on NumPy, ``cupyx.scipy.sparse`` on CuPy) of
    the argument's dtype, output entries by argument entries (flattened).

    The pattern is detected from the graph (or given as ``pattern=``, a superset of the
    nonzeros; ``check_pattern=True`` checks it against the dense Jacobian at the call's
    point and at a random point near it), colored, and the Jacobian computed with one JVP
    per column color (``mode="fwd"``), one VJP per row color (``"rev"``), or whichever
    needs fewer (``"auto"``), all in one program. Pattern, coloring and program are built
    once per signature; ``.coloring(*args)`` gives the colors, ``.sparsity(*args)`` the
    pattern.

    Example::

        >>> f = lambda x: x[1:] ** 2 - x[:-1]
        >>> jac = dg.sparse_jacobian(f)
        >>> jac(np.arange(4.0)).toarray()
        array([[-1.,  2.,  0.,  0.],
               [ 0., -1.,  4.,  0.],
               [ 0.,  0., -1.,  6.]])
        >>> jac.coloring(np.arange(4.0)).tolist()
        [0, 1, 0, 1]
    """
    return _SparseJacobian(fn, argnums, mode, pattern, check_pattern)


def sparse_hessian(fn: Callable, argnums: int = 0, pattern=None, check_pattern: bool = False):
    """``sparse_hessian(f)(*args)``: the Hessian of the scalar ``f`` with respect to argument
    ``argnums`` as a CSR matrix of the argument's dtype (n x n over its flattened entries).

    The pattern is detected from the graph (or given as ``pattern=``; ``check_pattern=True``
    checks it against the dense Hessian), colored so that each entry is read from one HVP,
    and all colors' HVPs run in one program; built once per signature.
    ``.coloring(*args)`` gives the color of each column.

    Example::

        >>> f = lambda x: np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
        >>> hess = dg.sparse_hessian(f)
        >>> hess(np.zeros(4)).toarray()
        array([[   2.,    0.,    0.,    0.],
               [   0.,  202.,    0.,    0.],
               [   0.,    0.,  202.,    0.],
               [   0.,    0.,    0.,  200.]])
        >>> hess.coloring(np.zeros(4)).tolist()
        [0, 1, 2, 0]
    """
    return _SparseHessian(fn, argnums, pattern, check_pattern)
