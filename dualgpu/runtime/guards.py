"""What a traced program read from outside its arguments, checked on every cached call.

A program bakes in every value its function read while it was traced: globals, closure
cells, default arguments, and attributes of the modules and objects reached from them (and
the same for the plain Python functions it calls). :func:`collect_guards` lists those places after
a trace; :meth:`Guards.hold` checks, on every cached call, that each place still holds what
the trace saw. When one does not, the caller builds the program again, exactly as a fresh
build would.

How each value is compared:

* functions, ufuncs, classes, modules, arrays and other objects: by **identity** (the
  attributes of user objects and modules that the code names are guarded in turn);
* numbers, strings, bytes, ``None``, tuples, frozensets, slices and dtypes: by **value**
  (exactly: ``0.0`` and ``-0.0``, ``1`` and ``True`` differ; every NaN is one value);
* small lists, dicts and sets (at most :data:`SNAPSHOT_ITEMS` items): by a **snapshot** of
  their value taken after the trace, so that ``CFG["lr"] = 0.2`` builds again.

What is never guarded (static: docs/limitations.md lists it) is said there, and the retrace
warning names the place that changed when one keeps changing.

Example::

    >>> scale = 2.0
    >>> def f(x):
    ...     return scale * x
    >>> g = collect_guards(f)
    >>> g.hold()
    True
    >>> scale = 3.0
    >>> g.hold(), g.changed()
    (False, 'scale (global)')
"""
from __future__ import annotations

import array as pyarray
import collections
import functools
import hashlib
import os
import sys
import types
import weakref
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..backends import array_backend
from ..errors import in_stdlib
from ..frontend.methods import original_of
from ..frontend.numpy.random import is_source
from .signature import class_call, static_key

# how far the walk goes: functions followed, places guarded, attribute depth
MAX_FUNCTIONS = 64
MAX_PLACES = 512
MAX_DEPTH = 4
# a list, dict or set with more items than this is guarded by identity only (static)
SNAPSHOT_ITEMS = 16

# modules whose functions and objects are the library's, never the user's state
_LIBRARY_ROOTS = frozenset({"numpy", "cupy", "cupyx", "scipy", "dualgpu", "jax", "jaxlib",
                            "torch", "dask", "networkx", "builtins"})
_LIBRARY_ROOTS |= frozenset(getattr(sys, "stdlib_module_names", ()))
_IMMUTABLE = (bool, int, float, complex, str, bytes, type(None), np.generic, slice, np.dtype,
              type(Ellipsis))
# (their subclasses too: OrderedDict, defaultdict, Counter, a user's dict or list)
_MUTABLE_CONTAINERS = (list, dict, set, bytearray, collections.deque, pyarray.array)

# a place's description: (the expression, what kind of place), as ("scale", "global")
What = tuple[str, str]
# how a place is read: read(holder, name)
Read = Callable[[Any, Any], Any]
# a guarded place: (label, read, holder, name, mode, expected); see Guards
Place = tuple[str, Read, Any, Any, int, Any]


def _cell(holder: Any, name: Any) -> Any:
    return holder.cell_contents


def _item(holder: Any, name: Any) -> Any:
    return holder[name]


def _referent(holder: Any, name: Any) -> Any:
    """The object a reference holds (an argument the program is keyed on by identity)."""
    return holder()


def _attr(holder: Any, name: Any) -> Any:
    """``holder.name``, a method as its function (a bound method is a new object on every
    read); the user's own function where a trace running on this thread gives its rebound
    copy (:mod:`dualgpu.frontend.methods`)."""
    value = getattr(holder, name)
    value = value.__func__ if isinstance(value, types.MethodType) else value
    while isinstance(value, types.FunctionType) and hasattr(value, "__wrapped_by_dualgpu__"):
        value = value.__wrapped_by_dualgpu__
    return value


