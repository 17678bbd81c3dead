"""Random draws inside a traced function, drawn again at every call.

In eager NumPy each call of ``f`` draws new numbers. A traced program does the same: each
draw the trace meets (``np.random.normal(size=3)``, ``rng.standard_normal(n)`` of a
``Generator`` or ``RandomState`` the function reaches or is passed, ``random.random()``,
``cupy.random.*``) becomes an input of the program, and every call draws it again from the
same source, with the same parameters, in the order the trace met them, before the program
runs. A cached call thus returns exactly what the eager function returns under the same
seed, and leaves the source in the state the eager call would.

The trace itself draws from a copy of the source (for the shape and dtype of the numbers),
never from the source. A parameter of ``normal``, ``uniform`` or ``exponential`` may be
traced: the draw is the standard one (``standard_normal``, ``random``,
``standard_exponential``) and the parameters apply to it, ``loc + scale * z``, which is
NumPy's own stream (so it is differentiable in them: the reparameterisation of VAEs).

    >>> rng = np.random.default_rng(0)
    >>> def loss(mu):                     # a one-sample ELBO-style estimate
    ...     z = rng.normal(mu, 0.5)       # traced mean: mu + 0.5 * standard_normal()
    ...     return np.sum(z ** 2)
    >>> g = dg.grad(loss)
    >>> mu = np.array([1.0, -1.0])
    >>> first = g(mu); second = g(mu)     # new numbers at every call, as eager NumPy
    >>> bool(np.all(first != second))
    True
    >>> twin = np.random.default_rng(0)   # the same stream, drawn by hand
    >>> z = twin.normal(mu, 0.5); z2 = twin.normal(mu, 0.5)
    >>> np.allclose(first, 2 * z), np.allclose(second, 2 * z2)
    (True, True)
"""
from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import pickle
import random as _py_random
import sys
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ...core.ir import Aval
from ...core.trace import Tracer, current_builder
from ...errors import RandomInTraceError, user_location

_RANDOM_MODULES = ("numpy.random", "cupy.random")


# ------------------------------------------------------------------- what draws
def is_random_module(mod: Any) -> bool:
    """``numpy.random``, ``cupy.random`` (or a submodule) or Python's ``random``."""
    name = getattr(mod, "__name__", "") or ""
    return isinstance(mod, types.ModuleType) and (name == "random" or any(
        name == m or name.startswith(m + ".") for m in _RANDOM_MODULES))


def is_source(obj: Any) -> bool:
    """A random Generator, RandomState or BitGenerator of NumPy or CuPy, or a Python
    ``random.Random`` (an object draws come from), or a stand-in for one."""
    if isinstance(obj, type):
        return False
    if isinstance(obj, RandomStandIn):
        return True
    if isinstance(obj, (np.random.Generator, np.random.RandomState, np.random.BitGenerator,
                        _py_random.Random)):
        return True
    module = type(obj).__module__ or ""
    return module.startswith("cupy.random") and not callable(obj)


def source_type(obj: Any) -> type:
    """The type of a source (of the real object, for a stand-in): part of a cache key."""
    return type(obj._real) if isinstance(obj, RandomStandIn) else type(obj)


def label_of(obj: Any) -> str:
    """``numpy.random.Generator``, ``random.Random``: how messages name a source."""
    mod = (type(obj).__module__ or "").split(".")[0]
    return (f"random.{type(obj).__name__}" if mod == "random"
            else f"{mod}.random.{type(obj).__name__}")


# ------------------------------------------------------------------- where draws come from
class ModuleSource:
    """The global state of ``numpy.random``, ``cupy.random`` or ``random``: the module's
    function of the draw's name, looked up at every call."""

    def __init__(self, module: types.ModuleType):
        self.module = module

    def resolve(self, leaves: list | None) -> Any:
        return self.module


class ObjectSource:
    """A generator the function reaches (a global, a closure variable, a default): the
    program's guards rebuild it when the place holds another one."""

    def __init__(self, obj: Any):
        self.obj = obj

    def resolve(self, leaves: list | None) -> Any:
        return self.obj


class ArgumentSource:
    """A generator passed as an argument (leaf ``j`` of the call): each call draws from the
    one it is given."""

    def __init__(self, j: int):
        self.j = j

    def resolve(self, leaves: list | None) -> Any:
        if leaves is None:
            raise RandomInTraceError("a program that draws from a generator argument needs "
                                     "the call's arguments")
        return leaves[self.j]


