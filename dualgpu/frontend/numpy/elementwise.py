"""NumPy's elementwise functions: the ufuncs (each an elementwise primitive, its keywords
checked, ``dtype=`` a cast) and the composites written with them (``clip``, ``sinc``,
``angle``, ``nan_to_num``, ...), and the constants ``pi``, ``e``, ``inf``, ``nan``.

``abs`` and ``pow`` are NumPy's names of :func:`absolute` and :func:`power`, and ``round`` of
:func:`round_`; they are exported under those names by :mod:`dualgpu.frontend.numpy` only, so
that no module here shadows Python's builtins."""
from __future__ import annotations

import math
import operator

import numpy as np

from ... import lax
from ...core.dtypes import promotion_operand
from ...errors import ArgumentTypeError, UnsupportedOpError, user_location
from ...lax import astype, imag, real, stop_gradient, where, zeros_like
from ...lax import dtype_of as _dtype
from ...lax import is_tracer as _is_tracer
from ...lax import namespace_like as _xp_like
from ...ops import casts as _casts
from ...ops import elementwise as _ew
from ...ops import special_functions as _special
from ...rules.elementwise_rules import ELEMENTWISE
from .arguments import as_float, is_complex, unsupported_kwargs

# NumPy's ufuncs whose loops give the dtypes of composites here, bound at import (a traced
# dualgpu function sees ``np`` rebound to these functions)
_UFUNCS = {name: getattr(np, name) for name in ("fabs", "deg2rad", "rad2deg", "arctan2")}
_RESULT_TYPE = np.result_type


def _ufunc(prim):
    """The NumPy function of elementwise ``prim``: its keywords checked, ``dtype=`` a cast."""
    name = prim.name

    def f(*args, out=None, where=None, dtype=None, **kwargs):
        unsupported_kwargs(name, {"out": out, "where": where, **kwargs})
        result = prim.bind(*args)
        return result if dtype is None else astype(result, dtype)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{name}`` (NumPy semantics, broadcasting)."
    return f


def numpy_functions() -> dict:
    """NumPy's function for every elementwise op declared under the name of a NumPy ufunc,
    and under each of NumPy's other names of that ufunc (``divide`` for ``true_divide``,
    ``bitwise_not`` for ``invert``): its declaration row is all it takes (``np.fmod`` of
    traced values is the ``fmod`` row's op). The functions written out in this module
    take precedence."""
    ours = {name: _ufunc(prim) for name, prim in ELEMENTWISE.items()
            if isinstance(getattr(np, name, None), np.ufunc)}
    by_ufunc = {getattr(np, name): f for name, f in ours.items()}
    aliases = {alias: by_ufunc[ufunc] for alias, ufunc in vars(np).items()
               if isinstance(ufunc, np.ufunc) and ufunc in by_ufunc and not alias.startswith("_")}
    return {**aliases, **ours}


# the derived functions (the namespace exports them; those written below replace them)
UFUNCS = numpy_functions()


_power = _ufunc(_ew.power)


def power(x1, x2, *args, **kwargs):
    """``np.power``; an integer power with a constant negative integer exponent raises as
    NumPy raises (a compiled kernel would compute it silently)."""
    if _is_tracer(x1) and not _is_tracer(x2) and _dtype(x1).kind in "biu":
        e = np.asarray(x2)
        if e.dtype.kind in "iu" and np.any(e < 0):
            raise ArgumentTypeError(f"np.power: integers to negative integer powers are not "
                                    f"allowed, as in NumPy (at {user_location()})")
    return _power(x1, x2, *args, **kwargs)


power.__name__ = power.__qualname__ = "power"


erf = _ufunc(_special.erf)


erfc = _ufunc(_special.erfc)


gammaln = _ufunc(_special.gammaln)


digamma = _ufunc(_special.digamma)


i0 = _ufunc(_special.i0)  # np.i0, the modified Bessel function of order 0



