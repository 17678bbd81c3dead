"""``numpy.fft`` on traced values: NumPy's values, dtypes, shapes and errors for every
transform over drawn arguments (dtypes, ``n``, axes, ``s``, norms), and the derivatives of
the two ops underneath through every interpreter that takes them (the JVP, VJP and HVP are
the registry test's: tests/ops/test_registry.py)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.fft import rfft as numpy_rfft

import dualgpu as dg

ONE_AXIS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
SEVERAL_AXES = ("fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2")
DTYPES = (np.float64, np.float32, np.complex128, np.complex64, np.int64)


def _signal(rng, shape, dtype):
    if np.dtype(dtype).kind == "c":
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)
    return (rng.normal(size=shape) * 3).astype(dtype)


def _agrees(f, x):
    """``dg.jit(f)(x)`` is NumPy's ``f(x)`` (values, dtype, shape), or both raise."""
    try:
        want = f(x)
    except (ValueError, TypeError) as e:
        with pytest.raises(type(e).__mro__[1] if type(e) is np.exceptions.AxisError
                           else type(e)):
            dg.jit(f)(x)
        return
    got = dg.jit(f)(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 2e-5 if want.dtype in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max(
        initial=0.0)))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ONE_AXIS), st.sampled_from(DTYPES),
       st.lists(st.integers(1, 5), min_size=1, max_size=3), st.data())
def test_one_axis_transforms_are_numpys(name, dtype, shape, data):
    x = _signal(np.random.default_rng(len(shape)), tuple(shape), dtype)
    n = data.draw(st.sampled_from([None, 1, 2, 3, 6]))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    norm = data.draw(st.sampled_from([None, "backward", "ortho", "forward"]))
    _agrees(lambda x: getattr(np.fft, name)(x, n, axis, norm), x)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SEVERAL_AXES), st.sampled_from(DTYPES),
       st.lists(st.integers(1, 4), min_size=2, max_size=3), st.data())
def test_transforms_over_several_axes_are_numpys(name, dtype, shape, data):
    x = _signal(np.random.default_rng(len(shape)), tuple(shape), dtype)
    nd = len(shape)
    axes = data.draw(st.one_of(st.none(), st.lists(st.integers(-nd, nd - 1), min_size=1,
                                                   max_size=nd, unique=True)))
    if "2" in name and axes is not None:
        axes = (axes * 2)[:2] if len(set(a % nd for a in (axes * 2)[:2])) == 2 else None
    s = None
    if axes is not None and data.draw(st.booleans()):
        s = data.draw(st.lists(st.integers(1, 5), min_size=len(axes), max_size=len(axes)))
    norm = data.draw(st.sampled_from([None, "ortho", "forward"]))
    kwargs = {k: v for k, v in (("s", s), ("axes", axes)) if v is not None}
    _agrees(lambda x: getattr(np.fft, name)(x, norm=norm, **kwargs), x)


@pytest.mark.parametrize("call, error", [
    (lambda x: np.fft.fft(x, 0), ValueError),
    (lambda x: np.fft.irfft(x, -2), ValueError),
    (lambda x: np.fft.fft(x, norm="unitary"), ValueError),
    (lambda x: np.fft.fft(x, axis=2), np.exceptions.AxisError),
    (lambda x: np.fft.rfft(x * 1j), TypeError),
    (lambda x: np.fft.fftn(x, s=(2, 2), axes=(0,)), ValueError),
    (lambda x: np.fft.fft(x, out=np.empty(3, complex)), dg.UnsupportedOpError),
])
def test_bad_arguments_are_refused_as_numpy_refuses_them(call, error):
    with pytest.raises(error):
        dg.jit(call)(np.ones((3, 2)))


def test_irfft_ignores_the_imaginary_parts_numpy_ignores_and_its_gradient_says_so():
    """The zero- and Nyquist-frequency coefficients' imaginary parts do not reach the real
    signal (NumPy's irfft drops them), so their derivatives are zero."""
    def f(im):
        return np.sum(np.fft.irfft(np.array([1.0, 2.0, 0.5]) + 1j * im) ** 2)

    im = np.array([0.3, -0.7, 0.9])
    assert np.isclose(dg.jit(f)(im), f(im))
    g = dg.grad(f)(im)
    assert g[0] == 0.0 and g[2] == 0.0 and g[1] != 0.0


def test_parseval_gradient_and_hessian():
    """sum |fft(x)|^2 = n sum x^2: its gradient is 2 n x and its Hessian 2 n I."""
    x = np.random.default_rng(0).normal(size=6)
    f = lambda x: np.sum(np.abs(np.fft.fft(x)) ** 2)
    np.testing.assert_allclose(dg.grad(f)(x), 12 * x, rtol=1e-12)
    np.testing.assert_allclose(dg.hessian(f)(x), 12 * np.eye(6), atol=1e-10)


