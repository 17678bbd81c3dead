"""The public transformations: jvp, vjp, grad, value_and_grad, hvp, grad_and_hvp, hessian,
jit, trace and source.

Each transformation traces the function once per call signature (pytree structure, shapes,
dtypes, backend, exact static values, aliasing: :mod:`dualgpu.signature`), transforms the
graph, compiles it and caches the result. A transformation called on traced values (inside
another transformation) builds the same graph and inlines it into the enclosing trace, so
transformations compose to any depth: ``grad(grad(f))``, ``jit(hvp(f))``, a gradient
penalty that calls ``grad`` inside the loss.
"""
from __future__ import annotations

import copy
import functools
import inspect
import logging
import threading
import types
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import dask_arrays, lax
from . import tree as pytree
from .backends import array_backend
from .cache import LRUCache, WeakIdentityKey, identity_key, run_clear_hooks
from .core.dtypes import promote
from .core.flags import Flag
from .core.interpret import eval_graph, read
from .core.ir import Const, Graph, Literal
from .core.primitives import registry_version
from .core.trace import Tracer, current_builder, trace_to_graph
from .errors import (
    ArgumentTypeError,
    BackendMismatchError,
    DualgpuError,
    InvalidArgumentError,
    NonScalarOutputError,
    ShapeMismatchError,
    TracerControlFlowError,
)
from .executor import Executable, config, generation
from .frontend.scipy.sparse import SparseValue
from .guards import Guards, collect_guards
from .namespace import rebind_function
from .signature import FLOAT0, Signature, _class_call, check_plain_values, quick_key
from .transforms import grad_graph, hvp_graph, jvp_graph, simplify, vjp_graph
from .transforms.separability import check_separable, sum_output
from .transforms.vmap import batch_graph

_GLOBAL_CACHE = LRUCache(config["cache_size"])
config.watch("cache_size", lambda n: setattr(_GLOBAL_CACHE, "maxsize", n))
_generation = generation  # bumped by clear_cache and by changes of build switches
log = logging.getLogger("dualgpu")
# builds per (transform, function): a function traced again and again because a static
# argument keeps changing gets one warning (bounded; reset by clear_cache)
_builds: dict = {}
RETRACE_WARNING_AFTER = 8


def cache_info() -> dict:
    """Sizes and hit counts of the program cache."""
    return _GLOBAL_CACHE.info()


