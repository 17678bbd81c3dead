"""Why a traced value cannot become a Python value: the conversion methods of a tracer
(``bool()``, ``int()``, ``float()``, ``.item()``...), which refuse unless the trace knows
values, NumPy's refusals by shape and dtype alone, and the errors of a NumPy array indexed
by or written with a traced value (:mod:`dualgpu.core.trace` installs them on ``Tracer``).
"""
from __future__ import annotations

import dis
import math
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import numpy as np

from ..errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    TracerControlFlowError,
    user_location,
)

__all__ = ["UNDECIDED", "no_concrete", "executing", "index_error", "store_error",
           "STORE_SUBSCR", "LOAD_SUBSCR"]

UNDECIDED = object()  # what a trace's ``concretize`` answers for a value it does not give


def no_concrete(what: str, hint: str, placeholder: Any = None,
                 kind: str | None = None) -> Callable[..., Any]:
    """A conversion method that refuses (unless the trace knows values: its
    ``concretize``). With a ``placeholder``, a conversion made by a NumPy array's item
    assignment (``out[0] = tracer``) returns it instead, and the trace fails once the traced
    function returns (NumPy would replace our error by its own "setting an array element
    with a sequence")."""
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if placeholder is not None and executing(sys._getframe(1), STORE_SUBSCR):
            self._builder.defer_error(store_error(user_location(), written=placeholder))
            return placeholder
        _check_convertible(self, kind)
        hook = self._builder.concretize
        if hook is not None and kind is not None and not args and not kwargs:
            value = hook(self, kind)
            if value is not UNDECIDED:
                return value
        raise TracerControlFlowError(
            f"{what} of a traced value at {user_location()}: the value is not known while "
            f"dualgpu traces the function. {hint}")

    return method


def _check_convertible(t: Any, kind: str | None) -> None:
    """NumPy's (and JAX's) refusal of a conversion that no value could pass, by shape and
    dtype alone: ``int()`` of a vector, ``hex()`` of a float, ``if`` on an empty array."""
    aval = t._var.aval
    size = math.prod(aval.shape)
    if kind == "index" and (aval.shape or np.dtype(aval.dtype).kind not in "iu"):
        raise ArgumentTypeError(f"Only integer scalar arrays can be converted to a scalar index. "
                                f"(a traced {aval.str_short()} at {user_location()})")
    if kind in ("int", "float", "complex") and size != 1:
        raise ArgumentTypeError(f"Only scalar arrays can be converted to Python scalars. "
                                f"({kind}() of a traced {aval.str_short()} at "
                                f"{user_location()})")
    if kind == "bool" and size != 1:
        which = "an empty array" if size == 0 else "an array with more than one element"
        raise InvalidArgumentError(f"The truth value of {which} is ambiguous. (a traced "
                                   f"{aval.str_short()} at {user_location()}; use a.any() or "
                                   "a.all())")


STORE_SUBSCR = frozenset({dis.opmap["STORE_SUBSCR"]})  # a[k] = v
LOAD_SUBSCR = frozenset(dis.opmap[n] for n in ("BINARY_SUBSCR", "BINARY_SLICE") if n in dis.opmap)


def executing(frame: FrameType, ops: frozenset[int]) -> bool:
    """True when ``frame`` (the caller of a conversion method) is executing one of ``ops``:
    ``a[k] = v`` or ``a[k]`` (a NumPy array indexed with a traced value: NumPy converts it)."""
    code = frame.f_code.co_code
    return 0 <= frame.f_lasti < len(code) and code[frame.f_lasti] in ops


def index_error(location: str) -> TracerControlFlowError:
    return TracerControlFlowError(
        f"a NumPy array was indexed with a traced index at {location} (a[i] with i computed "
        "from traced values): NumPy's indexing converts the index to concrete numbers, "
        "which a traced value does not have. An array the function reads from a global, a "
        "closure or a default value is indexed by traced indices as it is; for an array "
        "made inside the function, gather with np.take(a, i, axis=k) (one axis at a time), "
        "or index a traced array (an argument of the function, or a result of np.* on "
        "traced values).")


def store_error(location: str, written: Any = None) -> TracerControlFlowError:
    """The refusal of a traced value written into an array the trace does not own; with
    ``written``, what NumPy stored there before the refusal could be raised (the write is
    NumPy's own, the conversion's placeholder its value: the array is changed)."""
    changed = ("" if written is None else
               f" NumPy has already stored {written!r} at that position of the array (the "
               "refusal comes once the function returns): restore it if the array is kept.")
    return TracerControlFlowError(
        f"a traced value was written into a NumPy array (out[...] = value) at {location}: "
        "this array holds concrete numbers that the traced function does not own (a view of a "
        "global, a closure cell, an object's attribute, or an array made by an operator on "
        "constants), so the value and its derivatives would be lost. Write into an array the "
        "function makes with np.zeros, np.empty_like(x), np.copy(...), or use np.where(mask, "
        "value, out), np.stack or np.concatenate." + changed)
