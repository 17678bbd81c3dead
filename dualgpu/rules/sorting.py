"""Derivatives of ``sort``: the output is the input gathered by the stable sorting
permutation, so the JVP gathers the tangent the same way and the VJP scatters the cotangent
back (the transpose of the gather). Both are ``getitem``/``scatter_add``, which
differentiate again, so the HVP needs nothing more."""
from __future__ import annotations

from .. import lax
from ..core.primitives import defrules
from ..ops.sorting import argsort, sort
from . import batching_rules as batching
from . import sparsity_rules as sparsity


def _sort_jvp(primals, tangents, axis):
    x = primals[0]
    ans = sort.bind(x, axis=axis)
    t = tangents[0]
    if t is None:
        return ans, None
    return ans, lax.take_along_axis(t, argsort.bind(x, axis=axis), axis)


def _sort_vjp(g, primals, ans, axis):
    x = primals[0]
    return (lax.put_along_axis_add(g, argsort.bind(x, axis=axis), axis, x.shape),)


defrules(sort, jvp=_sort_jvp, vjp=_sort_vjp, vmap=batching.axis_rule)  # one static axis
defrules(argsort, vmap=batching.axis_rule)
defrules(sort, sparsity=sparsity.along_axis)  # argsort: no derivative, by its flag
