"""The methods of the user's classes inside a traced function, rebound as its functions are.

A traced function's plain Python functions are rebound copies (:mod:`.namespace`): their
``numpy``, ``cupy``, ``scipy`` and random modules are the tracing stand-ins. A method is
reached through an object (``model.loss(p)``, ``self.layer(x)``, ``a + b``), which the
trace must not replace (``self`` is the user's own object: identity, ``isinstance`` and
writes to ``self.attr`` are Python's). So while a traced call runs, each class of the user's
that it reaches has its functions (methods, ``__call__`` and the other special methods,
static and class methods, properties' functions) replaced in the class by a stand-in, and
the functions and random generators held by its objects' attributes (``self.act = relu``,
``self.rng``) by a stand-in for the attribute:

* on the thread of a traced call, the stand-in gives the function's rebound copy of that
  call, bound as the function would be (to the real object), or the generator's stand-in;
* on any other thread, and once the call is over, what the class held.

The class is restored when the last traced call that reached it returns or raises.
Classes are reached through what the traced function reads (globals, closures, defaults,
its arguments) and, as their methods run, through the attributes of their objects.

Example::

    >>> class Model:
    ...     def features(self, p):
    ...         return np.array([p[0], 2 * p[1]])  # (np.array: no protocol dispatches it)
    ...     def loss(self, p):
    ...         return np.sum(self.features(p) ** 2)
    >>> dg.grad(Model().loss)(np.array([1.0, 1.0]))
    array([2., 8.])
"""
from __future__ import annotations

import functools
import sys
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..errors import in_stdlib
from .numpy.random import is_source

# a function's rebound copy in the running traced call: function -> replacement
Rebinder = Callable[[Any], Any]

_LIBRARY_ROOTS = frozenset({"numpy", "cupy", "cupyx", "scipy", "dualgpu", "builtins",
                            "functools", "abc", "typing", "enum"})
# names the class keeps: how its objects are made, looked into and set (their slots)
_KEPT = frozenset({"__new__", "__init_subclass__", "__class_getitem__", "__set_name__",
                   "__getattribute__", "__getattr__", "__setattr__", "__delattr__",
                   "__del__", "__hash__", "__eq__", "__repr__", "__str__", "__format__",
                   "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__",
                   "__copy__", "__deepcopy__", "__instancecheck__", "__subclasscheck__"})
_ABSENT = object()
# how far attributes are looked into for objects of other classes (self.layers[0].act):
# levels, and attributes or items of each
_DEPTH, _ITEMS = 4, 64

_state = threading.local()  # .calls: this thread's traced calls, innermost last
_lock = threading.Lock()
_patched: dict[type, list] = {}  # class -> [calls reaching it, {name: what it held}]


class _Call:
    """One traced call on this thread: its rebinder, what the user's object of a value of
    the trace is (``original``: a function for its rebound copy), the classes it reached (to
    restore) and the objects whose attributes it looked into."""

    __slots__ = ("rebind", "original", "classes", "seen")

    def __init__(self, rebind: Rebinder, original: Rebinder):
        self.rebind, self.original = rebind, original
        self.classes: set[type] = set()
        self.seen: dict[int, Any] = {}  # (kept: an id stays its object's)


def _current() -> _Call | None:
    calls = getattr(_state, "calls", None)
    return calls[-1] if calls else None


@contextmanager
def rebinding(rebind: Rebinder, original: Rebinder, reached: list) -> Iterator[None]:
    """Within it, this thread's traced call rebinds with ``rebind`` (and what its code
    assigns to an attribute is ``original(value)``): the user classes of ``reached``
    (objects, classes) and those it reaches later have their stand-ins, which are removed on
    exit (by the last call that reached them)."""
    calls = getattr(_state, "calls", None)
    if calls is None:
        calls = _state.calls = []
    call = _Call(rebind, original)
    calls.append(call)
    try:
        for obj in reached:
            reach(obj)
        yield
    finally:
        calls.pop()
        _leave(call.classes)


def reach(obj: Any, depth: int = 0) -> None:
    """``obj`` (an object, a class, a bound method's object) is reached by the running
    traced call: its user classes get their stand-ins (nothing outside a traced call)."""
    call = _current()
    if call is None or depth > _DEPTH:
        return
    if isinstance(obj, (list, tuple, dict)):  # arguments: pytrees of the user's objects
        for item in list(obj.values() if isinstance(obj, dict) else obj)[:_ITEMS]:
            reach(item, depth + 1)
        return
    cls = obj if isinstance(obj, type) else type(obj)
    for klass in cls.__mro__:
        if klass not in call.classes and is_user_class(klass):
            _enter(klass)
            call.classes.add(klass)
    if not isinstance(obj, type):
        _look_into(obj, call, depth)


