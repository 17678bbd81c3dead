"""What an op's jet rule works with (the forward Laplacian and the Hessian diagonal,
:mod:`dualgpu.transforms.laplacian`).

Every value ``y`` that depends on the differentiated inputs carries a *jet* ``(J, S)``: ``J``
has a leading axis of the ``D`` input coordinates (``J[d] = dy/dx_d``) and ``S`` is the
second-order part (the Laplacian ``sum_d d2y/dx_d2``, or with ``mode.diag`` the diagonal,
with a leading ``D`` axis); ``None`` is a symbolic zero. A jet rule is
``rule(eqn, values, jets, mode) -> [jet of each output]`` (``values``: the operands in the
new trace, ``jets``: theirs, ``mode``: a :class:`Mode`). The ops attach their rules with
``defrules(prim, laplacian=rule)`` beside their derivatives; linear ops, elementwise ops with
partials and every other op are handled by the interpreter.

Example (an op with no curvature of its own: ``stop_gradient``)::

    def _stop_jet(eqn, values, jets, mode):
        return [None]
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.ir import Eqn
from ..core.trace import Tracer
from .batching_rules import lift  # (D, *s) as (D, 1, ..., 1, *s): D leads as a batch
from .common import add_any

# the ops this module's helpers equip belong to the block that calls them (op.sites)
RULE_KIT = True
# (*) mypy cannot type lax's elementwise ops (lax.__getattr__ finds them) within the op
# layer's import cycle


class Mode:
    """Laplacian (``diag=False``) or Hessian-diagonal (``diag=True``) propagation over
    ``D`` input coordinates, and what the propagation knows about some Jacobians (keyed by
    the id of their graph variable):

    * ``seeds``: the Jacobians of the inputs (rows of the identity), with their layout
      (:class:`Seed`), so that a product with an input takes rows of the other factor
      instead of multiplying by the identity;
    * ``small``: Jacobians that are broadcasts of a smaller array (such a product), so that
      ``<J, J>`` is taken on the small arrays.
    """

    def __init__(self, diag: bool, size: int, batch_rule):
        self.diag = diag
        self.size = size
        self.batch_rule = batch_rule  # prim -> its vmap rule (transforms.vmap.rule_for)
        self.seeds: dict = {}
        self.small: dict = {}

    def batched(self, eqn, args, flags, size=None, **params):
        """``eqn``'s op applied to ``args`` of which those flagged carry a leading axis of
        ``size`` (default: the coordinates), by its vmap rule; the result always carries
        it. ``params`` replace the equation's."""
        size = self.size if size is None else size
        if params:
            eqn = Eqn(eqn.prim, eqn.inputs, {**eqn.params, **params}, eqn.outs, eqn.source)
        outs, out_flags = self.batch_rule(eqn.prim)(eqn, list(args), list(flags), size)
        return [o if b else lax.broadcast_to(o, (size,) + tuple(v.shape))
                for o, b, v in zip(outs, out_flags, eqn.outs)]

    def pair(self, a, b, rank: int = 0):
        """``<a, b>``: the product of two Jacobians, summed over ``d`` unless diagonal (then
        lifted to at least ``rank`` per-coordinate axes, to broadcast with the output)."""
        sa, sb = self.small.get(vid(a)), self.small.get(vid(b))
        if sa is not None and sb is not None:  # broadcasts: the pairing broadcasts too
            a, b = sa, sb
        rank = max(a.ndim - 1, b.ndim - 1, rank if self.diag else 0)
        prod = lax.multiply(lift(a, rank), lift(b, rank))  # type: ignore[misc]  # (*)
        return prod if self.diag else lax.sum(prod, axis=0)

    def lift_s(self, s, rank):
        """``S`` ready to broadcast against values of per-coordinate rank ``rank``."""
        return lift(s, rank) if self.diag else s


class Seed:
    """The Jacobian of a differentiated input ``x``: ``J[offset + i] = e_(first + i)`` for
    ``i < size``, over the flattened instance axes ``inst`` of ``x`` (the others are batch
    axes); ``first > 0`` or ``size`` short of the instance count when a chunk of the
    coordinates holds only some of ``x``'s."""

    def __init__(self, shape: tuple, inst: tuple, offset: int, size: int, first: int = 0):
        self.shape, self.inst, self.offset, self.size = shape, inst, offset, size
        self.first = first


def vid(x):
    return x._var.id if isinstance(x, Tracer) else None



# ------------------------------------------------------------------------------ helpers
def fit(x, shape, dtype):
    if tuple(np.shape(x)) != tuple(shape):
        x = lax.broadcast_to(x, shape)
    if x.dtype != dtype and dtype.kind in "fc":
        x = lax.astype(x, dtype)
    return x


def is_zero(c) -> bool:
    return isinstance(c, (int, float)) and not isinstance(c, bool) and c == 0


def scale(c, x):
    if isinstance(c, (int, float)) and not isinstance(c, bool):
        if c == 1:
            return x
        if c == -1:
            return lax.negative(x)
    return lax.multiply(c, x)


def bind_all(eqn, args, **params):
    out = eqn.prim.bind(*args, **{**eqn.params, **params})
    return list(out) if eqn.prim.multiple_results else [out]


def multilinear_rule(eqn, values, jets, mode, linear=(0, 1), cross=None):
    """An op linear in each operand at ``linear``: ``J_y = sum_i op(.., J_i, ..)``,
    ``S_y = sum_i op(.., S_i, ..) + 2 sum_{i<j} <op(.., J_i, .., J_j, ..)>``; ``cross``
    computes one pairing term (default: the op batched over both, summed over ``d``)."""
    act = [i for i in linear if jets[i] is not None]
    J = S = None
    for i in act:
        args, flags = list(values), [False] * len(values)
        args[i], flags[i] = jets[i][0], True
        J = add_any(J, mode.batched(eqn, args, flags)[0])
        if jets[i][1] is not None:
            args[i], flags[i] = jets[i][1], mode.diag
            S = add_any(S, mode.batched(eqn, args, flags)[0] if mode.diag
                        else bind_all(eqn, args)[0])
    for a, i in enumerate(act):
        for j in act[a + 1:]:
            term = (cross or batched_cross)(eqn, values, i, j, jets[i][0], jets[j][0], mode)
            S = add_any(S, lax.multiply(2, term))
    return [(J, S)]


def batched_cross(eqn, values, i, j, Ji, Jj, mode):
    args, flags = list(values), [False] * len(values)
    args[i], args[j], flags[i], flags[j] = Ji, Jj, True, True
    out = mode.batched(eqn, args, flags)[0]
    return out if mode.diag else lax.sum(out, axis=0)


def traced_constant(like, value):
    """``value`` as a graph value of the trace ``like`` belongs to (a closed-over array
    becomes a recorded constant, never an array baked into the rules' arithmetic)."""
    from ..ops.shape import reshape  # (the kits import no op family when loading)
    return like._builder.record(reshape, [value], {"new_shape": tuple(value.shape)})
