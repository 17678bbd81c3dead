"""HessianOperator on CuPy inputs is a cupyx LinearOperator: algebra, blocks, cupyx solvers."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

cp = pytest.importorskip("cupy")
splinalg = pytest.importorskip("cupyx.scipy.sparse.linalg")


def f(x):
    return np.sum(x ** 4) / 4 + np.sum(np.sin(x[:-1] * x[1:]))


def test_cupy_hessian_operator_algebra_and_solvers():
    x = np.linspace(-0.8, 0.9, 6)
    dense = dg.hessian(f)(x)
    H = dg.HessianOperator(f, cp.asarray(x))
    assert isinstance(H, splinalg.LinearOperator)
    eye = splinalg.aslinearoperator(cp.eye(6))
    v = cp.arange(6.0) - 2.5
    damped = H + 2.0 * eye
    np.testing.assert_allclose(cp.asnumpy(damped @ v), (dense + 2 * np.eye(6)) @ cp.asnumpy(v),
                               rtol=1e-12)
    V = cp.asarray(np.random.default_rng(0).standard_normal((6, 3)))
    out = H @ V
    assert isinstance(out, cp.ndarray)
    np.testing.assert_allclose(cp.asnumpy(out), dense @ cp.asnumpy(V), rtol=1e-12)
    sol, info = splinalg.cg(damped, cp.ones(6), maxiter=100)  # cupyx's default tolerance
    assert info == 0
    np.testing.assert_allclose(cp.asnumpy(sol), np.linalg.solve(dense + 2 * np.eye(6),
                                                                 np.ones(6)), rtol=1e-4)
    assert H.nprod >= 4
