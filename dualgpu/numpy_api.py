"""NumPy-compatible functions over traced values, written in registry primitives.

This is the namespace a traced function sees in place of ``numpy``/``cupy`` (through
:mod:`dualgpu.namespace`). Every function also works on concrete arrays, where it computes
immediately. Rules are written with these functions, so that transforms compose.
"""
from __future__ import annotations

import builtins
import math
import string
import sys
from collections import namedtuple

import numpy as np

from . import lax
from .core.axes import check_axis as _check_axis
from .core.axes import normalize_axes
from .core.trace import register_front_end
from .errors import AxisError as _AxisError
from .errors import DualgpuError, UnsupportedOpError, user_location
from .lax import (  # noqa: F401  (NumPy's functions of these names are lax's)
    astype,
    broadcast_to,
    diagonal,
    expand_dims,
    eye,
    flip,
    full_like,
    getitem,
    imag,
    moveaxis,
    ones_like,
    pad,
    put_along_axis_add,
    ravel,
    real,
    reshape,
    squeeze,
    stop_gradient,
    swapaxes,
    take_along_axis,
    transpose,
    where,
    zeros_like,
)
from .lax import dtype_of as _dtype
from .lax import is_tracer as _is_tracer
from .lax import namespace_like as _xp_like
from .lax import shape_of as _shape
from .oplib.searchsorted import searchsorted  # noqa: F401  (np.searchsorted)
from .ops import decompositions as _dec
from .ops import elementwise as _ew
from .ops import linalg as _la
from .ops import shape as _sh
from .ops import sorting as _sorting


def _unsupported_kwargs(name, kwargs):
    bad = {k: v for k, v in kwargs.items() if v is not None and k not in ("casting", "order")}
    if bad:
        raise UnsupportedOpError(
            f"np.{name}: argument(s) {', '.join(bad)} are not supported on traced values "
            f"(at {user_location()})")


def _ufunc(prim):
    """The NumPy function of elementwise ``prim``: its keywords checked, ``dtype=`` a cast."""
    name = prim.name

    def f(*args, out=None, where=None, dtype=None, **kwargs):
        _unsupported_kwargs(name, {"out": out, "where": where, **kwargs})
        result = prim.bind(*args)
        return result if dtype is None else astype(result, dtype)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{name}`` (NumPy semantics, broadcasting)."
    return f


# --------------------------------------------------------------------------- elementwise
add = _ufunc(_ew.add)
subtract = _ufunc(_ew.subtract)
multiply = _ufunc(_ew.multiply)
true_divide = _ufunc(_ew.true_divide)
negative = _ufunc(_ew.negative)
power = _ufunc(_ew.power)
square = _ufunc(_ew.square)
reciprocal = _ufunc(_ew.reciprocal)
absolute = _ufunc(_ew.absolute)
sqrt = _ufunc(_ew.sqrt)
cbrt = _ufunc(_ew.cbrt)
maximum = _ufunc(_ew.maximum)
minimum = _ufunc(_ew.minimum)
fmax = _ufunc(_ew.fmax)
fmin = _ufunc(_ew.fmin)
hypot = _ufunc(_ew.hypot)
copysign = _ufunc(_ew.copysign)
exp = _ufunc(_ew.exp)
exp2 = _ufunc(_ew.exp2)
expm1 = _ufunc(_ew.expm1)
log = _ufunc(_ew.log)
log2 = _ufunc(_ew.log2)
log10 = _ufunc(_ew.log10)
log1p = _ufunc(_ew.log1p)
logaddexp = _ufunc(_ew.logaddexp)
sin = _ufunc(_ew.sin)
cos = _ufunc(_ew.cos)
tan = _ufunc(_ew.tan)
arcsin = _ufunc(_ew.arcsin)
arccos = _ufunc(_ew.arccos)
arctan = _ufunc(_ew.arctan)
arctan2 = _ufunc(_ew.arctan2)
sinh = _ufunc(_ew.sinh)
cosh = _ufunc(_ew.cosh)
tanh = _ufunc(_ew.tanh)
arcsinh = _ufunc(_ew.arcsinh)
arccosh = _ufunc(_ew.arccosh)
arctanh = _ufunc(_ew.arctanh)
erf = _ufunc(_ew.erf)
erfc = _ufunc(_ew.erfc)
gammaln = _ufunc(_ew.gammaln)
digamma = _ufunc(_ew.digamma)
sign = _ufunc(_ew.sign)
floor = _ufunc(_ew.floor)
ceil = _ufunc(_ew.ceil)
rint = _ufunc(_ew.rint)
trunc = _ufunc(_ew.trunc)
less = _ufunc(_ew.less)
less_equal = _ufunc(_ew.less_equal)
greater = _ufunc(_ew.greater)
greater_equal = _ufunc(_ew.greater_equal)
equal = _ufunc(_ew.equal)
not_equal = _ufunc(_ew.not_equal)
logical_and = _ufunc(_ew.logical_and)
logical_or = _ufunc(_ew.logical_or)
logical_not = _ufunc(_ew.logical_not)
isnan = _ufunc(_ew.isnan)
isfinite = _ufunc(_ew.isfinite)
floor_divide = _ufunc(_ew.floor_divide)
remainder = _ufunc(_ew.remainder)
fmod = _ufunc(_ew.fmod)
fill_like = _ufunc(_ew.fill_like)

divide = true_divide
abs = absolute  # noqa: A001
fabs = absolute
pow = power  # noqa: A001








def logistic(x):
    """The logistic sigmoid ``1 / (1 + exp(-x))``."""
    return _ew.logistic.bind(x)


expit = logistic


def polygamma(n, x):
    """``scipy.special.polygamma(n, x)`` for a static integer order ``n``."""
    return _ew.polygamma.bind(x, n=int(n))


def round(a, decimals=0, out=None):  # noqa: A001
    """``np.round``: halves to even, as NumPy; its derivative is zero."""
    _unsupported_kwargs("round", {"out": out})
    if decimals == 0:
        return rint(a)
    scale = 10.0 ** decimals
    return true_divide(rint(multiply(a, scale)), scale)


around = round_ = round


def logical_xor(x, y):
    return not_equal(astype(x, bool), astype(y, bool))


