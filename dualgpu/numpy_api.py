"""NumPy-compatible functions over traced values, written in registry primitives.

This is the namespace a traced function sees in place of ``numpy``/``cupy`` (through
:mod:`dualgpu.namespace`). Every function also works on concrete arrays, where it computes
immediately. Rules are written with these functions, so that transforms compose.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from .backends import namespace_of
from .core.axes import check_axis as _check_axis
from .core.axes import normalize_axes
from .core.indexing import key_to_python as _key_to_python
from .core.trace import Tracer
from .errors import AxisError as _AxisError
from .errors import DualgpuError, UnsupportedOpError, user_location
from .ops import decompositions as _dec
from .ops import elementwise as _ew
from .ops import linalg as _la
from .ops import reductions as _red
from .ops import shape as _sh


def _is_tracer(x) -> bool:
    return isinstance(x, Tracer)


def _shape(x) -> tuple:
    return tuple(np.shape(x)) if not _is_tracer(x) else x.shape


def _dtype(x):
    if _is_tracer(x) or hasattr(x, "dtype"):
        return x.dtype
    return np.result_type(x)


def _xp_like(*xs):
    for x in xs:
        if _is_tracer(x):
            return x._builder.xp
    return namespace_of(xs)


def _is_literal(x, value) -> bool:
    if _is_tracer(x):
        return x.fill_value is not None and x.fill_value == value
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == value


def _is_zero_of_sign(x, negative: bool) -> bool:
    """``x`` is a zero literal or fill whose sign is ``negative`` (ints count as +0). Only
    ``-0.0`` is neutral for ``+`` (``-0.0 + 0.0`` is ``0.0``) and only ``+0`` for ``-``."""
    v = x.fill_value if _is_tracer(x) else x
    if not isinstance(v, (int, float)) or isinstance(v, bool) or v != 0:
        return False
    return (math.copysign(1.0, v) < 0) == negative


def _passes_through(x, other) -> bool:
    """``x`` can stand for ``op(x, other)`` when other is a neutral fill: same shape/dtype."""
    if not _is_tracer(x) or x.dtype.kind not in "fc":
        return False
    if _is_tracer(other):
        return (np.broadcast_shapes(x.shape, other.shape) == x.shape
                and np.result_type(x.dtype, other.dtype) == x.dtype)
    return True




def _unsupported_kwargs(name, kwargs):
    bad = {k: v for k, v in kwargs.items() if v is not None and k not in ("casting", "order")}
    if bad:
        raise UnsupportedOpError(
            f"np.{name}: argument(s) {', '.join(bad)} are not supported on traced values "
            f"(at {user_location()})")


def _elementwise_function(prim, name):
    def f(*args, out=None, where=None, dtype=None, **kwargs):
        _unsupported_kwargs(name, {"out": out, "where": where, **kwargs})
        result = prim.bind(*args)
        return result if dtype is None else astype(result, dtype)

    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}`` (NumPy semantics, broadcasting)."
    return f


for _name, _prim in _ew.ELEMENTWISE.items():
    if _name not in ("convert_element_type", "stop_gradient", "where", "logistic", "polygamma",
                     "real", "imag", "conj"):
        globals()[_name] = _elementwise_function(_prim, _name)


# --------------------------------------------------------------------------- arithmetic with
# algebraic shortcuts (x*1, x+0) so rules written naturally produce lean graphs.
def _fill_arithmetic(op, x, y):
    """Fold ``op`` when one operand is a fill tracer and the other a Python scalar or fill:
    the result is again a fill (no equation on the data), e.g. 0.25 * ones -> 0.25-fill."""
    fx, fy = _is_tracer(x) and x.fill_value is not None, _is_tracer(y) and y.fill_value is not None
    if not (fx or fy):
        return None
    if (_is_tracer(x) and not fx) or (_is_tracer(y) and not fy):
        return None
    if not builtins.all(_is_tracer(a) or isinstance(a, (int, float)) and not isinstance(a, bool)
               for a in (x, y)):
        return None
    base = x if fx else y
    if fx and fy and x.shape != y.shape:
        return None
    value = op(x.fill_value if fx else x, y.fill_value if fy else y)
    if base.dtype.kind not in "fc" or isinstance(value, complex) and base.dtype.kind != "c":
        return None
    return _ew.fill_like.bind(base, value=float(value) if base.dtype.kind == "f" else value)


def _fold_fill(x, other):
    """Replace a fill tracer by its scalar when the other operand alone fixes the shape."""
    if _is_tracer(x) and x.fill_value is not None and _passes_through(other, x):
        return x.fill_value
    return x


def add(x, y, out=None, **kw):
    _unsupported_kwargs("add", {"out": out, **kw})
    if _is_zero_of_sign(y, True) and _passes_through(x, y):
        return x
    if _is_zero_of_sign(x, True) and _passes_through(y, x):
        return y
    folded = _fill_arithmetic(lambda a, b: a + b, x, y)
    if folded is not None:
        return folded
    return _ew.add.bind(_fold_fill(x, y), _fold_fill(y, x))


def subtract(x, y, out=None, **kw):
    _unsupported_kwargs("subtract", {"out": out, **kw})
    if _is_zero_of_sign(y, False) and _passes_through(x, y):
        return x
    folded = _fill_arithmetic(lambda a, b: a - b, x, y)
    if folded is not None:
        return folded
    return _ew.subtract.bind(_fold_fill(x, y), _fold_fill(y, x))


def multiply(x, y, out=None, **kw):
    _unsupported_kwargs("multiply", {"out": out, **kw})
    if _is_literal(y, 1) and _passes_through(x, y):
        return x
    if _is_literal(x, 1) and _passes_through(y, x):
        return y
    if _is_literal(x, -1) and _passes_through(y, x):
        return negative(y)  # noqa: F821
    if _is_literal(y, -1) and _passes_through(x, y):
        return negative(x)  # noqa: F821
    folded = _fill_arithmetic(lambda a, b: a * b, x, y)
    if folded is not None:
        return folded
    return _ew.multiply.bind(_fold_fill(x, y), _fold_fill(y, x))


def true_divide(x, y, out=None, **kw):
    _unsupported_kwargs("true_divide", {"out": out, **kw})
    if _is_literal(y, 1) and _passes_through(x, y):
        return x
    folded = _fill_arithmetic(lambda a, b: a / b, x, y)
    if folded is not None:
        return folded
    return _ew.true_divide.bind(_fold_fill(x, y), _fold_fill(y, x))


def power(x, y, out=None, **kw):
    _unsupported_kwargs("power", {"out": out, **kw})
    if _is_literal(y, 1) and _is_tracer(x):
        return x
    if _is_literal(y, 2) and _is_tracer(x):
        return _ew.multiply.bind(x, x)
    return _ew.power.bind(x, y)


divide = true_divide
abs = absolute = globals()["absolute"]  # noqa: A001
fabs = absolute
pow = power  # noqa: A001


def where(condition, x=None, y=None):
    """``np.where(c, x, y)``; the one-argument form (data-dependent shape) is refused."""
    if x is None or y is None:
        raise UnsupportedOpError(
            f"np.where(condition) with one argument has a data-dependent shape "
            f"(at {user_location()}); use the three-argument form")
    return _ew.where.bind(condition, x, y)


def astype(x, dtype, copy=True):
    dtype = np.dtype(dtype)
    if _dtype(x) == dtype:
        return x
    return _ew.convert_element_type.bind(x, dtype=dtype.name)


def stop_gradient(x):
    """The value of ``x``, treated as a constant by every derivative."""
    return _ew.stop_gradient.bind(x)


def logistic(x):
    """The logistic sigmoid ``1 / (1 + exp(-x))``."""
    return _ew.logistic.bind(x)


expit = logistic
erf, erfc, gammaln, digamma = (globals()[n] for n in ("erf", "erfc", "gammaln", "digamma"))


def polygamma(n, x):
    """``scipy.special.polygamma(n, x)`` for a static integer order ``n``."""
    return _ew.polygamma.bind(x, n=int(n))


def round(a, decimals=0, out=None):  # noqa: A001
    """``np.round``: halves to even, as NumPy; its derivative is zero."""
    _unsupported_kwargs("round", {"out": out})
    if decimals == 0:
        return rint(a)  # noqa: F821
    scale = 10.0 ** decimals
    return true_divide(rint(multiply(a, scale)), scale)  # noqa: F821


around = round_ = round


def logical_xor(x, y):
    return not_equal(astype(x, bool), astype(y, bool))  # noqa: F821


def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kw):  # noqa: A002
    _unsupported_kwargs("clip", {"out": out, **kw})
    a_min = min if a_min is None else a_min  # NumPy 2 also spells the bounds min=, max=
    a_max = max if a_max is None else a_max
    r = a
    if a_min is not None:
        r = where(less(r, a_min), a_min, r)  # noqa: F821
    if a_max is not None:
        r = where(greater(r, a_max), a_max, r)  # noqa: F821
    return astype(r, _dtype(a)) if _dtype(r) != _dtype(a) else r


def _complex_input(x) -> bool:
    return _dtype(x).kind == "c"


def conj(x, out=None, **kw):
    """``np.conj``: the identity on real values."""
    _unsupported_kwargs("conj", {"out": out, **kw})
    if not _complex_input(x):
        return x
    return _ew.conj.bind(x) if _is_tracer(x) else _xp_like(x).conj(x)


conjugate = conj


def real(x):
    """``np.real``: the identity on real values."""
    if not _complex_input(x):
        return x
    return _ew.real.bind(x) if _is_tracer(x) else _xp_like(x).real(x)


def imag(x):
    """``np.imag``: zeros on real values (a constant: no derivative flows)."""
    if not _complex_input(x):
        return zeros_like(x) if _is_tracer(x) else _xp_like(x).zeros_like(x)
    return _ew.imag.bind(x) if _is_tracer(x) else _xp_like(x).imag(x)


def angle(z, deg=False):
    """``np.angle``: ``arctan2(imag(z), real(z))``; on real values 0 or pi, a constant."""
    if _complex_input(z):
        r = arctan2(imag(z), real(z))  # noqa: F821
    else:
        if _dtype(z).kind in "biu":
            z = astype(z, np.float64)
        r = arctan2(zeros_like(z), stop_gradient(z) if _is_tracer(z) else z)  # noqa: F821
    return multiply(r, 180.0 / math.pi) if deg else r


def sinc(x):
    """``np.sinc``: ``sin(pi x) / (pi x)``, 1 at 0. Near 0 (``|pi x| < 0.1``) its Maclaurin
    polynomial (degree 10, exact to rounding there) is used, so that the derivatives at 0
    are right (0, -pi**2/3, ..., to order 10) rather than NaN, as JAX's are."""
    if _dtype(x).kind in "biu":
        x = astype(x, np.float64)
    if not _is_tracer(x):
        return _xp_like(x).sinc(x)
    px = multiply(x, math.pi)
    small = less(absolute(px), 0.1)  # noqa: F821
    # the polynomial part sees only small arguments, the quotient only large ones
    ps = where(small, px, 0.0)
    p2 = multiply(ps, ps)
    poly = 1.0
    for k in (10, 8, 6, 4, 2):  # 1 - u/3! + u^2/5! - ... in u = (pi x)^2, Horner's form
        poly = subtract(1.0, true_divide(multiply(p2, poly), float(k * (k + 1))))
    pl = where(small, 1.0, px)
    return where(small, poly, true_divide(sin(pl), pl))  # noqa: F821


