"""Batching: ``batch_graph(graph, in_dims, size)`` turns a per-example graph into the graph
of the same program applied to ``size`` examples at once.

The new graph is traced like every other transform's (evaluate the old graph equation by
equation, each primitive's *batching rule* recording registry ops), so it is an ordinary
graph: it prints, simplifies, fuses, compiles and can be differentiated again.

Where the batch dimension lives: every batched value carries it at axis 0. Inputs mapped
along another axis are moved there once on entry, and outputs are moved to their
``out_dims`` once on exit. One convention keeps each rule short (a rule only says how its
op treats one extra leading axis) at the price of an occasional transpose, which NumPy does
as a view and the fused kernels fold into their indexing. Values that do not depend on a
mapped input stay unbatched: the rule of an op sees which operands are batched, so a
weight matrix is never copied ``size`` times and ``W @ V`` stays one GEMM.

Rules are looked up by primitive in :data:`BATCH_RULES` (the ops with rules of their own)
and then by flag: elementwise ops (custom ops with a C expression too), reductions and
scans share one rule each. An op with
no rule -- a user's custom op without a C expression, for instance -- is run once per
example and the results stacked (:func:`loop_rule`): correct for every op, but ``size``
equations instead of one.

Example::

    g = dg.trace(lambda x: np.sum(np.sin(x)), np.ones(3))
    b, out_dims = batch_graph(g, [0], 5)     # float64[5,3] -> float64[5]
"""
from __future__ import annotations

import string
from collections.abc import Callable, Sequence

import numpy as np

from .. import numpy_api as dnp
from ..backends import array_backend
from ..core.flags import Flag
from ..core.interpret import read
from ..core.ir import Aval, Graph, Var
from ..core.trace import Tracer, current_builder, trace_to_graph
from ..errors import DualgpuError
from ..ops import decompositions as _dec
from ..ops import linalg as _la
from ..ops import shape as _sh
from ..ops import sorting as _sort
from ..ops import sparse as _sp
from ._gc import collector_paused
from .simplify import simplify

# rule(eqn, args, batched, size) -> (outputs, output batched flags): ``args`` are the
# equation's operands in the new trace, batched ones with the batch dimension at axis 0.
BatchRule = Callable[..., tuple]
BATCH_RULES: dict = {}  # primitive -> its batching rule


@collector_paused()
def batch_graph(graph: Graph, in_dims: Sequence[int | None], size: int,
                out_dims: Sequence[int | None] | None = None) -> tuple[Graph, list]:
    """The graph of ``graph`` mapped over ``size`` examples.

    ``in_dims[k]`` is the axis of input ``k`` that holds the examples (``None``: the input
    is shared by all examples). With ``out_dims``, output ``k`` gets its examples along
    axis ``out_dims[k]`` (an unbatched output is broadcast; ``None`` requires the output to
    be unbatched); without it, batched outputs have them along axis 0 and unbatched ones
    stay as they are. Returns ``(new graph, out_dims)``.
    """
    if len(in_dims) != len(graph.inputs):
        raise DualgpuError(f"batch_graph: {len(in_dims)} in_dims for {len(graph.inputs)} "
                           "inputs")
    avals = []
    for v, d in zip(graph.inputs, in_dims):
        shape = list(v.shape)
        if d is not None:
            shape.insert(d, size)
        avals.append(Aval(tuple(shape), v.dtype))

    result_dims: list = []

    def run(*args):
        env: dict[int, tuple] = {}
        for v, a, d in zip(graph.inputs, args, in_dims):
            env[v.id] = (a if d in (None, 0) else dnp.moveaxis(a, d, 0), d is not None)
        builder = current_builder()
        for eqn in graph.eqns:
            builder.rule_source = eqn.source  # batched equations keep the user's line
            ins = [_read(env, a) for a in eqn.inputs]
            values = [x for x, _ in ins]
            flags = [b for _, b in ins]
            if any(flags):
                outs, out_flags = rule_for(eqn.prim)(eqn, values, flags, size)
            else:
                outs = eqn.prim.bind(*values, **eqn.params)
                outs = list(outs) if eqn.prim.multiple_results else [outs]
                out_flags = [False] * len(outs)
            for v, o, b in zip(eqn.outs, outs, out_flags):
                env[v.id] = (o, b)
        builder.rule_source = None
        results = []
        for k, a in enumerate(graph.outputs):
            x, b = _read(env, a)
            if out_dims is None:
                results.append(x)
                result_dims.append(0 if b else None)
                continue
            d = out_dims[k]
            if d is None:
                if b:
                    raise DualgpuError(
                        f"vmap: out_axes is None for output {k}, but that output depends on "
                        "the mapped inputs (give it an int axis)")
                results.append(x)
            else:
                if not b:
                    x = dnp.broadcast_to(x, (size,) + tuple(np.shape(x)))
                results.append(dnp.moveaxis(x, 0, d) if d else x)
            result_dims.append(d)
        return results

    names = list(graph.input_names) if graph.input_names else None
    new, _ = trace_to_graph(run, avals, graph.xp, name=f"vmap_{graph.name}",
                            input_names=names)
    return simplify(new), result_dims