_READ_ERRORS = (ValueError, KeyError, IndexError, AttributeError, TypeError)
_IDENTITY, _VALUE, _SNAPSHOT = 0, 1, 2
_NOTHING = object()  # (what a class holds under a name it has no attribute of)


class _Strong:
    """Stands in for a weak reference to an object that takes none."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any):
        self.obj = obj

    def __call__(self) -> Any:
        return self.obj


def _ref(obj: Any) -> Callable[[], Any]:
    try:
        return weakref.ref(obj)
    except TypeError:
        return _Strong(obj)


class _Same:
    """A snapshot's stand-in for an object compared by identity (kept alive, so that its
    id stays its own)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any):
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return type(other) is _Same and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


class Guards:
    """The places a trace read, each with what it held then (see the module docstring)."""

    __slots__ = ("places", "keep", "static")

    def __init__(self, places: Iterable[Place] = (), keep: Iterable[Any] = (),
                 static: Iterable[str] = ()):
        # a place: (what, read, holder, name, mode, expected): ``expected`` is a reference
        # (identity), ``(value, key)`` (value) or a key (snapshot)
        self.places: tuple[Place, ...] = tuple(places)
        self.keep = tuple(keep)    # arrays the program reads stay alive, so ids stay theirs
        self.static = tuple(static)  # what was reached but is not guarded (for messages)

    def hold(self) -> bool:
        """True while every place still holds what the trace read."""
        for _, read, holder, name, mode, expected in self.places:
            try:
                value = read(holder, name)
            except _READ_ERRORS:
                return False
            if mode == _IDENTITY:
                if value is not expected():
                    return False
            elif mode == _VALUE:
                if value is not expected[0] and static_key(value, []) != expected[1]:
                    return False
            elif _snapshot_key(value) != expected:
                return False
        return True

    def changed(self) -> str | None:
        """The first place that no longer holds what the trace read (None if all do)."""
        for place in self.places:
            if not Guards((place,)).hold():
                return place[0]
        return None

    def __len__(self) -> int:
        return len(self.places)

    def sources(self) -> list[tuple[str, Any]]:
        """The random generators among the places read, the items of the containers there
        (nested, a few levels), and the generators of the bound methods and
        partials (``functools.partial``) found so (``{"draw": rng.normal}``: a draw the tracing
        namespace does not see), as ``(label, generator)``."""
        found: list[tuple[str, Any]] = []
        for label, read, holder, name, _, _ in self.places:
            try:
                value = read(holder, name)
            except _READ_ERRORS:
                continue
            _sources_in(value, label, found, SOURCE_DEPTH)
        return found

    def __add__(self, other: Guards) -> Guards:
        return Guards(self.places + other.places, self.keep + other.keep,
                      self.static + other.static)


SOURCE_DEPTH = 3  # how deep sources() looks into containers


def _source_behind(value: Any) -> Any:
    """The generator ``value`` is, or draws from as its bound method or a partial of one
    (None for anything else)."""
    for _ in range(8):  # partials of partials
        if is_source(value):
            return value
        if isinstance(value, functools.partial):
            value = value.func
            continue
        owner = getattr(value, "__self__", None)
        if owner is None or isinstance(value, type) or not callable(value):
            return None
        value = owner
    return None


def _sources_in(value: Any, label: str, found: list, depth: int) -> None:
    source = _source_behind(value)
    if source is not None:
        found.append((label, source))
        return
    if depth <= 0:
        return
    if isinstance(value, dict):
        items: Iterable = list(value.items())[:SNAPSHOT_ITEMS * 4]
    elif isinstance(value, (list, tuple)):
        items = enumerate(value[:SNAPSHOT_ITEMS * 4])
    else:
        return
    for k, item in items:
        _sources_in(item, f"{label}[{k!r}]", found, depth - 1)


