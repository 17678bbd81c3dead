"""The transformed function: what every transform shares (:class:`Transformed`). A call
goes through the stages of :mod:`dualgpu.runtime`: its arguments, their
:class:`~dualgpu.runtime.signature.Signature`, the cache entry of
:mod:`~dualgpu.runtime.program_cache` (with its guards), the run. A transform says only
how to split a call's arguments, build its graph from the traced function, and shape the
results (:meth:`Transformed.split`, :meth:`~Transformed.build`, :meth:`~Transformed.finish`);
the public transforms (:mod:`dualgpu.api`, :mod:`dualgpu.curvature`...) are written so.

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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import tree as pytree
from ..core.interpret import eval_graph
from ..core.ir import Graph
from ..core.primitives import registry_version
from ..core.trace import current_builder
from ..errors import ArgumentTypeError, ShapeMismatchError
from ..executor import config, generation
from ..transforms.separability import check_separable, sum_output
from . import dask
from .checks import check_direction, check_float0_direction, normalize_argnums, normalize_batch_axes
from .guards import Guards, collect_guards
from .program_cache import (
    PROGRAMS,
    Compiled,
    Inlined,
    count_build,
    evict_on_death,
    function_key,
    log,
)
from .signature import Signature, quick_key
from .tracing import SelfTracing, Traced, name_of


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


class Transformed(SelfTracing):
    """A function transformed by dualgpu. Calling it traces (once per signature) and runs;
    called on traced values it inlines its program into the enclosing trace."""

    kind = "abstract"
    program_type = Compiled  # what compiles the graph(s) that build returns
    allow_int = False  # integer leaves of differentiated arguments get float0 zeros
    static: tuple = ((), ())  # (positions, keyword names) of static arguments (jit)
    # floating scalars of the arguments are traced (jit, as JAX); the derivative transforms
    # run the function on their values in JAX, so there they stay static (keyed by value)
    trace_scalars = False
    _dualgpu_transform = True
    FAST_SLOTS = 8

    def __init__(self, fn: Callable, argnums=0, *, has_aux: bool = False, batch_axes=None):
        what = "dg.trace / dg.source / dg.jit" if self.kind == "jit" else f"dg.{self.kind}"
        if not callable(fn):
            raise ArgumentTypeError(f"{what} expects a function, got {type(fn).__name__}")
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
        self._programs: dict = {}
        self._quick: dict = {}
        self._lock = threading.Lock()
        self._weak: list = []
        self._fn_key = function_key(fn, self._weak)
        self._by_arity: dict | None = {} if any(a < 0 for a in self.argnums) else None

    def _resolved(self, args: tuple) -> Transformed:
        """This transform with negative ``argnums`` counted from the end of ``args`` (the
        function's positional arguments), as JAX: one copy per number of arguments."""
        n = len(args)
        hit = self._by_arity.get(n)
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
            self._by_arity[n] = resolved
        return resolved

    @property
    def spec(self) -> Spec:
        """What, besides the function and the call signature, determines the program: the
        only source of the transform's part of the cache key."""
        return Spec(self.kind, self.argnums, self.has_aux, self.batch_axes,
                    tuple(sorted(self.options().items())))

    def options(self) -> dict:
        """The transform's own options that shape its program, by name (subclasses)."""
        return {}

    def __repr__(self) -> str:
        return f"<dualgpu.{self.kind} of {name_of(self.fn)}>"

    def __get__(self, instance, owner=None):
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
        return Signature(fargs, kwargs, self.argnums, self.__name__, self.allow_int,
                         trace_scalars=self.trace_scalars, static=static)

    # subclasses: split a call's arguments into the function's and extra inputs; build the
    # graph; prepare the extra inputs; shape the results
    def split(self, args: tuple) -> tuple[tuple, Any]:
        return args, None

    def build(self, traced: Traced, sig: Signature) -> tuple[Graph, Any]:
        raise NotImplementedError

    def extra_inputs(self, sig: Signature, extra) -> list:
        return []

    def finish(self, compiled, sig: Signature, outs: list):
        raise NotImplementedError

    def entry_guards(self, guards: Guards, trees) -> Guards:
        """The guards of a cache entry: what the function read (``guards``), and what else
        its build read (subclasses: the sparse transforms add the constant arrays whose
        values their pattern was read from, :mod:`dualgpu.sparse_derivatives`)."""
        return guards

    # ------------------------------------------------------------------------ calling
    def __call__(self, *args, **kwargs):
        if self._by_arity is not None:
            return self._resolved(self.split(args)[0])(*args, **kwargs)
        qkey = None if kwargs else quick_key(args)
        if qkey is not None:
            hit = self._quick.get(qkey)
            if (hit is not None and hit[2] == generation[0] and hit[0].guards_hold()
                    and current_builder() is None):
                # plain arrays seen before: every argument passes straight to the program
                PROGRAMS.hits += 1  # a statistic: unlocked, one int increment
                if hit[3]:  # Python floats: 0-d inputs
                    args = scalars_as_arrays(args, hit[1].backend)
                return self.finish(hit[0], hit[1], hit[0].exe(*args))
        if dask.has_dask_array(args, kwargs):  # per-chunk programs over Dask arrays
            return dask.call(self, args, kwargs)
        fargs, extra = self.split(args)
        sig = self._signature(fargs, kwargs)
        extras = self.extra_inputs(sig, extra)
        if sig.traced or current_builder() is not None:
            # inside a trace: inline (the function may read values of the enclosing trace)
            return self._inline(sig, extras)
        compiled = self.compiled(sig)
        passed = list(sig.inputs) + list(extras)
        if (qkey is not None and len(passed) == len(args) and not sig.sparse
                and all(p is a or type(a) is float for p, a in zip(passed, args))):
            floats = any(type(a) is float for a in args)
            with self._lock:
                self._quick[qkey] = (compiled, sig.layout(), generation[0], floats)
                while len(self._quick) > self.FAST_SLOTS:
                    self._quick.pop(next(iter(self._quick)))
        return self.finish(compiled, sig, compiled.exe(*passed))

    def compiled(self, sig: Signature) -> Compiled:
        """The cached program for this signature (built on a miss or a failed guard)."""
        local_key = (generation[0], sig.key)
        hit = self._programs.get(local_key)
        if hit is not None and hit.guards_hold():
            PROGRAMS.hits += 1
            return hit
        key = (self.spec, self._fn_key, sig.key, registry_version(), config.build_key())
        stale = hit

        def build():
            count_build(self, sig, None if stale is None else stale.guards.changed())
            before = collect_guards(self.fn)
            graph, trees = self.build(Traced(self.fn, sig, None), sig)
            compiled = self.program_type(graph, trees, sig.backend,
                                         self.entry_guards(collect_guards(self.fn, before), trees))
            log.debug("compiled %s: %d equations on %s", self.__name__,
                      len(compiled.graph.eqns), sig.backend.name)
            evict_on_death(key, self._weak + sig.weak)
            return compiled

        entry = PROGRAMS.get_or_build(key, build)
        if not entry.guards_hold():
            stale = entry
            PROGRAMS.discard_later(key)
            entry = PROGRAMS.get_or_build(key, build)
        with self._lock:
            self._programs[local_key] = entry
            while len(self._programs) > self.FAST_SLOTS:
                self._programs.pop(next(iter(self._programs)))
        return entry

    def _inline(self, sig: Signature, extras: list):
        """Evaluate the program into the enclosing trace. Its graph is cached like a
        compiled program (an outer function traced again does not trace this one again),
        unless the function read values of the enclosing trace (they differ per trace)."""
        key = ("inline", self.spec, self._fn_key, sig.key, registry_version(),
               config.build_key())
        fresh: list = []

        def build():
            captured: list = []
            before = collect_guards(self.fn)
            graph, trees = self.build(Traced(self.fn, sig, captured), sig)
            fresh.append(captured)
            evict_on_death(key, self._weak + sig.weak)
            guards = self.entry_guards(collect_guards(self.fn, before), trees)
            return Inlined(graph, trees, guards, not captured)

        entry = PROGRAMS.get_or_build(key, build)
        if fresh:
            captured = fresh[0]
        elif entry.reusable and entry.guards_hold():
            captured = []
        else:
            PROGRAMS.discard_later(key)
            captured = []
            entry = Inlined(*self.build(Traced(self.fn, sig, captured), sig))
        outs = eval_graph(entry.graph, list(sig.inputs) + captured + list(extras))
        return self.finish(entry, sig, outs)

    def graph(self, *args, **kwargs) -> Graph:
        """The program this call runs (its graph), built afresh and not compiled."""
        if self._by_arity is not None:
            return self._resolved(self.split(args)[0]).graph(*args, **kwargs)
        fargs, extra = self.split(args)
        sig = self._signature(fargs, kwargs)
        self.extra_inputs(sig, extra)
        return self.build(Traced(self.fn, sig, None), sig)[0]

    def source(self, *args, **kwargs) -> str:
        if self._by_arity is not None:
            return self._resolved(self.split(args)[0]).source(*args, **kwargs)
        fargs, extra = self.split(args)
        sig = self._signature(fargs, kwargs)
        self.extra_inputs(sig, extra)
        return self.compiled(sig).exe.source

    # ------------------------------------------------------------------------ helpers
    def _base(self, traced: Traced, sig: Signature):
        """The function's graph split into main output and aux, batch-summed if asked."""
        main, aux, tree, aux_tree = traced.split_aux(self.has_aux, self.__name__)
        if self.batch_axes is not None:
            diff = sig.diff_inputs()
            check_separable(main, diff, self.batch_axes, what=self.kind)
            main = sum_output(main)
            tree = pytree.LEAF
        return main, aux, tree, aux_tree

    def _per_argnum(self, sig: Signature, values, repackage=True):
        """Per-leaf results of the differentiated leaves, regrouped per ``argnums``."""
        values = list(values)
        per = [sig.per_argument(values, a, repackage) for a in self.argnums]
        return tuple(per) if self.argnums_tuple else per[0]

    def _directions(self, sig: Signature, vs, what: str) -> list:
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


def scalars_as_arrays(args: tuple, backend) -> tuple:
    """``args`` with the Python floats as the 0-d arrays they are passed as."""
    def array(a):
        a = np.asarray(a)
        return backend.to_device(a) if backend.on_device else a

    return tuple(array(a) if type(a) is float else a for a in args)
