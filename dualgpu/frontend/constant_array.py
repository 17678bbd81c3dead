"""The view through which a traced function sees a NumPy array it reads (a global, a closure
cell, a default value) or makes (``np.zeros(n)``): :class:`ConstantArray`.

An array made inside the trace takes traced writes (``dydt[0] = y[1]``, ``out[i] += v``,
``np.fill_diagonal(a, s)``, ``np.add.at(g, idx, v)``): from the first one on, its contents are a
traced value (the old contents with the written entries replaced, built of ``getitem`` and
``where``: every transform differentiates it), kept in the :class:`_Contents` its views share.
Every read of the array or of a view of it sees those contents: indexing, operators, ufuncs,
NumPy functions, methods, returning it. What would read the raw memory instead (``.tolist()``,
``float(a)``, iteration, a view made by ``.T`` or ``reshape`` before the write, ``.data``) is
refused, and the memory itself is filled with NaN (float arrays), so that a C extension reading
it cannot see plausible stale numbers. An array the user owns (a global, a closure cell) never
takes a traced write: the user would see it after the call.

Why this design: the write stays the user's NumPy code (no ``.at[].set`` to learn), and the
update is built of ops every transform already differentiates to any order (a constant
gather of the written values, ``where``), so no new op and no rule; the positions written, and
NumPy's choice among repeated indices, are computed by NumPy itself on an array of flat
positions, so every key NumPy accepts (slices with steps, masks, lists, ``...``, ``None``) has
NumPy's meaning. The cost is a whole-array update per write (a loop of n writes into an
n-vector is O(n²) work); a view that NumPy made (``.T``) is refused rather than tracked.
"""
from __future__ import annotations

import functools
import types
from typing import Any

import numpy as np

from .. import lax
from ..backends import backend_for_xp
from ..core.trace import Tracer
from ..errors import InvalidIndexError, TracerControlFlowError, UnsupportedOpError, user_location
from . import numpy as dnp

# attributes a traced-backed array answers itself (shape and dtype do not change)
_OWN = frozenset({"shape", "ndim", "dtype", "size", "itemsize", "nbytes", "original",
                  "constant_value", "traced_contents"})


class _Contents:
    """What an array made in the trace holds once a traced value was written into it
    (``value``, the whole array's, None before), shared by the array and its views."""

    __slots__ = ("root", "value", "user")

    def __init__(self, root: np.ndarray, user: bool):
        self.root = root  # the memory of the whole array (a plain ndarray)
        self.value: Any = None
        self.user = user


def _refused_if_traced(name: str) -> Any:
    """ndarray's method ``name``, refused once a traced value was written into the array (it
    would read the memory)."""
    def method(self: ConstantArray, *args: Any, **kwargs: Any) -> Any:
        if ConstantArray.traced_contents(self) is not None:
            raise _stale(name)
        return getattr(np.ndarray, name)(self, *args, **kwargs)

    method.__name__ = name
    return method