def set_cache_size(n: int) -> None:
    """Bound the number of cached programs (least recently used are dropped)."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise ArgumentTypeError(f"set_cache_size takes an int >= 0, got {n!r}")
    if n < 0:
        raise InvalidArgumentError(f"set_cache_size takes an int >= 0, got {n!r}")
    _GLOBAL_CACHE.maxsize = int(n)
    config["cache_size"] = int(n)
    _generation[0] += 1


def clear_cache() -> None:
    """Drop every cached program (the next call of each function traces again)."""
    _GLOBAL_CACHE.clear()
    _generation[0] += 1
    _builds.clear()
    run_clear_hooks()  # caches of the layers above (custom ops' derived rules)


# ------------------------------------------------------------------------------ tracing
class _FlatCall:
    """``fn`` as a function of its traced input leaves, returning its output leaves.

    A callable object (not a Python function), so that the tracer's rebinding leaves it
    alone and rebinds the user's function it holds.
    """

    def __init__(self, fn, sig: Signature):
        self.fn = _rebindable(fn)
        self.sig = sig
        self.out_tree = None
        self.__name__ = _name(fn)

    def __call__(self, *values):
        values = list(values)
        for k, p in self.sig.sparse.patterns.items():
            values[k] = SparseValue(values[k], p)
        args, kwargs = self.sig.rebuild(values)
        out = rebind_function(self.fn)(*args, **kwargs)
        leaves, self.out_tree = pytree.flatten(out)
        if any(isinstance(leaf, SparseValue) for leaf in leaves):
            raise ArgumentTypeError(
                f"{self.__name__} returns a sparse matrix from a traced function (dg.jit, "
                "dg.grad...), which returns arrays: return its values (H.data, in the order "
                "of its pattern), H.toarray() or a product (H @ v); for the CSR matrix of "
                "dg.sparse_hessian or dg.sparse_jacobian, call it outside dg.jit (it "
                "compiles and caches its own program)")
        return leaves


def _rebindable(fn):
    """``fn``, with a callable object's ``__call__`` bound as a method (so that the tracer
    rebinds the array modules it uses, as it does for functions)."""
    if isinstance(fn, (types.FunctionType, types.MethodType, functools.partial)):
        return fn
    if isinstance(fn, Transformed) or isinstance(fn, (types.BuiltinFunctionType, np.ufunc)):
        return fn
    call = _class_call(type(fn))
    if isinstance(call, types.FunctionType):
        return types.MethodType(call, fn)
    return fn


def _name(fn) -> str:
    name = getattr(fn, "__name__", None)
    if isinstance(name, str):
        return name
    if isinstance(fn, functools.partial):
        return _name(fn.func)
    return type(fn).__name__


def _check_call(fn, args: tuple, kwargs: dict) -> None:
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
            f"{_name(fn)}{params} cannot take these arguments ({len(args)} positional, "
            f"keywords {sorted(kwargs)}): {e}") from None


class Traced:
    """A traced function: its graph, output structure and enclosing-trace values read."""

    def __init__(self, fn, sig: Signature, captured: list | None):
        if not isinstance(fn, Transformed):
            _check_call(fn, sig.args, sig.kwargs)
        flat = _FlatCall(fn, sig)
        try:
            self.graph, _ = trace_to_graph(flat, sig.avals, sig.backend.xp, name=_name(fn),
                                           input_names=sig.input_names(fn), captured=captured)
        except (TypeError, ValueError) as e:
            if sig.number_sequence() is not None:
                raise _number_sequence_error(sig, e) from None
            if not isinstance(e, TracerControlFlowError) or not sig.scalar_inputs:
                raise
            raise TracerControlFlowError(f"{e}\n{_static_hint(fn, sig)}") from None
        if any(weakly for _, weakly in sig.scalar_inputs):
            self.graph = _strengthen_weak_inputs(self.graph)
        self.out_tree = flat.out_tree
        self.captured = captured or []

    def split_aux(self, has_aux: bool, what: str) -> tuple[Graph, Graph | None, Any, Any]:
        """``(main graph, aux graph or None, main tree, aux tree)`` for ``has_aux``."""
        g, tree = self.graph, self.out_tree
        if not has_aux:
            return g, None, tree, None
        if tree.kind != "tuple" or len(tree.children) != 2:
            raise ArgumentTypeError(f"{what} has has_aux=True, so the function must return a pair "
                                    f"(output, aux); it returns {tree}")
        n_main = tree.children[0].num_leaves
        main = Graph(g.inputs, g.outputs[:n_main], g.eqns, name=g.name,
                     input_names=g.input_names, xp=g.xp)
        aux = Graph(g.inputs, g.outputs[n_main:], g.eqns, name=g.name,
                    input_names=g.input_names, xp=g.xp)
        return simplify(main), simplify(aux), tree.children[0], tree.children[1]


def _number_sequence_error(sig: Signature, e: Exception) -> ArgumentTypeError:
    """The error of a function that failed on a list (or tuple) of numbers given as an
    argument: traced as a pytree of scalars, as JAX does, where it wanted an array."""
    name, seq = sig.number_sequence()
    first = str(e).splitlines()[0] if str(e) else ""
    return ArgumentTypeError(
        f"{sig.what}: {name} is a {type(seq).__name__} of {len(seq)} numbers, traced as a "
        f"pytree of {len(seq)} scalars (as JAX does), not as an array, and the function "
        f"failed on it ({type(e).__name__}: {first}); pass np.asarray(...) to give it an "
        "array")


def _static_hint(fn, sig: Signature) -> str:
    """What to do when the function needs the value of a scalar argument that was traced."""
    args = sorted({sig.arg_of_input[k] for k, _ in sig.scalar_inputs})
    nums = [a for a in args if a >= 0]
    where = ", ".join(f"argument {a}" for a in nums) or "a keyword argument"
    fix = (f"dg.jit({_name(fn)}, static_argnums={tuple(nums)!r})" if nums
           else f"dg.jit({_name(fn)}, static_argnames=(...))")
    return (f"Scalar arguments (here {where}) are traced as 0-d values, as in JAX, so that a "
            "new value reuses the program. If the function needs the number itself (a "
            f"branch, a shape, a loop count, math.*), mark it static: {fix} (each new value "
            "then traces again), or pass an int where a count is meant (ints are static).")


def _strengthen_weak_inputs(graph: Graph) -> Graph:
    """``graph`` with its weakly typed scalar inputs (Python floats) made ordinary 0-d
    inputs: wherever such a value meets a strongly typed operand, it is first cast to the
    dtype the equation promotes to, so that the program computes in the dtypes the weak
    typing gave (``x32 * dt`` stays float32) whatever array library runs it."""

    def run(*args):
        env = {v.id: a for v, a in zip(graph.inputs, args)}
        builder = current_builder()
        for eqn in graph.eqns:
            builder.rule_source = eqn.source  # the recorded equations keep the user's line
            ins = [read(env, a) for a in eqn.inputs]
            weak = [k for k, a in enumerate(eqn.inputs)
                    if not isinstance(a, (Literal, Const)) and a.aval.weak]
            if weak and any(not a.aval.weak for a in eqn.inputs):
                target = promote([a.aval for a in eqn.inputs])
                for k in weak:
                    if eqn.inputs[k].dtype != target:
                        ins[k] = lax.astype(ins[k], target)
            outs = eqn.prim.bind(*ins, **eqn.params)
            for v, o in zip(eqn.outs, outs if eqn.prim.multiple_results else [outs]):
                env[v.id] = o
        builder.rule_source = None
        return [read(env, a) for a in graph.outputs]

    avals = [v.aval._replace(weak=False) for v in graph.inputs]
    new, _ = trace_to_graph(run, avals, graph.xp, name=graph.name,
                            input_names=graph.input_names)
    return new


def _with_aux(program: Graph, aux: Graph | None) -> Graph:
    """``program``'s outputs followed by ``aux``'s (computed from its first inputs), in one
    graph: the shared forward computation is merged by CSE."""
    if aux is None or not aux.outputs:
        return program
    n = len(aux.inputs)

    def both(*args):
        return eval_graph(program, args) + eval_graph(aux, args[:n])

    g, _ = trace_to_graph(both, [v.aval for v in program.inputs], program.xp,
                          name=program.name, input_names=program.input_names)
    return simplify(g)


def _scalar_output(graph: Graph, tree, what: str, holomorphic: bool | None = None) -> None:
    """One scalar output, real -- or complex with ``holomorphic=True`` (``None``: the
    transform has no holomorphic mode)."""
    if tree is None or not tree.is_leaf:
        raise NonScalarOutputError(
            f"{what} returns {tree}; grad and hvp need one scalar output (use has_aux=True "
            "to return more, or dg.vjp / dg.jacobian-style transforms)")
    out = graph.outputs[0]
    if tuple(out.shape) != ():
        raise NonScalarOutputError(
            f"{what} returns an array of shape {tuple(out.shape)}; grad and hvp need one "
            "scalar output. Reduce it (e.g. np.sum), or use dg.vjp or hvp(batch_axes=...)")
    if holomorphic is None and out.dtype.kind != "f":
        kind = "complex" if out.dtype.kind == "c" else "non-floating"
        raise NonScalarOutputError(
            f"{what} returns a {kind} scalar ({out.dtype}); grad and hvp need a real "
            "floating-point output (take np.real or np.abs of a complex value first)")
    if holomorphic is not None:
        _check_complex_outputs(graph, what, holomorphic, "rev", NonScalarOutputError)


def _check_holomorphic(value, what: str) -> bool:
    """``holomorphic`` is a bool (it selects the program: part of the cache key)."""
    return _check_bool(value, "holomorphic", what)


def _check_bool(value, name: str, what: str) -> bool:
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{what}: {name} must be True or False, got {value!r}")
    return value


def _check_complex_outputs(graph: Graph, what: str, holomorphic: bool, mode: str,
                           error: type[DualgpuError] = ArgumentTypeError) -> None:
    """JAX's rules for the outputs: with ``holomorphic=True`` every output is complex;
    without, reverse mode (``mode == "rev"``) refuses complex outputs, whose imaginary
    part a real cotangent would drop."""
    outs = graph.outputs
    for j, o in enumerate(outs):
        name = "the output" if len(outs) == 1 else f"output {j}"
        kind = o.dtype.kind
        if kind not in "fc" and mode == "rev":
            raise error(f"{what}: {name} has dtype {o.dtype} and cannot be differentiated "
                        "(only floating-point and complex outputs)")
        if holomorphic and kind != "c":
            raise error(
                f"{what} has holomorphic=True, but {name} is real ({o.dtype}): holomorphic "
                "differentiation is of complex functions of complex inputs; drop "
                "holomorphic=True for a real output")
        if not holomorphic and kind == "c" and mode == "rev":
            value = "a complex scalar" if tuple(o.shape) == () else "a complex array"
            label = f"{what} returns {value}" if len(outs) == 1 else f"{what}: {name} is complex"
            raise error(
                f"{label} ({o.dtype}); reverse mode differentiates real outputs, or "
                "complex ones with holomorphic=True (JAX's rule). Pass holomorphic=True "
                "(with complex inputs) for the complex derivative f'(z) of a holomorphic "
                "function; for a real loss of complex values take np.real or np.abs first; "
                "for the pullback of a complex output use dg.vjp (or dg.jacfwd for its "
                "Jacobian in a real input)")


def _check_complex_inputs(graph: Graph, sig: Signature, what: str, holomorphic: bool,
                         mode: str) -> None:
    """JAX's rules for the differentiated inputs: complex with ``holomorphic=True``; real
    for forward mode (``mode == "fwd"``) without it."""
    names = graph.input_names or []
    for k, (v, d) in enumerate(zip(graph.inputs, sig.diff)):
        if not d:
            continue
        arg = sig.arg_of_input[k]
        name = f"argument {arg}" + (f" ({names[k]})" if k < len(names) and names[k] else "")
        if holomorphic and v.dtype.kind != "c":
            raise ArgumentTypeError(
                f"{what} has holomorphic=True, but {name} is real ({v.dtype}): the complex "
                "derivative needs complex inputs. Pass it as a complex array "
                "(x.astype(np.complex128)), or drop holomorphic=True")
        if not holomorphic and v.dtype.kind == "c" and mode == "fwd":
            raise ArgumentTypeError(
                f"{what}: {name} is complex ({v.dtype}); forward-mode Jacobians take real "
                "inputs, or complex ones with holomorphic=True (JAX's rule). Pass "
                "holomorphic=True for the complex derivative of a holomorphic function, or "
                "differentiate in the real and imaginary parts as two real arguments")


def _check_complex(graph: Graph, sig: Signature, what: str, holomorphic: bool,
                  mode: str) -> None:
    """JAX's dtype rules of ``holomorphic`` for the Jacobians (``mode`` "rev" or "fwd")."""
    _check_complex_outputs(graph, what, holomorphic, mode)
    _check_complex_inputs(graph, sig, what, holomorphic, mode)


# ------------------------------------------------------------------------------ programs
_NO_GUARDS = Guards()


