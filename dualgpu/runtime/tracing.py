"""Tracing a user's function for a transform: the call checked against its parameters,
its arguments rebuilt around the traced leaves, the graph recorded, and the errors of a
trace explained (a list of numbers traced as scalars, a branch on a traced scalar).

Example::

    >>> from dualgpu.runtime.signature import Signature
    >>> sig = Signature((np.ones(2),), {}, (0,), "f")
    >>> Traced(lambda x: np.sum(x * x), sig, None).graph.outputs[0].shape
    ()
"""
from __future__ import annotations

import functools
import inspect
import itertools
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import lax
from ..base import tree as pytree
from ..core.dtypes import promote
from ..core.flags import Flag
from ..core.interpret import eval_graph, propagate_states, walk
from ..core.ir import Atom, Const, Eqn, Graph, Literal
from ..core.trace import Tracer, current_builder, trace_to_graph
from ..errors import ArgumentTypeError, RandomInTraceError, TracerControlFlowError
from ..frontend.namespace import HeldWrites, rebind_function
from ..frontend.numpy.random import (
    Draw,
    DrawRecorder,
    argument_stand_in,
    global_states,
    is_source,
    recording,
)
from ..frontend.scipy.sparse import SparseValue
from ..transforms import simplify
from .decisions import Decisions, NeedsStatic, ValueTrace
from .signature import Signature, class_call, int_range, int_range_bound, int_range_holds


class SelfTracing:
    """The base of the functions that trace themselves
    (:class:`~dualgpu.runtime.transformed.Transformed`): called in a trace as they are,
    neither checked against a signature nor rebound."""

    __slots__ = ()
    spec: Any   # what the transform is (with its options): part of the cache key
    fn: Any     # the function it transforms


class FlatCall:
    """``fn`` as a function of its traced input leaves, returning its output leaves.

    A callable object (not a Python function), so that the tracer's rebinding leaves it
    alone and rebinds the user's function it holds.
    """

    def __init__(self, fn: Callable, sig: Signature, draws: DrawRecorder | None = None):
        self.fn = rebindable(fn)
        self.sig = sig
        self.out_tree: pytree.TreeDef | None = None  # set by the call
        self.__name__ = name_of(fn)
        self.draws = draws
        inputs = set(sig.input_pos)
        # generators passed as arguments: each call draws from the one it is given
        self.sources = {j: argument_stand_in(leaf, j) for j, leaf in enumerate(sig.leaves)
                        if j not in inputs and is_source(leaf)}

    def __call__(self, *values: Any) -> list:
        if self.draws is not None:
            self.draws.builder = current_builder()  # draws are inputs of this trace
        leaves_in = list(values)
        for k, p in self.sig.sparse.patterns.items():
            leaves_in[k] = SparseValue(leaves_in[k], p)
        args, kwargs = self.sig.rebuild(leaves_in, self.sources)
        out = rebind_function(self.fn)(*args, **kwargs)
        leaves, self.out_tree = pytree.flatten(out)
        for k, leaf in enumerate(leaves):
            if not _is_array_value(leaf):
                raise ArgumentTypeError(_bad_output(self.fn, leaf, self.out_tree, k))
        if any(isinstance(leaf, SparseValue) for leaf in leaves):
            raise ArgumentTypeError(
                f"{self.__name__} returns a sparse matrix from a traced function (dg.jit, "
                "dg.grad...), which returns arrays: return its values (H.data, in the order "
                "of its pattern), H.toarray() or a product (H @ v); for the CSR matrix of "
                "dg.sparse_hessian or dg.sparse_jacobian, call it outside dg.jit (it "
                "compiles and caches its own program)")
        return leaves


def _is_array_value(x: Any) -> bool:
    """Whether an output leaf is a value a traced function may return: a traced value, a
    number, an array (NumPy's, CuPy's, any with ``__array__`` or a shape and dtype)."""
    return isinstance(x, (Tracer, SparseValue, int, float, complex, np.generic, np.ndarray)) \
        or hasattr(x, "__array__") or hasattr(x, "__array_namespace__") \
        or (hasattr(x, "shape") and hasattr(x, "dtype"))