def _read(env, atom):
    if isinstance(atom, Var) and atom.id in env:
        return env[atom.id]
    return read(env, atom), False


def rule_for(prim) -> BatchRule:
    """The batching rule of ``prim``: its own, its kind's, or the per-example loop."""
    rule = BATCH_RULES.get(prim)
    if rule is not None:
        return rule
    if prim.has(Flag.ELEMENTWISE):  # custom ops with a C expression too
        return elementwise_rule
    if prim.has(Flag.REDUCTION):
        return _reduce_rule
    if prim.has(Flag.SCAN):
        return _scan_rule
    return loop_rule


def has_rule(prim) -> bool:
    """True when ``prim`` is batched by a rule rather than by the per-example loop."""
    return rule_for(prim) is not loop_rule


# ------------------------------------------------------------------------------ helpers
def _rank(x, batched: bool) -> int:
    return len(np.shape(x)) - (1 if batched else 0)


def _lift(x, rank: int):
    """A batched ``(B, *s)`` value reshaped to ``(B, 1, ..., 1, *s)`` of per-example rank
    ``rank``, so that it broadcasts against unbatched operands of that rank."""
    s = tuple(x.shape[1:])
    if len(s) >= rank:
        return x
    return dnp.reshape(x, (x.shape[0],) + (1,) * (rank - len(s)) + s)


def _batched(x, size: int):
    """An unbatched operand broadcast along a new leading batch axis."""
    return dnp.broadcast_to(x, (size,) + tuple(np.shape(x)))


def _one(out):
    return [out], [True]


def _per_example_shape(eqn, k=0) -> tuple:
    return tuple(eqn.outs[k].shape)


def _drop_to(x, size, eqn):
    """``x`` reshaped to ``(size, *per-example output shape)`` (squeezing helper axes)."""
    return dnp.reshape(x, (size,) + _per_example_shape(eqn))


# ------------------------------------------------------------------------------ loop
def loop_rule(eqn, args, batched, size):
    """The fallback: apply the op to each example and stack the results."""
    if size == 0:
        raise DualgpuError(f"vmap: {eqn.prim.name} has no batching rule, and a batch of "
                           "size 0 cannot be run example by example")
    per_example = []
    for i in range(size):
        ins = [dnp.getitem(a, i) if b else a for a, b in zip(args, batched)]
        out = eqn.prim.bind(*ins, **eqn.params)
        per_example.append(list(out) if eqn.prim.multiple_results else [out])
    outs = [dnp.stack([p[j] for p in per_example]) for j in range(len(eqn.outs))]
    return outs, [True] * len(outs)


