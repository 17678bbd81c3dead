"""Forward biharmonic: ``biharmonic_graph(g, wrt)`` maps the inputs to ``Δ²`` of every
output, propagated forward in one pass (the fourth-order sibling of the forward Laplacian in
:mod:`dualgpu.transforms.laplacian`).

Every value ``y`` that depends on the ``D`` differentiated coordinates carries five parts,
each summed over coordinates as early as the operator allows (collapsed):

* ``J[i] = ∂_i y`` (a leading axis of ``D``);
* ``A[p] = ∂_i ∂_j y`` for the ``P = D(D+1)/2`` pairs ``p = (i <= j)`` only: the Hessian is
  symmetric, so half of it is never computed;
* ``L = Σ_i ∂_i² y`` (the Laplacian);
* ``T[j] = ∂_j L`` (a leading axis of ``D``);
* ``B = Δ² y = Σ_ij ∂_i² ∂_j² y`` (the result).

Nesting two forward Laplacians (``laplacian(laplacian(u))``) carries ``(D + 1)(D + 2)``
arrays per value — the outer Jacobian of the inner one is the whole Hessian, both halves,
and the outer pass recomputes the inner ``J`` and ``L``; this pass carries
``3 + 2D + D(D+1)/2`` (28 against 42 at ``D = 5``, 78 against 132 at ``D = 10``), so the
products of a network's layers, which dominate, do ~1.5-1.7x less work.

Rules (the chain rule to fourth order, with ``Q = Σ_i J_i²``, ``G_j = Σ_i J_i A_ij``):

* unary (one differentiated operand of an elementwise op with ``partials``; its derivatives
  ``f1 .. f4`` by differentiating the first partial again, as the forward Laplacian does,
  once per op, parameters and operand dtypes in a build, evaluated at each site):
  ``J' = f1 J``, ``A' = f1 A + f2 J_i J_j``, ``L' = f1 L + f2 Q``,
  ``T' = f1 T + f2 (J L + 2 G) + f3 J Q``,
  ``B' = f1 B + f2 (4 Σ J T + L² + 2 Σ A²) + f3 (2 Q L + 4 Σ J G) + f4 Q²``;
* ``Flag.LINEAR`` ops, and a product (``multiply``, ``matmul``, ``einsum``, ``spmm``,
  ``sddmm``) with one differentiated operand: the op applied to every part;
* a product of two differentiated operands ``op(a, b)``: the Leibniz rule to fourth order
  (``B' = op(B_a, b) + op(a, B_b) + 2 op(L_a, L_b) + 4 Σ op(T_a, J_b) + 4 Σ op(J_a, T_b)
  + 4 Σ_ij op(A_a, A_b)``, the others alike).

Any other op raises :class:`NoForwardRule`; ``dg.biharmonic`` then nests forward Laplacians,
which go through every op.

Example::

    >>> g = dg.trace(lambda x: np.sum(x ** 4), np.ones(2))
    >>> bih = biharmonic_graph(g, [True])
    >>> [float(v) for v in eval_graph(bih, [np.array([1.0, 2.0])])]   # 24 per coordinate
    [48.0]
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import lax
from ..core.flags import Flag
from ..core.interpret import eval_graph, propagate_states
from ..core.ir import Aval, Graph, Var
from ..core.trace import Tracer, trace_to_graph
from ..errors import DualgpuError
from ..frontend import numpy as dnp
from ..rules.laplacian_rules import Mode, bind_all, fit, is_zero, lift
from ._gc import collector_paused
from .interpreter import (
    batch_axes_of,
    coordinate_layout,
    derived_key,
    forward_tangents,
    forward_values_and_tangents,
    seed_coordinates,
    sub_trace,
)
from .simplify import simplify
from .vmap import rule_for

__all__ = ["biharmonic_graph", "NoForwardRule", "state_sizes"]

PARTS = ("J", "A", "L", "T", "B")


class NoForwardRule(DualgpuError):
    """An op the forward biharmonic has no rule for (``dg.biharmonic`` falls back to
    nested forward Laplacians)."""


def state_sizes(D: int) -> dict:
    """Arrays carried per value: this pass against two nested forward Laplacians.

    Example::

        >>> state_sizes(10)
        {'forward': 78, 'nested': 132}
    """
    return {"forward": 3 + 2 * D + D * (D + 1) // 2, "nested": (D + 1) * (D + 2)}


class _Pairs:
    """The coordinate pairs ``p = (i <= j)`` and the maps between pairs and the full
    ``D x D`` square (constants of the program)."""

    def __init__(self, D: int, dtype):
        iu, ju = np.triu_indices(D)
        self.D, self.P = D, len(iu)
        self.i, self.j = iu.astype(np.int64), ju.astype(np.int64)
        index = np.zeros((D, D), dtype=np.int64)
        index[iu, ju] = np.arange(self.P)
        index[ju, iu] = np.arange(self.P)
        self.full = index.ravel()                      # (D*D,): the pair of each (i, j)
        # the pairs in blocks: block i holds (i, i), (i, i+1), ..., (i, D-1) from offset[i]
        self.offset = [int(i * D - i * (i - 1) // 2) for i in range(D + 1)]
        self.rows = np.repeat(np.arange(D), D)         # (D*D,): i of each (i, j)
        self.weight = np.where(iu == ju, 1.0, 2.0).astype(dtype)   # Σ_ij over pairs
        self.mode = Mode(False, D, rule_for)


# ------------------------------------------------------------------------------ helpers
def _add(*xs):
    out = None
    for x in xs:
        if x is None:
            continue
        out = x if out is None else lax.add(out, x)
    return out


def _mul(*xs):
    if any(x is None for x in xs):
        return None
    out = xs[0]
    for x in xs[1:]:
        out = lax.multiply(out, x)
    return out


def _scaled(c, x):
    if x is None:
        return None
    if isinstance(c, (int, float)) and not isinstance(c, bool) and c == 1:
        return x
    return lax.multiply(c, x)


def _lead(x, r):
    """A part with a leading axis lifted to per-element rank ``r``."""
    return None if x is None else lift(x, r)


def _take(x, idx):
    return dnp.take(x, idx, axis=0)


def _weighted_sum(w, x):
    """``Σ_p w_p x[p]`` over the leading axis."""
    wl = w.reshape((-1,) + (1,) * (x.ndim - 1)).astype(x.dtype)
    return dnp.sum(lax.multiply(wl, x), axis=0)


def _G(pairs: _Pairs, J, A):
    """``G_j = Σ_i J_i A_ij``: ``(D, *s)``, read from slices of the pair blocks (views
    the fused kernels read in place): ``A_ij`` for ``i <= j`` is row ``j - i`` of block
    ``i``, and ``Σ_{i>j} J_i A_ji`` is block ``j`` past its first row against ``J[j+1:]``."""
    if J is None or A is None:
        return None
    D, off = pairs.D, pairs.offset
    rows = []
    for j in range(D):
        terms = [lax.multiply(J[i:i + 1], A[off[i] + j - i:off[i] + j - i + 1])
                 for i in range(j + 1)]
        if j + 1 < D:
            terms.append(dnp.sum(lax.multiply(J[j + 1:], A[off[j] + 1:off[j + 1]]), axis=0,
                                 keepdims=True))
        rows.append(_add(*terms))
    return dnp.concatenate(rows, axis=0)


def _pair_blocks(pairs: _Pairs, J, each):
    """``concat_i each(i, J[i:i+1] * J[i:])``: a value per pair, block by block, from
    slices of ``J`` (no gathered copies)."""
    return dnp.concatenate([each(i, lax.multiply(J[i:i + 1], J[i:]))
                            for i in range(pairs.D)], axis=0)


def _dot(x, y):
    """``Σ_k x_k y_k`` over the leading axis."""
    if x is None or y is None:
        return None
    return dnp.sum(lax.multiply(x, y), axis=0)


# ------------------------------------------------------------------------------ rules
def _derivatives(towers: dict, eqn, values, k: int) -> list:
    """``[f1, f2, f3, f4]``: the derivatives of ``eqn``'s op in operand ``k`` (the others
    fixed), recorded in the current trace; ``None`` for a symbolic zero. Their graph
    (:func:`_tower`) is derived once per op, parameters, operand dtypes and ``k`` in a build
    (``towers``), at shape ``()`` when it is elementwise throughout, and evaluated here."""
    graph, count = _cached_tower(towers, eqn, values, k)
    out = eval_graph(graph, [v for v in values if isinstance(v, Tracer)])
    if count == 0 or is_zero(out[0]):
        return [None if is_zero(out[0]) else out[0], None, None, None]
    return out + [None] * (4 - len(out))


def _cached_tower(towers: dict, eqn, values, k: int) -> tuple[Graph, int]:
    """:func:`_tower` of ``eqn`` in operand ``k``, from ``towers`` or derived into it: at
    shape ``()`` (keyed without shapes) unless it is not :func:`_shape_free` (then keyed
    by shape) or an array operand is closed over (then derived here, not kept)."""
    free = derived_key("biharmonic tower", eqn, values, k, shapes=False)
    if free is not None:
        if free not in towers:
            tower = _tower(eqn, values, k, scalar=True)
            towers[free] = tower if _shape_free(tower[0]) else None
        if towers[free] is not None:
            return towers[free]
    key = derived_key("biharmonic tower", eqn, values, k)
    if key is None:
        return _tower(eqn, values, k, scalar=False)
    if key not in towers:
        towers[key] = _tower(eqn, values, k, scalar=False)
    return towers[key]


def _tower(eqn, values, k: int, scalar: bool) -> tuple[Graph, int]:
    """A graph from the traced operands to ``[f1 .. fm]`` (``m <= 4``: ``f(m+1)`` is a
    symbolic zero), each the forward derivative of the previous one (simplified at every
    order), and ``m`` (0: ``f1`` is a constant); traced at shape ``()`` with ``scalar``."""
    prim, params = eqn.prim, eqn.params
    pos = [i for i, v in enumerate(values) if isinstance(v, Tracer)]
    at = pos.index(k)
    avals = [Aval((), values[i].dtype, values[i].aval.weak) if scalar else values[i].aval
             for i in pos]
    xp = values[k]._builder.xp

    def operands(xs):
        full = list(values)
        for i, x in zip(pos, xs):
            full[i] = x
        return full

    def first(*xs):
        full = operands(xs)
        return [prim.partials[k](*full, prim.bind(*full, **params))]

    graph = simplify(trace_to_graph(first, avals, xp, name="d")[0])
    count = 1 if isinstance(graph.outputs[0], Var) else 0
    while 0 < count < 4:
        def next_order(*xs, g=graph):
            unit: list = [None] * len(xs)
            unit[at] = dnp.ones_like(xs[at])
            fs, ts = forward_values_and_tangents(g, list(xs), unit)
            return fs + ([] if ts[-1] is None else [ts[-1]])

        nxt = simplify(trace_to_graph(next_order, avals, xp, name="d")[0])
        if len(nxt.outputs) == count:
            break   # the next derivative is a symbolic zero
        graph, count = nxt, count + 1
        if not isinstance(graph.outputs[-1], Var):
            break   # a constant: the last one not zero
    return graph, count


def _shape_free(graph: Graph) -> bool:
    """Whether ``graph`` computes the same elementwise at any shape of its inputs: only
    elementwise ops that are not views (a broadcast names its shape), scalar constants."""
    return all(e.prim.has(Flag.ELEMENTWISE) and not e.prim.has(Flag.VIEW)
               for e in graph.eqns) and all(c.aval.ndim == 0 for c in graph.consts)


def _sum_of_scaled(eqn, values, states, active, y):
    """An elementwise op whose first partials in the differentiated operands are constant
    in them (``add``, ``subtract``, a sum weighted by fixed values): every part is
    ``Σ_i f_i part_i``; None unless every second partial is a symbolic zero."""
    prim, params = eqn.prim, eqn.params

    def first(*xs):
        ans = prim.bind(*xs, **params)
        return [prim.partials[i](*xs, ans) for i in active]

    graph, pos = sub_trace(lambda full, _: first(*full), values)
    traced = [values[i] for i in pos]
    for j in active:
        unit = [None] * len(traced)
        unit[pos.index(j)] = dnp.ones_like(values[j])
        if any(t is not None for t in forward_tangents(graph, traced, unit)):
            return None
    f = eval_graph(graph, traced)
    r = y.ndim
    out = []
    for slot in range(5):
        lead = slot in (0, 1, 3)
        terms = [None if states[i][slot] is None else
                 _scaled(fi, _lead(states[i][slot], r) if lead else states[i][slot])
                 for fi, i in zip(f, active) if not is_zero(fi)]
        out.append(_add(*terms))
    return tuple(out)


def _unary(pairs: _Pairs, towers: dict, eqn, values, states, k: int, y):
    J, A, L, T, B = states[k]
    f1, f2, f3, f4 = _derivatives(towers, eqn, values, k)
    r = y.ndim
    Jl, Al, Tl = _lead(J, r), _lead(A, r), _lead(T, r)
    Q = _dot(J, J)
    G = _G(pairs, J, A)
    Jy = _mul(f1, Jl)
    off = pairs.offset
    if f2 is None:
        Ay = _mul(f1, Al)
    else:   # f1 A + f2 J_i J_j, block by block
        Ay = _pair_blocks(pairs, Jl, lambda i, jj: _add(
            _mul(f1, None if Al is None else Al[off[i]:off[i + 1]]), _mul(f2, jj)))
    Ly = _add(_mul(f1, L), _mul(f2, Q))
    Ty = _add(_mul(f1, Tl),
              _mul(f2, _add(_mul(Jl, L), _scaled(2, _lead(G, r)))),
              _mul(f3, Jl, Q))
    S2 = None if A is None else _weighted_sum(pairs.weight, lax.multiply(A, A))
    By = _add(_mul(f1, B),
              _mul(f2, _add(_scaled(4, _dot(J, T)), _mul(L, L), _scaled(2, S2))),
              _mul(f3, _add(_scaled(2, _mul(Q, L)), _scaled(4, _dot(J, G)))),
              _mul(f4, Q, Q))
    return (Jy, Ay, Ly, Ty, By)


def _linear(pairs: _Pairs, eqn, values, states, zero_others: bool):
    """An op linear in its differentiated operands (jointly: ``zero_others`` puts zeros in
    the other floating operands, for ``Flag.LINEAR`` ops; else they stay fixed, for a
    product with one differentiated operand): the op applied to every part."""
    floating = [i for i, v in enumerate(values) if getattr(v, "dtype", None) is not None
                and np.dtype(v.dtype).kind in "fc"]
    active = [i for i in floating if states[i] is not None]
    result = [[None] * 5 for _ in eqn.outs]
    for slot, name in enumerate(PARTS):
        size = {"J": pairs.D, "A": pairs.P, "T": pairs.D}.get(name)
        parts = {i: states[i][slot] for i in active if states[i][slot] is not None}
        if not parts:
            continue
        args, flags = list(values), [False] * len(values)
        for i in floating:
            if i in parts:
                args[i], flags[i] = parts[i], size is not None
            elif zero_others:
                args[i] = dnp.zeros_like(values[i])
        outs = bind_all(eqn, args) if size is None else \
            pairs.mode.batched(eqn, args, flags, size=size)
        for o, out in enumerate(outs):
            result[o][slot] = out
    return [tuple(r) for r in result]


def _bilinear(pairs: _Pairs, eqn, values, states, a: int, b: int):
    """``op(a, b)`` with both operands differentiated: Leibniz to fourth order."""
    D, P = pairs.D, pairs.P
    Ja, Aa, La, Ta, Ba = states[a]
    Jb, Ab, Lb, Tb, Bb = states[b]

    def op(xa, xb, size=None, reduce=False, lead=(True, True)):
        """op(xa, xb); with ``size``, batched over a leading axis of that size in the
        operands ``lead`` says lead with it; summed over that axis with ``reduce``."""
        if xa is None or xb is None:
            return None
        args, flags = list(values), [False] * len(values)
        args[a], args[b] = xa, xb
        if size is None:
            out = bind_all(eqn, args)[0]
        else:
            flags[a], flags[b] = lead
            out = pairs.mode.batched(eqn, args, flags, size=size)[0]
        return dnp.sum(out, axis=0) if reduce else out

    A_, B_ = (True, False), (False, True)     # only a leads, only b leads
    va, vb = values[a], values[b]
    Jy = _add(op(Ja, vb, D, lead=A_), op(va, Jb, D, lead=B_))
    Ay = _add(op(Aa, vb, P, lead=A_), op(va, Ab, P, lead=B_),
              op(_take(Ja, pairs.i), _take(Jb, pairs.j), P),
              op(_take(Ja, pairs.j), _take(Jb, pairs.i), P))
    Ly = _add(op(La, vb), op(va, Lb), _scaled(2, op(Ja, Jb, D, reduce=True)))

    def cross_sum(X_full_pairs, Y, X_first: bool):
        """``Σ_i op(X_ij, Y_i)`` (or ``op(Y_i, X_ij)``) for every ``j``: ``(D, *s)``."""
        if X_full_pairs is None or Y is None:
            return None
        Xf = _take(X_full_pairs, pairs.full)          # (D*D, ...), row i*D + j
        Yr = _take(Y, pairs.rows)                      # Y_i at row i*D + j
        out = op(Xf, Yr, D * D) if X_first else op(Yr, Xf, D * D)
        out = dnp.reshape(out, (D, D) + tuple(out.shape[1:]))
        return dnp.sum(out, axis=0)

    Ty = _add(op(Ta, vb, D, lead=A_), op(va, Tb, D, lead=B_),
              op(La, Jb, D, lead=B_), op(Ja, Lb, D, lead=A_),
              _scaled(2, _add(cross_sum(Aa, Jb, True), cross_sum(Ab, Ja, False))))
    AA = op(Aa, Ab, P)
    By = _add(op(Ba, vb), op(va, Bb), _scaled(2, op(La, Lb)),
              _scaled(4, op(Ta, Jb, D, reduce=True)), _scaled(4, op(Ja, Tb, D, reduce=True)),
              None if AA is None else _scaled(4, _weighted_sum(pairs.weight, AA)))
    return [(Jy, Ay, Ly, Ty, By)]


def _rule(pairs: _Pairs, towers: dict, eqn, values, states) -> list:
    """The states of ``eqn``'s outputs (None: not dependent)."""
    prim = eqn.prim
    if not prim.differentiable or all(s is None for s in states):
        return [None] * len(eqn.outs)
    active = [i for i, s in enumerate(states) if s is not None]
    if any(np.dtype(values[i].dtype).kind == "c" for i in active) or \
            any(v.dtype.kind == "c" for v in eqn.outs):
        raise NoForwardRule(f"{prim.name} on complex values")
    if prim.has(Flag.LINEAR):
        return _linear(pairs, eqn, values, states, zero_others=True)
    if prim.has(Flag.MULTILINEAR):
        if len(active) == 1:
            return _linear(pairs, eqn, values, states, zero_others=False)
        if len(active) == 2:
            return _bilinear(pairs, eqn, values, states, *active)
        raise NoForwardRule(f"{prim.name} of {len(active)} differentiated operands")
    if prim.partials is not None and prim.kind == "elementwise" and len(eqn.outs) == 1:
        y = prim.bind(*values, **eqn.params)
        if len(active) == 1:
            return [_unary(pairs, towers, eqn, values, states, active[0], y)]
        state = _sum_of_scaled(eqn, values, states, active, y)
        if state is not None:
            return [state]
    raise NoForwardRule(f"{prim.name}")


