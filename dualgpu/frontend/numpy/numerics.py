"""Numerical routines written in ops: differences (``diff``, ``ediff1d``, ``gradient``),
``interp``, ``convolve`` and ``correlate``, polynomials (``polyval``, ``vander``,
``polyfit``), the
trapezoidal rule (``trapezoid``) and ``unwrap``."""
from __future__ import annotations

import operator

import numpy as np

from ...core.axes import check_axis as _check_axis
from ...core.axes import normalize_axes
from ...errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    ShapeMismatchError,
    UnsupportedOpError,
    user_location,
)
from ...lax import (
    absolute,
    add,
    astype,
    broadcast_to,
    cumsum,
    equal,
    expand_dims,
    flip,
    getitem,
    greater,
    greater_equal,
    less,
    less_equal,
    logical_and,
    multiply,
    negative,
    ones_like,
    pad,
    ravel,
    remainder,
    reshape,
    sqrt,
    stack,
    subtract,
    true_divide,
    where,
    zeros_like,
)
from ...lax import dtype_of as _dtype
from ...lax import is_tracer as _is_tracer
from ...lax import shape_of as _shape
from .arguments import arraylike, as_array
from .elementwise import conj
from .indexing import take, take_range
from .introspection import result_type
from .joining import concatenate
from .linalg import inv, lstsq
from .products import matmul, outer
from .reductions import sum_
from .sorting import argsort


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """``np.diff``: ``n``-th differences along ``axis`` (with optional prepend/append)."""
    a = arraylike(a)
    nd = len(_shape(a))
    axis = _check_axis(axis, nd, "diff")

    def edge(v):
        v = arraylike(v)
        if len(_shape(v)) == 0:
            shape = list(_shape(a))
            shape[axis] = 1
            v = broadcast_to(v, tuple(shape))
        return v

    if prepend is not None or append is not None:
        parts = ([edge(prepend)] if prepend is not None else []) + [a] + (
            [edge(append)] if append is not None else [])
        a = concatenate(parts, axis=axis)
    for _ in range(int(n)):
        m = _shape(a)[axis]
        a = subtract(take_range(a, axis, 1, m), take_range(a, axis, 0, m - 1))
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    parts = [diff(ravel(arraylike(ary)))]
    if to_begin is not None:
        parts.insert(0, ravel(arraylike(to_begin)))
    if to_end is not None:
        parts.append(ravel(arraylike(to_end)))
    return concatenate(parts, axis=0) if len(parts) > 1 else parts[0]


def _spacings(spacing, n, name):
    """Constant grid spacings along one axis: n - 1 differences."""
    if _is_tracer(spacing):
        raise UnsupportedOpError(f"{name}: traced spacings or coordinates are not supported "
                                 f"(at {user_location()}); pass them as constants")
    s = np.asarray(spacing, dtype=np.float64)
    if s.ndim == 0:
        return np.full(n - 1, float(s))
    if s.shape != (n,):
        raise ShapeMismatchError(f"{name}: coordinates of length {s.shape} do not match an axis of "
                                 f"length {n} (at {user_location()})")
    return np.diff(s)


def _along(coef, nd, axis, dtype):
    return coef.reshape((-1,) + (1,) * (nd - axis - 1)).astype(dtype)


def _gradient_axis(f, dx, axis, edge_order):
    nd, n = len(_shape(f)), _shape(f)[axis]

    def part(lo, hi):
        return take_range(f, axis, lo, hi)

    d1, d2, dt = dx[:-1], dx[1:], _dtype(f)
    inner = add(add(multiply(_along(-d2 / (d1 * (d1 + d2)), nd, axis, dt), part(0, n - 2)),
                    multiply(_along((d2 - d1) / (d1 * d2), nd, axis, dt), part(1, n - 1))),
                multiply(_along(d1 / (d2 * (d1 + d2)), nd, axis, dt), part(2, n)))
    if edge_order == 1:
        first = true_divide(subtract(part(1, 2), part(0, 1)), float(dx[0]))
        last = true_divide(subtract(part(n - 1, n), part(n - 2, n - 1)), float(dx[-1]))
    else:
        h1, h2 = float(dx[0]), float(dx[1])
        first = add(add(multiply(-(2 * h1 + h2) / (h1 * (h1 + h2)), part(0, 1)),
                        multiply((h1 + h2) / (h1 * h2), part(1, 2))),
                    multiply(-h1 / (h2 * (h1 + h2)), part(2, 3)))
        h1, h2 = float(dx[-2]), float(dx[-1])
        last = add(add(multiply(h2 / (h1 * (h1 + h2)), part(n - 3, n - 2)),
                       multiply(-(h1 + h2) / (h1 * h2), part(n - 2, n - 1))),
                   multiply((2 * h2 + h1) / (h2 * (h1 + h2)), part(n - 1, n)))
    return concatenate([first, inner, last], axis=axis)