def _bad_output(fn: Any, leaf: Any, tree: pytree.TreeDef, k: int) -> str:
    """JAX's words for an output that is no array: which function (and where), which
    output component, which type."""
    code = getattr(inspect.unwrap(fn), "__code__", None) if callable(fn) else None
    where = f" at {code.co_filename}:{code.co_firstlineno}" if code is not None else ""
    path = pytree.leaf_paths(tree)[k]
    return (f"function {name_of(fn)}{where} returned a value of type {type(leaf).__name__} at "
            f"output component {path or '[]'}, which is not a valid JAX type: a traced "
            "function returns arrays, Python scalars or pytrees of them")


def rebindable(fn: Any) -> Any:
    """``fn``, with a callable object's ``__call__`` bound as a method (so that the tracer
    rebinds the array modules it uses, as it does for functions)."""
    if isinstance(fn, (types.FunctionType, types.MethodType, functools.partial)):
        return fn
    if isinstance(fn, SelfTracing) or isinstance(fn, (types.BuiltinFunctionType, np.ufunc)):
        return fn
    call = class_call(type(fn))
    if isinstance(call, types.FunctionType):
        return types.MethodType(call, fn)
    return fn


def name_of(fn: Any) -> str:
    name = getattr(fn, "__name__", None)
    if isinstance(name, str):
        return name
    if isinstance(fn, functools.partial):
        return name_of(fn.func)
    return type(fn).__name__


def check_call(fn: Any, args: tuple, kwargs: dict) -> None:
    """A clear error for a call that does not fit ``fn``'s parameters (before tracing, so
    that a TypeError of the user's own code is never mistaken for one)."""
    try:
        params = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        params.bind(*args, **kwargs)
    except TypeError as e:
        raise ArgumentTypeError(
            f"{name_of(fn)}{params} cannot take these arguments ({len(args)} positional, "
            f"keywords {sorted(kwargs)}): {e}") from None


