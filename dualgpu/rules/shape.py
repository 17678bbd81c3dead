"""Derivatives of the shape and indexing ops. All but ``pad`` are linear: ``deflinear``
takes the transpose (the VJP) alone and derives the JVP."""
from __future__ import annotations

import numpy as np

from .. import numpy_api as dnp
from ..core.primitives import defrules
from ..ops.shape import broadcast_to, concatenate, getitem, pad, reshape, scatter_add, transpose
from ._util import deflinear, unbroadcast

deflinear(reshape, lambda g, x, new_shape: reshape.bind(g, new_shape=tuple(x.shape)))
deflinear(transpose, lambda g, x, perm: transpose.bind(
    g, perm=tuple(int(i) for i in np.argsort(perm))))
deflinear(broadcast_to, lambda g, x, shape: unbroadcast(g, x.aval))
deflinear(getitem, lambda g, x, *arrays, key: scatter_add.bind(
    g, *arrays, key=key, shape=tuple(x.shape)))
deflinear(scatter_add, lambda ct, g, *arrays, key, shape: getitem.bind(ct, *arrays, key=key))


def _concat_jvp(primals, tangents, axis):
    ans = concatenate.bind(*primals, axis=axis)
    if all(t is None for t in tangents):
        return ans, None
    ts = [dnp.zeros_like(p, dtype=ans.dtype) if t is None else t
          for p, t in zip(primals, tangents)]
    return ans, concatenate.bind(*ts, axis=axis)


def _concat_vjp(g, primals, ans, axis):
    cts, start = [], 0
    for p in primals:
        n = p.shape[axis]
        key = tuple(("slice", None, None, None) for _ in range(axis)) + (
            ("slice", start, start + n, None),)
        cts.append(unbroadcast(getitem.bind(g, key=key), p.aval) if hasattr(p, "aval")
                   else None)
        start += n
    return tuple(cts)


def _pad_jvp(primals, tangents, pad_width, value):
    ans = pad.bind(primals[0], pad_width=pad_width, value=value)
    t = tangents[0]
    return ans, None if t is None else pad.bind(t, pad_width=pad_width, value=0)


def _pad_vjp(g, primals, ans, pad_width, value):
    key = tuple(("slice", lo, lo + d, None) for d, (lo, hi) in zip(primals[0].shape, pad_width))
    return (getitem.bind(g, key=key),)


defrules(concatenate, jvp=_concat_jvp, vjp=_concat_vjp)
defrules(pad, jvp=_pad_jvp, vjp=_pad_vjp)
