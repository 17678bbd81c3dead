"""Sparse Jacobians and Hessians, detected from the graph and computed compressed.

``dg.jacobian_sparsity(f)(x)`` and ``dg.hessian_sparsity(f)(x)`` read the patterns from the
traced graph (:mod:`dualgpu.transforms.sparsity`: global patterns, valid for every value of
the arguments). ``dg.sparse_jacobian(f)(x)`` and ``dg.sparse_hessian(f)(x)`` color the
pattern (:mod:`dualgpu.coloring`), evaluate one JVP, VJP or HVP per color in one program
(``vmap`` over the seed matrix) and decompress the products into a CSR matrix with a
precomputed index map: ``scipy.sparse`` on NumPy, ``cupyx.scipy.sparse`` on CuPy. The
pattern, the coloring, the index map and the program are built from one trace per
signature into one entry of the program cache (its key, its guards, and guards on the
contents of the constant arrays the pattern was read from), so a cached call returns what
a fresh build returns. :func:`spy` (and ``.spy(*args)`` on the four
transforms) draws a pattern with its coloring. docs/sparse_ad.md tells the story.
"""
from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from typing import Any, cast

import numpy as np
import scipy.sparse as sp

from . import api
from .backends import array_backend
from .coloring import (
    METHODS,
    Decompression,
    bicoloring,
    bidirectional_index,
    column_coloring,
    decompress,
    has_dense_lines,
    hessian_coloring,
    is_structurally_symmetric,
    products,
    row_coloring,
    symmetric_decompression,
)
from .core.flags import Flag
from .core.interpret import eval_graph
from .core.ir import Const, Graph
from .core.trace import Tracer, current_builder, trace_to_graph
from .errors import (
    ArgumentTypeError,
    IntegerInputError,
    InvalidArgumentError,
    NonScalarOutputError,
)
from .frontend.scipy.sparse import Pattern, SparseValue
from .runtime.checks import check_bool
from .runtime.guards import Guards, array_contents
from .runtime.program_cache import Compiled
from .runtime.tracing import Traced
from .runtime.transformed import Transformed
from .spy_plot import spy
from .transforms import hvp_graph, jvp_graph, simplify, vjp_graph
from .transforms.sparsity import hessian_pattern, jacobian_pattern, rule_kind
from .transforms.vmap import batch_graph
from .vectorize import jacobian

__all__ = ["jacobian_sparsity", "hessian_sparsity", "sparse_jacobian", "sparse_hessian"]

MODES = ("fwd", "rev", "auto", "bidirectional")
class _Plan:
    """What a trace gives the compressed program: the pattern, the colors, the seeds and
    the index map of the compressed products into the CSR values (host arrays; device
    copies on demand). A plan is the ``trees`` of one entry of the program cache, with the
    program built from the same trace: it is never paired with another trace's program."""

    def __init__(self, pattern: sp.csr_matrix, colors: np.ndarray, mode: str,
                 seed_shape: tuple, seed_dtype, dtype, decompression=None):
        self.pattern = pattern
        self.colors = colors
        self.mode = mode
        self.seed_shape = tuple(seed_shape)
        self.seed_dtype = np.dtype(seed_dtype)  # the output's for "rev", else the argument's
        self.dtype = np.dtype(dtype)            # the result's: the argument's
        self.n_colors = int(colors.max()) + 1 if len(colors) else 0
        self.per_color = False   # the program is one product, run once per color (NumPy)
        self.guards = Guards()   # the constant arrays whose values the pattern was read from
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

    def seeds(self, backend) -> Any:
        """One seed per color, ``(n_colors, *seed_shape)``: the sum of its unit vectors
        (made once per library)."""
        key = ("seeds", backend.name)
        if key not in self._on_device:
            size = int(np.prod(self.seed_shape, dtype=np.int64))
            seeds = np.zeros((self.n_colors, size), dtype=self.seed_dtype)
            seeded = self.colors >= 0   # -1: in no seed (a bicoloring's)
            seeds[self.colors[seeded], np.arange(size)[seeded]] = 1
            self._on_device[key] = backend.xp.asarray(
                seeds.reshape((self.n_colors,) + self.seed_shape))
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

    def traced(self, values, backend) -> SparseValue:
        """The matrix as a value of the enclosing trace (called on traced values: inside
        ``dg.jit``, ``dg.grad``...): traced values on the concrete pattern."""
        _, indices, indptr = self.index_arrays(backend)
        return SparseValue(values, Pattern("csr", self.pattern.shape, indices, indptr))


