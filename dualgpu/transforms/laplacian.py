"""Forward Laplacian: ``curvature_graph(g, wrt)`` maps the inputs to the outputs and their
Laplacians (or their Hessian diagonals), propagated forward in one pass.

Every value ``y`` that depends on the differentiated inputs carries a *jet*
``(y, J, S)``: ``J`` has one extra leading axis of size ``D`` (the input coordinates, the
differentiated inputs flattened) with ``J[d] = dy/dx_d``, and ``S`` is the second-order part:

* Laplacian mode: ``S = sum_d d2y/dx_d2`` (shaped like ``y``) -- the forward Laplacian of
  Li et al. 2023 (collapsed Taylor mode: the sum over ``d`` is taken at every step, so no
  value carries ``D`` second derivatives);
* diagonal mode: ``S[d] = d2y/dx_d2`` (a leading ``D`` axis, like ``J``).

Both modes are one machinery: they differ only in whether the pairing of two Jacobians
``<J_a, J_b>`` sums over ``d`` (Laplacian) or keeps it (diagonal), and in whether ``S`` has
the ``D`` axis (so that linear ops apply to it batched). ``None`` is a symbolic zero for
``J`` and ``S`` (the inputs themselves have ``S = None``).

Rules, chosen by what the registry says of an op (first match wins):

* the op's own rule (``defrules(prim, laplacian=...)`` beside its derivatives, written with
  :mod:`dualgpu.rules.laplacian_rules`: selection, dtype casts, complex parts, pad, max/min
  reductions, polygamma, and the multilinear products matmul, einsum, spmm, sddmm:
  ``S(AB) = S_A B + A S_B + 2 <J_A, J_B>``); a matmul with a differentiated input whose
  coordinates are the contracted axis (``x @ W``, ``W @ x``) takes ``W``'s rows as its
  Jacobian, broadcast over the batch axes -- no product with the identity seed -- and
  ``<J, J>`` of such broadcasts is taken on the small arrays (:class:`Mode`);
* ``Flag.LINEAR`` ops: the op applied to ``J`` (through the vmap batching rules, which
  apply an op to a value with one extra leading axis) and to ``S``;
* elementwise ops with ``partials`` (``rules/elementwise.defpartials``): first partials
  ``f_i`` as written, second partials ``f_ij`` by differentiating those (a forward pass of
  JVP rules over the traced partials), then
  ``S_y = sum_i f_i S_i + sum_ij f_ij <J_i, J_j>``;
* everything else (a custom op, the linear-algebra decompositions, products along an axis,
  complex inputs of elementwise ops): :func:`fallback_rule`, the op's JVP differentiated
  once more and batched over ``D`` -- exact, but a larger graph.

Departure from the design note: the second partials come from a forward pass of the
existing JVP rules over a small traced graph of the partials, with a unit tangent per
operand, rather than from a new table; a constant partial (``add``'s ``1``) has a symbolic
zero derivative, so linear arithmetic records no curvature terms at all.

Example::

    >>> g = dg.trace(lambda x: np.sum(x ** 3), np.ones(2))
    >>> lap = curvature_graph(g, [True])
    >>> [float(v) for v in eval_graph(lap, [np.array([1.0, 2.0])])]  # value, Laplacian
    [9.0, 18.0]
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..core.flags import Flag
from ..core.interpret import eval_graph, propagate_states
from ..core.ir import Aval, Graph
from ..core.trace import Tracer, trace_to_graph
from ..errors import DualgpuError
from ..frontend import numpy as dnp
from ..rules.common import add_any
from ..rules.laplacian_rules import Mode, Seed, bind_all, fit, is_zero, lift, scale, vid
from ._gc import collector_paused
from .interpreter import (
    batch_axes_of,
    coordinate_layout,
    forward_tangents,
    seed_coordinates,
    sub_trace,
)
from .jvp import jvp_graph
from .simplify import dce, simplify
from .vmap import batch_graph, rule_for

__all__ = ["curvature_graph"]


# Jet = (J, S) or None; a rule returns one jet per output.
JetRule = Callable[..., list]


def rule_kind(prim, values=None, own: str = "laplacian") -> str:
    """Which rule propagates jets through ``prim``: ``"own"`` (the op's rule of the kind
    ``own``: ``jet`` here, ``taylor`` for Taylor mode), ``"linear"``, ``"partials"`` or
    ``"fallback"`` (``values``: the operands, for the complex check)."""
    if prim.rule(own) is not None:
        return "own"
    if prim.has(Flag.LINEAR):
        return "linear"
    if prim.partials is not None and prim.kind == "elementwise":
        if values is not None and any(getattr(v, "dtype", np.dtype(float)).kind == "c"
                                      for v in values):
            return "fallback"  # the partials are real-valued forms (absolute, say)
        return "partials"
    return "fallback"


# ------------------------------------------------------------------------------ linear
def linear_rule(eqn, values, jets, mode):
    """An op linear in its floating operands: applied to ``J`` (batched) and to ``S``."""
    slots = [i for i, v in enumerate(values) if getattr(v, "dtype", None) is not None
             and np.dtype(v.dtype).kind in "fc"]

    def operands(part, batched_part):
        args, flags, any_set = list(values), [False] * len(values), False
        for i in slots:
            x = jets[i][part] if jets[i] is not None else None
            if x is None:
                args[i] = dnp.zeros_like(values[i])
            else:
                args[i], flags[i], any_set = x, batched_part, True
        return args, flags, any_set

    args, flags, any_j = operands(0, True)
    J = mode.batched(eqn, args, flags)[0] if any_j else None
    args, flags, any_s = operands(1, mode.diag)
    S = None
    if any_s:
        S = mode.batched(eqn, args, flags)[0] if mode.diag else bind_all(eqn, args)[0]
    return [(J, S)]


# ------------------------------------------------------------------------------ partials
def partials_rule(eqn, values, jets, mode):
    """``J_y = sum_i f_i J_i``; ``S_y = sum_i f_i S_i + sum_ij f_ij <J_i, J_j>``."""
    prim, params = eqn.prim, eqn.params
    active = [i for i, j in enumerate(jets) if j is not None]

    def first_partials(*xs):
        ans = prim.bind(*xs, **params)
        return [prim.partials[i](*xs, ans) for i in active]

    sub, pos = sub_trace(lambda full, _: first_partials(*full), values)
    traced = [values[i] for i in pos]
    f = eval_graph(sub, traced)
    y = prim.bind(*values, **params)
    shape, dtype = tuple(y.shape), y.dtype
    D = mode.size
    rank = len(shape)
    J = S = None
    for k, i in enumerate(active):
        Ji, Si = jets[i]
        if is_zero(f[k]):
            continue
        J = add_any(J, scale(f[k], lift(Ji, rank)))
        if Si is not None:
            S = add_any(S, scale(f[k], mode.lift_s(Si, rank)))
    for b, j in enumerate(active):  # f_ij = d f_i / d x_j, for i <= j
        unit = [None] * len(pos)
        unit[pos.index(j)] = dnp.ones_like(values[j])
        f_j = forward_tangents(sub, traced, unit)
        for a, i in enumerate(active[:b + 1]):
            fij = f_j[a]
            if fij is None:
                continue
            term = dnp.multiply(fij, mode.pair(jets[i][0], jets[j][0], rank))
            S = add_any(S, term if i == j else dnp.multiply(2, term))
    if J is not None:
        J = fit(J, (D,) + shape, dtype)
    if S is not None:
        S = fit(S, ((D,) if mode.diag else ()) + shape, dtype)
    return [(J, S)]


# ------------------------------------------------------------------------------ fallback
def fallback_rule(eqn, values, jets, mode):
    """Any op: ``J_y[d] = g'[J[d]]`` and ``S_y = g'[S] + <g''[J[d], J[d]]>_d``, from the
    op's JVP rule and the JVP of that, batched over the ``D`` coordinates."""
    sub, pos = sub_trace(lambda full, _: eqn.prim.bind(*full, **eqn.params), values)
    traced = [values[i] for i in pos]
    wrt = [jets[i] is not None for i in pos]
    act = [i for i in pos if jets[i] is not None]
    n_out, n_in, n_t = len(sub.outputs), len(pos), len(act)
    first = jvp_graph(sub, wrt)  # (xs, ts) -> (ys, g'[t])
    tangent_part = Graph(first.inputs, first.outputs[n_out:], first.eqns, xp=first.xp)
    second = jvp_graph(dce(tangent_part), wrt + [False] * n_t)  # (xs, ts, x_dots)

    def both(*a):  # (xs, ts) -> (g'[t], g''[t, t])
        return eval_graph(second, list(a) + list(a[n_in:]))

    pair, _ = trace_to_graph(both, [v.aval for v in second.inputs[:n_in + n_t]], first.xp)
    D = mode.size
    pb, _ = batch_graph(simplify(pair), [None] * n_in + [0] * n_t, D, [0] * (2 * n_out))
    outs = eval_graph(pb, traced + [jets[i][0] for i in act])
    Js, curv = outs[:n_out], outs[n_out:]
    Ss = curv if mode.diag else [dnp.sum(c, axis=0) for c in curv]
    if any(jets[i][1] is not None for i in act):
        ss = [jets[i][1] if jets[i][1] is not None else
              dnp.broadcast_to(dnp.zeros_like(values[i]),
                               ((D,) if mode.diag else ()) + tuple(values[i].shape))
              for i in act]
        if mode.diag:
            tb, _ = batch_graph(first, [None] * n_in + [0] * n_t, D, [0] * (2 * n_out))
            lin = eval_graph(tb, traced + ss)[n_out:]
        else:
            lin = eval_graph(first, traced + ss)[n_out:]
        Ss = [dnp.add(s, t) for s, t in zip(Ss, lin)]
    res = []
    for v, J, S in zip(eqn.outs, Js, Ss):
        res.append((J, S) if v.dtype.kind in "fc" else None)
    return res


