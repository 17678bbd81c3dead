"""Reductions over static axes: sum, max, min, prod, cumulative sums and products.

Primitives take ``axes`` (a sorted tuple) and never keep dims; ``keepdims`` is a reshape
done by :mod:`dualgpu.numpy_api`.
"""
from __future__ import annotations

import numpy as np

from .. import numpy_api as dnp
from ..core.ir import Aval
from ..core.primitives import defprim
from ._util import float_dtype


def _reduce_shape(avals, axes, **params):
    a = avals[0]
    shape = tuple(d for i, d in enumerate(a.shape) if i not in axes)
    dtype = a.dtype
    if dtype.kind == "b":
        dtype = np.dtype(np.int64)
    return Aval(shape, dtype)


def _keep_shape(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _expand_back(g, in_shape, axes):
    """Broadcast a reduced cotangent back over the reduced axes."""
    g = dnp.reshape(g, _keep_shape(in_shape, axes))
    return dnp.broadcast_to(g, in_shape)


# --------------------------------------------------------------------------- sum
def _sum_jvp(primals, tangents, axes):
    ans = reduce_sum.bind(primals[0], axes=axes)
    t = tangents[0]
    return ans, None if t is None else reduce_sum.bind(t, axes=axes)


def _sum_vjp(g, primals, ans, axes):
    return (_expand_back(g, primals[0].shape, axes),)


reduce_sum = defprim(
    "reduce_sum", lambda xp, x, axes: xp.sum(x, axis=axes), _reduce_shape,
    jvp=_sum_jvp, vjp=_sum_vjp, kind="reduction", py="xp.sum({0}, axis={axes})")


# --------------------------------------------------------------------------- max and min
def _extremum(name, numpy_name):
    def jvp(primals, tangents, axes):
        x = primals[0]
        ans = prim.bind(x, axes=axes)
        t = tangents[0]
        if t is None:
            return ans, None
        mask = _tie_weights(x, ans, axes)
        return ans, reduce_sum.bind(dnp.multiply(mask, t), axes=axes)

    def vjp(g, primals, ans, axes):
        x = primals[0]
        mask = _tie_weights(x, ans, axes)
        return (dnp.multiply(mask, _expand_back(g, x.shape, axes)),)

    prim = defprim(name, lambda xp, x, axes: getattr(xp, numpy_name)(x, axis=axes),
                   _reduce_shape, jvp=jvp, vjp=vjp, kind="reduction",
                   py=f"xp.{numpy_name}({{0}}, axis={{axes}})",
                   doc="Ties share the derivative equally among the tied elements.")
    return prim


def _tie_weights(x, ans, axes):
    """1/k at each of the k positions that attain the extremum, 0 elsewhere."""
    hit = dnp.equal(x, _expand_back(ans, x.shape, axes))
    hitf = dnp.astype(hit, float_dtype(x.dtype))
    count = reduce_sum.bind(hitf, axes=axes)
    return dnp.true_divide(hitf, _expand_back(count, x.shape, axes))


reduce_max = _extremum("reduce_max", "max")
reduce_min = _extremum("reduce_min", "min")


# --------------------------------------------------------------------------- prod
def _prod_jvp(primals, tangents, axes):
    x = primals[0]
    ans = reduce_prod.bind(x, axes=axes)
    t = tangents[0]
    if t is None:
        return ans, None
    return ans, reduce_sum.bind(dnp.multiply(_prod_others(x, axes), t), axes=axes)


def _prod_vjp(g, primals, ans, axes):
    x = primals[0]
    return (dnp.multiply(_prod_others(x, axes), _expand_back(g, x.shape, axes)),)


def _prod_others(x, axes):
    """For each element, the product of all the others along ``axes`` (zeros included).

    Moves the reduced axes last, flattens them, and multiplies exclusive cumulative products
    from the left and from the right; no division, so zeros are exact.
    """
    nd = len(x.shape)
    keep = [i for i in range(nd) if i not in axes]
    perm = keep + list(axes)
    xt = dnp.transpose(x, perm)
    kept_shape = tuple(x.shape[i] for i in keep)
    n = int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
    flat = dnp.reshape(xt, kept_shape + (n,))
    ones = dnp.ones_like(flat[..., :1])
    left = dnp.concatenate([ones, dnp.cumprod(flat[..., :-1], axis=-1)], axis=-1)
    rev = flat[..., ::-1]
    right = dnp.concatenate([ones, dnp.cumprod(rev[..., :-1], axis=-1)], axis=-1)[..., ::-1]
    others = dnp.reshape(dnp.multiply(left, right), tuple(xt.shape))
    return dnp.transpose(others, list(np.argsort(perm)))


reduce_prod = defprim(
    "reduce_prod", lambda xp, x, axes: xp.prod(x, axis=axes), _reduce_shape,
    jvp=_prod_jvp, vjp=_prod_vjp, kind="reduction", py="xp.prod({0}, axis={axes})")


# --------------------------------------------------------------------------- cumulative
def _cum_shape(avals, axis):
    return Aval(tuple(avals[0].shape), avals[0].dtype)


def _cumsum_jvp(primals, tangents, axis):
    ans = cumsum.bind(primals[0], axis=axis)
    t = tangents[0]
    return ans, None if t is None else cumsum.bind(t, axis=axis)


def _cumsum_vjp(g, primals, ans, axis):
    rev = dnp.flip(g, axis=axis)
    return (dnp.flip(cumsum.bind(rev, axis=axis), axis=axis),)


cumsum = defprim("cumsum", lambda xp, x, axis: xp.cumsum(x, axis=axis), _cum_shape,
                 jvp=_cumsum_jvp, vjp=_cumsum_vjp, kind="scan",
                 py="xp.cumsum({0}, axis={axis})")


def _cumprod_jvp(primals, tangents, axis):
    x = primals[0]
    ans = cumprod.bind(x, axis=axis)
    t = tangents[0]
    if t is None:
        return ans, None
    # d ans_k = sum_{j<=k} prod_{i<=k, i!=j} x_i t_j, computed without dividing by x.
    return ans, _cumprod_linear(x, t, axis)


def _cumprod_linear(x, t, axis):
    n = x.shape[axis]
    if n == 0:  # an empty axis (the VJP of a length-1 product takes cumprod of x[:0])
        return t
    xm = dnp.moveaxis(x, axis, -1)
    tm = dnp.moveaxis(t, axis, -1)
    cols = []
    for k in range(n):
        xk = xm[..., : k + 1]
        others = _prod_others(xk, (xk.ndim - 1,))
        cols.append(dnp.sum(dnp.multiply(others, tm[..., : k + 1]), axis=-1))
    return dnp.moveaxis(dnp.stack(cols, axis=-1), -1, axis)


def _cumprod_vjp(g, primals, ans, axis):
    x = primals[0]
    n = x.shape[axis]
    if n == 0:
        return (g,)
    xm = dnp.moveaxis(x, axis, -1)
    gm = dnp.moveaxis(g, axis, -1)
    # x_bar_j = sum_{k>=j} g_k prod_{i<=k, i!=j} x_i
    total = None
    for k in range(n):
        xk = xm[..., : k + 1]
        others = _prod_others(xk, (xk.ndim - 1,))
        term = dnp.multiply(others, gm[..., k: k + 1])
        pad = [(0, 0)] * (term.ndim - 1) + [(0, n - k - 1)]
        term = dnp.pad(term, pad)
        total = term if total is None else dnp.add(total, term)
    return (dnp.moveaxis(total, -1, axis),)


cumprod = defprim("cumprod", lambda xp, x, axis: xp.cumprod(x, axis=axis), _cum_shape,
                  jvp=_cumprod_jvp, vjp=_cumprod_vjp, kind="scan",
                  py="xp.cumprod({0}, axis={axis})",
                  doc="Derivatives are exact with zeros; cost is O(n^2) along the axis.")
