"""NumPy semantics: traced functions give NumPy's values, or a clear DualgpuError.

Regression tests of issue 10, item 7 (silently wrong results), one per case, and the
documented conventions at kinks and removable singularities (docs/limitations.md,
"Conventions at kinks and singularities"): derivatives there are finite, never NaN.
"""
from __future__ import annotations

import math
import random
import shutil
import subprocess
import warnings

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.codegen.cuda import plan_source
from dualgpu.fusion import plan_graph
from dualgpu.testing import check_grads

RNG = np.random.default_rng(0)


def _away_from_zero(*shape):
    """Values in +-[0.3, 2]: kinks of the norms at zero are tested on their own."""
    u = RNG.uniform(-1.7, 1.7, size=shape)
    return np.where(u < 0, u - 0.3, u + 0.3)


A3 = _away_from_zero(3, 4, 5)
M = _away_from_zero(3, 4)
V = _away_from_zero(5)


def _finite(*arrays):
    for a in arrays:
        assert np.all(np.isfinite(np.asarray(a))), a


# --------------------------------------------------------------------------- linalg.norm
VECTOR_ORDS = [None, 2, 1, np.inf, -np.inf, 0, 3, 1.5]
MATRIX_ORDS = [None, "fro", 1, -1, np.inf, -np.inf]
NORM_CASES = (
    [(V, o, None) for o in VECTOR_ORDS]
    + [(A3, o, ax) for o in VECTOR_ORDS for ax in (0, -1, (1,))]
    + [(M, o, None) for o in MATRIX_ORDS]
    + [(A3, o, ax) for o in MATRIX_ORDS for ax in ((0, 1), (2, 0), (-1, -2))]
    + [(A3, None, None), (M, "f", (0, 1))]
)


@pytest.mark.parametrize("x, ord_, axis", NORM_CASES,
                         ids=[f"{x.ndim}d-ord={o}-axis={a}" for x, o, a in NORM_CASES])
@pytest.mark.parametrize("keepdims", [False, True])
def test_norm_matches_numpy(x, ord_, axis, keepdims):
    def f(x):
        return np.linalg.norm(x, ord=ord_, axis=axis, keepdims=keepdims)

    want = np.linalg.norm(x, ord=ord_, axis=axis, keepdims=keepdims)
    got = dg.jit(f)(x)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    if ord_ != 0:
        check_grads(f, (x,), order=2)


@pytest.mark.parametrize("ord_", [2, -2, "nuc"])
@pytest.mark.parametrize("x, axis", [(M, None), (A3, (0, 1)), (A3, (-1, 0))])
def test_spectral_and_nuclear_norms_come_from_singular_values(ord_, axis, x):
    """np.linalg.norm(A, 2, axis=(0, 1)) once gave the Frobenius norm; now the SVD's."""
    def f(a):
        return np.linalg.norm(a, ord=ord_, axis=axis)

    np.testing.assert_allclose(dg.jit(f)(x), f(x), rtol=1e-12)
    check_grads(f, (x,), order=1)


@pytest.mark.parametrize("x, ord_, axis", [
    (V, "fro", None), (A3, "fro", 0), (A3, "nuc", 1), (A3, None, (0, 1, 2)),
    (A3, 2, None), (A3, 1, None), (M, "bad", (0, 1)), (A3, None, (1, 1)), (A3, None, 3),
])
def test_norm_errors_numpy_raises_are_refused(x, ord_, axis):
    with pytest.raises(ValueError):  # NumPy's own refusal
        np.linalg.norm(x, ord=ord_, axis=axis)
    with pytest.raises(dg.DualgpuError):
        dg.jit(lambda x: np.linalg.norm(x, ord=ord_, axis=axis))(x)


@pytest.mark.parametrize("ord_", [0.5, -1, -2])
def test_vector_orders_below_one_are_numpys(ord_):
    def f(x):
        return np.linalg.norm(x, ord=ord_)

    x = V + 3.0  # no zero elements: the slope is infinite there
    np.testing.assert_allclose(dg.jit(f)(x), f(x), rtol=1e-12)
    check_grads(f, (x,), order=2)


