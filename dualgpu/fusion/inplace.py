"""Concatenations written in place: the inputs of a ``concatenate`` computed straight into
their ranges of its output, so that the concatenation copies nothing.

A function of a flat parameter vector (sliced and reshaped into weights) makes every
gradient and HVP end with the ``concatenate`` of the pieces' gradients, each the reshape of
a product, a sum or a kernel output. When the output is allocated before the first piece is
computed, each producer can write into its range of it (a C-contiguous view), and the
reshapes after it are views of that range. :func:`concat_slots` finds, once per plan, where
this is possible; a runner hands the producers their ranges and, at the concatenation,
copies in only what did not land there.

Memory: the output lives from the first of its inputs on, and its ranges replace the
inputs' own arrays (the peak at the concatenation drops by the output's size); an input
read after the concatenation keeps the whole output alive until that read.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.ir import Var
from .regions import LibraryStep, Plan, is_reshape


@dataclass(frozen=True)
class ConcatSlots:
    """A concatenation computed in place: ``offsets`` are the first elements of the ranges
    of ``eqn``'s inputs in its flat (C-order) output; ``heads`` says, per input, which value
    its producer writes into that range -- the input itself or the start of the chain of
    reshapes that ends in it -- or None when the input is copied in."""

    eqn: Any
    offsets: tuple
    heads: tuple


def concat_slots(plan: Plan, writes_into) -> list:
    """The concatenations of ``plan`` with at least one input computed in place.

    ``writes_into(step)`` says whether the runner computes the values a step makes into the
    destinations it is given. A concatenation qualifies when its inputs have its output's
    dtype (nothing is cast) and each is one contiguous range of the output (the axes before
    ``axis`` have length 1). An input gets a head when it is made by such a step, directly
    or through reshapes run as library steps (views of a C-contiguous value), and no value
    of that chain is returned by the program. Each head has one range: a value repeated in
    a concatenation, or in two, is written into the first and copied into the others.
    Program inputs, constants and literals are copied. Values of a chain may be read by
    later steps (they read the output's memory, which nothing writes after the producer).

    Example (the gradient of a flat parameter vector ends with a concatenation of the
    gradients of ``W`` and ``b``; the first is the reshape of a product's output)::

        >>> from dualgpu.fusion import plan_graph
        >>> X = np.ones((8, 3))
        >>> def loss(p):
        ...     W, b = p[:6].reshape(3, 2), p[6:]
        ...     return np.sum(np.tanh(X @ W + b))
        >>> plan = plan_graph(dg.trace(dg.grad(loss), np.ones(8)))
        >>> [(cs.offsets, [h is not None for h in cs.heads])
        ...  for cs in concat_slots(plan, lambda step: True)]
        [((0, 6), [True, True])]
        >>> concat_slots(plan, lambda step: False)    # a runner that writes nothing in place
        []
    """
    outputs = {a.id for a in plan.graph.outputs if isinstance(a, Var)}
    made = {}   # var id -> the step that makes it
    for step in plan.steps:
        for v in (step.eqn.outs if isinstance(step, LibraryStep) else step.outputs):
            made[v.id] = step
    taken: set = set()
    found = []
    for step in plan.library_steps:
        eqn = step.eqn
        if eqn.prim.lowering("library") != "concat_in_place" or not _qualifies(eqn):
            continue
        heads, offsets, start = [], [], 0
        for a in eqn.inputs:
            head = _head(a, made, outputs, writes_into)
            if head is not None and head.id in taken:
                head = None
            if head is not None:
                taken.add(head.id)
            heads.append(head)
            offsets.append(start)
            start += a.aval.size
        if any(h is not None for h in heads):
            found.append(ConcatSlots(eqn, tuple(offsets), tuple(heads)))
    return found


def _qualifies(eqn) -> bool:
    """Whether each input of the concatenation ``eqn`` is one range of its C-order output,
    of the output's dtype."""
    out = eqn.outs[0]
    axis = eqn.params["axis"] % len(out.shape)
    return all(n == 1 for n in out.shape[:axis]) \
        and all(a.dtype == out.dtype for a in eqn.inputs)


def _head(a, made: dict, outputs: set, writes_into):
    """The value whose producer writes ``a``: ``a``, or the start of the chain of library
    reshapes that ends in ``a``; None when that producer does not write into destinations,
    when ``a`` is no step's value, or when a value of the chain is a program output."""
    while isinstance(a, Var) and a.id not in outputs and a.id in made:
        step = made[a.id]
        if isinstance(step, LibraryStep) and is_reshape(step.eqn.prim):
            a = step.eqn.inputs[0]
            continue
        return a if writes_into(step) else None
    return None
