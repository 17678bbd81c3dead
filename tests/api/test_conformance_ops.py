"""NumPy/SciPy functions that had no rule (issue 25): values against NumPy's and SciPy's,
derivatives against closed forms and central differences, where the registry table
(tests/ops/test_registry.py) cannot reach: jumps, special values, two outputs, options."""
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


def _interp_knot_gradient(x, knots, fp):
    """The closed form of d sum(interp(x, knots, fp)) / d knots (x inside, off the knots):
    on [a, b] with t = (x - a) / (b - a), dy/da = (fb - fa) (t - 1) / (b - a) and
    dy/db = -(fb - fa) t / (b - a)."""
    out = np.zeros(len(knots))
    for v in x:
        if knots[0] < v < knots[-1]:
            j = np.searchsorted(knots, v) - 1
            w, df = knots[j + 1] - knots[j], fp[j + 1] - fp[j]
            t = (v - knots[j]) / w
            out[j] += df * (t - 1) / w
            out[j + 1] -= df * t / w
    return out


def test_interp_gradient_is_finite_where_knots_are_close_in_float32():
    """A segment 1e-20 wide: the unselected formula at x outside the knots had t ~ 1e20 and a
    derivative in the width overflowing float32, which the final where turned into NaN."""
    knots = np.array([0.0, 1e-20, 1.0, 2.0], dtype=np.float32)
    fp = np.array([0.0, 1.0, 3.0, 2.0], dtype=np.float32)
    x = np.array([-1.0, 0.5, 1.5, 3.0], dtype=np.float32)
    got = dg.grad(lambda k: np.sum(np.interp(x, k, fp)))(knots)
    want = _interp_knot_gradient(x.astype(np.float64), knots.astype(np.float64),
                                 fp.astype(np.float64))
    assert np.all(np.isfinite(got)), got
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert np.all(np.isfinite(dg.hessian(lambda k: np.sum(np.interp(x, k, fp)))(knots)))


def test_interp_at_a_repeated_last_knot_is_numpy_s():
    knots, fp = np.array([0.0, 1.0, 1.0]), np.array([0.0, 1.0, 5.0])
    x = np.array([0.5, 1.0, 2.0])
    np.testing.assert_array_equal(dg.jit(lambda x: np.interp(x, knots, fp))(x),
                                  np.interp(x, knots, fp))
    np.testing.assert_array_equal(dg.jit(lambda k: np.interp(x, k, fp))(knots),
                                  np.interp(x, knots, fp))


@pytest.mark.parametrize("period", [2.5, -4.0, 360])
def test_interp_period_is_numpy_s(period):
    rng = np.random.default_rng(3)
    knots = rng.uniform(-10, 10, 6)  # unsorted, and wider than a period: reduced and sorted
    fp = rng.normal(size=6)
    x = rng.uniform(-12, 12, 15)
    want = np.interp(x, knots, fp, period=period)
    for got in (dg.jit(lambda x, k, f: np.interp(x, k, f, period=period))(x, knots, fp),
                dg.jit(lambda x: np.interp(x, knots, fp, period=period))(x),
                dg.jit(lambda x: np.interp(x, list(knots), list(fp), left=9, right=9,
                                           period=period))(x)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    f = lambda x: np.interp(x, knots, fp, period=period)  # noqa: E731
    np.testing.assert_allclose(dg.jvp(f, (x,), (np.ones_like(x),))[1],
                               (f(x + 1e-7) - f(x - 1e-7)) / 2e-7, rtol=1e-5, atol=1e-6)
    dg.testing.check_grads(lambda k, f: np.interp(x, k, f, period=period), (knots, fp),
                           order=1)


def test_interp_period_refuses_zero_and_traced_periods():
    with pytest.raises(dg.DualgpuError, match="period must be a non-zero"):
        dg.jit(lambda x: np.interp(x, [0.0, 1.0], [0.0, 1.0], period=0))(0.5)
    with pytest.raises(dg.DualgpuError, match="period must be a constant"):
        dg.jit(lambda x, p: np.interp(x, [0.0, 1.0], [0.0, 1.0], period=p))(0.5, 2.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_betainc_is_scipy_s_and_its_x_derivative_the_beta_density(dtype):
    import scipy.special
    a = np.array([0.5, 1.0, 2.0, 3.5], dtype=dtype)[:, None]
    b = np.array([1.0, 0.7, 4.0], dtype=dtype)
    x = np.array([0.0, 0.05, 0.5, 0.95, 1.0], dtype=dtype)[:, None, None]
    got = dg.jit(lambda x: scipy.special.betainc(a, b, x))(x)
    want = scipy.special.betainc(a, b, x)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-14)
    inner = x[1:4].astype(np.float64)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    density = inner ** (a64 - 1) * (1 - inner) ** (b64 - 1) / scipy.special.beta(a64, b64)
    np.testing.assert_allclose(
        dg.jvp(lambda x: scipy.special.betainc(a, b, x), (x[1:4],), (np.ones_like(x[1:4]),))[1],
        density, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_betainc_refuses_derivatives_in_a_and_b():
    import scipy.special
    with pytest.raises(dg.DualgpuError, match="no derivative in a or b"):
        dg.grad(lambda a: scipy.special.betainc(a, 3.0, 0.5))(2.0)
    with pytest.raises(dg.DualgpuError, match="no derivative in a or b"):
        dg.grad(lambda b: scipy.special.betainc(2.0, b, 0.5))(2.0)
