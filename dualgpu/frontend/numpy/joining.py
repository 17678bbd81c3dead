"""Joining and splitting arrays: ``concatenate``/``stack`` and their NumPy spellings
(``hstack``, ``vstack``, ``column_stack``, ``append``, ``block``, ``np.r_``/``np.c_``), the
``atleast_Nd`` they use, and the ``split`` family."""
from __future__ import annotations

import numpy as np

from ... import lax
from ...core.axes import check_axis as _check_axis
from ...errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    ShapeMismatchError,
    UnsupportedOpError,
    user_location,
)
from ...lax import astype, ravel, reshape
from ...lax import dtype_of as _dtype
from ...lax import is_tracer as _is_tracer
from ...lax import shape_of as _shape
from .arguments import arraylike, as_array, asarray, holds_tracer, unsupported_kwargs
from .indexing import take_range


def cast_joined(r, dtype, casting: str, name: str):
    """The ``dtype=``/``casting=`` of NumPy's joining functions, applied to their result."""
    if dtype is None:
        return r
    # NumPy's stubs take the casting's Literal names; NumPy checks the string
    if not np.can_cast(_dtype(r), dtype, casting=casting):  # type: ignore[arg-type]
        raise ArgumentTypeError(f"{name}: cannot cast {_dtype(r)} to {np.dtype(dtype)} with "
                                f"casting={casting!r} (at {user_location()})")
    return astype(r, dtype)


def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    unsupported_kwargs("concatenate", {"out": out})
    arrays = [asarray(a) if not _is_tracer(a) else a for a in arrays]
    return cast_joined(lax.concatenate(arrays, axis), dtype, casting, "concatenate")


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    unsupported_kwargs("stack", {"out": out})
    return cast_joined(lax.stack(arrays, axis), dtype, casting, "stack")


def hstack(arrays, *, dtype=None, casting="same_kind"):
    arrays = [atleast_1d(a) for a in arrays]
    r = concatenate(arrays, axis=0 if len(_shape(arrays[0])) == 1 else 1)
    return cast_joined(r, dtype, casting, "hstack")


def vstack(arrays, *, dtype=None, casting="same_kind"):
    """``np.vstack`` (and ``np.row_stack``), with NumPy 2's ``dtype`` and ``casting``.

    >>> dg.grad(lambda x: np.sum(np.vstack([x, x * x], dtype=np.float64)))(np.ones(2))
    array([3., 3.])
    """
    r = concatenate([atleast_2d(a) for a in arrays], axis=0)
    return cast_joined(r, dtype, casting, "vstack")


def column_stack(tup):
    """``np.column_stack``: 1-D arrays become columns."""
    cols = [reshape(a, (-1, 1)) if len(_shape(a)) < 2 else a
            for a in (arraylike(t) for t in tup)]
    return concatenate(cols, axis=1)


def row_stack(tup, *, dtype=None, casting="same_kind"):
    return vstack(tup, dtype=dtype, casting=casting)


def dstack(tup):
    return concatenate([atleast_3d(a) for a in tup], axis=2)


def append(arr, values, axis=None):
    if axis is None:
        return concatenate([ravel(arraylike(arr)), ravel(arraylike(values))], axis=0)
    return concatenate([arraylike(arr), arraylike(values)], axis=axis)


def block(arrays):
    """``np.block``: nested lists of blocks (traced or not) joined along the last axes, the
    innermost lists along the last one; blocks of fewer dimensions get leading ones, as
    NumPy's. Tuples, empty lists and lists of mismatched depths are refused as NumPy
    refuses them.

    >>> dg.jit(lambda x: np.block([[x, np.zeros(1)], [np.ones(1), 2 * x]]))(np.array([1.0]))
    array([[1., 0.],
           [1., 2.]])
    """
    list_ndim, arr_ndim = _block_depths(arrays, [])
    result_ndim = max(arr_ndim, list_ndim)

    def join(item, depth):
        if depth < list_ndim:
            return concatenate([join(x, depth + 1) for x in item], axis=-(list_ndim - depth))
        a = as_array(item)
        s = _shape(a)
        return reshape(a, (1,) * (result_ndim - len(s)) + s) if len(s) < result_ndim else a

    return join(arrays, 0)