def jet_rule(eqn, values, jets, mode) -> tuple[list, list]:
    """One equation: its outputs (recorded) and their jets."""
    prim = eqn.prim
    if not prim.differentiable or all(j is None for j in jets):
        return bind_all(eqn, values), [None] * len(eqn.outs)
    kind = rule_kind(prim, values)
    rule = {"own": prim.rule("laplacian"), "linear": linear_rule, "partials": partials_rule,
            "fallback": fallback_rule}[kind]
    out_jets = rule(eqn, values, jets, mode)
    return bind_all(eqn, values), out_jets


# ------------------------------------------------------------------------------ the graph
def _direction_seed(x, S, inst, off, axes, lo, hi):
    """``J`` of an input ``x`` for the directions ``lo .. hi`` (columns of ``S``): ``J[r]``
    is ``S[off:off + n, lo + r]`` laid out over ``x``'s instance axes, broadcast along its
    batch axes when ``S`` is ``(D, R)``, or each instance's own rows when ``S`` is
    ``(*batch, D, R)``."""
    n = int(np.prod(inst, dtype=np.int64))
    R = hi - lo
    if S.dtype != x.dtype:
        S = dnp.astype(S, x.dtype)
    nb = S.ndim - 2          # S[..., off:off + n, lo:hi]: (*B, n, R)
    part = dnp.getitem(S, (slice(None),) * nb + (slice(off, off + n), slice(lo, hi)))
    if nb == 0:
        small = dnp.reshape(dnp.transpose(part, (1, 0)),
                            (R,) + tuple(1 if a in axes else s for a, s in enumerate(x.shape)))
        full = (R,) + tuple(x.shape)
        return small if tuple(small.shape) == full else dnp.broadcast_to(small, full)
    order = list(axes)       # S's batch axes: the argument's, in batch_axes' order
    batch = tuple(x.shape[a] for a in order)
    part = dnp.transpose(part, (nb + 1,) + tuple(range(nb)) + (nb,))          # (R, *B, n)
    part = dnp.reshape(part, (R,) + batch + tuple(inst))
    perm, k = [0], 0
    for a in range(x.ndim):
        if a in axes:
            perm.append(1 + order.index(a))
        else:
            perm.append(1 + nb + k)
            k += 1
    return dnp.transpose(part, tuple(perm))


