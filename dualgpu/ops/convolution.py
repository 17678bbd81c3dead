"""N-d convolution: ``conv``, a correlation of ``lhs`` (N, C, *spatial) with windows
``rhs`` (O, C // groups, *window) under window strides, padding (negative: cropping), input
(``lhs``) and window (``rhs``) dilations and feature groups -- XLA's ConvGeneralDilated in
the layout ``NC...``/``OI...``/``NC...``. A library op, bilinear in its operands: each
operand's transpose is the op again (:mod:`dualgpu.rules.convolution`), so derivatives of
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

from ..core.dtypes import promote
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import defprim, refuse_export
from ..errors import DualgpuError

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
