"""Reductions over static axes: sum, max, min, prod, cumulative sums and products.

Primitives take ``axes`` (a sorted tuple) and never keep dims; ``keepdims`` is a reshape
done by :mod:`dualgpu.lax`. Each op's rules follow its declaration.

>>> from dualgpu.ops.reductions import reduce_max
>>> reduce_max.monoid, reduce_max.has("reduction")
('max', True)
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.dtypes import float_dtype
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import deflowering, defprim, defrules
from ..rules import taylor_rules as taylor_rules
from ..rules.common import deflinear


def _reduce_shape(avals, axes, **params):
    a = avals[0]
    shape = tuple(d for i, d in enumerate(a.shape) if i not in axes)
    dtype = a.dtype
    if dtype.kind == "b":
        dtype = np.dtype(np.int64)
    return Aval(shape, dtype)


def _reduction(name, numpy_name, monoid, flags=(), doc=""):
    return defprim(name, lambda xp, x, axes: getattr(xp, numpy_name)(x, axis=axes),
                   _reduce_shape, kind=Flag.REDUCTION, monoid=monoid, flags=flags, arity=1,
                   py=f"xp.{numpy_name}({{0}}, axis={{axes}})", doc=doc)


reduce_sum = _reduction("reduce_sum", "sum", "sum", flags=(Flag.LINEAR,))
deflowering(reduce_sum, library="sum_as_gemm")
_TIES = "Ties share the derivative equally among the tied elements."
reduce_max = _reduction("reduce_max", "max", "max", doc=_TIES)
reduce_min = _reduction("reduce_min", "min", "min", doc=_TIES)
reduce_prod = _reduction("reduce_prod", "prod", "prod")


# --------------------------------------------------------------------------- cumulative
def _cum_shape(avals, axis):
    return Aval(tuple(avals[0].shape), avals[0].dtype)


cumsum = defprim("cumsum", lambda xp, x, axis: xp.cumsum(x, axis=axis), _cum_shape,
                 kind=Flag.SCAN, flags=(Flag.LINEAR,), arity=1,
                 py="xp.cumsum({0}, axis={axis})")
cumprod = defprim("cumprod", lambda xp, x, axis: xp.cumprod(x, axis=axis), _cum_shape,
                  kind=Flag.SCAN, arity=1, py="xp.cumprod({0}, axis={axis})",
                  doc="Derivatives are exact with zeros; cost is O(n^2) along the axis.")

def _keep_shape(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _expand_back(g, in_shape, axes):
    """Broadcast a reduced cotangent back over the reduced axes."""
    g = lax.reshape(g, _keep_shape(in_shape, axes))
    return lax.broadcast_to(g, in_shape)


deflinear(reduce_sum, lambda g, x, axes: _expand_back(g, x.shape, axes))
deflinear(cumsum, lambda g, x, axis: lax.flip(cumsum.bind(lax.flip(g, axis=axis), axis=axis),
                                              axis=axis))


# --------------------------------------------------------------------------- max and min
def _tie_weights(x, ans, axes):
    """1/k at each of the k positions that attain the extremum, 0 elsewhere."""
    hit = lax.equal(x, _expand_back(ans, x.shape, axes))
    hitf = lax.astype(hit, float_dtype(x.dtype))
    count = reduce_sum.bind(hitf, axes=axes)
    return lax.true_divide(hitf, _expand_back(count, x.shape, axes))


def _extremum_rules(prim):
    def jvp(primals, tangents, axes):
        x = primals[0]
        ans = prim.bind(x, axes=axes)
        t = tangents[0]
        if t is None:
            return ans, None
        mask = _tie_weights(x, ans, axes)
        return ans, reduce_sum.bind(lax.multiply(mask, t), axes=axes)

    def vjp(g, primals, ans, axes):
        x = primals[0]
        mask = _tie_weights(x, ans, axes)
        return (lax.multiply(mask, _expand_back(g, x.shape, axes)),)

    defrules(prim, jvp=jvp, vjp=vjp)


_extremum_rules(reduce_max)
_extremum_rules(reduce_min)


# --------------------------------------------------------------------------- prod
def _prod_jvp(primals, tangents, axes):
    x = primals[0]
    ans = reduce_prod.bind(x, axes=axes)
    t = tangents[0]
    if t is None:
        return ans, None
    return ans, reduce_sum.bind(lax.multiply(_prod_others(x, axes), t), axes=axes)


def _prod_vjp(g, primals, ans, axes):
    x = primals[0]
    return (lax.multiply(_prod_others(x, axes), _expand_back(g, x.shape, axes)),)


def _prod_others(x, axes):
    """For each element, the product of all the others along ``axes`` (zeros included).

    Moves the reduced axes last, flattens them, and multiplies exclusive cumulative products
    from the left and from the right; no division, so zeros are exact.
    """
    nd = len(x.shape)
    keep = [i for i in range(nd) if i not in axes]
    perm = keep + list(axes)
    xt = lax.transpose(x, perm)
    kept_shape = tuple(x.shape[i] for i in keep)
    n = int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
    flat = lax.reshape(xt, kept_shape + (n,))
    ones = lax.ones_like(flat[..., :1])
    left = lax.concatenate([ones, lax.cumprod(flat[..., :-1], axis=-1)], axis=-1)
    rev = flat[..., ::-1]
    right = lax.concatenate([ones, lax.cumprod(rev[..., :-1], axis=-1)], axis=-1)[..., ::-1]
    others = lax.reshape(lax.multiply(left, right), tuple(xt.shape))
    return lax.transpose(others, list(np.argsort(perm)))


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
    xm = lax.moveaxis(x, axis, -1)
    tm = lax.moveaxis(t, axis, -1)
    cols = []
    for k in range(n):
        xk = xm[..., : k + 1]
        others = _prod_others(xk, (xk.ndim - 1,))
        cols.append(lax.sum(lax.multiply(others, tm[..., : k + 1]), axis=-1))
    return lax.moveaxis(lax.stack(cols, axis=-1), -1, axis)


def _cumprod_vjp(g, primals, ans, axis):
    x = primals[0]
    n = x.shape[axis]
    if n == 0:
        return (g,)
    xm = lax.moveaxis(x, axis, -1)
    gm = lax.moveaxis(g, axis, -1)
    # x_bar_j = sum_{k>=j} g_k prod_{i<=k, i!=j} x_i
    total = None
    for k in range(n):
        xk = xm[..., : k + 1]
        others = _prod_others(xk, (xk.ndim - 1,))
        term = lax.multiply(others, gm[..., k: k + 1])
        pad = [(0, 0)] * (term.ndim - 1) + [(0, n - k - 1)]
        term = lax.pad(term, pad)
        total = term if total is None else lax.add(total, term)
    return (lax.moveaxis(total, -1, axis),)


defrules(reduce_prod, jvp=_prod_jvp, vjp=_prod_vjp)
defrules(cumprod, jvp=_cumprod_jvp, vjp=_cumprod_vjp)

# ------------------------------------------------------------------ jets (forward Laplacian)
def _extremum_jet(eqn, values, jets, mode):
    """Locally a weighted selection (ties share the weight): linear, no curvature."""
    x = values[0]
    axes = eqn.params["axes"]
    ans = eqn.prim.bind(x, axes=axes)
    keep = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    hit = lax.astype(lax.equal(x, lax.reshape(ans, keep)), x.dtype)
    w = lax.true_divide(hit, lax.reshape(reduce_sum.bind(hit, axes=axes), keep))
    J, S = jets[0]
    Jy = reduce_sum.bind(lax.multiply(w, J), axes=tuple(a + 1 for a in axes))
    Sy = None
    if S is not None:
        s_axes = tuple(a + 1 for a in axes) if mode.diag else axes
        Sy = reduce_sum.bind(lax.multiply(w, S), axes=s_axes)
    return [(Jy, Sy)]


for _prim in (reduce_max, reduce_min):
    defrules(_prim, laplacian=_extremum_jet)


# ------------------------------------------------------------------ Taylor mode
def _extremum_taylor(eqn, values, series, mode):
    """Locally a weighted selection (ties share the weight, as the JVP): every coefficient
    selected alike (the weights are piecewise constant, so no higher terms)."""
    x = values[0]
    axes = eqn.params["axes"]
    ans = eqn.prim.bind(x, axes=axes)
    if series[0] is None:
        return [None]
    keep = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    hit = lax.astype(lax.equal(x, lax.reshape(ans, keep)), x.dtype)
    w = lax.true_divide(hit, lax.reshape(reduce_sum.bind(hit, axes=axes), keep))
    lead = 0 if mode.size is None else 1
    out = [None if c is None else
           reduce_sum.bind(lax.multiply(w, c), axes=tuple(a + lead for a in axes))
           for c in series[0]]
    return [taylor_rules.finish(out, ans, mode)]


for _prim in (reduce_max, reduce_min):
    defrules(_prim, taylor=_extremum_taylor)
