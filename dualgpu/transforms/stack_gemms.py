"""GEMM stacking: fewer, larger matrix products, never more flops.

Two rewrites of 2-D ``matmul`` equations (issue 12, item 4):

* **sums of products** -- ``A @ B + C @ D``, where each product is used only by the add,
  becomes ``concat([A, C], axis=1) @ concat([B, D], axis=0)``: one GEMM over ``K1 + K2``
  and no add. Chains of adds of products fold into one GEMM, pair by pair.
* **shared operands** -- products with the same left operand, ``A @ B`` and ``A @ D``,
  become ``A @ concat([B, D], axis=1)`` followed by column slices (``X·[W | V]``); products
  with the same right operand become ``concat([A, C], axis=0) @ B`` and row slices
  (``[h; ḣ]·W2``). Only when every operand exists before the first of the products.

A concatenation of transposes is built as the transpose of a concatenation, so that it stays
a view that a GEMM reads through its transpose flag. The result is exactly the unstacked
program up to float rounding (the sums run in another order inside the GEMM).

A pattern pass names the ops of its patterns: it matches ``matmul`` and ``add`` (and sees
through a 2-D ``transpose``) in the predicates at the top of the module, the one place that
asks which op an equation applies, and builds ``concatenate``, ``matmul``, ``transpose`` and
``getitem`` slices in :class:`_Builder`.

Example::

    >>> f = lambda x, w, v: np.sum(np.tanh(x @ w) * (x @ v))
    >>> x, w = np.ones((4, 3)), np.ones((3, 2))
    >>> g = stack_gemms(dg.trace(f, x, w, w))
    >>> [e.prim.name for e in g.eqns][:4]
    ['concatenate', 'matmul', 'getitem', 'getitem']
"""
from __future__ import annotations

from typing import cast

from ..core.ir import Aval, Eqn, Graph, Literal, Var
from ..ops.elementwise import add
from ..ops.products import matmul
from ..ops.shape import concatenate, getitem, transpose
from .simplify import cse, dce, replace_uses


# ------------------------------------------------------------------ the patterns' ops
def _is_gemm(eqn) -> bool:
    """A float matmul of two 2-D variables, all of one dtype."""
    if eqn.prim is not matmul or len(eqn.inputs) != 2:
        return False
    a, b = eqn.inputs
    out = eqn.outs[0]
    return (not isinstance(a, Literal) and not isinstance(b, Literal)
            and a.ndim == 2 and b.ndim == 2 and out.dtype.kind == "f"
            and a.dtype == b.dtype == out.dtype)


def _is_sum(eqn) -> bool:
    """An add of two operands."""
    return eqn.prim is add and len(eqn.inputs) == 2


def _is_matrix_transpose(eqn) -> bool:
    """The transpose of a matrix."""
    return eqn.prim is transpose and eqn.params["perm"] == (1, 0)


class _Builder:
    """New equations for one rewrite, with the producers of the graph's variables (to see
    through transposes)."""

    def __init__(self, producers: dict, source):
        self.eqns: list = []
        self.producers = producers
        self.source = source

    def emit(self, prim, inputs, params, aval, out=None) -> Var:
        out = out if out is not None else Var(aval)
        self.eqns.append(Eqn(prim, list(inputs), params, [out], self.source))
        self.producers[out.id] = self.eqns[-1]
        return out

    def _untransposed(self, v):
        eqn = self.producers.get(v.id)
        if eqn is not None and _is_matrix_transpose(eqn):
            return eqn.inputs[0]
        return None

    def concat(self, parts: list, axis: int) -> Var:
        """``concatenate(parts, axis)`` of 2-D parts; of transposes: a transposed concat."""
        inner = [self._untransposed(p) for p in parts]
        if all(isinstance(p, Var) for p in inner):
            return self.transposed(self.concat(inner, 1 - axis))
        shape = list(parts[0].shape)
        shape[axis] = sum(p.shape[axis] for p in parts)
        return self.emit(concatenate, parts, {"axis": axis},
                         Aval(tuple(shape), parts[0].dtype))

    def transposed(self, v) -> Var:
        return self.emit(transpose, [v], {"perm": (1, 0)},
                         Aval((v.shape[1], v.shape[0]), v.dtype))

    def product(self, a, b, out=None) -> Var:
        return self.emit(matmul, [a, b], {}, Aval((a.shape[0], b.shape[1]), a.dtype),
                         out)

    def pieces(self, whole, outs: list, axis: int) -> None:
        """Slice ``whole`` along ``axis`` into the existing variables ``outs``."""
        start = 0
        for out in outs:
            stop = start + out.shape[axis]
            entry = ("slice", start or None, stop, None)
            key = (entry,) if axis == 0 else (("slice", None, None, None), entry)
            self.emit(getitem, [whole], {"key": key}, out.aval, out)
            start = stop


def _use_counts(graph: Graph) -> dict:
    uses: dict[int, int] = {}
    for eqn in graph.eqns:
        for a in eqn.inputs:
            if isinstance(a, Var):
                uses[a.id] = uses.get(a.id, 0) + 1
    for a in graph.outputs:
        if isinstance(a, Var):
            uses[a.id] = uses.get(a.id, 0) + 1
    return uses