def _check_sigma_aval(graph, layout, D, batch_axes, sigma):
    """``sigma`` is ``(D, R)``, or ``(*batch, D, R)`` with the inputs' batch shape."""
    shape = tuple(sigma.shape)
    if np.dtype(sigma.dtype).kind != "f":
        raise DualgpuError(f"laplacian: sigma must be a real floating-point array, got dtype "
                           f"{np.dtype(sigma.dtype)}")
    batches = {tuple(graph.inputs[k].shape[a] for a in batch_axes_of(graph.inputs[k],
                                                                    batch_axes))
               for k, _, _ in layout}
    allowed = [(D,)] + ([(*b, D) for b in batches if b] if batch_axes is not None else [])
    if len(shape) < 2 or shape[:-1] not in allowed or shape[-1] < 1:
        want = " or ".join(f"{(*a, 'R')}".replace("'R'", "R") for a in allowed)
        raise DualgpuError(f"laplacian: sigma must have shape {want} (D = {D} differentiated "
                           f"coordinates{' per instance' if batch_axes is not None else ''}, "
                           f"R >= 1 directions), got {shape}")


def coordinate_chunks(D: int, chunk_size: int | None) -> list:
    """``[(lo, hi)]``: the coordinates ``0 .. D`` in chunks of at most ``chunk_size``.

    Example::

        >>> coordinate_chunks(50, 20), coordinate_chunks(50, None)
        ([(0, 20), (20, 40), (40, 50)], [(0, 50)])
    """
    step = D if not chunk_size or chunk_size >= D else chunk_size
    return [(lo, min(lo + step, D)) for lo in range(0, max(D, 1), max(step, 1))]