class Compiled:
    """A transformed graph, compiled, with what is needed to shape its results, and the
    places outside its arguments that its function read (:mod:`dualgpu.guards`)."""

    __slots__ = ("graph", "exe", "trees", "guards", "__weakref__")

    def __init__(self, graph: Graph, trees, backend, guards: Guards = _NO_GUARDS):
        self.graph = graph
        self.trees = trees
        self.exe = Executable(graph, backend)
        self.guards = guards

    def guards_hold(self) -> bool:
        return self.guards.hold()


class _VjpCompiled(Compiled):
    """A vjp's two programs, compiled: ``exe`` the forward one, ``pullback`` the other."""

    __slots__ = ("pullback",)

    def __init__(self, graphs: tuple[Graph, Graph], trees, backend,
                 guards: Guards = _NO_GUARDS):
        forward, pullback = graphs
        super().__init__(forward, trees, backend, guards)
        self.pullback = Executable(pullback, backend)


def function_key(fn, weak: list):
    """The identity of a function for the cache: weak where Python allows, structural for
    transformations, bound methods and partials (so rebuilding ``dg.grad(f)`` hits)."""
    if isinstance(fn, Transformed):
        return ("transform", type(fn), fn.spec, function_key(fn.fn, weak))
    if isinstance(fn, types.MethodType):
        return ("method", function_key(fn.__self__, weak), function_key(fn.__func__, weak))
    k = identity_key(fn)
    if isinstance(k, WeakIdentityKey):
        weak.append(k)
    return k


# ------------------------------------------------------------------------------ transforms
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


class Transformed:
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
                f"{what}: {_name(fn)} is a generator function (it yields): a traced function "
                "returns its arrays. Return them (a list or tuple of arrays is a pytree), or "
                "transform the function that computes each item")
        self.fn = fn
        self.argnums, self.argnums_tuple = _normalize_argnums(argnums)
        if not isinstance(has_aux, bool):
            raise ArgumentTypeError(f"has_aux must be True or False, got {has_aux!r}")
        self.has_aux = has_aux
        self.batch_axes = _normalize_batch_axes(batch_axes)
        self.__name__ = f"{self.kind}_{_name(fn)}"
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
        return f"<dualgpu.{self.kind} of {_name(self.fn)}>"

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
            if (hit is not None and hit[2] == _generation[0] and hit[0].guards_hold()
                    and current_builder() is None):
                # plain arrays seen before: every argument passes straight to the program
                _GLOBAL_CACHE.hits += 1  # a statistic: unlocked, one int increment
                if hit[3]:  # Python floats: 0-d inputs
                    args = _scalars_as_arrays(args, hit[1].backend)
                return self.finish(hit[0], hit[1], hit[0].exe(*args))
        if dask_arrays.has_dask_array(args, kwargs):  # per-chunk programs over Dask arrays
            return dask_arrays.call(self, args, kwargs)
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
                self._quick[qkey] = (compiled, sig.layout(), _generation[0], floats)
                while len(self._quick) > self.FAST_SLOTS:
                    self._quick.pop(next(iter(self._quick)))
        return self.finish(compiled, sig, compiled.exe(*passed))

    def compiled(self, sig: Signature) -> Compiled:
        """The cached program for this signature (built on a miss or a failed guard)."""
        local_key = (_generation[0], sig.key)
        hit = self._programs.get(local_key)
        if hit is not None and hit.guards_hold():
            _GLOBAL_CACHE.hits += 1
            return hit
        key = (self.spec, self._fn_key, sig.key, registry_version(), config.build_key())
        stale = hit

        def build():
            _count_build(self, sig, None if stale is None else stale.guards.changed())
            before = collect_guards(self.fn)
            graph, trees = self.build(Traced(self.fn, sig, None), sig)
            compiled = self.program_type(graph, trees, sig.backend,
                                         self.entry_guards(collect_guards(self.fn, before), trees))
            log.debug("compiled %s: %d equations on %s", self.__name__,
                      len(compiled.graph.eqns), sig.backend.name)
            _evict_on_death(key, self._weak + sig.weak)
            return compiled

        entry = _GLOBAL_CACHE.get_or_build(key, build)
        if not entry.guards_hold():
            stale = entry
            _GLOBAL_CACHE.discard_later(key)
            entry = _GLOBAL_CACHE.get_or_build(key, build)
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
            _evict_on_death(key, self._weak + sig.weak)
            guards = self.entry_guards(collect_guards(self.fn, before), trees)
            return _Inlined(graph, trees, guards, not captured)

        entry = _GLOBAL_CACHE.get_or_build(key, build)
        if fresh:
            captured = fresh[0]
        elif entry.reusable and entry.guards_hold():
            captured = []
        else:
            _GLOBAL_CACHE.discard_later(key)
            captured = []
            entry = _Inlined(*self.build(Traced(self.fn, sig, captured), sig))
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
                    _check_float0_direction(sig, k, v, a, what)
                else:
                    out.append(_check_direction(sig, k, v, a, what))
        return out


def _scalars_as_arrays(args: tuple, backend) -> tuple:
    """``args`` with the Python floats as the 0-d arrays they are passed as."""
    def array(a):
        a = np.asarray(a)
        return backend.to_device(a) if backend.on_device else a

    return tuple(array(a) if type(a) is float else a for a in args)


def _count_build(t: Transformed, sig: Signature, changed: str | None = None) -> None:
    """Log a cache miss; warn once when one function keeps being traced anew for the same
    shapes (a static argument, or a value the function reads from outside its arguments,
    keeps changing: ``changed`` names that place)."""
    backend, trees, kw_tree, leaf_keys, alias = sig.key
    key = (t.spec, t._fn_key, backend, trees, kw_tree,
           tuple(k for k in leaf_keys if k[0] != "v"), alias)
    n = _builds.get(key, 0) + 1
    _builds[key] = n
    while len(_builds) > 1024:
        _builds.pop(next(iter(_builds)))
    log.debug("cache miss: tracing %s (build %d of this function)%s", t.__name__, n,
              f": {changed} changed" if changed else "")
    if n == RETRACE_WARNING_AFTER and changed:
        warnings.warn(
            f"dualgpu: {t.__name__} has been traced {n} times for the same shapes; this time "
            f"because {changed} changed since the last trace (a program bakes in what its "
            "function reads from outside its arguments). Pass a value that changes as an "
            "argument (an array, to make it an input of one program).", stacklevel=6)
    elif n == RETRACE_WARNING_AFTER:
        statics = [f"argument {sig.arg_of_leaf(j)} = {leaf!r:.40}"
                   for j, leaf in enumerate(sig.leaves) if j not in set(sig.input_pos)]
        warnings.warn(
            f"dualgpu: {t.__name__} has been traced {n} times for the same shapes. Each new "
            "static (non-array) argument value traces and compiles again"
            + (f"; static values of this call: {', '.join(statics[:4])}" if statics else "")
            + ". Pass values that change as arrays (np.asarray(v)) so that they become "
            "inputs of one program.", stacklevel=6)


def _evict_on_death(key, weak_parts) -> None:
    """Drop the entry ``key`` when an object it is keyed on (weakly) is freed."""
    for w in weak_parts:
        w.on_death(functools.partial(_GLOBAL_CACHE.discard_later, key))


class _Inlined:
    """What :meth:`Transformed.finish` reads of a program that was inlined, not compiled;
    ``reusable``: it reads no value of the trace it was built in (so it may be cached)."""

    def __init__(self, graph, trees, guards: Guards = _NO_GUARDS, reusable: bool = False):
        self.graph = graph
        self.trees = trees
        self.guards = guards
        self.reusable = reusable

    def guards_hold(self) -> bool:
        return self.guards.hold()