class _BidirectionalPlan(_Plan):
    """``mode="bidirectional"``: forward products for the column colors and reverse products
    for the row colors (:func:`~dualgpu.coloring.bicoloring`), each entry gathered from
    the flat ``[forward..., reverse...]`` products."""

    def __init__(self, pattern, column_colors, row_colors, x, out):
        index = bidirectional_index(pattern, column_colors, row_colors)
        super().__init__(pattern, column_colors, "bidirectional", tuple(x.shape), x.dtype,
                         x.dtype, Decompression(index))
        self.row_colors = row_colors
        self.forward = _Plan(pattern, column_colors, "fwd", tuple(x.shape), x.dtype, x.dtype)
        self.reverse = _Plan(pattern, row_colors, "rev", tuple(out.shape), out.dtype, x.dtype)
        self.n_colors = self.forward.n_colors + self.reverse.n_colors


class _PerColor:
    """The NumPy Hessian's program: its one HVP run once per color, each product read into
    the CSR values as it comes (on the host the batched program costs 2-4 HVPs per color at
    10^6 variables: wider temporaries, no launches to save). Reads as the
    :class:`~dualgpu.executor.Executable` it wraps."""

    def __init__(self, exe, plan: _Plan):
        self.exe = exe
        self.plan = plan

    def __call__(self, *inputs) -> list:
        plan = self.plan
        seeds = plan.seeds(self.exe.backend)
        if plan.substitution is not None:   # every product first, then substitution
            products = np.stack([self.exe(*inputs, seeds[k])[0].reshape(-1)
                                 for k in range(plan.n_colors)])
            return [plan.decompress(products, self.exe.backend).astype(plan.dtype, copy=False)]
        values = np.empty(plan.pattern.nnz, dtype=plan.dtype)
        for k, (places, rows) in enumerate(plan.places_per_color()):
            values[places] = self.exe(*inputs, seeds[k])[0].reshape(-1)[rows]
        return [values]

    def __getattr__(self, name):
        return getattr(self.exe, name)


class _SparseProgram(Compiled):
    """One entry of the program cache: the compressed program and the plan (its
    ``trees``) built from one trace, under one key and one set of guards."""

    __slots__ = ()

    def __init__(self, graph, plan: _Plan, backend, guards: Guards):
        super().__init__(graph, plan, backend, guards)
        if plan.per_color:
            self.exe = _PerColor(self.exe, plan)  # type: ignore[assignment]  # reads as one


def _pattern_key(pattern, what: str) -> str | None:
    """A given ``pattern=`` as part of the cache key: a digest of its entries."""
    if pattern is None:
        return None
    try:
        p = sp.csr_matrix(pattern.get() if hasattr(pattern, "get") else pattern)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(
            f"{what}: pattern= must be a matrix (a scipy.sparse matrix or a 2-D array of "
            f"booleans or numbers), got {type(pattern).__name__}: {e}") from None
    p.sum_duplicates()
    p.eliminate_zeros()
    p.sort_indices()
    digest = hashlib.blake2b(repr(p.shape).encode())
    digest.update(p.indptr.astype(np.int64).tobytes())
    digest.update(p.indices.astype(np.int64).tobytes())
    return digest.hexdigest()


def _constants_read(graph: Graph) -> Guards:
    """Guards on the contents of the constant arrays (closed-over or global) whose values
    the detection read: index arrays, the zeros of a matrix in a product. Changed in place,
    such an array changes the pattern, so the entry is built again."""
    arrays: dict = {}
    for eqn in graph.eqns:
        if rule_kind(eqn.prim) not in ("own", Flag.SELECTS):
            continue   # the rules of the other kinds read no values
        for a in eqn.inputs:
            if isinstance(a, Const) and np.ndim(a.value) > 0 and id(a.value) not in arrays:
                arrays[id(a.value)] = (a.value, (
                    f"the values of a {a.value.dtype}{list(a.value.shape)} array read by the "
                    f"sparsity pattern of {eqn.prim.name} (at {eqn.source or 'a line'})"))
    return array_contents([a for a, _ in arrays.values()], [w for _, w in arrays.values()])