def _abs2(x):
    """``|x|**2`` elementwise: ``x * x`` on real values, ``real(x * conj(x))`` on complex."""
    if _complex_input(x):
        return real(multiply(x, conj(x)))
    return multiply(x, x)


def _safe_sqrt(v):
    """``sqrt(v)`` whose derivatives (of any order) are 0 where ``v == 0`` rather than
    ``inf * 0 = nan``: for norm-like values (``std``, ``linalg.norm``) ``v == 0`` is the kink
    of a norm, and 0 is the subgradient taken there. Concrete values: plain ``sqrt``."""
    if not _is_tracer(v):
        return sqrt(v)  # noqa: F821
    zero = equal(v, 0)  # noqa: F821
    return where(zero, 0.0, sqrt(where(zero, 1.0, v)))  # noqa: F821


# --------------------------------------------------------------------------- reductions
def _reduce(prim, a, axis, keepdims, name=None):
    nd = len(_shape(a))
    axes = normalize_axes(axis, nd, name or prim.name)
    if not axes:
        r = a
    else:
        r = prim.bind(a, axes=axes)
    if keepdims:
        r = reshape(r, tuple(1 if i in axes else d for i, d in enumerate(_shape(a))))
    return r


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    _unsupported_kwargs("sum", {"out": out, "initial": initial, "where": where})
    if dtype is not None:
        a = astype(a, dtype)
    return _reduce(_red.reduce_sum, a, axis, keepdims, "sum")