# ------------------------------------------------------------------------------ elementwise
def elementwise_rule(eqn, args, batched, size):
    """Batched operands are lifted to the op's per-example rank; NumPy broadcasting does
    the rest (unbatched operands are never copied)."""
    rank = max(_rank(a, b) for a, b in zip(args, batched))
    lifted = [_lift(a, rank) if b else a for a, b in zip(args, batched)]
    return _one(eqn.prim.bind(*lifted, **eqn.params))


def _broadcast_to_rule(eqn, args, batched, size):
    shape = tuple(eqn.params["shape"])
    return _one(_sh.broadcast_to.bind(_lift(args[0], len(shape)), shape=(size,) + shape))


# ------------------------------------------------------------------------------ reductions
def _reduce_rule(eqn, args, batched, size):
    axes = tuple(a + 1 for a in eqn.params["axes"])
    return _one(eqn.prim.bind(args[0], **{**eqn.params, "axes": axes}))


def _scan_rule(eqn, args, batched, size):
    return _one(eqn.prim.bind(args[0], **{**eqn.params, "axis": eqn.params["axis"] + 1}))


# ------------------------------------------------------------------------------ shapes
def _transpose_rule(eqn, args, batched, size):
    perm = (0,) + tuple(p + 1 for p in eqn.params["perm"])
    return _one(_sh.transpose.bind(args[0], perm=perm))


def _reshape_rule(eqn, args, batched, size):
    return _one(_sh.reshape.bind(args[0], new_shape=(size,) + tuple(eqn.params["new_shape"])))


def _pad_rule(eqn, args, batched, size):
    pad_width = ((0, 0),) + tuple(eqn.params["pad_width"])
    return _one(_sh.pad.bind(args[0], pad_width=pad_width, value=eqn.params["value"]))


def _concatenate_rule(eqn, args, batched, size):
    xs = [a if b else _batched(a, size) for a, b in zip(args, batched)]
    return _one(_sh.concatenate.bind(*xs, axis=eqn.params["axis"] + 1))


# Indexing. A normalized key (rules/shape.py) has entries ("slice", ...), ("int", i), None
# and ("array", k). With index arrays present, ints are advanced indices too; advanced
# indices separated by a slice or None put their dimensions first (NumPy's rule).
_ALL = ("slice", None, None, None)


def _advanced(key) -> list[int]:
    if not any(e is not None and e[0] == "array" for e in key):
        return []
    return [i for i, e in enumerate(key) if e is not None and e[0] in ("array", "int")]


def _adjacent(positions) -> bool:
    return positions == list(range(positions[0], positions[0] + len(positions)))


def _index_rank(arrays, batched) -> int:
    return max((_rank(a, b) for a, b in zip(arrays, batched)), default=0)


def _shared_index_key(key, arrays, batched):
    """(key, perm) for an operand batched along axis 0 and shared index arrays: the key
    gets a leading full slice; ``perm`` brings the batch axis of the result back to 0."""
    adv = _advanced(key)
    if not adv or _adjacent(adv):
        return (_ALL,) + tuple(key), None
    q = _index_rank(arrays, batched)  # the advanced dimensions came first
    return (_ALL,) + tuple(key), q


def _batched_index_key(key, arrays, batched, size):
    """(key, arrays, perm) for batched index arrays: one more index array, the example
    number, selects the example; ``perm`` orders the result as the per-example op would."""
    na = _index_rank(arrays, batched)
    iota = np.arange(size, dtype=np.intp).reshape((size,) + (1,) * na)
    new_arrays = [iota] + [_lift(a, na) if b else a for a, b in zip(arrays, batched)]
    new_key = (("array", 0),) + tuple(
        ("array", e[1] + 1) if e is not None and e[0] == "array" else e for e in key)
    adv = _advanced(key)
    # raw result: (B, *advanced, *the others in order); the per-example result has the
    # advanced dimensions in place when they are adjacent
    p = 0
    if _adjacent(adv):
        p = sum(1 for e in key[:adv[0]] if e is None or e[0] == "slice")
    perm = None
    if p:
        perm = ([0] + [1 + na + i for i in range(p)] + [1 + i for i in range(na)])
    return new_key, new_arrays, perm, na, p