class _Sparse(Transformed):
    """The shared machinery of the sparse transforms: argument checks, the plan and the
    compressed program, built from one trace into one entry of the program cache."""

    kind = "sparse"
    program_type = _SparseProgram
    # floats are inputs, as under dg.jit: the pattern holds for every value
    trace_scalars = True

    def __init__(self, fn: Callable, argnums, pattern=None, check_pattern: bool = False):
        if isinstance(argnums, bool) or not isinstance(argnums, int | np.integer):
            raise InvalidArgumentError(
                f"dg.{self.kind}: argnums must be one int (the position of the argument to "
                f"differentiate), got {argnums!r}; to differentiate several arguments, "
                "concatenate them into one array")
        super().__init__(fn, int(argnums))
        self.what = self.kind
        self.user_pattern = pattern
        self.check_pattern = check_bool(check_pattern, "check_pattern", f"dg.{self.kind}")
        self._pattern_key = _pattern_key(pattern, f"dg.{self.kind}")

    def options(self) -> dict:
        return {"pattern": self._pattern_key, "check_pattern": self.check_pattern}

    # ------------------------------------------------------------------ arguments
    def split(self, args: tuple):
        """The arguments, the differentiated one made an array and checked."""
        n = len(args)
        k = self.argnums[0]
        if not -n <= k < n:
            raise InvalidArgumentError(f"dg.{self.what}: argnums={k} but the function was "
                                       f"called with {n} arguments")
        k %= n
        x = args[k]
        if not isinstance(x, Tracer) and array_backend(x) is None:
            x = np.asarray(x)
            args = args[:k] + (x,) + args[k + 1:]
        dtype = np.dtype(x.dtype)
        if dtype.kind in "iub":
            raise IntegerInputError(
                f"dg.{self.what}: argument {k} has dtype {dtype}; only floating-point "
                f"arguments are differentiated (pass x.astype(float))")
        if dtype.kind != "f":
            raise ArgumentTypeError(
                f"dg.{self.what}: argument {k} has dtype {dtype}; sparse derivatives "
                "take real floating-point arguments (split a complex one into real and "
                "imaginary parts)")
        return args, None

    # each sparse transform's own: the shape of its matrix, the product of one seed
    @staticmethod
    def _shape(graph: Graph, k: int) -> tuple:
        raise NotImplementedError

    def _product_graph(self, graph: Graph, k: int, mode: str) -> Graph:
        raise NotImplementedError

    def _main(self, traced: Traced) -> Graph:
        """The function's graph, checked: one real floating-point array output."""
        graph = traced.graph
        if len(graph.outputs) != 1:
            raise ArgumentTypeError(f"dg.{self.what}: the function must return one array, "
                                    f"but it returns {len(graph.outputs)} outputs")
        out = graph.outputs[0]
        if out.dtype.kind != "f":
            raise ArgumentTypeError(f"dg.{self.what}: the function returns dtype "
                                    f"{out.dtype}; sparse derivatives take real "
                                    "floating-point outputs")
        return graph

    # ------------------------------------------------------------------ building
    def build(self, traced, sig):
        graph = self._main(traced)
        (k,) = sig.diff_inputs()
        inline = current_builder() is not None
        if self.user_pattern is None:
            pattern = self._detect(graph, k)
        else:
            pattern = self._given_pattern(graph, k, sig, inline)
        plan = self._plan(graph, k, pattern)
        if self.user_pattern is None:
            plan.guards = _constants_read(graph)
        plan.per_color = self.per_color and not inline and not sig.backend.on_device
        return self._program(graph, k, plan, sig.backend, inline), plan

    def entry_guards(self, guards: Guards, plan: _Plan) -> Guards:
        return guards + plan.guards

    def _program(self, graph: Graph, k: int, plan: _Plan, backend, inline: bool) -> Graph:
        """``(*inputs) -> (values, indices, indptr)`` of the CSR matrix: the compressed
        products of the seeds, the values gathered from them by the index map, and the CSR
        structure (copied: a program's output that is one of its constants is copied).
        Seeds and index arrays are the program's constants, so a cached call is one program
        run on the arguments alone, decompression included. With ``plan.per_color``: the
        one product ``(*inputs, seed) -> product``, run per color by :class:`_PerColor`."""
        bi = cast(_BidirectionalPlan, plan)  # its forward and reverse plans, when bidirectional
        parts = [(bi.forward, "fwd"), (bi.reverse, "rev")] \
            if plan.mode == "bidirectional" else [(plan, plan.mode)]
        n = len(graph.inputs)
        batched = []   # per part: the batched product and its seeds
        for part, mode in parts:
            product = simplify(self._product_graph(graph, k, mode))
            if plan.per_color:
                return product
            if part.n_colors:
                batched.append((batch_graph(product, [None] * n + [0], part.n_colors, [0])[0],
                                part.seeds(backend)))
        xp = graph.xp or backend.xp
        index, indices, indptr = plan.index_arrays(backend)

        def compressed(*inputs):
            if not batched:   # no entries
                return [xp.zeros(0, dtype=plan.dtype), indices, indptr]
            flat = [eval_graph(b, list(inputs) + [seeds])[0].reshape(-1) for b, seeds in batched]
            products = flat[0] if len(flat) == 1 else np.concatenate(flat)
            values = plan.decompress(products, backend)
            return [values.astype(plan.dtype) if values.dtype != plan.dtype else values,
                    indices, indptr]

        program, _ = trace_to_graph(compressed, [v.aval for v in graph.inputs], graph.xp,
                                    name=f"compressed_{plan.mode}_{graph.name}",
                                    input_names=graph.input_names)
        return simplify(program)

    def _given_pattern(self, graph: Graph, k: int, sig, inline: bool) -> sp.csr_matrix:
        shape = self._shape(graph, k)
        p = self.user_pattern
        p = sp.csr_matrix(p.get() if hasattr(p, "get") else p)
        if p.shape != shape:
            raise InvalidArgumentError(f"dg.{self.what}: pattern= has shape {p.shape}, but "
                                       f"the derivative has shape {shape}")
        p = sp.csr_matrix((np.ones(p.nnz, dtype=bool), p.indices, p.indptr), shape=p.shape)
        p.sum_duplicates()
        p.eliminate_zeros()
        p = self._symmetrized(p)
        if self.check_pattern:
            if inline:
                raise InvalidArgumentError(
                    f"dg.{self.what}: check_pattern=True compares the pattern with the dense "
                    "derivative at the call's values, which a trace (dg.jit, dg.grad...) does "
                    "not have: check it in a call outside the trace")
            self._check_superset(p, sig)
        return p

    def _symmetrized(self, pattern: sp.csr_matrix) -> sp.csr_matrix:
        return pattern

    def _check_superset(self, pattern, sig):
        """``check_pattern=True``: the dense derivative at the call's point and at a random
        point near it has no nonzero outside ``pattern`` (costs a dense derivative)."""
        k = self.argnums[0]
        x = sig.args[k]
        backend = array_backend(x)
        rng = np.random.default_rng(0)
        host = np.asarray(backend.to_host(x))
        noise = rng.standard_normal(host.shape).astype(host.dtype)
        dense_at = self._dense(k)
        for point in (host, host + 1e-2 * (np.abs(host) + 1) * noise):
            moved = sig.args[:k] + (backend.to_device(point),) + sig.args[k + 1:]
            dense = np.asarray(backend.to_host(dense_at(*moved, **sig.kwargs)))
            dense = dense.reshape(pattern.shape)
            missed = np.argwhere((np.nan_to_num(dense) != 0) & ~pattern.toarray())
            if len(missed):
                i, j = missed[0]
                raise InvalidArgumentError(
                    f"dg.{self.what}: pattern= misses entry ({i}, {j}) of the derivative "
                    f"(and {len(missed) - 1} more): it is not a superset of the sparsity "
                    "pattern; leave pattern= out to detect it from the graph")

    def finish(self, compiled, sig, outs):
        plan = compiled.trees
        values = outs[0]
        if isinstance(values, Tracer):
            return plan.traced(values, sig.backend)
        if len(outs) == 3:
            return plan.csr(sig.backend, values, outs[1], outs[2])
        _, indices, indptr = plan.index_arrays(sig.backend)
        return plan.csr(sig.backend, values, indices.copy(), indptr.copy())

    # ------------------------------------------------------------------ inspection
    def _entry(self, args: tuple, kwargs: dict) -> Compiled:
        """The cache entry of this call (built if needed): its plan is ``.trees``."""
        if self._by_arity is not None:
            return self._resolved(self.split(args)[0])._entry(args, kwargs)
        fargs, _ = self.split(args)
        return self.compiled(self._signature(fargs, kwargs))

    def coloring(self, *args, **kwargs) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """The color of each column (of each row for ``mode="rev"``): the entries of one
        color come from one product. A bicoloring (``mode="bidirectional"``): the pair of
        the columns' forward colors and the rows' reverse colors (-1: in no seed)."""
        plan = self._entry(args, kwargs).trees
        if plan.mode == "bidirectional":
            return plan.colors, plan.row_colors
        return plan.colors

    def sparsity(self, *args, **kwargs) -> sp.csr_matrix:
        """The pattern the transform uses at this signature (boolean CSR)."""
        return self._entry(args, kwargs).trees.pattern

    def spy(self, *args, ax=None, markersize: float | None = None, **kwargs):
        """Draw the pattern at this signature with its coloring (:func:`spy`, matplotlib);
        returns the axes."""
        plan = self._entry(args, kwargs).trees
        return spy(plan.pattern, plan.colors, ax=ax, rows=plan.mode == "rev",
                   markersize=markersize)