def _contents(array: Any, name_of: Any) -> tuple:
    """What :func:`array_contents` compares: the shape, dtype and a digest of the bytes."""
    backend = array_backend(array)
    host = np.ascontiguousarray(backend.to_host(array) if backend is not None else array)
    # an ndarray is a buffer (NumPy's stubs say so for Python 3.12 and later only)
    digest = hashlib.blake2b(host.view(np.uint8)).digest()  # type: ignore[arg-type]
    return (host.shape, host.dtype.str, digest)


def array_contents(arrays: Iterable[Any], labels: Iterable[str]) -> Guards:
    """Guards on the values inside ``arrays`` (a digest of their bytes, compared on every
    check; ``labels`` name them for :meth:`Guards.changed`): for the few arrays whose values
    shaped a program beyond its arithmetic, such as the constant index arrays and matrices
    a sparsity pattern was read from (a program reads an array's values when it runs; a
    pattern read them once).

    Example::

        >>> mask = np.eye(2)
        >>> g = array_contents([mask], ["mask"])
        >>> g.hold()
        True
        >>> mask[0, 1] = 1.0
        >>> g.hold(), g.changed()
        (False, 'mask')
    """
    places: list[Place] = []
    for array, label in zip(arrays, labels):
        seen = _contents(array, None)
        places.append((label, _contents, array, None, _VALUE, (seen, static_key(seen, []))))
    return Guards(places)


# a NumPy array of integers or booleans up to this size is guarded by its contents: a trace
# reads the values of index arrays and masks (the derivative programs of jacfwd, hessian...
# build their structure from them), so one changed in place builds again
CONTENT_BYTES = 1 << 16


def _by_contents(value: Any) -> bool:
    return (type(value) is np.ndarray and value.dtype.kind in "biu"
            and value.nbytes <= CONTENT_BYTES)


def _read_contents(read: Read, holder: Any, name: Any) -> tuple:
    return _contents(read(holder, name), None)


def _snapshot_key(value: Any, budget: list[int] | None = None) -> Any:
    """An exact key of a small container's value (objects inside it by identity), or None
    when it is too large. Subclasses of the containers (``OrderedDict``, ``defaultdict``,
    ``Counter``, a user's ``dict`` or ``list``) and ``deque`` are keyed by their items and
    their exact type."""
    budget = [SNAPSHOT_ITEMS * 4] if budget is None else budget
    t = type(value)
    if isinstance(value, (dict, list, tuple, set, frozenset, collections.deque)):
        if len(value) > SNAPSHOT_ITEMS:
            return None
        mapping = isinstance(value, dict)
        items: Iterable[Any]
        if isinstance(value, dict):
            items = [(static_key(k, []), v) for k, v in value.items()]
        elif isinstance(value, (set, frozenset)):
            items = sorted(value, key=repr)
        else:
            items = value
        inner: list[Any] = []
        for item in items:
            budget[0] -= 1
            k = (_snapshot_key(item[1], budget) if mapping else _snapshot_key(item, budget))
            if k is None or budget[0] < 0:
                return None
            inner.append((item[0], k) if mapping else k)
        return (t, tuple(inner))
    if isinstance(value, (bytearray, pyarray.array)):
        data = bytes(value) if isinstance(value, bytearray) else value.tobytes()
        return (t, getattr(value, "typecode", ""), data) if len(data) <= 32 * SNAPSHOT_ITEMS \
            else None
    if isinstance(value, _IMMUTABLE):
        return static_key(value, [])
    if _by_contents(value):  # an index array or a mask held in a small container
        return (np.ndarray, _contents(value, None))
    return _Same(value)


def _frozen(value: Any) -> bool:
    """A value that cannot change while it stays the same object."""
    if isinstance(value, (tuple, frozenset)):
        return all(_frozen(v) for v in value)
    return not isinstance(value, _MUTABLE_CONTAINERS)


