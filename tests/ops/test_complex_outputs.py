"""Complex outputs keep their imaginary part (issue 23, item 3), with JAX's rules:

* reverse mode (grad, value_and_grad, jacrev, jacobian) of a complex output is refused
  unless ``holomorphic=True``; then the inputs must be complex and the result is the
  complex derivative ``f'(z)``;
* jacfwd of real inputs returns the complex Jacobian; of complex inputs only with
  ``holomorphic=True``;
* vjp has no ``holomorphic``: its pullback takes complex cotangents, and for a real input
  returns ``Re(ȳ · J)`` (JAX's transpose convention).

References are closed forms and central differences along the real axis (which give
``f'(z)`` for a holomorphic ``f``), never another transform of dualgpu."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

RNG = np.random.default_rng(23)
X = RNG.standard_normal(3)
Z = RNG.standard_normal(3) + 1j * RNG.standard_normal(3)

# (f, f') for holomorphic elementwise functions, closed forms
HOLOMORPHIC = {
    "times_constant": (lambda z: z * (1 + 2j), lambda z: np.full_like(z, 1 + 2j)),
    "square": (lambda z: z ** 2, lambda z: 2 * z),
    "exp": (np.exp, np.exp),
    "sin": (np.sin, np.cos),
    "cube_minus_exp": (lambda z: z ** 3 - np.exp(2 * z), lambda z: 3 * z ** 2 - 2 * np.exp(2 * z)),
    "reciprocal": (lambda z: 1 / (1 + z ** 2), lambda z: -2 * z / (1 + z ** 2) ** 2),
}


def central_difference(f, z, eps=1e-6):
    """``(f(z + ε) - f(z - ε)) / 2ε`` per element: ``f'(z)`` when ``f`` is holomorphic."""
    return (f(z + eps) - f(z - eps)) / (2 * eps)


# ------------------------------------------------------------------------- reverse mode
def test_jacrev_of_a_complex_output_is_refused_without_holomorphic():
    """It returned the identity for x * (1 + 2j): the imaginary part was dropped."""
    for jac in (dg.jacrev, dg.jacobian):
        with pytest.raises(dg.DualgpuError, match=r"returns a complex array \(complex128\).*"
                                                  r"holomorphic=True"):
            jac(lambda x: x * (1 + 2j))(X)
    with pytest.raises(dg.DualgpuError, match="holomorphic=True"):  # complex inputs too (JAX)
        dg.jacrev(lambda z: z ** 2)(Z)
    with pytest.raises(dg.DualgpuError, match="output 1 is complex"):
        dg.jacrev(lambda x: (np.sin(x), x * 1j))(X)


@pytest.mark.parametrize("name", sorted(HOLOMORPHIC))
def test_holomorphic_jacrev_is_the_complex_derivative(name):
    f, df = HOLOMORPHIC[name]
    for jac in (dg.jacrev, dg.jacobian, dg.jacfwd):
        J = jac(f, holomorphic=True)(Z)
        assert J.dtype == np.complex128
        np.testing.assert_allclose(J, np.diag(df(Z)), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(np.diag(J), central_difference(f, Z), rtol=1e-7)


def test_holomorphic_jacrev_of_a_coupled_function():
    """d(A @ z * z[0]) / dz = A * z[0] + outer(A @ z, e_0), with a complex A."""
    A = RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))
    want = A * Z[0]
    want[:, 0] += A @ Z
    for jac in (dg.jacrev, dg.jacfwd):
        np.testing.assert_allclose(jac(lambda z: A @ z * z[0], holomorphic=True)(Z), want,
                                   rtol=1e-12)


@pytest.mark.parametrize("name", sorted(HOLOMORPHIC))
def test_holomorphic_grad_is_the_complex_derivative(name):
    f, df = HOLOMORPHIC[name]
    z = Z[1]
    g = dg.grad(lambda z: f(z), holomorphic=True)(np.asarray(z))
    np.testing.assert_allclose(g, df(z), rtol=1e-12)
    np.testing.assert_allclose(dg.grad(lambda z: f(z), holomorphic=True)(complex(z)), df(z),
                               rtol=1e-12)  # a Python complex number
    value, g = dg.value_and_grad(lambda z: f(z), holomorphic=True)(np.asarray(z))
    np.testing.assert_allclose(value, f(z), rtol=1e-14)
    np.testing.assert_allclose(g, df(z), rtol=1e-12)