def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kw):  # noqa: A002
    _unsupported_kwargs("clip", {"out": out, **kw})
    a_min = min if a_min is None else a_min  # NumPy 2 also spells the bounds min=, max=
    a_max = max if a_max is None else a_max
    r = a
    if a_min is not None:
        r = where(less(r, a_min), a_min, r)
    if a_max is not None:
        r = where(greater(r, a_max), a_max, r)
    return astype(r, _dtype(a)) if _dtype(r) != _dtype(a) else r






def _complex_input(x) -> bool:
    return _dtype(x).kind == "c"


def conj(x, out=None, **kw):
    """``np.conj``: the identity on real values."""
    _unsupported_kwargs("conj", {"out": out, **kw})
    return lax.conj(x)


conjugate = conj






def angle(z, deg=False):
    """``np.angle``: ``arctan2(imag(z), real(z))``; on real values 0 or pi, a constant."""
    if _complex_input(z):
        r = arctan2(imag(z), real(z))
    else:
        if _dtype(z).kind in "biu":
            z = astype(z, np.float64)
        r = arctan2(zeros_like(z), stop_gradient(z) if _is_tracer(z) else z)
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
    small = less(absolute(px), 0.1)
    # the polynomial part sees only small arguments, the quotient only large ones
    ps = where(small, px, 0.0)
    p2 = multiply(ps, ps)
    poly = 1.0
    for k in (10, 8, 6, 4, 2):  # 1 - u/3! + u^2/5! - ... in u = (pi x)^2, Horner's form
        poly = subtract(1.0, true_divide(multiply(p2, poly), float(k * (k + 1))))
    pl = where(small, 1.0, px)
    return where(small, poly, true_divide(sin(pl), pl))


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
        return sqrt(v)
    zero = equal(v, 0)
    return where(zero, 0.0, sqrt(where(zero, 1.0, v)))


# --------------------------------------------------------------------------- reductions
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    _unsupported_kwargs("sum", {"out": out, "initial": initial, "where": where})
    return lax.sum(_arraylike(a), axis, dtype, keepdims)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    _unsupported_kwargs("max", {"out": out, "initial": initial, "where": where})
    return lax.max(_arraylike(a), axis, keepdims)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    _unsupported_kwargs("min", {"out": out, "initial": initial, "where": where})
    return lax.min(_arraylike(a), axis, keepdims)


amax, amin = max, min


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _unsupported_kwargs("prod", {"out": out, "initial": initial, "where": where})
    return lax.prod(_arraylike(a), axis, dtype, keepdims)


def cumsum(a, axis=None, dtype=None, out=None):
    _unsupported_kwargs("cumsum", {"out": out})
    return lax.cumsum(_arraylike(a), axis, dtype)


def cumprod(a, axis=None, dtype=None, out=None):
    _unsupported_kwargs("cumprod", {"out": out})
    return lax.cumprod(_arraylike(a), axis, dtype)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    _unsupported_kwargs("mean", {"out": out, "where": where})
    a = _arraylike(a)
    if dtype is not None:
        a = astype(a, dtype)
    elif _dtype(a).kind in "biu":
        a = astype(a, np.float64)
    axes = normalize_axes(axis, len(_shape(a)), "mean")
    n = int(np.prod([_shape(a)[i] for i in axes], dtype=np.int64))
    return true_divide(sum(a, axis=axis, keepdims=keepdims), float(n))










_mean = mean  # var's keyword `mean` shadows the function there


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
    a = _arraylike(a)
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
    centered = subtract(a, _mean(a, axis=axis, keepdims=True))
    return true_divide(sum(_abs2(centered), axis=axis, keepdims=keepdims), float(n - ddof))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, *,
        correction=None, mean=None, **kw):
    """``np.std``: ``sqrt(var)``, with gradient (and HVP) 0 where the variance is 0 (one
    element, or all equal: the kink of a norm) instead of NaN."""
    return _safe_sqrt(var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims,
                          where=where, correction=correction, mean=mean, **kw))






def all(a, axis=None, keepdims=False):  # noqa: A001
    return equal(min(astype(a, bool), axis=axis, keepdims=keepdims), True)


def any(a, axis=None, keepdims=False):  # noqa: A001
    return equal(max(astype(a, bool), axis=axis, keepdims=keepdims), True)


# --------------------------------------------------------------------------- shapes
flatten = ravel


def copy(a, order="K"):
    return a














def broadcast_arrays(*args):
    shape = np.broadcast_shapes(*[_shape(a) for a in args])
    return [broadcast_to(a, shape) for a in args]


def atleast_1d(a):
    return reshape(a, (1,)) if len(_shape(a)) == 0 else a


def atleast_2d(a):
    s = _shape(a)
    return reshape(a, (1,) * (2 - len(s)) + s) if len(s) < 2 else a


def _cast_joined(r, dtype, casting: str, name: str):
    """The ``dtype=``/``casting=`` of NumPy's joining functions, applied to their result."""
    if dtype is None:
        return r
    if not np.can_cast(_dtype(r), dtype, casting=casting):
        raise DualgpuError(f"{name}: cannot cast {_dtype(r)} to {np.dtype(dtype)} with "
                           f"casting={casting!r} (at {user_location()})")
    return astype(r, dtype)






def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    _unsupported_kwargs("concatenate", {"out": out})
    arrays = [asarray(a) if not _is_tracer(a) else a for a in arrays]
    return _cast_joined(lax.concatenate(arrays, axis), dtype, casting, "concatenate")


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _unsupported_kwargs("stack", {"out": out})
    return _cast_joined(lax.stack(arrays, axis), dtype, casting, "stack")


def hstack(arrays, *, dtype=None, casting="same_kind"):
    arrays = [atleast_1d(a) for a in arrays]
    r = concatenate(arrays, axis=0 if len(_shape(arrays[0])) == 1 else 1)
    return _cast_joined(r, dtype, casting, "hstack")


def vstack(arrays, *, dtype=None, casting="same_kind"):
    """``np.vstack`` (and ``np.row_stack``), with NumPy 2's ``dtype`` and ``casting``.

    >>> dg.grad(lambda x: np.sum(np.vstack([x, x * x], dtype=np.float64)))(np.ones(2))
    array([3., 3.])
    """
    r = concatenate([atleast_2d(a) for a in arrays], axis=0)
    return _cast_joined(r, dtype, casting, "vstack")




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












# --------------------------------------------------------------------------- indexing








