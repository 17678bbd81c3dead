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


def test_cupy_hessian_operator_plus_matrices_and_toarray():
    import cupyx.scipy.sparse as csp

    def cubic(x):
        return x[0] ** 2 * x[1] + x[1] * x[2] ** 3

    p = np.array([0.7, -1.3, 0.4])
    closed = np.array([[2 * p[1], 2 * p[0], 0.0], [2 * p[0], 0.0, 3 * p[2] ** 2],
                       [0.0, 3 * p[2] ** 2, 6 * p[1] * p[2]]])
    H = dg.HessianOperator(cubic, cp.asarray(p))
    np.testing.assert_allclose(cp.asnumpy(H.toarray()), closed, rtol=1e-12, atol=1e-12)
    v = cp.asarray([1.0, -2.0, 0.5])
    for op in (H + 0.1 * cp.eye(3), H + 0.1 * csp.identity(3), H - (-0.1) * cp.eye(3)):
        np.testing.assert_allclose(cp.asnumpy(op @ v), (closed + 0.1 * np.eye(3)) @ cp.asnumpy(v),
                                   rtol=1e-12)
    with pytest.raises(dg.BackendMismatchError):
        H + np.eye(3)