def _check_direction(sig: Signature, k: int, v, arg: int, what: str):
    x = sig.inputs[k]
    v = sig.sparse.direction(k, v)
    if (isinstance(v, (int, float, complex, np.number)) and not isinstance(v, bool)
            and x.ndim == 0):  # a scalar tangent of a scalar primal, real or complex
        v = sig.backend.xp.asarray(v)
    if isinstance(v, Tracer):
        b = None
    else:
        check_plain_values(v, f"{what} for argument {arg}")
        b = array_backend(v)
        if b is None:
            raise ShapeMismatchError(f"the {what} for argument {arg} must be an array, got "
                                     f"{type(v).__name__}")
        if b is not sig.backend:
            raise BackendMismatchError(
                f"the {what} for argument {arg} is a {b.name} array but the arguments are "
                f"{sig.backend.name} arrays")
    if tuple(v.shape) != tuple(x.shape):
        raise ShapeMismatchError(
            f"the {what} for argument {arg} has shape {tuple(v.shape)}, but the argument has "
            f"shape {tuple(x.shape)}")
    if np.dtype(v.dtype).kind == "c" and np.dtype(x.dtype).kind != "c":
        raise ShapeMismatchError(f"the {what} for argument {arg} is complex ({v.dtype}), but "
                                 f"the argument is real ({x.dtype})")
    if v.dtype != x.dtype:
        v = v.astype(x.dtype)
    return v


def _check_float0_direction(sig: Signature, k: int, v, arg: int, what: str) -> None:
    """JAX's rule for an integer (or bool) input: its tangent is a ``float0`` array of its
    shape (an integer has no perturbation to carry)."""
    x = sig.inputs[k]
    dtype = getattr(v, "dtype", None)
    shape = tuple(getattr(v, "shape", np.shape(v)))
    if dtype is None or np.dtype(dtype) != FLOAT0 or shape != tuple(x.shape):
        got = (f"{type(v).__name__}" if dtype is None
               else f"{np.dtype(dtype) if np.dtype(dtype) != FLOAT0 else 'float0'}{list(shape)}")
        raise ArgumentTypeError(
            f"the {what} for argument {arg} goes with an integer primal ({x.dtype}"
            f"{list(x.shape)}), so it must be a float0 array of the primal's shape, as in JAX; "
            f"got {got}. Pass np.zeros({tuple(x.shape)}, dtype=dg.float0) (or make the "
            "primal floating point to perturb it)")


def _normalize_argnums(argnums) -> tuple[tuple[int, ...], bool]:
    """``(argnums as a tuple, whether it was one)``; negative entries count from the end
    of the positional arguments (resolved per call: :meth:`Transformed._resolved`)."""
    single = isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool)
    nums = (argnums,) if single else argnums
    if not isinstance(nums, (tuple, list)) or not all(
            isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in nums):
        raise ArgumentTypeError(f"argnums must be an int or a tuple of ints, got {argnums!r}")
    return tuple(int(i) for i in nums), not single


def _normalize_batch_axes(batch_axes):
    if batch_axes is None:
        return None
    axes = (batch_axes,) if isinstance(batch_axes, (int, np.integer)) else batch_axes
    if not isinstance(axes, (tuple, list)) or not all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in axes):
        raise ArgumentTypeError(f"batch_axes must be an int or a tuple of ints, got "
                                f"{batch_axes!r}")
    return tuple(int(a) for a in axes)


class _Grad(Transformed):
    kind = "grad"
    returns_value = False

    def __init__(self, fn, argnums=0, *, has_aux: bool = False, holomorphic: bool = False,
                 allow_int: bool = False):
        super().__init__(fn, argnums, has_aux=has_aux)
        self.holomorphic = _check_holomorphic(holomorphic, f"dg.{self.kind}")
        self.allow_int = _check_bool(allow_int, "allow_int", f"dg.{self.kind}")

    def options(self) -> dict:
        return {"holomorphic": self.holomorphic, "allow_int": self.allow_int}

    def build(self, traced, sig):
        main, aux, tree, aux_tree = self._base(traced, sig)
        _scalar_output(main, tree, self.__name__, self.holomorphic)
        _check_complex_inputs(main, sig, self.__name__, self.holomorphic, "rev")
        program = grad_graph(main, sig.diff_inputs(),
                             stack=config.stack_gemms_for(sig.backend))
        return _with_aux(program, aux), aux_tree

    def finish(self, compiled, sig, outs):
        n = sum(sig.diff)
        value, grads, aux = outs[0], outs[1:1 + n], outs[1 + n:]
        g = self._per_argnum(sig, grads)
        if self.has_aux:
            aux = pytree.unflatten(compiled.trees, aux)
            return ((value, aux), g) if self.returns_value else (g, aux)
        return (value, g) if self.returns_value else g


class _ValueAndGrad(_Grad):
    kind = "value_and_grad"
    returns_value = True


class _Hvp(Transformed):
    """``H·v``: the program computes only what the call returns (:meth:`outputs`), and
    :meth:`pick` shapes it."""

    kind = "hvp"

    def __init__(self, fn, argnums=0, batch_axes=None, has_aux=False):
        super().__init__(fn, argnums, has_aux=has_aux, batch_axes=batch_axes)
        if len(set(self.argnums)) != len(self.argnums):
            raise InvalidArgumentError(f"hvp: argnums {self.argnums} names an argument twice; "
                                       "give each argument once (its direction goes with it)")

    def split(self, args):
        if len(args) < 1:
            raise ArgumentTypeError(f"{self.__name__} needs the arguments followed by the "
                                    "direction v")
        return args[:-1], args[-1]

    def extra_inputs(self, sig, v):
        try:
            return self._directions(sig, v, "direction")
        except ShapeMismatchError as e:  # often scipy's hessp(x, p, *args) order
            raise ShapeMismatchError(
                f"{e} (hvp(f) takes f's arguments, then v last: hvp(f)(*args, v); for "
                "scipy.optimize.minimize's hessp=, called as hessp(x, p, *args), use "
                "dg.hessp(f))") from None

    def outputs(self) -> tuple[bool, bool]:
        """Whether the program computes ``(the value, the gradients)`` besides ``H·v``:
        what the call does not return is pruned from the program."""
        return False, False

    def build(self, traced, sig):
        main, aux, tree, aux_tree = self._base(traced, sig)
        _scalar_output(main, tree, self.__name__)
        value, grads = self.outputs()
        program = hvp_graph(main, sig.diff_inputs(), value=value, grads=grads,
                            stack=config.stack_gemms_for(sig.backend))
        return _with_aux(program, aux), aux_tree

    def pick(self, sig, value, grads, hvps) -> tuple:
        """The results of a call, from the program's value, gradients and products (None
        where :meth:`outputs` left them out)."""
        return (self._per_argnum(sig, hvps),)

    def finish(self, compiled, sig, outs):
        n = sum(sig.diff)
        has_value, has_grads = self.outputs()
        value = outs[0] if has_value else None
        outs = outs[1:] if has_value else outs
        grads = outs[:n] if has_grads else None
        outs = outs[n:] if has_grads else outs
        hvps, aux = outs[:n], outs[n:]
        result = self.pick(sig, value, grads, hvps)
        if self.has_aux:
            result = result + (pytree.unflatten(compiled.trees, aux),)
        return result[0] if len(result) == 1 else result


class _GradAndHvp(_Hvp):
    """``(grad, H·v)``, or ``(value, grad, H·v)`` with ``return_value``."""

    kind = "grad_and_hvp"

    def __init__(self, fn, argnums=0, batch_axes=None, has_aux=False, return_value=False):
        if not isinstance(return_value, bool):
            raise ArgumentTypeError(f"grad_and_hvp: return_value must be True or False, got "
                                    f"{return_value!r}")
        self.return_value = return_value
        super().__init__(fn, argnums, batch_axes, has_aux)

    def options(self) -> dict:
        return {**super().options(), "return_value": self.return_value}

    def outputs(self) -> tuple[bool, bool]:
        return self.return_value, True

    def pick(self, sig, value, grads, hvps) -> tuple:
        g_hv = (self._per_argnum(sig, grads), self._per_argnum(sig, hvps))
        return (value,) + g_hv if self.return_value else g_hv


