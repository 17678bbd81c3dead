"""Derivatives of the sparse products: ``spmm`` and ``sddmm`` are bilinear and each other's
transposes, so every derivative of any order stays sparse."""
from __future__ import annotations

import numpy as np

from .. import lax
from ..backends import backend_of
from ..core.primitives import defrules
from ..core.trace import Tracer
from ..ops.sparse import coo_indices, sddmm, spmm
from . import batching_rules as batching
from . import laplacian_rules
from . import sparsity_rules as sparsity
from . import taylor_rules as taylor_rules
from .common import defmultilinear, wants_cotangent


def _spmm_vjp(g, primals, ans, fmt, shape, transpose):
    data, x, ind, ptr = primals
    d_bar = x_bar = None
    if wants_cotangent(x):
        x_bar = spmm.bind(data, g, ind, ptr, fmt=fmt, shape=shape, transpose=not transpose)
    if wants_cotangent(data):
        rows, cols = coo_indices(ind, ptr, fmt, shape)
        d_bar = sddmm.bind(g, x, ind, ptr, rows, cols, fmt=fmt, shape=shape,
                           transpose=transpose)
    return d_bar, x_bar, None, None


def _sddmm_vjp(d_bar, primals, ans, fmt, shape, transpose):
    g, x, ind, ptr, rows, cols = primals
    g_bar = x_bar = None
    if wants_cotangent(g):
        g_bar = spmm.bind(d_bar, x, ind, ptr, fmt=fmt, shape=shape, transpose=transpose)
    if wants_cotangent(x):
        x_bar = spmm.bind(d_bar, g, ind, ptr, fmt=fmt, shape=shape, transpose=not transpose)
    return g_bar, x_bar, None, None, None, None


defmultilinear(spmm, _spmm_vjp)
defmultilinear(sddmm, _sddmm_vjp)

# --------------------------------------------------------------------------- batching (vmap)
def _concrete(*xs) -> bool:
    return not any(isinstance(x, Tracer) for x in xs)


def _block_pattern(rows, cols, shape, size, stack_rows: bool, stack_cols: bool):
    """COO indices of ``size`` copies of a pattern: stacked down (rows offset), across
    (cols offset) or on the diagonal (both)."""
    xp = backend_of((rows,)).xp
    k = xp.arange(size, dtype=np.int64)[:, None]
    r = rows.astype(np.int64)[None, :] + (k * shape[0] if stack_rows else 0)
    c = cols.astype(np.int64)[None, :] + (k * shape[1] if stack_cols else 0)
    r = xp.broadcast_to(r, (size, rows.shape[0])).reshape(-1)
    c = xp.broadcast_to(c, (size, cols.shape[0])).reshape(-1)
    return xp.ascontiguousarray(r), xp.ascontiguousarray(c)


def _spmm_vmap(eqn, args, batched, size):
    data, x, ind, ptr = args
    p = eqn.params
    if any(batched[2:]) or not _concrete(ind, ptr):
        return batching.loop_rule(eqn, args, batched, size)
    if not batched[0]:  # one matrix, many dense operands: one product with B*p columns
        xt = lax.moveaxis(x, 0, -1) if len(x.shape) == 2 else lax.transpose(x, (1, 0, 2))
        k = xt.shape[0]
        out = spmm.bind(data, lax.reshape(xt, (k, -1)), ind, ptr, **p)
        out = lax.reshape(out, (out.shape[0],) + tuple(xt.shape[1:]))
        return batching.one(lax.moveaxis(out, -1, 0) if len(x.shape) == 2
                    else lax.transpose(out, (1, 0, 2)))
    # many matrices of one pattern: one sparse matrix of size blocks (COO)
    rows, cols = coo_indices(ind, ptr, p["fmt"], p["shape"])
    R, C = p["shape"]
    flat = lax.reshape(data, (-1,))
    if not batched[1]:
        # op(A_i) stacked down: A_i stacked down, or A_i side by side when transposed
        down = not p["transpose"]
        r, c = _block_pattern(rows, cols, (R, C), size, down, not down)
        shape = (size * R, C) if down else (R, size * C)
        out = spmm.bind(flat, x, r, c, fmt="coo", shape=shape, transpose=p["transpose"])
    else:
        r, c = _block_pattern(rows, cols, (R, C), size, True, True)
        xs = lax.reshape(x, (-1,) + tuple(x.shape[2:]))
        out = spmm.bind(flat, xs, r, c, fmt="coo", shape=(size * R, size * C),
                            transpose=p["transpose"])
    return batching.one(batching.drop_to(out, size, eqn))


