"""Complex outputs on CuPy (issue 23, item 3): holomorphic derivatives through the fused
kernels and the Jacobians' complex bases, against closed forms; complex outputs of reverse
mode refused without holomorphic=True, as on NumPy; and a NumPy export's argument checks."""
from __future__ import annotations

import numpy as np
import pytest
from gpu_device import cupy_or_skip

import dualgpu as dg

cp = cupy_or_skip()

RNG = np.random.default_rng(5)
Z = RNG.standard_normal(6) + 1j * RNG.standard_normal(6)
X = RNG.standard_normal(6)


def f(z):
    return z ** 3 - np.exp(2 * z) + np.sin(z) * (1 + 2j)


def df(z):
    return 3 * z ** 2 - 2 * np.exp(2 * z) + np.cos(z) * (1 + 2j)


def test_holomorphic_derivatives_on_cupy():
    z = cp.asarray(Z)
    g = dg.grad(lambda z: np.sum(f(z)), holomorphic=True)(z)
    assert isinstance(g, cp.ndarray) and g.dtype == cp.complex128
    np.testing.assert_allclose(cp.asnumpy(g), df(Z), rtol=1e-12)
    for jac in (dg.jacrev, dg.jacfwd):
        J = jac(f, holomorphic=True)(z)
        np.testing.assert_allclose(cp.asnumpy(J), np.diag(df(Z)), rtol=1e-12, atol=1e-14)


def test_complex_jacobian_of_real_inputs_and_refusals_on_cupy():
    x = cp.asarray(X)
    J = dg.jacfwd(lambda x: np.exp(1j * x) * x)(x)
    np.testing.assert_allclose(cp.asnumpy(J), np.diag((1 + 1j * X) * np.exp(1j * X)),
                               rtol=1e-12)
    (xbar,) = dg.vjp(lambda x: x * (1 + 2j), x)[1](cp.full(6, 1j))
    np.testing.assert_allclose(cp.asnumpy(xbar), np.full(6, -2.0), rtol=1e-14)
    with pytest.raises(dg.DualgpuError, match="holomorphic=True"):
        dg.jacrev(lambda x: x * (1 + 2j))(x)
    with pytest.raises(dg.NonScalarOutputError, match="holomorphic=True"):
        dg.grad(lambda z: np.sum(z ** 2))(cp.asarray(Z))


def test_cupy_export_checks_arguments_on_the_device():
    """The CuPy module's checks are the shared helper's: a NumPy array, another shape and a
    Fortran-ordered array are refused naming the argument."""
    g = dg.grad(lambda w, X: np.sum(np.tanh(X @ w) ** 2))
    w, A = cp.asarray(X[:3]), cp.asarray(RNG.standard_normal((4, 3)))
    ns: dict = {}
    exec(dg.export(g, w, A, name="g"), ns)
    cp.testing.assert_allclose(ns["g"](w, A), g(w, A), rtol=1e-12)
    with pytest.raises(TypeError, match=r"argument 0 \(w\): expected a cupy.ndarray"):
        ns["g"](cp.asnumpy(w), A)
    with pytest.raises(ValueError, match=r"argument 1 \(X\) is float64\[5, 3\]"):
        ns["g"](w, cp.ones((5, 3)))
    with pytest.raises(ValueError, match=r"argument 1 \(X\) is not C-contiguous"):
        ns["g"](w, cp.asfortranarray(A))
