"""What an op's separability rule works with (the proof behind ``hvp(batch_axes=...)``,
:mod:`dualgpu.transforms.separability`).

A separability rule is ``rule(eqn, dep, sizes) -> map``: ``dep`` pairs the position (in
``eqn.inputs``) of each operand that depends on the differentiated inputs with its map, a
tuple of :class:`At` (one per batch axis: where that axis's instances sit in the operand),
``sizes`` the number of instances along each batch axis, and the result is the map of the
output (a list of maps for an op with several outputs). Operands are told apart by their
position, never by the variable: ``einsum("id,jd->i", p, p)`` passes ``p`` twice, once
with its instances kept and once with them summed over. A rule raises :class:`Coupling`
with the reason when the op mixes instances. The ops attach their rules with
``defrules(prim, separability=rule)`` beside their derivatives; elementwise ops,
reductions and scans are proved by their flags.

Example (the rule of ``transpose``: the instance axes move with the permutation)::

    def _transpose_separability(eqn, dep, sizes):
        (_, m), = dep
        perm = list(eqn.params["perm"])
        return tuple(at.moved(perm.index(at.pos)) for at in m)
"""
from __future__ import annotations

from typing import NamedTuple

# the ops this module's helpers equip belong to the block that calls them (op.sites)
RULE_KIT = True


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


def aligned(eqn, dep) -> tuple:
    """Broadcasting: every operand that depends on the input holds its instances on the
    same axes of the output (the interpreter checks the lengths)."""
    out_ndim = eqn.outs[0].ndim
    mapped = [(i, tuple(at.moved(at.pos + out_ndim - eqn.inputs[i].ndim) for at in m))
              for i, m in dep]
    return _same(mapped)


def labelled(specs: list[str], out: str, dep) -> tuple:
    """A product written as an einsum (``specs`` the labels of each operand's axes, ``out``
    the output's): each instance axis of an operand names a label, which the output must
    keep (else the product sums over instances), and every operand must put its instances
    on the same axes of the output."""
    mapped = []
    for i, m in dep:
        labels = [specs[i][at.pos] for at in m]
        lost = next((lab for lab in labels if lab not in out), None)
        if lost is not None:
            raise Coupling(f"it sums over an instance axis (it contracts label {lost!r} of "
                           f"operand {i + 1}, {specs[i]!r}, which the output {out!r} lacks)")
        mapped.append((i, tuple(at.moved(out.index(lab)) for at, lab in zip(m, labels))))
    return _same(mapped)


def _same(mapped) -> tuple:
    """The one map every operand gives the output (``(position, map)`` pairs)."""
    (first, result), *rest = mapped
    for i, m in rest:
        if m != result:
            raise Coupling(f"its operands hold instances along different axes (operand "
                           f"{first + 1} along {_axes(result)} of the output, operand "
                           f"{i + 1} along {_axes(m)})")
    return result


def _axes(m: tuple) -> str:
    return ", ".join(f"axis {at.pos}" for at in m)


def along_axis(eqn, dep, sizes, how: str | None = None) -> tuple:
    """An op that mixes the entries of each line along its static ``axis`` and leaves the
    other axes as they are (a scan, ``sort``, the FFTs): instances may sit on any of those.
    ``how`` it mixes them names the coupling (by default, "<op> mixes the entries")."""
    (_, m), = dep
    if any(at.pos == eqn.params["axis"] for at in m):
        raise Coupling(f"{how or eqn.prim.name + ' mixes the entries'} along an instance axis")
    return m