def mean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    _unsupported_kwargs("mean", {"out": out, "where": where})
    if dtype is not None:
        a = astype(a, dtype)
    elif _dtype(a).kind in "biu":
        a = astype(a, np.float64)
    axes = normalize_axes(axis, len(_shape(a)), "mean")
    n = int(np.prod([_shape(a)[i] for i in axes], dtype=np.int64))
    return true_divide(sum(a, axis=axis, keepdims=keepdims), float(n))


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    _unsupported_kwargs("max", {"out": out, "initial": initial, "where": where})
    return _reduce(_red.reduce_max, a, axis, keepdims, "max")


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    _unsupported_kwargs("min", {"out": out, "initial": initial, "where": where})
    return _reduce(_red.reduce_min, a, axis, keepdims, "min")


amax, amin = max, min


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _unsupported_kwargs("prod", {"out": out, "initial": initial, "where": where})
    if dtype is not None:
        a = astype(a, dtype)
    return _reduce(_red.reduce_prod, a, axis, keepdims, "prod")


def _ddof(name, ddof, correction):
    if correction is None:
        return ddof
    if ddof != 0:
        raise DualgpuError(f"{name}: ddof and correction cannot both be given "
                           f"(at {user_location()})")
    return correction


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, *,
        correction=None, mean=None, **kw):
    """``np.var``; complex values give the (real) variance of their modulus, as NumPy's.

    ``ddof`` at least the number of reduced elements is refused: NumPy returns inf or nan
    with a warning there, and no derivative exists."""
    _unsupported_kwargs("var", {"out": out, "where": where, "mean": mean, **kw})
    ddof = _ddof("var", ddof, correction)
    if dtype is not None:
        a = astype(a, dtype)
    elif _dtype(a).kind in "biu":
        a = astype(a, np.float64)
    axes = normalize_axes(axis, len(_shape(a)), "var")
    n = int(np.prod([_shape(a)[i] for i in axes], dtype=np.int64))
    if n - ddof <= 0:
        raise DualgpuError(
            f"var/std: ddof={ddof} with {n} element(s) per result leaves no degrees of "
            f"freedom: NumPy returns inf or nan (with a RuntimeWarning) and there is no "
            f"derivative; dualgpu refuses it (at {user_location()}). Use ddof < {n}.")
    centered = subtract(a, globals()["mean"](a, axis=axis, keepdims=True))
    return true_divide(sum(_abs2(centered), axis=axis, keepdims=keepdims), float(n - ddof))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, *,
        correction=None, mean=None, **kw):
    """``np.std``: ``sqrt(var)``, with gradient (and HVP) 0 where the variance is 0 (one
    element, or all equal: the kink of a norm) instead of NaN."""
    return _safe_sqrt(var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims,
                          where=where, correction=correction, mean=mean, **kw))


def cumsum(a, axis=None, dtype=None, out=None):
    _unsupported_kwargs("cumsum", {"out": out})
    if dtype is not None:
        a = astype(a, dtype)
    if axis is None:
        a, axis = ravel(a), 0
    return _red.cumsum.bind(a, axis=_check_axis(axis, len(_shape(a)), "cumsum"))