class Traced:
    """A traced function: its graph, output structure, enclosing-trace values read and
    the value decisions it took (``decisions``, None when none).

    With ``values`` (the derivative transforms on concrete arguments), the trace knows its
    inputs' values and Python control flow on them takes their branch
    (:mod:`dualgpu.runtime.decisions`). A tentative scalar argument whose value the trace
    needs as a Python number, or any failure of a trace with tentative scalars, makes them
    static in ``sig`` (in place: :meth:`Signature.restatic`) and traces again;
    ``restaticed`` says so."""

    def __init__(self, fn: Callable, sig: Signature, captured: list[Tracer] | None,
                 values: bool = False):
        if not isinstance(fn, SelfTracing):
            check_call(fn, sig.args, sig.kwargs)
        self.restaticed = False
        while True:
            top = captured is None and not sig.traced  # not inside another trace
            hook = ValueTrace(sig.inputs if values and top else None, sig.diff,
                              sig.tentative, () if top else sig.inputs,
                              delegate=values and not top)
            held = HeldWrites()  # globals assigned by an attempt retried here: dropped
            try:
                with held:
                    self._trace(fn, sig, captured, hook)
                held.commit()
                break
            except NeedsStatic as e:
                if e.trace is not hook:
                    held.commit()
                    raise  # an enclosing trace's scalar: that trace makes it static
                sig.restatic(e.inputs)
            except Exception:
                if not sig.tentative:
                    held.commit()
                    raise
                # what failed may be a scalar's use (a library's check of a shape): the
                # ints static first (the likely ones), then the floats too
                ints = [k for k in sig.tentative if sig.avals[k].dtype.kind == "i"]
                sig.restatic(ints or sig.tentative)
            self.restaticed = True
            if captured:
                captured.clear()
        self.decisions: Decisions | None = None
        self.decided = bool(hook.decisions or hook.outside)  # a branch taken on values
        if hook.decisions:
            outs: list[Atom] = [d[0] for d in hook.decisions]
            guard = Graph(self.raw.inputs, outs, self.raw.eqns, name=f"decisions_{name_of(fn)}",
                          xp=self.raw.xp)
            guard = simplify(guard)
            if any(weakly for _, weakly in sig.scalar_inputs):
                guard = strengthen_weak_inputs(guard)
            self.decisions = Decisions(guard, sig.backend, hook.decisions)

    def _trace(self, fn: Callable, sig: Signature, captured: list[Tracer] | None,
               hook: ValueTrace) -> None:
        recorder = DrawRecorder()
        flat = FlatCall(fn, sig, recorder)
        states = global_states()
        try:
            with recording(recorder):
                self.raw, _ = trace_to_graph(flat, sig.avals, sig.backend.xp,
                                             name=name_of(fn), input_names=sig.input_names(fn),
                                             captured=captured, concretize=hook)
        except (TypeError, ValueError) as e:
            if isinstance(e, NeedsStatic) or sig.tentative:
                raise
            found = sig.number_sequence()
            if found is not None:
                raise number_sequence_error(sig.what, found, e) from None
            if not isinstance(e, TracerControlFlowError) or not sig.scalar_inputs:
                raise
            raise TracerControlFlowError(f"{e}\n{static_hint(fn, sig)}") from None
        if global_states() != states:
            raise RandomInTraceError(
                f"{name_of(fn)} drew from NumPy's (or Python's) global random state while it "
                "was traced, through a function that dualgpu does not see (a library's, or "
                "one in a list or dict held by an object's attribute): its draws would be "
                "constants of the compiled program. Call np.random or a Generator from the "
                "function itself (or pass the generator as an argument), or draw outside and "
                "pass the numbers")
        # the draws: inputs after the function's (and the enclosing trace's values read)
        self.draws: tuple[Draw, ...] = tuple(recorder.draws)
        self.graph = self.raw
        if recorder.tracers:
            g = self.graph
            names = g.input_names and g.input_names + [
                f"draw{i}" for i in range(len(recorder.tracers))]
            self.graph = Graph(g.inputs + [t._var for t in recorder.tracers], g.outputs,
                               g.eqns, name=g.name, input_names=names, xp=g.xp)
        if any(weakly for _, weakly in sig.scalar_inputs) or any(
                d.aval is not None and d.aval.weak for d in self.draws):
            narrowed = narrowed_ints(self.graph, {
                k: int_range(int(sig.inputs[k])) for k, weakly in sig.scalar_inputs
                if weakly and sig.avals[k].dtype.kind == "i"
                and not isinstance(sig.inputs[k], Tracer)})
            if narrowed:  # static: a literal of the program, as NumPy's rules take it
                raise NeedsStatic(hook, narrowed)
            if not sig.traced:  # (inlined, its weak values are the enclosing trace's to
                self.graph = strengthen_weak_inputs(self.graph)  # strengthen, with its own)
        assert flat.out_tree is not None  # the trace called flat
        self.out_tree: pytree.TreeDef = flat.out_tree
        self.captured = captured or []

    def split_aux(self, has_aux: bool, what: str) -> tuple[Graph, Graph | None, Any, Any]:
        """``(main graph, aux graph or None, main tree, aux tree)`` for ``has_aux``."""
        g, tree = self.graph, self.out_tree
        if not has_aux:
            return g, None, tree, None
        if tree.kind != "tuple" or len(tree.children) != 2:
            raise ArgumentTypeError(f"{what} has has_aux=True, so the function must return a pair "
                                    f"(a two-element tuple (output, aux)); it returns {tree}")
        n_main = tree.children[0].num_leaves
        main = Graph(g.inputs, g.outputs[:n_main], g.eqns, name=g.name,
                     input_names=g.input_names, xp=g.xp)
        aux = Graph(g.inputs, g.outputs[n_main:], g.eqns, name=g.name,
                    input_names=g.input_names, xp=g.xp)
        return simplify(main), simplify(aux), tree.children[0], tree.children[1]