def test_norm_of_complex_values():
    def f(x):
        return np.linalg.norm(np.exp(1j * x) * (x + 2.0))

    x = V
    np.testing.assert_allclose(dg.jit(f)(x), f(x), rtol=1e-12)
    # |exp(ix) (x + 2)| = |x + 2|: the norm is that of x + 2
    np.testing.assert_allclose(dg.grad(f)(x), dg.grad(lambda x: np.linalg.norm(x + 2.0))(x),
                               rtol=1e-12)


@pytest.mark.parametrize("fn", [
    lambda x: np.linalg.norm(x),
    lambda x: np.linalg.norm(x, 3),
    lambda x: np.linalg.norm(x.reshape(2, 2), "fro"),
    lambda x: np.linalg.norm(x, 1),
    lambda x: np.linalg.norm(x, np.inf),
    lambda x: np.sum(np.hypot(x, 0.0 * x)),
    lambda x: np.std(x),
])
def test_kinks_at_zero_have_zero_gradient_and_finite_hvp(fn):
    x = np.zeros(4)
    np.testing.assert_array_equal(dg.grad(fn)(x), np.zeros(4))
    hv = dg.hvp(fn)(x, np.ones(4))
    _finite(hv)


def test_norm_away_from_zero_unchanged():
    check_grads(lambda x: np.linalg.norm(x), (V,), order=2)


# --------------------------------------------------------------------------- var and std
@pytest.mark.parametrize("ddof", [3, 4, 10])
@pytest.mark.parametrize("fn", [np.var, np.std])
def test_ddof_without_degrees_of_freedom_is_refused(fn, ddof):
    """np.var(x, ddof=k) with k >= n was negative; NumPy gives inf/nan with a warning."""
    x = np.array([1.0, 2.0, 4.0])
    with pytest.raises(dg.DualgpuError, match="ddof"):
        dg.grad(lambda x: fn(x, ddof=ddof))(x)
    with pytest.raises(dg.DualgpuError, match="ddof"):
        dg.jit(lambda x: fn(x.reshape(3, 1), axis=1, ddof=1))(x)


@pytest.mark.parametrize("ddof", [0, 1, 2, -1])
def test_var_std_match_numpy(ddof):
    x = np.array([1.0, 2.0, 4.0])
    for fn in (np.var, np.std):
        np.testing.assert_allclose(dg.jit(lambda x, fn=fn: fn(x, ddof=ddof))(x), fn(x, ddof=ddof))
        check_grads(lambda x, fn=fn: fn(x, ddof=ddof), (x,), order=2)
    np.testing.assert_allclose(dg.jit(lambda x: np.var(x, correction=1))(x),
                               np.var(x, correction=1))
    np.testing.assert_allclose(dg.jit(lambda x: x.std(ddof=1))(x), x.std(ddof=1))


def test_var_of_complex_and_integer_values():
    x = np.array([0.3, -1.0, 2.0, 0.5])

    def f(x):
        return np.var(np.exp(1j * x) * x)

    np.testing.assert_allclose(dg.jit(f)(x), f(x), rtol=1e-12)
    check_grads(f, (x,), order=2)
    k = np.array([1, 2, 4])
    np.testing.assert_allclose(dg.jit(lambda k: np.var(k, ddof=1))(k), np.var(k, ddof=1))


@pytest.mark.parametrize("x", [np.array([1.5]), np.array([2.0, 2.0, 2.0])])
def test_std_without_spread_has_zero_gradient(x):
    """np.std of one element (or of equal elements) had a NaN gradient."""
    np.testing.assert_array_equal(dg.grad(np.std)(x), np.zeros_like(x))
    np.testing.assert_array_equal(dg.hvp(np.std)(x, np.ones_like(x)), np.zeros_like(x))


# --------------------------------------------------------------------------- complex parts
X = np.array([0.3, -1.2, 2.0])


