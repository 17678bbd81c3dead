"""The user scenarios of DESIGN.md on NumPy (scenario 3 lives in tests/frontend/test_sparse.py)."""
import numpy as np
import pytest
from export_scenarios import dense_loss
from scipy.sparse.linalg import cg

import dualgpu as dg

rng = np.random.default_rng(42)


def dense_grad_analytic(p, X, y):
    W, b = p[:10], p[10]
    s = 1 / (1 + np.exp(-(W @ X + b)))
    r = 2 * (s - y) / y.size * s * (1 - s)
    return np.concatenate([X @ r, [r.sum()]])


def test_scenario1_hvp_matches_fd_of_analytic_gradient():
    X, y, p = rng.standard_normal((10, 4)), rng.random(4), rng.standard_normal(11)
    np.testing.assert_allclose(dg.grad(dense_loss)(p, X, y), dense_grad_analytic(p, X, y),
                               rtol=1e-12)
    for _ in range(3):
        v = rng.standard_normal(11)
        eps = 1e-5
        fd = (dense_grad_analytic(p + eps * v, X, y)
              - dense_grad_analytic(p - eps * v, X, y)) / (2 * eps)
        hv = dg.hvp(dense_loss)(p, X, y, v)
        assert np.linalg.norm(hv - fd) / np.linalg.norm(fd) < 1e-7


def test_scenario1_operator_in_cg_counts_products():
    X, y, p = rng.standard_normal((10, 4)), rng.random(4), rng.standard_normal(11)
    H = dg.HessianOperator(dense_loss, p, X, y)
    g = dg.grad(dense_loss)(p, X, y)
    from scipy.sparse.linalg import aslinearoperator

    # the Hessian can be indefinite: shift it as a cubic-regularised step would
    shifted = H.op + aslinearoperator(np.eye(11))
    step, info = cg(shifted, -g, maxiter=100)
    assert info == 0 and H.nprod > 0
    np.testing.assert_allclose(H @ step + step, -g, atol=1e-4)
    Hd = np.stack([H @ e for e in np.eye(11)], axis=1)
    np.testing.assert_allclose(Hd, Hd.T, atol=1e-12)
    np.testing.assert_allclose(Hd, dg.hessian(dense_loss)(p, X, y), atol=1e-12)


def f_batch(x, mu):
    return np.exp(-np.sum((x - mu[:, None, None, :]) ** 2, axis=0))


def test_scenario2_per_particle_hvp_equals_blocks():
    n = 4
    x = rng.standard_normal((3, n, n, n))
    mu = rng.standard_normal((3, n))
    v = rng.standard_normal(x.shape)
    hv = dg.hvp(f_batch, batch_axes=(1, 2, 3))(x, mu, v)
    g, hv2 = dg.grad_and_hvp(f_batch, batch_axes=(1, 2, 3))(x, mu, v)
    np.testing.assert_array_equal(hv, hv2)
    # per particle: f = exp(-|r|^2), grad = -2 r f, H = (4 r r^T - 2 I) f
    r = x - mu[:, None, None, :]
    f = np.exp(-np.sum(r ** 2, axis=0))
    np.testing.assert_allclose(g, -2 * r * f, rtol=1e-12, atol=1e-14)
    rv = np.sum(r * v, axis=0)
    np.testing.assert_allclose(hv, (4 * r * rv - 2 * v) * f, rtol=1e-10, atol=1e-14)
    val, _, _ = dg.grad_and_hvp(f_batch, batch_axes=(1, 2, 3), return_value=True)(x, mu, v)
    assert np.isclose(val, f.sum())


@pytest.mark.parametrize("coupled", [
    lambda x, mu: np.exp(-np.sum(x ** 2, axis=1))[:, :, 0],             # sums over instances
    lambda x, mu: np.exp(-np.sum(x, axis=0)) * np.sum(x),                # global coupling
    lambda x, mu: np.sum(x[:, ::-1] * x, axis=0),                        # reverses instances
    lambda x, mu: np.sum(x * x[:, :1], axis=0),                         # broadcasts one
    lambda x, mu: np.sum(x.reshape(3, 8, 8)[:, ::-1].reshape(3, 4, 4, 4), axis=0),
])
def test_scenario2_coupling_refused(coupled):
    n = 4
    x = rng.standard_normal((3, n, n, n))
    mu = rng.standard_normal((3, n))
    with pytest.raises(dg.SeparabilityError, match="couples|per instance|one value"):
        dg.hvp(coupled, batch_axes=(1, 2, 3))(x, mu, x)


def test_scenario2_separable_forms_accepted():
    n = 3
    x = rng.standard_normal((3, n, n, n))
    mu = rng.standard_normal((3, n))
    W = rng.standard_normal((3, 3))

    def f(x, mu):
        y = np.einsum("ij,jabc->iabc", W, x)            # mixes coordinates only
        z = np.transpose(y, (0, 3, 1, 2)).sum(axis=0)   # moves instance axes around
        return np.tanh(np.transpose(z, (1, 2, 0))) + x[0] * mu[0][None, None, :]

    v = rng.standard_normal(x.shape)
    hb = dg.hvp(f, batch_axes=(1, 2, 3))(x, mu, v)
    hs = dg.hvp(lambda x, mu: np.sum(f(x, mu)))(x, mu, v)
    np.testing.assert_allclose(hb, hs)