Source = ModuleSource | ObjectSource | ArgumentSource


class Draw:
    """One call on a source that the trace met: ``method(*args, **kwargs)`` of the object
    ``source`` gives at call time, whose result (of ``aval``) is an input of the program;
    ``aval`` None: a call for its effect on the source only (``np.random.seed(0)``)."""

    __slots__ = ("source", "method", "args", "kwargs", "aval", "label")

    def __init__(self, source: Source, method: str, args: tuple, kwargs: dict,
                 aval: Aval | None, label: str):
        self.source = source
        self.method = method
        self.args = args
        self.kwargs = kwargs
        self.aval = aval
        self.label = label

    def run(self, leaves: list | None) -> Any:
        """Call it now on its source (the call's argument ``leaves`` name argument
        sources)."""
        obj = self.source.resolve(leaves)
        if isinstance(obj, RandomStandIn):
            raise RandomInTraceError(f"{self.label}: a generator of a finished trace")
        return getattr(obj, self.method)(*self.args, **self.kwargs)

    def __repr__(self) -> str:
        return f"<draw {self.label}{'' if self.aval is None else ' ' + self.aval.str_short()}>"


def draw_values(draws: tuple[Draw, ...], leaves: list | None, to_device: Any = None) -> list:
    """The draws of a call, in order (the effects among them made): the program's inputs
    that follow the function's own. ``to_device`` moves host arrays to the call's device.
    Inside :func:`same_draws`, the draws of its first call instead."""
    replay = getattr(_state, "replay", None)
    if replay is not None:
        return _replayed(replay, draws, lambda: draw_values(draws, leaves, to_device))
    values = []
    for d in draws:
        out = d.run(leaves)
        if d.aval is None:
            continue
        if not hasattr(out, "shape") or isinstance(out, np.generic):
            out = np.asarray(out, dtype=d.aval.dtype)
        if to_device is not None and isinstance(out, np.ndarray):
            out = to_device(out)
        if tuple(out.shape) != d.aval.shape or np.dtype(out.dtype) != d.aval.dtype:
            raise RandomInTraceError(
                f"{d.label} drew {out.dtype}{list(out.shape)} where the trace drew "
                f"{d.aval.dtype}{list(d.aval.shape)}")
        values.append(out)
    return values


def redraw_in_trace(draws: tuple[Draw, ...], leaves: list | None) -> list:
    """The draws of a program inlined into an enclosing trace: draws of that trace (so that
    its calls draw them), in order."""
    replay = getattr(_state, "replay", None)
    if replay is not None:
        return _replayed(replay, draws, lambda: redraw_in_trace(draws, leaves))
    values = []
    for d in draws:
        obj = d.source.resolve(leaves)
        source: Source | None = obj._source if isinstance(obj, RandomStandIn) else (
            d.source if isinstance(d.source, ModuleSource) else ObjectSource(obj))
        if source is None:  # made in the enclosing trace: its draws are made there, at once
            raise RandomInTraceError(f"{d.label}: a generator made inside a traced function "
                                     "drew inside a transform's program")
        ans = _record(Draw(source, d.method, d.args, d.kwargs, d.aval, d.label))
        if d.aval is not None:
            values.append(ans)
    return values


class SameDraws:
    """A context (entered as often as wished) in which the programs called take the draws
    of the first one that drew in it (``dg.linearize``: its linear map is the derivative
    at the draws of its value)."""

    def __init__(self) -> None:
        self.values: list = []
        self.saved: list = []

    def __enter__(self) -> SameDraws:
        self.saved.append(getattr(_state, "replay", None))
        _state.replay = self.values
        return self

    def __exit__(self, *exc: Any) -> None:
        _state.replay = self.saved.pop()


def _replayed(replay: list, draws: tuple[Draw, ...], fresh: Any) -> list:
    if not draws:
        return []
    if not replay:
        _state.replay = None
        try:
            replay.append(fresh())
        finally:
            _state.replay = replay
    return list(replay[0])


# ------------------------------------------------------------------- the recording
class DrawRecorder:
    """The draws of one trace (:class:`~dualgpu.runtime.tracing.Traced`): their recipes
    and the graph inputs that stand for them, in order. ``builder``: the trace's own
    (draws of another trace inside it are refused)."""

    def __init__(self) -> None:
        self.draws: list[Draw] = []
        self.tracers: list[Tracer] = []
        self.builder: Any = None