def gradient(f, *varargs, axis=None, edge_order=1):
    """``np.gradient``: central differences inside, one-sided at the edges (``edge_order``
    1 or 2), for constant spacings or coordinates (uniform or not)."""
    f = arraylike(f)
    if _dtype(f).kind in "biu":
        f = astype(f, np.float64)
    nd = len(_shape(f))
    axes = normalize_axes(axis, nd, "gradient") if axis is not None else tuple(range(nd))
    if isinstance(axis, (int, np.integer)):
        axes = (_check_axis(axis, nd, "gradient"),)
    if len(varargs) == 0:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacings = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
    else:
        raise InvalidArgumentError(f"gradient: {len(varargs)} spacings for {len(axes)} axes "
                                   f"(at {user_location()})")
    if edge_order not in (1, 2):
        raise InvalidArgumentError(f"gradient: edge_order must be 1 or 2, got {edge_order!r}")
    out = []
    for ax, sp in zip(axes, spacings):
        n = _shape(f)[ax]
        if n < edge_order + 1:
            raise ShapeMismatchError(f"gradient: an axis of length {n} is too short for "
                                     f"edge_order={edge_order} (at {user_location()})")
        out.append(_gradient_axis(f, _spacings(sp, n, "gradient"), ax, edge_order))
    return out[0] if len(out) == 1 else tuple(out)


def interp(x, xp, fp, left=None, right=None, period=None):
    """``np.interp``: piecewise-linear interpolation, differentiable in ``x`` (the slope of
    the segment; at a knot, the right segment's), in ``fp`` and in the sample points ``xp``
    (which must increase, as NumPy's). Traced
    ``left``/``right`` are differentiable too. ``period`` (a constant) interpolates a
    periodic function as NumPy does: ``x`` and ``xp`` are taken modulo the period, ``xp``
    sorted, and ``left``/``right`` ignored. A segment narrower than ``spacing(eps)`` of the
    dtype is taken as a jump (its left value, no derivative), as JAX does: the slope across
    it would overflow.

    >>> dg.grad(lambda xp: np.interp(0.5, xp, np.array([0.0, 2.0])))(np.array([0.0, 1.0]))
    array([-1., -1.])
    >>> dg.grad(lambda x: np.interp(x, [0.0, 1.0, 3.0], [0.0, 2.0, 1.0], period=4))(7.5)
    array(-1.)
    """
    traced_knots = _is_tracer(xp)
    knots = arraylike(xp) if traced_knots else np.asarray(xp, dtype=np.float64)
    x, fp = arraylike(x), arraylike(fp)
    if len(_shape(knots)) != 1 or _shape(fp) != _shape(knots) or _shape(knots)[0] == 0:
        raise ShapeMismatchError(f"np.interp: xp and fp must be 1-D of the same length, got "
                                 f"{_shape(knots)} and {_shape(fp)} (at {user_location()})")
    if period is not None:
        x, knots, fp = _periodic_knots(x, knots, fp, period)
        left = right = None
        traced_knots = _is_tracer(knots)
    n = _shape(knots)[0]
    if n == 1:
        return broadcast_to(fp[0], _shape(x))
    first, last = (knots[0], knots[n - 1]) if traced_knots else (float(knots[0]),
                                                                  float(knots[-1]))
    # the segments' formula is evaluated at x clamped into the knots' range: outside it the
    # result is left/right, and an unclamped x would make huge t and overflowing derivatives
    # that the final where multiplies by zero (NaN)
    inside = where(less(x, first), first, where(greater(x, last), last, x))
    if _is_tracer(x) or traced_knots:  # each x's segment: how many inner knots are <= x
        below = greater_equal(expand_dims(x, -1), knots[1:-1])
        seg = sum_(astype(below, np.int64), axis=-1)
    else:
        seg = np.clip(np.searchsorted(knots, np.asarray(x), side="right") - 1, 0, n - 2)
    dt = result_type(x, fp, knots, 1.0)
    if traced_knots:
        x0, width = astype(knots[:-1], dt), astype(subtract(knots[1:], knots[:-1]), dt)
    else:
        x0, width = knots[:-1].astype(dt), np.diff(knots).astype(dt)
    x0_seg = take(x0, seg) if _is_tracer(seg) or _is_tracer(x0) else x0[seg]
    w_seg = take(width, seg) if _is_tracer(seg) or _is_tracer(width) else width[seg]
    jump = less_equal(absolute(w_seg), float(np.spacing(np.finfo(dt).eps)))
    t = true_divide(subtract(inside, x0_seg), where(jump, 1.0, w_seg))
    f0, f1 = take(fp, seg), take(fp, add(seg, 1))
    y = add(f0, multiply(t, subtract(f1, f0)))
    # across a jump: its left value, its right one at its right end (a repeated last knot)
    y = where(jump, where(greater_equal(inside, add(x0_seg, w_seg)), f1, f0), y)
    # the end values as 0-d views (fp[0] would copy a closed-over fp into a number, which a
    # cached program would keep after fp changed in place)
    lo = reshape(getitem(fp, slice(0, 1)), ()) if left is None else left
    hi = reshape(getitem(fp, slice(n - 1, n)), ()) if right is None else right
    y = where(less(x, first), lo, y)
    return where(greater(x, last), hi, y)