class ConstantArray(np.ndarray):
    """A NumPy array a traced function reads (a global, a closure cell, a default value) or
    makes (``np.zeros(n)``, any NumPy call on constants), seen through this view while it is
    traced: NumPy's array in every way (same memory, same
    results, plain arrays out), except that indexing it with traced indices gathers
    (``field[i, j]`` with ``i``, ``j`` computed from traced values, as in semi-Lagrangian
    advection), where NumPy's indexing would ask the indices for concrete numbers, and that one
    made in the trace takes traced writes (the module's docstring)."""

    _dualgpu_view_of_constant = True  # what the tracer stores is constant_value()

    # ------------------------------------------------------------ state
    def _state(self) -> tuple[_Contents, tuple | None]:
        """The contents this array shares and its path in them (a tuple of basic keys; None
        for a view NumPy made, by ``.T`` or ``reshape``, whose place is not known)."""
        d = object.__getattribute__(self, "__dict__")
        contents = d.get("_contents")
        if contents is None:
            contents = d["_contents"] = _Contents(np.ndarray.view(self, np.ndarray),
                                                  user="original" in d)
            d["_path"] = ()
        return contents, d["_path"]

    def __array_finalize__(self, obj: Any) -> None:
        if isinstance(obj, ConstantArray) and np.may_share_memory(self, obj):
            contents, path = obj._state()  # a view NumPy made (.T, reshape): place unknown
            self.__dict__.update(_contents=contents, _path=() if contents.user else None)

    def traced_contents(self) -> Any:
        """The traced value this array holds, or None when no traced value was written in it."""
        contents, path = self._state()
        if contents.value is None:
            return None
        if path is None:
            raise UnsupportedOpError(
                f"a view of an array made inside the traced function (by .T, .reshape, "
                f"np.transpose...) was read at {user_location()} after a traced value was "
                "written into the array: it would show the old numbers. Make the view after "
                "the writes (or index the array: a[1:], a[:, 0]).")
        value = contents.value
        for key in path:
            value = value[key]
        return value

    def constant_value(self) -> Any:
        """The array a trace keeps: the user's own one (a view of it for views of this), or
        the traced contents of one written in the trace."""
        traced = self.traced_contents()
        if traced is not None:
            return traced
        original = self.__dict__.get("original")
        if original is not None or self._state()[0].user:
            return original if original is not None else np.ndarray.view(self, np.ndarray)
        return np.array(np.ndarray.view(self, np.ndarray))  # a snapshot: later writes unseen

    # ------------------------------------------------------------ reads
    def __getitem__(self, key):
        plain = np.ndarray.view(self, np.ndarray)
        key = resolved(key)
        traced = self.traced_contents()
        if traced is not None:
            key_is_basic = _is_basic(key)
            if not key_is_basic or np.ndim(plain[key]) == 0:
                return traced[key]
        elif isinstance(key, Tracer) or (type(key) is tuple
                                         and any(isinstance(k, Tracer) for k in key)):
            return dnp.getitem(plain, key)
        contents, path = self._state()
        ans = plain[key]
        if contents.user or not isinstance(ans, np.ndarray):
            return ans
        view = ans.view(ConstantArray)
        if _is_basic(key):  # a view of this one's memory: it sees (and takes) its writes
            view.__dict__.update(_contents=contents,
                                 _path=None if path is None else path + (key,))
        return view

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("_") or name in _OWN:
            return object.__getattribute__(self, name)
        traced = ConstantArray.traced_contents(self)
        if traced is None:
            return object.__getattribute__(self, name)
        if hasattr(traced, name):  # .sum(), .T, .reshape(), .copy(): the traced ones
            return getattr(traced, name)
        raise _stale(f".{name}")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.get("out")
        outs = out if isinstance(out, tuple) else (() if out is None else (out,))
        if method == "at":
            return ufunc_at(ufunc, *inputs, **kwargs)
        if not _any_traced(inputs + outs):  # NumPy's, on the memory
            if outs:
                kwargs["out"] = tuple(_plain(o) for o in outs)
            ans = getattr(ufunc, method)(*(_plain(a) for a in inputs), **kwargs)
            return (outs[0] if len(outs) == 1 else outs) if outs else ans
        kwargs.pop("out", None)
        ans = getattr(ufunc, method)(*resolved(inputs), **resolved(kwargs))
        if not outs:
            return ans
        answers = ans if isinstance(ans, tuple) else (ans,)
        for target, value in zip(outs, answers):
            _write(target, Ellipsis, value, f"np.{ufunc.__name__}(..., out=)")
        return outs[0] if len(outs) == 1 else outs

    def __array_function__(self, func, types, args, kwargs):
        writer = WRITERS.get(func)
        if writer is not None and args and isinstance(args[0], ConstantArray):
            return writer(*args, **kwargs)
        if not _any_traced((args, kwargs)):
            return super().__array_function__(func, types, args, kwargs)
        return func(*resolved(args), **resolved(kwargs))

    def __array_wrap__(self, array, context=None, return_scalar=False):
        if return_scalar and array.ndim == 0:
            return array[()]
        return array.view(np.ndarray)

    # ------------------------------------------------------------ writes
    def __setitem__(self, key, value):
        _write(self, key, value, "out[...] = value")

    # ------------------------------------------------------------ what would read the memory
    __iter__ = _refused_if_traced("__iter__")
    __contains__ = _refused_if_traced("__contains__")
    __float__ = _refused_if_traced("__float__")
    __int__ = _refused_if_traced("__int__")
    __index__ = _refused_if_traced("__index__")
    __complex__ = _refused_if_traced("__complex__")
    __bool__ = _refused_if_traced("__bool__")
    __format__ = _refused_if_traced("__format__")
    __array__ = _refused_if_traced("__array__")
    __dlpack__ = _refused_if_traced("__dlpack__")
    __reduce__ = _refused_if_traced("__reduce__")
    __reduce_ex__ = _refused_if_traced("__reduce_ex__")
    __copy__ = _refused_if_traced("__copy__")
    __deepcopy__ = _refused_if_traced("__deepcopy__")

    def __repr__(self) -> str:  # (print() in the traced function: no stale numbers)
        traced = self.traced_contents()
        return np.ndarray.__repr__(self) if traced is None else repr(traced)

    def __str__(self) -> str:
        traced = self.traced_contents()
        return np.ndarray.__str__(self) if traced is None else repr(traced)