def take(a, indices, axis=None):
    if axis is None:
        a, axis = ravel(a), 0
    axis = _check_axis(axis, len(_shape(a)), "take")
    return getitem(a, (slice(None),) * axis + (indices,))




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


def _sublist_subscripts(args):
    """NumPy's sublist form ``einsum(x, [0, 1], y, [1, 2], [0, 2])`` as (subscripts,
    operands): integers name axes, ``Ellipsis`` is ``...``."""
    def letters(sub):
        out = []
        for i in sub:
            if i is Ellipsis:
                out.append("...")
            elif isinstance(i, (int, np.integer)) and 0 <= int(i) < 52:
                out.append(string.ascii_letters[int(i)])
            else:
                raise DualgpuError(f"einsum: sublist subscripts must be integers in [0, 52) "
                                   f"or Ellipsis, got {i!r} (at {user_location()})")
        return "".join(out)

    operands = list(args[0::2][: len(args) // 2])
    ins = [letters(s) for s in args[1::2][: len(args) // 2]]
    spec = ",".join(ins)
    if len(args) % 2:
        spec += "->" + letters(args[-1])
    return spec, operands


def einsum(subscripts, *operands, optimize=None, **kw):
    """``np.einsum``, in the subscripts-string form or NumPy's sublist form."""
    _unsupported_kwargs("einsum", kw)
    if not isinstance(subscripts, str):
        subscripts, operands = _sublist_subscripts((subscripts,) + operands)
    operands = [_arraylike(o) for o in operands]
    spec = _la.normalize_einsum(subscripts, [_shape(o) for o in operands])
    return _la.einsum.bind(*operands, spec=spec)


def _vector_norm(x, ord, axis, keepdims):
    """NumPy's vector norms of ``x`` along ``axis`` (a tuple; several axes are one vector)."""
    if ord is None or ord == 2:
        return _safe_sqrt(sum(_abs2(x), axis=axis, keepdims=keepdims))
    if isinstance(ord, str):
        raise DualgpuError(f"linalg.norm: invalid norm order {ord!r} for vectors "
                           f"(at {user_location()})")
    ax = absolute(x)
    if ord == math.inf:
        return max(ax, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return min(ax, axis=axis, keepdims=keepdims)
    if ord == 0:  # the count of nonzero elements: piecewise constant
        return sum(astype(not_equal(x, 0), ax.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return sum(ax, axis=axis, keepdims=keepdims)
    if ord > 1:
        s = sum(power(ax, float(ord)), axis=axis, keepdims=keepdims)
        if not _is_tracer(s):
            return power(s, 1.0 / ord)
        zero = equal(s, 0)  # the kink at the zero vector: subgradient 0
        return where(zero, 0.0, power(where(zero, 1.0, s), 1.0 / ord))
    # 0 < ord < 1 and negative orders: NumPy's formula (no norm; the derivative is not
    # finite at zero elements, as the value's)
    return power(sum(power(ax, float(ord)), axis=axis, keepdims=keepdims), 1.0 / ord)


def _matrix_norm(x, ord, axes, keepdims):
    """NumPy's matrix norms over ``axes`` = (row axis, column axis)."""
    row, col = axes
    if ord in (None, "fro", "f"):
        r = _safe_sqrt(sum(_abs2(x), axis=axes))
    elif ord in (1, -1, math.inf, -math.inf):
        inner, outer = (row, col) if ord in (1, -1) else (col, row)
        sums = sum(absolute(x), axis=inner)
        outer = outer - 1 if outer > inner else outer
        r = (max if ord > 0 else min)(sums, axis=outer)
    elif ord in (2, -2, "nuc"):
        s = linalg_svdvals(moveaxis(x, (row, col), (-2, -1)))
        r = sum(s, axis=-1) if ord == "nuc" else (max if ord == 2 else min)(s, axis=-1)
    else:
        raise DualgpuError(f"linalg.norm: invalid norm order {ord!r} for matrices "
                           f"(at {user_location()})")
    if keepdims:
        shape = list(_shape(x))
        shape[row] = shape[col] = 1
        r = reshape(r, tuple(shape))
    return r


def linalg_norm(x, ord=None, axis=None, keepdims=False):
    """``np.linalg.norm`` with NumPy's meaning of every (ord, axis) it accepts; the
    spectral (2, -2) and nuclear matrix norms come from the singular values.

    The gradient at the zero vector (matrix) is 0, a subgradient, and so is the HVP there,
    rather than NaN."""
    x = _arraylike(x)
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


def linalg_matrix_power(a, n):
    """``np.linalg.matrix_power``: repeated squaring; negative ``n`` inverts first."""
    if not isinstance(n, (int, np.integer)):
        raise DualgpuError(f"linalg.matrix_power: the exponent must be an integer, got "
                           f"{n!r} (at {user_location()})")
    s = _shape(a)
    if len(s) < 2 or s[-1] != s[-2]:
        raise DualgpuError(f"linalg.matrix_power: expected square matrices (..., n, n), got "
                           f"shape {s} (at {user_location()})")
    n = int(n)
    if n == 0:
        return broadcast_to(eye(s[-1], dtype=_dtype(a), like=a), s)
    if n < 0:
        a, n = linalg_inv(a), -n
    result, square = None, a
    while n:
        if n & 1:
            result = square if result is None else matmul(result, square)
        n >>= 1
        if n:
            square = matmul(square, square)
    return result


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


# --------------------------------------------------------------------------- construction
def _holds_tracer(a) -> bool:
    if _is_tracer(a):
        return True
    return isinstance(a, (list, tuple)) and builtins.any(_holds_tracer(x) for x in a)


def _build_array(a):
    """A traced array from nested lists/tuples mixing traced values and constants."""
    if _is_tracer(a):
        return a
    if isinstance(a, (list, tuple)) and _holds_tracer(a):
        if not a:
            raise DualgpuError(f"array: an empty list inside a nested list of traced values "
                               f"(at {user_location()})")
        parts = [_build_array(x) for x in a]
        shapes = {_shape(p) for p in parts}
        if len(shapes) > 1:
            raise DualgpuError(f"array: the nested sequence is ragged (element shapes "
                               f"{sorted(shapes)}) (at {user_location()})")
        return stack(parts)
    return a if hasattr(a, "dtype") else np.asarray(a)


def array(a, dtype=None, copy=True, **kw):
    """``np.array``: also of nested lists mixing traced values and constants.

    >>> dg.grad(lambda s: np.sum(np.array([[s, 2 * s], [s, 0.5]])))(np.array(1.0))
    array(4.)
    """
    if _is_tracer(a) or _holds_tracer(a):
        r = _build_array(a)
        return r if dtype is None else astype(r, dtype)
    return np.array(a, dtype=dtype)


def asarray(a, dtype=None, **kw):
    return array(a, dtype=dtype)


def _arraylike(a):
    """Lists and tuples become arrays (traced when they hold traced values): what NumPy
    functions accept as ``array_like``."""
    if isinstance(a, (list, tuple)):
        return _build_array(a) if _holds_tracer(a) else np.asarray(a)
    return a


class Concatenator:
    """``np.r_`` / ``np.c_`` on traced values: items are arrays, scalars or slices
    (``np.r_[x, 0:3, 5.0]``); the string directives of NumPy's form are not supported."""

    def __init__(self, real, columns: bool):
        self._real = real
        self._columns = columns

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        if not _holds_tracer(items):
            return self._real[key]
        parts = []
        for item in items:
            if isinstance(item, str):
                raise UnsupportedOpError(f"np.r_/np.c_ directive {item!r} is not supported "
                                         f"on traced values (at {user_location()})")
            if isinstance(item, slice):
                item = self._real[item]
            parts.append(_arraylike(item) if _is_tracer(item) or _holds_tracer(item)
                         else np.asarray(item))
        if self._columns:
            return column_stack(parts)
        return concatenate([atleast_1d(p) for p in parts], axis=0)


r_ = Concatenator(np.r_, columns=False)
c_ = Concatenator(np.c_, columns=True)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """``np.linspace``, differentiable in ``start`` and ``stop`` (arrays broadcast, as
    NumPy's); the last sample is exactly ``stop`` when ``endpoint``.

    >>> dg.grad(lambda b: np.sum(np.linspace(0.0, b, 5)))(np.array(2.0))
    array(2.5)
    """
    if not (_is_tracer(start) or _is_tracer(stop)):
        return np.linspace(start, stop, num, endpoint=endpoint, retstep=retstep,
                           dtype=dtype, axis=axis)
    num = int(num)
    if num < 0:
        raise DualgpuError(f"linspace: num={num} must be non-negative (at {user_location()})")
    div = (num - 1) if endpoint else num
    dt = result_type(start, stop, 1.0)
    start, stop = astype(_arraylike(start), dt), astype(_arraylike(stop), dt)
    delta = subtract(stop, start)
    bshape = _shape(delta)
    frac = np.arange(num, dtype=np.float64) / (div if div > 0 else 1)
    frac = frac.reshape((num,) + (1,) * len(bshape)).astype(dt)
    y = add(multiply(frac, delta), start)
    if endpoint and num > 1:
        y = concatenate([y[:-1], expand_dims(broadcast_to(stop, bshape), 0)], axis=0)
    if axis != 0:
        y = moveaxis(y, 0, axis)
    if dtype is not None:
        y = astype(y, dtype)
    if retstep:
        return y, true_divide(delta, float(div)) if div > 0 else math.nan
    return y


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``np.logspace``: ``base ** linspace(start, stop)``."""
    y = power(base, linspace(start, stop, num, endpoint=endpoint, axis=axis))
    return y if dtype is None else astype(y, dtype)


# --------------------------------------------------------------------------- more shapes
def _axis_slice(nd, axis, sl):
    return (slice(None),) * axis + (sl,) + (slice(None),) * (nd - axis - 1)


def _take_range(a, axis, lo, hi):
    return getitem(a, _axis_slice(len(_shape(a)), axis, slice(lo, hi)))


def flipud(m):
    return flip(m, axis=0)


def fliplr(m):
    if len(_shape(m)) < 2:
        raise DualgpuError(f"fliplr: the array must be at least 2-D (at {user_location()})")
    return flip(m, axis=1)


def rot90(m, k=1, axes=(0, 1)):
    """``np.rot90``: ``k`` quarter turns in the plane of ``axes``."""
    nd = len(_shape(m))
    a0, a1 = (_check_axis(a, nd, "rot90") for a in axes)
    if a0 == a1:
        raise _AxisError(f"rot90: axes must be different (at {user_location()})")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, a0), a1)
    perm = list(range(nd))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    return transpose(flip(m, a1), perm) if k == 1 else flip(transpose(m, perm), a1)


def roll(a, shift, axis=None):
    """``np.roll``: two slices and a concatenation per rolled axis."""
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), _shape(a))
    nd = len(_shape(a))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    shifts = (shift,) * len(axes) if isinstance(shift, (int, np.integer)) else tuple(shift)
    if len(shifts) != len(axes):
        raise DualgpuError(f"roll: shift and axis must have the same length "
                           f"(at {user_location()})")
    for ax, s in zip(axes, shifts):
        ax = _check_axis(ax, nd, "roll")
        n = _shape(a)[ax]
        s = int(s) % n if n else 0
        if s:
            a = concatenate([_take_range(a, ax, n - s, n), _take_range(a, ax, 0, n - s)],
                            axis=ax)
    return a


def rollaxis(a, axis, start=0):
    """``np.rollaxis``: the old spelling of ``moveaxis``."""
    nd = len(_shape(a))
    axis = _check_axis(axis, nd, "rollaxis")
    if start < 0:
        start += nd
    if not 0 <= start <= nd:
        raise _AxisError(f"rollaxis: start={start} is out of range for {nd} dimensions "
                         f"(at {user_location()})")
    if axis < start:
        start -= 1
    return a if axis == start else moveaxis(a, axis, start)


def append(arr, values, axis=None):
    if axis is None:
        return concatenate([ravel(_arraylike(arr)), ravel(_arraylike(values))], axis=0)
    return concatenate([_arraylike(arr), _arraylike(values)], axis=axis)


def atleast_3d(*arys):
    """``np.atleast_3d``: (N,) becomes (1, N, 1), (M, N) becomes (M, N, 1)."""
    out = []
    for a in arys:
        s = _shape(a)
        shape = {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}.get(len(s), s)
        out.append(reshape(a, shape))
    return out[0] if len(out) == 1 else out


def column_stack(tup):
    """``np.column_stack``: 1-D arrays become columns."""
    cols = [reshape(a, (-1, 1)) if len(_shape(a)) < 2 else a
            for a in (_arraylike(t) for t in tup)]
    return concatenate(cols, axis=1)


def row_stack(tup, *, dtype=None, casting="same_kind"):
    return vstack(tup, dtype=dtype, casting=casting)


def dstack(tup):
    return concatenate([atleast_3d(a) for a in tup], axis=2)


def _split_bounds(n, indices_or_sections, even: bool, name: str):
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise DualgpuError(f"{name}: number of sections must be larger than 0 "
                               f"(at {user_location()})")
        if even and n % k:
            raise DualgpuError(f"{name}: axis of length {n} does not divide into {k} "
                               f"sections (at {user_location()})")
        each, extra = divmod(n, k)
        sizes = [each + 1] * extra + [each] * (k - extra)
        return list(np.cumsum([0] + sizes))
    return [0] + [int(i) for i in indices_or_sections] + [n]


def _split(a, indices_or_sections, axis, even, name):
    nd = len(_shape(a))
    axis = _check_axis(axis, nd, name)
    bounds = _split_bounds(_shape(a)[axis], indices_or_sections, even, name)
    return [_take_range(a, axis, int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]


def split(a, indices_or_sections, axis=0):
    return _split(a, indices_or_sections, axis, True, "split")


def array_split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, False, "array_split")


def _split_needs(a, ndim, name):
    if len(_shape(a)) < ndim:
        raise DualgpuError(f"{name} only works on arrays of {ndim} or more dimensions "
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


def kron(a, b):
    """``np.kron``: the outer product with the axes of ``a`` and ``b`` interleaved."""
    sa, sb = _shape(a), _shape(b)
    nd = builtins.max(len(sa), len(sb))
    sa, sb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
    a2 = reshape(a, tuple(x for d in sa for x in (d, 1)))
    b2 = reshape(b, tuple(x for d in sb for x in (1, d)))
    return reshape(multiply(a2, b2), tuple(p * q for p, q in zip(sa, sb)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """``np.cross`` of 3-vectors (2-vectors are padded with a zero z component; two
    2-vectors give the scalar z component, as NumPy)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a = moveaxis(_arraylike(a), axisa, -1)
    b = moveaxis(_arraylike(b), axisb, -1)
    na, nb = _shape(a)[-1], _shape(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise DualgpuError(f"cross: incompatible dimensions for cross product (dimension "
                           f"must be 2 or 3), got {na} and {nb} (at {user_location()})")
    ax, ay = a[..., 0], a[..., 1]
    bx, by = b[..., 0], b[..., 1]
    z = subtract(multiply(ax, by), multiply(ay, bx))
    if na == 2 and nb == 2:
        return z
    az = a[..., 2] if na == 3 else 0.0
    bz = b[..., 2] if nb == 3 else 0.0
    x = subtract(multiply(ay, bz), multiply(az, by))
    y = subtract(multiply(az, bx), multiply(ax, bz))
    x, y, z = broadcast_arrays(x, y, z)
    return moveaxis(stack([x, y, z], axis=-1), -1, axisc)


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """``np.diff``: ``n``-th differences along ``axis`` (with optional prepend/append)."""
    a = _arraylike(a)
    nd = len(_shape(a))
    axis = _check_axis(axis, nd, "diff")

    def edge(v):
        v = _arraylike(v)
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
        a = subtract(_take_range(a, axis, 1, m), _take_range(a, axis, 0, m - 1))
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    parts = [diff(ravel(_arraylike(ary)))]
    if to_begin is not None:
        parts.insert(0, ravel(_arraylike(to_begin)))
    if to_end is not None:
        parts.append(ravel(_arraylike(to_end)))
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
        raise DualgpuError(f"{name}: coordinates of length {s.shape} do not match an axis of "
                           f"length {n} (at {user_location()})")
    return np.diff(s)


def _along(coef, nd, axis, dtype):
    return coef.reshape((-1,) + (1,) * (nd - axis - 1)).astype(dtype)


def _gradient_axis(f, dx, axis, edge_order):
    nd, n = len(_shape(f)), _shape(f)[axis]

    def part(lo, hi):
        return _take_range(f, axis, lo, hi)

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
    f = _arraylike(f)
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
        raise DualgpuError(f"gradient: {len(varargs)} spacings for {len(axes)} axes "
                           f"(at {user_location()})")
    if edge_order not in (1, 2):
        raise DualgpuError(f"gradient: edge_order must be 1 or 2, got {edge_order!r}")
    out = []
    for ax, sp in zip(axes, spacings):
        n = _shape(f)[ax]
        if n < edge_order + 1:
            raise DualgpuError(f"gradient: an axis of length {n} is too short for "
                               f"edge_order={edge_order} (at {user_location()})")
        out.append(_gradient_axis(f, _spacings(sp, n, "gradient"), ax, edge_order))
    return out[0] if len(out) == 1 else tuple(out)


def select(condlist, choicelist, default=0):
    """``np.select``: the first true condition picks its choice."""
    if len(condlist) != len(choicelist):
        raise DualgpuError(f"select: list of cases must be same length as list of "
                           f"conditions (at {user_location()})")
    result = default
    for cond, choice in zip(reversed(condlist), reversed(choicelist)):
        result = where(cond, choice, result)
    return result


def interp(x, xp, fp, left=None, right=None, period=None):
    """``np.interp``: piecewise-linear interpolation, differentiable in ``x`` (the slope of
    the segment; at a knot, the right segment's), in ``fp`` and in the sample points ``xp``
    (which must increase, as NumPy's; where two coincide the slope is infinite). Traced
    ``left``/``right`` are differentiable too.

    >>> dg.grad(lambda xp: np.interp(0.5, xp, np.array([0.0, 2.0])))(np.array([0.0, 1.0]))
    array([-1., -1.])
    """
    if period is not None:
        raise UnsupportedOpError(f"np.interp(period=...) is not supported on traced values "
                                 f"(at {user_location()})")
    traced_knots = _is_tracer(xp)
    knots = _arraylike(xp) if traced_knots else np.asarray(xp, dtype=np.float64)
    x, fp = _arraylike(x), _arraylike(fp)
    if len(_shape(knots)) != 1 or _shape(fp) != _shape(knots) or _shape(knots)[0] == 0:
        raise DualgpuError(f"np.interp: xp and fp must be 1-D of the same length, got "
                           f"{_shape(knots)} and {_shape(fp)} (at {user_location()})")
    n = _shape(knots)[0]
    if n == 1:
        return broadcast_to(fp[0], _shape(x))
    if _is_tracer(x) or traced_knots:  # each x's segment: how many inner knots are <= x
        below = greater_equal(expand_dims(x, -1), knots[1:-1])
        seg = sum(astype(below, np.int64), axis=-1)
    else:
        seg = np.clip(np.searchsorted(knots, np.asarray(x), side="right") - 1, 0, n - 2)
    dt = result_type(x, fp, knots, 1.0)
    if traced_knots:
        x0, width = astype(knots[:-1], dt), astype(subtract(knots[1:], knots[:-1]), dt)
    else:
        x0, width = knots[:-1].astype(dt), np.diff(knots).astype(dt)
    x0_seg = take(x0, seg) if _is_tracer(seg) or _is_tracer(x0) else x0[seg]
    w_seg = take(width, seg) if _is_tracer(seg) or _is_tracer(width) else width[seg]
    t = true_divide(subtract(x, x0_seg), w_seg)
    y = add(take(fp, seg), multiply(t, subtract(take(fp, add(seg, 1)), take(fp, seg))))
    lo = fp[0] if left is None else left
    hi = fp[n - 1] if right is None else right
    first, last = (knots[0], knots[n - 1]) if traced_knots else (float(knots[0]),
                                                                  float(knots[-1]))
    y = where(less(x, first), lo, y)
    return where(greater(x, last), hi, y)


def _convolve_full(a, v):
    """Every overlap of ``a`` with reversed ``v``: windows of ``a`` (zero-padded) gathered
    by constant indices, times ``v`` reversed (a matmul: bilinear in a and v)."""
    n, m = _shape(a)[0], _shape(v)[0]
    padded = pad(a, [(m - 1, m - 1)])
    windows = np.arange(n + m - 1)[:, None] + np.arange(m)[None, :]
    return matmul(getitem(padded, windows), flip(v, axis=0))


def _conv_mode(full, n, m, mode, name):
    short, long_ = builtins.min(n, m), builtins.max(n, m)
    if mode == "full":
        return full
    if mode == "same":
        start = (short - 1) // 2
        return getitem(full, slice(start, start + long_))
    if mode == "valid":
        return getitem(full, slice(short - 1, long_))
    raise DualgpuError(f"{name}: mode must be 'full', 'same' or 'valid', got {mode!r} "
                       f"(at {user_location()})")


def _check_1d(name, *arrays):
    for a in arrays:
        if len(_shape(a)) != 1 or _shape(a)[0] == 0:
            raise DualgpuError(f"{name}: inputs must be non-empty 1-D arrays, got shape "
                               f"{_shape(a)} (at {user_location()})")


def convolve(a, v, mode="full"):
    """``np.convolve`` of 1-D arrays, differentiable in both."""
    a, v = _arraylike(a), _arraylike(v)
    _check_1d("convolve", a, v)
    n, m = _shape(a)[0], _shape(v)[0]
    full = _convolve_full(a, v) if n >= m else _convolve_full(v, a)
    return _conv_mode(full, n, m, mode, "convolve")


def correlate(a, v, mode="valid"):
    """``np.correlate`` of 1-D arrays: ``convolve(a, conj(v)[::-1])``; when ``v`` is the
    longer input NumPy reverses the result, and so does this."""
    a, v = _arraylike(a), _arraylike(v)
    _check_1d("correlate", a, v)
    n, m = _shape(a)[0], _shape(v)[0]
    if n >= m:
        return convolve(a, flip(conj(v), axis=0), mode)
    return flip(conj(convolve(v, flip(conj(a), axis=0), mode)), axis=0)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """``np.nan_to_num``: derivative 1 at finite values, 0 where a value is replaced."""
    if _complex_input(x):
        raise UnsupportedOpError(f"nan_to_num of complex traced values is not supported "
                                 f"(at {user_location()})")
    if _dtype(x).kind not in "fc":
        return x
    big = np.finfo(_dtype(x)).max
    hi = big if posinf is None else posinf
    lo = -big if neginf is None else neginf
    y = where(isnan(x), float(nan), x)
    y = where(equal(x, math.inf), float(hi), y)
    y = where(equal(x, -math.inf), float(lo), y)
    return astype(y, _dtype(x))


def _as_float(x):
    return astype(x, np.float64) if _dtype(x).kind in "biu" else x


def deg2rad(x, **kw):
    _unsupported_kwargs("deg2rad", kw)
    return multiply(_as_float(x), math.pi / 180.0)


def rad2deg(x, **kw):
    _unsupported_kwargs("rad2deg", kw)
    return multiply(_as_float(x), 180.0 / math.pi)


radians, degrees = deg2rad, rad2deg


def logaddexp2(x, y, **kw):
    """``log2(2**x + 2**y)``, stable: ``logaddexp(x ln2, y ln2) / ln2``."""
    _unsupported_kwargs("logaddexp2", kw)
    ln2 = math.log(2.0)
    return true_divide(logaddexp(multiply(x, ln2), multiply(y, ln2)), ln2)


def real_if_close(a, tol=100):
    """``np.real_if_close``: real traced values pass through; for complex ones the answer's
    dtype would depend on the data, so they are refused."""
    if not _complex_input(a):
        return a
    raise UnsupportedOpError(
        f"np.real_if_close of a complex traced value (at {user_location()}): whether it "
        "returns real or complex values depends on the data; use np.real(x) instead")


def fftshift(x, axes=None):
    nd = len(_shape(x))
    axes = tuple(range(nd)) if axes is None else normalize_axes(axes, nd, "fftshift")
    return roll(x, [_shape(x)[a] // 2 for a in axes], axes)


def ifftshift(x, axes=None):
    nd = len(_shape(x))
    axes = tuple(range(nd)) if axes is None else normalize_axes(axes, nd, "ifftshift")
    return roll(x, [-(_shape(x)[a] // 2) for a in axes], axes)


fft_fftshift, fft_ifftshift = fftshift, ifftshift


# --------------------------------------------------------------------------- NaN-aware reductions
def _nan_filled(a, value):
    a = _arraylike(a)
    return where(isnan(a), value, a) if _dtype(a).kind in "fc" else a


def _not_nan_count(a, axis, keepdims):
    return sum(astype(logical_not(isnan(a)), _dtype(a)), axis=axis,
               keepdims=keepdims)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    _unsupported_kwargs("nansum", {"out": out, **kw})
    return sum(_nan_filled(a, 0.0), axis=axis, dtype=dtype, keepdims=keepdims)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    _unsupported_kwargs("nanprod", {"out": out, **kw})
    return prod(_nan_filled(a, 1.0), axis=axis, dtype=dtype, keepdims=keepdims)


def _nan_extremum(reduce, fill, a, axis, keepdims):
    a = _as_float(_arraylike(a))
    r = reduce(_nan_filled(a, fill), axis=axis, keepdims=keepdims)
    all_nan = all(isnan(a), axis=axis, keepdims=keepdims)
    return where(all_nan, math.nan, r)  # NumPy: NaN (with a warning) for all-NaN slices


def nanmax(a, axis=None, out=None, keepdims=False, **kw):
    _unsupported_kwargs("nanmax", {"out": out, **kw})
    return _nan_extremum(max, -math.inf, a, axis, keepdims)


def nanmin(a, axis=None, out=None, keepdims=False, **kw):
    _unsupported_kwargs("nanmin", {"out": out, **kw})
    return _nan_extremum(min, math.inf, a, axis, keepdims)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    _unsupported_kwargs("nanmean", {"out": out, **kw})
    a = _as_float(_arraylike(a)) if dtype is None else astype(_arraylike(a), dtype)
    return true_divide(nansum(a, axis=axis, keepdims=keepdims),
                       _not_nan_count(a, axis, keepdims))


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    """``np.nanvar``: the variance of the non-NaN values (their count minus ``ddof``)."""
    _unsupported_kwargs("nanvar", {"out": out, **kw})
    a = _as_float(_arraylike(a)) if dtype is None else astype(_arraylike(a), dtype)
    centered = subtract(a, nanmean(a, axis=axis, keepdims=True))
    total = nansum(_abs2(centered), axis=axis, keepdims=keepdims)
    return true_divide(total, subtract(_not_nan_count(a, axis, keepdims), float(ddof)))


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    return _safe_sqrt(nanvar(a, axis=axis, dtype=dtype, out=out, ddof=ddof,
                             keepdims=keepdims, **kw))


def nancumsum(a, axis=None, dtype=None, out=None):
    return cumsum(_nan_filled(a, 0.0), axis=axis, dtype=dtype, out=out)


def nancumprod(a, axis=None, dtype=None, out=None):
    return cumprod(_nan_filled(a, 1.0), axis=axis, dtype=dtype, out=out)


# --------------------------------------------------------------------------- sorting






def _sort_axis(a, axis, name):
    a = _arraylike(a)
    if axis is None:
        return ravel(a), 0
    return a, _check_axis(axis, len(_shape(a)), name)


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``np.sort`` (always stable): differentiable, ties in NumPy's stable order.

    >>> dg.grad(lambda x: np.sort(x)[-1])(np.array([3.0, 1.0, 2.0]))
    array([1., 0., 0.])
    """
    _unsupported_kwargs("sort", {"order": order})
    a, axis = _sort_axis(a, axis, "sort")
    return _sorting.sort.bind(a, axis=axis)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``np.argsort`` (always stable): integer indices, no derivative."""
    _unsupported_kwargs("argsort", {"order": order})
    a, axis = _sort_axis(a, axis, "argsort")
    return _sorting.argsort.bind(a, axis=axis)


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """``np.partition``, as a full sort: element ``kth`` is in its sorted place with no
    larger element before and no smaller one after, NumPy's contract (NumPy's order of the
    other elements is unspecified, and differs)."""
    return sort(a, axis=axis, order=order)


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """``np.argpartition`` as a full ``argsort`` (see :func:`partition`)."""
    return argsort(a, axis=axis, order=order)


def _quantile_of_sorted(s, q, axis, keepdims):
    """Linear interpolation between order statistics (NumPy's default 'linear' method)."""
    n = _shape(s)[axis]
    qs = np.atleast_1d(np.asarray(q, dtype=np.float64))
    if np.any((qs < 0) | (qs > 1)):
        raise DualgpuError(f"quantile: quantiles must be in [0, 1], got {q!r} "
                           f"(at {user_location()})")
    outs = []
    for qk in qs.ravel():
        pos = qk * (n - 1)
        lo, frac = int(np.floor(pos)), pos - np.floor(pos)
        hi = builtins.min(lo + 1, n - 1)
        low = _take_range(s, axis, lo, lo + 1)
        r = low if frac == 0 else add(low, multiply(frac, subtract(
            _take_range(s, axis, hi, hi + 1), low)))
        outs.append(r if keepdims else squeeze(r, axis))
    if np.ndim(q) == 0:
        return outs[0]
    return reshape(stack(outs), qs.shape + _shape(outs[0]))


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, **kw):
    """``np.quantile`` with the default ``method='linear'``; ``q`` constant."""
    _unsupported_kwargs("quantile", {"out": out, **kw})
    if method != "linear":
        raise UnsupportedOpError(f"quantile(method={method!r}) is not supported on traced "
                                 f"values; use method='linear' (at {user_location()})")
    a = _as_float(_arraylike(a))
    nd = len(_shape(a))
    if axis is None:
        s = sort(ravel(a), axis=0)
        r = _quantile_of_sorted(s, q, 0, False)
        return reshape(r, np.shape(q) + (1,) * nd) if keepdims else r
    axis = _check_axis(axis, nd, "quantile")
    return _quantile_of_sorted(sort(a, axis=axis), q, axis, keepdims)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, **kw):
    return quantile(a, np.asarray(q, dtype=np.float64) / 100.0, axis=axis, out=out,
                    method=method, keepdims=keepdims, **kw)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """``np.median``: the mean of the two middle order statistics for even counts."""
    return quantile(a, 0.5, axis=axis, out=out, keepdims=keepdims)


EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
QRResult = namedtuple("QRResult", ["Q", "R"])
LstsqResult = namedtuple("LstsqResult", ["x", "residuals", "rank", "s"])


def linalg_eigh(a, UPLO="L"):
    """``np.linalg.eigh``: eigenvalues ascending and eigenvectors of the symmetric matrix
    read from one triangle. Where eigenvalues repeat, the eigenvector derivatives (and
    second derivatives) are not finite, as JAX's (docs/limitations.md).

    >>> a = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> dg.grad(lambda a: np.linalg.eigh(a)[0][1])(a)     # v v^T, read from the lower half
    array([[0.5, 0. ],
           [1. , 0.5]])
    """
    if UPLO not in ("L", "U"):
        raise DualgpuError(f"linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r} "
                           f"(at {user_location()})")
    a = _arraylike(a)
    w, v = _dec.eigh.bind(a, uplo=UPLO)
    return EighResult(w, v)


def linalg_eigvalsh(a, UPLO="L"):
    """``np.linalg.eigvalsh``: first derivatives are finite also at repeated eigenvalues."""
    return linalg_eigh(a, UPLO)[0]


def linalg_svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """``np.linalg.svd``. Traced: the thin SVD (``full_matrices`` matters only for
    non-square matrices, where the extra columns have no derivative: refused). Where
    singular values repeat, the singular-vector derivatives are not finite, as JAX's."""
    a = _arraylike(a)
    m, n = _shape(a)[-2:]
    u, s, vh = _dec.svd.bind(a)
    if not compute_uv:
        return s
    if full_matrices and m != n:
        raise UnsupportedOpError(
            f"linalg.svd(full_matrices=True) of a non-square traced matrix {_shape(a)} "
            f"(at {user_location()}): the completing singular vectors are not unique and "
            "have no derivative; pass full_matrices=False")
    return SVDResult(u, s, vh)


def linalg_svdvals(x):
    return _dec.svd.bind(_arraylike(x))[1]


def linalg_qr(a, mode="reduced"):
    """``np.linalg.qr`` of tall (m >= n) matrices: ``mode`` 'reduced', 'r', or 'complete'
    for square matrices."""
    a = _arraylike(a)
    m, n = _shape(a)[-2:]
    if mode not in ("reduced", "r", "complete") or (mode == "complete" and m != n):
        raise UnsupportedOpError(f"linalg.qr(mode={mode!r}) is not supported on traced "
                                 f"values of shape {_shape(a)} (at {user_location()}); use "
                                 "mode='reduced'")
    q, r = _dec.qr.bind(a)
    return r if mode == "r" else QRResult(q, r)


def linalg_pinv(a, rcond=None, hermitian=False, *, rtol=None):
    """``np.linalg.pinv``; derivatives hold where the rank is locally constant."""
    a = _arraylike(a)
    if rcond is None:
        rcond = 1e-15 if rtol is None else rtol
    return _dec.pinv.bind(a, rcond=float(rcond))


def linalg_lstsq(a, b, rcond=None):
    """``np.linalg.lstsq``: ``x = pinv(a) @ b``; ``residuals`` assume full column rank
    (the rank is data: it is returned, traced, with the singular values)."""
    a, b = _arraylike(a), _arraylike(b)
    m, n = _shape(a)[-2:]
    if rcond is None:
        rcond = builtins.max(m, n) * np.finfo(_dtype(a)).eps
    x = matmul(linalg_pinv(a, rcond=rcond), b)
    s = linalg_svdvals(a)
    rank = sum(astype(greater(s, multiply(max(s), rcond)), np.int64))
    if m > n:
        r = subtract(matmul(a, x), b)
        residuals = sum(multiply(r, r), axis=0)
        residuals = reshape(residuals, (1,)) if len(_shape(b)) == 1 else residuals
    else:
        residuals = np.zeros((0,), dtype=_dtype(a))
    return LstsqResult(x, residuals, rank, s)


EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])


def linalg_eig(a):
    """``np.linalg.eig`` of a real matrix whose eigenvalues are real (and, for the
    eigenvector derivatives, distinct): eigenvalues in LAPACK's order, eigenvectors as
    columns of unit 2-norm, as NumPy's. Complex eigenvalues (an imaginary part above
    sqrt(eps) times the largest eigenvalue modulus) raise a ``DualgpuError`` when the
    program runs (their real-valued result would be wrong). On CuPy (``cupy.linalg.eig``,
    CuPy 14 and later; refused where it is missing) the eigenpairs come in ascending order
    of eigenvalue, which may differ from NumPy's order, and the eigenvectors' signs are
    cuSOLVER's.

    >>> a = np.array([[2.0, 1.0], [0.0, 3.0]])
    >>> dg.grad(lambda a: np.linalg.eig(a)[0][1])(a)  # u v^T / (u . v), u, v left, right
    array([[0., 0.],
           [1., 1.]])
    """
    a = _arraylike(a)
    why = _dec.eig_unavailable(a._builder.xp) if _is_tracer(a) else None
    if why is not None:
        raise UnsupportedOpError(
            f"linalg.eig / eigvals of a traced CuPy matrix (at {user_location()}): {why}; "
            "use linalg.eigh for symmetric matrices, or NumPy arrays")
    if len(_shape(a)) >= 2 and _dtype(a).kind == "c":
        raise UnsupportedOpError(
            f"linalg.eig of a complex traced matrix {_shape(a)} (at {user_location()}) is "
            "not supported: real matrices with real eigenvalues only")
    w, v = _dec.eig.bind(a)
    return EigResult(w, v)


def linalg_eigvals(a):
    """``np.linalg.eigvals``: the eigenvalues of ``np.linalg.eig`` (real ones only)."""
    return linalg_eig(a)[0]


def _refuse_fft(name):
    def refused(a, *args, **kwargs):
        raise UnsupportedOpError(
            f"np.fft.{name} of a traced value (at {user_location()}) is not supported yet: "
            "complex FFTs have no dualgpu rule (issue 13). Multiply by a constant DFT "
            "matrix instead (np.exp(-2j * np.pi * np.outer(k, n) / N) @ x); complex "
            "intermediates then follow JAX's conventions (np.abs, np.real, np.imag); or "
            "register a primitive for it with dg.defprim (docs/custom_rules.md).")

    refused.__name__ = f"fft_{name}"
    refused.refused = True
    return refused


for _name in ("fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn",
              "ifftn", "rfftn", "irfftn", "hfft", "ihfft"):
    globals()[f"fft_{_name}"] = _refuse_fft(_name)


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


# --------------------------------------------------------------------------- the Tracer
# The Tracer's operators and methods (written in its class, core/trace.py) call these
# functions: register this module as the one they call.
register_front_end(sys.modules[__name__])