def _periodic_knots(x, knots, fp, period):
    """NumPy's reduction for ``interp(period=)``: x and the knots modulo the period, the
    knots sorted (fp with them) and extended by one period on each side."""
    if _is_tracer(period) or not np.isscalar(period) or not np.isreal(period):
        raise ArgumentTypeError(f"np.interp: period must be a constant real number, got "
                                f"{type(period).__name__} (at {user_location()})")
    if period == 0:
        raise InvalidArgumentError(f"np.interp: period must be a non-zero value (at "
                                   f"{user_location()})")
    period = abs(float(period))
    x = remainder(astype(x, np.float64), period)
    knots = remainder(knots, period)
    order = argsort(knots, kind="stable") if _is_tracer(knots) else np.argsort(knots,
                                                                               kind="stable")
    knots, fp = take(knots, order), take(fp, order)
    n = _shape(knots)[0]
    knots = concatenate([subtract(getitem(knots, slice(n - 1, n)), period), knots,
                         add(getitem(knots, slice(0, 1)), period)])
    fp = concatenate([getitem(fp, slice(n - 1, n)), fp, getitem(fp, slice(0, 1))])
    return x, knots, fp


def _convolve_full(a, v):
    """Every overlap of ``a`` with reversed ``v``: windows of ``a`` (zero-padded) gathered
    by constant indices, times ``v`` reversed (a matmul: bilinear in a and v)."""
    n, m = _shape(a)[0], _shape(v)[0]
    padded = pad(a, [(m - 1, m - 1)])
    windows = np.arange(n + m - 1)[:, None] + np.arange(m)[None, :]
    return matmul(getitem(padded, windows), flip(v, axis=0))


def _conv_mode(full, n, m, mode, name):
    short, long_ = min(n, m), max(n, m)
    if mode == "full":
        return full
    if mode == "same":
        start = (short - 1) // 2
        return getitem(full, slice(start, start + long_))
    if mode == "valid":
        return getitem(full, slice(short - 1, long_))
    raise InvalidArgumentError(f"{name}: mode must be 'full', 'same' or 'valid', got {mode!r} "
                               f"(at {user_location()})")


def _check_1d(name, *arrays):
    for a in arrays:
        if len(_shape(a)) != 1 or _shape(a)[0] == 0:
            raise ShapeMismatchError(f"{name}: inputs must be non-empty 1-D arrays, got shape "
                                     f"{_shape(a)} (at {user_location()})")


def convolve(a, v, mode="full"):
    """``np.convolve`` of 1-D arrays, differentiable in both."""
    a, v = arraylike(a), arraylike(v)
    _check_1d("convolve", a, v)
    n, m = _shape(a)[0], _shape(v)[0]
    full = _convolve_full(a, v) if n >= m else _convolve_full(v, a)
    return _conv_mode(full, n, m, mode, "convolve")