class _Jit(Transformed):
    kind = "jit"
    trace_scalars = True

    def __init__(self, fn, argnums=(), *, static_argnums=(), static_argnames=()):
        super().__init__(fn, argnums)
        self.static = _static_arguments(fn, static_argnums, static_argnames)
        self._static_refusal = _unknown_static(fn, static_argnums, static_argnames)

    def options(self) -> dict:
        return {"static": self.static} if self.static != ((), ()) else {}

    def _signature(self, fargs, kwargs):
        if self._static_refusal is not None:  # when called, as JAX
            raise InvalidArgumentError(self._static_refusal)
        return super()._signature(fargs, kwargs)

    def build(self, traced, sig):
        return simplify(traced.graph), traced.out_tree

    def finish(self, compiled, sig, outs):
        return pytree.unflatten(compiled.trees, outs)


def _is_integer_like(x) -> bool:
    dtype = getattr(x, "dtype", None)
    return dtype is not None and np.dtype(dtype).kind in "iub"


class _Jvp(Transformed):
    """``(f(*primals), J·tangents)``: every leaf of every primal is differentiated."""

    kind = "jvp"
    allow_int = True  # an integer primal takes a float0 tangent (JAX's rule)

    def split(self, args):
        return args[0], args[1]

    def extra_inputs(self, sig, tangents):
        return self._directions(sig, tuple(tangents), "tangent")

    def build(self, traced, sig):
        main, aux, tree, aux_tree = traced.split_aux(self.has_aux, self.__name__)
        return _with_aux(jvp_graph(main, _flags(sig, main)), aux), (tree, aux_tree)

    def finish(self, compiled, sig, outs):
        tree, aux_tree = compiled.trees
        n = tree.num_leaves
        out = pytree.unflatten(tree, outs[:n])
        # an integer or bool output has a float0 tangent, as in JAX
        tangents = [np.zeros(np.shape(t), dtype=FLOAT0) if _is_integer_like(o) else t
                    for o, t in zip(outs[:n], outs[n:2 * n])]
        tangent = pytree.unflatten(tree, tangents)
        if self.has_aux:
            return out, tangent, pytree.unflatten(aux_tree, outs[2 * n:])
        return out, tangent


class _Vjp(Transformed):
    """The forward program and the pullback program ``(primals, output cotangents) -> input
    cotangents``; :meth:`pair` runs the forward one and returns a pullback."""

    kind = "vjp"
    program_type = _VjpCompiled
    allow_int = True  # an integer primal gets a float0 cotangent (JAX's rule)

    def build(self, traced, sig):
        main, aux, tree, aux_tree = traced.split_aux(self.has_aux, self.__name__)
        for o in main.outputs:
            if o.dtype.kind not in "fc":
                raise ArgumentTypeError(f"{self.__name__}: an output of dtype {o.dtype} cannot be "
                                        "differentiated by vjp (only floating-point outputs)")
        pullback = vjp_graph(main, _flags(sig, main))
        k = len(main.outputs)
        pullback.outputs = pullback.outputs[k:]  # the pullback returns the cotangents only
        forward = _with_aux(main, aux)
        return (forward, simplify(pullback)), (tree, aux_tree)

    def pair(self, sig: Signature) -> tuple:
        """``(out, pullback)`` (``(out, pullback, aux)`` with ``has_aux``) for the primals of
        ``sig``: compiled and cached, or inlined into the enclosing trace."""
        if sig.traced or current_builder() is not None:
            captured: list = []
            graphs, trees = self.build(Traced(self.fn, sig, captured), sig)
            inputs = list(sig.inputs) + captured
            fwd, pullback_graph, pullback_exe = eval_graph(graphs[0], inputs), graphs[1], None
        else:
            program = self.compiled(sig)
            trees, inputs = program.trees, list(sig.inputs)
            fwd, pullback_graph, pullback_exe = (program.exe(*inputs), program.pullback.graph,
                                                 program.pullback)
        tree, aux_tree = trees
        outs = fwd[:tree.num_leaves]
        pullback = _pullback(sig, tree, outs, inputs, pullback_graph, pullback_exe)
        out = pytree.unflatten(tree, outs)
        if self.has_aux:
            return out, pullback, pytree.unflatten(aux_tree, fwd[tree.num_leaves:])
        return out, pullback


def _pullback(sig: Signature, tree, outs: list, inputs: list, graph: Graph, exe):
    """``pullback(cotangent)``: the pullback program on ``inputs`` and the cotangent leaves,
    run by ``exe``, or evaluated (into the enclosing trace) when there is no ``exe`` or a
    cotangent is traced."""

    def pullback(cotangent):
        cts = _cotangents(cotangent, tree, outs, sig)
        if exe is None or any(isinstance(c, Tracer) for c in cts):
            res, repackage = eval_graph(graph, inputs + cts), False
        else:
            res, repackage = exe(*inputs, *cts), True
        return tuple(sig.per_argument(res, a, repackage) for a in range(len(sig.arg_trees)))

    return pullback


def _flags(sig: Signature, graph: Graph) -> list[bool]:
    """The differentiated-input flags of ``graph`` (inputs captured from an enclosing
    trace come last and are not differentiated)."""
    return list(sig.diff) + [False] * (len(graph.inputs) - len(sig.diff))


# ------------------------------------------------------------------------------ public API
def grad(fn: Callable | None = None, argnums=0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False):
    """Gradient of a scalar function: ``grad(f)(*args)``; a tuple when ``argnums`` is.

    Arguments may be pytrees (nested tuples, lists and dicts of arrays): the gradient has the
    argument's structure. With ``has_aux=True``, ``f`` returns ``(value, aux)`` and the
    result is ``(grad, aux)``. Keyword arguments are passed through, not differentiated.

    The output must be real, as in JAX; a real output of complex inputs gets JAX's
    convention (``grad(lambda z: abs(z) ** 2)(z) == 2 * conj(z)``). With
    ``holomorphic=True`` the output and the differentiated inputs must be complex and the
    result is the complex derivative ``f'(z)`` (of a holomorphic ``f``: dualgpu does not
    check that it is).

    As in JAX, ``argnums`` may count from the end (``-1`` is the last positional argument),
    and an integer argument (a Python ``int`` too) is refused unless ``allow_int=True``,
    which gives it a zero gradient of dtype ``float0`` (``dg.float0``, JAX's).

    Example::

        >>> import numpy as np, dualgpu as dg
        >>> dg.grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
        array([2., 4.])
        >>> dg.grad(lambda p: np.sum(p["w"] * p["b"]))({"w": np.ones(2), "b": np.arange(2.)})
        {'b': array([1., 1.]), 'w': array([0., 1.])}
        >>> dg.grad(lambda z: z ** 2, holomorphic=True)(np.array(1 + 2j))
        array(2.+4.j)
        >>> dg.grad(lambda x, n: np.sum(x ** 2) * n, argnums=-2)(np.ones(2), 3)
        array([6., 6.])
        >>> g, g_n = dg.grad(lambda x, n: np.sum(x) * n, (0, 1), allow_int=True)(np.ones(2), 3)
        >>> g, g_n.dtype == dg.float0
        (array([3., 3.]), True)
    """
    if fn is None:
        return lambda f: grad(f, argnums, has_aux, holomorphic, allow_int)
    return _Grad(fn, argnums, has_aux=has_aux, holomorphic=holomorphic, allow_int=allow_int)