def _getitem_rule(eqn, args, batched, size):
    x, *arrays = args
    key = eqn.params["key"]
    if not any(batched[1:]):
        new_key, q = _shared_index_key(key, arrays, batched[1:])
        out = _sh.getitem.bind(x, *arrays, key=new_key)
        return _one(dnp.moveaxis(out, q, 0) if q else out)
    if not batched[0]:
        x = _batched(x, size)
    new_key, new_arrays, perm, _, _ = _batched_index_key(key, arrays, batched[1:], size)
    out = _sh.getitem.bind(x, *new_arrays, key=new_key)
    if perm is not None:
        out = dnp.transpose(out, perm + list(range(len(perm), len(out.shape))))
    return _one(out)


def _scatter_add_rule(eqn, args, batched, size):
    g, *arrays = args
    key, shape = eqn.params["key"], (size,) + tuple(eqn.params["shape"])
    if not batched[0]:
        g = _batched(g, size)
    if not any(batched[1:]):
        new_key, q = _shared_index_key(key, arrays, batched[1:])
        g = dnp.moveaxis(g, 0, q) if q else g
        return _one(_sh.scatter_add.bind(g, *arrays, key=new_key, shape=shape))
    new_key, new_arrays, perm, _, _ = _batched_index_key(key, arrays, batched[1:], size)
    if perm is not None:
        full = perm + list(range(len(perm), len(g.shape)))
        g = dnp.transpose(g, [int(i) for i in np.argsort(full)])
    return _one(_sh.scatter_add.bind(g, *new_arrays, key=new_key, shape=shape))


# ------------------------------------------------------------------------------ products
def _matmul_rule(eqn, args, batched, size):
    a, b = args
    if batched[0] and not batched[1]:
        return _one(_matmul_left(a, b, size, eqn))
    if batched[1] and not batched[0]:
        return _one(_matmul_right(a, b, size, eqn))
    ra, rb = len(a.shape) - 1, len(b.shape) - 1
    a2 = a if ra >= 2 else dnp.reshape(a, (size, 1, a.shape[-1]))
    b2 = b if rb >= 2 else dnp.reshape(b, (size, b.shape[-1], 1))
    a2, b2 = _pad_batch(a2, b2)
    return _one(_drop_to(_la.matmul.bind(a2, b2), size, eqn))


def _pad_batch(a, b):
    """Batched stacks of matrices with equally many batch axes after the leading one."""
    na, nb = len(a.shape) - 3, len(b.shape) - 3
    if na < nb:
        a = dnp.reshape(a, (a.shape[0],) + (1,) * (nb - na) + tuple(a.shape[1:]))
    elif nb < na:
        b = dnp.reshape(b, (b.shape[0],) + (1,) * (na - nb) + tuple(b.shape[1:]))
    return a, b


def _matmul_left(a, b, size, eqn):
    """Batched ``a``, shared ``b``: the examples become rows of one GEMM."""
    ra, rb = len(a.shape) - 1, len(np.shape(b))
    if rb <= 2:
        if ra == 1:
            return _la.matmul.bind(a, b)  # (B, k) @ b
        out = _la.matmul.bind(dnp.reshape(a, (-1, a.shape[-1])), b)
        return _drop_to(out, size, eqn)
    a2 = a if ra >= 2 else dnp.reshape(a, (size, 1, a.shape[-1]))
    nb = rb - 2
    na = len(a2.shape) - 3
    if na < nb:
        a2 = dnp.reshape(a2, (size,) + (1,) * (nb - na) + tuple(a2.shape[1:]))
    return _drop_to(_la.matmul.bind(a2, b), size, eqn)


