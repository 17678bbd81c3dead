"""What NumPy's functions accept, made what the ops take: array-likes (nested lists mixing
traced values and constants) as arrays (``np.array``, ``np.asarray``), and the keywords
(``out=``, ``where=``, ...) that traced values refuse with a clear error."""
from __future__ import annotations

import numpy as np

from ... import lax
from ...backends import array_backend
from ...errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    ShapeMismatchError,
    UnsupportedOpError,
    did_you_mean,
    keyword_parameters,
    user_location,
)
from ...lax import astype
from ...lax import dtype_of as _dtype
from ...lax import is_tracer as _is_tracer
from ...lax import shape_of as _shape


def unsupported_kwargs(name, kwargs):
    bad = {k: v for k, v in kwargs.items() if v is not None and k not in ("casting", "order")}
    known = keyword_parameters(getattr(np, name, None)) if bad else None
    typo = next((k for k in bad if known is not None and k not in known), None)
    if typo is not None:  # not NumPy's either: a misspelling
        raise ArgumentTypeError(f"np.{name}() got an unexpected keyword argument {typo!r}"
                                f"{did_you_mean(typo, known)} (at {user_location()})")
    if bad:
        raise UnsupportedOpError(
            f"np.{name}: argument(s) {', '.join(bad)} are not supported on traced values "
            f"(at {user_location()})")


def holds_tracer(a) -> bool:
    if _is_tracer(a):
        return True
    return isinstance(a, (list, tuple)) and any(holds_tracer(x) for x in a)


def build_array(a):
    """A traced array from nested lists/tuples mixing traced values and constants."""
    if _is_tracer(a):
        return a
    if isinstance(a, (list, tuple)) and holds_tracer(a):
        if not a:
            raise InvalidArgumentError(f"array: an empty list inside a nested list of traced "
                                       f"values "
                                       f"(at {user_location()})")
        parts = [build_array(x) for x in a]
        shapes = {_shape(p) for p in parts}
        if len(shapes) > 1:
            raise ShapeMismatchError(f"array: the nested sequence is ragged (element shapes "
                                     f"{sorted(shapes)}) (at {user_location()})")
        return lax.stack(parts, 0)
    return a if hasattr(a, "dtype") else np.asarray(a)


def array(a, dtype=None, copy=True, **kw):
    """``np.array``: also of nested lists mixing traced values and constants.

    >>> dg.grad(lambda s: np.sum(np.array([[s, 2 * s], [s, 0.5]])))(np.array(1.0))
    array(4.)
    """
    if _is_tracer(a) and hasattr(a, "getA"):  # an np.matrix of traced values: its array
        a = a.getA()
    if _is_tracer(a) or holds_tracer(a):
        r = build_array(a)
        return r if dtype is None else astype(r, dtype)
    return np.array(a, dtype=dtype)


def asarray(a, dtype=None, copy=None, **kw):
    """``np.asarray``: an array of the dtype asked is returned as it is, not copied (as
    NumPy does), so that an array the function closed over stays the user's: the cached
    program reads it when it runs, not its contents at the trace.

    >>> W = np.ones(2)
    >>> f = dg.jit(lambda x: np.concatenate([x, np.asarray(W)]))
    >>> _ = f(np.zeros(1)); W[0] = 5.0
    >>> f(np.zeros(1))
    array([0., 5., 1.])
    """
    if copy is not True and isinstance(a, np.ndarray) and not _is_tracer(a) \
            and (dtype is None or np.dtype(dtype) == a.dtype):
        return a
    return array(a, dtype=dtype)


def arraylike(a):
    """Lists and tuples become arrays (traced when they hold traced values): what NumPy
    functions accept as ``array_like``."""
    if isinstance(a, (list, tuple)):
        return build_array(a) if holds_tracer(a) else np.asarray(a)
    return a


def as_array(a):
    """``np.asanyarray`` of what a NumPy function takes: a traced value, or an array of any
    library (a closed-over CuPy array stays on its device), as it is; lists and tuples as
    :func:`arraylike` makes them; anything else a NumPy array."""
    a = arraylike(a)
    return a if _is_tracer(a) or hasattr(a, "dtype") and hasattr(a, "shape") \
        else np.asanyarray(a)


def host_value(a):
    """A constant (a NumPy or CuPy array, a number, a list) as a NumPy array on the host:
    what a decision at trace time reads (a constant mask, weights NumPy checks)."""
    backend = array_backend(a)
    return np.asarray(a) if backend is None else np.asarray(backend.to_host(a))


def is_complex(x) -> bool:
    return _dtype(x).kind == "c"


def as_float(x):
    return astype(x, np.float64) if _dtype(x).kind in "biu" else x
