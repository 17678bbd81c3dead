"""NumPy/SciPy functions that had no rule (issue 25): values against NumPy's and SciPy's,
derivatives against closed forms and central differences, where the registry table
(tests/test_registry.py) cannot reach: jumps, special values, two outputs, options."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324, 1.5, -2.0, 3.0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_predicates_and_steps_are_numpy_s(dtype):
    x = SPECIAL.astype(dtype)

    def f(x):
        return (np.isinf(x), np.signbit(x), np.nextafter(x, np.float32(1.0)),
                np.nextafter(x, -x), np.heaviside(x, np.float32(0.5)), np.heaviside(x, x))

    with np.errstate(all="ignore"):
        want = f(x)
        got = dg.jit(f)(x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_heaviside_derivative_is_in_h0_at_the_jump_only():
    x = np.array([-1.0, 0.0, -0.0, 2.0])
    h0 = np.array([0.3, 0.4, 0.5, 0.6])
    np.testing.assert_array_equal(
        dg.grad(lambda h: np.sum(np.heaviside(x, h)))(h0), [0.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(
        dg.grad(lambda x: np.sum(np.heaviside(x, h0)))(x), np.zeros(4))
    eps = 1e-6
    fd = (np.heaviside(x, h0 + eps) - np.heaviside(x, h0 - eps)) / (2 * eps)
    np.testing.assert_allclose(dg.jvp(lambda h: np.heaviside(x, h), (h0,),
                                      (np.ones(4),))[1], fd)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_frexp_and_ldexp_are_numpy_s_at_special_values(dtype):
    fi = np.finfo(dtype)
    below = [np.nextafter(dtype(v), dtype(0)) for v in (0.5, 1.0, 2.0, 1024.0)]
    x = np.concatenate([SPECIAL.astype(dtype), np.array(
        [fi.smallest_subnormal, fi.tiny, fi.max, -fi.max, *below], dtype=dtype)])
    e = np.array([3, -2, 0, 1100, -1100, 149], dtype=np.int32)
    with np.errstate(all="ignore"):
        got = dg.jit(lambda x, e: (np.frexp(x), np.ldexp(x[:, None], e)))(x, e)
        want = (np.frexp(x), np.ldexp(x[:, None], e))
    for g, w in zip([*got[0], got[1]], [*want[0], want[1]]):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_ldexp_dtype_follows_numpy_s_loops():
    for x in (np.int8(3), np.int64(3), np.float16(3), np.float32(3), 3.0):
        e = np.array([2, -1], dtype=np.int16)
        assert dg.jit(lambda x, e: np.ldexp(x, e))(x, e).dtype == np.ldexp(x, e).dtype


def test_frexp_mantissa_derivative_is_two_to_the_minus_e():
    x = np.array([0.3, -0.75, 3.0, 6.0, -1000.0, 1e-300])
    _, e = np.frexp(x)
    np.testing.assert_array_equal(dg.grad(lambda x: np.sum(np.frexp(x)[0]))(x),
                                  np.ldexp(1.0, -e))
    dg.testing.check_grads(lambda x: np.frexp(x)[0] * np.ldexp(x, 3), (x[:5],), order=2)


def test_ldexp_refuses_a_float_exponent():
    with pytest.raises(dg.DualgpuError, match="exponent .* must be an integer"):
        dg.jit(lambda x: np.ldexp(x, np.array([1.0])))(np.array([2.0]))


def test_float_power_computes_in_float64():
    x = np.array([1.5, 2.0, 3.0], dtype=np.float32)
    y = np.array([0.5, -1.0, 2.5], dtype=np.float32)
    got = dg.jit(lambda x, y: np.float_power(x, y))(x, y)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, np.float_power(x, y))
    grad = dg.grad(lambda x: np.sum(np.float_power(x, y)))(x)
    assert grad.dtype == np.float32  # a gradient is typed as its argument
    np.testing.assert_allclose(grad, y.astype(np.float64) * np.float_power(x, y - 1),
                               rtol=1e-6)