def value_and_grad(fn: Callable | None = None, argnums=0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False):
    """``value_and_grad(f)(*args) -> (f(*args), grad)``; with ``has_aux=True``,
    ``((value, aux), grad)``. ``holomorphic`` and ``allow_int`` as in :func:`grad`.

    Example::

        >>> v, g = dg.value_and_grad(lambda x: np.sum(x ** 2))(np.array([3.0]))
        >>> float(v), g
        (9.0, array([6.]))
        >>> dg.value_and_grad(lambda z: z * z, holomorphic=True)(np.array(1 + 1j))
        (array(0.+2.j), array(2.+2.j))
    """
    if fn is None:
        return lambda f: value_and_grad(f, argnums, has_aux, holomorphic, allow_int)
    return _ValueAndGrad(fn, argnums, has_aux=has_aux, holomorphic=holomorphic,
                         allow_int=allow_int)


def hvp(fn: Callable | None = None, argnums=0, batch_axes=None, has_aux: bool = False):
    """Hessian-vector product by forward-over-reverse: ``hvp(f)(*args, v) -> H·v``.

    ``v`` has the structure of the differentiated argument (a tuple of them when
    ``argnums`` is a tuple). With ``batch_axes`` (the instance axes of the differentiated
    argument), ``f`` returns one value per instance and the result is the per-instance
    product (the block-diagonal Hessian applied to ``v``); dualgpu first checks on the graph
    that ``f`` does not couple instances. With ``has_aux=True``: ``(H·v, aux)``. Usable as a
    decorator, ``@dg.hvp`` or ``@dg.hvp(argnums=1)``.

    Example::

        >>> f = lambda x: np.sum(x ** 3)
        >>> dg.hvp(f)(np.array([1.0, 2.0]), np.array([1.0, 0.0]))
        array([6., 0.])
    """
    if fn is None:
        return lambda f: hvp(f, argnums, batch_axes, has_aux)
    return _Hvp(fn, argnums, batch_axes, has_aux=has_aux)


def grad_and_hvp(fn: Callable | None = None, argnums=0, batch_axes=None,
                 return_value: bool = False, has_aux: bool = False):
    """``grad_and_hvp(f)(*args, v) -> (grad, H·v)`` from one program (one pass on the GPU).

    ``return_value=True`` gives ``(value, grad, H·v)``; with ``batch_axes`` the value is
    the sum over instances; ``has_aux=True`` appends ``aux``.

    Example::

        >>> g, hv = dg.grad_and_hvp(lambda x: np.sum(np.sin(x)))(np.zeros(2), np.ones(2))
        >>> g, hv
        (array([1., 1.]), array([-0., -0.]))
    """
    if fn is None:
        return lambda f: grad_and_hvp(f, argnums, batch_axes, return_value, has_aux)
    return _GradAndHvp(fn, argnums, batch_axes, has_aux, return_value)


def jvp(fn: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False):
    """Forward mode: ``(f(*primals), J·tangents)``; each tangent has its primal's structure.
    With ``has_aux=True``, ``f`` returns ``(out, aux)`` and the result is
    ``(out, out_tangent, aux)``.

    Example::

        >>> dg.jvp(np.sin, (np.zeros(2),), (np.ones(2),))
        (array([0., 0.]), array([1., 1.]))
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise ShapeMismatchError(
            "jvp takes the primals and the tangents as tuples: jvp(f, (x,), (t,)), got "
            f"{type(primals).__name__} and {type(tangents).__name__}")
    if len(primals) != len(tangents):
        raise ShapeMismatchError(f"jvp got {len(primals)} primals but {len(tangents)} "
                                 "tangents")
    t = _Jvp(fn, argnums=tuple(range(len(primals))), has_aux=has_aux)
    return t(tuple(primals), tuple(tangents))


def linearize(fn: Callable, *primals):
    """JAX's ``linearize``: ``(f(*primals), f_jvp)``, where ``f_jvp(*tangents)`` is the
    Jacobian of ``f`` at ``primals`` applied to ``tangents`` (one per primal, each with its
    primal's structure): the ``jvp`` of ``f`` with the point fixed. ``f_jvp`` runs one
    cached jvp program per call (its forward part included), so it is cheap to call again.

    Example::

        >>> y, f_jvp = dg.linearize(np.sin, np.zeros(2))
        >>> y, f_jvp(np.array([1.0, 2.0]))
        (array([0., 0.]), array([1., 2.]))
    """
    t = _Jvp(fn, argnums=tuple(range(len(primals))))
    out = _Jit(fn)(*primals)

    def f_jvp(*tangents):
        if len(tangents) != len(primals):
            raise ShapeMismatchError(f"the linearization of {_name(fn)} takes one tangent per "
                                     f"primal: {len(primals)}, got {len(tangents)}")
        return t(tuple(primals), tuple(tangents))[1]

    return out, f_jvp


def vjp(fn: Callable, *primals, has_aux: bool = False):
    """Reverse mode: ``(f(*primals), pullback)``; ``pullback(cotangent)`` returns a tuple of
    cotangents, one per primal, each with its primal's structure. With ``has_aux=True``:
    ``(out, pullback, aux)``.

    As in JAX (and with no ``holomorphic`` switch), a complex output takes a complex
    cotangent ``ȳ``, and the pullback is the transpose, unconjugated: ``ȳ · f'(z)`` for a
    complex input, its real part ``Re(ȳ · f'(x))`` for a real one.

    Example::

        >>> out, pullback = dg.vjp(np.sin, np.zeros(2))
        >>> pullback(np.ones(2))
        (array([1., 1.]),)
        >>> dg.vjp(lambda x: x * (1 + 2j), np.ones(2))[1](np.array([1.0, 1j]))
        (array([ 1., -2.]),)
    """
    t = _Vjp(fn, argnums=tuple(range(len(primals))), has_aux=has_aux)
    return t.pair(t._signature(primals, {}))


def linear_transpose(fn: Callable, *primals):
    """JAX's ``linear_transpose``: the transpose of a linear function. ``primals`` give only
    the shapes and dtypes of ``fn``'s arguments (arrays, pytrees of them, or any objects with
    ``shape`` and ``dtype`` such as ``jax.ShapeDtypeStruct``); ``f_t(cotangent)``, with a
    cotangent shaped like ``fn``'s output, returns a tuple with one cotangent per argument,
    each with its primal's structure and dtype (the real part for a real primal).

    ``fn`` is checked to be linear: its pullback must not read the point and ``fn(0)`` must be
    ``0``; anything else (``x * x``, ``np.sin(x)``, ``x + 1``) is an
    :class:`InvalidArgumentError` naming the argument. Integer primals are refused. The
    transpose is one cached program (the pullback at zero), cheap to call again.

    Example::

        >>> f_t = dg.linear_transpose(lambda x, y: 0.5 * x - 0.5 * y, 1.0, 1.0)
        >>> f_t(1.0)
        (array(0.5), array(-0.5))
        >>> A = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        >>> dg.linear_transpose(lambda v: A @ v, np.zeros(2))(np.ones(3))
        (array([ 9., 12.]),)
    """
    if not callable(fn):
        raise ArgumentTypeError(f"linear_transpose expects a function, got "
                                f"{type(fn).__name__}")
    zeros = tuple(pytree.tree_map(_zeros_like_spec, p) for p in primals)
    for i, p in enumerate(zeros):
        for leaf in pytree.leaves(p):
            if np.dtype(leaf.dtype).kind not in "fc":
                raise ArgumentTypeError(
                    f"linear_transpose of {_name(fn)}: argument {i} has dtype {leaf.dtype}; "
                    "a linear map transposes between floating-point or complex values "
                    "(integer dtypes are not supported, as in JAX); give its primal a "
                    "floating dtype")
    t = _Vjp(fn, argnums=tuple(range(len(zeros))))
    sig = t._signature(zeros, {})
    if sig.traced or current_builder() is not None:
        captured: list = []
        (forward, pullback_graph), trees = t.build(Traced(fn, sig, captured), sig)
        inputs = list(sig.inputs) + captured
        outs = eval_graph(forward, inputs)
        exe = None
    else:
        program = t.compiled(sig)
        trees, inputs = program.trees, list(sig.inputs)
        outs, pullback_graph, exe = program.exe(*inputs), program.pullback.graph, program.pullback
    _check_linear(fn, sig, pullback_graph, outs)
    tree = trees[0]
    pullback = _pullback(sig, tree, outs[:tree.num_leaves], inputs, pullback_graph, exe)

    def transpose(cotangent):
        return pullback(cotangent)

    transpose.__name__ = f"linear_transpose_{_name(fn)}"
    return transpose


def _zeros_like_spec(leaf):
    """Zeros with a primal's shape and dtype (an array, a number, or any object with
    ``shape`` and ``dtype``), on the primal's backend."""
    if isinstance(leaf, Tracer):
        return np.zeros(tuple(leaf.shape), dtype=leaf.dtype)
    b = array_backend(leaf)
    if b is not None:
        return b.xp.zeros(tuple(leaf.shape), dtype=leaf.dtype)
    if isinstance(leaf, (bool, int, float, complex, np.generic)):
        return np.zeros((), dtype=np.result_type(leaf))
    shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
    if shape is None or dtype is None:
        raise ArgumentTypeError(f"linear_transpose: a primal is a {type(leaf).__name__}; pass "
                                "arrays, numbers or objects with shape and dtype (their values "
                                "are not read)")
    return np.zeros(tuple(shape), dtype=np.dtype(dtype))