_state = threading.local()


@contextlib.contextmanager
def recording(recorder: DrawRecorder) -> Iterator[DrawRecorder]:
    """Draws made while this runs are recorded by ``recorder``."""
    stack = _state.__dict__.setdefault("stack", [])
    stack.append(recorder)
    try:
        yield recorder
    finally:
        stack.pop()


def _random_error(what: str, why: str = "") -> RandomInTraceError:
    return RandomInTraceError(
        f"{what} was called inside a traced function (at {user_location()}){why}. Draw the "
        "random numbers outside the traced function and pass them in as arguments.")


def _record(draw: Draw) -> Any:
    """Record ``draw`` in the current trace: an input of its graph (None for an effect)."""
    stack = getattr(_state, "stack", None)
    recorder = stack[-1] if stack else None
    if recorder is None or recorder.builder is None:
        raise _random_error(draw.label, ", where its draws would be frozen into the compiled "
                            "program as constants (this trace cannot draw them again per call)")
    if current_builder() is not recorder.builder:
        raise _random_error(draw.label, ", inside a nested trace (dg.vmap, a custom rule, a "
                            "traced loop body) whose program runs its body more than once or "
                            "elsewhere: its draws cannot be made once per call")
    recorder.draws.append(draw)
    if draw.aval is None:
        return None
    builder: Any = recorder.builder  # checked above: this trace's
    tracer: Tracer = builder.new_input(draw.aval)
    recorder.tracers.append(tracer)
    return tracer


def recorded_draws() -> list[Draw]:
    """The draws the current trace has recorded so far, in order (the recorder's own list:
    later draws are appended to it); empty outside a recording."""
    stack = getattr(_state, "stack", None)
    return stack[-1].draws if stack else []


def _contains_tracer(x: Any) -> bool:
    if isinstance(x, Tracer):
        return True
    if isinstance(x, (list, tuple)):
        return any(_contains_tracer(v) for v in x)
    if isinstance(x, dict):
        return any(_contains_tracer(v) for v in x.values())
    return False


def _probe(obj: Any) -> Any:
    """A copy of the source ``obj`` to draw the trace's numbers from (the source itself is
    left as it is)."""
    try:
        return copy.deepcopy(obj)
    except Exception:  # noqa: BLE001 - CuPy's generators: a fresh one of the kind
        cupy_random = sys.modules["cupy.random"]
        return (cupy_random.default_rng(0) if hasattr(obj, "bit_generator")
                else cupy_random.RandomState(0))


def _concrete_draw(stand_in: RandomStandIn, method: str, args: tuple, kwargs: dict) -> Any:
    """Record a draw with concrete parameters; its aval from a draw on a copy. A generator
    made inside the function with a seed draws now: the same numbers at every call."""
    if stand_in._source is None:
        return getattr(stand_in._real, method)(*args, **kwargs)
    real = stand_in._real
    label = f"{stand_in._label}.{method}"
    source = real
    if isinstance(real, types.ModuleType):  # a module's function: its generator's method
        source = getattr(getattr(real, method), "__self__", None)
        if not is_source(source) and real.__name__.startswith("cupy"):
            source = sys.modules["cupy.random"].get_random_state()  # CuPy's functions
        elif not is_source(source):
            raise _random_error(label, ", which is no draw of a generator that a program "
                                "could make again at every call")
    sample = getattr(_probe(source), method)(*args, **kwargs)
    if isinstance(sample, (float, int, complex)) and not isinstance(sample, bool):
        aval = Aval((), np.result_type(sample), weak=True)  # a Python number: weakly typed
    else:
        arr = np.asarray(sample) if not hasattr(sample, "shape") else sample
        aval = Aval(tuple(arr.shape), np.dtype(arr.dtype))
    if aval.dtype.kind not in "biufc":
        raise _random_error(label, f", drawing {aval.dtype} values, which a program cannot "
                            "take")
    return _record(Draw(stand_in._source, method, args, kwargs, aval, label))


