"""Derivatives of the sparse products: ``spmm`` and ``sddmm`` are bilinear and each other's
transposes, so every derivative of any order stays sparse."""
from __future__ import annotations

from ..ops.sparse import coo_indices, sddmm, spmm
from ._util import defmultilinear, wants_cotangent


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