def _matmul_right(a, b, size, eqn):
    """Shared ``a``, batched ``b``: the examples become columns of one GEMM."""
    ra, rb = len(np.shape(a)), len(b.shape) - 1
    if rb == 1:
        if ra == 1:
            return _la.matmul.bind(b, a)  # one dot per example: (B, k) @ (k,)
        out = _la.matmul.bind(a, dnp.transpose(b))  # (..., n, B)
        return dnp.moveaxis(out, -1, 0)
    if ra == 1:
        return _la.matmul.bind(a, b)  # (k,) @ (B, ..., k, m)
    if ra == 2 and rb == 2:
        k, m = b.shape[1:]
        wide = dnp.reshape(dnp.transpose(b, (1, 0, 2)), (k, size * m))
        out = dnp.reshape(_la.matmul.bind(a, wide), (np.shape(a)[0], size, m))
        return dnp.transpose(out, (1, 0, 2))
    na, nb = ra - 2, rb - 2
    if nb < na:
        b = dnp.reshape(b, (size,) + (1,) * (na - nb) + tuple(b.shape[1:]))
    return _la.matmul.bind(a, b)


def _einsum_rule(eqn, args, batched, size):
    spec = eqn.params["spec"]
    letter = next(c for c in string.ascii_letters if c not in spec)
    ins, out = spec.split("->")
    specs = [letter + s if b else s for s, b in zip(ins.split(","), batched)]
    return _one(_la.einsum.bind(*args, spec=",".join(specs) + "->" + letter + out))


# ------------------------------------------------------------------------------ sparse
def _concrete(*xs) -> bool:
    return not any(isinstance(x, Tracer) for x in xs)


def _block_pattern(rows, cols, shape, size, stack_rows: bool, stack_cols: bool):
    """COO indices of ``size`` copies of a pattern: stacked down (rows offset), across
    (cols offset) or on the diagonal (both)."""
    xp = array_backend(rows).xp
    k = xp.arange(size, dtype=np.int64)[:, None]
    r = rows.astype(np.int64)[None, :] + (k * shape[0] if stack_rows else 0)
    c = cols.astype(np.int64)[None, :] + (k * shape[1] if stack_cols else 0)
    r = xp.broadcast_to(r, (size, rows.shape[0])).reshape(-1)
    c = xp.broadcast_to(c, (size, cols.shape[0])).reshape(-1)
    return xp.ascontiguousarray(r), xp.ascontiguousarray(c)


def _spmm_rule(eqn, args, batched, size):
    data, x, ind, ptr = args
    p = eqn.params
    if any(batched[2:]) or not _concrete(ind, ptr):
        return loop_rule(eqn, args, batched, size)
    if not batched[0]:  # one matrix, many dense operands: one product with B*p columns
        xt = dnp.moveaxis(x, 0, -1) if len(x.shape) == 2 else dnp.transpose(x, (1, 0, 2))
        k = xt.shape[0]
        out = _sp.spmm.bind(data, dnp.reshape(xt, (k, -1)), ind, ptr, **p)
        out = dnp.reshape(out, (out.shape[0],) + tuple(xt.shape[1:]))
        return _one(dnp.moveaxis(out, -1, 0) if len(x.shape) == 2
                    else dnp.transpose(out, (1, 0, 2)))
    # many matrices of one pattern: one sparse matrix of size blocks (COO)
    rows, cols = _sp.coo_indices(ind, ptr, p["fmt"], p["shape"])
    R, C = p["shape"]
    flat = dnp.reshape(data, (-1,))
    if not batched[1]:
        # op(A_i) stacked down: A_i stacked down, or A_i side by side when transposed
        down = not p["transpose"]
        r, c = _block_pattern(rows, cols, (R, C), size, down, not down)
        shape = (size * R, C) if down else (R, size * C)
        out = _sp.spmm.bind(flat, x, r, c, fmt="coo", shape=shape, transpose=p["transpose"])
    else:
        r, c = _block_pattern(rows, cols, (R, C), size, True, True)
        xs = dnp.reshape(x, (-1,) + tuple(x.shape[2:]))
        out = _sp.spmm.bind(flat, xs, r, c, fmt="coo", shape=(size * R, size * C),
                            transpose=p["transpose"])
    return _one(_drop_to(out, size, eqn))


