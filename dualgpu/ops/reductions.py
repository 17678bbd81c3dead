"""Reductions over static axes: sum, max, min, prod, cumulative sums and products.

Primitives take ``axes`` (a sorted tuple) and never keep dims; ``keepdims`` is a reshape
done by :mod:`dualgpu.lax`. Derivatives: :mod:`dualgpu.rules.reductions`.

>>> from dualgpu.ops.reductions import reduce_max
>>> reduce_max.monoid, reduce_max.has("reduction")
('max', True)
"""
from __future__ import annotations

import numpy as np

from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import deflowering, defprim


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
