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

import hashlib
from collections.abc import Callable
from typing import cast

import numpy as np
import scipy.sparse as sp

from ..backends import array_backend
from ..base import tree as pytree
from ..coloring import (
    METHODS,
    bicoloring,
    column_coloring,
    has_dense_lines,
    hessian_coloring,
    is_structurally_symmetric,
    products,
    row_coloring,
    symmetric_decompression,
)
from ..core.flags import Flag
from ..core.interpret import eval_graph
from ..core.ir import Const, Graph
from ..core.trace import Tracer, current_builder, trace_to_graph
from ..errors import (
    ArgumentTypeError,
    IntegerInputError,
    InvalidArgumentError,
    NonScalarOutputError,
)
from ..runtime.checks import check_bool, normalize_argnums
from ..runtime.guards import Guards, array_contents
from ..runtime.program_cache import Compiled
from ..runtime.tracing import Traced
from ..runtime.transformed import Transformed
from ..transforms import hvp_graph, jvp_graph, simplify, vjp_graph
from ..transforms.separability import check_separable, sum_output
from ..transforms.sparsity import hessian_pattern, jacobian_pattern, rule_kind
from ..transforms.vmap import batch_graph
from . import differentiation
from .sparse_plan import BidirectionalPlan, PerColor, Plan
from .spy_plot import spy
from .vectorize import jacobian

__all__ = ["jacobian_sparsity", "hessian_sparsity", "sparse_jacobian", "sparse_hessian"]

MODES = ("fwd", "rev", "auto", "bidirectional")


class _SparseProgram(Compiled):
    """One entry of the program cache: the compressed program and the plan (its
    ``trees``) built from one trace, under one key and one set of guards."""

    __slots__ = ()

    def __init__(self, graph, plan: Plan, backend, guards: Guards):
        super().__init__(graph, plan, backend, guards)
        if plan.per_color:
            self.exe = PerColor(self.exe, plan)  # type: ignore[assignment]  # reads as one


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


def _size(v) -> int:
    return int(np.prod(v.shape, dtype=np.int64))


def _numbers(x) -> bool:
    """A Python number, or a (nested) list or tuple of them: made one array, as before
    pytrees of arrays were differentiated."""
    if isinstance(x, (list, tuple)):
        return len(x) > 0 and all(_numbers(a) for a in x)
    return isinstance(x, (int, float, np.number)) and not isinstance(x, bool)


def _check_float(leaf, where: str, what: str) -> None:
    """A differentiated leaf must be a real floating-point array."""
    if isinstance(leaf, Tracer) or array_backend(leaf) is not None:
        dtype = np.dtype(leaf.dtype)
    else:
        dtype = np.asarray(leaf).dtype
    if dtype.kind in "iub":
        raise IntegerInputError(
            f"dg.{what}: {where} has dtype {dtype}; only floating-point "
            f"arguments are differentiated (pass x.astype(float))")
    if dtype.kind != "f":
        raise ArgumentTypeError(
            f"dg.{what}: {where} has dtype {dtype}; sparse derivatives "
            "take real floating-point arguments (split a complex one into real and "
            "imaginary parts)")


def _stacked(products: list):
    """The products of one batched program, ``(n_colors, size)`` per output, as one flat
    array: color by color, the outputs' entries stacked (one per leaf for reverse
    products and Hessians)."""
    if len(products) == 1:
        return products[0].reshape(-1)
    n = products[0].shape[0]
    return np.concatenate([p.reshape(n, -1) for p in products], axis=1).reshape(-1)