def _fitted(state, y):
    """Each part broadcast to its full shape (a leading axis for J, A, T) and dtype."""
    if state is None or all(p is None for p in state):
        return None
    shape, dtype = tuple(y.shape), y.dtype
    if dtype.kind != "f":
        return None
    J, A, L, T, B = state
    lead = {0: J, 1: A, 3: T}
    out = list(state)
    for slot, x in lead.items():
        if x is not None:
            out[slot] = fit(x, (x.shape[0],) + shape, dtype)
    for slot in (2, 4):
        if out[slot] is not None:
            out[slot] = fit(out[slot], shape, dtype)
    return tuple(out)


# ------------------------------------------------------------------------------ the graph
@collector_paused()
def biharmonic_graph(graph: Graph, wrt: Sequence[bool] | None = None, *,
                     batch_axes: Sequence[int] | None = None) -> Graph:
    """A graph computing ``Δ²`` of every output (shaped like it) from the inputs, over the
    coordinates of the inputs flagged in ``wrt`` (per instance with ``batch_axes``, which
    the caller has checked separable). Raises :class:`NoForwardRule` for a program with an
    op this pass has no rule for."""
    if wrt is None:
        wrt = [v.dtype.kind == "f" for v in graph.inputs]
    for v, w in zip(graph.inputs, wrt):
        if w and v.dtype.kind != "f":
            raise DualgpuError(f"biharmonic: a differentiated input has dtype {v.dtype}; "
                               "only real floating-point inputs")
    layout, D = coordinate_layout(graph, wrt, batch_axes)
    dtype = np.result_type(*[graph.inputs[k].dtype for k, _, _ in layout]) if layout \
        else np.dtype(np.float64)
    pairs = _Pairs(max(D, 1), dtype)
    avals = [v.aval for v in graph.inputs]
    towers: dict = {}    # the derivatives of unary ops (_derivatives), once per build

    def rule(eqn, values, states):
        outs = bind_all(eqn, values)
        return outs, [_fitted(s, o) for o, s in
                      zip(outs, _rule(pairs, towers, eqn, values, states))]

    def run(*args):
        seeds = {}
        for k, inst, off in layout:
            v = graph.inputs[k]
            J = seed_coordinates(args[k], inst, off, D, batch_axes_of(v, batch_axes))
            seeds[v.id] = (J, None, None, None, None)
        outs, states = propagate_states(graph, args, seeds, rule)
        return [fit(s[4], tuple(np.shape(o)), o.dtype) if s is not None and s[4] is not None
                else dnp.zeros_like(o) for o, s in zip(outs, states)]

    new, _ = trace_to_graph(run, avals, graph.xp, name=f"bih_{graph.name}",
                            input_names=graph.input_names)
    return simplify(new)