def frexp(x, out=None, where=None):
    """``np.frexp``: the mantissa ``m`` in [0.5, 1) (signed as x) and the integer exponent
    ``e`` (int32) with ``x == m * 2**e``; both 0 at 0, ``(x, 0)`` at inf and NaN. The
    mantissa's derivative is ``2**-e`` between the jumps (at the powers of two).

    >>> dg.grad(lambda x: np.frexp(x)[0])(np.float64(6.0))
    array(0.125)
    """
    unsupported_kwargs("frexp", {"out": out, "where": where})
    x = as_float(x)
    if not _is_tracer(x):
        return _xp_like(x).frexp(x)
    if is_complex(x):
        raise UnsupportedOpError(f"np.frexp: complex input is not supported, as in NumPy "
                                 f"(at {user_location()})")
    scaled = lax.logical_and(lax.isfinite(x), lax.not_equal(x, 0))
    magnitude = lax.absolute(stop_gradient(lax.where(scaled, x, 1.0)))
    e = astype(lax.floor(lax.log2(magnitude)), np.int32) + np.int32(1)
    # log2 rounds up just below a power of two: move the exponent by one where the mantissa
    # left [0.5, 1)
    m = lax.absolute(_ew.ldexp.bind(stop_gradient(x), -e))
    e = e + astype(lax.greater_equal(m, 1.0), np.int32) - astype(
        lax.logical_and(scaled, lax.less(m, 0.5)), np.int32)
    e = lax.where(scaled, e, np.int32(0))
    return _ew.ldexp.bind(x, -e), e


def float_power(x1, x2, out=None, where=None, dtype=None):
    """``np.float_power``: ``x1 ** x2`` computed in float64 (complex128 for complex
    inputs), whatever the inputs' dtypes.

    >>> dg.grad(lambda x: np.float_power(x, 3))(np.float64(2.0))
    array(12.)
    """
    unsupported_kwargs("float_power", {"out": out, "where": where})
    wide = np.complex128 if is_complex(x1) or is_complex(x2) else np.float64
    result = power(astype(x1, wide), astype(x2, wide))
    return result if dtype is None else astype(result, dtype)


fill_like = _ufunc(_casts.fill_like)



def fabs(x, out=None, where=None, dtype=None, **kw):
    """``np.fabs``: the absolute value in the floating type of NumPy's loop (int8 gives
    float16, int32 float64); complex values have none, as in NumPy."""
    return UFUNCS["absolute"](_as_loop_float(_UFUNCS['fabs'], x), out=out, where=where,
                              dtype=dtype, **kw)


def _as_loop_float(ufunc, x):
    """``x`` cast to the floating type NumPy's ``ufunc`` computes it in (int8: float16,
    int16: float32, int64: float64); a DualgpuError where it has no loop (complex fabs)."""
    if not _is_tracer(x) and not hasattr(x, "dtype"):
        x = np.asarray(x)
    try:
        dt = ufunc.resolve_dtypes((_dtype(x), None))[0]
    except TypeError:
        raise ArgumentTypeError(f"numpy.{ufunc.__name__} of {_dtype(x)} values: NumPy has no "
                                f"loop for them (at {user_location()})") from None
    return astype(x, dt) if dt != _dtype(x) else x


def logistic(x):
    """The logistic sigmoid ``1 / (1 + exp(-x))``."""
    return _ew.logistic.bind(x)


expit = logistic


def polygamma(n, x):
    """``scipy.special.polygamma(n, x)`` for a static integer order ``n``."""
    return _special.polygamma.bind(x, n=int(n))


