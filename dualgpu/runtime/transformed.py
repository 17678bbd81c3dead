"""The transformed function: what every transform shares (:class:`Transformed`). A call
goes through the stages of :mod:`dualgpu.runtime`: its arguments, their
:class:`~dualgpu.runtime.signature.Signature`, the cache entry of
:mod:`~dualgpu.runtime.program_cache` (with its guards), the run. A transform says only
how to split a call's arguments, build its graph from the traced function, and shape the
results (:meth:`Transformed.split`, :meth:`~Transformed.build`, :meth:`~Transformed.finish`);
the public transforms (:mod:`dualgpu.api.differentiation`, :mod:`dualgpu.api.curvature`...)
are written so.

A call already seen with the same plain arrays runs on the fast path: one dict lookup,
the entry's guards, the program, and the results placed where a template of
:meth:`~Transformed.finish` put them.

Example::

    >>> class Double(Transformed):
    ...     kind = "double"
    ...     def build(self, traced, sig):
    ...         return traced.graph, None
    ...     def finish(self, compiled, sig, outs):
    ...         return 2 * outs[0]
    >>> Double(np.sin, argnums=())(np.zeros(2))
    array([0., 0.])
"""
from __future__ import annotations

import copy
import inspect
import threading
import types
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from ..backends.base import Backend
from ..base import tree as pytree
from ..core.interpret import eval_graph
from ..core.ir import Graph
from ..core.primitives import registry_version
from ..core.substitution import substitute_tree
from ..core.trace import Tracer, current_builder, thread_state
from ..errors import ArgumentTypeError, RandomInTraceError, ShapeMismatchError
from ..frontend.namespace import rebind_function
from ..frontend.numpy.random import source_states
from ..transforms.separability import check_separable, sum_output
from . import dask
from .checks import (
    check_alive,
    check_direction,
    check_float0_direction,
    normalize_argnums,
    normalize_batch_axes,
)
from .executor import config, generation, jit_switch, jit_switch_open
from .guards import Guards, collect_guards
from .program_cache import (
    PROGRAMS,
    STATIC_SCALARS,
    Compiled,
    Inlined,
    Restaticed,
    count_build,
    evict_on_death,
    function_key,
    log,
    remember_static,
)
from .signature import Signature, alias_pattern, int_range, is_dask_array
from .tracing import SelfTracing, Traced, name_of


def _held_value(leaf: Any) -> Any:
    """What a trace's view of an array holds (traced once written: frontend.constant_array)."""
    view = getattr(type(leaf), "_dualgpu_view_of_constant", False)
    return leaf.constant_value() if view else leaf


# ------------------------------------------------------------------------------ fast path
_QUICK_TYPES = {np.ndarray}
_QUICK_SCALARS = (bool, str, type(None))
_INT64 = 2 ** 63


def quick_key(args: tuple) -> tuple | None:
    """A cheap exact key for a call whose positional arguments are all plain arrays (and
    Python ints, bools, strings, floats or None), or tuples and lists of arrays, or None
    for any other call. It stands for the same program as the full key: every argument is
    a leaf or a flat sequence of leaves, so structure, shapes, dtypes, static values and
    aliasing are all in it. Python ints and floats are keyed by type: they are inputs of
    the program (a call where one is static, keyed by its value, is never remembered)."""
    key: list[Any] = []
    nested = False
    for a in args:
        t = type(a)
        if t in _QUICK_TYPES:  # the type names the backend: NumPy and CuPy never share
            key.append((t, a.shape, a.dtype))
        elif t is float:
            key.append(t)  # a weakly typed input (a call with a static one is not remembered)
        elif t is int and -_INT64 <= a < _INT64:
            key.append((t, int_range(a)))  # as its signature: by the dtypes that hold it
        elif t is int:
            key.append((t, a))
        elif t in _QUICK_SCALARS:
            key.append((t, a))
        elif t is tuple or t is list:
            parts = []
            for b in a:
                if type(b) not in _QUICK_TYPES:
                    return None
                parts.append((type(b), b.shape, b.dtype))
            key.append((t, tuple(parts)))
            nested = True
        elif t.__name__ == "ndarray" and t.__module__.startswith("cupy"):
            _QUICK_TYPES.add(t)
            key.append((t, a.shape, a.dtype))
        else:
            return None
    leaves = flat_arguments(args) if nested else args
    if len({id(a) for a in leaves}) != len(leaves):
        key.append(alias_pattern(leaves))
    return tuple(key)