def _is_library(obj: Any, files: tuple[str, ...]) -> bool:
    """Whether ``obj`` belongs to a library (its state is not the user's to change)."""
    code = getattr(obj, "__code__", None)
    if isinstance(code, types.CodeType):  # a function: by where its code is (a function
        path = code.co_filename                # of a doctest is the user's)
        return path.startswith(files) or in_stdlib(path)
    if isinstance(obj, types.ModuleType):
        name = obj.__name__
    else:
        module = getattr(obj, "__module__", None)
        name = module if isinstance(module, str) else getattr(type(obj), "__module__", "") or ""
    return name.split(".")[0] in _LIBRARY_ROOTS


def _is_namespace(obj: Any) -> bool:
    """A bag of the user's attributes made by the standard library (``SimpleNamespace``,
    ``argparse``'s ``Namespace``): its attributes are user state, guarded as an object's."""
    t = type(obj)
    return t is types.SimpleNamespace or (t.__name__ == "Namespace"
                                          and t.__module__ == "argparse")


def _library_files() -> tuple[str, ...]:
    """The folders of the imported libraries' code (the standard library aside)."""
    roots = []
    for name in sorted(_LIBRARY_ROOTS - frozenset(getattr(sys, "stdlib_module_names", ()))):
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            roots.append(os.path.dirname(path) + os.sep)
    return tuple(roots)


def _code_names(code: types.CodeType, out: set[str]) -> set[str]:
    """Global and attribute names a code object reads (nested code included), and its
    identifier-like string constants (``getattr(obj, "scale")``)."""
    out.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code_names(c, out)
        elif isinstance(c, str) and c.isidentifier():
            out.add(c)
    return out