def _sddmm_vmap(eqn, args, batched, size):
    g, x, ind, ptr, rows, cols = args
    p = eqn.params
    if any(batched[2:]) or not _concrete(ind, ptr, rows, cols):
        return batching.loop_rule(eqn, args, batched, size)
    R, C = p["shape"]
    r, c = _block_pattern(rows, cols, (R, C), size, True, True)
    gs, xs = (a if b else batching.batched(a, size) for a, b in zip((g, x), batched))
    gs = lax.reshape(gs, (-1,) + tuple(gs.shape[2:]))
    xs = lax.reshape(xs, (-1,) + tuple(xs.shape[2:]))
    out = sddmm.bind(gs, xs, r, c, r, c, fmt="coo", shape=(size * R, size * C),
                         transpose=p["transpose"])
    return batching.one(lax.reshape(out, (size, -1)))


defrules(spmm, vmap=_spmm_vmap)
defrules(sddmm, vmap=_sddmm_vmap)

# ------------------------------------------------------------------ jets (forward Laplacian)
for _prim in (spmm, sddmm):  # bilinear
    defrules(_prim, laplacian=laplacian_rules.multilinear_rule)
    defrules(_prim, taylor=taylor_rules.multilinear_rule)  # Taylor mode: Leibniz sums


# ------------------------------------------------------------------ sparsity patterns
def _terms(first, second, width):
    """Flat indices of the terms ``(entry, k)``: ``first * width + k`` and likewise."""
    k = np.arange(width, dtype=np.int64)
    return ((first.astype(np.int64)[:, None] * width + k).ravel(),
            (second.astype(np.int64)[:, None] * width + k).ravel())


def _spmm_sparsity(eqn, deps, ctx):
    # out[r_e, q] += data[e] * x[c_e, q] over the stored entries e: by the sparse pattern
    data, x, ind, ptr = ctx.values[:4]
    if ind is None or ptr is None:
        return sparsity.dense_block(eqn, deps, ctx)
    p = eqn.params
    rows, cols = (np.asarray(i) for i in coo_indices(ind, ptr, p["fmt"], p["shape"]))
    if p["transpose"]:
        rows, cols = cols, rows
    width = int(eqn.inputs[1].shape[1]) if eqn.inputs[1].ndim == 2 else 1
    out_index, x_index = _terms(rows, cols, width)
    data_index = np.repeat(np.arange(len(rows), dtype=np.int64), width)
    out_size = int(np.prod(eqn.outs[0].shape, dtype=np.int64))
    return sparsity.multilinear(ctx, out_size, deps[:2], [data, x], out_index,
                                [data_index, x_index])


def _sddmm_sparsity(eqn, deps, ctx):
    # out[e] = sum_k g[gi_e, k] * x[xi_e, k] at the stored entries e
    g, x, ind, ptr, rows, cols = ctx.values
    if rows is None or cols is None:
        return sparsity.dense_block(eqn, deps, ctx)
    gi, xi = (cols, rows) if eqn.params["transpose"] else (rows, cols)
    width = int(eqn.inputs[0].shape[1]) if eqn.inputs[0].ndim == 2 else 1
    g_index, x_index = _terms(np.asarray(gi), np.asarray(xi), width)
    out_index = np.repeat(np.arange(len(gi), dtype=np.int64), width)
    return sparsity.multilinear(ctx, len(gi), deps[:2], [g, x], out_index, [g_index, x_index])


defrules(spmm, sparsity=_spmm_sparsity)
defrules(sddmm, sparsity=_sddmm_sparsity)
