"""Traced programs give NumPy's result dtypes: the loops NumPy picks for small integers
(exp of int8 is float16, of int16 float32), bools (bool ** bool is int8), weak Python
scalars, and the composites written over them (round, fabs, degrees, clip, logit).

The traced program's output aval is what the compiled host and CUDA kernels compute in, so
each row checks it against NumPy's eager result without compiling anything; a few rows run
the compiled host path too (131,072 elements and more)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import dualgpu as dg
from dualgpu.errors import DualgpuError

_INTS = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.int64, np.uint64]


def _values(dtype, n=6):
    if np.dtype(dtype).kind == "b":
        return np.resize([True, False, True], n)
    return np.resize(np.array([0, 1, 2, 3, 7, 100]), n).astype(dtype)


UNARY = {
    "exp": np.exp, "sqrt": np.sqrt, "sin": np.sin, "log1p": np.log1p, "arctanh": np.arctanh,
    "rint": np.rint, "reciprocal": np.reciprocal, "square": np.square,
    "fabs": np.fabs, "degrees": np.degrees, "radians": np.radians, "angle": np.angle,
    "round": np.round, "round-1": lambda x: np.round(x, -1), "round2": lambda x: np.round(x, 2),
    "clip-float": lambda x: np.clip(x, 1.5, 50), "logit": sp.logit,
    "pow1": lambda x: x ** 1, "pow2": lambda x: x ** 2, "pow1.0": lambda x: x ** 1.0,
    "pow2.0": lambda x: x ** 2.0, "powTrue": lambda x: x ** True,
}
BINARY = {"arctan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign,
          "logaddexp": np.logaddexp, "power": np.power, "floor_divide": np.floor_divide,
          "remainder": np.remainder, "true_divide": np.true_divide}


def _eager(f, *args):
    try:
        with np.errstate(all="ignore"):
            return f(*args)
    except (TypeError, ValueError):
        return None  # NumPy has no loop: dualgpu may refuse (below)


def _check_dtype(f, *args):
    ref = _eager(f, *args)
    if ref is None:
        with pytest.raises((DualgpuError, TypeError, ValueError)):
            dg.trace(f, *args)
        return
    out = dg.trace(f, *args).outputs[0].aval
    assert (out.dtype, out.shape) == (ref.dtype, ref.shape)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_result_dtypes_are_numpys(name):
    for dtype in _INTS + [np.float16, np.float32]:
        _check_dtype(UNARY[name], _values(dtype))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_result_dtypes_are_numpys(name):
    for a in _INTS:
        for b in (np.bool_, np.int8, np.uint8, np.int16):
            _check_dtype(BINARY[name], _values(a), _values(b) + np.ones((), b))


def test_bool_subtraction_is_refused_as_numpy_refuses_it():
    b = np.array([True, False])
    with pytest.raises(DualgpuError, match="subtract"):
        dg.jit(lambda x, y: x - y)(b, b)


@pytest.mark.parametrize("f, dtype", [
    (np.arctan2, np.int8), (np.exp, np.int16), (lambda x: x ** True, np.bool_),
    (np.reciprocal, np.int32),
])
def test_compiled_host_path_computes_in_numpys_dtype(f, dtype):
    x = _values(dtype, 1 << 17)
    ref = _eager(f, x, x) if f is np.arctan2 else _eager(f, x)
    got = dg.jit(f)(x, x) if f is np.arctan2 else dg.jit(f)(x)
    assert got.dtype == ref.dtype
    np.testing.assert_allclose(got.astype(float), ref.astype(float), rtol=1e-3)


@pytest.mark.parametrize("dtype, decimals", [(np.float32, -3), (np.float64, -3),
                                             (np.float32, 2), (np.int64, -1), (np.uint8, -1)])
def test_round_follows_numpys_steps(dtype, decimals):
    # float32 x * 0.001 is not x / 1000: NumPy divides for negative decimals
    x = (np.arange(-3000, 3000, 7) * 5).astype(dtype) if dtype != np.uint8 else \
        np.arange(256).astype(dtype)
    f = lambda x: np.round(x, decimals)  # noqa: E731
    ref, got = f(x), dg.jit(f)(x)
    assert got.dtype == ref.dtype
    np.testing.assert_array_equal(got, ref)


# --------------------------------------------------------------------------- reductions
_X = np.random.default_rng(0).standard_normal((3, 4, 5))
_X_NAN = _X.copy()
_X_NAN[0, 1, 2] = np.nan
_I8 = np.random.default_rng(1).integers(-128, 127, (3, 4, 5)).astype(np.int8)
_B = _X > 0
REDUCTIONS = [
    # NumPy's accumulators: the sum of int8 values is int64 (and wraps nowhere)
    ("sum-int8", lambda a: np.sum(a), _I8), ("prod-int8", lambda a: np.prod(a, axis=0), _I8),
    ("cumsum-bool", lambda a: np.cumsum(a, axis=1), _B), ("sum-uint8", lambda a: a.sum(axis=-1),
                                                           _I8.view(np.uint8)),
    ("nanmax-int8", lambda a: np.nanmax(a, axis=0), _I8), ("nanmin-bool", np.nanmin, _B),
    ("any-empty", lambda a: np.any(a, axis=0), np.zeros((0, 3))),
    ("all-empty", np.all, np.zeros((0, 3))),
    ("median-nan", lambda a: np.median(a, axis=-1), _X_NAN),
    ("median-int8", lambda a: np.median(a, axis=0), _I8),
    ("quantile-nan", lambda a: np.quantile(a, [0.2, 0.7], axis=1), _X_NAN),
    ("quantile-int8", lambda a: np.quantile(a, 0.3, axis=-1), _I8),
    ("quantile-f32", lambda a: np.quantile(a, 0.3, axis=0), _X.astype(np.float32)),
    ("quantile-f32-strong-q", lambda a: np.quantile(a, np.float64(0.3)), _X.astype(np.float32)),
    ("percentile-f32", lambda a: np.percentile(a, [10, 90]), _X.astype(np.float32)),
    # SciPy's softmax and log_softmax take every element by default (axis=None)
    ("scipy-softmax", lambda a: sp.softmax(a), _X),
    ("scipy-log_softmax", lambda a: sp.log_softmax(a), _X),
    ("scipy-softmax-axis", lambda a: sp.softmax(a, axis=(0, 2)), _X),
    # a Python number as logsumexp's weights stays weak: float32 in, float32 out
    ("logsumexp-f32-weak-b", lambda a: sp.logsumexp(a, b=2.0, axis=1), _X.astype(np.float32)),
    ("logsumexp-f32-array-b", lambda a: sp.logsumexp(a, b=np.full(5, 0.5, np.float32)),
     _X.astype(np.float32)),
]


@pytest.mark.parametrize("name, f, x", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reductions_match_numpy(name, f, x):
    with np.errstate(all="ignore"):
        ref = f(x)
    got = dg.jit(f)(x)
    assert (got.dtype, got.shape) == (ref.dtype, ref.shape)
    np.testing.assert_allclose(got, ref, rtol=1e-6 if ref.dtype == np.float32 else 1e-12)


def test_large_integer_sums_use_numpys_accumulator():
    # the compiled host path (>= 131,072 elements) summed int8 values in int8
    x = np.ones((64, 2049), np.int8)
    got = dg.jit(lambda a: np.sum(a))(x)
    assert got.dtype == np.int64 and int(got) == x.size


def test_lstsq_solves_in_the_common_type():
    # a float32 matrix with a float64 right-hand side: NumPy solves in float64
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(4)
    f = lambda a, b: np.linalg.lstsq(a, b)[0]  # noqa: E731
    ref, got = f(a, b), dg.jit(f)(a, b)
    assert got.dtype == ref.dtype
    np.testing.assert_allclose(got, ref, rtol=1e-12)


@pytest.mark.parametrize("f", [lambda x: x ** -1, lambda x: np.power(x, np.array([1, -2, 3]))])
def test_constant_negative_integer_powers_of_integers_are_refused(f):
    # NumPy raises ValueError; the compiled host path computed them silently
    with pytest.raises(DualgpuError, match="negative integer powers"):
        dg.jit(f)(np.arange(1, 4))