def correlate(a, v, mode="valid"):
    """``np.correlate`` of 1-D arrays: ``convolve(a, conj(v)[::-1])``; when ``v`` is the
    longer input NumPy reverses the result, and so does this."""
    a, v = arraylike(a), arraylike(v)
    _check_1d("correlate", a, v)
    n, m = _shape(a)[0], _shape(v)[0]
    if n >= m:
        return convolve(a, flip(conj(v), axis=0), mode)
    return flip(conj(convolve(v, flip(conj(a), axis=0), mode)), axis=0)


def polyval(p, x):
    """``np.polyval``: Horner's scheme in NumPy's order (``y = y * x + p[i]`` from
    ``zeros_like(x)``), so values and dtypes are NumPy's; differentiable in the
    coefficients ``p`` (a 2-D ``p`` evaluates one polynomial per column) and in ``x``.

    >>> dg.grad(lambda x: np.polyval([1.0, 2.0, 3.0], x))(np.array(2.0))
    array(6.)
    """
    p, x = as_array(p), as_array(x)
    if len(_shape(p)) == 0:
        raise ArgumentTypeError(f"np.polyval: p must be a 1-D sequence of coefficients, got "
                                f"a 0-d value (at {user_location()})")
    y = zeros_like(x)
    for i in range(_shape(p)[0]):
        y = add(multiply(y, x), getitem(p, i))
    return y


def vander(x, N=None, increasing=False):
    """``np.vander``: the powers of ``x`` as columns (decreasing unless ``increasing``), in
    NumPy's dtype (``x``'s promoted with int: float32 gives float64) and NumPy's products
    (each power the previous one times ``x``); differentiable in ``x``.

    >>> dg.jacfwd(lambda x: np.vander(x, 3))(np.array([2.0]))[0, :, 0]
    array([4., 1., 0.])
    """
    x = as_array(x)
    if len(_shape(x)) != 1:
        raise ShapeMismatchError(f"np.vander: x must be a one-dimensional array or sequence, "
                                 f"got shape {_shape(x)} (at {user_location()})")
    n = _shape(x)[0]
    N = n if N is None else operator.index(N)
    if N < 0:
        raise InvalidArgumentError(f"np.vander: N={N} must be non-negative "
                                   f"(at {user_location()})")
    dt = np.promote_types(_dtype(x), int)
    if N == 0:
        return np.empty((n, 0), dtype=dt)
    x = astype(x, dt)
    columns = [ones_like(x)]
    for _ in range(1, N):
        columns.append(x if len(columns) == 1 else multiply(columns[-1], x))
    v = stack(columns, axis=1)
    return v if increasing else flip(v, axis=1)


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """``np.polyfit``: the least-squares polynomial of degree ``deg`` through ``(x, y)``
    (``y`` 1-D or one fit per column), computed as NumPy's: the Vandermonde matrix (times
    the weights ``w``) with its columns scaled to unit norm, solved by ``np.linalg.lstsq``
    (a pseudo-inverse), the coefficients scaled back; ``full=True`` adds the residuals,
    rank, singular values and ``rcond``, ``cov=True`` (or ``"unscaled"``) the covariance.
    Differentiable in ``x``, ``y`` and ``w`` where the matrix keeps full rank; the rank is
    traced, so NumPy's ``RankWarning`` is not given.

    >>> x = np.array([0.0, 1.0, 2.0, 3.0])
    >>> dg.jacfwd(lambda y: np.polyfit(x, y, 1))(2.0 * x + 1.0).round(2)  # slope, intercept
    array([[-0.3, -0.1,  0.1,  0.3],
           [ 0.7,  0.4,  0.1, -0.2]])
    """
    order = int(deg) + 1  # NumPy's int(deg): a float degree (2.0) is accepted
    x, y = as_array(x) + 0.0, as_array(y) + 0.0
    if deg < 0:
        raise InvalidArgumentError(f"np.polyfit: expected deg >= 0, got {deg} "
                                   f"(at {user_location()})")
    if len(_shape(x)) != 1 or _shape(x)[0] == 0:
        raise ArgumentTypeError(f"np.polyfit: expected a non-empty 1-D vector for x, got shape "
                                f"{_shape(x)} (at {user_location()})")
    if len(_shape(y)) not in (1, 2) or _shape(y)[0] != _shape(x)[0]:
        raise ArgumentTypeError(f"np.polyfit: expected a 1-D or 2-D y as long as x, got "
                                f"shapes {_shape(x)} and {_shape(y)} (at {user_location()})")
    if rcond is None:
        rcond = _shape(x)[0] * np.finfo(_dtype(x)).eps
    lhs, rhs = vander(x, order), y
    if w is not None:
        w = as_array(w) + 0.0
        if _shape(w) != _shape(x):
            raise ArgumentTypeError(f"np.polyfit: expected 1-D weights as long as y, got "
                                    f"shape {_shape(w)} (at {user_location()})")
        lhs = lhs * w[:, None]
        rhs = rhs * (w[:, None] if len(_shape(rhs)) == 2 else w)
    scale = sqrt(sum_(lhs * lhs, axis=0))
    lhs = lhs / scale
    c, resids, rank, s = lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if full:
        return c, resids, rank, s, rcond
    if not cov:
        return c
    vbase = inv(matmul(lhs.T, lhs)) / outer(scale, scale)
    if cov == "unscaled":
        fac = 1.0
    elif _shape(x)[0] <= order:
        raise InvalidArgumentError("np.polyfit: the number of data points must exceed order "
                                   f"to scale the covariance matrix (at {user_location()})")
    else:
        fac = resids / (_shape(x)[0] - order)
    return c, vbase * fac if len(_shape(y)) == 1 else vbase[:, :, None] * fac


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """``np.trapezoid`` (NumPy 2's name of ``trapz``): the trapezoidal rule along ``axis``
    with sample points ``x`` (1-D, or of ``y``'s shape) or spacing ``dx``, computed as
    NumPy's (``sum(d * (y[1:] + y[:-1]) / 2.0)``); differentiable in ``y``, ``x`` and ``dx``.

    >>> dg.grad(lambda y: np.trapezoid(y, dx=0.5))(np.ones(3))
    array([0.25, 0.5 , 0.25])
    """
    y = as_array(y)
    nd = len(_shape(y))
    axis = _check_axis(axis, nd, "trapezoid")
    if x is None:
        d = dx
    else:
        x = as_array(x)
        if len(_shape(x)) == 1:
            d = diff(x)
            shape = [1] * nd
            shape[axis] = _shape(d)[0]
            d = reshape(d, tuple(shape))
        else:
            d = diff(x, axis=axis)
    n = _shape(y)[axis]
    heights = add(take_range(y, axis, 1, n), take_range(y, axis, 0, n - 1))
    return sum_(true_divide(multiply(d, heights), 2.0), axis=axis)