def test_real_imag_conj_of_real_values():
    def f(x):
        return np.real(x) + np.conj(x) * 2 + x.real + x.conj() + x.conjugate() + np.imag(x)

    np.testing.assert_allclose(dg.jit(f)(X), 6 * X)
    np.testing.assert_allclose(dg.grad(lambda x: np.sum(f(x)))(X), 6 * np.ones(3))
    np.testing.assert_array_equal(dg.jit(lambda x: x.imag)(X), np.zeros(3))
    np.testing.assert_array_equal(dg.grad(lambda x: np.sum(np.imag(x)))(X), np.zeros(3))


@pytest.mark.parametrize("name, fn, deriv", [
    ("real", lambda x: np.real(np.exp(1j * x)), lambda x: -np.sin(x)),
    ("imag", lambda x: np.imag(np.exp(1j * x)), lambda x: np.cos(x)),
    (".real", lambda x: np.exp(1j * x).real, lambda x: -np.sin(x)),
    (".imag", lambda x: (x * np.exp(1j * x)).imag, lambda x: np.sin(x) + x * np.cos(x)),
    ("conj", lambda x: np.imag(np.conj(np.exp(1j * x))), lambda x: -np.cos(x)),
    ("conjugate", lambda x: np.imag(np.exp(1j * x).conjugate() * 2), lambda x: -2 * np.cos(x)),
    ("abs", lambda x: np.abs(np.exp(1j * x) * (x + 3)), lambda x: np.ones_like(x)),
    ("abs2", lambda x: np.abs((x + 1j) ** 2), lambda x: 2 * x),
])
def test_complex_intermediates(name, fn, deriv):
    """np.real/np.imag/np.conj/.real of complex values returned them unchanged."""
    np.testing.assert_allclose(dg.jit(fn)(X), fn(X), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(dg.grad(lambda x: np.sum(fn(x)))(X), deriv(X), rtol=1e-12,
                               atol=1e-15)
    _, t = dg.jvp(fn, (X,), (np.ones(3),))
    np.testing.assert_allclose(t, deriv(X), rtol=1e-12, atol=1e-15)
    check_grads(fn, (X,), order=2)


def test_angle():
    x = np.array([-2.0, -0.0, 0.0, 1.5])
    np.testing.assert_array_equal(dg.jit(np.angle)(x), np.angle(x))
    np.testing.assert_array_equal(dg.grad(lambda x: np.sum(np.angle(x, deg=True)))(x), 0)

    def f(x):
        return np.angle(np.exp(1j * x) * (x + 3))

    np.testing.assert_allclose(dg.jit(f)(X), f(X), rtol=1e-12)
    np.testing.assert_allclose(dg.grad(lambda x: np.sum(f(x)))(X), np.ones(3), rtol=1e-12)


def test_complex_abs_at_zero_is_finite():
    g = dg.grad(lambda x: np.sum(np.abs(x * (1 + 1j))))(np.zeros(2))
    np.testing.assert_array_equal(g, np.zeros(2))
    hv = dg.hvp(lambda x: np.sum(np.abs(x * (1 + 1j))))(np.zeros(2), np.ones(2))
    np.testing.assert_array_equal(hv, np.zeros(2))


def test_complex_cholesky_is_refused():
    """Its rules use plain transposes, right for real matrices only."""
    with pytest.raises(dg.DualgpuError, match="complex"):
        dg.grad(lambda x: np.real(np.sum(np.linalg.cholesky(np.eye(2) * (x + 0j)))))(1.0)


def test_vdot_conjugates_its_first_argument():
    def f(x):
        return np.real(np.vdot(np.exp(1j * x), (x + 1j)))

    np.testing.assert_allclose(dg.jit(f)(X), f(X), rtol=1e-12)
    check_grads(f, (X,), order=2)


# --------------------------------------------------------------------------- fmax / fmin
@pytest.mark.parametrize("op", [np.fmax, np.fmin])
def test_fmax_fmin_gradient_follows_the_non_nan_argument(op):
    x = np.array([np.nan, 1.0, np.nan, 2.0, 3.0])
    y = np.array([2.0, np.nan, np.nan, 5.0, 3.0])
    gx, gy = dg.grad(lambda x, y: np.sum(op(x, y)), argnums=(0, 1))(x, y)
    win = 1.0 if op is np.fmin else 0.0
    np.testing.assert_array_equal(gx, [0, 1, 1, win, 0.5])
    np.testing.assert_array_equal(gy, [1, 0, 0, 1 - win, 0.5])
    np.testing.assert_array_equal(dg.jit(op)(x, y), op(x, y))


def test_changed_c_expressions_generate():
    x = np.array([np.nan, 1.0], np.float32)
    for op in (np.maximum, np.fmax, np.fmin, np.hypot, np.logaddexp, np.power):
        text = plan_source(plan_graph(dg.trace(dg.grad_and_hvp(
            lambda x, y, op=op: np.sum(op(x, y) * 2)), x, x + 1, x)))
        assert "kernel" in text
    text = plan_source(plan_graph(dg.trace(lambda x, y: np.logaddexp(x, y) * 2, x, x)))
    assert "==" in text and "log1p" in text


# --------------------------------------------------------------------------- axes
def _axis_cases():
    a = np.ones((2, 3))
    return {
        "transpose": lambda x: np.transpose(x, (1, 2)),
        "transpose_neg": lambda x: np.transpose(x, (0, -3)),
        "concatenate": lambda x: np.concatenate([x, x], axis=2),
        "concatenate_neg": lambda x: np.concatenate([x, x], axis=-3),
        "stack": lambda x: np.stack([x, x], axis=3),
        "stack_neg": lambda x: np.stack([x, x], axis=-4),
        "take": lambda x: np.take(x, [0], axis=2),
        "tensordot": lambda x: np.tensordot(x, a.T, axes=([2], [0])),
        "tensordot_int": lambda x: np.tensordot(x, a, axes=3),
        "sum": lambda x: np.sum(x, axis=2),
        "mean": lambda x: np.mean(x, axis=-3),
        "max": lambda x: np.max(x, axis=(0, 2)),
        "prod": lambda x: np.prod(x, axis=5),
        "var": lambda x: np.var(x, axis=2),
        "std": lambda x: np.std(x, axis=2),
        "cumsum": lambda x: np.cumsum(x, axis=2),
        "expand_dims": lambda x: np.expand_dims(x, 3),
        "squeeze": lambda x: np.squeeze(x, axis=2),
        "moveaxis": lambda x: np.moveaxis(x, 2, 0),
        "moveaxis_dst": lambda x: np.moveaxis(x, 0, -3),
        "swapaxes": lambda x: np.swapaxes(x, 0, 2),
        "split": lambda x: np.split(x, 2, axis=2)[0],
        "flip": lambda x: np.flip(x, axis=2),
        "repeat": lambda x: np.repeat(x, 2, axis=2),
        "norm": lambda x: np.linalg.norm(x, axis=2),
        "logsumexp": lambda x: dg.nn.logsumexp(x, axis=2),
        "softmax": lambda x: dg.nn.softmax(x, axis=2),
        "add.reduce": lambda x: np.add.reduce(x, axis=2),
        "ndarray.sum": lambda x: x.sum(axis=2),
    }


@pytest.mark.parametrize("name", sorted(_axis_cases()))
def test_out_of_range_axes_raise_axis_error(name):
    """Out-of-range axes wrapped silently (axis % ndim); NumPy raises AxisError."""
    fn = _axis_cases()[name]
    x = np.arange(6.0).reshape(2, 3)
    with pytest.raises((np.exceptions.AxisError, IndexError)):
        fn(x)  # NumPy itself (IndexError for split and tensordot)
    with pytest.raises(dg.DualgpuError) as info:
        dg.grad(lambda x: np.sum(fn(x)))(x)
    assert isinstance(info.value, np.exceptions.AxisError) or "tensordot" in name
    msg = str(info.value)
    assert "out of bounds" in msg or "repeated" in msg


@pytest.mark.parametrize("fn", [lambda x: np.sum(x, axis=1.5),
                                lambda x: np.cumsum(x, axis=(0, 1)),
                                lambda x: np.take(x, [0], axis=(0,))])
def test_non_integer_axes_raise(fn):
    with pytest.raises(TypeError):
        fn(np.ones((2, 3)))  # NumPy itself
    with pytest.raises(dg.DualgpuError, match="not an integer"):
        dg.jit(fn)(np.ones((2, 3)))


def test_repeated_axes_raise():
    x = np.ones((2, 3))
    for fn in (lambda x: np.sum(x, axis=(0, 0)), lambda x: np.moveaxis(x, (0, 0), (0, 1)),
               lambda x: np.expand_dims(x, (0, 0))):
        with pytest.raises(dg.DualgpuError, match="repeated"):
            dg.jit(fn)(x)


@pytest.mark.parametrize("fn", [
    lambda x: np.transpose(x, (-1, 0, -2)),
    lambda x: np.concatenate([x, x], axis=-1),
    lambda x: np.stack([x, x], axis=-1),
    lambda x: np.take(x, [1, 0], axis=-2),
    lambda x: np.tensordot(x, np.ones((4, 2)), axes=([-1], [-2])),
    lambda x: np.sum(x, axis=(-1, -3)),
    lambda x: np.expand_dims(x, -1),
    lambda x: np.moveaxis(x, -1, -3),
    lambda x: np.swapaxes(x, -1, 0),
    lambda x: np.split(x, 2, axis=-1)[1],
    lambda x: np.squeeze(x[:, :1], axis=-2),
    lambda x: np.cumsum(x, axis=-2),
])
def test_negative_axes_in_range_still_work(fn):
    x = RNG.uniform(-1, 1, size=(2, 3, 4))
    np.testing.assert_allclose(dg.jit(fn)(x), fn(x))
    check_grads(lambda x: fn(x) * 1.0, (x,), order=1)


# --------------------------------------------------------------------------- np.random
# (draws inside traced functions are drawn again at every call: tests/runtime/test_random_draws.py)
_py_rng = random.Random(0)


@pytest.mark.parametrize("name, fn", [
    ("python random with a traced parameter", lambda x: x * _py_rng.gauss(x[0], 1.0)),
    ("a traced size", lambda x: x * np.random.normal(size=x.astype(int)[:1])),
    ("gamma with a traced shape", lambda x: x * np.random.gamma(x)),
    ("an unseeded generator made inside", lambda x: x * np.random.default_rng().normal(size=3)),
    ("shuffle", lambda x: (np.random.shuffle(np.arange(3)), x)[1]),
])
def test_random_draws_that_a_program_cannot_repeat_are_refused(name, fn):
    with pytest.raises(dg.RandomInTraceError, match="pass them in as arguments"):
        dg.grad(lambda x: np.sum(fn(x)))(np.ones(3))
    with pytest.raises(dg.RandomInTraceError, match="random"):
        dg.jit(fn)(np.ones(3))


def test_random_draws_outside_are_fine():
    noise = np.random.default_rng(1).normal(size=3)
    g = dg.grad(lambda x, n: np.sum(x * n))(np.ones(3), noise)
    np.testing.assert_array_equal(g, noise)
    # constants of numpy.random are not calls
    assert np.random.default_rng(0).normal(size=2).shape == (2,)


# --------------------------------------------------------------------------- np.full
@pytest.mark.parametrize("fn", [
    lambda a: np.full((2, 3), a[0]) * np.arange(6.0).reshape(2, 3),
    lambda a: np.full(3, a) ** 2,                          # an array fill value, broadcast
    lambda a: np.full((2, 3), a, dtype=np.float64) + 1.0,
    lambda a: np.full_like(np.zeros((2, 3)), a[1]),        # a concrete array's shape
    lambda a: np.full_like(a, a[0] * a[2]),                # a traced array's
    lambda a: np.full_like(a, a[0], shape=(2, 2)),
])
def test_full_of_a_traced_value(fn):
    a = np.array([0.5, -1.5, 2.0])
    np.testing.assert_array_equal(dg.jit(fn)(a), fn(a))
    check_grads(fn, (a,), order=2)


def test_full_keeps_numpys_dtypes_and_refuses_a_fill_that_does_not_broadcast():
    assert dg.jit(lambda a: np.full((2,), a))(np.float32(1.0)).dtype == np.float32
    assert dg.jit(lambda a: np.full_like(np.zeros(2, np.float32), a))(1.0).dtype == np.float32
    with pytest.raises(dg.InvalidArgumentError, match=r"\(3,\) does not broadcast"):
        dg.jit(lambda a: np.full((2, 2), a))(np.ones(3))


# --------------------------------------------------------------------------- power
def test_power_at_base_zero():
    """np.power(0, y) w.r.t. y was NaN (log(0) * 0); JAX takes it as 0."""
    assert dg.grad(lambda y: np.power(0.0, y))(2.0) == 0.0
    assert dg.grad(lambda y: np.sum(np.power(np.zeros(3), y)))(np.array([1.0, 2.0, 0.5]))[0] == 0
    gx, gy = dg.grad(lambda x, y: np.power(x, y), argnums=(0, 1))(0.0, 0.0)
    assert (gx, gy) == (0.0, 0.0)
    _finite(dg.hessian(lambda y: np.power(0.0, y))(np.array(2.0)))


@pytest.mark.parametrize("y, want", [(0.0, 0.0), (1.0, 1.0), (2.0, 0.0), (3.0, 0.0),
                                     (1.5, 0.0)])
def test_power_derivative_at_x_zero(y, want):
    for yy in (y, np.array(y)):  # a Python literal exponent and an array one
        g = dg.grad(lambda x, yy=yy: np.power(x, yy))(0.0)
        assert g == want
    h_arr = dg.hessian(lambda x: np.power(x, np.array(y)))(np.array(0.0))
    h = dg.hessian(lambda x: np.power(x, y))(np.array(0.0))
    if y != 1.5:
        assert h_arr == h
    if y != 1.5:  # 1.5 * 0.5 * x**-0.5 is inf at 0, also in JAX
        assert h == (2.0 if y == 2.0 else 0.0)


# --------------------------------------------------------------------------- siblings
def test_hypot_at_origin():
    gx, gy = dg.grad(lambda x, y: np.sum(np.hypot(x, y)), argnums=(0, 1))(np.zeros(2),
                                                                            np.zeros(2))
    np.testing.assert_array_equal(gx, 0)
    np.testing.assert_array_equal(gy, 0)
    check_grads(lambda x: np.hypot(x, 2 * x + 1), (X,), order=2)


def test_logaddexp_at_infinities():
    x = np.array([-np.inf, np.inf, -np.inf, np.inf, 1.0, 0.0])
    y = np.array([-np.inf, np.inf, 1.0, 1.0, -np.inf, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(dg.jit(np.logaddexp)(x, y), np.logaddexp(x, y))
    gx, gy = dg.grad(lambda x, y: np.sum(np.logaddexp(x, y)), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [0.5, 0.5, 0, 1, 1, 0.5])
    np.testing.assert_array_equal(gy, [0.5, 0.5, 1, 0, 0, 0.5])
    # the HVP where x == y (softplus(0)) is still right: d2/dx2 logaddexp(x, 0) = 1/4
    np.testing.assert_allclose(dg.hvp(lambda x: np.sum(np.logaddexp(x, 0.0)))(
        np.zeros(1), np.ones(1)), [0.25])
    check_grads(np.logaddexp, (X, X[::-1]), order=2)


def test_xlogy_at_zero():
    """dg.nn.xlogy's x-derivative at x == 0 was 0; it is log(y) (JAX, SciPy's limit)."""
    x = np.array([0.0, 0.0, 0.0, 1.0])
    y = np.array([2.0, 0.0, np.inf, 3.0])
    gx, gy = dg.grad(lambda x, y: np.sum(dg.nn.xlogy(x, y)), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, [math.log(2), 0, 0, math.log(3)])
    np.testing.assert_allclose(gy, [0, 0, 0, 1 / 3])
    import scipy.special as ss

    np.testing.assert_array_equal(dg.jit(dg.nn.xlogy)(x, y), ss.xlogy(x, y))


def test_xlog1py_at_zero():
    """scipy.special.xlog1py's derivatives at x == 0 were 0 (its zero branch a constant):
    log1p(y) in x, and the mixed partial 1/(1 + y), as xlogy's (a Beta(a, 1) prior's
    gradient in b missed log(1 - x)); the values stay SciPy's, +0.0 included."""
    import scipy.special as ss
    import scipy.stats as st

    x = np.array([0.0, 0.0, 0.0, 0.0, 1.0])
    y = np.array([0.5, -0.5, -1.0, np.inf, 2.0])
    gx, gy = dg.grad(lambda x, y: np.sum(ss.xlog1py(x, y)), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, [math.log1p(0.5), math.log1p(-0.5), 0, 0, math.log1p(2)])
    np.testing.assert_allclose(gy, [0, 0, 0, 0, 1 / 3])
    np.testing.assert_allclose(dg.hessian(lambda p: ss.xlog1py(p[0], p[1]))(np.array([0.0, 0.5])),
                               [[0, 2 / 3], [2 / 3, 0]])
    np.testing.assert_allclose(dg.hvp(lambda t: ss.xlog1py(t, t))(0.0, 1.0), 2.0)
    got = dg.jit(lambda x, y: ss.xlog1py(x, y))(x[:2], y[:2])
    np.testing.assert_array_equal(np.signbit(got), np.signbit(ss.xlog1py(x[:2], y[:2])))
    np.testing.assert_allclose(dg.grad(lambda b: st.beta.logpdf(0.3, 2.0, b))(1.0),
                               math.log(0.7) - ss.digamma(1.0) + ss.digamma(3.0), rtol=1e-12)


def test_abs_and_sqrt_at_zero():
    """abs: gradient 0 at 0 (sign(0)); sqrt keeps NumPy/JAX's inf."""
    np.testing.assert_array_equal(dg.grad(lambda x: np.sum(np.abs(x)))(np.zeros(2)), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isinf(dg.grad(np.sqrt)(0.0))


def test_sinc_is_smooth_at_zero():
    """A removable singularity: the derivatives at 0 are right (JAX uses a series too)."""
    x = np.array([0.0, 1e-9, 0.01, 0.0318, 0.0319, 0.5, 2.0, -3.3])
    np.testing.assert_allclose(dg.jit(np.sinc)(x), np.sinc(x), rtol=1e-15, atol=1e-15)
    assert dg.grad(np.sinc)(0.0) == 0.0
    np.testing.assert_allclose(dg.hessian(np.sinc)(np.array(0.0)), -math.pi ** 2 / 3,
                               rtol=1e-14)
    check_grads(np.sinc, (x,), order=2)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_kernels_of_changed_ops_compile_with_nvcc(tmp_path):
    """The fused (value, gradient, HVP) kernels of the ops whose rules changed compile."""
    from dualgpu.codegen.cuda import region_kernels

    fns = [lambda x, y: np.sum(np.logaddexp(x, y)), lambda x, y: np.sum(np.hypot(x, y)),
           lambda x, y: np.sum(np.fmax(x, y) * np.fmin(x, y)),
           lambda x, y: np.sum(np.power(x * x + 1, y)), lambda x, y: np.std(x * y),
           lambda x, y: np.linalg.norm(x - y), lambda x, y: np.sum(dg.nn.xlogy(x, y)),
           lambda x, y: np.sum(np.sinc(x) * y)]
    sources = {}
    for dtype in (np.float32, np.float64):
        x = np.linspace(0.1, 1.0, 8).astype(dtype)
        for fn in fns:
            graph = dg.trace(dg.grad_and_hvp(fn, argnums=(0, 1)), x, x + 1, (x, x))
            for region in plan_graph(graph).regions:
                rk = region_kernels(region)
                sources[rk.name] = rk.source
                if rk.finish_name:
                    sources[rk.finish_name] = rk.finish_source
    assert len(sources) >= len(fns)
    cu = tmp_path / "kernels.cu"
    cu.write_text("\n".join(sources.values()))
    done = subprocess.run(["nvcc", "--ptx", "-x", "cu", str(cu), "-o", str(tmp_path / "k.ptx")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]


def test_complex_input_gradient_follows_jax():
    """JAX's autodiff cookbook: f(z) = x**2 + y**2 with z = x + iy, grad(f)(3 + 4j) is
    6 - 8j (the conjugate of the usual gradient), and grad(imag)(z) is -1j."""
    def f(z):
        x, y = np.real(z), np.imag(z)
        return x ** 2 + y ** 2

    z = np.array(3.0 + 4.0j)
    np.testing.assert_allclose(dg.grad(f)(z), 6 - 8j)
    np.testing.assert_allclose(dg.grad(lambda z: np.abs(z) ** 2)(z), 6 - 8j)
    np.testing.assert_allclose(dg.grad(np.imag)(z), -1j)
    np.testing.assert_allclose(dg.grad(np.real)(z), 1)


# --- signed zeros: no rewrite may change the sign of a zero --------------------------------

_SIGNED_ZERO_PROGRAMS = [
    lambda x: x + 0.0, lambda x: 0.0 + x, lambda x: x + 0, lambda x: x - 0.0,
    lambda x: x - (-0.0), lambda x: x + -0.0, lambda x: x + np.zeros_like(x),
    lambda x: x - np.zeros_like(x), lambda x: (x * 0.0, x * -0.0),
    lambda x: (np.maximum(x, 0.0), np.maximum(x, -0.0)), lambda x: x * 1.0 - 0.0,
]


@pytest.mark.parametrize("k", range(len(_SIGNED_ZERO_PROGRAMS)))
def test_jit_keeps_the_sign_of_zero(k):
    f = _SIGNED_ZERO_PROGRAMS[k]
    x = np.array([-0.0, 0.0, -1.0, 2.0])
    want, got = f(x), dg.jit(f)(x)
    for w, g in zip(*(o if isinstance(o, tuple) else (o,) for o in (want, got))):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


# --------------------------------------------------------------------------- take_along_axis
@pytest.mark.parametrize("index_shape, axis", [((1, 2), 1), ((3, 1), 1), ((1, 4), 0),
                                               ((3, 1), 0), ((3, 2), 1), ((2, 4), 0)])
def test_take_along_axis_broadcasts_its_indices_as_numpy(index_shape, axis):
    """Indices of length 1 along another axis are used for every position there (they
    selected from the first row only, a result of the wrong shape)."""
    a = np.arange(12.0).reshape(3, 4)
    idx = np.random.default_rng(sum(index_shape) + axis).integers(
        0, a.shape[axis], size=index_shape)
    want = np.take_along_axis(a, idx, axis)
    np.testing.assert_array_equal(dg.jit(lambda a: np.take_along_axis(a, idx, axis))(a), want)
    g = dg.grad(lambda a: np.sum(np.take_along_axis(a, idx, axis) ** 2))(a)
    expected = np.zeros_like(a)
    np.put_along_axis(expected, idx, 0.0, axis)
    np.add.at(expected, tuple(np.broadcast_arrays(*[
        idx if k == axis else np.arange(a.shape[k]).reshape((-1,) + (1,) * (1 - k))
        for k in range(2)])), 2 * want)
    np.testing.assert_allclose(g, expected)


def test_a_nan_bound_of_clip_gives_nan_as_numpys():
    # NumPy's clip is minimum(maximum(a, lo), hi): a NaN bound gives NaN (the comparisons
    # were False, the bound ignored)
    a = np.array([-2.5, 0.5, 3.0], np.float32)
    for lo, hi in ((0.0, np.nan), (np.nan, None), (np.array([np.nan, 0.0, 1.0]), 2.0)):
        want = np.clip(a, lo, hi)
        np.testing.assert_array_equal(dg.jit(np.clip)(a, lo, hi), want)
        np.testing.assert_array_equal(dg.jit(lambda a, lo=lo, hi=hi: np.clip(a, lo, hi))(a), want)