def is_user_class(cls: type) -> bool:
    """A class of the user's code: not a library's (installed, the standard library's,
    dualgpu's), not a built-in type."""
    module = getattr(cls, "__module__", None) or ""
    if cls.__flags__ & (1 << 9) == 0:  # not Py_TPFLAGS_HEAPTYPE: a static type of C
        return False
    if module.split(".")[0] == "dualgpu":  # a class of a docstring's example is the user's
        return getattr(sys.modules.get(module), cls.__name__, None) is not cls \
            and "<locals>" not in cls.__qualname__
    if module.split(".")[0] in _LIBRARY_ROOTS:
        return False
    path = getattr(sys.modules.get(module), "__file__", None) or ""
    return not (in_stdlib(path) or "site-packages" in path or "dist-packages" in path)


def _enter(cls: type) -> None:
    """Stand-ins in ``cls`` (or one more call reaching it)."""
    with _lock:
        entry = _patched.get(cls)
        if entry is not None:
            entry[0] += 1
            return
        held = {}
        for name, value in list(vars(cls).items()):
            stand_in = _stand_in(name, value)
            if stand_in is not None:
                try:
                    setattr(cls, name, stand_in)
                except (TypeError, AttributeError):  # a metaclass that refuses
                    continue
                held[name] = value
        try:  # what the code assigns to its objects' attributes: the user's own values
            cls.__setattr__ = SetattrInTrace(  # type: ignore[assignment,method-assign]
                cls, vars(cls).get("__setattr__", _ABSENT))
            held["__setattr__"] = vars(cls)["__setattr__"].original
        except (TypeError, AttributeError):
            pass
        _patched[cls] = [1, held]


def _stand_in(name: str, value: Any) -> Any:
    if name in _KEPT:
        return None
    if isinstance(value, property):
        return PropertyInTrace(value)
    if isinstance(value, (types.FunctionType, staticmethod, classmethod)):
        return MethodInTrace(value)
    return None


def _leave(classes: set[type]) -> None:
    with _lock:
        for cls in classes:
            entry = _patched[cls]
            entry[0] -= 1
            if entry[0]:
                continue
            del _patched[cls]
            for name, value in entry[1].items():
                if not isinstance(vars(cls).get(name), _STAND_INS):
                    continue  # (the code set another meanwhile: it stays)
                if value is _ABSENT:
                    delattr(cls, name)
                else:
                    setattr(cls, name, value)


def _look_into(obj: Any, call: _Call, depth: int = 0) -> None:
    """The objects ``obj``'s attributes hold (directly, or in a list, tuple or dict) get
    their classes' stand-ins; its attributes holding functions, theirs."""
    if id(obj) in call.seen:
        return
    call.seen[id(obj)] = obj
    try:
        attrs = object.__getattribute__(obj, "__dict__")  # (not a __getattr__ of the user's)
    except AttributeError:
        return
    for name, value in list(attrs.items())[:_ITEMS]:
        if _rebound(value):
            _hold_attribute(type(obj), name)
        items: Any = value.values() if isinstance(value, dict) else value
        for v in (list(items)[:_ITEMS] if isinstance(value, (list, tuple, dict)) else (value,)):
            if not isinstance(v, (type, types.FunctionType, types.ModuleType)) \
                    and is_user_class(type(v)):
                reach(v, depth + 1)


def _reached_by(call: _Call, obj: Any) -> None:
    """``obj``, whose method runs in ``call``: its classes entered for this call too (a
    trace on another thread may have entered them)."""
    if type(obj) in call.classes:
        _look_into(obj, call)
    else:
        reach(obj)


def _rebound(value: Any) -> bool:
    """Whether a traced call sees ``value``, held by an attribute, as its replacement: a
    function (its rebound copy), a random generator (its stand-in: drawn at every call) or
    a ``np.vectorize`` (the front end's: it calls the function on whole arrays)."""
    return isinstance(value, (types.FunctionType, functools.partial, types.MethodType,
                              np.vectorize)) or is_source(value)


def _hold_attribute(cls: type, name: str) -> None:
    """An attribute of ``cls``'s objects that holds a function: a stand-in in the class
    (a data descriptor is asked before the object's dict), unless one is there."""
    with _lock:
        entry = _patched.get(cls)
        current = vars(cls).get(name, _ABSENT)
        found = next((vars(k)[name] for k in cls.__mro__ if name in vars(k)), None)
        if entry is None or isinstance(found, AttributeInTrace) or hasattr(
                type(original_of(found)), "__set__"):
            return  # not entered, or already, or a property or slot: asked first anyway
        try:
            setattr(cls, name, AttributeInTrace(name, current))
        except (TypeError, AttributeError):
            return
        entry[1].setdefault(name, current)