def test_holomorphic_grad_of_a_sum_pytrees_and_argnums():
    """d/dz_k sum(z ** 2 * w) = 2 z_k w_k; d/dw_k = z_k ** 2."""
    W = Z[::-1].copy()

    def f(p, w):
        return np.sum(p["z"] ** 2 * w)

    gz, gw = dg.grad(f, argnums=(0, 1), holomorphic=True)({"z": Z}, W)
    np.testing.assert_allclose(gz["z"], 2 * Z * W, rtol=1e-12)
    np.testing.assert_allclose(gw, Z ** 2, rtol=1e-12)
    (value, aux), g = dg.value_and_grad(lambda z: (np.sum(np.exp(z)), z.real), has_aux=True,
                                        holomorphic=True)(Z)
    np.testing.assert_allclose(g, np.exp(Z), rtol=1e-12)
    np.testing.assert_allclose(aux, Z.real)


def test_holomorphic_second_derivative():
    """JAX's holomorphic Hessian: jacfwd(jacrev(f, holomorphic), holomorphic); sum(z**3)
    has the Hessian diag(6 z)."""
    H = dg.jacfwd(dg.jacrev(lambda z: np.sum(z ** 3), holomorphic=True),
                  holomorphic=True)(Z)
    np.testing.assert_allclose(H, np.diag(6 * Z), rtol=1e-12)
    g2 = dg.grad(dg.grad(lambda z: z ** 3, holomorphic=True), holomorphic=True)(Z[0])
    np.testing.assert_allclose(g2, 6 * Z[0], rtol=1e-12)


