"""Helpers for writing an op's batching (vmap) rule.

A batching rule is ``rule(eqn, args, batched, size) -> (outputs, output batched flags)``:
``args`` are the equation's operands in the new trace, the batched ones (``batched[k]``)
with the batch dimension at axis 0, and ``size`` is the batch size. It records registry ops
that compute every example at once. The ops attach their rules with
``defrules(prim, vmap=rule)`` beside their derivatives; :mod:`dualgpu.transforms.vmap`
holds the traversal and the rules by flag (elementwise ops, reductions, scans), and
:func:`loop_rule` for ops with none.

Example (the rule of an op that moves one static axis, written with :func:`one`; the rule
modules import this one as ``batching``)::

    def _roll_rule(eqn, args, batched, size):
        return batching.one(roll.bind(args[0], axis=eqn.params["axis"] + 1))
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..errors import DualgpuError

# the ops this module's helpers equip belong to the block that calls them (op.sites)
RULE_KIT = True


def rank(x, batched: bool) -> int:
    """The per-example rank of an operand."""
    return len(np.shape(x)) - (1 if batched else 0)


def lift(x, r: int):
    """A batched ``(B, *s)`` value reshaped to ``(B, 1, ..., 1, *s)`` of per-example rank
    ``r``, so that it broadcasts against unbatched operands of that rank."""
    s = tuple(x.shape[1:])
    if len(s) >= r:
        return x
    return lax.reshape(x, (x.shape[0],) + (1,) * (r - len(s)) + s)


def batched(x, size: int):
    """An unbatched operand broadcast along a new leading batch axis."""
    return lax.broadcast_to(x, (size,) + tuple(np.shape(x)))


def one(out):
    """The result of a rule with one batched output."""
    return [out], [True]


def drop_to(x, size: int, eqn):
    """``x`` reshaped to ``(size, *per-example output shape)`` (squeezing helper axes)."""
    return lax.reshape(x, (size,) + tuple(eqn.outs[0].shape))


def pad_batch(a, b):
    """Batched stacks of matrices with equally many batch axes after the leading one."""
    na, nb = len(a.shape) - 3, len(b.shape) - 3
    if na < nb:
        a = lax.reshape(a, (a.shape[0],) + (1,) * (nb - na) + tuple(a.shape[1:]))
    elif nb < na:
        b = lax.reshape(b, (b.shape[0],) + (1,) * (na - nb) + tuple(b.shape[1:]))
    return a, b


def axis_rule(eqn, args, batched, size):
    """The rule of an op with one static ``axis`` parameter (cumsum, sort): the axis moves
    one place right."""
    return one(eqn.prim.bind(args[0], **{**eqn.params, "axis": eqn.params["axis"] + 1}))


def leading_axes_rule(eqn, args, batched, size):
    """The rule of an op whose leading axes are batch axes already (inv, det, cholesky...):
    the op itself."""
    out = eqn.prim.bind(args[0], **eqn.params)
    outs = list(out) if eqn.prim.multiple_results else [out]
    return outs, [True] * len(outs)


def loop_rule(eqn, args, batched, size):
    """The fallback: apply the op to each example and stack the results (correct for every
    op, but ``size`` equations instead of one)."""
    if size == 0:
        raise DualgpuError(f"vmap: {eqn.prim.name} has no batching rule, and a batch of "
                           "size 0 cannot be run example by example")
    per_example = []
    for i in range(size):
        ins = [lax.getitem(a, i) if b else a for a, b in zip(args, batched)]
        out = eqn.prim.bind(*ins, **eqn.params)
        per_example.append(list(out) if eqn.prim.multiple_results else [out])
    outs = [lax.stack([p[j] for p in per_example]) for j in range(len(eqn.outs))]
    return outs, [True] * len(outs)
