"""The one cache of the package (:data:`PROGRAMS`: a bounded, thread-safe LRU cache of
every artifact derived from a trace: programs, inlined graphs, custom ops' derived rules,
Dask plans, autograd's wrappers), and the one way to key objects by identity
(:class:`IdentityKey`, weak where Python allows). Keys are tuples whose first item names the
kind of artifact when it is not a program (:meth:`LRUCache.discard_kind`,
:meth:`LRUCache.count_kind`)."""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..errors import DualgpuError


class IdentityKey:
    """A cache-key part that stands for one object by identity and keeps it alive.

    Keying on ``id(obj)`` alone is unsafe: once ``obj`` is freed, a new object can get the same
    id and would hit the stale entry (a fresh lambda would run the previous lambda's
    program). Holding a strong reference makes the id unique for as long as the key exists;
    the LRU bound keeps the number of objects held finite.
    """

    __slots__ = ("obj", "_hash")

    def __init__(self, obj: Any):
        self.obj = obj
        self._hash = id(obj)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return isinstance(other, IdentityKey) and other.obj is self.obj

    def __repr__(self) -> str:
        return f"IdentityKey({type(self.obj).__name__}@{self._hash:#x})"


class WeakIdentityKey:
    """A cache-key part that stands for one object by identity without keeping it alive.

    When the object is freed, every cache entry whose key holds this part is dropped (the
    caches register with :meth:`on_death`), so a closure's captured arrays are freed with
    it, and a new object that reuses the id can never meet the old entry.
    """

    __slots__ = ("ref", "_hash", "_callbacks", "__weakref__")

    def __init__(self, obj: Any):
        self._hash = id(obj)
        self._callbacks: list = []
        self.ref = weakref.ref(obj, self._died)

    def _died(self, _ref) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb()

    def on_death(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        if not isinstance(other, WeakIdentityKey):
            return False
        a = self.ref()
        return a is not None and a is other.ref()

    def __repr__(self) -> str:
        return f"WeakIdentityKey({self._hash:#x}{'' if self.ref() is not None else ', dead'})"


def identity_key(obj: Any) -> WeakIdentityKey | IdentityKey:
    """The identity key of ``obj``: weak where ``obj`` takes weak references."""
    try:
        return WeakIdentityKey(obj)
    except TypeError:
        return IdentityKey(obj)


class LRUCache:
    """Least-recently-used cache; ``get_or_build`` builds a missing entry exactly once.

    Example::

        >>> cache = LRUCache(maxsize=2)
        >>> cache.get_or_build("k", lambda: 42), cache.get_or_build("k", lambda: 0)
        (42, 42)
        >>> cache.info()
        {'size': 1, 'maxsize': 2, 'hits': 1, 'misses': 1, 'evictions': 0}
    """

    def __init__(self, maxsize: int = 128):
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.RLock()
        self._building: dict = {}
        self._dead: list = []  # keys of entries whose objects died (list.append is atomic)
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self.maxsize = maxsize

    @property
    def maxsize(self) -> int:
        """The most entries kept (at least one is always kept); lowering it evicts now."""
        return self._maxsize

    @maxsize.setter
    def maxsize(self, n: int) -> None:
        n = int(n)
        if n < 0:
            raise DualgpuError(f"cache size must be >= 0, got {n}")
        with self._lock:
            self._maxsize = n
            self._trim()

    def _trim(self) -> None:
        while len(self._data) > max(1, self._maxsize):
            self._data.popitem(last=False)
            self.evictions += 1

    def __len__(self) -> int:
        with self._lock:
            self._purge()
            return len(self._data)

    def __contains__(self, key: Any) -> bool:
        return key in self._data

    def get_or_build(self, key: Any, build: Callable[[], Any]) -> Any:
        with self._lock:
            self._purge()
            if key in self._data:
                self._data.move_to_end(key)
                self.hits += 1
                return self._data[key]
            event = self._building.get(key)
            if event is None:
                event = self._building[key] = threading.Event()
                owner = True
            else:
                owner = False
        if not owner:
            event.wait()
            with self._lock:
                if key in self._data:
                    self.hits += 1
                    return self._data[key]
            return self.get_or_build(key, build)  # the builder failed: try ourselves
        try:
            value = build()
            with self._lock:
                self.misses += 1
                self._data[key] = value
                self._data.move_to_end(key)
                self._trim()
            return value
        finally:
            with self._lock:
                self._building.pop(key, None)
            event.set()

    def discard_later(self, key: Any) -> None:
        """Drop ``key`` now if the lock is free, else at the next access. Safe from weakref
        callbacks, which may run on any thread at any time (they must never wait on the
        lock: its holder could be waiting on them)."""
        self._dead.append(key)
        if self._lock.acquire(blocking=False):
            try:
                self._purge()
            finally:
                self._lock.release()

    def _purge(self) -> None:
        while self._dead:
            self._data.pop(self._dead.pop(), None)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.hits = self.misses = self.evictions = 0

    def get(self, key: Any) -> Any:
        """The entry of ``key`` (marked recently used), or None."""
        with self._lock:
            self._purge()
            if key not in self._data:
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return self._data[key]

    def put(self, key: Any, value: Any) -> None:
        """Store ``value`` under ``key`` (the least recently used entries make room)."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            self._trim()

    def discard_kind(self, kind: str) -> None:
        """Drop every entry whose key is a tuple starting with ``kind``."""
        with self._lock:
            for key in [k for k in self._data if type(k) is tuple and k and k[0] == kind]:
                del self._data[key]

    def count_kind(self, kind: str) -> int:
        """The number of entries whose key is a tuple starting with ``kind``."""
        with self._lock:
            self._purge()
            return sum(1 for k in self._data if type(k) is tuple and k and k[0] == kind)

    def info(self) -> dict:
        """Size, bound and counters (a consistent snapshot)."""
        with self._lock:
            self._purge()
            return {"size": len(self._data), "maxsize": self._maxsize, "hits": self.hits,
                    "misses": self.misses, "evictions": self.evictions}


# the one cache (its bound is dg.config["cache_size"], applied by the program cache)
PROGRAMS = LRUCache(256)


# ------------------------------------------------------------------------------ clear hooks
_CLEAR_HOOKS: list = []


def register_clear_hook(fn) -> None:
    """Have ``dg.clear_cache()`` call ``fn()`` too: caches of layers above the one that
    clears (custom ops' derived rules) register here instead of being imported by it."""
    if fn not in _CLEAR_HOOKS:
        _CLEAR_HOOKS.append(fn)


def run_clear_hooks() -> None:
    for fn in list(_CLEAR_HOOKS):
        fn()