def _block_depths(arrays, index):
    """The depth of ``np.block``'s nested lists and the largest number of dimensions of a
    block; NumPy's errors for tuples, empty lists and mismatched depths."""
    where = "".join(f"[{i}]" for i in index) or "arrays"
    if isinstance(arrays, tuple):
        raise ArgumentTypeError(f"np.block: {where} is a tuple; only lists can be used to "
                                f"arrange blocks (at {user_location()})")
    if not isinstance(arrays, list):
        return 0, len(_shape(arrays))
    if not arrays:
        raise InvalidArgumentError(f"np.block: the list at {where} cannot be empty "
                                   f"(at {user_location()})")
    depths = [_block_depths(a, index + [i]) for i, a in enumerate(arrays)]
    if len({d for d, _ in depths}) > 1:
        raise InvalidArgumentError(f"np.block: list depths are mismatched under {where} "
                                   f"(depths {[d + len(index) + 1 for d, _ in depths]}) "
                                   f"(at {user_location()})")
    return depths[0][0] + 1, max(n for _, n in depths)


def _split_bounds(n, indices_or_sections, even: bool, name: str):
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise InvalidArgumentError(f"{name}: number of sections must be larger than 0 "
                                       f"(at {user_location()})")
        if even and n % k:
            raise ShapeMismatchError(f"{name}: axis of length {n} does not divide into {k} "
                                     f"sections (at {user_location()})")
        each, extra = divmod(n, k)
        sizes = [each + 1] * extra + [each] * (k - extra)
        return list(np.cumsum([0] + sizes))
    return [0] + [int(i) for i in indices_or_sections] + [n]


def _split(a, indices_or_sections, axis, even, name):
    nd = len(_shape(a))
    axis = _check_axis(axis, nd, name)
    bounds = _split_bounds(_shape(a)[axis], indices_or_sections, even, name)
    return [take_range(a, axis, int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]


def split(a, indices_or_sections, axis=0):
    return _split(a, indices_or_sections, axis, True, "split")


def array_split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, False, "array_split")


def _split_needs(a, ndim, name):
    if len(_shape(a)) < ndim:
        raise ShapeMismatchError(f"{name} only works on arrays of {ndim} or more dimensions "
                                 f"(at {user_location()})")


def hsplit(ary, indices_or_sections):
    _split_needs(ary, 1, "hsplit")
    return split(ary, indices_or_sections, axis=1 if len(_shape(ary)) > 1 else 0)


def vsplit(ary, indices_or_sections):
    _split_needs(ary, 2, "vsplit")
    return split(ary, indices_or_sections, axis=0)


def dsplit(ary, indices_or_sections):
    _split_needs(ary, 3, "dsplit")
    return split(ary, indices_or_sections, axis=2)


class Concatenator:
    """``np.r_`` / ``np.c_`` on traced values: items are arrays, scalars or slices
    (``np.r_[x, 0:3, 5.0]``); the string directives of NumPy's form are not supported."""

    def __init__(self, real, columns: bool):
        self._real = real
        self._columns = columns

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        if not holds_tracer(items):
            return self._real[key]
        parts = []
        for item in items:
            if isinstance(item, str):
                raise UnsupportedOpError(f"np.r_/np.c_ directive {item!r} is not supported "
                                         f"on traced values (at {user_location()})")
            if isinstance(item, slice):
                item = self._real[item]
            parts.append(arraylike(item) if _is_tracer(item) or holds_tracer(item)
                         else np.asarray(item))
        if self._columns:
            return column_stack(parts)
        return concatenate([atleast_1d(p) for p in parts], axis=0)


r_ = Concatenator(np.r_, columns=False)


c_ = Concatenator(np.c_, columns=True)


def atleast_1d(a):
    return reshape(a, (1,)) if len(_shape(a)) == 0 else a


def atleast_2d(a):
    s = _shape(a)
    return reshape(a, (1,) * (2 - len(s)) + s) if len(s) < 2 else a


def atleast_3d(*arys):
    """``np.atleast_3d``: (N,) becomes (1, N, 1), (M, N) becomes (M, N, 1)."""
    out = []
    for a in arys:
        s = _shape(a)
        shape = {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}.get(len(s), s)
        out.append(reshape(a, shape))
    return out[0] if len(out) == 1 else out