class _Sparse(Transformed):
    """The shared machinery of the sparse transforms: argument checks, the plan and the
    compressed program, built from one trace into one entry of the program cache."""

    kind = "sparse"
    program_type = _SparseProgram
    # floats are inputs, as under dg.jit: the pattern holds for every value
    trace_scalars = True

    def __init__(self, fn: Callable, argnums, pattern=None, check_pattern: bool = False,
                 batch_axes=None):
        try:
            nums, _ = normalize_argnums(argnums)
        except ArgumentTypeError as e:
            raise InvalidArgumentError(f"dg.{self.kind}: {e}") from None
        if not nums:
            raise InvalidArgumentError(f"dg.{self.kind}: argnums=() differentiates no "
                                       "argument; give the position of one or more")
        super().__init__(fn, argnums, batch_axes=batch_axes)
        self.what = self.kind
        self.user_pattern = pattern
        self.check_pattern = check_bool(check_pattern, "check_pattern", f"dg.{self.kind}")
        self._pattern_key = _pattern_key(pattern, f"dg.{self.kind}")

    def options(self) -> dict:
        return {"pattern": self._pattern_key, "check_pattern": self.check_pattern}

    # ------------------------------------------------------------------ arguments
    def split(self, args: tuple):
        """The arguments, the differentiated ones checked (a number or a list of numbers
        made an array; a pytree of arrays checked leaf by leaf)."""
        n = len(args)
        for k in self.argnums:
            if not -n <= k < n:
                raise InvalidArgumentError(f"dg.{self.what}: argnums={k} but the function "
                                           f"was called with {n} arguments")
            k %= n
            x = args[k]
            if _numbers(x):
                x = np.asarray(x)
                args = args[:k] + (x,) + args[k + 1:]
            leaves = pytree.flatten(x)[0]
            for i, leaf in enumerate(leaves):
                where = f"argument {k}" + (f" (leaf {i})" if len(leaves) > 1 else "")
                _check_float(leaf, where, self.what)
        return args, None

    # each sparse transform's own: the shape of its matrix, the product of one seed
    @staticmethod
    def _block_sizes(graph: Graph, ks: list) -> tuple[list, list]:
        """The entries of each block row and block column of the matrix."""
        raise NotImplementedError

    def _shape(self, graph: Graph, ks: list) -> tuple:
        rows, cols = self._block_sizes(graph, ks)
        return sum(rows), sum(cols)

    def _detect(self, graph: Graph, ks: list) -> sp.csr_matrix:
        raise NotImplementedError

    def _dense(self) -> Callable:
        raise NotImplementedError

    def _plan(self, graph: Graph, ks: list, pattern) -> Plan:
        raise NotImplementedError

    def _product_graph(self, graph: Graph, ks: list, mode: str) -> Graph:
        raise NotImplementedError

    def _main(self, traced: Traced, sig) -> Graph:
        """The function's graph, checked: one real floating-point array output (summed
        over the instances with ``batch_axes``, which must be separate)."""
        graph = traced.graph
        if self.batch_axes is not None and len(graph.outputs) == 1:
            check_separable(graph, sig.diff_inputs(), self.batch_axes, what=self.what)
            graph = sum_output(graph)
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
        graph = self._main(traced, sig)
        ks = sig.diff_inputs()
        inline = current_builder() is not None
        if self.user_pattern is None:
            pattern = self._detect(graph, ks)
        else:
            pattern = self._given_pattern(graph, ks, sig, inline)
        plan = self._plan(graph, ks, pattern)
        plan.guards = _constants_read(graph) if self.user_pattern is None else Guards()
        plan.per_color = self.per_color and not inline and not sig.backend.on_device
        return self._program(graph, ks, plan, sig.backend, inline), plan

    def entry_guards(self, guards: Guards, plan: Plan) -> Guards:
        return guards + plan.guards

    def _program(self, graph: Graph, ks: list, plan: Plan, backend, inline: bool) -> Graph:
        """``(*inputs) -> (values, indices, indptr)`` of the CSR matrix: the compressed
        products of the seeds, the values gathered from them by the index map, and the CSR
        structure (copied: a program's output that is one of its constants is copied).
        Seeds and index arrays are the program's constants, so a cached call is one program
        run on the arguments alone, decompression included. With ``plan.per_color``: the
        one product ``(*inputs, *seeds) -> product``, run per color by :class:`PerColor`."""
        bi = cast(BidirectionalPlan, plan)  # its forward and reverse plans, when bidirectional
        parts = [(bi.forward, "fwd"), (bi.reverse, "rev")] \
            if plan.mode == "bidirectional" else [(plan, plan.mode)]
        n = len(graph.inputs)
        batched = []   # per part: the batched product and its seeds
        for part, mode in parts:
            product = simplify(self._product_graph(graph, ks, mode))
            if plan.per_color:
                return product
            if part.n_colors:
                seeds = part.seeds(backend)
                axes = [None] * n + [0] * len(seeds)
                batched.append((batch_graph(product, axes, part.n_colors,
                                            [0] * len(product.outputs))[0], seeds))
        xp = graph.xp or backend.xp
        index, indices, indptr = plan.index_arrays(backend)

        def compressed(*inputs):
            if not batched:   # no entries
                return [xp.zeros(0, dtype=plan.dtype), indices, indptr]
            flat = [_stacked(eval_graph(b, list(inputs) + seeds)) for b, seeds in batched]
            products = flat[0] if len(flat) == 1 else np.concatenate(flat)
            values = plan.decompress(products, backend)
            return [values.astype(plan.dtype) if values.dtype != plan.dtype else values,
                    indices, indptr]

        program, _ = trace_to_graph(compressed, [v.aval for v in graph.inputs], graph.xp,
                                    name=f"compressed_{plan.mode}_{graph.name}",
                                    input_names=graph.input_names)
        return simplify(program)

    def _given_pattern(self, graph: Graph, ks: list, sig, inline: bool) -> sp.csr_matrix:
        shape = self._shape(graph, ks)
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
            self._check_superset(p, sig, *self._block_sizes(graph, ks))
        return p

    def _symmetrized(self, pattern: sp.csr_matrix) -> sp.csr_matrix:
        return pattern

    def _check_superset(self, pattern, sig, rows: list, cols: list):
        """``check_pattern=True``: the dense derivative at the call's point and at a random
        point near it has no nonzero outside ``pattern`` (costs a dense derivative)."""
        backend = sig.backend
        rng = np.random.default_rng(0)
        dense_at = self._dense()

        def near(x):
            host = np.asarray(backend.to_host(x))
            noise = rng.standard_normal(host.shape).astype(host.dtype)
            return backend.to_device(host + 1e-2 * (np.abs(host) + 1) * noise)

        for moved in (sig.args, tuple(pytree.tree_map(near, a) if i in self.argnums else a
                                      for i, a in enumerate(sig.args))):
            leaves = iter(pytree.flatten(dense_at(*moved, **sig.kwargs))[0])   # row-major
            dense = np.block([[np.asarray(backend.to_host(next(leaves))).reshape(m, n)
                               for n in cols] for m in rows])
            missed = np.argwhere((np.nan_to_num(dense) != 0) & ~pattern.toarray())
            if len(missed):
                i, j = missed[0]
                raise InvalidArgumentError(
                    f"dg.{self.what}: pattern= misses entry ({i}, {j}) of the derivative "
                    f"(and {len(missed) - 1} more): it is not a superset of the sparsity "
                    "pattern; leave pattern= out to detect it from the graph")

    def finish(self, compiled, sig, outs):
        plan = compiled.trees
        blocks = plan.results(sig.backend, *outs)
        return blocks[0] if self._one_matrix(sig) else self._blocks(sig, blocks)

    def _one_matrix(self, sig) -> bool:
        """Whether the result is one matrix: one argument, an array, not in a tuple."""
        return not self.argnums_tuple and sig.arg_trees[self.argnums[0]].is_leaf

    def _blocks(self, sig, blocks: list):
        """The blocks in the structure of the differentiated arguments (as JAX's
        ``jacobian`` and ``hessian`` of a tuple ``argnums`` or of a pytree)."""
        return self._per_argnum(sig, blocks, repackage=False)

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

    def __init__(self, fn, argnums, hessian: bool, batch_axes=None):
        self.transform: _Sparse = _SparseHessian(fn, argnums, batch_axes=batch_axes) \
            if hessian else _SparseJacobian(fn, argnums)
        self.transform.what = "hessian_sparsity" if hessian else "jacobian_sparsity"
        self.__wrapped__ = fn

    def __call__(self, *args, **kwargs) -> sp.csr_matrix:
        t = self.transform
        if t._by_arity is not None:
            t = t._resolved(t.split(args)[0])
        fargs, _ = t.split(args)
        sig = t._signature(fargs, kwargs)
        captured: list | None = [] if sig.traced or current_builder() is not None else None
        graph = t._main(Traced(t.fn, sig, captured), sig)
        ks = sig.diff_inputs()
        pattern = t._detect(graph, ks)
        if t._one_matrix(sig):
            return pattern
        rows, cols = t._block_sizes(graph, ks)
        row_start, col_start = np.cumsum([0] + rows), np.cumsum([0] + cols)
        blocks = [pattern[row_start[r]:row_start[r + 1], col_start[c]:col_start[c + 1]]
                  for r in range(len(rows)) for c in range(len(cols))]
        return t._blocks(sig, blocks)

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
    def _block_sizes(graph: Graph, ks: list) -> tuple[list, list]:
        """The entries of each block row (the output) and block column (each leaf)."""
        return [_size(graph.outputs[0])], [_size(graph.inputs[k]) for k in ks]

    def _detect(self, graph: Graph, ks: list) -> sp.csr_matrix:
        return jacobian_pattern(graph, ks)

    def _dense(self) -> Callable:
        return jacobian(self.fn, argnums=self.argnums)

    def _plan(self, graph: Graph, ks: list, pattern) -> Plan:
        mode = self.mode
        columns = rows = None
        both = mode in ("auto", "bidirectional")
        if mode == "fwd" or both:
            columns = column_coloring(pattern)
        if both and is_structurally_symmetric(pattern):
            rows = columns   # what row_coloring would compute again
        elif mode == "rev" or both:
            rows = row_coloring(pattern)
        xs, out = [graph.inputs[k] for k in ks], graph.outputs[0]
        _, col_sizes = self._block_sizes(graph, ks)
        if mode == "bidirectional" or (mode == "auto" and has_dense_lines(pattern)):
            assert columns is not None and rows is not None  # both colorings, above
            bicolors = bicoloring(pattern, columns, rows)
            fewest = min(columns.max(initial=-1), rows.max(initial=-1)) + 1
            if mode == "bidirectional" or products(*bicolors) < fewest:
                return BidirectionalPlan(pattern, *bicolors, xs, out, col_sizes=col_sizes)
        if mode == "auto":
            assert columns is not None and rows is not None  # both colorings, above
            mode = "fwd" if columns.max(initial=-1) <= rows.max(initial=-1) else "rev"
        seeds = [out] if mode == "rev" else xs
        colors = columns if mode == "fwd" else rows
        assert colors is not None  # the coloring of the mode, above
        return Plan(pattern, colors, mode, [s.shape for s in seeds], [s.dtype for s in seeds],
                    np.result_type(*(x.dtype for x in xs)), col_sizes=col_sizes)

    def _product_graph(self, graph: Graph, ks: list, mode: str) -> Graph:
        """``(*inputs, *seeds) -> J seed`` (fwd) or ``seed^T J`` (rev: one per leaf)."""
        wrt = [i in ks for i in range(len(graph.inputs))]
        product = jvp_graph(graph, wrt) if mode == "fwd" else vjp_graph(graph, wrt)
        product.outputs = product.outputs[1:]   # the product alone, not the value
        return product


