"""Taylor mode: univariate Taylor coefficients of any order ``K`` propagated forward through
a graph (``jet_graph``), and the collapsed form ``operator_graph``: a weighted sum over
``R`` directions of the ``K``-th derivatives along them, with the top coefficient summed at
every step (docs/taylor.md).

Every value ``y`` that depends on the differentiated inputs carries its *series*
``[c_1, ..., c_K]``, the normalized Taylor coefficients of ``y(x(t))`` (``c_k = y_k / k!``,
:mod:`dualgpu.rules.taylor_rules`), each with a leading axis of ``R`` directions when several
curves are propagated together; ``None`` is a symbolic zero.

Rules, chosen by what the registry says of an op (first match wins, :func:`rule_kind`):

* the op's own rule (``defrules(prim, taylor=...)`` beside its derivatives): the products
  (multiply, matmul, einsum, spmm, sddmm: Leibniz sums of the op applied to coefficient
  pairs), the ODE recurrences of exp, expm1, log, log1p, sqrt, reciprocal, divide, sin,
  cos, sinh, cosh, tan, tanh and logistic (O(K**2) products per value), power, where, max/min
  reductions, the casts and complex parts, pad, stop_gradient, polygamma;
* ``Flag.LINEAR`` ops: the op applied to each coefficient (through the vmap rules when
  the coefficients carry directions);
* elementwise ops with ``partials``: Faà di Bruno over the operands, ``y_k = sum_alpha
  d^alpha f / alpha! [prod_i (x_i - x_i0)**alpha_i]_k``, with the higher partial derivatives
  obtained by differentiating the declared partials again (forward, as the Laplacian's
  second partials), a symbolic zero ending a branch (``add``'s constant partials give a
  linear rule);
* everything else (sorts, decompositions, selections, custom ops, complex operands of
  elementwise ops): :func:`fallback_rule`, the ``K`` derivatives of
  ``t -> op(x_0 + c_1 t + c_2 t**2 + ...)`` at ``t = 0`` by nested JVPs of the op -- exact,
  but a larger graph.

The collapse (``operator_graph``): the top coefficient is affine in the inputs' top
coefficients, ``y_K = f'(x_0)[x_K] + P_K(x_0; x_1..x_(K-1))``, so its weighted sum over the
directions is ``f'(x_0)[sum_r w_r x_K,r] + sum_r w_r P_K,r``: each op computes ``P_K`` per
direction with the top coefficients of its operands set to zero (the same rule), sums it
with the weights at once, and adds the op's JVP of the operands' summed tops. Only
coefficients ``1..K-1`` travel per direction.

Example::

    >>> g = dg.trace(lambda x: np.exp(x), np.ones(()))
    >>> x, c1, c2 = np.array(0.0), np.array(1.0), np.array(0.0)
    >>> [float(v) for v in eval_graph(jet_graph(g, [True], 3), [x, c1, c2, c2])]
    [1.0, 1.0, 1.0, 1.0]
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .. import lax
from ..core.interpret import eval_graph, propagate_states
from ..core.ir import Aval, Graph, Var
from ..core.trace import Tracer, trace_to_graph
from ..errors import DualgpuError
from ..rules.common import add_any
from ..rules.taylor_rules import Mode, bind_all, cauchy, finish, lifted
from ._gc import collector_paused
from .interpreter import derived_key, forward_tangents, sub_trace
from .jvp import jvp_graph, jvp_rule
from .laplacian import rule_kind as laplacian_rule_kind
from .simplify import simplify
from .vmap import batch_graph, rule_for

__all__ = ["jet_graph", "operator_graph", "rule_kind", "taylor_rule"]


def rule_kind(prim, values=None) -> str:
    """Which rule propagates series through ``prim``: ``"own"`` (its ``taylor`` rule),
    ``"linear"``, ``"partials"`` or ``"fallback"``; chosen as the forward Laplacian
    chooses (:func:`dualgpu.transforms.laplacian.rule_kind`)."""
    return laplacian_rule_kind(prim, values, own="taylor")


# ------------------------------------------------------------------------------ linear
def linear_rule(eqn, values, series, mode):
    """An op linear in its floating operands: applied to each coefficient (zeros for a
    floating operand without one at that order)."""
    slots = [i for i, v in enumerate(values) if getattr(v, "dtype", None) is not None
             and np.dtype(v.dtype).kind in "fc"]
    n_out = len(eqn.outs)
    per_order = []
    for k in range(mode.order):
        args, flags, any_set = list(values), [False] * len(values), False
        for i in slots:
            c = series[i][k] if series[i] is not None else None
            if c is None:
                args[i] = lax.zeros_like(values[i])
            else:
                args[i], flags[i], any_set = c, mode.size is not None, True
        per_order.append(mode.apply(eqn, args, flags) if any_set else [None] * n_out)
    outs = bind_all(eqn, values)
    return [finish([per_order[k][o] for k in range(mode.order)], ans, mode)
            for o, ans in enumerate(outs)]


# ------------------------------------------------------------------------------ partials
def _is_zero(c) -> bool:
    return c is None or (isinstance(c, (int, float)) and not isinstance(c, bool) and c == 0)


def partials_rule(eqn, values, series, mode):
    """Faà di Bruno: ``y_k = sum_{1 <= |alpha| <= k} d^alpha f(x_0) / alpha! [P_alpha]_k``
    with ``P_alpha = prod_i (x_i(t) - x_i0)**alpha_i`` (a product of series), the
    derivatives of order ``m + 1`` the forward derivatives of those of order ``m``
    (starting from the declared partials); a zero derivative ends its branch.

    The sum runs over ordered index sequences ``(j_1..j_m)`` (weight ``1/m!``:
    ``d_(j_m) .. d_(j_2) f_(j_1)``), not multisets, so that a mixed partial is taken in
    every order, as nested JVPs take it: where a declared partial is not smooth
    (``power``'s ``y * x**(y-1)``, taken as 0 at ``y == 0``), both agree with the JVP."""
    prim, params = eqn.prim, eqn.params
    active = [i for i, s in enumerate(series) if s is not None]

    def first_partials(full, _):
        ans = prim.bind(*full, **params)
        return [prim.partials[i](*full, ans) for i in active]

    key = derived_key("partials", eqn, values, tuple(active))
    levels = mode.cache.get(key) if key is not None else None
    if levels is None:
        graph, pos = sub_trace(first_partials, values)
        levels = [(graph, [(i,) for i in active])]
        if key is not None:
            mode.cache[key] = levels
    pos = [i for i, v in enumerate(values) if isinstance(v, Tracer)]
    traced = [values[i] for i in pos]
    ans = prim.bind(*values, **params)
    K, rank = mode.order, len(ans.shape)
    delta = {i: lifted(series[i], mode, rank) for i in active}
    products = {(i,): delta[i] for i in active}
    out = [None] * (K + 1)
    for m in range(1, K + 1):
        graph, level = levels[m - 1]   # level: the index sequences of graph's outputs
        fs = eval_graph(graph, traced)
        for alpha, f in zip(level, fs):
            if _is_zero(f):
                continue
            P = _product(products, tuple(sorted(alpha)), delta)
            f = f if m == 1 else lax.multiply(1.0 / math.factorial(m), f)
            for k in range(m, K + 1):
                if P[k] is not None:
                    out[k] = add_any(out[k], lax.multiply(f, P[k]))
        if m == K:
            break
        if len(levels) == m:
            live = [(a, idx) for idx, a in enumerate(level)
                    if isinstance(graph.outputs[idx], Var)]
            if not live:
                break
            levels.append(_next_derivatives(graph, live, active, pos))
    return [finish(out[1:], ans, mode)]


def _product(products, alpha, delta):
    """``P_alpha``: the series product of ``P_alpha[:-1]`` and ``delta[alpha[-1]]``."""
    if alpha not in products:
        head, d = _product(products, alpha[:-1], delta), delta[alpha[-1]]
        products[alpha] = [None] + [cauchy(head, d, k, lo=1) for k in range(1, len(d))]
    return products[alpha]


def _next_derivatives(graph, live, active, pos):
    """The graph of the derivatives ``d/dx_j`` of ``graph``'s live outputs, for every
    operand ``j``, and their index sequences."""
    level: list = []

    def run(*xs):
        outs = []
        for j in active:
            unit = [None] * len(xs)
            unit[pos.index(j)] = lax.ones_like(xs[pos.index(j)])
            ts = forward_tangents(graph, list(xs), unit)
            for alpha, idx in live:
                level.append(alpha + (j,))
                outs.append(0 if ts[idx] is None else ts[idx])
        return outs

    new, _ = trace_to_graph(run, [v.aval for v in graph.inputs], graph.xp, name="partials")
    return new, level


# ------------------------------------------------------------------------------ fallback
def fallback_rule(eqn, values, series, mode):
    """Any op: the coefficients of ``t -> op(x_0 + c_1 t + ... + c_K t**K)``, its ``K``
    derivatives at ``t = 0`` by nested JVPs (divided by ``k!``), batched over the
    directions."""
    K = mode.order
    slots = [(i, k) for i, s in enumerate(series) if s is not None
             for k in range(1, K + 1) if s[k - 1] is not None]
    n_out = len(eqn.outs)
    tdtype = np.dtype(np.float64)
    for i, _ in slots:
        tdtype = np.dtype(np.finfo(values[i].dtype).dtype)
        break
    n_s = len(slots)

    def curve(full, extra):
        cs, t = extra[:n_s], extra[n_s]
        for (i, k), c in zip(slots, cs):
            tk = t
            for _ in range(k - 1):
                tk = lax.multiply(tk, t)
            full[i] = lax.add(full[i], lax.multiply(c, tk))
        return bind_all(eqn, full)

    key = derived_key("fallback", eqn, values, tuple(slots), K, mode.size)
    derivs = mode.cache.get(key) if key is not None else None
    pos = [i for i, v in enumerate(values) if isinstance(v, Tracer)]
    n_in = len(pos)
    if derivs is None:
        coef_avals = [Aval(tuple(values[i].shape), values[i].dtype) for i, _ in slots]
        graph, _ = sub_trace(curve, values, coef_avals + [Aval((), tdtype)])
        derivs = _nested_derivatives(simplify(graph), n_out, K)
        if mode.size is not None:
            derivs, _ = batch_graph(derivs, [None] * n_in + [0] * n_s + [None], mode.size,
                                    [0] * (K * n_out))
        if key is not None:
            mode.cache[key] = derivs
    args = [values[i] for i in pos] + [series[i][k - 1] for i, k in slots]
    outs = eval_graph(derivs, args + [np.zeros((), tdtype)])
    ans = bind_all(eqn, values)
    res = []
    for o, a in enumerate(ans):
        cs = [lax.multiply(1.0 / math.factorial(k), outs[(k - 1) * n_out + o])
              for k in range(1, K + 1)]
        res.append(finish(cs, a, mode))
    return res


def _nested_derivatives(graph: Graph, n_out: int, K: int) -> Graph:
    """``(xs, cs, t) -> [g', g'', ..., g^(K)]`` (blocks of ``n_out``) for ``graph``
    ``(xs, cs, t) -> g``: ``K`` nested JVPs along the last input."""
    n = len(graph.inputs)
    wrt = [False] * (n - 1) + [True]
    h = graph   # outputs: [g, g', .., g^(m)]
    for _ in range(K):
        j = jvp_graph(h, wrt)
        width = len(h.outputs)

        def run(*a, j=j, width=width):
            outs = eval_graph(j, list(a) + [lax.ones_like(a[-1])])
            return outs[:width] + outs[2 * width - n_out:2 * width]

        h, _ = trace_to_graph(run, [v.aval for v in graph.inputs], graph.xp, name="curve")
    h = Graph(h.inputs, h.outputs[n_out:], h.eqns, xp=h.xp)
    return simplify(h)


# ------------------------------------------------------------------------------ one equation
def taylor_rule(eqn, values, series, mode) -> tuple[list, list]:
    """One equation: its outputs (recorded) and their series."""
    prim = eqn.prim
    if not prim.differentiable or all(s is None for s in series):
        return bind_all(eqn, values), [None] * len(eqn.outs)
    kind = rule_kind(prim, values)
    rule = {"own": prim.rule("taylor"), "linear": linear_rule, "partials": partials_rule,
            "fallback": fallback_rule}[kind]
    out_series = rule(eqn, values, series, mode)
    outs = bind_all(eqn, values)
    out_series = [s if s is not None and o.dtype.kind in "fc"
                  and any(c is not None for c in s) else None
                  for s, o in zip(out_series, outs)]
    return outs, out_series


def _collapsed_rule(eqn, values, series, mode, weights):
    """One equation with the top coefficient collapsed (``series[k][-1]`` is the weighted
    sum over the directions, without the direction axis)."""
    K = mode.order
    trunc = [None if s is None or all(c is None for c in s[:-1]) else list(s[:-1]) + [None]
             for s in series]
    outs, out_series = taylor_rule(eqn, values, trunc, mode)
    tops = [None if s is None else s[-1] for s in series]
    lin = [None] * len(outs)
    if any(t is not None for t in tops):
        lin = jvp_rule(eqn, values, tops)[1]
    res = []
    for o, s, t in zip(outs, out_series, lin):
        if o.dtype.kind not in "fc":
            res.append(None)
            continue
        top = _weighted_sum(s[-1], weights) if s is not None else None
        top = add_any(top, t)
        if top is not None and tuple(np.shape(top)) != tuple(o.shape):
            top = lax.broadcast_to(top, tuple(o.shape))
        if top is not None and top.dtype != o.dtype:
            top = lax.astype(top, o.dtype)
        body = list(s[:-1]) if s is not None else [None] * (K - 1)
        res.append(None if top is None and all(c is None for c in body) else body + [top])
    return outs, res


def _weighted_sum(p, weights):
    """``sum_r w_r p[r]`` over the leading direction axis."""
    if p is None:
        return None
    w = lax.reshape(weights, (weights.shape[0],) + (1,) * (p.ndim - 1))
    return lax.sum(lax.multiply(w, p), axis=0)


def _propagate(graph: Graph, args, seeds: dict, mode, weights=None):
    """The outputs and their series, from ``seeds`` (input index -> series)."""
    def rule(eqn, values, series):
        if weights is None:
            return taylor_rule(eqn, values, series, mode)
        return _collapsed_rule(eqn, values, series, mode, weights)

    return propagate_states(graph, args, {graph.inputs[k].id: s for k, s in seeds.items()},
                            rule)


def _zeros_like(o):
    return lax.zeros_like(o) if isinstance(o, Tracer) else lax.zeros_like(np.asarray(o))


# ------------------------------------------------------------------------------ graphs
def jet_graph(graph: Graph, wrt: Sequence[bool], order: int) -> Graph:
    """``(*inputs, *series) -> (*outputs, *output series)``: for each input flagged in
    ``wrt``, ``order`` arrays shaped like it, the derivatives ``x_1..x_K`` of the input
    curve (JAX's ``jet`` convention); for each output, ``order`` arrays, the derivatives
    of the output along the curve (zeros where it does not depend on the inputs)."""
    K = _check_order(order, "jet")
    n = len(graph.inputs)
    diff = [k for k, w in enumerate(wrt) if w]
    avals = [v.aval for v in graph.inputs]
    series_avals = [Aval(tuple(graph.inputs[k].shape), graph.inputs[k].dtype)
                    for k in diff for _ in range(K)]

    def run(*args):
        mode = Mode(K, None, rule_for)
        seeds = {}
        for j, k in enumerate(diff):
            xs = args[n + j * K:n + (j + 1) * K]
            seeds[k] = [lax.multiply(1.0 / math.factorial(i + 1), x) if i else x
                        for i, x in enumerate(xs)]
        outs, series = _propagate(graph, args[:n], seeds, mode)
        res = list(outs)
        for o, s in zip(outs, series):
            for i in range(K):
                c = s[i] if s is not None else None
                if c is None:
                    res.append(_zeros_like(o))
                else:
                    res.append(lax.multiply(float(math.factorial(i + 1)), c) if i else c)
        return res

    names = None
    if graph.input_names:
        names = list(graph.input_names) + [f"{graph.input_names[k]}_{i + 1}"
                                           for k in diff for i in range(K)]
    with collector_paused():
        new, _ = trace_to_graph(run, avals + series_avals, graph.xp, name=f"jet_{graph.name}",
                                input_names=names)
        return simplify(new)


def operator_graph(graph: Graph, wrt: Sequence[bool], order: int, size: int, *,
                   chunk_size: int | None = None, values: bool = False,
                   direction_shapes: dict | None = None) -> Graph:
    """``(*inputs, *directions, weights) -> (*outputs?, *operators)``: for each output,
    ``sum_r w_r d^K/dt^K f(x + t v_r)`` at ``t = 0``, shaped like the output. Per input
    flagged in ``wrt``, its directions ``(R, *x.shape)`` (or ``direction_shapes[k]`` for
    input ``k``, a shape that broadcasts to it: one direction per instance, shared along
    batch axes); ``weights`` ``(R,)``.

    Coefficients ``1..K-1`` travel per direction, the ``K``-th only as its weighted sum
    (the collapse). With ``chunk_size``, the directions go ``chunk_size`` at a time, one
    chunk after the other, and the chunks' sums are added (exact)."""
    K = _check_order(order, "differential_operator")
    n = len(graph.inputs)
    diff = [k for k, w in enumerate(wrt) if w]
    avals = [v.aval for v in graph.inputs]
    dtype = np.result_type(*[graph.inputs[k].dtype for k in diff]) if diff else np.float64
    shapes = {k: tuple((direction_shapes or {}).get(k, (size,) + tuple(graph.inputs[k].shape)))
              for k in diff}
    dir_avals = [Aval(shapes[k], graph.inputs[k].dtype) for k in diff]
    w_aval = Aval((size,), np.dtype(np.finfo(dtype).dtype))
    step = size if not chunk_size or chunk_size >= size else int(chunk_size)
    chunks = [(lo, min(lo + step, size)) for lo in range(0, size, step)]

    def run(*args):
        xs, dirs, w = args[:n], args[n:n + len(diff)], args[-1]
        total, outs, cache = None, None, {}
        for lo, hi in chunks:
            part = (lambda a: a) if (lo, hi) == (0, size) else (
                lambda a, lo=lo, hi=hi: lax.getitem(a, (slice(lo, hi),)))
            wc = part(w)
            mode = Mode(K, hi - lo, rule_for, cache)
            seeds = {}
            for k, d in zip(diff, dirs):
                d = part(d)
                full = (hi - lo,) + tuple(graph.inputs[k].shape)
                if tuple(d.shape) != full:
                    d = lax.broadcast_to(d, full)
                seeds[k] = [d] + [None] * (K - 1) if K > 1 else [_weighted_sum(d, wc)]
            outs, series = _propagate(graph, xs, seeds, mode, weights=wc)
            tops = [s[-1] if s is not None else None for s in series]
            total = tops if total is None else [add_any(a, b) for a, b in zip(total, tops)]
        res = list(outs) if values else []
        for o, t in zip(outs, total):
            res.append(_zeros_like(o) if t is None
                       else lax.multiply(float(math.factorial(K)), t))
        return res

    with collector_paused():
        new, _ = trace_to_graph(run, avals + dir_avals + [w_aval], graph.xp,
                                name=f"dop{K}_{graph.name}")
        return simplify(new)


def _check_order(order, what: str) -> int:
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 1:
        raise DualgpuError(f"{what}: the order must be a positive int, got {order!r}")
    return int(order)