class MethodInTrace:
    """Stands in for a function of a user class (plain, static or class method: the
    ``original``) while traced calls reach the class."""

    __slots__ = ("original",)

    def __init__(self, original: Any):
        self.original = original

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        call = _current()
        if call is None:
            return self.original.__get__(obj, owner)
        if obj is not None:
            _reached_by(call, obj)
        original = self.original
        if isinstance(original, staticmethod):
            return call.rebind(original.__func__)
        if isinstance(original, classmethod):
            return types.MethodType(call.rebind(original.__func__),
                                    owner if owner is not None else type(obj))
        fn = call.rebind(original)
        return fn if obj is None else types.MethodType(fn, obj)


class PropertyInTrace:
    """Stands in for a property of a user class: its functions rebound."""

    __slots__ = ("original",)

    def __init__(self, original: property):
        self.original = original

    def _function(self, obj: Any, which: str) -> Any:
        fn = getattr(self.original, which)
        call = _current()
        if call is None or fn is None:
            return None
        _reached_by(call, obj)
        return call.rebind(fn)

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        fn = None if obj is None else self._function(obj, "fget")
        return self.original.__get__(obj, owner) if fn is None else fn(obj)

    def __set__(self, obj: Any, value: Any) -> None:
        fn = self._function(obj, "fset")
        self.original.__set__(obj, value) if fn is None else fn(obj, value)

    def __delete__(self, obj: Any) -> None:
        fn = self._function(obj, "fdel")
        self.original.__delete__(obj) if fn is None else fn(obj)


class AttributeInTrace:
    """Stands in for an attribute that the objects of a user class hold in their dict
    (``self.act = relu``): the function there rebound; else what the classes have of that
    name, found as Python would (``original``: what this class had)."""

    __slots__ = ("name", "original")

    def __init__(self, name: str, original: Any):
        self.name = name
        self.original = original

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        attrs = getattr(obj, "__dict__", None) if obj is not None else None
        if attrs is not None and self.name in attrs:
            value = attrs[self.name]
            call = _current()
            return value if call is None or not _rebound(value) else call.rebind(value)
        cls = type(obj) if obj is not None else owner
        for klass in cls.__mro__ if cls is not None else ():  # what the classes have
            found = vars(klass).get(self.name, _ABSENT)
            if found is not _ABSENT and not isinstance(found, AttributeInTrace):
                get = getattr(type(found), "__get__", None)
                return found if get is None else get(found, obj, owner)
        raise AttributeError(f"{getattr(cls, '__name__', '?')!r} object has no attribute "
                             f"{self.name!r}")

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.name] = value

    def __delete__(self, obj: Any) -> None:
        try:
            del obj.__dict__[self.name]
        except KeyError:
            raise AttributeError(self.name) from None


class SetattrInTrace:
    """Stands in for a user class's ``__setattr__`` (``original``, or the one it inherits
    when it has none): in a traced call, what is assigned is the user's own value of a value
    of the trace (a function, not its rebound copy; an array, not its view), as a global is
    written back; an attribute that is given a function has a stand-in too."""

    __slots__ = ("cls", "original")

    def __init__(self, cls: type, original: Any):
        self.cls: type = cls
        self.original = original

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self.original if self.original is not _ABSENT else \
                super(self.cls, owner or self.cls).__setattr__  # type: ignore[arg-type]  # (as below)
        return types.MethodType(self.assign, obj)

    def assign(self, obj: Any, name: str, value: Any) -> None:
        call = _current()
        if call is not None:
            value = call.original(value)
            if _rebound(value) and isinstance(getattr(obj, "__dict__", None), dict):
                _hold_attribute(type(obj), name)
        if self.original is _ABSENT:
            # (mypy takes super's first argument for a class statement's name only)
            super(self.cls, obj).__setattr__(name, value)  # type: ignore[arg-type]
        else:
            self.original(obj, name, value)


_STAND_INS = (MethodInTrace, PropertyInTrace, AttributeInTrace, SetattrInTrace)


def original_of(value: Any, absent: Any = None) -> Any:
    """What a class held where one of these stand-ins is (``absent`` where it held
    nothing; ``value`` itself for anything else)."""
    while isinstance(value, _STAND_INS):
        value = value.original
    return absent if value is _ABSENT else value