class _SparseHessian(_Sparse):
    kind = "sparse_hessian"
    per_color = True   # on the host: one HVP per color (:class:`PerColor`)

    def __init__(self, fn, argnums=0, pattern=None, check_pattern: bool = False,
                 coloring: str = "auto", batch_axes=None):
        if not isinstance(coloring, str) or coloring not in METHODS:
            raise InvalidArgumentError(f"dg.sparse_hessian: coloring must be one of "
                                       f"{', '.join(map(repr, METHODS))}, got {coloring!r}")
        self.coloring_method = coloring
        super().__init__(fn, argnums, pattern, check_pattern, batch_axes)

    def options(self) -> dict:
        return {**super().options(), "coloring": self.coloring_method}

    @staticmethod
    def _block_sizes(graph: Graph, ks: list) -> tuple[list, list]:
        sizes = [_size(graph.inputs[k]) for k in ks]
        return sizes, sizes

    def _blocks(self, sig, blocks: list):
        """Rows of blocks, each row the blocks of one leaf against every leaf, in the
        structure of the arguments (as :func:`dualgpu.hessian`)."""
        k = sum(sig.diff)
        rows = [self._per_argnum(sig, blocks[i * k:(i + 1) * k], repackage=False)
                for i in range(k)]
        return self._per_argnum(sig, rows, repackage=False)

    def _main(self, traced, sig):
        graph = super()._main(traced, sig)
        shape = tuple(graph.outputs[0].shape)
        if shape != ():
            raise NonScalarOutputError(
                f"dg.{self.what}: the function must return a scalar, but it returns shape "
                f"{shape}; sum it or take the entry you need (for the Hessians of "
                "several outputs, one sparse_hessian per output)")
        return graph

    def _detect(self, graph: Graph, ks: list) -> sp.csr_matrix:
        return hessian_pattern(graph, ks)

    def _symmetrized(self, pattern: sp.csr_matrix) -> sp.csr_matrix:
        return (pattern + pattern.T).tocsr()   # a Hessian is symmetric

    def _dense(self) -> Callable:
        return differentiation.hessian(self.fn, argnums=self.argnums)

    def _plan(self, graph: Graph, ks: list, pattern) -> Plan:
        xs = [graph.inputs[k] for k in ks]
        pattern = sp.csr_matrix(pattern, copy=True)
        pattern.sort_indices()
        colors = hessian_coloring(pattern, self.coloring_method)
        decompression = symmetric_decompression(pattern, colors, self.coloring_method)
        sizes, _ = self._block_sizes(graph, ks)
        return Plan(pattern, colors, "fwd", [x.shape for x in xs], [x.dtype for x in xs],
                    np.result_type(*(x.dtype for x in xs)), decompression, sizes, sizes)

    def _product_graph(self, graph: Graph, ks: list, mode: str) -> Graph:
        return hvp_graph(graph, ks, value=False, grads=False)


