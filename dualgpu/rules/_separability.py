"""What an op's separability rule works with (the proof behind ``hvp(batch_axes=...)``,
:mod:`dualgpu.transforms.separability`).

A separability rule is ``rule(eqn, dep, sizes) -> map``: ``dep`` pairs each operand that
depends on the differentiated inputs with its map, a tuple of :class:`At` (one per batch
axis: where that axis's instances sit in the operand), ``sizes`` the number of instances
along each batch axis, and the result is the map of the output (a list of maps for an op
with several outputs). A rule raises :class:`Coupling` with the reason when the op mixes
instances. The ops attach their rules with ``defrules(prim, separability=rule)`` beside
their derivatives; elementwise ops, reductions and scans are proved by their flags.

Example (the rule of ``transpose``: the instance axes move with the permutation)::

    def _transpose_separability(eqn, dep, sizes):
        (_, m), = dep
        perm = list(eqn.params["perm"])
        return tuple(at.moved(perm.index(at.pos)) for at in m)
"""
from __future__ import annotations

from typing import NamedTuple


class Coupling(Exception):
    """An op mixes instances; the message says how."""


class At(NamedTuple):
    """Where one instance axis of ``n`` instances sits in a value: axis ``pos``, of length
    ``outer * n * inner``, whose element ``j`` belongs to instance ``(j // inner) % n``
    (a plain instance axis has ``outer == inner == 1``)."""

    pos: int
    outer: int = 1
    inner: int = 1

    def moved(self, pos: int) -> At:
        return At(pos, self.outer, self.inner)

    @property
    def plain(self) -> bool:
        return self.outer == 1 and self.inner == 1


def aligned(dep, out_ndim: int) -> tuple:
    """Broadcasting: every operand that depends on the input holds its instances on the
    same axes of the output (the interpreter checks the lengths)."""
    result = None
    for a, m in dep:
        shift = out_ndim - a.ndim
        mapped = tuple(at.moved(at.pos + shift) for at in m)
        if result is not None and mapped != result:
            raise Coupling("its operands hold instances along different axes")
        result = mapped
    return result
