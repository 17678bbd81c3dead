"""The branches a custom op's rules take on its operands' values (``if x > 0:`` in a JVP
rule or a ``bwd``), as JAX follows them outside ``jit``.

The transforms trace a rule where no trace knows values (``jvp_graph``, ``vjp_graph``, the
graph of a derived rule). So where a custom op is called inside a trace that knows its
inputs' values (``grad``, ``jvp``, ``vjp``, ``hvp`` outside ``jit``), :func:`decide` runs
each of its user rules once more in that trace, on the operands and on stand-ins for the
tangents or cotangents: every ``bool()``/``int()`` the rule takes on a value computed from
the operands is a decision of that trace (the program checks it at every call, and a call
that decides otherwise gets another variant of the program, as for any branch of the
function), and the answers, in order, become the op's ``decided`` parameter, which the
transforms' traces of the rule replay (:func:`replaying`). A rule that branches on a
tangent or a cotangent is refused: a rule is linear in them. Under ``jit`` the values are
not known and such a rule is refused as before (as in JAX).
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .. import lax
from ..core.trace import UNDECIDED, Concretize, GraphBuilder, Tracer
from ..errors import TracerControlFlowError, user_location
from ..runtime.decisions import NeedsStatic, ValueTrace

__all__ = ["decide", "replaying"]

_STATE = threading.local()  # a rule being decided: the custom ops it calls are not


class BranchOnTangent(TracerControlFlowError):
    """A rule's ``bool()`` of a value computed from a tangent or a cotangent."""


def _deciding_trace(args: Sequence[Any]) -> GraphBuilder | None:
    """The trace of the operands when it knows their values (itself or through the trace
    it is inside), else None."""
    builders = {a._builder for a in args if isinstance(a, Tracer)}
    if len(builders) != 1 or getattr(_STATE, "active", False):
        return None
    (builder,) = builders
    hook = builder.concretize
    while isinstance(hook, ValueTrace) and hook.values is None and hook.delegate:
        parent = hook.builder.parent if hook.builder is not None else None
        hook = parent.concretize if parent is not None else None  # it decides for hook
    return builder if isinstance(hook, ValueTrace) and hook.values is not None else None


class _Recorder(Concretize):
    """The trace's own answers, recorded in order; a value that depends on a stand-in (a
    tangent or cotangent) is refused."""

    def __init__(self, builder: GraphBuilder, outer: Concretize, what: str):
        self.builder, self.outer, self.what = builder, outer, what
        self.tainted: set[int] = set()
        self.done = len(builder.eqns)
        self.answers: list[tuple[str, Any]] = []

    def stand_in(self, x: Any) -> Any:
        """A value of ``x``'s shape and dtype standing for a tangent or a cotangent."""
        s = lax.negative(x)
        if isinstance(s, Tracer):
            self.tainted.add(s._var.id)
        return s

    def _depends(self, tracer: Tracer) -> bool:
        for eqn in self.builder.eqns[self.done:]:
            if any(getattr(a, "id", None) in self.tainted for a in eqn.inputs):
                self.tainted.update(o.id for o in eqn.outs)
        self.done = len(self.builder.eqns)
        return tracer._var.id in self.tainted

    def begin(self, builder: GraphBuilder, inputs: list) -> None:  # never a trace's own
        raise NotImplementedError

    def __call__(self, tracer: Tracer, kind: str) -> Any:
        if tracer._builder is self.builder and kind not in ("repr", "hash") \
                and self._depends(tracer):
            raise BranchOnTangent(
                f"{kind}() of a value computed from a tangent or cotangent in {self.what}, "
                f"at {user_location()}: a rule is linear in them and cannot branch on "
                "them (branches on the primal values are followed)")
        answer = self.outer(tracer, kind)
        if answer is not UNDECIDED and kind not in ("repr", "hash"):
            self.answers.append((kind, answer))
        return answer


def _signature(args: Sequence[Any]) -> tuple:
    return tuple((tuple(a.shape), a.dtype.str) if isinstance(a, Tracer) else type(a)
                 for a in args)


def decide(args: Sequence[Any],
           rules_for: Callable[[list], Sequence[tuple[str, str, Callable]]],
           branch_free: set) -> tuple:
    """The ``decided`` parameter of a custom op called on ``args``, when the trace of
    ``args`` knows values: for each ``(kind, what, run)`` of ``rules_for(held)``
    (``run(stand_in)`` calls the rule on ``held``, making its tangents or cotangents with
    ``stand_in``), the answers of the conversions it takes; ``()`` where the trace does
    not know values or no rule converts a value. ``held`` are the operands with their
    derivative stopped: what the rules record here is checked and then unused, and no
    transform differentiates it. ``branch_free``: the operand signatures on which the rules
    ran through without converting a value (so without a path that depends on them: they
    are not run again there)."""
    builder = _deciding_trace(args)
    if builder is None or _signature(args) in branch_free:
        return ()
    outer = builder.concretize
    assert outer is not None
    decided, complete = [], True
    _STATE.active = True
    try:
        held = [lax.stop_gradient(a) if isinstance(a, Tracer) else a for a in args]
        for kind, what, run in rules_for(held):
            recorder = _Recorder(builder, outer, what)
            builder.concretize = recorder
            try:
                run(recorder.stand_in)
            except (BranchOnTangent, NeedsStatic):  # the latter: the trace is made again
                raise
            except Exception:  # noqa: BLE001 - the transform's own trace of the rule says
                complete = False
                continue
            finally:
                builder.concretize = outer
            if recorder.answers:
                decided.append((kind, tuple(recorder.answers)))
    finally:
        _STATE.active = False
    if complete and not decided:
        branch_free.add(_signature(args))
    return tuple(decided)


class _Replay(Concretize):
    """The answers a rule's conversions got where the values were known, in order."""

    def __init__(self, answers: tuple, inner: Concretize | None):
        self.answers, self.inner, self.k = answers, inner, 0

    def begin(self, builder: GraphBuilder, inputs: list) -> None:
        raise NotImplementedError

    def __call__(self, tracer: Tracer, kind: str) -> Any:
        if self.k < len(self.answers) and self.answers[self.k][0] == kind:
            self.k += 1
            return self.answers[self.k - 1][1]
        return UNDECIDED if self.inner is None else self.inner(tracer, kind)


@contextmanager
def replaying(decided: tuple, kind: str, args: Sequence[Any]) -> Iterator[None]:
    """Within: the conversions of the rule ``kind`` (``"jvp"``, ``"vjp"``) on values of the
    trace of ``args`` take the answers ``decided`` holds for it."""
    answers = dict(decided).get(kind) if decided else None
    builder = next((a._builder for a in args if isinstance(a, Tracer)), None)
    if not answers or builder is None:
        yield
        return
    inner = builder.concretize
    builder.concretize = _Replay(answers, inner)
    try:
        yield
    finally:
        builder.concretize = inner