class _Detect:
    """``dg.jacobian_sparsity`` and ``dg.hessian_sparsity``: detection on every call."""

    def __init__(self, fn, argnums, hessian: bool):
        self.transform = (_SparseHessian if hessian else _SparseJacobian)(fn, argnums)
        self.transform.what = "hessian_sparsity" if hessian else "jacobian_sparsity"
        self.__wrapped__ = fn

    def __call__(self, *args, **kwargs) -> sp.csr_matrix:
        t = self.transform
        if t._by_arity is not None:
            t = t._resolved(t.split(args)[0])
        fargs, _ = t.split(args)
        sig = t._signature(fargs, kwargs)
        captured: list | None = [] if sig.traced or current_builder() is not None else None
        graph = t._main(Traced(t.fn, sig, captured))
        return t._detect(graph, sig.diff_inputs()[0])

    def spy(self, *args, ax=None, markersize: float | None = None, **kwargs):
        """Draw the pattern with the coloring the sparse transform would use (:func:`spy`:
        the symmetric coloring for a Hessian, columns or rows, whichever are fewer, for a
        Jacobian); returns the axes."""
        return self.transform.spy(*args, ax=ax, markersize=markersize, **kwargs)


class _SparseJacobian(_Sparse):
    kind = "sparse_jacobian"
    per_color = False

    def __init__(self, fn, argnums=0, mode: str = "auto", pattern=None,
                 check_pattern: bool = False):
        if mode not in MODES:
            raise InvalidArgumentError(f"dg.sparse_jacobian: mode must be one of "
                                       f"{', '.join(map(repr, MODES))}, got {mode!r}")
        self.mode = mode
        super().__init__(fn, argnums, pattern, check_pattern)

    def options(self) -> dict:
        return {**super().options(), "mode": self.mode}

    @staticmethod
    def _shape(graph: Graph, k: int) -> tuple:
        out = graph.outputs[0]
        return (int(np.prod(out.shape, dtype=np.int64)),
                int(np.prod(graph.inputs[k].shape, dtype=np.int64)))

    def _detect(self, graph: Graph, k: int) -> sp.csr_matrix:
        return jacobian_pattern(graph, [k])

    def _dense(self, k: int) -> Callable:
        return jacobian(self.fn, argnums=k)

    def _plan(self, graph: Graph, k: int, pattern) -> _Plan:
        mode = self.mode
        columns = rows = None
        both = mode in ("auto", "bidirectional")
        if mode == "fwd" or both:
            columns = column_coloring(pattern)
        if both and is_structurally_symmetric(pattern):
            rows = columns   # what row_coloring would compute again
        elif mode == "rev" or both:
            rows = row_coloring(pattern)
        x, out = graph.inputs[k], graph.outputs[0]
        if mode == "bidirectional" or (mode == "auto" and has_dense_lines(pattern)):
            assert columns is not None and rows is not None  # both colorings, above
            bicolors = bicoloring(pattern, columns, rows)
            fewest = min(columns.max(initial=-1), rows.max(initial=-1)) + 1
            if mode == "bidirectional" or products(*bicolors) < fewest:
                return _BidirectionalPlan(pattern, *bicolors, x, out)
        if mode == "auto":
            assert columns is not None and rows is not None  # both colorings, above
            mode = "fwd" if columns.max(initial=-1) <= rows.max(initial=-1) else "rev"
        seed = out if mode == "rev" else x
        colors = columns if mode == "fwd" else rows
        assert colors is not None  # the coloring of the mode, above
        return _Plan(pattern, colors, mode, tuple(seed.shape),
                     seed.dtype, x.dtype)

    def _product_graph(self, graph: Graph, k: int, mode: str) -> Graph:
        """``(*inputs, seed) -> J seed`` (fwd) or ``seed^T J`` (rev)."""
        wrt = [i == k for i in range(len(graph.inputs))]
        product = jvp_graph(graph, wrt) if mode == "fwd" else vjp_graph(graph, wrt)
        product.outputs = product.outputs[1:]   # the product alone, not the value
        return product