def _stale(what: str) -> UnsupportedOpError:
    return UnsupportedOpError(
        f"{what} of an array made inside the traced function, after a traced value was written "
        f"into it, at {user_location()}: it would read the array's memory, which does not hold "
        "the traced values. Keep it an array: index it, compute with it, or return it.")


def _plain(x: Any) -> Any:
    return np.ndarray.view(x, np.ndarray) if isinstance(x, ConstantArray) else x


def _is_basic(key: Any) -> bool:
    keys = key if type(key) is tuple else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, (slice, int, np.integer))
               and not isinstance(k, (bool, np.bool_)) for k in keys)


def _is_traced(x: Any) -> bool:
    return isinstance(x, Tracer) or (isinstance(x, ConstantArray)
                                     and x.traced_contents() is not None)


def _any_traced(x: Any) -> bool:
    if isinstance(x, (list, tuple)):
        return any(_any_traced(y) for y in x)
    if isinstance(x, dict):
        return any(_any_traced(y) for y in x.values())
    return _is_traced(x)


def resolved(x: Any) -> Any:
    """``x`` (an argument, a list or tuple or dict of them) with each ConstantArray replaced by
    what it holds: its traced contents if a traced value was written into it, else its
    constant (what a tracer's function takes)."""
    if isinstance(x, ConstantArray):
        return x.constant_value()
    if type(x) in (list, tuple):
        return type(x)(resolved(y) for y in x)
    if type(x) is dict:
        return {k: resolved(v) for k, v in x.items()}
    return x


def resolving(fn: Any) -> Any:
    """``fn`` (a function of the user's a front-end function calls: odeint's right-hand side)
    returning what its arrays hold (:func:`resolved`): an array it made and wrote with traced
    values is its traced value there, never its memory."""
    if not isinstance(fn, types.FunctionType):
        return fn

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        return resolved(fn(*args, **kwargs))

    return call


def holds_written(args: tuple, kwargs: dict) -> bool:
    """Whether an argument is an array made in the trace that holds a traced value."""
    return _any_traced((args, kwargs))


_LIKE: frozenset[Any] = frozenset(getattr(np, n) for n in ("empty_like", "zeros_like", "ones_like"))


def made_like(real: Any, args: tuple, kwargs: dict) -> ConstantArray | None:
    """``np.empty_like(y)`` (``zeros_like``, ``ones_like``, ``copy``) of a traced ``y``: an
    array made in the trace, of ``y``'s shape and dtype, which takes traced writes
    (``dydt = np.empty_like(y); dydt[0] = y[1]``); None for other calls."""
    if real not in _LIKE and real is not np.copy or not args \
            or not isinstance(args[0], Tracer) or _any_tracer((args[1:], kwargs)) \
            or backend_for_xp(args[0]._builder.xp).on_device:  # (CuPy: a fill, as before)
        return None
    prototype = np.zeros(tuple(args[0].shape), np.dtype(args[0].dtype))
    out = real(prototype, *args[1:], **kwargs)
    if out.ndim == 0 or out.dtype.kind not in "biufc":
        return None
    made = out.view(ConstantArray)
    if real is np.copy:  # y = np.copy(x); y[0] = 1.0: x's values, traced from the start
        made._state()[0].value = args[0]
        if out.dtype.kind in "fc":
            out.fill(np.nan)  # (its memory is never what it holds)
    elif out.shape == tuple(args[0].shape):  # a fill, as before: it folds (x + 0 * fill is x)
        fill = lax.ones_like if real is np.ones_like else lax.zeros_like
        made._state()[0].value = fill(args[0], out.dtype)
    return made