def round_(a, decimals=0, out=None):
    """``np.round``: halves to even, as NumPy, in NumPy's steps (``x * 10**d`` for
    ``d >= 0``, ``x / 10**-d`` below, so that float32 rounds as NumPy's does); integers stay
    integers. Its derivative is zero."""
    unsupported_kwargs("round", {"out": out})
    decimals = operator.index(decimals)
    if is_complex(a) and decimals != 0:
        # NumPy rounds the two parts apart; a complex product by 10**d would turn an
        # infinite part into NaN
        raise UnsupportedOpError(f"np.round of complex values with decimals={decimals} is "
                                 f"not supported; round np.real and np.imag apart "
                                 f"(at {user_location()})")
    kind = _dtype(a).kind
    if kind == "b" and decimals != 0:
        raise ArgumentTypeError(f"np.round of bool values with decimals={decimals}: NumPy "
                                f"has no loop for it (at {user_location()})")
    if kind in "iu":
        return _round_int(a, decimals)
    if decimals == 0:
        return lax.rint(a)
    if decimals > 0:
        scale = 10.0 ** decimals
        return lax.true_divide(lax.rint(lax.multiply(a, scale)), scale)
    scale = 10.0 ** -decimals
    return lax.multiply(lax.rint(lax.true_divide(a, scale)), scale)


def _round_int(a, decimals: int):
    """Integers rounded to a multiple of ``10**-decimals``, halves to even, by NumPy's own
    steps: a quotient in float64, rounded, multiplied back and cast."""
    if decimals >= 0:
        return a
    step = 10 ** -decimals
    return astype(lax.multiply(lax.rint(lax.true_divide(a, step)), step), _dtype(a))


def logical_xor(x, y):
    return lax.not_equal(astype(x, bool), astype(y, bool))


def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kw):  # noqa: A002
    unsupported_kwargs("clip", {"out": out, **kw})
    a_min = min if a_min is None else a_min  # NumPy 2 also spells the bounds min=, max=
    a_max = max if a_max is None else a_max
    # NumPy 2's dtype: the bounds promote (weakly as Python numbers): an int array clipped
    # to float bounds is float64
    bounds = [b if isinstance(b, (int, float, complex)) else
              promotion_operand(b.aval) if _is_tracer(b) else _dtype(b)
              for b in (a_min, a_max) if b is not None]
    a = astype(a, _RESULT_TYPE(_dtype(a), *bounds))
    a_min, a_max = _int_bound(a_min, _dtype(a), True), _int_bound(a_max, _dtype(a), False)
    r = a
    for bound, beyond in ((a_min, lax.less), (a_max, lax.greater)):
        if bound is not None:  # a NaN bound gives NaN, as NumPy's minimum and maximum
            pick = beyond(r, bound)
            r = where(lax.logical_or(pick, lax.isnan(bound)) if _may_be_nan(bound) else pick,
                      bound, r)
    return astype(r, _dtype(a)) if _dtype(r) != _dtype(a) else r


def _may_be_nan(b) -> bool:
    if _is_tracer(b):
        return _dtype(b).kind in "fc"
    if isinstance(b, float):
        return math.isnan(b)
    return _dtype(b).kind in "fc" and bool(_xp_like(b).isnan(b).any())


def _int_bound(bound, dtype, low: bool):
    """A Python int bound of an integer array as NumPy 2 takes it: beyond the dtype's range
    on the side it does not clip, no bound; beyond on the side it clips, NumPy's
    OverflowError (a cast would wrap it: ``np.clip(x_int8, 200, None)`` all -56)."""
    if type(bound) is not int or np.dtype(dtype).kind not in "iu":
        return bound
    info = np.iinfo(dtype)
    if info.min <= bound <= info.max:
        return bound
    if (bound < info.min) == low:
        return None
    raise OverflowError(f"Python integer {bound} out of bounds for {np.dtype(dtype).name} "
                        f"(np.clip at {user_location()})")


def conj(x, out=None, **kw):
    """``np.conj``: the identity on real values."""
    unsupported_kwargs("conj", {"out": out, **kw})
    return lax.conj(x)


conjugate = conj


def angle(z, deg=False):
    """``np.angle``: ``arctan2(imag(z), real(z))``; on real values 0 or pi, a constant."""
    if is_complex(z):
        r = lax.arctan2(imag(z), real(z))
    else:  # NumPy's lax.arctan2(0, z): the Python 0 is weak (bool z gives float64)
        z = astype(z, _UFUNCS['arctan2'].resolve_dtypes((int, _dtype(z), None))[-1])
        r = lax.arctan2(zeros_like(z), stop_gradient(z) if _is_tracer(z) else z)
    return lax.multiply(r, 180.0 / math.pi) if deg else r