def stack_sums(graph: Graph) -> Graph:
    """``A @ B + C @ D`` -> ``[A | C] @ [B ; D]`` where both products feed only the add."""
    uses = _use_counts(graph)
    producers: dict = {}
    gemms: dict = {}  # var id -> (left, right) of a product, rewritten ones included
    eqns, changed = [], False
    for eqn in graph.eqns:
        for v in eqn.outs:
            producers[v.id] = eqn
        if _is_gemm(eqn):
            gemms[eqn.outs[0].id] = tuple(eqn.inputs)
        pair = _summed_products(eqn, gemms, uses)
        if pair is None:
            eqns.append(eqn)
            continue
        (a, b), (c, d) = pair
        build = _Builder(producers, eqn.source)
        out = build.product(build.concat([a, c], 1), build.concat([b, d], 0), eqn.outs[0])
        gemms[out.id] = tuple(build.eqns[-1].inputs)
        eqns.extend(build.eqns)
        changed = True
    return dce(replace_uses(graph, eqns, graph.outputs)) if changed else graph


def _summed_products(eqn, gemms: dict, uses: dict):
    """The two ``(left, right)`` pairs when ``eqn`` adds two products of its own shape, each
    used once (by this add), else None."""
    if not _is_sum(eqn):
        return None
    x, y = eqn.inputs
    out = eqn.outs[0]
    if not (isinstance(x, Var) and isinstance(y, Var)) or x.id == y.id:
        return None
    if x.id not in gemms or y.id not in gemms:
        return None
    if uses.get(x.id) != 1 or uses.get(y.id) != 1:
        return None
    if tuple(x.shape) != tuple(out.shape) or tuple(y.shape) != tuple(out.shape) \
            or x.dtype != y.dtype or out.dtype != x.dtype:
        return None
    return gemms[x.id], gemms[y.id]


LARGE_PRODUCT = 1 << 26   # multiply-adds from which a product is a GEMM worth widening


def stack_shared(graph: Graph, large_only: bool = False) -> Graph:
    """Products sharing their left (then their right) operand -> one product and slices.
    ``large_only``: only where every product is large (``LARGE_PRODUCT`` multiply-adds) and
    the concatenated operands are each at most a quarter of the shared one: ``X @ [W1 | V1]``
    concatenates two weight matrices, never activations."""
    graph = _stack_shared_side(graph, 0, large_only)
    return _stack_shared_side(graph, 1, large_only)


def _large_with_small_others(eqns: list, members: list[int], side: int) -> bool:
    shared = eqns[members[0]].inputs[side]
    for i in members:
        a, b = eqns[i].inputs
        other = eqns[i].inputs[1 - side]
        if a.shape[0] * a.shape[1] * b.shape[1] < LARGE_PRODUCT \
                or 4 * other.shape[0] * other.shape[1] > shared.shape[0] * shared.shape[1]:
            return False
    return True


def _stack_shared_side(graph: Graph, side: int, large_only: bool = False) -> Graph:
    defined = {}  # var id -> index of the equation that makes it (inputs: absent)
    groups: dict[int, list[int]] = {}
    for i, eqn in enumerate(graph.eqns):
        for v in eqn.outs:
            defined[v.id] = i
        if _is_gemm(eqn):
            shared = cast(Var, eqn.inputs[side])  # a product's operands are arrays, not scalars
            groups.setdefault(shared.id, []).append(i)
    plans = {}  # index of the first product of a group -> the group's indices
    for members in groups.values():
        members = _ready(graph.eqns, members, defined)
        if len(members) > 1 and (not large_only
                                 or _large_with_small_others(graph.eqns, members, side)):
            plans[members[0]] = members
    if not plans:
        return graph
    dropped = {i for members in plans.values() for i in members[1:]}
    producers = {v.id: e for e in graph.eqns for v in e.outs}
    eqns = []
    for i, eqn in enumerate(graph.eqns):
        if i in plans:
            eqns.extend(_stacked(graph.eqns, plans[i], side, producers))
        elif i not in dropped:
            eqns.append(eqn)
    return replace_uses(graph, eqns, graph.outputs)


def _ready(eqns: list, members: list[int], defined: dict) -> list[int]:
    """The products of a group whose operands all exist before the group's first product
    (in order, starting with the first, with no product repeated)."""
    first = members[0]
    ready, seen = [first], {(eqns[first].inputs[0].id, eqns[first].inputs[1].id)}
    for i in members[1:]:
        a, b = eqns[i].inputs
        if defined.get(a.id, -1) < first and defined.get(b.id, -1) < first:
            key = (a.id, b.id)
            if key not in seen:  # an exact repeat is CSE's job
                seen.add(key)
                ready.append(i)
    return ready


def _stacked(eqns: list, members: list[int], side: int, producers: dict) -> list:
    build = _Builder(producers, eqns[members[0]].source)
    shared = eqns[members[0]].inputs[side]
    others = [eqns[i].inputs[1 - side] for i in members]
    outs = [eqns[i].outs[0] for i in members]
    if side == 0:  # A @ [B | D]
        whole = build.product(shared, build.concat(others, 1))
        build.pieces(whole, outs, 1)
    else:  # [A ; C] @ B
        whole = build.product(build.concat(others, 0), shared)
        build.pieces(whole, outs, 0)
    return build.eqns


def stack_gemms(graph: Graph, large_only: bool = False) -> Graph:
    """Sums of products first (they remove an add each), then shared operands; CSE merges
    the concatenations that two rewrites build alike, DCE drops what was replaced.
    ``large_only``: only large products sharing an operand, the others concatenated being
    small (:func:`stack_shared`); no sums."""
    stacked = stack_shared(graph, True) if large_only else stack_shared(stack_sums(graph))
    if stacked is graph:
        return graph
    return dce(cse(stacked))
