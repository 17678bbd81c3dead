"""Value decisions: what a trace read of its inputs' values to steer Python.

The derivative transforms run the function on its arguments' values, as JAX's ``grad``
outside ``jit`` does: their trace knows what every traced value equals, so an ``if x < 3:``,
a ``while err > tol:`` or a loop bound ``int(n)`` computed from the data take the branch
the values take. Each such conversion of a traced value to a Python value (``bool()``,
``int()``, ``float()``, an index, ``.item()``) is a *decision*: :class:`ValueTrace` answers
it (evaluating the equations recorded so far on the inputs' values, once each) and records
it; :class:`Decisions` is the check of a cache entry: a small program computing every
decision's value from the inputs, run on each cached call and compared with what the trace
saw. A call that decides otherwise gets another variant of the program
(:meth:`~dualgpu.runtime.program_cache.Compiled.pick`).

Two conversions are refused as before (a :class:`TracerControlFlowError`): ``float()``,
``complex()`` or ``.item()`` of a floating value that depends on a differentiated input
(its derivative would be lost silently), and any conversion in a trace that does not know
values (``jit``, ``vmap``, a transform called inside another's trace).

A traced scalar argument (a Python int, or a float outside ``jit``: *tentative*,
:class:`~dualgpu.runtime.signature.Signature`) whose value is needed as a Python number (a
shape, ``range(n)``, a list index, ``math.*``) raises :class:`NeedsStatic`: the trace is
made again with those arguments static (keyed by value), which the cache remembers for the
signature. A ``bool()`` of one, where values are known, is a decision like any other (a
step counter's ``if step % 100 == 0:`` gives two variants, not one program per step).

Example::

    >>> f = dg.grad(lambda x: np.sum(x ** 2) if np.sum(x) > 0 else np.sum(-x))
    >>> f(np.ones(2)), f(-np.ones(2))
    (array([2., 2.]), array([-1., -1.]))
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from ..backends.base import Backend
from ..codegen.python import compile_python
from ..core.dtypes import promote
from ..core.flags import Flag
from ..core.interpret import eval_graph
from ..core.ir import Const, Graph, Literal, Var, exact_key
from ..core.trace import UNDECIDED, Concretize, GraphBuilder, Tracer, thread_state
from ..errors import DualgpuError, user_location

_CONVERT: dict[str, Callable[[Any], Any]] = {
    "bool": bool, "int": int, "index": operator.index, "float": float, "complex": complex,
    "item": lambda v: v.item()}
_LOSES_DERIVATIVE = frozenset({"float", "complex", "item"})
_MISSING = object()
_IDENTITY_KINDS = frozenset({"repr", "hash"})  # answered as for any tracer


class NeedsStatic(DualgpuError):
    """The function needs the value of tentatively traced scalar arguments as Python
    numbers: ``inputs`` (input indices of the trace that raised it, ``trace``) are made
    static and the call traced again."""

    def __init__(self, trace: ValueTrace, inputs: frozenset[int]):
        super().__init__("internal: a traced scalar argument is needed as a Python number "
                         "(the call is traced again with it static)")
        self.trace = trace
        self.inputs = inputs


class ValueTrace(Concretize):
    """The ``concretize`` of one trace (:func:`~dualgpu.core.trace.trace_to_graph`).

    ``values``: the inputs' values (None: unknown, every conversion is refused but for the
    fallback of tentative scalars); ``diff``: which inputs are differentiated;
    ``tentative``: the input indices of tentative scalar arguments."""

    def __init__(self, values: Sequence[Any] | None, diff: Sequence[bool],
                 tentative: frozenset[int], arguments: Sequence[Any] = (),
                 delegate: bool = False):
        self.values = values
        # a trace inside another (a transform called in a traced function): the enclosing
        # trace decides, on values of its own, and guards the decision in its program
        self.delegate = delegate
        self.outside = 0  # decisions the enclosing trace took for this one
        self.arguments = arguments  # what the inputs stand for (tracers of outer traces)
        self.outer: dict[int, Tracer] = {}  # bit -> an outer trace's tentative scalar
        self.diff = diff
        self.tentative = tentative
        self.decisions: list[tuple[Var, str, Any, str]] = []  # (var, kind, key, where)
        self.builder: GraphBuilder | None = None
        self.inputs: list[Var] = []
        self.env: dict[int, Any] = {}
        self.diff_dep: set[int] = set()      # vars depending on a differentiated input
        self.scalar_dep: dict[int, int] = {}  # var -> bit mask of the tentative inputs
        self.done = 0
        self.evaluated = 0

    def begin(self, builder: GraphBuilder, inputs: list[Var]) -> None:
        self.builder = builder
        self.inputs = inputs
        self.outside = 0
        self.decisions.clear()
        self.done = self.evaluated = 0
        self.env = ({v.id: x for v, x in zip(inputs, self.values)}
                    if self.values is not None else {})
        self.diff_dep = {v.id for v, d in zip(inputs, self.diff) if d}
        self.scalar_dep = {v.id: 1 << k for k, v in enumerate(inputs) if k in self.tentative}
        self.outer = {}
        for k, (v, a) in enumerate(zip(inputs, self.arguments)):
            hook = a._builder.concretize if isinstance(a, Tracer) else None
            if isinstance(hook, ValueTrace) and hook.mask_of(a):
                # an enclosing trace's tentative scalar: its own bit, beyond ours
                bit = len(inputs) + k
                self.outer[bit] = a
                self.scalar_dep[v.id] = 1 << bit

    def mask_of(self, tracer: Tracer) -> int:
        """The tentative inputs ``tracer`` depends on (a bit mask)."""
        self._advance()
        return self.scalar_dep.get(tracer._var.id, 0)

    def _needs_static(self, mask: int) -> NeedsStatic:
        own = frozenset(k for k in self.tentative if mask >> k & 1)
        if own:
            return NeedsStatic(self, own)
        bit = next(b for b in self.outer if mask >> b & 1)
        outer = self.outer[bit]
        hook = outer._builder.concretize
        assert isinstance(hook, ValueTrace)
        return hook._needs_static(hook.mask_of(outer))

    def _advance(self) -> None:
        """Dependencies of the equations recorded since."""
        assert self.builder is not None
        eqns = self.builder.eqns
        diff_dep, scalar_dep = self.diff_dep, self.scalar_dep
        for eqn in eqns[self.done:]:
            ids = [a.id for a in eqn.inputs if not isinstance(a, (Literal, Const))]
            mask = 0
            for i in ids:
                mask |= scalar_dep.get(i, 0)
            if mask:
                for o in eqn.outs:
                    scalar_dep[o.id] = mask
            if any(i in diff_dep for i in ids):
                diff_dep.update(o.id for o in eqn.outs)
        self.done = len(eqns)

    def _evaluate_all(self) -> None:
        """The values of the equations recorded since (only when a decision asks)."""
        assert self.builder is not None
        eqns = self.builder.eqns
        for eqn in eqns[self.evaluated:]:
            self._evaluate(eqn)
        self.evaluated = len(eqns)

    def _evaluate(self, eqn: Any) -> None:
        args = []
        for a in eqn.inputs:
            if isinstance(a, Literal):
                args.append(a.value)
            elif isinstance(a, Const):
                args.append(a.value)
            else:
                v = self.env.get(a.id, _MISSING)
                if v is _MISSING:  # a value of an enclosing trace, or one that failed
                    return
                args.append(v)
        weak = [k for k, a in enumerate(eqn.inputs)
                if not isinstance(a, (Literal, Const)) and a.aval.weak]
        if weak and eqn.prim.has(Flag.ELEMENTWISE) and any(not a.aval.weak
                                                          for a in eqn.inputs):
            # a weakly typed value (a Python float or int of the arguments, held as a 0-d
            # float64 or int64 array, which NumPy does not promote weakly) meets a strongly
            # typed one: cast to the dtype the equation promotes to, as the program does
            # (runtime/tracing.py strengthen_weak_inputs), so that the decision is the
            # program's and eager NumPy's (x32 * 3.0 in float32)
            target = promote([a.aval for a in eqn.inputs])
            for k in weak:
                if getattr(args[k], "dtype", target) != target:
                    args[k] = args[k].astype(target)
        try:
            outs = eqn.prim.bind(*args, **eqn.params)
        except Exception:  # noqa: BLE001 - a value that cannot be computed is not decided
            return
        outs = outs if eqn.prim.multiple_results else [outs]
        for o, v in zip(eqn.outs, outs):
            if getattr(v, "dtype", o.aval.dtype) != o.aval.dtype:
                v = v.astype(o.aval.dtype)  # computed in the dtype the program computes in
            self.env[o.id] = v

    def value_of(self, tracer: Tracer) -> Any:
        """What ``tracer`` (a value of this trace) equals, or None where the trace does not
        know (no values, a value of another trace, one that cannot be computed). Reading it
        decides nothing: it is for what does not steer the program (an output's shape)."""
        if tracer._builder is not self.builder or self.values is None:
            return None
        self._evaluate_all()
        value = self.env.get(tracer._var.id, _MISSING)
        return None if value is _MISSING else value

    def __call__(self, tracer: Tracer, kind: str) -> Any:
        if tracer._builder is not self.builder or not self.builder.alive:
            return UNDECIDED  # another trace's value, or one that escaped its trace
        self._advance()
        var = tracer._var
        mask = self.scalar_dep.get(var.id, 0)
        if mask and (kind != "bool" or self.values is None):
            # repr, str, hash (a dict key) too: a scalar must not silently become "Tracer"
            raise self._needs_static(mask)
        if kind in _IDENTITY_KINDS:
            return UNDECIDED
        if (kind in _LOSES_DERIVATIVE and var.id in self.diff_dep
                and var.aval.dtype.kind in "fc"):
            return UNDECIDED  # the derivative would be lost: refused as in any trace
        if self.values is None:
            return self._decide_outside(tracer, kind) if self.delegate else UNDECIDED
        self._evaluate_all()
        value = self.env.get(var.id, _MISSING)
        if value is _MISSING:
            return UNDECIDED
        answer = _CONVERT[kind](value)  # NumPy's own errors (an ambiguous truth value)
        self.decisions.append((var, kind, exact_key(answer), user_location()))
        return answer

    def _decide_outside(self, tracer: Tracer, kind: str) -> Any:
        """Ask the enclosing trace: the value, computed there from this trace's arguments
        (and the values it captured), is a decision of that trace."""
        assert self.builder is not None
        parent = self.builder.parent
        outer = parent.concretize if parent is not None else None
        if parent is None or not isinstance(outer, ValueTrace) or (
                outer.values is None and not outer.delegate):
            return UNDECIDED
        captured = self.builder.captured or []
        graph = Graph(list(self.inputs) + list(self.builder.captured_vars.values()),
                      [tracer._var], list(self.builder.eqns), xp=self.builder.xp)
        stack = thread_state.builders
        stack.append(parent)  # what the evaluation records goes to the enclosing trace
        try:
            (value,) = eval_graph(graph, list(self.arguments) + list(captured))
        finally:
            stack.pop()
        answer = outer(value, kind) if isinstance(value, Tracer) else _CONVERT[kind](value)
        if answer is not UNDECIDED:
            self.outside += 1
        return answer


def within(arguments: Sequence[Any]) -> ValueTrace:
    """The ``concretize`` of a trace whose inputs are ``arguments`` (values of an enclosing
    trace: a transform's own trace of the function, as vmap's): it knows no values, and a
    tentative scalar of the enclosing trace that it needs as a number is made static there.
    """
    return ValueTrace(None, [False] * len(arguments), frozenset(), arguments)


class Decisions:
    """The check of a program's decisions: ``graph`` computes each decision's value from
    the program's inputs (compiled on first use); :meth:`hold` runs it and compares."""

    __slots__ = ("graph", "backend", "kinds", "expected", "wheres", "_exe")

    def __init__(self, graph: Graph, backend: Backend, decisions: list[tuple[Var, str, Any, str]]):
        self.graph = graph
        self.backend = backend
        self.kinds = tuple(d[1] for d in decisions)
        self.expected = tuple(d[2] for d in decisions)
        self.wheres = tuple(d[3] for d in decisions)
        self._exe: Callable[..., Any] | None = None

    def _values(self, inputs: Sequence[Any]) -> list[Any] | None:
        if self._exe is None:  # plain generated code: a few scalars read at once
            self._exe = compile_python(self.graph, self.backend.xp, arrays=True)
        try:  # the function's inputs (a transform's own inputs follow: hvp's direction)
            outs = self._exe(*inputs[:len(self.graph.inputs)])
            return [exact_key(_CONVERT[k](o)) for k, o in zip(self.kinds, outs)]
        except Exception:  # noqa: BLE001 - inputs this program cannot decide: another one
            return None

    def hold(self, inputs: Sequence[Any]) -> bool:
        """Whether ``inputs`` take every decision the trace took."""
        got = self._values(inputs)
        return got is not None and tuple(got) == self.expected

    def changed(self, inputs: Sequence[Any]) -> str:
        """The first decision ``inputs`` take otherwise, as a place (for the retrace
        warning)."""
        got = self._values(inputs) or []
        for k, where in enumerate(self.wheres):
            if k >= len(got) or got[k] != self.expected[k]:
                return f"{where} ({self.kinds[k]}() of a traced value)"
        return "a decision"

    def __len__(self) -> int:
        return len(self.kinds)