def made_in_trace(out: np.ndarray, args: tuple) -> ConstantArray:
    """``out``, an array a NumPy function made in the trace, as a ConstantArray: one that
    takes traced writes, unless it is a view of an argument (``np.asarray(g)``), whose owner
    it then shares."""
    view = out.view(ConstantArray)
    for a in args:
        if isinstance(a, np.ndarray) and np.may_share_memory(out, a):
            if isinstance(a, ConstantArray):
                contents, path = a._state()
                view.__dict__.update(_contents=contents, _path=() if contents.user else None)
            else:
                view.__dict__.update(_contents=_Contents(out, user=True), _path=())
            break
    return view


def _any_tracer(x: Any) -> bool:
    if isinstance(x, (list, tuple)):
        return any(_any_tracer(y) for y in x)
    if isinstance(x, dict):
        return any(_any_tracer(y) for y in x.values())
    return isinstance(x, Tracer)


# ------------------------------------------------------------------- the functional update
def _write(target: Any, key: Any, value: Any, what: str) -> None:
    """``target[key] = value``: in memory while no traced value is involved, else as a new
    traced value of the contents target shares."""
    if not isinstance(target, ConstantArray):
        raise UnsupportedOpError(f"{what} at {user_location()}: a traced value written into a "
                                 "NumPy array the traced function did not make.")
    contents, path = target._state()
    key = resolved(key)
    value = resolved(value)
    if contents.value is None and not _any_tracer((key, value)):
        np.ndarray.__setitem__(target, key, value)
        return
    if contents.user:
        raise TracerControlFlowError(
            f"a traced value was written into a NumPy array the function reads from outside "
            f"({what}, at {user_location()}): a global, a closure cell or a default value, "
            "which the caller would see changed. Copy it first (a = a.copy()) or build the "
            "new array with np.where.")
    if path is None:
        raise UnsupportedOpError(
            f"{what} at {user_location()} writes a traced value through a view made by .T, "
            ".reshape or np.transpose of an array made inside the traced function: write "
            "into the array itself (or a view of it made by indexing: a[1:], a[:, 0]).")
    if not _any_tracer(key) and np.size(np.ndarray.view(target, np.ndarray)[key]) == 0:
        return  # out[1:1] = v: nothing is written
    if contents.value is None:  # the first traced write: the contents so far, then NaN
        contents.value = contents.root.copy()
        if contents.root.dtype.kind in "fc":
            contents.root.fill(np.nan)
    if _any_tracer(key):
        key, value = Ellipsis, _masked(target, key, value, what)
    contents.value = _set_path(contents.value, path, key, value)


def _masked(target: ConstantArray, key: Any, value: Any, what: str) -> Any:
    """``target[mask] = v`` with a traced boolean ``mask`` of target's shape and one value:
    ``np.where(mask, v, target)``; other traced indices are refused."""
    mask = key[0] if type(key) is tuple and len(key) == 1 else key
    if not (isinstance(mask, Tracer) and np.dtype(mask.dtype) == np.bool_
            and tuple(mask.shape) == target.shape and np.size(value) == 1):
        raise InvalidIndexError(
            f"{what} at {user_location()}: the index is a traced value; a write needs "
            "indices known while tracing (Python ints, slices, constant arrays) or a traced "
            "boolean mask of the array's shape with one value. Select with "
            "np.where(np.arange(n) == i, value, out) instead.")
    ans = dnp.where(mask, dnp.reshape(value, ()), target.traced_contents())
    return ans if np.dtype(ans.dtype) == target.dtype else lax.astype(ans, target.dtype)


def _set_path(whole: Any, path: tuple, key: Any, value: Any) -> Any:
    if not path:
        return set_at(whole, key, value)
    return set_at(whole, path[0], _set_path(whole[path[0]], path[1:], key, value))


