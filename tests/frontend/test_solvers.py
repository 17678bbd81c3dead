"""HessianOperator inside scipy.sparse.linalg solvers, and dg.grad / dg.hessp inside
scipy.optimize.minimize."""
import numpy as np
import pytest
import scipy.sparse.linalg as spla
from scipy.optimize import minimize, rosen, rosen_der, rosen_hess_prod

import dualgpu as dg

rng = np.random.default_rng(7)
N = 12
M = rng.standard_normal((N, N))
A_SPD = M @ M.T / N + np.eye(N)          # symmetric positive definite
A_IND = (M + M.T) / 2                    # symmetric indefinite
B = rng.standard_normal(N)


def quad_spd(x):
    return 0.5 * x @ (A_SPD @ x) + np.sum(np.cos(x)) * 0.0


def quad_ind(x):
    return 0.5 * x @ (A_IND @ x)


def quad_arg(x, A):
    return 0.5 * x @ (A @ x)


def smooth(x):
    """Strictly convex, non-quadratic: H = A_SPD + diag(exp(x))."""
    return 0.5 * x @ (A_SPD @ x) + np.sum(np.exp(x))


def rosen_dg(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


X0 = rng.standard_normal(N)


def test_operator_basics():
    H = dg.HessianOperator(quad_spd, X0)
    assert H.shape == (N, N) and H.dtype == np.float64
    v = rng.standard_normal(N)
    np.testing.assert_allclose(H @ v, A_SPD @ v, rtol=1e-12)
    np.testing.assert_allclose(H.matvec(v[:, None]), (A_SPD @ v)[:, None], rtol=1e-12)
    V = rng.standard_normal((N, 3))
    np.testing.assert_allclose(H @ V, A_SPD @ V, rtol=1e-12)
    np.testing.assert_allclose(H.matmat(V), A_SPD @ V, rtol=1e-12)
    assert H.nprod == 1 + 1 + 3 + 3
    assert "HessianOperator 12x12" in repr(H)


def test_operator_extra_args_and_argnums():
    H = dg.HessianOperator(quad_arg, X0, A_SPD)
    v = rng.standard_normal(N)
    np.testing.assert_allclose(H @ v, A_SPD @ v, rtol=1e-12)

    def swapped(A, x):
        return quad_arg(x, A)

    H2 = dg.HessianOperator(swapped, X0, A_SPD, argnums=1)
    np.testing.assert_allclose(H2 @ v, A_SPD @ v, rtol=1e-12)


@pytest.mark.parametrize("use_op", [True, False], ids=["H.op", "H"])
def test_cg(use_op):
    H = dg.HessianOperator(quad_spd, X0)
    x, info = spla.cg(H.op if use_op else H, B, rtol=1e-10, maxiter=200)
    assert info == 0
    np.testing.assert_allclose(A_SPD @ x, B, atol=1e-8)
    assert 0 < H.nprod <= 200


def test_minres_indefinite():
    H = dg.HessianOperator(quad_ind, X0)
    x, info = spla.minres(H, B, rtol=1e-12, maxiter=500)
    assert info == 0
    np.testing.assert_allclose(A_IND @ x, B, atol=1e-6)


def test_gmres():
    H = dg.HessianOperator(smooth, X0)
    x, info = spla.gmres(H, B, rtol=1e-12, restart=N, maxiter=10)
    assert info == 0
    Hd = A_SPD + np.diag(np.exp(X0))
    np.testing.assert_allclose(Hd @ x, B, atol=1e-8)


def test_eigsh_top_and_bottom():
    H = dg.HessianOperator(quad_ind, X0)
    want = np.linalg.eigvalsh(A_IND)
    top = spla.eigsh(H, k=3, which="LA", return_eigenvectors=False)
    np.testing.assert_allclose(np.sort(top), want[-3:], rtol=1e-8)
    bottom = spla.eigsh(H.op, k=2, which="SA", return_eigenvectors=False)
    np.testing.assert_allclose(np.sort(bottom), want[:2], rtol=1e-8)


def test_operator_matches_dense_hessian():
    H = dg.HessianOperator(smooth, X0)
    Hd = np.stack([H @ e for e in np.eye(N)], axis=1)
    np.testing.assert_allclose(Hd, dg.hessian(smooth)(X0), rtol=1e-12)
    np.testing.assert_allclose(Hd, A_SPD + np.diag(np.exp(X0)), rtol=1e-12)


def test_float32_operator_accepts_float64_vectors():
    x = X0.astype(np.float32)
    H = dg.HessianOperator(smooth, x)
    out = H @ np.ones(N)
    assert out.dtype == np.float32
    x32, info = spla.cg(H, B.astype(np.float32), rtol=1e-5, maxiter=200)
    assert info == 0


def test_hessp_matches_scipy_rosenbrock():
    x = rng.standard_normal(6)
    p = rng.standard_normal(6)
    np.testing.assert_allclose(dg.hessp(rosen_dg)(x, p), rosen_hess_prod(x, p), rtol=1e-10)
    np.testing.assert_allclose(dg.grad(rosen_dg)(x), rosen_der(x), rtol=1e-10)
    assert np.isclose(rosen_dg(x), rosen(x))


@pytest.mark.parametrize("method", ["trust-krylov", "trust-ncg", "Newton-CG"])
def test_minimize_rosenbrock(method):
    x0 = np.full(6, -1.0)
    res = minimize(rosen_dg, x0, jac=dg.grad(rosen_dg), hessp=dg.hessp(rosen_dg),
                   method=method, options={"maxiter": 500})
    assert res.success, res.message
    np.testing.assert_allclose(res.x, np.ones(6), atol=1e-3)
    # the same iterates as scipy's hand-written Rosenbrock derivatives
    ref = minimize(rosen, x0, jac=rosen_der, hessp=rosen_hess_prod, method=method,
                   options={"maxiter": 500})
    assert res.nit == ref.nit
    np.testing.assert_allclose(res.x, ref.x, rtol=1e-8)


@pytest.mark.parametrize("method", ["trust-krylov", "trust-ncg", "Newton-CG"])
def test_minimize_with_args_and_value_and_grad(method):
    # its own generator: the module's rng draws in the order xdist runs the tests, and
    # trust-ncg missed its tolerance for one of those targets
    target = np.random.default_rng(7).standard_normal(N)

    def loss(x, A, t):
        d = x - t
        return 0.5 * d @ (A @ d) + 0.1 * np.sum(d ** 4)

    res = minimize(dg.value_and_grad(loss), np.zeros(N), args=(A_SPD, target), jac=True,
                   hessp=dg.hessp(loss), method=method, options={"maxiter": 200})
    assert res.success, res.message
    np.testing.assert_allclose(res.x, target, atol=1e-5)


def test_hessp_argnums():
    def loss(A, x):
        return quad_arg(x, A)

    p = rng.standard_normal(N)
    np.testing.assert_allclose(dg.hessp(loss, argnums=1)(X0, p, A_SPD), A_SPD @ p, rtol=1e-12)


def test_operator_counts_products_in_cubic_newton_style_loop():
    H = dg.HessianOperator(smooth, X0)
    shifted = spla.LinearOperator(H.shape, matvec=lambda v: H @ v + 0.5 * v, dtype=H.dtype)
    _, info = spla.cg(shifted, B, rtol=1e-10)
    assert info == 0 and H.nprod >= 1
    n = H.nprod
    H @ B
    assert H.nprod == n + 1


def test_minimize_with_hvp_as_hessp_names_dg_hessp():
    """scipy calls hessp(x, p, *args): dg.hvp(f) takes (x, *args, v), so with extra
    arguments the direction lands on the wrong argument; the error says to use dg.hessp."""
    def loss(w, X):
        return np.sum((X @ w - 1.0) ** 2)

    X = np.arange(6.0).reshape(2, 3) / 6
    with pytest.raises(dg.ShapeMismatchError, match=r"dg\.hessp\(f\)"):
        minimize(loss, np.zeros(3), args=(X,), jac=dg.grad(loss), hessp=dg.hvp(loss),
                 method="Newton-CG")
    res = minimize(loss, np.zeros(3), args=(X,), jac=dg.grad(loss), hessp=dg.hessp(loss),
                   method="Newton-CG")
    np.testing.assert_allclose(X @ res.x, 1.0, atol=1e-6)