def jacobian_sparsity(fn: Callable, argnums=0) -> Callable:
    """``jacobian_sparsity(f)(*args)``: the boolean pattern of the Jacobian of ``f`` with
    respect to argument ``argnums``, read from the graph (a ``scipy.sparse`` CSR matrix,
    ``f``'s output entries by the argument's entries, both flattened in C order). Valid for
    every value of the arguments. Several arguments (a tuple ``argnums``) or a pytree
    argument: one block per array, as :func:`sparse_jacobian` gives them.

    Example::

        >>> f = lambda x: x[1:] ** 2 - x[:-1]
        >>> dg.jacobian_sparsity(f)(np.ones(4)).toarray()
        array([[ True,  True, False, False],
               [False,  True,  True, False],
               [False, False,  True,  True]])
    """
    return _Detect(fn, argnums, hessian=False)


def hessian_sparsity(fn: Callable, argnums=0, batch_axes=None) -> Callable:
    """``hessian_sparsity(f)(*args)``: the boolean, symmetric pattern of the Hessian of the
    scalar ``f`` with respect to argument ``argnums`` (n x n, flattened in C order), read from
    the graph; valid for every value of the arguments. Several arrays: blocks, as
    :func:`sparse_hessian`; ``batch_axes``: of the sum over instances, as there.

    Example::

        >>> f = lambda x: np.sum(x[1:] * x[:-1]) + np.sum(x ** 3)
        >>> dg.hessian_sparsity(f)(np.ones(3)).toarray().astype(int)
        array([[1, 1, 0],
               [1, 1, 1],
               [0, 1, 1]])
    """
    return _Detect(fn, argnums, hessian=True, batch_axes=batch_axes)