def _sddmm_rule(eqn, args, batched, size):
    g, x, ind, ptr, rows, cols = args
    p = eqn.params
    if any(batched[2:]) or not _concrete(ind, ptr, rows, cols):
        return loop_rule(eqn, args, batched, size)
    R, C = p["shape"]
    r, c = _block_pattern(rows, cols, (R, C), size, True, True)
    gs, xs = (a if b else _batched(a, size) for a, b in zip((g, x), batched))
    gs = dnp.reshape(gs, (-1,) + tuple(gs.shape[2:]))
    xs = dnp.reshape(xs, (-1,) + tuple(xs.shape[2:]))
    out = _sp.sddmm.bind(gs, xs, r, c, r, c, fmt="coo", shape=(size * R, size * C),
                         transpose=p["transpose"])
    return _one(dnp.reshape(out, (size, -1)))


# ------------------------------------------------------------------------------ linalg
def _unary_matrix_rule(eqn, args, batched, size):
    """inv, det, slogdet, cholesky: leading axes are batch axes already."""
    out = eqn.prim.bind(args[0], **eqn.params)
    outs = list(out) if eqn.prim.multiple_results else [out]
    return outs, [True] * len(outs)


def _solve_rule(eqn, args, batched, size):
    a, b = args
    ra, rb = _rank(a, batched[0]), _rank(b, batched[1])
    if not batched[1]:  # batched a, shared b
        if rb == 1:
            return _one(_dec.solve.bind(a, b))
        a2, _ = _pad_batch(a, dnp.reshape(b, (1,) + tuple(np.shape(b))))
        return _one(_drop_to(_dec.solve.bind(a2, b), size, eqn))
    if not batched[0]:  # shared a, batched b: the examples become columns
        if rb == 1:
            out = _dec.solve.bind(a, dnp.transpose(b))  # (..., n, B)
            return _one(dnp.moveaxis(out, -1, 0))
        if ra == 2 and rb == 2:
            n, m = b.shape[1:]
            wide = dnp.reshape(dnp.transpose(b, (1, 0, 2)), (n, size * m))
            out = dnp.reshape(_dec.solve.bind(a, wide), (n, size, m))
            return _one(dnp.transpose(out, (1, 0, 2)))
        _, b2 = _pad_batch(dnp.reshape(a, (1,) + tuple(np.shape(a))), b)
        return _one(_dec.solve.bind(a, b2))
    b2 = b if rb >= 2 else dnp.reshape(b, (size, b.shape[-1], 1))
    a2, b2 = _pad_batch(a, b2)
    return _one(_drop_to(_dec.solve.bind(a2, b2), size, eqn))


# ------------------------------------------------------------------------------ the table
def _register(prims, rule):
    for prim in prims:
        BATCH_RULES[prim] = rule


_register([_sh.broadcast_to], _broadcast_to_rule)
_register([_sh.transpose], _transpose_rule)
_register([_sh.reshape], _reshape_rule)
_register([_sh.pad], _pad_rule)
_register([_sh.concatenate], _concatenate_rule)
_register([_sh.getitem], _getitem_rule)
_register([_sh.scatter_add], _scatter_add_rule)
_register([_la.matmul], _matmul_rule)
_register([_la.einsum], _einsum_rule)
_register([_sp.spmm], _spmm_rule)
_register([_sp.sddmm], _sddmm_rule)
_register([_dec.inv, _dec.det, _dec.slogdet, _dec.cholesky, _dec.eigh, _dec.eig, _dec.svd,
           _dec.qr, _dec.pinv], _unary_matrix_rule)
_register([_sort.sort, _sort.argsort], _scan_rule)  # one static axis, like cumsum
_register([_dec.solve], _solve_rule)
