"""The program cache: one LRU cache of every program built from a trace, keyed by the
transform's :class:`~dualgpu.runtime.transformed.Spec`, the function's identity, the call's
signature, the op registry's version and the build switches; each entry carries the guards
of what its trace read outside its arguments (:mod:`dualgpu.runtime.guards`).

Example::

    >>> dg.clear_cache()
    >>> f = dg.grad(lambda x: np.sum(x ** 2))
    >>> _ = f(np.ones(3)); _ = f(np.ones(3))
    >>> dg.cache_info()["size"]
    1
"""
from __future__ import annotations

import functools
import logging
import sys
import types
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..backends import array_backend
from ..backends.base import Backend
from ..base.cache import PROGRAMS, WeakIdentityKey, identity_key, run_clear_hooks
from ..core.ir import Const, Graph
from ..errors import ArgumentTypeError, InvalidArgumentError
from ..frontend.numpy.random import Draw, draw_values, redraw_in_trace
from .decisions import Decisions
from .executor import Executable, config, generation
from .guards import Guards
from .signature import Signature
from .tracing import SelfTracing

PROGRAMS.maxsize = config["cache_size"]
config.watch("cache_size", lambda n: setattr(PROGRAMS, "maxsize", n))
log = logging.getLogger("dualgpu")
# builds per (transform, function): a function traced again and again because a static
# argument keeps changing gets one warning (bounded; reset by clear_cache)
_builds: dict[tuple, int] = {}
RETRACE_WARNING_AFTER = 8
MAX_VARIANTS = 8  # programs per signature that take different value decisions
# per (transform, function, signature with tentative scalars): the leaves a trace needed
# as Python numbers, static from then on (reset by clear_cache)
STATIC_SCALARS: dict[tuple, frozenset[int]] = {}
NO_GUARDS = Guards()


def cache_info() -> dict:
    """Sizes and hit counts of the program cache."""
    return PROGRAMS.info()


def set_cache_size(n: int) -> None:
    """Bound the number of cached programs (least recently used are dropped)."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise ArgumentTypeError(f"set_cache_size takes an int >= 0, got {n!r}")
    if n < 0:
        raise InvalidArgumentError(f"set_cache_size takes an int >= 0, got {n!r}")
    PROGRAMS.maxsize = int(n)
    config["cache_size"] = int(n)
    generation[0] += 1


def clear_cache() -> None:
    """Drop every cached program (the next call of each function traces again)."""
    PROGRAMS.clear()
    generation[0] += 1
    _builds.clear()
    STATIC_SCALARS.clear()
    run_clear_hooks()  # caches of the layers above (custom ops' derived rules)


class Compiled:
    """A transformed graph, compiled, with what is needed to shape its results, the
    places outside its arguments that its function read (:mod:`dualgpu.runtime.guards`)
    and the random draws it takes as inputs after the arguments' (``draws``: drawn again at
    every call, :mod:`dualgpu.frontend.numpy.random`), and the value decisions its trace took
    (:mod:`dualgpu.runtime.decisions`; None when it took none). A program with decisions
    heads the list of the variants of its signature (``variants``, itself first; the other
    branches' programs), most recently used first. ``captured``: the arrays its function
    closed over that a derivative made to run later takes as inputs (:func:`lift_captured`:
    :class:`VjpCompiled`, :class:`LinearizedCompiled`; none for the others)."""

    __slots__ = ("graph", "exe", "trees", "guards", "draws", "decisions", "variants",
                 "captured", "__weakref__")

    def __init__(self, graph: Graph, trees: Any, backend: Backend, guards: Guards = NO_GUARDS):
        self.graph = graph
        self.trees = trees
        self.exe = Executable(graph, backend)
        self.guards = guards
        self.decisions: Decisions | None = None
        self.variants: list[Compiled] | None = None
        self.draws: tuple[Draw, ...] = ()
        self.captured: list[Const] = []

    def drawn(self, sig: Signature) -> list:
        """The program's random inputs for the call ``sig``, drawn now (none when its
        function draws nothing)."""
        if not self.draws:
            return []
        backend = sig.backend
        return draw_values(self.draws, sig.leaves,
                           backend.to_device if backend.on_device else None)

    def guards_hold(self) -> bool:
        return self.guards.hold()

    def captured_now(self) -> list:
        """Copies of the closed-over arrays (``captured``): the last residuals of a
        derivative made to run later, which is the derivative where it was made."""
        return [c.value.copy() for c in self.captured]

    def pick(self, inputs: Sequence[Any]) -> Compiled | None:
        """The variant whose decisions ``inputs`` take (None: a new one is needed)."""
        variants = self.variants
        assert variants is not None  # only asked of a program with decisions
        for k, v in enumerate(variants):
            if (v.decisions is None or v.decisions.hold(inputs)) and (
                    v is self or v.guards_hold()):
                if k:
                    try:  # most recently used first (another thread may have moved it)
                        variants.remove(v)
                        variants.insert(0, v)
                    except ValueError:
                        pass
                return v
        return None

    def add_variant(self, variant: Compiled) -> None:
        """Another branch's program: first in the list, which keeps at most
        :data:`MAX_VARIANTS` (the least recently used is dropped; it is traced again when
        called again)."""
        assert self.variants is not None
        variant.variants = self.variants  # one list: any variant picks among them all
        self.variants.insert(0, variant)
        del self.variants[MAX_VARIANTS:]


class VjpCompiled(Compiled):
    """A vjp's two programs, compiled: ``exe`` the forward one, ``pullback`` the other.
    The arrays the function closed over are inputs of ``pullback`` (``captured``, after
    the residuals): a pullback is the derivative where ``vjp`` was called, so it is
    given their values of then, as JAX's does (a program reads them when it runs)."""

    __slots__ = ("pullback",)

    def __init__(self, graphs: tuple[Graph, Graph], trees: Any, backend: Backend,
                 guards: Guards = NO_GUARDS):
        forward, pullback = graphs
        super().__init__(forward, trees, backend, guards)
        pullback, self.captured = lift_captured(pullback, at=len(forward.inputs))
        self.pullback = Executable(pullback, backend)