class _Walk:
    """Collects the places reached from one function (see :func:`collect_guards`)."""

    def __init__(self) -> None:
        self.places: list[Place] = []
        self.keep: list[Any] = []
        self.static: list[str] = []
        self.functions: list[types.FunctionType | None] = []  # None: walked
        self.seen: set[int] = set()     # ids of the functions and objects walked into
        self.objects: list[list[Any]] = []    # [object, what, depth, names already guarded]
        self.names: set[str] = set()    # every name the followed functions' code reads
        self.files = _library_files()
        self.placed: set[tuple[int, Any, Read]] = set()   # (holder id, name, read) guarded

    def place(self, what: What, read: Read, holder: Any, name: Any, value: Any,
              depth: int) -> None:
        """Guards the place ``read(holder, name)`` (which holds ``value``; ``what`` is its
        (expression, kind)) and walks into ``value``."""
        where = what
        label = _label(what)
        if (id(holder), name, read) in self.placed:
            return
        self.placed.add((id(holder), name, read))
        if len(self.places) >= MAX_PLACES:
            self.static.append(label)
            return
        if isinstance(value, _IMMUTABLE) or (isinstance(value, (tuple, frozenset))
                                             and _frozen(value)):
            self.places.append((label, read, holder, name, _VALUE,
                                (value, static_key(value, []))))
        elif isinstance(value, _MUTABLE_CONTAINERS + (tuple, frozenset)):
            key = _snapshot_key(value)
            if key is None:
                self.static.append(f"{label[:-1]}, its items: more than {SNAPSHOT_ITEMS})")
                self.places.append((label, read, holder, name, _IDENTITY, _ref(value)))
            else:
                self.places.append((label, read, holder, name, _SNAPSHOT, key))
        else:
            if isinstance(value, np.ndarray) or array_backend(value) is not None:
                self.keep.append(value)
            self.places.append((label, read, holder, name, _IDENTITY, _ref(value)))
            if _by_contents(value):  # an index array or a mask: its values shape programs
                seen = _contents(value, None)
                self.places.append((label, functools.partial(_read_contents, read), holder,
                                    name, _VALUE, (seen, static_key(seen, []))))
        self.inside(value, where, depth)

    def inside(self, value: Any, what: What, depth: int) -> None:
        """Walks into ``value``: functions are followed, objects' attributes guarded."""
        if depth > MAX_DEPTH or isinstance(value, _IMMUTABLE):
            return
        if getattr(type(value), "_dualgpu_transform", False):
            self.inside(value.fn, what, depth)  # a transform of a function: the function
        elif getattr(type(value), "_dualgpu_functions", None) is not None:
            for f in value._dualgpu_functions:  # a custom_vjp, custom_jvp or custom op:
                self.inside(f, what, depth)      # the user's functions and rules it calls
        elif isinstance(value, types.FunctionType):
            self.follow(value)
        elif isinstance(value, types.MethodType):
            self.inside(value.__func__, what, depth)
            owner = ("self", "the method's object") if what[0] == "self" else \
                _sub(what, ".__self__")
            self.inside(value.__self__, owner, depth + 1)
        elif isinstance(value, functools.partial):
            self.inside(value.func, what, depth)
            # its arguments are read by every call, as a closure's cells are (the keywords
            # are a dict that can be changed in place)
            self.place(_sub(what, ".args"), _attr, value, "args", value.args, depth + 1)
            self.place(_sub(what, ".keywords"), _attr, value, "keywords", value.keywords,
                       depth + 1)
        elif isinstance(value, (tuple, frozenset, list, set, collections.deque)):
            for i, v in enumerate(value):
                self.inside(v, _sub(what, f"[{i}]"), depth + 1)
        elif isinstance(value, dict):
            for k, v in value.items():
                self.inside(v, _sub(what, f"[{k!r}]"), depth + 1)
        elif ((_is_library(value, self.files) and not _is_namespace(value))
              or isinstance(value, np.ndarray) or array_backend(value) is not None
              or id(value) in self.seen):
            return
        else:  # a user module, class or object: the attributes the code names
            self.seen.add(id(value))
            self.objects.append([value, what, depth, set()])
            call = None if isinstance(value, type) else class_call(type(value))
            if isinstance(call, types.FunctionType):
                self.follow(call)

    def follow(self, f: types.FunctionType) -> None:
        if id(f) in self.seen:
            return
        if _is_library(f, self.files):
            if f.__module__.split(".")[0] == "dualgpu" and "<locals>" in f.__qualname__:
                self.seen.add(id(f))  # dualgpu's closure around the user's functions (a
                for cell in f.__closure__ or ():  # custom op's impl, defjvps' rule):
                    try:                          # they are followed, as they are rebound
                        self.inside(cell.cell_contents, (f.__qualname__, "closure"), 1)
                    except ValueError:
                        pass
            return
        if len(self.functions) >= MAX_FUNCTIONS:
            self.static.append(f"{f.__qualname__} (a function beyond the {MAX_FUNCTIONS} "
                               "followed)")
            return
        self.seen.add(id(f))
        self.functions.append(f)

    def function(self, f: types.FunctionType) -> None:
        names = _code_names(f.__code__, set())
        self.names |= names
        where = f.__qualname__
        for var, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
            try:
                v = cell.cell_contents
            except ValueError:  # not yet assigned
                continue
            self.place((var, f"closure variable of {where}"), _cell, cell, None, v, 1)
        globs = f.__globals__
        for name in sorted(names):
            if name in globs:
                self.place((name, "global"), _item, globs, name, globs[name], 1)
        for attr in ("__defaults__", "__kwdefaults__"):
            v = getattr(f, attr)
            if v is not None:
                self.place((f"{where}.{attr}", "defaults"), _attr, f, attr, v, 1)

    def attributes(self, entry: list[Any]) -> None:
        """Guards the attributes of a user module, class or object that the code names
        (and that were not guarded yet)."""
        obj, what, depth, done = entry
        for name in sorted(self.names - done):
            done.add(name)
            if isinstance(obj, types.ModuleType):
                d = vars(obj)
                if name in d:
                    self.place(_sub(what, f".{name}"), _item, d, name, d[name], depth + 1)
                continue
            kind = _attribute_kind(obj, name)
            if kind == "computed":
                self.static.append(_label(_sub(what, f".{name}"), "a property or descriptor"))
            elif kind == "plain":
                self.place(_sub(what, f".{name}"), _attr, obj, name, _attr(obj, name),
                           depth + 1)

    def run(self, fn: Any, arguments: Iterable[tuple[str, Any]] = ()) -> Guards:
        self.inside(fn, ("self", "the function's object"), 0)
        for label, obj in arguments:  # the same object at every cached call: its contents
            self.place((label, "argument"), _referent, _ref(obj), None, obj, 1)
        progressed = True
        while progressed:
            progressed = False
            i = 0
            while i < len(self.functions):
                f = self.functions[i]
                if f is not None:
                    self.function(f)
                    self.functions[i] = None
                    progressed = True
                i += 1
            for entry in list(self.objects):
                if self.names - entry[3]:
                    self.attributes(entry)
                    progressed = True
        return Guards(self.places, self.keep, self.static)


