"""``np.histogram`` and ``np.histogram_bin_edges`` on traced values.

The edges are NumPy's (``linspace`` of the range, the data's minimum and maximum by default,
widened by 0.5 each way when they are equal; or the given edges), and each value counts in
bin ``i`` where ``edges[i] <= value < edges[i + 1]`` (the last bin closed), which is what
NumPy's own bin search arrives at; values outside the edges (and NaN) count nowhere. The
counts (or sums of ``weights``) are a scatter-add over the bin indices: differentiable in
``weights``, while the edges are differentiable in the data through its minimum and
maximum (as JAX's ``jnp.histogram``).

>>> w = np.array([1.0, 2.0, 3.0])
>>> dg.grad(lambda w: np.histogram([0.1, 0.2, 0.9], bins=2, range=(0, 1), weights=w)[0][0])(w)
array([1., 1., 0.])
"""
from __future__ import annotations

import operator

import numpy as np

from ...errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    ShapeMismatchError,
    UnsupportedOpError,
    user_location,
)
from ...lax import (
    astype,
    equal,
    getitem,
    greater_equal,
    less,
    less_equal,
    logical_and,
    ravel,
    true_divide,
    where,
    zeros_like,
)
from ...lax import dtype_of as _dtype
from ...lax import is_tracer as _is_tracer
from ...lax import shape_of as _shape
from ...ops.sorting import searchsorted
from .arguments import as_array, host_value
from .construction import linspace
from .elementwise import clip
from .indexing import bin_sums
from .introspection import result_type
from .numerics import diff
from .reductions import amax, amin, sum_


def _raveled(a, weights):
    a = as_array(a)
    if _dtype(a) == np.bool_:  # NumPy warns and counts them as uint8
        a = astype(a, np.uint8)
    if weights is not None:
        weights = as_array(weights)
        if np.dtype(_dtype(weights)).kind not in "biufc":
            raise ArgumentTypeError(f"np.histogram: weights of dtype {_dtype(weights)} are not "
                                    f"numbers, which the counts sum (at {user_location()})")
        if _shape(weights) != _shape(a):
            raise ShapeMismatchError(f"np.histogram: weights of shape {_shape(weights)} for a "
                                     f"of shape {_shape(a)} should have the same shape "
                                     f"(at {user_location()})")
        weights = ravel(weights)
    return ravel(a), weights


def _outer_edges(a, range_):
    """The outer edges, and the types NumPy compares the data with them in (a Python number
    stays weak, widened or not)."""
    if range_ is not None:
        first, last = range_
        if not (_is_tracer(first) or _is_tracer(last)):
            if first > last:
                raise InvalidArgumentError("np.histogram: max must be larger than min in "
                                           f"range parameter (at {user_location()})")
            if not (np.isfinite(first) and np.isfinite(last)):
                raise InvalidArgumentError(f"np.histogram: supplied range of [{first}, "
                                           f"{last}] is not finite (at {user_location()})")
    elif _shape(a)[0] == 0:
        first, last = 0, 1
    else:
        # NumPy raises on a range that is not finite; read from traced data, it cannot be
        # checked before the program runs: the edges are then NaN or infinite
        first, last = amin(a), amax(a)
        if not (_is_tracer(first) or _is_tracer(last) or
                (np.isfinite(first) and np.isfinite(last))):
            raise InvalidArgumentError(f"np.histogram: autodetected range of [{first}, {last}] "
                                       f"is not finite (at {user_location()})")
    if _is_tracer(first) or _is_tracer(last):
        same = equal(first, last)
        types = result_type(a, first - 0.5), result_type(a, last + 0.5)
        return where(same, first - 0.5, first), where(same, last + 0.5, last), types
    if first == last:
        first, last = first - 0.5, last + 0.5
    return first, last, (result_type(a, first), result_type(a, last))