# ------------------------------------------------------------------- traced parameters
def _normal(loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> tuple:
    return (loc, scale), size


def _uniform(low: Any = 0.0, high: Any = 1.0, size: Any = None) -> tuple:
    return (low, high), size


def _exponential(scale: Any = 1.0, size: Any = None) -> tuple:
    return (scale,), size


# method -> (its parameters, the standard draw, the draw from parameters and the standard
# one): NumPy's own streams (Generator and RandomState: loc + scale * standard_normal, ...)
_REPARAMETERISED: dict[str, tuple[Callable[..., tuple], str, Callable[[list, Any], Any]]] = {
    "normal": (_normal, "standard_normal", lambda p, z: p[0] + p[1] * z),
    "uniform": (_uniform, "random", lambda p, u: p[0] + (p[1] - p[0]) * u),
    "exponential": (_exponential, "standard_exponential", lambda p, e: p[0] * e),
}


def _as_float64(p: Any) -> Any:
    """A parameter as NumPy's draws read it (in double precision)."""
    if isinstance(p, Tracer):
        return p if p.dtype == np.float64 else p.astype(np.float64)
    return p if isinstance(p, float) else np.asarray(p, dtype=np.float64)


def _traced_draw(stand_in: RandomStandIn, method: str, args: tuple, kwargs: dict) -> Any:
    """A draw with traced parameters: the standard draw, then the parameters applied."""
    what = f"{stand_in._label}.{method}"
    numpy_source = not (getattr(stand_in._real, "__name__", None) or
                        type(stand_in._real).__module__ or "").startswith(("cupy", "random"))
    rule = _REPARAMETERISED.get(method)
    if rule is None or not numpy_source:
        raise _random_error(what, ", with a traced parameter: only NumPy's normal, uniform "
                            "and exponential take traced parameters (as loc + scale * a "
                            "standard draw); draw the standard numbers and apply the "
                            "parameters yourself")
    bind, standard, combine = rule
    try:
        params, size = bind(*args, **kwargs)
    except TypeError as e:
        raise _random_error(what, f", with arguments it does not take ({e})") from None
    if _contains_tracer(size):
        raise _random_error(what, ", with a traced size (a shape is static)")
    shape = np.broadcast_shapes(*[tuple(np.shape(p)) if not isinstance(p, Tracer)
                                  else tuple(p.shape) for p in params])
    if size is not None:
        shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    z = _concrete_draw(stand_in, standard, (), {} if (size is None and shape == ()) else
                       {"size": shape})
    return combine([_as_float64(p) for p in params], z)


# ------------------------------------------------------------------- the stand-in
# calls on a source that are no draws: made again at every call, for their effect
_EFFECTS = frozenset({"seed", "set_state", "setstate"})
# calls that read or write a source's state in ways a program cannot replay
_REFUSED = frozenset({"get_state", "getstate", "shuffle", "jumped", "spawn", "advance",
                      "random_raw", "get_bit_generator", "set_bit_generator"})
# functions that make a new generator: with a seed, its draws are the same at every call
# (constants of the program, as eager NumPy's); without one, a new entropy at every call
_CONSTRUCTORS = frozenset({"default_rng", "Generator", "RandomState", "Random", "PCG64",
                           "PCG64DXSM", "MT19937", "Philox", "SFC64", "SeedSequence",
                           "BitGenerator"})


class RandomStandIn:
    """Stands in for ``numpy.random``, ``cupy.random``, Python's ``random`` or a generator
    inside a traced function: a call that draws is recorded (:func:`_record`), so that the
    program draws it again at every call; ``isinstance`` sees the real object's type."""

    def __init__(self, real: Any, source: Source | None, label: str):
        self._real = real
        self._source = source
        self._label = label

    @property  # type: ignore[misc]  # isinstance(rng, np.random.Generator) holds
    def __class__(self) -> type:
        return type(self._real)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._real, name)
        label = f"{self._label}.{name}"
        if is_random_module(attr):
            return RandomStandIn(attr, ModuleSource(attr), label)
        if is_source(attr):  # np.random.mtrand._rand, rng.bit_generator
            return RandomStandIn(attr, ObjectSource(attr), label_of(attr))
        if not callable(attr) or isinstance(attr, type):  # classes: isinstance(rng, ...)
            return attr
        if name in _CONSTRUCTORS:
            return _constructor(attr, label)
        if name in _REFUSED or name.startswith("_"):
            return _refusing(label, ", whose result or effect a compiled program cannot "
                             "repeat at every call")
        if name in _EFFECTS:
            return functools.partial(_effect, self, name)
        return functools.partial(_draw, self, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:  # random.Random() & co.
        raise _random_error(self._label)

    def __repr__(self) -> str:
        return f"<dualgpu stand-in for {self._label} inside a traced function>"


def _draw(stand_in: RandomStandIn, method: str, *args: Any, **kwargs: Any) -> Any:
    if _contains_tracer(args) or _contains_tracer(kwargs):
        return _traced_draw(stand_in, method, args, kwargs)
    return _concrete_draw(stand_in, method, args, kwargs)


def _effect(stand_in: RandomStandIn, method: str, *args: Any, **kwargs: Any) -> None:
    if _contains_tracer(args) or _contains_tracer(kwargs):
        raise _random_error(f"{stand_in._label}.{method}", " with a traced value")
    if stand_in._source is None:  # a generator made inside the function
        return getattr(stand_in._real, method)(*args, **kwargs)
    _record(Draw(stand_in._source, method, args, kwargs, None, f"{stand_in._label}.{method}"))


def _refusing(label: str, why: str = "") -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise _random_error(label, why)

    call.__name__ = call.__qualname__ = label
    return call


def _constructor(real: Any, label: str) -> Any:
    """A generator made inside the traced function: with a seed, the real one (its draws
    are the same at every call, as eager NumPy's: constants); a stand-in passed in is
    returned as it is (``default_rng(rng)``); without a seed, refused."""

    @functools.wraps(real)
    def call(*args: Any, **kwargs: Any) -> Any:
        seed = args[0] if args else kwargs.get("seed", kwargs.get("x"))
        if isinstance(seed, RandomStandIn) and label.endswith("default_rng"):
            return seed
        if seed is None or isinstance(seed, RandomStandIn) or _contains_tracer((args, kwargs)):
            raise _random_error(label, ", without a fixed seed: every eager call would start "
                                "from new entropy, which a compiled program cannot repeat")
        made = real(*args, **kwargs)
        return RandomStandIn(made, None, label_of(made)) if is_source(made) else made

    return call


def stand_in_for(obj: Any) -> Any:
    """The stand-in for ``obj`` in a traced function when it draws (a random module, a
    generator, a function or bound method of either), else None."""
    if isinstance(obj, RandomStandIn):
        return obj
    if isinstance(obj, types.ModuleType):
        return RandomStandIn(obj, ModuleSource(obj), obj.__name__) if is_random_module(
            obj) else None
    if is_source(obj):
        return RandomStandIn(obj, ObjectSource(obj), label_of(obj))
    owner = getattr(obj, "__self__", None)
    name = getattr(obj, "__name__", None) or "?"
    if isinstance(obj, (types.MethodType, types.BuiltinMethodType)) and is_source(owner):
        return getattr(stand_in_for(owner), name)  # rng.normal; from numpy.random import normal
    module = inspect.getmodule(obj) if callable(obj) and not isinstance(obj, type) else None
    if module is not None and is_random_module(module):  # cupy.random's functions
        return getattr(stand_in_for(module), name)
    return None


def argument_stand_in(obj: Any, j: int) -> Any:
    """The stand-in for a generator passed as leaf ``j`` of the call's arguments."""
    if isinstance(obj, RandomStandIn):  # passed on from an enclosing trace
        # made there (drawn at once), or this call's argument j: the enclosing trace's
        # stand-in is found there again when the program is inlined (redraw_in_trace)
        return obj if obj._source is None else RandomStandIn(obj._real, ArgumentSource(j),
                                                              obj._label)
    return RandomStandIn(obj, ArgumentSource(j), label_of(obj))


def source_states(objs: list) -> list:
    """Fingerprints of the states of the generators ``objs`` (a trace that changes one drew
    from it without going through a stand-in: reached through an object's attribute)."""
    states: list[bytes | None] = []
    for obj in objs:
        try:
            state = (obj.bit_generator.state if hasattr(obj, "bit_generator") else
                     obj.get_state() if hasattr(obj, "get_state") else obj.getstate())
            states.append(pickle.dumps(state))
        except Exception:  # noqa: BLE001 - a state we cannot read (CuPy's): not compared
            states.append(None)
    return states


def global_states() -> tuple:
    """A fingerprint of NumPy's and Python's global random states (a trace that changes
    them drew without going through a name the function reaches)."""
    state = np.random.get_state(legacy=False)  # a dict: its array is the MT19937 key
    return (pickle.dumps(state), hash(_py_random.getstate()))