def cumprod(a, axis=None, dtype=None, out=None):
    _unsupported_kwargs("cumprod", {"out": out})
    if dtype is not None:
        a = astype(a, dtype)
    if axis is None:
        a, axis = ravel(a), 0
    return _red.cumprod.bind(a, axis=_check_axis(axis, len(_shape(a)), "cumprod"))


def all(a, axis=None, keepdims=False):  # noqa: A001
    return equal(min(astype(a, bool), axis=axis, keepdims=keepdims), True)  # noqa: F821


def any(a, axis=None, keepdims=False):  # noqa: A001
    return equal(max(astype(a, bool), axis=axis, keepdims=keepdims), True)  # noqa: F821


# --------------------------------------------------------------------------- shapes
def reshape(a, newshape=None, order="C", shape=None):
    if shape is not None:
        newshape = shape
    if order not in ("C", None):
        raise UnsupportedOpError(f"reshape(order={order!r}) is not supported on traced values")
    if isinstance(newshape, (int, np.integer)):
        newshape = (int(newshape),)
    newshape = [int(d) for d in newshape]
    size = int(np.prod(_shape(a), dtype=np.int64))
    if -1 in newshape:
        known = int(np.prod([d for d in newshape if d != -1], dtype=np.int64))
        newshape[newshape.index(-1)] = size // known if known else 0
    newshape = tuple(newshape)
    if newshape == _shape(a):
        return a
    return _sh.reshape.bind(a, new_shape=newshape)


def ravel(a, order="C"):
    return reshape(a, (-1,), order=order)


flatten = ravel


def copy(a, order="K"):
    return a


def array(a, dtype=None, copy=True, **kw):
    if _is_tracer(a):
        return a if dtype is None else astype(a, dtype)
    if isinstance(a, (list, tuple)) and builtins.any(_is_tracer(x) for x in a):
        return stack([asarray(x) for x in a])
    return np.array(a, dtype=dtype)


def asarray(a, dtype=None, **kw):
    return array(a, dtype=dtype)


def transpose(a, axes=None):
    nd = len(_shape(a))
    if axes is None:
        perm = tuple(range(nd))[::-1]
    else:
        perm = tuple(_check_axis(i, nd, "transpose") for i in axes)
        if sorted(perm) != list(range(nd)):
            raise DualgpuError(f"transpose: axes {tuple(axes)} are not a permutation of the "
                               f"{nd} axes of the array (at {user_location()})")
    if perm == tuple(range(nd)):
        return a
    return _sh.transpose.bind(a, perm=perm)


def swapaxes(a, axis1, axis2):
    nd = len(_shape(a))
    perm = list(range(nd))
    i, j = _check_axis(axis1, nd, "swapaxes"), _check_axis(axis2, nd, "swapaxes")
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


def moveaxis(a, source, destination):
    nd = len(_shape(a))
    src = [_check_axis(s, nd, "moveaxis")
           for s in (source if isinstance(source, (tuple, list)) else [source])]
    dst = [_check_axis(d, nd, "moveaxis") for d in (
        destination if isinstance(destination, (tuple, list)) else [destination])]
    if len(src) != len(dst):
        raise DualgpuError("moveaxis: source and destination must have the same number of "
                           f"elements (at {user_location()})")
    for name, axes in (("source", src), ("destination", dst)):
        if len(set(axes)) != len(axes):
            raise _AxisError(f"moveaxis: repeated axis in `{name}` argument "
                             f"(at {user_location()})")
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


def expand_dims(a, axis):
    shape = list(_shape(a))
    axes = axis if isinstance(axis, (tuple, list)) else [axis]
    nd = len(shape) + len(axes)
    for ax in normalize_axes(axes, nd, "expand_dims"):
        shape.insert(ax, 1)
    return reshape(a, tuple(shape))


def squeeze(a, axis=None):
    shape = _shape(a)
    if axis is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    else:
        axes = normalize_axes(axis, len(shape), "squeeze")
        for i in axes:
            if shape[i] != 1:
                raise DualgpuError(f"squeeze: axis {i} of shape {shape} is not of size 1")
    return reshape(a, tuple(d for i, d in enumerate(shape) if i not in axes))


def broadcast_to(a, shape):
    shape = tuple(int(d) for d in shape)
    if _shape(a) == shape:
        return a
    if not _is_tracer(a):
        return _xp_like(a).broadcast_to(a, shape)
    return _sh.broadcast_to.bind(a, shape=shape)


def broadcast_arrays(*args):
    shape = np.broadcast_shapes(*[_shape(a) for a in args])
    return [broadcast_to(a, shape) for a in args]


def atleast_1d(a):
    return reshape(a, (1,)) if len(_shape(a)) == 0 else a


def atleast_2d(a):
    s = _shape(a)
    return reshape(a, (1,) * (2 - len(s)) + s) if len(s) < 2 else a


def concatenate(arrays, axis=0, out=None, dtype=None):
    _unsupported_kwargs("concatenate", {"out": out})
    arrays = [asarray(a) if not _is_tracer(a) else a for a in arrays]
    if axis is None:
        arrays, axis = [ravel(a) for a in arrays], 0
    nd = len(_shape(arrays[0]))
    if nd == 0:
        raise DualgpuError(f"concatenate: zero-dimensional arrays cannot be concatenated "
                           f"(at {user_location()})")
    axis = _check_axis(axis, nd, "concatenate")
    r = _sh.concatenate.bind(*arrays, axis=axis) if len(arrays) > 1 else arrays[0]
    return r if dtype is None else astype(r, dtype)