def _sub(what: What, suffix: str) -> What:
    return (what[0] + suffix, what[1])


def _label(what: What, note: str = "") -> str:
    """``COEF (global)``, ``knobs.scale (closure variable of f)``."""
    return f"{what[0]} ({what[1]}{', ' + note if note else ''})"


def _attribute_kind(obj: Any, name: str) -> str:
    """How ``obj.name`` is found: ``"plain"`` data or a function (an instance, slot or
    class attribute), ``"computed"`` by a property or other descriptor, or ``"missing"``."""
    if not isinstance(obj, type):
        d = getattr(obj, "__dict__", None)
        if isinstance(d, dict) and name in d:
            return "plain"
    for klass in (obj.__mro__ if isinstance(obj, type) else type(obj).__mro__):
        if name in vars(klass):
            v = original_of(vars(klass)[name], _NOTHING)  # (not a running trace's
            if v is _NOTHING:                             # stand-in)
                continue
            if isinstance(v, (types.FunctionType, staticmethod, classmethod,
                              types.MemberDescriptorType)):
                return "plain" if hasattr(obj, name) else "missing"
            return "computed" if hasattr(type(v), "__get__") else "plain"
    return "missing"


def collect_guards(fn: Any, before: Guards | None = None,
                   arguments: Iterable[tuple[str, Any]] = ()) -> Guards:
    """The places ``fn`` (a function, bound method, partial, callable object or dualgpu
    transform of one) reads from outside its arguments, with what they hold now; and of
    ``arguments`` (``(label, object)``: the arguments a program is keyed on by identity, a
    set or a user object), their contents and the attributes the code names, as for the
    objects a closure holds (a set changed in place, ``model.scale = 2.0``: built again).

    ``before``: the same, collected before the trace. A list, dict or set whose value the
    trace changed is written by the function (a counter, a log), not read: it is guarded by
    identity only, so that the next call does not trace again because of it."""
    guards = _Walk().run(fn, arguments)
    if before is None:
        return guards
    was = {(id(p[2]), p[3]): p[5] for p in before.places if p[4] == _SNAPSHOT}
    places = []
    for p in guards.places:
        what, read, holder, name, mode, expected = p
        if mode == _SNAPSHOT and was.get((id(holder), name), expected) != expected:
            p = (what, read, holder, name, _IDENTITY, _ref(read(holder, name)))
        places.append(p)
    return Guards(places, guards.keep, guards.static)


def cached_guarded(cache: Any, key: Any, fn: Any, build: Callable[[], Any]) -> Any:
    """``build()``, cached in ``cache`` under ``key`` with the guards of ``fn`` (what a
    custom op's rules read from outside their arguments), and built again when they no
    longer hold, as a transformed function's program is."""
    def guarded() -> tuple[Any, Guards]:
        before = collect_guards(fn)
        return build(), collect_guards(fn, before)
    value, guards = cache.get_or_build(key, guarded)
    if not guards.hold():
        value, guards = guarded()
        cache.put(key, (value, guards))
    return value