class _SparseHessian(_Sparse):
    kind = "sparse_hessian"
    per_color = True   # on the host: one HVP per color (:class:`_PerColor`)

    def __init__(self, fn, argnums=0, pattern=None, check_pattern: bool = False,
                 coloring: str = "auto"):
        if not isinstance(coloring, str) or coloring not in METHODS:
            raise InvalidArgumentError(f"dg.sparse_hessian: coloring must be one of "
                                       f"{', '.join(map(repr, METHODS))}, got {coloring!r}")
        self.coloring_method = coloring
        super().__init__(fn, argnums, pattern, check_pattern)

    def options(self) -> dict:
        return {**super().options(), "coloring": self.coloring_method}

    @staticmethod
    def _shape(graph: Graph, k: int) -> tuple:
        n = int(np.prod(graph.inputs[k].shape, dtype=np.int64))
        return (n, n)

    def _main(self, traced):
        graph = super()._main(traced)
        shape = tuple(graph.outputs[0].shape)
        if shape != ():
            raise NonScalarOutputError(
                f"dg.{self.what}: the function must return a scalar, but it returns shape "
                f"{shape}; sum it or take the entry you need (for the Hessians of "
                "several outputs, one sparse_hessian per output)")
        return graph

    def _detect(self, graph: Graph, k: int) -> sp.csr_matrix:
        return hessian_pattern(graph, [k])

    def _symmetrized(self, pattern: sp.csr_matrix) -> sp.csr_matrix:
        return (pattern + pattern.T).tocsr()   # a Hessian is symmetric

    def _dense(self, k: int) -> Callable:
        return api.hessian(self.fn, argnums=k)

    def _plan(self, graph: Graph, k: int, pattern) -> _Plan:
        x = graph.inputs[k]
        pattern = sp.csr_matrix(pattern, copy=True)
        pattern.sort_indices()
        colors = hessian_coloring(pattern, self.coloring_method)
        decompression = symmetric_decompression(pattern, colors, self.coloring_method)
        return _Plan(pattern, colors, "fwd", tuple(x.shape), x.dtype, x.dtype, decompression)

    def _product_graph(self, graph: Graph, k: int, mode: str) -> Graph:
        return hvp_graph(graph, [k], value=False, grads=False)


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
    per column color (``mode="fwd"``), one VJP per row color (``"rev"``), JVPs for some
    entries and VJPs for the others (``"bidirectional"``, a bicoloring: for dense rows and
    columns), or whichever needs fewest (``"auto"``), all in one program. Pattern,
    coloring and program are built once per signature; ``.coloring(*args)`` gives the
    colors (for ``"bidirectional"`` the pair of column and row colors, ``-1``: in no
    seed), ``.sparsity(*args)`` the pattern.

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


def sparse_hessian(fn: Callable, argnums: int = 0, pattern=None, check_pattern: bool = False,
                   coloring: str = "auto"):
    """``sparse_hessian(f)(*args)``: the Hessian of the scalar ``f`` with respect to argument
    ``argnums`` as a CSR matrix of the argument's dtype (n x n over its flattened entries).

    The pattern is detected from the graph (or given as ``pattern=``; ``check_pattern=True``
    checks it against the dense Hessian), colored, and all colors' HVPs run in one program;
    built once per signature. ``coloring=``: ``"distance2"`` (each entry from its column's
    HVP), ``"star"`` (fewer colors, each entry read from its column's or its row's HVP),
    ``"acyclic"`` (fewer still, entries recovered by substitution: sums along two-colored
    trees) or ``"auto"`` (the fewer of the direct ones; :mod:`dualgpu.coloring`).
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
    return _SparseHessian(fn, argnums, pattern, check_pattern, coloring)