def stack(arrays, axis=0, out=None):
    arrays = list(arrays)
    if not arrays:
        raise DualgpuError(f"stack: need at least one array to stack (at {user_location()})")
    axis = _check_axis(axis, len(_shape(arrays[0])) + 1, "stack")
    return concatenate([expand_dims(a, axis) for a in arrays], axis=axis, out=out)


def hstack(arrays):
    arrays = [atleast_1d(a) for a in arrays]
    return concatenate(arrays, axis=0 if len(_shape(arrays[0])) == 1 else 1)


def vstack(arrays):
    return concatenate([atleast_2d(a) for a in arrays], axis=0)


def split(a, indices_or_sections, axis=0):
    nd = len(_shape(a))
    axis = _check_axis(axis, nd, "split")
    n = _shape(a)[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if n % k:
            raise DualgpuError(f"split: axis of length {n} does not divide into {k} sections")
        bounds = [i * (n // k) for i in range(k + 1)]
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    return [getitem(a, (slice(None),) * axis + (slice(lo, hi),))
            for lo, hi in zip(bounds[:-1], bounds[1:])]


def flip(a, axis=None):
    nd = len(_shape(a))
    axes = normalize_axes(axis, nd, "flip")
    return getitem(a, tuple(slice(None, None, -1) if i in axes else slice(None)
                            for i in range(nd)))


def tile(a, reps):
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    shape = _shape(a)
    nd = builtins.max(len(shape), len(reps))
    shape = (1,) * (nd - len(shape)) + shape
    reps = (1,) * (nd - len(reps)) + reps
    a = reshape(a, shape)
    expanded = reshape(a, tuple(x for d in shape for x in (1, d)))
    big = broadcast_to(expanded, tuple(x for r, d in zip(reps, shape) for x in (r, d)))
    return reshape(big, tuple(r * d for r, d in zip(reps, shape)))


def repeat(a, repeats, axis=None):
    if axis is None:
        a, axis = ravel(a), 0
    n = _shape(a)[_check_axis(axis, len(_shape(a)), "repeat")]
    try:
        idx = np.repeat(np.arange(n), repeats)
    except ValueError as e:
        raise DualgpuError(f"repeat: {e} (repeats={repeats!r}, at {user_location()})") from None
    return take(a, idx, axis=axis)


def pad(array, pad_width, mode="constant", constant_values=0):
    if mode != "constant":
        raise UnsupportedOpError(f"np.pad(mode={mode!r}) is not supported; use 'constant'")
    nd = len(_shape(array))
    if nd == 0:  # NumPy pads nothing in a 0-d array
        return array
    try:
        pw = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (nd, 2))
    except ValueError:
        raise DualgpuError(f"pad: pad_width {pad_width!r} does not fit an array of rank {nd} "
                           f"(at {user_location()})") from None
    pw = tuple((int(lo), int(hi)) for lo, hi in pw)
    return _sh.pad.bind(array, pad_width=pw, value=float(constant_values))


def full_like(a, fill_value, dtype=None, **kw):
    if _is_tracer(a):
        if dtype is not None and np.dtype(dtype) != a.dtype:
            a = astype(a, dtype)
        return _ew.fill_like.bind(a, value=fill_value)
    return _xp_like(a).full(_shape(a), fill_value, dtype=dtype or _dtype(a))


def zeros_like(a, dtype=None, **kw):
    return full_like(a, 0.0 if np.dtype(dtype or _dtype(a)).kind in "fc" else 0, dtype)


def ones_like(a, dtype=None, **kw):
    return full_like(a, 1.0 if np.dtype(dtype or _dtype(a)).kind in "fc" else 1, dtype)


def eye(n, m=None, k=0, dtype=float, like=None):
    xp = _xp_like(like) if like is not None else np
    return xp.eye(n, m, k, dtype=dtype)


# --------------------------------------------------------------------------- indexing
def _is_bool_mask(k) -> bool:
    """A concrete boolean index array (NumPy or CuPy: no host conversion of CuPy arrays)."""
    if _is_tracer(k) or isinstance(k, (slice, type(None), type(Ellipsis))) or np.ndim(k) == 0:
        return False
    dtype = k.dtype if hasattr(k, "dtype") else np.asarray(k).dtype
    return dtype.kind == "b"


def _normalize_key(x, key):
    if not isinstance(key, tuple):
        key = (key,)
    if builtins.any(isinstance(k, (bool, np.bool_)) for k in key):
        # a Python/NumPy bool scalar is a 0-d mask, not the integer 0 or 1: True adds an
        # axis (like None); False selects nothing
        if not builtins.all(bool(k) for k in key if isinstance(k, (bool, np.bool_))):
            raise UnsupportedOpError(
                f"indexing with a False scalar (an empty selection) at {user_location()} is "
                "not supported on traced values")
        key = tuple(None if isinstance(k, (bool, np.bool_)) else k for k in key)
    shape = _shape(x)
    n_consumed = builtins.sum(
        1 if k is not None and k is not Ellipsis else 0 for k in key)
    # boolean masks consume as many dims as they have
    n_consumed += builtins.sum(len(np.shape(k)) - 1 for k in key if _is_bool_mask(k))
    if builtins.sum(1 for k in key if k is Ellipsis) > 1:
        raise DualgpuError("an index can only have a single ellipsis ('...')")
    out, arrays = [], []
    for k in key:
        if k is Ellipsis:
            out.extend([("slice", None, None, None)] * (len(shape) - n_consumed))
        elif k is None:
            out.append(None)
        elif isinstance(k, slice):
            out.append(("slice", k.start, k.stop, k.step))
        elif isinstance(k, (int, np.integer)):
            out.append(("int", int(k)))
        elif _is_tracer(k):
            if k.dtype == bool:
                raise UnsupportedOpError(
                    f"indexing with a traced boolean mask at {user_location()} has a "
                    "data-dependent shape; use np.where(mask, x, 0) instead")
            if k.dtype.kind not in "iu":
                raise DualgpuError(f"index arrays must be integers, got {k.dtype}")
            out.append(("array", len(arrays)))
            arrays.append(k)
        else:
            arr = k if hasattr(k, "dtype") else np.asarray(k)
            if arr.dtype == bool:
                for nz in arr.nonzero():
                    out.append(("array", len(arrays)))
                    arrays.append(nz)
            else:
                if arr.dtype.kind not in "iu":
                    raise DualgpuError(f"index arrays must be integers, got {arr.dtype}")
                out.append(("array", len(arrays)))
                arrays.append(arr)
    return tuple(out), arrays


def getitem(x, key):
    """``x[key]``: slices (negative steps too), ints, None, ``...``, integer and constant
    boolean arrays."""
    nkey, arrays = _normalize_key(x, key)
    if builtins.all(e is not None and e[0] == "slice" and e[1:] == (None, None, None)
                    for e in nkey) and len(nkey) <= len(_shape(x)):
        return x
    if not _is_tracer(x):
        return x[_key_to_python(nkey, arrays)]
    if arrays and not builtins.any(_is_tracer(i) for i in arrays):
        _check_constant_indices(x, nkey, arrays)
    return _sh.getitem.bind(x, *arrays, key=nkey)


def _check_constant_indices(x, nkey, arrays):
    """Constant index arrays are known while tracing: check their bounds now (as NumPy
    would) rather than fail inside the generated program."""
    if builtins.any(not isinstance(i, np.ndarray) for i in arrays):
        return  # device (CuPy) index arrays: checking would copy them to the host
    dummy = np.lib.stride_tricks.as_strided(np.zeros(1, dtype=bool), shape=x.shape,
                                            strides=(0,) * len(x.shape))
    try:
        dummy[_key_to_python(nkey, [np.asarray(i) for i in arrays])]
    except IndexError as e:
        raise DualgpuError(f"getitem on {x.aval.str_short()}: {e} (at {user_location()})"
                           ) from None


def take(a, indices, axis=None):
    if axis is None:
        a, axis = ravel(a), 0
    axis = _check_axis(axis, len(_shape(a)), "take")
    return getitem(a, (slice(None),) * axis + (indices,))


def diagonal(a, offset=0, axis1=0, axis2=1):
    a = moveaxis(a, (axis1, axis2), (-2, -1))
    n, m = _shape(a)[-2:]
    i = np.arange(builtins.max(0, -offset), builtins.min(n, m - offset))
    return getitem(a, (Ellipsis, i, i + offset))


def diag(v, k=0):
    s = _shape(v)
    if len(s) == 2:
        return diagonal(v, k)
    n = s[0] + builtins.abs(k)
    i = np.arange(s[0])
    rows, cols = (i, i + k) if k >= 0 else (i - k, i)
    return _sh.scatter_add.bind(v, rows, cols, key=(("array", 0), ("array", 1)), shape=(n, n))


def trace(a, offset=0, axis1=0, axis2=1):
    return sum(diagonal(a, offset, axis1, axis2), axis=-1)


def tril(m, k=0):
    n, p = _shape(m)[-2:]
    return where(np.tri(n, p, k, dtype=bool), m, 0.0)


def triu(m, k=0):
    n, p = _shape(m)[-2:]
    return where(np.tri(n, p, k - 1, dtype=bool), 0.0, m)


# --------------------------------------------------------------------------- linear algebra
# (is_operand, matmul) pairs for operands that are not arrays: dualgpu.sparse_api registers
# the sparse matrices here at import (it sits above this module)
_MATMUL_OVERRIDES: list = []


def register_matmul_override(is_operand, matmul_fn) -> None:
    """``matmul(a, b)`` calls ``matmul_fn(a, b)`` when ``is_operand`` holds for a or b."""
    _MATMUL_OVERRIDES.append((is_operand, matmul_fn))


def _override(a, b):
    for is_operand, fn in _MATMUL_OVERRIDES:
        if is_operand(a) or is_operand(b):
            return fn
    return None


def matmul(a, b, out=None, **kw):
    _unsupported_kwargs("matmul", {"out": out, **kw})
    fn = _override(a, b)
    if fn is not None:
        return fn(a, b)
    return _la.matmul.bind(a, b)


def dot(a, b, out=None):
    _unsupported_kwargs("dot", {"out": out})
    if _override(a, b) is not None:
        return matmul(a, b)
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        return multiply(a, b)
    if nb <= 2:
        return matmul(a, b)
    return tensordot(a, b, axes=([na - 1], [nb - 2]))


def vdot(a, b):
    """``np.vdot``: conjugates its first argument (complex values)."""
    return sum(multiply(conj(ravel(a)), ravel(b)))


def inner(a, b):
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        return multiply(a, b)
    return tensordot(a, b, axes=([na - 1], [nb - 1]))


def outer(a, b, out=None):
    return multiply(reshape(ravel(a), (-1, 1)), ravel(b))


def tensordot(a, b, axes=2):
    na, nb = len(_shape(a)), len(_shape(b))
    if isinstance(axes, (int, np.integer)):
        if not 0 <= axes <= builtins.min(na, nb):
            raise _AxisError(f"tensordot: axes={int(axes)} is out of bounds for arrays of "
                             f"dimension {na} and {nb} (at {user_location()})")
        ax_a, ax_b = list(range(na - axes, na)), list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, int) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, int) else list(ax_b)
    if len(ax_a) != len(ax_b):
        raise DualgpuError(f"tensordot: axes {ax_a} and {ax_b} differ in length "
                           f"(at {user_location()})")
    ax_a = [_check_axis(i, na, "tensordot") for i in ax_a]
    ax_b = [_check_axis(j, nb, "tensordot") for j in ax_b]
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    sa = [next(letters) for _ in range(na)]
    sb = [next(letters) for _ in range(nb)]
    for i, j in zip(ax_a, ax_b):
        sb[j] = sa[i]
    contracted = {sa[i] for i in ax_a}
    out = [c for c in sa if c not in contracted] + [c for c in sb if c not in contracted]
    return einsum("".join(sa) + "," + "".join(sb) + "->" + "".join(out), a, b)