trapz = trapezoid  # NumPy before 2.4 (and CuPy) also spell it trapz


def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    """``np.unwrap``: jumps between neighbours larger than ``discont`` (default
    ``period / 2``) taken off by multiples of ``period``, as NumPy's (the same boundary
    rule at exactly half a period). The correction is piecewise constant: the derivative is
    ``p``'s own (and ``period``'s multiple, for a traced ``period``).

    >>> dg.grad(lambda p: np.sum(np.unwrap(p) ** 2))(np.array([0.0, 6.0]))
    array([ 0.        , -0.56637061])
    """
    p = as_array(p)
    nd = len(_shape(p))
    axis = _check_axis(axis, nd, "unwrap")
    dd = diff(p, axis=axis)
    if discont is None:
        discont = true_divide(period, 2) if _is_tracer(period) else period / 2
    dtype = result_type(dd, period)
    if dtype.kind in "iu":
        if _is_tracer(period):
            raise ArgumentTypeError(f"np.unwrap: a traced period needs floating-point phases, "
                                    f"got {_dtype(p)} (at {user_location()})")
        interval_high, rem = divmod(period, 2)
        boundary_ambiguous = rem == 0
    else:
        interval_high = true_divide(period, 2) if _is_tracer(period) else period / 2
        boundary_ambiguous = True
    interval_low = negative(interval_high) if _is_tracer(interval_high) else -interval_high
    ddmod = add(remainder(subtract(dd, interval_low), period), interval_low)
    if boundary_ambiguous:  # NumPy: at exactly -period/2, the sign of the jump
        ddmod = where(logical_and(equal(ddmod, interval_low), greater(dd, 0)),
                      interval_high, ddmod)
    ph_correct = where(less(absolute(dd), discont), 0, subtract(ddmod, dd))
    n = _shape(p)[axis]
    rest = add(take_range(p, axis, 1, n), cumsum(ph_correct, axis=axis))
    return concatenate([astype(take_range(p, axis, 0, min(n, 1)), dtype),
                        astype(rest, dtype)], axis=axis)