def number_sequence_error(what: str, found: tuple[str, Any],
                          e: Exception) -> ArgumentTypeError:
    """The error of a function that failed on a list (or tuple) of numbers given as an
    argument (``found``: its name and it, :meth:`Signature.number_sequence`): traced as a
    pytree of scalars, as JAX does, where it wanted an array."""
    name, seq = found
    first = str(e).splitlines()[0] if str(e) else ""
    return ArgumentTypeError(
        f"{what}: {name} is a {type(seq).__name__} of {len(seq)} numbers, traced as a "
        f"pytree of {len(seq)} scalars (as JAX does), not as an array, and the function "
        f"failed on it ({type(e).__name__}: {first}); pass np.asarray(...) to give it an "
        "array")


def static_hint(fn: Any, sig: Signature) -> str:
    """What to do when the function needs the value of a scalar argument that was traced."""
    args = sorted({sig.arg_of_input[k] for k, _ in sig.scalar_inputs})
    nums = [a for a in args if a >= 0]
    where = ", ".join(f"argument {a}" for a in nums) or "a keyword argument"
    fix = (f"dg.jit({name_of(fn)}, static_argnums={tuple(nums)!r})" if nums
           else f"dg.jit({name_of(fn)}, static_argnames=(...))")
    return (f"Scalar arguments (here {where}) are traced as 0-d values, as in JAX, so that a "
            "new value reuses the program. If the function needs the number itself (a "
            f"branch, a shape, a loop count, math.*), mark it static: {fix} (each new value "
            "then traces again), or pass an int where a count is meant (ints are static).")


def narrowed_ints(graph: Graph, ranges: dict[int, int]) -> frozenset[int]:
    """The weakly typed int inputs of ``graph`` (input index -> :func:`int_range` of its
    value) that :func:`strengthen_weak_inputs` would cast to an integer dtype that may not
    hold the value: an input whose range the dtype does not hold, and every input a weakly
    typed value computed from them (``n + 1``: its value is not known) depends on when that
    is cast to a dtype narrower than int64. NumPy raises an OverflowError for such a number,
    or compares it exactly; a cast would wrap it: these are made static (literals). So is
    every input of a weakly typed int that Python's exact arithmetic may take beyond int64
    (``c * c``, ``2 ** c``: bounded from the inputs' ranges), which int64 would wrap."""
    if not ranges:
        return frozenset()
    position = {v.id: k for k, v in enumerate(graph.inputs)}
    found: set[int] = set()
    bounds = {graph.inputs[k].id: int_range_bound(mask) for k, mask in ranges.items()}

    # each weakly typed value's state: the int inputs it is computed from
    def rule(eqn: Eqn, _: Any, states: list) -> tuple[None, list]:
        weak = [(a, d) for a, d in zip(eqn.inputs, states)
                if not isinstance(a, (Literal, Const)) and a.aval.weak]
        if weak and eqn.prim.has(Flag.ELEMENTWISE) and any(not a.aval.weak
                                                          for a in eqn.inputs):
            target = promote([a.aval for a in eqn.inputs])
            if target.kind in "iu":
                for a, d in weak:
                    k = position.get(a.id)
                    if k in ranges:
                        if not int_range_holds(ranges[k], target):
                            found.add(k)
                    elif target != np.int64:
                        found.update(d or ())
        got = frozenset().union(*(d for _, d in weak if d))
        if got and eqn.prim.has(Flag.ELEMENTWISE) and all(
                a.aval.weak and a.aval.dtype.kind in "biu" for a in eqn.inputs) and \
                all(o.aval.weak and o.aval.dtype.kind in "iu" for o in eqn.outs):
            bound = _exact_bound(eqn, bounds)
            if bound is None or bound > _INT64_MAX:
                found.update(got)
            else:
                bounds.update((o.id, bound) for o in eqn.outs)
        return None, [got if got and o.aval.weak else None for o in eqn.outs]

    walk(graph, None, {v.id: frozenset((k,)) for k, v in enumerate(graph.inputs)
                       if k in ranges}, rule)
    return frozenset(found)