def einsum(subscripts, *operands, optimize=None, **kw):
    _unsupported_kwargs("einsum", kw)
    spec = _la.normalize_einsum(subscripts, [_shape(o) for o in operands])
    return _la.einsum.bind(*operands, spec=spec)


def _vector_norm(x, ord, axis, keepdims):
    """NumPy's vector norms of ``x`` along ``axis`` (a tuple; several axes are one vector)."""
    if ord is None or ord == 2:
        return _safe_sqrt(sum(_abs2(x), axis=axis, keepdims=keepdims))
    if isinstance(ord, str):
        raise DualgpuError(f"linalg.norm: invalid norm order {ord!r} for vectors "
                           f"(at {user_location()})")
    ax = absolute(x)  # noqa: F821
    if ord == math.inf:
        return max(ax, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return min(ax, axis=axis, keepdims=keepdims)
    if ord == 0:  # the count of nonzero elements: piecewise constant
        return sum(astype(not_equal(x, 0), ax.dtype), axis=axis, keepdims=keepdims)  # noqa: F821
    if ord == 1:
        return sum(ax, axis=axis, keepdims=keepdims)
    if ord > 1:
        s = sum(power(ax, float(ord)), axis=axis, keepdims=keepdims)
        if not _is_tracer(s):
            return power(s, 1.0 / ord)
        zero = equal(s, 0)  # noqa: F821  (the kink at the zero vector: subgradient 0)
        return where(zero, 0.0, power(where(zero, 1.0, s), 1.0 / ord))
    raise UnsupportedOpError(
        f"linalg.norm(ord={ord!r}) of a vector is not supported on traced values "
        f"(at {user_location()}): ord must be None, inf, -inf, 0 or a number >= 1 (below 1 "
        "it is no norm, and its derivative is infinite at zero elements)")


def _matrix_norm(x, ord, axes, keepdims):
    """NumPy's matrix norms over ``axes`` = (row axis, column axis)."""
    row, col = axes
    if ord in (None, "fro", "f"):
        r = _safe_sqrt(sum(_abs2(x), axis=axes))
    elif ord in (1, -1, math.inf, -math.inf):
        inner, outer = (row, col) if ord in (1, -1) else (col, row)
        sums = sum(absolute(x), axis=inner)  # noqa: F821
        outer = outer - 1 if outer > inner else outer
        r = (max if ord > 0 else min)(sums, axis=outer)
    elif ord in (2, -2, "nuc"):
        raise UnsupportedOpError(
            f"linalg.norm(ord={ord!r}) of a matrix needs singular values, and dualgpu has no "
            f"differentiable SVD (at {user_location()}). Use ord='fro' (the Frobenius norm, "
            "an upper bound of the spectral norm), or a power iteration on x.T @ x written "
            "in NumPy.")
    else:
        raise DualgpuError(f"linalg.norm: invalid norm order {ord!r} for matrices "
                           f"(at {user_location()})")
    if keepdims:
        shape = list(_shape(x))
        shape[row] = shape[col] = 1
        r = reshape(r, tuple(shape))
    return r


def linalg_norm(x, ord=None, axis=None, keepdims=False):
    """``np.linalg.norm`` with NumPy's meaning of every (ord, axis) it accepts, except the
    spectral and nuclear matrix norms (no SVD rule): those are refused.

    The gradient at the zero vector (matrix) is 0, a subgradient, and so is the HVP there,
    rather than NaN."""
    nd = len(_shape(x))
    if _dtype(x).kind in "biu":
        x = astype(x, np.float64)
    if axis is None:
        if ord is None:  # the 2-norm of everything, whatever the rank
            r = _safe_sqrt(sum(_abs2(x)))
            return reshape(r, (1,) * nd) if keepdims else r
        if nd not in (1, 2):
            raise DualgpuError(f"linalg.norm: improper number of dimensions to norm: "
                               f"ord={ord!r} with axis=None needs a 1-D or 2-D array, got "
                               f"{nd}-D (at {user_location()})")
        axis = tuple(range(nd))
    elif isinstance(axis, (int, np.integer)):
        axis = (int(axis),)
    else:
        axis = tuple(int(a) for a in axis)
    if len(axis) == 1:
        return _vector_norm(x, ord, normalize_axes(axis, nd, "linalg.norm"), keepdims)
    if len(axis) == 2:
        axes = tuple(_check_axis(a, nd, "linalg.norm") for a in axis)
        if axes[0] == axes[1]:
            raise _AxisError(f"linalg.norm: duplicate axes given: {axis} "
                             f"(at {user_location()})")
        return _matrix_norm(x, ord, axes, keepdims)
    raise DualgpuError(f"linalg.norm: improper number of dimensions to norm: axis={axis} "
                       f"(at {user_location()})")


def linalg_solve(a, b):
    """``np.linalg.solve``: ``x`` with ``a @ x = b`` (``b`` a vector when 1-D)."""
    return _dec.solve.bind(a, b)


def linalg_inv(a):
    """``np.linalg.inv`` over the last two axes."""
    return _dec.inv.bind(a)


def linalg_det(a):
    """``np.linalg.det`` over the last two axes."""
    return _dec.det.bind(a)


def linalg_slogdet(a):
    """``np.linalg.slogdet``: ``(sign, log|det|)``; only the second is differentiable."""
    sign, logabsdet = _dec.slogdet.bind(a)
    return sign, logabsdet


def linalg_cholesky(a, upper=False):
    """``np.linalg.cholesky``: the lower factor (``upper=True``: its transpose)."""
    low = _dec.cholesky.bind(a)
    return swapaxes(low, -1, -2) if upper else low


# --------------------------------------------------------------------------- constants
pi, e, inf, nan, newaxis = math.pi, math.e, math.inf, math.nan, None


# --------------------------------------------------------------------------- introspection
def shape(a) -> tuple:
    return _shape(a)


def ndim(a) -> int:
    return len(_shape(a))


def size(a, axis=None) -> int:
    s = _shape(a)
    return int(np.prod(s, dtype=np.int64)) if axis is None else s[_check_axis(axis, len(s),
                                                                                "size")]


def result_type(*arrays_and_dtypes):
    return np.result_type(*[_dtype(a) if _is_tracer(a) else a for a in arrays_and_dtypes])


def iscomplexobj(x) -> bool:
    return _dtype(x).kind == "c"


def isscalar(x) -> bool:
    return False if _is_tracer(x) else np.isscalar(x)


# --------------------------------------------------------------------------- the Tracer's methods
# Installed here, above the tracer (JAX's array_methods): core.trace records, it knows no op.
Tracer.T = property(lambda self: transpose(self))
Tracer.mT = property(lambda self: swapaxes(self, -1, -2))
Tracer.real = property(lambda self: real(self))  # x itself for real dtypes
Tracer.imag = property(lambda self: imag(self))  # zeros for real dtypes


def _binary(name: str, reflected: bool = False):
    def op(self, other):
        f = globals()[name]
        return f(other, self) if reflected else f(self, other)

    return op


for _dunder, _fn in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                     ("truediv", "true_divide"), ("pow", "power"), ("matmul", "matmul"),
                     ("floordiv", "floor_divide"), ("mod", "remainder")]:
    setattr(Tracer, f"__{_dunder}__", _binary(_fn))
    setattr(Tracer, f"__r{_dunder}__", _binary(_fn, reflected=True))
