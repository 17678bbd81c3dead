"""``np.argmax`` and ``np.argmin``: the index of the first largest (smallest) entry along an
axis, NaN counting as the extreme (NumPy's rule).

One module holds the two ops: their declarations (library calls whose int64 output carries
no derivative), their rules (``vmap``: the axis moves one place right; ``separability``: the
output reads the whole axis, so an instance axis there couples instances, and the other
instance axes move like a reduction's) and the NumPy functions.

    >>> x = np.array([[1.0, 5.0, 5.0], [7.0, -1.0, 0.0]])
    >>> dg.jit(lambda x: np.argmax(x, axis=1))(x)
    array([1, 0])
    >>> dg.grad(lambda x: np.sum(x[np.arange(2), np.argmin(x, axis=1)]))(x)
    array([[1., 0., 0.],
           [0., 1., 0.]])
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.axes import check_axis
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import defprim, defrules
from ..errors import UnsupportedOpError, user_location
from ..rules import batching_rules as batching
from ..rules.separability_rules import Coupling


def _declare(name: str):
    def impl(xp, x, axis):
        return getattr(xp, name)(x, axis=axis).astype(np.int64, copy=False)

    def shape(avals, axis):
        a = avals[0]
        check_axis(axis, a.ndim, name)
        return Aval(tuple(d for i, d in enumerate(a.shape) if i != axis), np.dtype(np.int64))

    return defprim(name, impl, shape, kind=Flag.LIBRARY, arity=1, differentiable=False,
                   flags={Flag.INDICES_OF_AXIS},
                   py=f"xp.{name}({{0}}, axis={{axis}}).astype(xp.int64, copy=False)",
                   doc=f"np.{name} along one (non-negative) axis (int64); no derivative.")


argmax_p = _declare("argmax")
argmin_p = _declare("argmin")


# --------------------------------------------------------------------------- rules
def _separability(eqn, dep, sizes):
    axis = eqn.params["axis"]
    (_, m), = dep
    if any(at.pos == axis for at in m):
        raise Coupling(f"{eqn.prim.name} compares entries along an instance axis")
    return tuple(at.moved(at.pos - (1 if at.pos > axis else 0)) for at in m)


for _prim in (argmax_p, argmin_p):
    defrules(_prim, vmap=batching.axis_rule, separability=_separability)


# --------------------------------------------------------------------------- NumPy's functions
def _arg_extremum(prim, a, axis, out, keepdims):
    if out is not None:
        raise UnsupportedOpError(f"np.{prim.name}(out=...) is not supported on traced values "
                                 f"(at {user_location()})")
    if not (lax.is_tracer(a) or hasattr(a, "dtype")):
        a = np.asarray(a)
    shape = lax.shape_of(a)
    if axis is None:
        r = prim.bind(lax.ravel(a), axis=0)
        return lax.reshape(r, (1,) * len(shape)) if keepdims else r
    axis = check_axis(axis, len(shape), prim.name)
    r = prim.bind(a, axis=axis)
    return lax.expand_dims(r, axis) if keepdims else r


def argmax(a, axis=None, out=None, *, keepdims=False):
    """``np.argmax``: the index of the first largest entry (of the flattened array when
    ``axis`` is None), int64; a NaN counts as the largest. It passes no derivative on."""
    return _arg_extremum(argmax_p, a, axis, out, keepdims)


def argmin(a, axis=None, out=None, *, keepdims=False):
    """``np.argmin``: the index of the first smallest entry (NaN counts as the smallest)."""
    return _arg_extremum(argmin_p, a, axis, out, keepdims)