@pytest.mark.parametrize("call, error, match", [
    (lambda: dg.grad(lambda x: np.sum(x) * 1j)(X), dg.NonScalarOutputError,
     r"complex scalar \(complex128\).*holomorphic=True"),
    (lambda: dg.value_and_grad(lambda z: np.sum(z ** 2))(Z), dg.NonScalarOutputError,
     "holomorphic=True"),
    (lambda: dg.grad(lambda x: np.sum(x * 1j), holomorphic=True)(X), dg.DualgpuError,
     r"holomorphic=True, but argument 0 \(x\) is real \(float64\).*astype"),
    (lambda: dg.grad(lambda a, z: np.sum(a * z), argnums=(0, 1), holomorphic=True)(X, Z),
     dg.DualgpuError, r"argument 0 \(a\) is real"),
    (lambda: dg.grad(lambda z: np.sum(np.abs(z)), holomorphic=True)(Z),
     dg.NonScalarOutputError, r"holomorphic=True, but the output is real \(float64\)"),
    (lambda: dg.jacrev(lambda x: x * 1j, holomorphic=True)(X), dg.DualgpuError,
     r"argument 0 \(x\) is real"),
    (lambda: dg.jacrev(lambda z: np.abs(z), holomorphic=True)(Z), dg.DualgpuError,
     r"holomorphic=True, but the output is real"),
    (lambda: dg.jacfwd(lambda z: z ** 2)(Z), dg.DualgpuError,
     r"argument 0 \(z\) is complex \(complex128\).*holomorphic=True"),
    (lambda: dg.jacfwd(lambda x: x * 1j, holomorphic=True)(X), dg.DualgpuError,
     "is real"),
    (lambda: dg.grad(lambda x: np.sum(x), holomorphic=1), dg.DualgpuError,
     "holomorphic must be True or False"),
    (lambda: dg.jacrev(lambda x: x, holomorphic="yes"), dg.DualgpuError,
     "holomorphic must be True or False"),
    # no holomorphic mode: the second-order transforms refuse complex outputs
    (lambda: dg.hvp(lambda x: np.sum(x * (1 + 2j)))(X, X), dg.NonScalarOutputError,
     "complex scalar"),
    (lambda: dg.hessian(lambda x: np.sum(x ** 2 * 1j))(X), dg.NonScalarOutputError,
     "complex scalar"),
    (lambda: dg.grad_and_hvp(lambda z: np.sum(z ** 2))(Z, Z), dg.NonScalarOutputError,
     "complex scalar"),
])
def test_refused_clearly(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_holomorphic_is_part_of_the_cache_key():
    """Building the holomorphic program first must not let a plain grad or jacrev of the
    same function reuse it (or the other way round)."""
    def f(z):
        return np.sum(z ** 2)

    np.testing.assert_allclose(dg.grad(f, holomorphic=True)(Z), 2 * Z, rtol=1e-14)
    with pytest.raises(dg.NonScalarOutputError, match="holomorphic=True"):
        dg.grad(f)(Z)

    def h(z):
        return z ** 2

    with pytest.raises(dg.DualgpuError, match="holomorphic=True"):
        dg.jacrev(h)(Z)
    np.testing.assert_allclose(dg.jacrev(h, holomorphic=True)(Z), np.diag(2 * Z), rtol=1e-14)
    with pytest.raises(dg.DualgpuError, match="holomorphic=True"):
        dg.jacrev(h)(Z)


def test_real_losses_of_complex_inputs_still_need_no_holomorphic():
    """f: C -> R keeps JAX's convention (the conjugate of the steepest-ascent direction)."""
    g = dg.grad(lambda z: np.sum(np.abs(z) ** 2))(Z)
    np.testing.assert_allclose(g, 2 * np.conj(Z), rtol=1e-12)
    J = dg.jacrev(lambda z: np.abs(z) ** 2)(Z)
    np.testing.assert_allclose(J, np.diag(2 * np.conj(Z)), rtol=1e-12)


# ------------------------------------------------------------------------- forward mode
def test_jacfwd_of_real_inputs_returns_the_complex_jacobian():
    J = dg.jacfwd(lambda x: x * (1 + 2j))(X)
    np.testing.assert_array_equal(J, (1 + 2j) * np.eye(3))

    def f(x):
        return np.exp(1j * x) * x

    J = dg.jacfwd(f)(X)
    np.testing.assert_allclose(J, np.diag((1 + 1j * X) * np.exp(1j * X)), rtol=1e-12)
    np.testing.assert_allclose(np.diag(J), central_difference(f, X), rtol=1e-7)
    J, J_mask = dg.jacfwd(lambda x: (x * 1j, x > 0))(X)  # a bool output: zeros, as before
    np.testing.assert_array_equal(J, 1j * np.eye(3))
    assert J_mask.dtype == bool and not J_mask.any()


# ------------------------------------------------------------------------- vjp
def test_vjp_of_a_complex_output_of_real_inputs_is_the_real_part():
    """JAX's pullback of a real input: Re(ȳ · f'(x)) (the transpose, unconjugated, of the
    real-to-complex map, then the real part)."""
    def f(x):
        return np.exp(1j * x) * x

    ybar = RNG.standard_normal(3) + 1j * RNG.standard_normal(3)
    out, pullback = dg.vjp(f, X)
    np.testing.assert_allclose(out, f(X), rtol=1e-14)
    (xbar,) = pullback(ybar)
    assert xbar.dtype == np.float64
    np.testing.assert_allclose(xbar, np.real(ybar * (1 + 1j * X) * np.exp(1j * X)),
                               rtol=1e-12)
    (xbar,) = dg.vjp(lambda x: x * (1 + 2j), X)[1](np.array([1j, 1.0, 1 + 1j]))
    np.testing.assert_allclose(xbar, [-2.0, 1.0, -1.0], rtol=1e-14)


def test_vjp_of_a_holomorphic_function_of_complex_inputs():
    """The pullback of a complex input is ȳ · f'(z), unconjugated (JAX)."""
    ybar = RNG.standard_normal(3) + 1j * RNG.standard_normal(3)
    for name, (f, df) in HOLOMORPHIC.items():
        (zbar,) = dg.vjp(f, Z)[1](ybar)
        np.testing.assert_allclose(zbar, ybar * df(Z), rtol=1e-12, err_msg=name)