for _dunder, _fn in [("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
                     ("ge", "greater_equal"), ("eq", "equal"), ("ne", "not_equal"),
                     ("and", "logical_and"), ("or", "logical_or")]:
    setattr(Tracer, f"__{_dunder}__", _binary(_fn))
_HERE = globals()  # negative, logical_not, ... are generated from the elementwise ops
Tracer.__neg__ = lambda self: _HERE["negative"](self)
Tracer.__pos__ = lambda self: self
Tracer.__abs__ = lambda self: abs(self)
Tracer.__invert__ = lambda self: _HERE["logical_not"](self)
Tracer.__getitem__ = lambda self, key: getitem(self, key)


def _method(name: str):
    def method(self, *args, **kwargs):
        fn = globals().get(name)
        if fn is None:
            raise UnsupportedOpError(
                f"the method .{name}() has no dualgpu rule (called on a traced value at "
                f"{user_location()})")
        return fn(self, *args, **kwargs)

    method.__name__ = name
    return method


for _name in ["sum", "mean", "max", "min", "prod", "var", "std", "transpose", "ravel",
              "astype", "dot", "copy", "squeeze", "swapaxes", "clip", "cumsum", "cumprod",
              "flatten", "conj", "trace", "diagonal", "repeat", "argmax", "argmin", "all",
              "any", "conjugate"]:
    setattr(Tracer, _name, _method(_name))


def _reshape(self, *shape, order="C"):
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = shape[0]
    return reshape(self, shape, order=order)


Tracer.reshape = _reshape


def _transpose(self, *axes):
    """``x.transpose()``, ``x.transpose(1, 0)`` and ``x.transpose((1, 0))``, as ndarray's."""
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
        axes = axes[0]
    return transpose(self, axes if axes != () else None)


Tracer.transpose = _transpose