_INT64_MAX = 2 ** 63 - 1


def _exact_bound(eqn: Eqn, bounds: dict[int, int]) -> int | None:
    """The largest magnitude of a weakly typed int equation's output, as Python's exact
    ints compute it, over its operands' bounds (each at -bound and +bound, a literal at its
    value): the op on object arrays of Python ints. None when unknown."""
    corners: list[tuple[int, ...]] = []
    for a in eqn.inputs:
        if isinstance(a, Literal):
            corners.append((int(a.value),))
        elif not isinstance(a, Const) and a.id in bounds:
            corners.append((-bounds[a.id], bounds[a.id]))
        elif a.aval.dtype.kind == "b":
            corners.append((0, 1))
        else:
            return None
    try:
        found = 0
        for combo in itertools.product(*corners):
            out = eqn.prim.impl(np, *(np.array(c, dtype=object) for c in combo), **eqn.params)
            found = max(found, abs(int(out)))
        return found
    except (TypeError, ValueError, ArithmeticError):
        return None


def strengthen_weak_inputs(graph: Graph) -> Graph:
    """``graph`` with its weakly typed scalar inputs (Python floats) made ordinary 0-d
    inputs: wherever such a value meets a strongly typed operand, it is first cast to the
    dtype the equation promotes to, so that the program computes in the dtypes the weak
    typing gave (``x32 * dt`` stays float32) whatever array library runs it."""

    def cast_weak(eqn: Eqn, ins: list, states: list) -> tuple[list, list]:
        weak = [k for k, a in enumerate(eqn.inputs)
                if not isinstance(a, (Literal, Const)) and a.aval.weak]
        # only elementwise ops promote their operands (an index stays an int)
        if weak and eqn.prim.has(Flag.ELEMENTWISE) and any(not a.aval.weak
                                                          for a in eqn.inputs):
            target = promote([a.aval for a in eqn.inputs])
            for k in weak:
                if eqn.inputs[k].dtype != target:
                    ins[k] = lax.astype(ins[k], target)
        outs = eqn.prim.bind(*ins, **eqn.params)
        outs = outs if eqn.prim.multiple_results else [outs]
        if weak and any(lax.dtype_of(o) != v.dtype for o, v in zip(outs, eqn.outs)):
            # another op whose dtype the weak typing gave (a custom op's traced body: x32 *
            # c is float32): its weak operands as the promoted dtype, as a Python number
            # would be taken, so that it computes in the dtype the trace said
            target = promote([a.aval for a in eqn.inputs])
            for k in weak:
                ins[k] = lax.astype(ins[k], target)
            outs = eqn.prim.bind(*ins, **eqn.params)
            outs = outs if eqn.prim.multiple_results else [outs]
            outs = [o if lax.dtype_of(o) == v.dtype else lax.astype(o, v.dtype)
                    for o, v in zip(outs, eqn.outs)]
        return outs, [None] * len(outs)

    def run(*args: Any) -> list:
        return propagate_states(graph, args, {}, cast_weak)[0]

    avals = [v.aval._replace(weak=False) for v in graph.inputs]
    new, _ = trace_to_graph(run, avals, graph.xp, name=graph.name,
                            input_names=graph.input_names)
    return new


def with_aux(program: Graph, aux: Graph | None) -> Graph:
    """``program``'s outputs followed by ``aux``'s (computed from its first inputs), in one
    graph: the shared forward computation is merged by CSE."""
    if aux is None or not aux.outputs:
        return program
    n = len(aux.inputs)

    def both(*args: Any) -> list:
        return eval_graph(program, args) + eval_graph(aux, args[:n])

    g, _ = trace_to_graph(both, [v.aval for v in program.inputs], program.xp,
                          name=program.name, input_names=program.input_names)
    return simplify(g)
