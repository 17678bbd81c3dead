"""Sparsity patterns of Jacobians and Hessians, read from the graph.

The interpreter walks the equations once, carrying for every value that depends on the
differentiated input its **dependencies** (:mod:`dualgpu.rules.sparsity_rules`: a CSR matrix,
entries of the value by entries of the input). The Jacobian pattern is the output's
dependencies. The Hessian pattern of a scalar output is the union, over the ops that reach
the output, of their second-order interactions (``x * y`` couples x's and y's dependencies;
``sin(x)`` x's with themselves; linear ops add none): the standard propagation of first-
and second-order patterns (Walther 2008; SparseConnectivityTracer.jl).

The patterns are **global**: valid for every value of the inputs. Control flow in the data
takes every branch (``np.where`` and comparisons read both operands), index arrays computed
from the input may select any entry, and a matrix decomposition's block is dense.

Each op's rule is its own (``prim.rule("sparsity")``), else the rule of its flags:
elementwise ops by broadcasting, reductions and scans by the entries they combine, and ops
that select entries (reshape, transpose, broadcast_to, getitem) by applying the op to the
indices themselves. Ops without a derivative (comparisons, ``floor``, ``argsort``) and
integer values depend on nothing. An op with neither a rule nor a flag that says is refused
with :class:`UnsupportedOpError` naming it.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..backends import array_backend
from ..core.flags import Flag
from ..core.interpret import walk
from ..core.ir import Const, Eqn, Graph, Literal, Var
from ..errors import DualgpuError, NonScalarOutputError, UnsupportedOpError
from ..rules import sparsity_rules as S


class ReadValues(list):
    """The operands' values where known while tracing (None elsewhere), as a rule sees them
    (``ctx.values``): a constant array a rule reaches, by index, slice or unpacking, is
    recorded in ``read`` (id -> (array, what)), since the pattern then depends on its
    contents (an index array, the zeros of a matrix in a product)."""

    def __init__(self, eqn: Eqn, read: dict):
        super().__init__(_known(a) for a in eqn.inputs)
        self._eqn, self._read = eqn, read

    def _mark(self, positions) -> None:
        for k in positions:
            a = self._eqn.inputs[k]
            if not isinstance(a, Const):
                continue
            value: Any = a.value
            # an array (of any library); numbers and NumPy scalars cannot change in place
            mutable = hasattr(value, "shape") and not isinstance(value, np.generic)
            if mutable and id(value) not in self._read:
                self._read[id(value)] = (value, (
                    f"the values of a {value.dtype}{list(np.shape(value))} array read by "
                    f"the sparsity pattern of {self._eqn.prim.name} (at "
                    f"{self._eqn.source or 'a line'})"))

    def __getitem__(self, i):
        self._mark(range(len(self))[i] if isinstance(i, slice) else [range(len(self))[i]])
        return super().__getitem__(i)

    def __iter__(self):
        self._mark(range(len(self)))
        return super().__iter__()


class SparsityContext:
    """What a sparsity rule sees beside its operands' dependencies: ``n`` (the number of
    input entries), ``values`` (the operands' values where known while tracing: a
    :class:`ReadValues`) and :meth:`interact` to record second-order interactions (a no-op
    for Jacobian patterns). ``constants_read`` holds the constant arrays whose values the
    rules read (id -> (array, what)): the pattern holds while they keep their contents."""

    def __init__(self, n: int, hessian: bool):
        self.n = n
        self.hessian = hessian
        self.values: list = []
        self.constants_read: dict = {}
        self._terms: list = []

    def interact(self, a, b) -> None:
        """Every entry of row ``r`` of ``a`` interacts with every entry of row ``r`` of
        ``b`` (``a`` and ``b``: dependencies of aligned entries)."""
        if self.hessian and a is not None and b is not None:
            pairs = int(np.dot(np.diff(a.indptr), np.diff(b.indptr)))   # an upper bound
            S.check_count(pairs, "its second-order interactions")
            self._terms.append(S.ones_of(a.T @ b))

    def interact_through(self, a, pairs, b) -> None:
        """Entries of ``a``'s row ``r`` interact with those of ``b``'s row ``s`` where
        ``pairs[r, s]`` is nonzero."""
        if self.hessian and a is not None and b is not None:
            self._terms.append(S.ones_of(a.T @ (sp.csr_matrix(pairs) @ b)))

    def pattern(self) -> sp.csr_matrix:
        """The symmetric Hessian pattern recorded so far (n x n, boolean)."""
        total = sp.csr_matrix((self.n, self.n), dtype=np.float32)
        for t in self._terms:
            total = total + t
        total = total + total.T
        return _boolean(total)


def jacobian_pattern(graph: Graph, wrt: Sequence[int]) -> sp.csr_matrix:
    """The boolean pattern of the Jacobian of ``graph``'s single output with respect to its
    inputs ``wrt`` (flattened and stacked in order): output entries by input entries.

    Example::

        >>> f = lambda x: x[1:] * x[:-1]
        >>> jacobian_pattern(dg.trace(f, np.ones(4)), [0]).toarray().astype(int)
        array([[1, 1, 0, 0],
               [0, 1, 1, 0],
               [0, 0, 1, 1]])
    """
    return detect_pattern(graph, wrt, hessian=False)[0]


def detect_pattern(graph: Graph, wrt: Sequence[int], hessian: bool) -> tuple:
    """``(pattern, constants_read)``: :func:`hessian_pattern` (``hessian``) or
    :func:`jacobian_pattern`, and the constant arrays whose values the rules read, as
    ``[(array, what)]``: the pattern holds while they keep their contents."""
    if hessian:
        _check_scalar(graph)
    out, ctx = _propagate(graph, wrt, hessian)
    pattern = ctx.pattern() if hessian else _boolean(out)
    return pattern, list(ctx.constants_read.values())


def hessian_pattern(graph: Graph, wrt: Sequence[int]) -> sp.csr_matrix:
    """The boolean, symmetric pattern of the Hessian of ``graph``'s scalar output with
    respect to its inputs ``wrt`` (flattened and stacked in order).

    Example::

        >>> f = lambda x: np.sum(np.sin(x[1:] * x[:-1])) + np.sum(x)
        >>> hessian_pattern(dg.trace(f, np.ones(4)), [0]).toarray().astype(int)
        array([[1, 1, 0, 0],
               [1, 1, 1, 0],
               [0, 1, 1, 1],
               [0, 0, 1, 1]])
    """
    return detect_pattern(graph, wrt, hessian=True)[0]


def _check_scalar(graph: Graph) -> None:
    out_var = graph.outputs[0] if len(graph.outputs) == 1 else None
    if out_var is None or out_var.ndim != 0 and int(np.prod(out_var.shape)) != 1:
        shape = None if out_var is None else tuple(out_var.shape)
        raise NonScalarOutputError(
            f"hessian_sparsity of {graph.name}: the function must return one scalar, but it "
            f"returns {'several outputs' if out_var is None else f'shape {shape}'}; sum it "
            "or take the entry you need")


def _boolean(m) -> sp.csr_matrix:
    m = sp.csr_matrix(m)
    m.sum_duplicates()
    m.eliminate_zeros()
    return sp.csr_matrix((np.ones(len(m.data), dtype=bool), m.indices, m.indptr),
                         shape=m.shape)


def _propagate(graph: Graph, wrt: Sequence[int], hessian: bool):
    sizes = [int(np.prod(graph.inputs[i].shape, dtype=np.int64)) for i in wrt]
    n = sum(sizes)
    ctx = SparsityContext(n, hessian)
    deps: dict[int, sp.csr_matrix] = {}
    start = 0
    for i, size in zip(wrt, sizes):
        eye = sp.identity(n, dtype=np.float32, format="csr")[start:start + size]
        deps[graph.inputs[i].id] = eye
        start += size
    live = _live(graph)

    def rule(eqn, _, ins):
        if all(d is None for d in ins) or not any(v.id in live for v in eqn.outs):
            return None, [None] * len(eqn.outs)
        # integer values carry no derivative
        return None, [d if d is not None and v.dtype.kind in "fc" else None
                      for v, d in zip(eqn.outs, _apply(eqn, ins, ctx))]

    _, deps = walk(graph, None, deps, rule)  # the states alone: patterns, no values
    out = graph.outputs[0]
    out_dep = deps.get(out.id) if isinstance(out, Var) else None
    rows = int(np.prod(out.shape, dtype=np.int64))
    return (S.empty(rows, n) if out_dep is None else out_dep), ctx


def _live(graph: Graph) -> set[int]:
    """The ids of the values the output's derivatives depend on: not those read only by
    ops without a derivative (a comparison's operands, what ``fill_like`` reads), whose
    second-order interactions never reach the output."""
    live = {a.id for a in graph.outputs if isinstance(a, Var)}
    for eqn in reversed(graph.eqns):
        if any(v.id in live for v in eqn.outs) and rule_kind(eqn.prim) != "no derivative":
            live.update(a.id for a in eqn.inputs if isinstance(a, Var))
    return live


def _known(a):
    """An operand's value while tracing (a closed-over array or a scalar), else None."""
    if isinstance(a, Literal):
        return a.value
    if isinstance(a, Const):
        value = a.value
        backend = array_backend(value)
        return backend.to_host(value) if backend is not None else value
    return None


def rule_kind(prim) -> str | None:
    """How the interpreter finds an op's pattern: ``"own"`` (its sparsity rule),
    ``"no derivative"``, ``"selects"``, ``"elementwise"``, ``"reduction"``, ``"scan"`` (the
    rule of its flags) or None (refused).

    >>> from dualgpu.ops.shape import getitem, pad
    >>> rule_kind(getitem), rule_kind(pad), rule_kind(dg.REGISTRY["sin"])
    ('selects', 'own', 'elementwise')
    """
    if prim.rule("sparsity") is not None:
        return "own"
    if prim.has(Flag.IGNORES_VALUES) or not prim.differentiable:
        return "no derivative"
    for flag in (Flag.SELECTS, Flag.ELEMENTWISE, Flag.REDUCTION, Flag.SCAN):
        if prim.has(flag):
            return flag
    return None


def _apply(eqn: Eqn, deps: list, ctx: SparsityContext) -> list:
    """The dependencies of ``eqn``'s outputs: the op's own rule, else the rule of its
    flags."""
    prim = eqn.prim
    ctx.values = ReadValues(eqn, ctx.constants_read)
    try:
        return _rule_of_kind(eqn, deps, ctx, rule_kind(prim))
    except S.TooDense as e:
        raise DualgpuError(
            f"sparsity detection: {prim.name} (at {eqn.source or 'an unknown line'}): {e}; "
            "this derivative is too dense for a sparse matrix: use dg.jacobian or "
            "dg.hessian, or products (dg.hvp, dg.HessianOperator)") from None


def _rule_of_kind(eqn: Eqn, deps: list, ctx: SparsityContext, kind: str | None) -> list:
    prim = eqn.prim
    if kind == "own":
        result = prim.rule("sparsity")(eqn, deps, ctx)
        return list(result) if prim.multiple_results else [result]
    if kind == "no derivative":
        return [None] * len(eqn.outs)
    if kind == Flag.SELECTS:
        return [_selected(eqn, deps, ctx)]
    if kind == Flag.ELEMENTWISE:
        out_shape = tuple(eqn.outs[0].shape)
        rows = [S.aligned(d, a.shape, out_shape) for a, d in zip(eqn.inputs, deps)]
        dep = S.union(rows, ctx.n)
        if not prim.has(Flag.LINEAR):   # every pair of operands may interact
            ctx.interact(dep, dep)
        return [dep]
    if kind == Flag.REDUCTION:
        dep = S.combine(_reduction_groups(eqn), deps[0])
        if prim.monoid == "prod":       # max and min are piecewise linear
            ctx.interact(dep, dep)
        return [dep]
    if kind == Flag.SCAN:
        dep = S.combine(_prefix_matrix(tuple(eqn.inputs[0].shape), eqn.params["axis"]),
                        deps[0])
        if not prim.has(Flag.LINEAR):
            ctx.interact(dep, dep)
        return [dep]
    raise UnsupportedOpError(
        f"sparsity detection: {prim.name} (at {eqn.source or 'an unknown line'}) has no "
        "sparsity rule; give the pattern yourself (pattern= of dg.sparse_jacobian or "
        f"dg.sparse_hessian), or attach one with defrules({prim.name}, sparsity=rule) "
        "(dualgpu/rules/sparsity_rules.py)")


def _selected(eqn: Eqn, deps: list, ctx: SparsityContext):
    x = eqn.inputs[0]
    if deps[0] is None:
        return None
    index = S.selected_index(eqn, ctx.values, tuple(x.shape))
    rows = int(np.prod(eqn.outs[0].shape, dtype=np.int64))
    if index is None:   # index arrays computed from the input: any entry may be read
        return S.dense(deps[:1], rows, ctx.n)
    return S.gather(deps[0], index)


def _reduction_groups(eqn: Eqn) -> sp.csr_matrix:
    shape = tuple(eqn.inputs[0].shape)
    axes = eqn.params["axes"]
    kept = tuple(1 if k in axes else d for k, d in enumerate(shape))
    out_size = int(np.prod(kept, dtype=np.int64))
    groups = np.broadcast_to(np.arange(out_size, dtype=np.int64).reshape(kept), shape)
    return S.group_matrix(groups, out_size)


def _prefix_matrix(shape: tuple, axis: int) -> sp.csr_matrix:
    """Entry ``k`` along ``axis`` reads entries ``0..k`` of its line."""
    length = shape[axis]
    size = int(np.prod(shape, dtype=np.int64))
    index = np.arange(size, dtype=np.int64).reshape(shape)
    lines = np.moveaxis(index, axis, -1).reshape(-1, length)   # (lines, length)
    S.check_count(lines.shape[0] * length * (length + 1) // 2, "the pattern of a cumulative op")
    to, frm = np.tril_indices(length)
    rows = lines[:, to].ravel()
    cols = lines[:, frm].ravel()
    return sp.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)),
                         shape=(size, size))