def flat_arguments(args: tuple) -> tuple:
    """``args`` with its tuples and lists spread out (the leaves of a quick-keyed call)."""
    out: list = []
    for a in args:
        if type(a) is tuple or type(a) is list:
            out.extend(a)
        else:
            out.append(a)
    return tuple(out)


class FastCall:
    """What the fast path of a call seen before needs: its program (held weakly: the
    program cache owns it), the cache generation it was made in, the program's guards
    (None when it has none), whether Python floats pass as 0-d arrays, the signature's
    layout (no values), whether its arguments hold tuples or lists of arrays (spread
    out), and the template of the results (None: :meth:`Transformed.finish`
    shapes them)."""

    __slots__ = ("program", "generation", "guards", "floats", "nested", "layout", "template")

    def __init__(self, program: weakref.ref[Compiled], generation_: int, guards: Guards | None,
                 floats: bool, nested: bool, layout: Signature, template: Any):
        self.program = program
        self.nested = nested
        self.generation = generation_
        self.guards = guards
        self.floats = floats
        self.layout = layout
        self.template = template


class _Slot:
    """Output ``index`` of a program, standing in for it while a template is made."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index


TEMPLATE_DEPTH = 32  # results nested deeper are shaped by finish (a pytree walk, no recursion)


def slots(n: int) -> list[_Slot]:
    return [_Slot(i) for i in range(n)]


def results_template(result: Any, depth: int = 0) -> Any:
    """Where a result built from :func:`slots` put each output: an int (the output itself),
    ``(tuple | list, parts)``, ``(dict, keys, parts)``, ``(None,)``, or ``("tree", treedef,
    outputs)`` for other pytree nodes; None when the result holds anything else (an array
    made by ``finish``, which must be fresh on every call, or containers nested deeper
    than :data:`TEMPLATE_DEPTH`).

    Example::

        >>> t = results_template(((_Slot(1), {"a": _Slot(0)}), None))
        >>> t
        (<class 'tuple'>, [(<class 'tuple'>, [1, (<class 'dict'>, ['a'], [0])]), (None,)])
        >>> place_results(t, ["x", "y"])
        (('y', {'a': 'x'}), None)
    """
    t = type(result)
    if t is _Slot:
        return result.index
    if depth > TEMPLATE_DEPTH:
        return None
    if result is None:
        return (None,)
    if t is tuple or t is list or t is dict:
        items = list(result.values()) if t is dict else list(result)
        parts = [results_template(r, depth + 1) for r in items]
        if any(p is None for p in parts):
            return None
        return (t, list(result), parts) if t is dict else (t, parts)
    leaves, treedef = pytree.flatten(result)
    if treedef.is_leaf or not all(type(leaf) is _Slot for leaf in leaves):
        return None
    return ("tree", treedef, [leaf.index for leaf in leaves])


def place_results(template: Any, outs: Sequence[Any]) -> Any:
    """The results of a call: the outputs ``outs`` placed by ``template``."""
    if type(template) is int:
        return outs[template]
    kind = template[0]
    if kind is tuple:
        return tuple([place_results(t, outs) for t in template[1]])
    if kind is list:
        return [place_results(t, outs) for t in template[1]]
    if kind is dict:
        return dict(zip(template[1], [place_results(t, outs) for t in template[2]]))
    if kind is None:
        return None
    return pytree.unflatten(template[1], [outs[i] for i in template[2]])


@dataclass(frozen=True)
class Spec:
    """What, besides the function and the call signature, determines a transform's program:
    its kind, the common options and its own, by name (hashable: part of the cache key).

    Example::

        >>> spec = dg.laplacian(np.sin, chunk_size=3).spec
        >>> spec.kind, spec.argnums, dict(spec.options)
        ('laplacian', (0,), {'chunk_size': 3, 'memory_budget': None})
    """

    kind: str
    argnums: Any = 0
    has_aux: bool = False
    batch_axes: tuple | None = None
    options: tuple = ()  # (name, value) pairs, sorted by name


_T = TypeVar("_T", bound="Transformed")


class Transformed(SelfTracing):
    """A function transformed by dualgpu. Calling it traces (once per signature) and runs;
    called on traced values it inlines its program into the enclosing trace."""

    kind = "abstract"
    # what compiles the graph(s) that build returns: (graphs, trees, backend, guards)
    program_type: Callable[..., Compiled] = Compiled
    allow_int = False  # integer leaves of differentiated arguments get float0 zeros
    static: tuple = ((), ())  # (positions, keyword names) of static arguments (jit)
    # the Python floats and ints of the arguments are weakly typed inputs (JAX's weak types),
    # not cache keys: a new value reuses the program. The ints (and, with floats_fall_back,
    # the floats) are tentative: a trace that needs one as a Python number makes it static
    trace_scalars = True
    trace_ints = True
    floats_fall_back = True
    # the trace knows the arguments' values, as JAX's transforms outside jit: Python control
    # flow on traced values takes their branch (runtime/decisions.py)
    sees_values = True
    # whether finish only places the program's outputs in containers (read from no value:
    # the fast path then places them by a template of finish's result)
    finish_places_outputs = False
    _dualgpu_transform = True
    FAST_SLOTS = 8

    def __init__(self, fn: Callable, argnums: Any = 0, *, has_aux: bool = False,
                 batch_axes: Any = None):
        what = "dg.trace / dg.source / dg.jit" if self.kind == "jit" else f"dg.{self.kind}"
        if not callable(fn):
            raise ArgumentTypeError(f"{what} expects a function (Expected a callable value), "
                                    f"got {type(fn).__name__}")
        if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
            raise ArgumentTypeError(
                f"{what}: {name_of(fn)} is a generator function (it yields): a traced function "
                "returns its arrays. Return them (a list or tuple of arrays is a pytree), or "
                "transform the function that computes each item")
        self.fn = fn
        self.argnums, self.argnums_tuple = normalize_argnums(argnums)
        if not isinstance(has_aux, bool):
            raise ArgumentTypeError(f"has_aux must be True or False, got {has_aux!r}")
        self.has_aux = has_aux
        self.batch_axes = normalize_batch_axes(batch_axes)
        self.__name__ = f"{self.kind}_{name_of(fn)}"
        self.__qualname__ = self.__name__
        self.__wrapped__ = fn
        self.__doc__ = getattr(fn, "__doc__", None)
        # functools.wraps' module and annotations, as JAX's transforms (the name stays
        # kind_name: programs and messages are named by it; fn's __dict__ is not copied)
        self.__module__ = getattr(fn, "__module__", None) or type(self).__module__
        self.__annotations__ = dict(getattr(fn, "__annotations__", None) or {})
        self._programs: dict[tuple, weakref.ref[Compiled]] = {}
        self._quick: dict[tuple, FastCall] = {}
        self._lock = threading.Lock()
        self._weak: list = []
        self._fn_key = function_key(fn, self._weak)
        # per number of positional arguments: this transform with argnums resolved (None:
        # no negative argnums, nothing to resolve)
        self._by_arity: dict[int, Any] | None = \
            {} if any(a < 0 for a in self.argnums) else None

    def _resolved(self: _T, args: tuple) -> _T:
        """This transform with negative ``argnums`` counted from the end of ``args`` (the
        function's positional arguments), as JAX: one copy per number of arguments."""
        n = len(args)
        by_arity = self._by_arity
        if by_arity is None:  # no negative argnums
            return self
        hit: _T | None = by_arity.get(n)
        if hit is not None:
            return hit
        if any(not -n <= a < n for a in self.argnums):
            raise ArgumentTypeError(
                f"{self.__name__}: argnums {self.argnums} names an argument out of range for "
                f"a call with {n} positional argument(s) (argnums from {-n} to {n - 1})")
        resolved = copy.copy(self)
        resolved.argnums = tuple(a % n for a in self.argnums)
        resolved._by_arity = None
        resolved._programs, resolved._quick = {}, {}
        resolved._lock = threading.Lock()
        with self._lock:
            by_arity[n] = resolved
        return resolved

    @property
    def spec(self) -> Spec:
        """What, besides the function and the call signature, determines the program: the
        only source of the transform's part of the cache key."""
        return Spec(self.kind, self.argnums, self.has_aux, self.batch_axes,
                    tuple(sorted(self.options().items())))

    def options(self) -> dict[str, Any]:
        """The transform's own options that shape its program, by name (subclasses)."""
        return {}

    def __repr__(self) -> str:
        return f"<dualgpu.{self.kind} of {name_of(self.fn)}>"

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        """As a method (``@dg.jit`` in a class body): bound to the instance, which is the
        first argument (static, by identity), as a Python function would be."""
        if instance is None:
            return self
        return types.MethodType(self, instance)

    def _signature(self, fargs: tuple, kwargs: dict) -> Signature:
        """The analysis of a call of the function (scalars traced under jit; the static
        arguments kept static)."""
        static = self.static
        if any(i < 0 for i in static[0]):  # counted from the end, as argnums
            static = (tuple(i % len(fargs) if -len(fargs) <= i else i for i in static[0]),
                      static[1])
        sig = Signature(fargs, kwargs, self.argnums, self.__name__, self.allow_int,
                        trace_scalars=self.trace_scalars, static=static,
                        trace_ints=self.trace_ints, tentative_floats=self.floats_fall_back)
        if sig.tentative:  # a trace of this signature needed some as Python numbers?
            leaves = STATIC_SCALARS.get((self.spec, self._fn_key, sig.key))
            if leaves is not None:
                sig.restatic(sig.input_pos.index(j) for j in leaves if j in sig.input_pos)
        return sig

    # subclasses: split a call's arguments into the function's and extra inputs; build the
    # graph; prepare the extra inputs; shape the results
    def split(self, args: tuple) -> tuple[tuple, Any]:
        return args, None

    def build(self, traced: Traced, sig: Signature) -> tuple[Graph, Any]:
        raise NotImplementedError

    def extra_inputs(self, sig: Signature, extra: Any) -> list:
        return []

    def finish(self, compiled: Compiled | Inlined, sig: Signature, outs: list) -> Any:
        raise NotImplementedError

    def _without_jit(self, args: tuple, kwargs: dict) -> Any:
        """The function itself, under ``dg.disable_jit``: run eagerly on concrete values,
        traced inline by an enclosing transform on its tracers."""
        if any(isinstance(leaf, Tracer) for leaf in pytree.leaves((args, kwargs))):
            return rebind_function(self.fn)(*args, **kwargs)
        return self.fn(*args, **kwargs)

    def entry_guards(self, guards: Guards, trees: Any) -> Guards:
        """The guards of a cache entry: what the function read (``guards``), and what else
        its build read (subclasses: the sparse transforms add the constant arrays whose
        values their pattern was read from, :mod:`dualgpu.api.sparse_derivatives`)."""
        return guards

    # ------------------------------------------------------------------------ calling
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if jit_switch_open[0] and self.kind == "jit" and jit_switch.on:
            return self._without_jit(args, kwargs)
        if self._by_arity is not None:
            return self._resolved(self.split(args)[0])(*args, **kwargs)
        qkey = None if kwargs else quick_key(args)
        if qkey is not None:
            # plain arrays seen before: every argument passes straight to the program. This
            # path stays in this module but for the guards and the program (a test counts it)
            fast = self._quick.get(qkey)
            if (fast is not None and fast.generation == generation[0]
                    and not getattr(thread_state, "builders", None)):
                program = fast.program()
                if program is not None and (fast.guards is None or fast.guards.hold()):
                    given = flat_arguments(args) if fast.nested else args
                    if fast.floats:  # Python floats and ints: 0-d inputs
                        given = scalars_as_arrays(given, fast.layout.backend)
                    if program.variants is not None:  # the branch the values take
                        program = program.pick(given)
                        if program is not None and program.draws:
                            program = None  # a branch that draws: the slow path draws
                    if program is not None:
                        PROGRAMS.hits += 1  # a statistic: unlocked, one int increment
                        outs = program.exe(*given)
                        if fast.template is None:
                            return self.finish(program, fast.layout, outs)
                        return place_results(fast.template, outs)
        if current_builder() is not None:  # an array made and written in the trace: its value
            args, kwargs = pytree.tree_map(_held_value, (args, kwargs))
        args, kwargs = substitute_tree((args, kwargs))  # (in a converted custom closure)
        fargs, extra = self.split(args)
        sig = self._signature(fargs, kwargs)
        if sig.dask or is_dask_array(extra):  # per-chunk programs over Dask arrays
            return dask.call(self, args, kwargs)
        extras = self.extra_inputs(sig, extra)
        if sig.traced or current_builder() is not None:
            # inside a trace: inline (the function may read values of the enclosing trace)
            check_alive(list(sig.inputs) + list(extras), self.__name__)
            return self._inline(sig, extras)
        compiled = self.compiled(sig)
        passed = list(sig.inputs) + compiled.drawn(sig) + list(extras)
        outs = compiled.exe(*passed)
        if qkey is not None and not sig.sparse and not compiled.draws:
            leaves = flat_arguments(args)
            if len(passed) == len(leaves) and all(
                    p is a or type(a) is float or type(a) is int
                    for p, a in zip(passed, leaves)):
                self._remember(qkey, compiled, sig.layout(), len(outs),
                               any(type(a) is float or type(a) is int for a in leaves),
                               any(type(a) is tuple or type(a) is list for a in args))
        return self.finish(compiled, sig, outs)

    def _remember(self, qkey: tuple, compiled: Compiled, layout: Signature, n_outs: int,
                  floats: bool, nested: bool) -> None:
        """Record what the fast path needs for calls with the quick key ``qkey``."""
        template = None
        if self.finish_places_outputs and compiled.variants is None:
            template = results_template(self.finish(compiled, layout, slots(n_outs)))
        fast = FastCall(weakref.ref(compiled), generation[0],
                        compiled.guards if len(compiled.guards) else None, floats, nested,
                        layout, template)
        with self._lock:
            self._quick[qkey] = fast
            while len(self._quick) > self.FAST_SLOTS:
                self._quick.pop(next(iter(self._quick)))

    def compiled(self, sig: Signature) -> Compiled:
        """The cached program for this signature (built on a miss or a failed guard), the
        variant whose value decisions ``sig``'s inputs take. A trace that needed tentative
        scalars as Python numbers makes them static in ``sig`` (the cache remembers)."""
        local_key = (generation[0], sig.key)
        ref = self._programs.get(local_key)
        hit = None if ref is None else ref()
        if hit is not None and hit.guards_hold():
            chosen = hit if hit.variants is None else hit.pick(sig.inputs)
            if chosen is not None:
                PROGRAMS.hits += 1
                return chosen
        key = (self.spec, self._fn_key, sig.key, registry_version(), config.build_key())
        stale = hit

        def build() -> Compiled:
            return self._build(sig, key, None if stale is None else stale.guards.changed())

        try:
            entry: Compiled = PROGRAMS.get_or_build(key, build)
            if not entry.guards_hold():
                stale = entry
                PROGRAMS.discard_later(key)
                entry = PROGRAMS.get_or_build(key, build)
            with self._lock:
                self._programs[local_key] = weakref.ref(entry)
                while len(self._programs) > self.FAST_SLOTS:
                    self._programs.pop(next(iter(self._programs)))
            if entry.variants is None:
                return entry
            chosen = entry.pick(sig.inputs)
            if chosen is None:
                chosen = self._build(sig, key, None, _decision_changed(entry, sig.inputs))
                entry.add_variant(chosen)
            return chosen
        except Restaticed:
            if key[2] == sig.key:  # another thread's trace found it: this call too
                self._signature_static(sig)
            return self.compiled(sig)

    def _build(self, sig: Signature, key: tuple, changed: str | None,
               decision: str | None = None) -> Compiled:
        """A program for ``sig`` (``changed``: what made the cached one stale; ``decision``:
        the branch the cached variants do not take). Raises :class:`Restaticed` when its
        trace made tentative scalars static: the program is then cached under the static
        signature's key."""
        inlined = PROGRAMS.get(("inline",) + key) if changed is None and decision is None \
            and self.program_type is Compiled else None  # a plain program (not per color)
        if isinstance(inlined, Inlined) and inlined.reusable and not inlined.draws and \
                inlined.guards_hold():  # traced inside another function: not again
            return Compiled(inlined.graph, inlined.trees, sig.backend, inlined.guards)
        count_build(self, sig, changed, decision)
        before = collect_guards(self.fn, arguments=sig.by_identity)
        traced = traced_checked(self.fn, sig, None, before, self.sees_values)
        graph, trees = self.build(traced, sig)
        guards = collect_guards(self.fn, before, sig.by_identity)
        compiled = self.program_type(graph, trees, sig.backend, self.entry_guards(guards, trees))
        compiled.draws = traced.draws
        if traced.decisions is not None:
            compiled.decisions = traced.decisions
            compiled.variants = [compiled]
        log.debug("compiled %s: %d equations on %s", self.__name__,
                  len(compiled.graph.eqns), sig.backend.name)
        if traced.restaticed:
            remember_static(key[:2] + key[2:3], sig.options["static_leaves"])
            key = key[:2] + (sig.key,) + key[3:]
            PROGRAMS.put(key, compiled)
            evict_on_death(key, self._weak + sig.weak)
            raise Restaticed
        evict_on_death(key, self._weak + sig.weak)
        return compiled

    def _signature_static(self, sig: Signature) -> None:
        """Make ``sig``'s scalars static as a trace of its signature found they must be."""
        leaves = STATIC_SCALARS.get((self.spec, self._fn_key, sig.key))
        if leaves is not None:
            sig.restatic(sig.input_pos.index(j) for j in leaves if j in sig.input_pos)

    def _inline(self, sig: Signature, extras: list) -> Any:
        """Evaluate the program into the enclosing trace. Its graph is cached like a
        compiled program (an outer function traced again does not trace this one again),
        unless the function read values of the enclosing trace (they differ per trace)."""
        key = ("inline", self.spec, self._fn_key, sig.key, registry_version(),
               config.build_key())
        fresh: list[list[Tracer]] = []

        def build() -> Inlined:
            compiled = PROGRAMS.get(key[1:])
            if type(compiled) is Compiled and compiled.variants is None and \
                    not compiled.draws and compiled.guards_hold():  # traced at the top level
                fresh.append([])
                return Inlined(compiled.graph, compiled.trees, compiled.guards, True)
            captured: list[Tracer] = []
            before = collect_guards(self.fn, arguments=sig.by_identity)
            traced = traced_checked(self.fn, sig, captured, before, self.sees_values)
            graph, trees = self.build(traced, sig)
            fresh.append(captured)
            evict_on_death(key, self._weak + sig.weak)
            guards = self.entry_guards(collect_guards(self.fn, before, sig.by_identity), trees)
            if traced.restaticed:  # made for the static signature: not for this key
                remember_static(key[1:3] + key[3:4], sig.options["static_leaves"])
                return Inlined(graph, trees, guards, False, traced.draws)
            # a branch taken on the values of the enclosing trace: built for that trace
            return Inlined(graph, trees, guards, not captured and not traced.decided,
                           traced.draws)

        tentative = sig.key
        entry: Inlined = PROGRAMS.get_or_build(key, build)
        if fresh and sig.key != tentative:
            PROGRAMS.discard_later(key)
        if not fresh and sig.key == tentative and (self.spec, self._fn_key, sig.key) in \
                STATIC_SCALARS:  # another call's trace made its scalars static
            self._signature_static(sig)
            return self._inline(sig, extras)
        if fresh:
            captured = fresh[0]
        elif entry.reusable and entry.guards_hold():
            captured = []
        else:
            PROGRAMS.discard_later(key)
            captured = []
            traced = Traced(self.fn, sig, captured, values=self.sees_values)
            entry = Inlined(*self.build(traced, sig), draws=traced.draws)
        outs = eval_graph(entry.graph, list(sig.inputs) + captured + entry.drawn(sig)
                          + list(extras))
        return self.finish(entry, sig, outs)

    def graph(self, *args: Any, **kwargs: Any) -> Graph:
        """The program this call runs (its graph), built afresh and not compiled."""
        if self._by_arity is not None:
            return self._resolved(self.split(args)[0]).graph(*args, **kwargs)
        sig = self._analysed(args, kwargs, "graph")
        return self.build(Traced(self.fn, sig, None, values=self.sees_values), sig)[0]

    def source(self, *args: Any, **kwargs: Any) -> str:
        if self._by_arity is not None:
            return self._resolved(self.split(args)[0]).source(*args, **kwargs)
        sig = self._analysed(args, kwargs, "source")
        return self.compiled(sig).exe.source

    def _analysed(self, args: tuple, kwargs: dict, what: str) -> Signature:
        """The signature of a call that is not run (:meth:`graph`, :meth:`source`), its extra
        inputs checked; Dask arrays are refused (their programs are built per chunk)."""
        if current_builder() is not None:  # an array made and written in the trace: its value
            args, kwargs = pytree.tree_map(_held_value, (args, kwargs))
        args, kwargs = substitute_tree((args, kwargs))  # (in a converted custom closure)
        fargs, extra = self.split(args)
        sig = self._signature(fargs, kwargs)
        if sig.dask or is_dask_array(extra):
            raise ArgumentTypeError(
                f"{self.__name__}.{what}() of Dask arrays: a call on Dask arrays runs one "
                f"program per chunk; ask for the {what} of a call on one chunk (x.blocks[0]"
                ".compute())")
        self.extra_inputs(sig, extra)
        return sig

    # ------------------------------------------------------------------------ helpers
    def _base(self, traced: Traced, sig: Signature) -> tuple[Graph, Graph | None, Any, Any]:
        """The function's graph split into main output and aux, batch-summed if asked."""
        main, aux, tree, aux_tree = traced.split_aux(self.has_aux, self.__name__)
        if self.batch_axes is not None:
            diff = sig.diff_inputs()
            check_separable(main, diff, self.batch_axes, what=self.kind)
            main = sum_output(main)
            tree = pytree.LEAF
        return main, aux, tree, aux_tree

    def _per_argnum(self, sig: Signature, values: Iterable[Any], repackage: bool = True) -> Any:
        """Per-leaf results of the differentiated leaves, regrouped per ``argnums``."""
        values = list(values)
        per = [sig.per_argument(values, a, repackage) for a in self.argnums]
        return tuple(per) if self.argnums_tuple else per[0]

    def _directions(self, sig: Signature, vs: Any, what: str) -> list:
        """The flat direction leaves for the differentiated leaves, checked."""
        if self.argnums_tuple:
            if not isinstance(vs, (tuple, list)) or len(vs) != len(self.argnums):
                raise ShapeMismatchError(
                    f"{self.__name__}: expected a tuple of {len(self.argnums)} {what}s, one "
                    f"per differentiated argument {self.argnums}")
            per_arg = dict(zip(self.argnums, vs))
        else:
            per_arg = {self.argnums[0]: vs}
        out = []
        for a in sorted(per_arg):
            leaves, tree = pytree.flatten(per_arg[a])
            ks = [k for k, d in enumerate(sig.diff)
                  if (d or k in sig.int_inputs) and sig.arg_of_input[k] == a]
            if tree != sig.arg_trees[a] and sig.arg_trees[a].is_leaf:
                raise ShapeMismatchError(
                    f"{self.__name__}: the {what} for argument {a} must be an array like "
                    f"the argument, got {type(per_arg[a]).__name__}")
            if tree != sig.arg_trees[a]:
                raise ShapeMismatchError(
                    f"{self.__name__}: the {what} for argument {a} has structure {tree}, "
                    f"but the argument has {sig.arg_trees[a]}")
            for k, v in zip(ks, leaves):
                if k in sig.int_inputs:
                    check_float0_direction(sig, k, v, a, what)
                else:
                    out.append(check_direction(sig, k, v, a, what))
        return out


def _decision_changed(program: Compiled, inputs: list) -> str | None:
    """The decision of ``program``'s most recent variant that ``inputs`` take otherwise."""
    if program.variants is None:
        return None
    decisions = program.variants[0].decisions
    return None if decisions is None else decisions.changed(inputs)


def traced_checked(fn: Callable, sig: Signature, captured: list[Tracer] | None,
                   before: Guards, values: bool = False) -> Traced:
    """``fn`` traced; refused when the trace drew from a generator it reaches where the
    tracing namespace does not see it (``self.params["rng"]``: its draws would be constants
    of the program)."""
    sources = before.sources()
    states = source_states([g for _, g in sources])
    traced = Traced(fn, sig, captured, values=values)
    for (label, _), was, now in zip(sources, states,
                                    source_states([g for _, g in sources])):
        if was != now:
            raise RandomInTraceError(
                f"{name_of(fn)} drew random numbers from {label} while it was traced, "
                "reached where dualgpu does not see it (a container held by an object's "
                "attribute, a dict's item, a generator's method or a partial of one): the "
                "draws "
                "would be constants of the compiled program. Pass the generator as an "
                "argument (each call then draws from it), or draw outside and pass the numbers")
    return traced


def scalars_as_arrays(args: tuple, backend: Backend) -> tuple:
    """``args`` with the Python floats and ints as the 0-d arrays they are passed as."""
    def array(a: float) -> Any:
        x = np.asarray(a) if type(a) is float else np.asarray(a, dtype=np.int64)
        return backend.to_device(x) if backend.on_device else x

    return tuple(array(a) if type(a) is float or type(a) is int else a for a in args)