def _check_linear(fn, sig: Signature, pullback: Graph, outs: list) -> None:
    """Refuse a function that is not linear: its pullback reads the point (``x * x``,
    ``np.sin(x)``), or it is not zero at zero (``x + 1``)."""
    n = len(sig.inputs)
    reads = {v.id: {k} for k, v in enumerate(pullback.inputs[:n])}
    for eqn in pullback.eqns:
        if eqn.prim.has(Flag.IGNORES_VALUES):  # zeros shaped like an argument
            continue
        found = set().union(*(reads.get(getattr(a, "id", None), set()) for a in eqn.inputs))
        if found:
            for v in eqn.outs:
                reads[v.id] = found
    on_point = sorted(set().union(*(reads.get(getattr(o, "id", None), set())
                                    for o in pullback.outputs)))
    if on_point:
        arg = sig.arg_of_input[on_point[0]]
        raise InvalidArgumentError(
            f"linear_transpose: {_name(fn)} is not linear in argument {arg}: its derivative "
            "depends on the point (a product of two arguments, a nonlinear function such as "
            "np.sin, or a branch on the values), so it has no transpose. Transpose its "
            "linearization instead: dg.vjp(f, x)[1] is the transpose of the Jacobian at x")
    for j, o in enumerate(outs):
        if not isinstance(o, Tracer) and bool(np.any(o != 0)):
            raise InvalidArgumentError(
                f"linear_transpose: {_name(fn)} is affine, not linear: output {j} is not 0 "
                "at 0 (a constant is added). Transpose the linear part, lambda *a: f(*a) - "
                "f(*zeros), or use dg.vjp(f, x)[1]")


def _cotangents(cotangent, tree, outs, sig: Signature) -> list:
    leaves, ct_tree = pytree.flatten(cotangent)
    if ct_tree != tree:
        raise ShapeMismatchError(f"the cotangent has structure {ct_tree}, but the output has "
                                 f"{tree}")
    cts = []
    for i, (c, o) in enumerate(zip(leaves, outs)):
        if not isinstance(c, Tracer):
            check_plain_values(c, "cotangent" if len(outs) == 1 else f"cotangent leaf {i}")
            c = sig.backend.xp.asarray(c)
        if tuple(c.shape) != tuple(o.shape):
            raise ShapeMismatchError(
                f"the cotangent has shape {tuple(c.shape)}, but the output has "
                f"{tuple(o.shape)}")
        if np.dtype(c.dtype).kind == "c" and np.dtype(o.dtype).kind != "c":
            raise ShapeMismatchError(f"the cotangent is complex ({c.dtype}), but the output is "
                                     f"real ({o.dtype})")
        if (np.dtype(c.dtype).kind in "fc" and np.dtype(o.dtype).kind in "fc"
                and not np.can_cast(o.dtype, c.dtype)):  # JAX: the output's type, no less
            leaf = "the cotangent" if len(outs) == 1 else f"cotangent leaf {i}"
            raise ArgumentTypeError(
                f"{leaf} has dtype {c.dtype}, less precise than the output's {o.dtype}: its "
                f"values would already be rounded. Pass it as {o.dtype} "
                f"(ct.astype(np.{o.dtype}))")
        cts.append(c.astype(o.dtype) if c.dtype != o.dtype else c)
    return cts


class _Hessian(Transformed):
    """The dense Hessian of a scalar function, JAX's ``jacfwd(jacrev(f, argnums),
    argnums)``: for one array argument of shape ``S``, an array ``S + S``; for pytrees and
    tuple ``argnums``, JAX's nesting (block ``[a][b]`` of shape ``a.shape + b.shape``). The
    forward-over-reverse product with every basis vector, batched into one program. A
    transform like the others: cached, inlined when called on traced values, exported."""

    kind = "hessian"

    def build(self, traced, sig):
        main, aux, tree, aux_tree = traced.split_aux(self.has_aux, self.__name__)
        _scalar_output(main, tree, self.__name__)
        if sig.sparse:
            raise ArgumentTypeError(f"{self.__name__}: a sparse matrix argument has no dense "
                                    "Hessian; pass its dense form (x.toarray())")
        return _with_aux(hessian_graph(main, sig.diff_inputs()), aux), aux_tree

    def finish(self, compiled, sig, outs):
        k = sum(sig.diff)
        rows = [self._per_argnum(sig, outs[i * k:(i + 1) * k], repackage=False)
                for i in range(k)]  # rows[i]: the blocks of leaf i against every leaf
        hess = self._per_argnum(sig, rows, repackage=False)
        if self.has_aux:
            return hess, pytree.unflatten(compiled.trees, outs[k * k:])
        return hess


def hessian_graph(graph: Graph, ks) -> Graph:
    """``(*inputs) -> H``: the blocks ``H[i][j]`` of the Hessian of ``graph``'s scalar
    output with respect to inputs ``ks`` (an int: one input), in that order, each of shape
    ``x_i.shape + x_j.shape``: ``H[i][j][a, b] = (H e_b)_i[a]``, the HVP graph batched over
    the basis vectors ``e_b`` of every input at once."""
    ks = [ks] if isinstance(ks, (int, np.integer)) else list(ks)
    xs = [graph.inputs[k] for k in ks]
    shapes = [tuple(x.shape) for x in xs]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    n = sum(sizes)
    hv = hvp_graph(graph, ks, value=False, grads=False)
    batched = None
    if n:
        batched, _ = batch_graph(hv, [None] * len(graph.inputs) + [0] * len(ks), n,
                                 [0] * len(ks))

    def run(*inputs):
        xp = graph.xp or np
        if batched is None:  # no variables: the Hessian is empty
            return [xp.zeros(si + sj, dtype=np.result_type(xi.dtype, xj.dtype))
                    for xi, si in zip(xs, shapes) for xj, sj in zip(xs, shapes)]
        basis, start = [], 0  # basis[j]: (n, *x_j.shape), rows start..start+size_j = I
        for x, shape, size in zip(xs, shapes, sizes):
            block = xp.zeros((n, size), dtype=x.dtype)
            block[start:start + size] = xp.eye(size, dtype=x.dtype)
            basis.append(block.reshape((n,) + shape))
            start += size
        columns = eval_graph(batched, list(inputs) + basis)  # columns[i][b] = (H e_b)_i
        blocks = []
        for col, si in zip(columns, shapes):
            start = 0
            for sj, size in zip(shapes, sizes):
                part = lax.getitem(col, (slice(start, start + size),)) if len(ks) > 1 else col
                block = lax.reshape(part, sj + si)
                blocks.append(lax.transpose(block, list(range(len(sj), len(sj) + len(si)))
                                            + list(range(len(sj)))))
                start += size
        return blocks

    new, _ = trace_to_graph(run, [v.aval for v in graph.inputs], graph.xp,
                            name=f"hessian_{graph.name}", input_names=graph.input_names)
    return simplify(new)