def test_vmap_batch_axes_sparsity_laplacian_and_export():
    """The interpreters beyond JVP and VJP: vmap moves the transformed axis; batch_axes
    proves a transform along another axis keeps instances apart and refuses one along the
    instance axis; the Jacobian pattern couples the entries of a line only; the forward
    Laplacian equals the Hessian's trace; an exported module computes the same values."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 4))

    def power(x):
        return np.abs(np.fft.rfft(x, axis=-1)) ** 2

    np.testing.assert_allclose(dg.vmap(power)(x), power(x), rtol=1e-12)
    f = lambda x: np.sum(np.real(np.fft.fft(x, axis=1)) ** 3, axis=1)   # one per row
    v = rng.normal(size=x.shape)
    np.testing.assert_allclose(dg.hvp(f, batch_axes=(0,))(x, v),
                               dg.hvp(lambda x: np.sum(f(x)))(x, v), rtol=1e-10)
    with pytest.raises(dg.SeparabilityError, match="fft mixes the entries along an instance"):
        dg.hvp(lambda x: np.sum(np.real(np.fft.fft(x, axis=0)) ** 3, axis=1),
               batch_axes=(0,))(x, v)
    pattern = dg.jacobian_sparsity(lambda x: np.real(np.fft.fft(x, axis=1)))(x)
    pattern = scipy.sparse.csr_matrix(pattern).toarray() != 0
    np.testing.assert_array_equal(pattern, np.kron(np.eye(3), np.ones((4, 4))) != 0)
    g = lambda x: np.sum(np.real(np.fft.ifft(np.exp(x))) ** 2)
    y = rng.normal(size=5)
    lap = dg.laplacian(g)(y)
    assert np.isclose(lap, np.trace(dg.hessian(g)(y)), rtol=1e-10)
    module = dg.export(dg.grad(lambda x: np.sum(power(x) ** 0.5)), x, name="power_grad")
    scope: dict = {}
    exec(compile(module, "<export>", "exec"), scope)
    np.testing.assert_allclose(scope["power_grad"](x),
                               dg.grad(lambda x: np.sum(power(x) ** 0.5))(x), rtol=1e-12)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("call", [
    lambda x: np.fft.irfftn(x, s=(4, None), axes=(0, 1)),   # irfft's default 2 (m - 1)
    lambda x: np.fft.irfft2(x, s=(3, None)),
    lambda x: np.fft.fftn(x, s=(None, 5), axes=(1, 1)),     # the length the first left
    lambda x: np.fft.rfftn(x, s=(None, 6), axes=(0, 0)),
])
def test_none_in_s_is_the_one_axis_transforms_default_as_numpys(call):
    """NumPy passes an entry None of ``s`` to the 1-D transform as ``n=None``: its default
    at that point, not the input's length along the axis."""
    x = np.random.default_rng(5).normal(size=(3, 4))
    want = call(x)
    got = dg.jit(call)(x)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_numpys_own_fft_functions_held_as_values_reach_the_front_end():
    """``from numpy.fft import rfft`` (or ``dg.jit(np.fft.fft)``) reaches the traced value
    through NumPy's ``__array_function__``: it is the front end's transform, not a refusal
    naming ``numpy.rfft``."""
    x = np.array([1.0, 2.0, 0.5, -1.0, 3.0])
    np.testing.assert_allclose(dg.jit(np.fft.ifft)(x), np.fft.ifft(x), rtol=1e-12)
    # the real part of rfft(x, 8) is C @ x, C the cosines of the padded DFT
    w = np.array([0.5, -1.0, 2.0, 0.25, 1.0])
    g = dg.grad(lambda x: np.sum(np.real(numpy_rfft(x, 8)) * w))(x)
    np.testing.assert_allclose(g, np.cos(2 * np.pi * np.outer(np.arange(5), np.arange(5)) / 8).T
                               @ w, atol=1e-14)


@pytest.mark.parametrize("name", ["irfft", "hfft"])
def test_irfft_and_hfft_of_float16_are_float16_as_numpys(name):
    """NumPy's irfft returns the input's real dtype made inexact: float16 for float16 values
    (complex64 gives float32)."""
    x = np.array([1.0, 2.0, -0.5, 0.25], dtype=np.float16)
    f = getattr(np.fft, name)
    got, want = dg.jit(f)(x), f(x)
    assert got.dtype == want.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-3,
                               atol=2e-3)


@pytest.mark.parametrize("call", [
    lambda x: np.fft.fftshift(x, axes=(0, 0)),
    lambda x: np.fft.ifftshift(x, axes=(1, 1, 0)),
    lambda x: np.fft.fftshift(x, axes=-1),
    lambda x: np.fft.ifftshift(x, axes=[]),
])
def test_shifts_take_numpys_axes_repeated_ones_shift_again(call):
    """NumPy's fftshift rolls once per entry of axes: a repeated axis shifts twice (it was
    refused as a repeated axis)."""
    x = np.arange(15.0).reshape(3, 5)
    np.testing.assert_array_equal(dg.jit(call)(x), call(x))