def curvature_graph(graph: Graph, wrt: Sequence[bool] | None = None, *, diag: bool = False,
                    batch_axes: Sequence[int] | None = None, values: bool = True,
                    chunk_size: int | None = None, sigma: Aval | None = None) -> Graph:
    """A graph computing ``(*outputs, *curvatures)`` from the inputs (only the curvatures
    with ``values=False``: what only the outputs needed is left out of the program).

    Laplacian mode: one Laplacian per output, shaped like it. Diagonal mode: for each output
    ``o`` and each differentiated input ``x`` (output major) the pure second derivatives,
    shaped ``o.shape + x.shape`` -- or shaped like ``x`` with ``batch_axes`` (then each
    instance has its own coordinates: ``f`` must be separable over the batch axes, which
    the caller checks, and its output has one value per instance).

    With ``chunk_size`` (Laplacian mode), the coordinates are propagated ``chunk_size`` at a
    time, one chunk after the other in the program, and the chunks' Laplacians summed (the
    Laplacian is a sum of per-coordinate terms, so this is exact): a call holds the
    Jacobians of one chunk, not of all ``D`` coordinates. The values are computed once
    (the chunks' repeated value computations are merged by CSE).

    With ``sigma`` (Laplacian mode; the aval of a directions matrix ``S``, shape ``(D, R)``
    or, with ``batch_axes``, ``(*batch, D, R)``: one matrix per instance, its batch axes
    those of the differentiated inputs in the order of ``batch_axes``), the graph takes
    ``S`` as one more input, after the others, and computes the weighted Laplacian
    ``tr(S S^T H) = sum_r s_r^T H s_r``: the Jacobians are seeded with the ``R`` columns
    of ``S`` (rows ``s_r`` over the instance coordinates) instead of the ``D`` rows of the
    identity, so the cost grows with ``R``. ``chunk_size`` then counts directions. ``S`` is
    an ordinary input of the graph: a derivative of the result with respect to it is taken
    through the graph like any other (no seed shortcuts, which assume identity rows).
    """
    if wrt is None:
        wrt = [v.dtype.kind == "f" for v in graph.inputs]
    for v, w in zip(graph.inputs, wrt):
        if w and v.dtype.kind != "f":
            raise DualgpuError(f"laplacian/hessian_diag: a differentiated input has dtype "
                               f"{v.dtype}; only real floating-point inputs")
    if diag and chunk_size is not None:
        raise DualgpuError("hessian_diag: chunk_size is for the Laplacian only")
    if diag and sigma is not None:
        raise DualgpuError("hessian_diag: sigma is for the Laplacian only")
    layout, D = coordinate_layout(graph, wrt, batch_axes)
    if sigma is not None:
        _check_sigma_aval(graph, layout, D, batch_axes, sigma)
    R = D if sigma is None else int(sigma.shape[-1])
    chunks = coordinate_chunks(R, chunk_size)
    with_values = values
    avals = [v.aval for v in graph.inputs] + ([] if sigma is None else [sigma])

    def propagate(args, lo, hi):
        """The outputs and their jets, with the coordinates (or, with ``sigma``, the
        directions) ``lo .. hi`` seeded."""
        mode = Mode(diag, hi - lo, rule_for)
        jenv = {}
        for k, inst, off in layout:
            v = graph.inputs[k]
            n = int(np.prod(inst, dtype=np.int64))
            if sigma is not None:
                axes = batch_axes_of(v, batch_axes)
                J = _direction_seed(args[k], args[len(graph.inputs)], inst, off, axes, lo, hi)
                jenv[v.id] = (J, None)
                continue
            a, b = max(off, lo), min(off + n, hi)
            if a >= b:     # none of this input's coordinates in the chunk: a constant
                continue
            axes = batch_axes_of(v, batch_axes)
            J = seed_coordinates(args[k], inst, a - lo, hi - lo, axes, first=a - off, count=b - a)
            mode.seeds[vid(J)] = Seed(tuple(v.shape), tuple(i for i in range(v.ndim)
                                                             if i not in axes),
                                       a - lo, b - a, first=a - off)
            jenv[v.id] = (J, None)

        def rule(eqn, values, jets):
            outs, out_jets = jet_rule(eqn, values, jets, mode)
            return outs, [j if j is not None and (j[0] is not None or j[1] is not None)
                          else None for j in out_jets]

        return propagate_states(graph, args, jenv, rule)

    def run(*args):
        outs, jets = propagate(args, *chunks[0])
        head = outs if with_values else []
        if not diag:
            laps = [_zeros_or(j[1] if j else None, o) for j, o in zip(jets, outs)]
            for lo, hi in chunks[1:]:
                _, more = propagate(args, lo, hi)
                laps = [lap + _zeros_or(j[1], o) if j is not None and j[1] is not None
                        else lap for lap, j, o in zip(laps, more, outs)]
            return head + laps
        blocks = []
        for j, o in zip(jets, outs):
            for k, inst, off in layout:
                blocks.append(_diag_block(j, o, graph.inputs[k], inst, off, D, batch_axes))
        return head + blocks

    with collector_paused():  # not a decorator: its frame would be the user's line
        new, _ = trace_to_graph(run, avals, graph.xp, name=f"{'hdiag' if diag else 'lap'}_"
                                f"{graph.name}", input_names=graph.input_names)
        return simplify(new)


def _zeros_or(s, o):
    if s is not None:
        return fit(s, tuple(np.shape(o)), o.dtype)
    return dnp.zeros_like(o) if isinstance(o, Tracer) else dnp.zeros_like(dnp.asarray(o))


def _diag_block(jet, o, x, inst, off, D, batch_axes):
    """Rows ``off..`` of ``S`` (``(D, *o.shape)``), laid out as ``o.shape + x.shape``, or
    as ``x.shape`` with batch axes."""
    o_shape = tuple(np.shape(o))
    n = int(np.prod(inst, dtype=np.int64))
    S = jet[1] if jet is not None else None
    if S is None:
        S = dnp.broadcast_to(dnp.zeros_like(o), (D,) + o_shape)
    block = dnp.reshape(dnp.getitem(S, (slice(off, off + n),)), tuple(inst) + o_shape)
    ni, no = len(inst), len(o_shape)
    if batch_axes is None:
        return dnp.transpose(block, list(range(ni, ni + no)) + list(range(ni)))
    axes = batch_axes_of(x, batch_axes)
    perm, k = [], 0
    for a in range(x.ndim):
        if a in axes:
            perm.append(ni + axes.index(a))
        else:
            perm.append(k)
            k += 1
    return dnp.transpose(block, perm)