def hessian(fn: Callable | None = None, argnums=0, has_aux: bool = False):
    """Dense Hessian (for small problems), JAX's ``jacfwd(jacrev(f, argnums), argnums)``:
    ``hessian(f)(*args, **kwargs)`` has shape ``x.shape + x.shape`` for the array
    ``x = args[argnums]``. For a pytree argument or a tuple ``argnums``, JAX's nesting:
    the argument's structure, each leaf ``a`` replaced by the structure again, holding the
    blocks ``a.shape + b.shape``. Keyword arguments are passed through to ``f``, not
    differentiated; with ``has_aux=True``, ``f`` returns ``(value, aux)`` and the result is
    ``(hessian, aux)``. One program (the Hessian-vector product batched over the basis
    vectors), cached like the other transforms, and composable with them: ``jit``,
    ``vmap``, ``grad`` (third derivatives), ``jvp``, ``hessian`` and ``dg.export`` of it.
    Usable as a decorator.

    Example::

        >>> dg.hessian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
        array([[ 6.,  0.],
               [ 0., 12.]])
        >>> dg.hessian(lambda x, c: c * np.sum(x ** 3))(np.array([1.0, 2.0]), c=0.5)
        array([[3., 0.],
               [0., 6.]])
        >>> dg.vmap(dg.hessian(lambda x: np.sum(x ** 3)))(np.array([[1.0], [2.0]]))
        array([[[ 6.]],
        <BLANKLINE>
               [[12.]]])
        >>> H = dg.hessian(lambda x, y: x * y ** 2, argnums=(0, 1))(1.0, 3.0)
        >>> [[float(h) for h in row] for row in H]
        [[0.0, 6.0], [6.0, 2.0]]
        >>> dg.hessian(lambda p: p["a"] * p["b"])({"a": 2.0, "b": 5.0})["a"]["b"]
        array(1.)
    """
    if fn is None:
        return lambda f: hessian(f, argnums, has_aux)
    return _Hessian(fn, argnums, has_aux=has_aux)


# ------------------------------------------------------------------------------ inspection
def trace(fn: Callable, *example_args, **example_kwargs) -> Graph:
    """The traced graph of ``fn`` on arguments like ``example_args``.

    Works on transformed functions too: ``dg.trace(dg.hvp(f), x, v)`` is the HVP program.

    Example::

        >>> print(dg.trace(lambda x: np.sum(np.sin(x)), np.ones(3)))
        { lambda x:float64[3] .
          t0:float64[3] = sin x
          t1:float64[] = reduce_sum t0 axes=(0,)
          in ( t1 ) }
    """
    if isinstance(fn, Transformed):
        return fn.graph(*example_args, **example_kwargs)
    return _Jit(fn, argnums=()).graph(*example_args, **example_kwargs)


def source(fn: Callable, *example_args, **example_kwargs) -> str:
    """Generated source of ``fn`` (a plain or transformed function): Python for NumPy
    arguments; the fusion plan and CUDA kernels for CuPy arguments.

    Example::

        >>> print(dg.source(dg.grad(lambda x: np.sum(np.sin(x))), np.ones(3)))
        def vjp__lambda(x):
            t0 = xp.sin(x)
            t1 = xp.sum(t0, axis=(0,))
            t2 = xp.cos(x)
            return (t1, t2)
        <BLANKLINE>
    """
    if not isinstance(fn, Transformed):
        fn = _Jit(fn, argnums=())
    return fn.source(*example_args, **example_kwargs)


def jit(fn: Callable | None = None, *, static_argnums=(), static_argnames=()):
    """Trace, cache and compile ``fn`` itself (no derivative): NumPy runs generated
    Python, CuPy runs fused kernels. Arguments and results may be pytrees.

    As in JAX, floating and complex scalars are traced: a Python ``float`` is a weakly typed
    0-d input (``x32 * dt`` stays float32), so a new value (the time step of an ODE loop)
    reuses the program. Python ints, bools and strings are static (a new value traces
    again: they may be shapes, indices or loop counts). ``static_argnums`` /
    ``static_argnames`` make other arguments static, keyed by their value: for a function
    that branches on a number, or passes it to ``math``. Usable as a decorator, also with
    options: ``@dg.jit(static_argnums=1)``.

    Example::

        >>> fast = dg.jit(lambda x: np.exp(-x ** 2).sum())
        >>> fast(np.zeros(3))
        array(3.)
        >>> step = dg.jit(lambda x, dt: x + dt * np.sin(x))
        >>> step(np.zeros(2, np.float32), 0.1).dtype  # dt is traced, weakly typed
        dtype('float32')
        >>> def power(x, p):
        ...     return x ** 2 if p > 1.5 else x
        >>> dg.jit(power, static_argnums=1)(np.array([3.0]), 2.0)
        array([9.])
    """
    if fn is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames)
    return _Jit(fn, argnums=(), static_argnums=static_argnums,
                static_argnames=static_argnames)


def _unknown_static(fn, static_argnums, static_argnames) -> str | None:
    """What is wrong with static positions or names that ``fn`` has no parameter for
    (JAX's ``ValueError``), or None; a function taking ``*args``/``**kwargs`` takes any."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    kinds = {p.kind for p in params}
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    nums, _ = _normalize_argnums(static_argnums)
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    n = len(positional)
    bad = [i for i in nums if not -n <= i < n]
    if bad and inspect.Parameter.VAR_POSITIONAL not in kinds:
        return (f"jit of {_name(fn)}: static_argnums={tuple(nums)!r} names position(s) "
                f"{tuple(bad)!r}, but the function takes {n} positional argument(s)")
    known = {p.name for p in params if p.kind != p.POSITIONAL_ONLY}
    unknown = [a for a in names if a not in known]
    if unknown and inspect.Parameter.VAR_KEYWORD not in kinds:
        return (f"jit of {_name(fn)}: static_argnames={names!r} names {tuple(unknown)!r}, "
                f"which the function has no parameter for (its parameters: "
                f"{', '.join(p.name for p in params) or 'none'})")
    return None


def _static_arguments(fn, static_argnums, static_argnames) -> tuple:
    """``(positions, names)`` of ``fn``'s static arguments: each given position with its
    parameter's name and each given name with its position, as JAX pairs them."""
    nums, _ = _normalize_argnums(static_argnums)
    names = (static_argnames,) if isinstance(static_argnames, str) else static_argnames
    if not isinstance(names, (tuple, list)) or not all(isinstance(n, str) for n in names):
        raise ArgumentTypeError(f"jit: static_argnames must be a str or a tuple of str, got "
                                f"{static_argnames!r}")
    names = tuple(names)
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p.name for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if positional:  # negative positions count from the end of the parameters, as JAX
        nums = tuple(i % len(positional) if -len(positional) <= i < 0 else i for i in nums)
    names += tuple(positional[i] for i in nums
                   if -len(positional) <= i < len(positional) and positional[i] not in names)
    nums += tuple(positional.index(n) for n in names
                  if n in positional and positional.index(n) not in nums)
    return tuple(sorted(set(nums))), tuple(sorted(set(names)))