def _bin_edges(a, bins, range_, weights=None):
    """The edges (traced or not), their number of bins, and for a number of bins the outer
    edges (``None`` for given edges)."""
    if isinstance(bins, str):
        if _is_tracer(a):
            raise UnsupportedOpError(
                f"np.histogram(bins={bins!r}) of traced values (at {user_location()}): the "
                "number of bins would be read from the data, so the shape of the result is "
                "not known while tracing; give bins as a number or as the edges")
        if weights is not None:
            raise ArgumentTypeError(f"np.histogram(bins={bins!r}): automated estimation of the "
                                    "number of bins is not supported for weighted data (at "
                                    f"{user_location()})")
        bins = np.histogram_bin_edges(host_value(a), bins, range_)
    if not isinstance(bins, (list, tuple)) and np.ndim(bins) == 0 and not _is_tracer(bins):
        try:
            n = operator.index(bins)
        except TypeError:
            raise ArgumentTypeError(f"np.histogram: `bins` must be an integer, a string, "
                                    f"or an array, got {bins!r} (at {user_location()})"
                                    ) from None
        if n < 1:
            raise InvalidArgumentError(f"np.histogram: `bins` must be positive, when an "
                                       f"integer (at {user_location()})")
        first, last, types = _outer_edges(a, range_)
        bin_type = result_type(first, last, a)
        if np.dtype(bin_type).kind in "biu":
            bin_type = np.result_type(bin_type, float)
        edges = linspace(first, last, n + 1, endpoint=True, dtype=bin_type)
        if not _is_tracer(edges) and np.any(host_value(edges)[:-1] >= host_value(edges)[1:]):
            raise InvalidArgumentError(f"np.histogram: Too many bins for data range. Cannot "
                                       f"create {n} finite-sized bins (at {user_location()})")
        return edges, n, (first, last, types)
    if _is_tracer(bins) and _shape(bins) == ():
        raise UnsupportedOpError(f"np.histogram: a traced number of bins (at {user_location()}) "
                                 "would set the shape of the result, which is not known while "
                                 "tracing; give bins as a Python int or as the edges")
    edges = as_array(bins)
    if len(_shape(edges)) != 1:
        raise InvalidArgumentError(f"np.histogram: `bins` must be 1d, when an array (at "
                                   f"{user_location()})")
    if not _is_tracer(edges) and np.any(host_value(edges)[:-1] > host_value(edges)[1:]):
        raise InvalidArgumentError(f"np.histogram: `bins` must increase monotonically, when "
                                   f"an array (at {user_location()})")
    return edges, max(_shape(edges)[0] - 1, 0), None


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002 (NumPy's name)
    """``np.histogram_bin_edges``: the edges ``np.histogram`` uses (a number of bins, or the
    edges themselves; a string such as ``"auto"`` only for data known while tracing)."""
    a, weights = _raveled(a, weights)
    return _bin_edges(a, bins, range, weights)[0]


def histogram(a, bins=10, range=None, density=None, weights=None):  # noqa: A002
    """``np.histogram``: the counts (int64; the sums of ``weights`` in their dtype; with
    ``density``, the probability density) and the edges, as NumPy computes them."""
    a, weights = _raveled(a, weights)
    edges, n, outer = _bin_edges(a, bins, range, weights)
    if n == 0:          # fewer than two edges: no bins, as NumPy
        kind = np.int64 if weights is None else _dtype(weights)
        return np.zeros(0, np.result_type(kind, np.float64) if density else kind), edges
    dt = result_type(a, edges)        # the bin search's type; the edges return in their own
    search, searched = astype(edges, dt), astype(a, dt)
    right = searchsorted(search, searched, side="right")
    index = where(equal(searched, getitem(search, -1)), n, right) - 1  # last bin: closed
    if outer is None:
        inside = logical_and(greater_equal(index, 0), less(index, n))
    else:   # NumPy's rule for a number of bins: between the outer edges in the data's type
        first, last, types = outer     # a traced edge in the type a number would have had
        first, last = (astype(e, t) if _is_tracer(e) else e for e, t in zip((first, last), types))
        inside = logical_and(greater_equal(astype(a, types[0]) if _is_tracer(first) else a, first),
                             less_equal(astype(a, types[1]) if _is_tracer(last) else a, last))
    counted = astype(inside, np.int64) if weights is None else \
        where(inside, weights, zeros_like(weights))
    index = clip(index, 0, n - 1)
    kind = _dtype(counted)
    if outer is not None and np.dtype(kind).kind in "fc":    # NumPy's bincount sums in double
        counted = astype(counted, np.result_type(kind, np.float64))
    counts = astype(bin_sums(counted, index, n), kind)
    if density:
        widths = astype(diff(edges), np.result_type(_dtype(edges), float))
        return true_divide(true_divide(counts, widths), sum_(counts)), edges
    return counts, edges