class LinearizedCompiled(Compiled):
    """``linearize``'s ``f_jvp`` program: the tangents of the jvp of the function at a
    point, whose inputs are the point, its random draws, the arrays the function closed
    over (``captured``) and the tangents, in that order. ``f_jvp`` keeps the program it
    was made with and is given copies of the point and of the closed-over arrays of the
    ``linearize`` call, as JAX's is. ``trees[-1]``: the number of tangent inputs."""

    __slots__ = ()

    def __init__(self, graph: Graph, trees: Any, backend: Backend, guards: Guards = NO_GUARDS):
        graph, captured = lift_captured(graph, at=len(graph.inputs) - trees[-1])
        super().__init__(graph, trees, backend, guards)
        self.captured = captured


def lift_captured(graph: Graph, at: int) -> tuple[Graph, list[Const]]:
    """``graph`` with the arrays its function closed over read from inputs inserted before
    input ``at``, and those arrays' constants: a derivative made to run later (a pullback,
    an ``f_jvp``) is given copies of their values of when it was made
    (:meth:`Compiled.captured_now`)."""
    return graph.with_consts_as_inputs(is_dense_array, at=at)


def is_dense_array(value: Any) -> bool:
    """A NumPy or CuPy array (of any dtype: index arrays and masks too; subclasses such as
    ``np.memmap``), not a sparse matrix: what a program reads by reference and a user may
    change in place."""
    backend = array_backend(value)
    return backend is not None and not backend.is_sparse(value)


class Inlined:
    """What :meth:`Transformed.finish` reads of a program that was inlined, not compiled;
    ``reusable``: it reads no value of the trace it was built in (so it may be cached)."""

    def __init__(self, graph: Graph, trees: Any, guards: Guards = NO_GUARDS,
                 reusable: bool = False, draws: tuple[Draw, ...] = ()):
        self.graph = graph
        self.trees = trees
        self.guards = guards
        self.reusable = reusable
        self.draws = draws

    def drawn(self, sig: Signature) -> list:
        """The random inputs of the program, as draws of the enclosing trace."""
        return redraw_in_trace(self.draws, sig.leaves) if self.draws else []

    def guards_hold(self) -> bool:
        return self.guards.hold()