def set_at(x: Any, key: Any, value: Any) -> Any:
    """``x`` with ``x[key] = value`` applied (NumPy's semantics, the last of repeated indices
    wins, ``value`` cast to ``x``'s dtype) as a new value: a gather of ``value`` at the
    written positions, ``where`` them, ``x`` elsewhere."""
    shape, dtype = tuple(x.shape), np.dtype(x.dtype)
    size = int(np.prod(shape))
    try:
        chosen = np.arange(size).reshape(shape)[key]  # the flat positions written, in order
    except (IndexError, TypeError, ValueError) as e:
        raise InvalidIndexError(f"out[...] = value at {user_location()}: {e}") from None
    chosen = np.asarray(chosen)
    winner = np.full(size, -1)
    winner[chosen.ravel()] = np.arange(chosen.size)  # NumPy's own choice among repeats
    value = dnp.asarray(value) if isinstance(value, (list, tuple)) else value
    if np.dtype(getattr(value, "dtype", dtype)) != dtype:
        value = lax.astype(value, dtype)
    try:
        spread = lax.ravel(lax.broadcast_to(value, chosen.shape))
    except Exception as e:  # noqa: BLE001  (NumPy's message: shapes that do not broadcast)
        raise InvalidIndexError(f"out[...] = value at {user_location()}: could not broadcast "
                                f"a value of shape {np.shape(value)} into shape "
                                f"{chosen.shape} ({e})") from None
    if lax.is_tracer(spread):
        gathered = lax.getitem(spread, np.maximum(winner, 0))
        flat = lax.where(winner >= 0, gathered, lax.ravel(x))
    else:
        # a constant value (o[1] = W[1], W closed over): gathered together with x's entries,
        # so that the program reads W when it runs (gathering W alone would copy it now)
        both = lax.concatenate([lax.ravel(x), spread])
        flat = lax.getitem(both, np.where(winner >= 0, size + winner, np.arange(size)))
    return lax.reshape(flat, shape)


# ------------------------------------------------------------------- NumPy's writing functions
def ufunc_at(ufunc, a, indices, b=None, **kwargs):
    """``np.add.at(a, indices, b)`` (and ``subtract``): unbuffered, repeated indices add up."""
    if not isinstance(a, ConstantArray) or not _any_traced((a, indices, b)):
        args = (np.ndarray.view(a, np.ndarray) if isinstance(a, ConstantArray) else a,
                indices) + (() if b is None else (b,))
        return ufunc.at(*args, **kwargs)
    if ufunc not in (np.add, np.subtract) or b is None:
        raise UnsupportedOpError(f"np.{ufunc.__name__}.at on an array holding traced values "
                                 f"at {user_location()}: only np.add.at and np.subtract.at "
                                 "are supported.")
    shape = a.shape
    chosen = np.asarray(np.arange(int(np.prod(shape))).reshape(shape)[resolved(indices)])
    b = resolved(b)
    if ufunc is np.subtract:
        b = dnp.negative(b)
    spread = lax.ravel(lax.broadcast_to(lax.astype(b, a.dtype), chosen.shape))
    added = lax.put_along_axis_add(spread, chosen.ravel(), 0, (int(np.prod(shape)),))
    _write(a, Ellipsis, dnp.add(resolved(a), lax.reshape(added, shape)), "np.add.at")


def _copyto(dst, src, casting="same_kind", where=True):
    if not _any_traced((dst, src, where)):
        return np.copyto(np.ndarray.view(dst, np.ndarray), src, casting=casting, where=where)
    if where is not True:
        src = dnp.where(resolved(where), resolved(src), resolved(dst))
    _write(dst, Ellipsis, src, "np.copyto")
    return None


def _fill_diagonal(a, val, wrap=False):
    if not _any_traced((a, val)):
        return np.fill_diagonal(np.ndarray.view(a, np.ndarray), val, wrap=wrap)
    if a.ndim == 2:  # NumPy's flat positions
        step, end = a.shape[1] + 1, (None if wrap else a.shape[1] * a.shape[1])
    else:
        step, end = 1 + int(np.cumprod(a.shape[:-1]).sum()), None
    flat = np.arange(a.size)[:end:step]
    if np.size(val) not in (1, flat.size):
        raise UnsupportedOpError(f"np.fill_diagonal with {np.size(val)} traced values for "
                                 f"{flat.size} diagonal entries at {user_location()}")
    _write(a, np.unravel_index(flat, a.shape), lax.ravel(resolved(val)), "np.fill_diagonal")
    return None


def _refused_writer(name: str):
    def call(dst, *args, **kwargs):
        if not _any_traced((dst, args, kwargs)):
            return getattr(np, name)(np.ndarray.view(dst, np.ndarray), *args, **kwargs)
        raise UnsupportedOpError(f"np.{name} with traced values at {user_location()}: write "
                                 "with out[index] = value instead.")

    return call


WRITERS = {np.copyto: _copyto, np.fill_diagonal: _fill_diagonal,
           **{getattr(np, n): _refused_writer(n) for n in ("put", "place", "putmask")}}