def sinc(x):
    """``np.sinc``: ``sin(pi x) / (pi x)``, 1 at 0. Near 0 (``|pi x| < 0.1``) its Maclaurin
    polynomial (degree 10, exact to rounding there) is used, so that the derivatives at 0
    are right (0, -pi**2/3, ..., to order 10) rather than NaN, as JAX's are."""
    if _dtype(x).kind in "biu":
        x = astype(x, np.float64)
    if not _is_tracer(x):
        return _xp_like(x).sinc(x)
    px = lax.multiply(x, math.pi)
    small = lax.less(lax.absolute(px), 0.1)
    # the polynomial part sees only small arguments, the quotient only large ones
    ps = where(small, px, 0.0)
    p2 = lax.multiply(ps, ps)
    poly = 1.0
    for k in (10, 8, 6, 4, 2):  # 1 - u/3! + u^2/5! - ... in u = (pi x)^2, Horner's form
        poly = lax.subtract(1.0, lax.true_divide(lax.multiply(p2, poly), float(k * (k + 1))))
    pl = where(small, 1.0, px)
    return where(small, poly, lax.true_divide(lax.sin(pl), pl))


def abs2(x):
    """``|x|**2`` elementwise: ``x * x`` on real values, ``real(x * conj(x))`` on complex."""
    if is_complex(x):
        return real(lax.multiply(x, conj(x)))
    return lax.multiply(x, x)


def safe_sqrt(v):
    """``sqrt(v)`` whose derivatives (of any order) are 0 where ``v == 0`` rather than
    ``inf * 0 = nan``: for norm-like values (``std``, ``linalg.norm``) ``v == 0`` is the kink
    of a norm, and 0 is the subgradient taken there. Concrete values: plain ``sqrt``."""
    if not _is_tracer(v):
        return lax.sqrt(v)
    zero = lax.equal(v, 0)
    return where(zero, 0.0, lax.sqrt(where(zero, 1.0, v)))


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """``np.nan_to_num``: derivative 1 at finite values, 0 where a value is replaced."""
    if is_complex(x):
        raise UnsupportedOpError(f"nan_to_num of complex traced values is not supported "
                                 f"(at {user_location()})")
    if _dtype(x).kind not in "fc":
        return x
    big = np.finfo(_dtype(x)).max
    hi = big if posinf is None else posinf
    lo = -big if neginf is None else neginf
    y = where(lax.isnan(x), float(nan), x)
    y = where(lax.equal(x, math.inf), float(hi), y)
    y = where(lax.equal(x, -math.inf), float(lo), y)
    return astype(y, _dtype(x))


def deg2rad(x, **kw):
    unsupported_kwargs("deg2rad", kw)
    return lax.multiply(_as_loop_float(_UFUNCS['deg2rad'], x), math.pi / 180.0)


def rad2deg(x, **kw):
    unsupported_kwargs("rad2deg", kw)
    return lax.multiply(_as_loop_float(_UFUNCS['rad2deg'], x), 180.0 / math.pi)


radians, degrees = deg2rad, rad2deg


def logaddexp2(x, y, **kw):
    """``log2(2**x + 2**y)``, stable: ``logaddexp(x ln2, y ln2) / ln2``."""
    unsupported_kwargs("logaddexp2", kw)
    ln2 = math.log(2.0)
    return lax.true_divide(lax.logaddexp(lax.multiply(x, ln2), lax.multiply(y, ln2)), ln2)


def real_if_close(a, tol=100):
    """``np.real_if_close``: real traced values pass through; for complex ones the answer's
    dtype would depend on the data, so they are refused."""
    if not is_complex(a):
        return a
    raise UnsupportedOpError(
        f"np.real_if_close of a complex traced value (at {user_location()}): whether it "
        "returns real or complex values depends on the data; use np.real(x) instead")


pi, e, inf, nan = math.pi, math.e, math.inf, math.nan