def function_key(fn: Any, weak: list) -> Any:
    """The identity of a function for the cache: weak where Python allows, structural for
    transformations, bound methods and partials (so rebuilding ``dg.grad(f)`` hits)."""
    if isinstance(fn, SelfTracing):
        return ("transform", type(fn), fn.spec, function_key(fn.fn, weak))
    if isinstance(fn, types.MethodType):
        return ("method", function_key(fn.__self__, weak), function_key(fn.__func__, weak))
    k = identity_key(fn)
    if isinstance(k, WeakIdentityKey):
        weak.append(k)
    return k


def count_build(t: Any, sig: Signature, changed: str | None = None,
                decision: str | None = None) -> None:
    """Log a cache miss; warn once when one function keeps being traced anew for the same
    shapes (a static argument, or a value the function reads from outside its arguments,
    keeps changing: ``changed`` names that place; or the arguments' values keep taking
    another branch: ``decision`` names it)."""
    backend, trees, kw_tree, leaf_keys, alias = sig.key
    key = (t.spec, t._fn_key, backend, trees, kw_tree,
           tuple(k for k in leaf_keys if k[0] != "v"), alias)
    n = _builds.get(key, 0) + 1
    _builds[key] = n
    while len(_builds) > 1024:
        _builds.pop(next(iter(_builds)))
    log.debug("cache miss: tracing %s (build %d of this function)%s", t.__name__, n,
              f": {changed} changed" if changed else "")
    if n == RETRACE_WARNING_AFTER and decision:
        warnings.warn(
            f"dualgpu: {t.__name__} has been traced {n} times for the same shapes; this time "
            f"because the arguments' values take another branch at {decision} (a program "
            f"holds the branch its trace took; at most {MAX_VARIANTS} are kept per "
            "signature, and another branch traces again). Write the branch with "
            "np.where(cond, a, b) to have one program for every value.", stacklevel=_user_level())
    elif n == RETRACE_WARNING_AFTER and changed:
        warnings.warn(
            f"dualgpu: {t.__name__} has been traced {n} times for the same shapes; this time "
            f"because {changed} changed since the last trace (a program bakes in what its "
            "function reads from outside its arguments). Pass a value that changes as an "
            "argument (an array, to make it an input of one program).", stacklevel=_user_level())
    elif n == RETRACE_WARNING_AFTER:
        needed = sig.options["static_leaves"]
        statics = [f"argument {sig.arg_of_leaf(j)} = {leaf!r:.40}"
                   + (" (a number the function needs as a Python value: a shape, a loop "
                      "count, an index)" if j in needed else "")
                   for j, leaf in enumerate(sig.leaves) if j not in set(sig.input_pos)]
        warnings.warn(
            f"dualgpu: {t.__name__} has been traced {n} times for the same shapes. Each new "
            "static (non-array) argument value traces and compiles again"
            + (f"; static values of this call: {', '.join(statics[:4])}" if statics else "")
            + ". Pass values that change as arrays (np.asarray(v)) so that they become "
            "inputs of one program.", stacklevel=_user_level())


class Restaticed(Exception):  # noqa: N818 - a signal between two functions, not an error
    """A trace made tentative scalars static: the program is cached under the static
    signature's key, and the caller asks for it there."""


def remember_static(key: tuple, leaves: frozenset[int]) -> None:
    """Remember that the signature ``key`` (spec, function, tentative signature key) needs
    the scalar ``leaves`` static."""
    STATIC_SCALARS[key] = leaves
    while len(STATIC_SCALARS) > 1024:
        STATIC_SCALARS.pop(next(iter(STATIC_SCALARS)))


def _user_level() -> int:
    """The ``stacklevel`` of the user's call that reached the warning's caller."""
    frame: types.FrameType | None = sys._getframe(2)
    level = 2
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "dualgpu":
        frame, level = frame.f_back, level + 1
    return level


def evict_on_death(key: Any, weak_parts: Iterable[WeakIdentityKey]) -> None:
    """Drop the entry ``key`` when an object it is keyed on (weakly) is freed."""
    for w in weak_parts:
        w.on_death(functools.partial(PROGRAMS.discard_later, key))