def sparse_jacobian(fn: Callable, argnums=0, mode: str = "auto", pattern=None,
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

    Several differentiated arrays (a tuple ``argnums``, or an argument that is a tuple, list
    or dict of arrays) give one CSR block per array in their structure, as
    ``dg.jacobian`` does; one coloring of all their columns, stacked, serves every block
    (``.coloring`` and ``.sparsity`` are of the stacked matrix).

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


def sparse_hessian(fn: Callable, argnums=0, pattern=None, check_pattern: bool = False,
                   coloring: str = "auto", batch_axes=None):
    """``sparse_hessian(f)(*args)``: the Hessian of the scalar ``f`` with respect to argument
    ``argnums`` as a CSR matrix of the argument's dtype (n x n over its flattened entries).

    The pattern is detected from the graph (or given as ``pattern=``; ``check_pattern=True``
    checks it against the dense Hessian), colored, and all colors' HVPs run in one program;
    built once per signature. ``coloring=``: ``"distance2"`` (each entry from its column's
    HVP), ``"star"`` (fewer colors, each entry read from its column's or its row's HVP),
    ``"acyclic"`` (fewer still, entries recovered by substitution: sums along two-colored
    trees) or ``"auto"`` (the fewer of the direct ones; :mod:`dualgpu.coloring`).
    ``.coloring(*args)`` gives the color of each column.

    Several differentiated arrays give the blocks in their structure, as ``dg.hessian``:
    ``((H_xx, H_xy), (H_yx, H_yy))`` for ``argnums=(0, 1)``. ``batch_axes``: ``f`` returns
    one value per instance along those axes of the argument (checked: a function that
    couples instances is a ``SeparabilityError``), and the result is the block-diagonal
    matrix of the instances' Hessians, colored with as many colors as one instance needs.

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
        >>> (h_xx, h_xy), (h_yx, h_yy) = dg.sparse_hessian(
        ...     lambda x, y: np.sum(x ** 2 * y), argnums=(0, 1))(np.ones(2), np.ones(2))
        >>> h_xy.toarray()
        array([[2., 0.],
               [0., 2.]])
    """
    return _SparseHessian(fn, argnums, pattern, check_pattern, coloring, batch_axes)
