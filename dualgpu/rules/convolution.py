"""Rules of ``conv`` (:mod:`dualgpu.ops.convolution`). The op is bilinear, so its JVP comes
from ``defmultilinear``, and each operand's transpose is another ``conv``:

* ``lhs``: the cotangent correlated with the window flipped, its input and output features
  swapped within each group; the forward strides become the input dilation and the
  forward input dilation the strides (JAX's ``_conv_general_vjp_lhs_padding``);
* ``rhs``: the input (features as the batch, the batch as features, the groups kept)
  correlated with the cotangent as the window, dilated by the forward strides, with the
  forward window dilation as the strides.

Both are convolutions, so derivatives of every order are. Batching folds the batch into the
examples (``lhs``) or into the feature groups (``rhs``); the forward Laplacian and Taylor
mode use the multilinear rules over that batching.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.primitives import defrules
from ..ops.convolution import conv, dilated
from . import batching_rules as batching
from . import laplacian_rules, taylor_rules
from . import sparsity_rules as sparsity
from .common import defmultilinear, unbroadcast, wants_cotangent
from .separability_rules import labelled


# --------------------------------------------------------------------------- derivatives
def _lhs_transpose(g, lhs, rhs, params):
    groups = params["feature_group_count"]
    o, i = rhs.shape[:2]
    window, d = tuple(rhs.shape[2:]), len(rhs.shape) - 2
    kernel = lax.reshape(rhs, (groups, o // groups, i) + window)
    kernel = lax.transpose(kernel, (0, 2, 1) + tuple(range(3, 3 + d)))
    kernel = lax.flip(lax.reshape(kernel, (groups * i, o // groups) + window),
                      tuple(range(2, 2 + d)))
    padding = []
    for size, k, y, s, (lo, _), ld, rd in zip(
            lhs.shape[2:], window, g.shape[2:], params["window_strides"], params["padding"],
            params["lhs_dilation"], params["rhs_dilation"]):
        before = dilated(k, rd) - 1 - lo
        padding.append((before, dilated(size, ld) + dilated(k, rd) - 1 - dilated(y, s)
                        - before))
    return conv.bind(g, kernel, window_strides=params["lhs_dilation"], padding=tuple(padding),
                     lhs_dilation=params["window_strides"],
                     rhs_dilation=params["rhs_dilation"], feature_group_count=groups)


def _rhs_transpose(g, lhs, rhs, params):
    groups = params["feature_group_count"]
    n, c = lhs.shape[:2]
    i, spatial = c // groups, tuple(lhs.shape[2:])
    d = len(spatial)
    rest = tuple(range(3, 3 + d))
    # features as the examples, the examples as features (in their groups)
    x = lax.reshape(lhs, (n, groups, i) + spatial)
    x = lax.reshape(lax.transpose(x, (2, 1, 0) + rest), (i, groups * n) + spatial)
    window = lax.transpose(g, (1, 0) + tuple(range(2, 2 + d)))
    padding = []
    for size, k, y, s, (lo, _), ld, rd in zip(
            spatial, rhs.shape[2:], g.shape[2:], params["window_strides"], params["padding"],
            params["lhs_dilation"], params["rhs_dilation"]):
        padding.append((lo, dilated(k, rd) + dilated(y, s) - 1 - dilated(size, ld) - lo))
    ct = conv.bind(x, window, window_strides=params["rhs_dilation"], padding=tuple(padding),
                   lhs_dilation=params["lhs_dilation"], rhs_dilation=params["window_strides"],
                   feature_group_count=groups)
    return lax.transpose(ct, (1, 0) + tuple(range(2, 2 + d)))


def _conv_vjp(g, primals, ans, **params):
    lhs, rhs = primals
    cts = []
    for x, transpose in ((lhs, _lhs_transpose), (rhs, _rhs_transpose)):
        if not wants_cotangent(x):
            cts.append(None)
        elif 0 in tuple(ans.shape) + tuple(lhs.shape) + tuple(rhs.shape):  # nothing to read
            cts.append(lax.zeros_like(x))
        else:
            cts.append(unbroadcast(transpose(g, lhs, rhs, params), x.aval))
    return tuple(cts)


defmultilinear(conv, _conv_vjp)


# --------------------------------------------------------------------------- batching (vmap)
def _conv_vmap(eqn, args, batched, size):
    lhs, rhs = args
    params = dict(eqn.params)
    if not batched[1]:  # the examples of every batch are examples of one conv
        n = lhs.shape[1]
        out = conv.bind(lax.reshape(lhs, (size * n,) + tuple(lhs.shape[2:])), rhs, **params)
        return batching.one(lax.reshape(out, (size, n) + tuple(out.shape[1:])))
    # a window per batch: the batches become feature groups of one conv
    if batched[0]:
        lhs = lax.moveaxis(lhs, 0, 1)
    else:
        lhs = lax.broadcast_to(lax.expand_dims(lhs, 1),
                               (lhs.shape[0], size) + tuple(lhs.shape[1:]))
    n, c, spatial = lhs.shape[0], lhs.shape[2], tuple(lhs.shape[3:])
    o = rhs.shape[1]
    params["feature_group_count"] *= size
    out = conv.bind(lax.reshape(lhs, (n, size * c) + spatial),
                    lax.reshape(rhs, (size * o,) + tuple(rhs.shape[2:])), **params)
    out = lax.reshape(out, (n, size, o) + tuple(out.shape[2:]))
    return batching.one(lax.moveaxis(out, 1, 0))


# ------------------------------------------------------------------ separability
def _conv_separability(eqn, dep, sizes):
    """Instances along the examples of ``lhs`` (or the output features of ``rhs``) stay
    apart; any other axis is summed over or mixed by the windows."""
    d = eqn.inputs[0].ndim - 2
    return labelled(["nc" + "abdefh"[:d], "oi" + "jklmpq"[:d]], "no" + "rstuvw"[:d], dep)


# ------------------------------------------------------------------ sparsity patterns
def _conv_sparsity(eqn, deps, ctx):
    """Every term ``lhs[n, group(o) * I + c, j] * rhs[o, c, k]`` added into ``out[n, o,
    y]``, where ``j * lhs_dilation = y * stride + k * rhs_dilation - low padding``."""
    lhs, rhs = eqn.inputs
    out, p = eqn.outs[0], eqn.params
    n, c = lhs.shape[:2]
    o, i = rhs.shape[:2]
    d = lhs.ndim - 2
    grid = (n, o, i) + tuple(out.shape[2:]) + tuple(rhs.shape[2:])
    sparsity.check_count(int(np.prod(grid, dtype=np.int64)), "the enumeration of conv")

    def along(axis):
        return np.arange(grid[axis], dtype=np.int64).reshape(
            [-1 if a == axis else 1 for a in range(len(grid))])

    on, oo, oc = along(0), along(1), along(2)
    out_index, rhs_index = on * o + oo, oo * i + oc
    lhs_index = on * c + (oo // (o // p["feature_group_count"])) * i + oc
    valid = np.ones((1,) * len(grid), dtype=bool)
    for t in range(d):
        y, k = along(3 + t), along(3 + d + t)
        pos = y * p["window_strides"][t] + k * p["rhs_dilation"][t] - p["padding"][t][0]
        j, off = np.divmod(pos, p["lhs_dilation"][t])
        valid = valid & (off == 0) & (j >= 0) & (j < lhs.shape[2 + t])
        out_index = out_index * out.shape[2 + t] + y
        lhs_index = lhs_index * lhs.shape[2 + t] + j
        rhs_index = rhs_index * rhs.shape[2 + t] + k
    keep = np.broadcast_to(valid, grid).ravel()
    flat = [np.broadcast_to(x, grid).ravel()[keep] for x in (out_index, lhs_index, rhs_index)]
    size = int(np.prod(out.shape, dtype=np.int64))
    return sparsity.multilinear(ctx, size, deps, ctx.values, flat[0], flat[1:])


defrules(conv, vmap=_conv_vmap, separability=_conv_separability,
         laplacian=laplacian_rules.multilinear_rule,
         taylor=taylor_rules.multilinear_rule, sparsity=_conv_sparsity)
