"""N-d convolution: ``conv``, a correlation of ``lhs`` (N, C, *spatial) with windows
``rhs`` (O, C // groups, *window) under window strides, padding (negative: cropping), input
(``lhs``) and window (``rhs``) dilations and feature groups -- XLA's ConvGeneralDilated in
the layout ``NC...``/``OI...``/``NC...``. A library op, bilinear in its operands: each
operand's transpose is the op again (its rules below), so derivatives of
every order are convolutions. The layouts of JAX's ``dimension_numbers`` are transposes
around it (:func:`dualgpu.lax.conv_general_dilated`); SciPy's ``convolve`` and ``correlate``
are padded and flipped calls (:mod:`dualgpu.frontend.scipy.signal`).

The value: ``lhs`` dilated (``lhs_dilation - 1`` zeros between entries) and padded, read
through a strided view of its windows and contracted with ``rhs`` in one ``einsum`` (a
GEMM of the windows), on NumPy and CuPy alike:

    >>> from dualgpu.ops.convolution import conv
    >>> x = np.arange(5.0).reshape(1, 1, 5)
    >>> conv(x, np.ones((1, 1, 2)), window_strides=(1,), padding=((0, 0),), lhs_dilation=(1,),
    ...      rhs_dilation=(1,), feature_group_count=1)
    array([[[1., 3., 5., 7.]]])
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.dtypes import promote
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import defprim, defrules, refuse_export
from ..errors import DualgpuError
from ..rules import batching_rules as batching
from ..rules import laplacian_rules, taylor_rules
from ..rules import sparsity_rules as sparsity
from ..rules.common import defmultilinear, unbroadcast, wants_cotangent
from ..rules.separability_rules import labelled

# the einsum labels of the spatial axes: output positions and window offsets
_OUT_LABELS = "ABDEFHIJKLMPQRSTUVWXYZ"
_WINDOW_LABELS = "abdefhijklmpqrstuvwxyz"


def dilated(size: int, dilation: int) -> int:
    """The length of an axis of ``size`` entries with ``dilation - 1`` zeros between them."""
    return 0 if size == 0 else (size - 1) * dilation + 1


def output_size(size: int, window: int, stride: int, pad: tuple, lhs_dilation: int,
                rhs_dilation: int) -> int:
    """The number of window positions along one spatial axis (0 when the window does not
    fit)."""
    span = dilated(size, lhs_dilation) + pad[0] + pad[1] - dilated(window, rhs_dilation)
    return max(0, span // stride + 1) if span >= 0 else 0


def _positive(values, what: str, d: int) -> tuple:
    values = tuple(values)
    if len(values) != d or not all(isinstance(v, (int, np.integer)) and v >= 1
                                   for v in values):
        raise DualgpuError(f"conv: {what} must be {d} positive integers, got {values!r}")
    return values


def _shape(avals, window_strides, padding, lhs_dilation, rhs_dilation, feature_group_count):
    lhs, rhs = avals
    if lhs.ndim < 2 or lhs.ndim != rhs.ndim:
        raise DualgpuError(f"conv: lhs (N, C, *spatial) and rhs (O, I, *window) must have the "
                           f"same rank, 2 or more, got {lhs.str_short()} and {rhs.str_short()}")
    d = lhs.ndim - 2
    strides = _positive(window_strides, "window_strides", d)
    ldil = _positive(lhs_dilation, "lhs_dilation", d)
    rdil = _positive(rhs_dilation, "rhs_dilation", d)
    if len(padding) != d or not all(len(p) == 2 for p in padding):
        raise DualgpuError(f"conv: padding must be {d} (low, high) pairs, got {padding!r}")
    groups = feature_group_count
    n, c = lhs.shape[:2]
    o, i = rhs.shape[:2]
    if not isinstance(groups, (int, np.integer)) or groups < 1 or c != i * groups \
            or o % groups:
        raise DualgpuError(f"conv: lhs {lhs.str_short()} has {c} feature(s) and rhs "
                           f"{rhs.str_short()} {o} output and {i} input feature(s): with "
                           f"feature_group_count={groups!r}, lhs needs {i * groups} and the "
                           f"{o} output features must split into the groups")
    spatial = tuple(output_size(*args) for args in zip(
        lhs.shape[2:], rhs.shape[2:], strides, padding, ldil, rdil))
    return Aval((n, o) + spatial, promote(avals))


def _dilate_and_pad(xp, x, padding, dilation, dtype):
    """``x`` with ``dilation - 1`` zeros between entries along its spatial axes, padded by
    ``padding`` (a negative amount crops), in a new contiguous array."""
    spatial = x.shape[2:]
    shape = [dilated(s, d) + lo + hi for s, d, (lo, hi) in zip(spatial, dilation, padding)]
    out = xp.zeros(tuple(x.shape[:2]) + tuple(shape), dtype)
    src, dst = [slice(None)] * 2, [slice(None)] * 2
    for s, d, (lo, _), size in zip(spatial, dilation, padding, shape):
        first = max(0, -(lo // d))             # the first entry not cropped away
        last = min(s, (size - 1 - lo) // d + 1) if size > 0 else 0
        if last <= first:
            return out
        src.append(slice(first, last))
        dst.append(slice(lo + first * d, lo + (last - 1) * d + 1, d))
    out[tuple(dst)] = x[tuple(src)]
    return out


def _impl(xp, lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
          feature_group_count):
    out = _shape([Aval(lhs.shape, lhs.dtype), Aval(rhs.shape, rhs.dtype)], window_strides,
                 padding, lhs_dilation, rhs_dilation, feature_group_count)
    if out.size == 0 or rhs.size == 0:
        return xp.zeros(out.shape, out.dtype)
    x = _dilate_and_pad(xp, lhs, padding, lhs_dilation, out.dtype)
    groups, d = feature_group_count, lhs.ndim - 2
    n, c = lhs.shape[:2]
    o, i = rhs.shape[:2]
    window, spatial = tuple(rhs.shape[2:]), tuple(out.shape[2:])
    step = x.strides[2:]
    windows = xp.lib.stride_tricks.as_strided(
        x, (n, groups, i) + spatial + window,
        (x.strides[0], i * x.strides[1], x.strides[1])
        + tuple(int(b * s) for b, s in zip(step, window_strides))
        + tuple(int(b * r) for b, r in zip(step, rhs_dilation)))
    kernel = rhs.astype(out.dtype, copy=False).reshape((groups, o // groups, i) + window)
    ys, ks = _OUT_LABELS[:d], _WINDOW_LABELS[:d]
    ans = xp.einsum(f"ngc{ys}{ks},goc{ks}->ngo{ys}", windows, kernel, optimize=True)
    return ans.reshape(out.shape)


conv = defprim(
    "conv", _impl, _shape, kind=Flag.LIBRARY, arity=2,
    py="ops.conv({0}, {1}, {window_strides}, {padding}, {lhs_dilation}, {rhs_dilation}, "
       "{feature_group_count})",
    doc="N-d correlation of lhs (N, C, *spatial) with rhs (O, C // groups, *window): window "
        "strides, (low, high) padding, lhs and rhs dilations, feature groups (XLA's "
        "ConvGeneralDilated); bilinear, its transposes are convolutions.")
refuse_export(conv, "convolutions cannot be exported yet")

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
