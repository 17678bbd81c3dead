"""Issue 28, part O: the weighted Laplacian (``dg.laplacian(sigma=S)``: tr(S Sᵀ H)), the
randomized Laplacian (``method="hutchinson"``) and ``dg.biharmonic`` (exact and randomized),
against dense Hessians, nested Laplacians and closed forms; batched and not, per-instance
sigma, float32 and float64, chunked, gradients through sigma and through parameters against
central differences, unbiasedness with fixed seeds, and the errors."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_registry import SPECS
from test_vmap import _SETTINGS

import dualgpu as dg
from dualgpu.frontend import numpy as dnp

TOL = {np.float64: dict(rtol=1e-10, atol=1e-10), np.float32: dict(rtol=2e-4, atol=2e-4)}


def _net(rng, d, width=5, dtype=np.float64):
    """A small tanh MLP and a cubic coupling term: ``u(X)`` per row of ``X`` (points,
    ``d``), and ``u_one(p)`` of one point (weights in ``dtype``)."""
    W1 = (rng.standard_normal((d, width)) / 2).astype(dtype)
    W2 = (rng.standard_normal((width, 1)) / 2).astype(dtype)

    def u(X):
        return (np.tanh(X @ W1) @ W2)[:, 0] + np.sum(X ** 3, axis=1) * X[:, 0]

    def u_one(p):
        return np.sum(np.tanh(p @ W1) @ W2) + np.sum(p ** 3) * p[0]

    return u, u_one


def _weighted(H, S):
    return np.trace(S.T @ H @ S)


# ------------------------------------------------------------------ weighted Laplacian
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_weighted_laplacian_against_dense_hessian(dtype):
    rng = np.random.default_rng(0)
    _, u_one = _net(rng, 3, dtype=dtype)
    x = rng.standard_normal(3)
    H = dg.hessian(u_one)(x)
    for R in (1, 2, 5):
        S = rng.standard_normal((3, R))
        got = dg.laplacian(u_one, sigma=S.astype(dtype))(x.astype(dtype))
        assert got.dtype == dtype and got.shape == ()
        np.testing.assert_allclose(got, _weighted(H, S), **TOL[dtype])
        chunked = dg.laplacian(u_one, sigma=S, chunk_size=2)(x.astype(dtype))
        np.testing.assert_allclose(chunked, _weighted(H, S), **TOL[dtype])
    # the identity is the plain Laplacian; a non-scalar output is per element
    np.testing.assert_allclose(dg.laplacian(u_one, sigma=np.eye(3))(x), np.trace(H),
                               rtol=1e-12)
    f = lambda x: np.sin(x) * np.sum(x ** 2)                       # noqa: E731
    S = rng.standard_normal((3, 2))
    got = dg.laplacian(f, sigma=S)(x)
    for k in range(3):
        Hk = dg.hessian(lambda x, k=k: f(x)[k])(x)
        np.testing.assert_allclose(got[k], _weighted(Hk, S), rtol=1e-10)


def test_weighted_laplacian_of_two_arguments_and_matrix_input():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(2), rng.standard_normal((2, 2))
    f = lambda a, b: np.sum(np.tanh(b @ a) ** 2) + np.sum(a ** 3) * b[0, 1]  # noqa: E731
    S = rng.standard_normal((6, 3))                # D = 2 + 4, coordinates a then b
    flat = lambda z: f(z[:2], z[2:].reshape(2, 2))                 # noqa: E731
    H = dg.hessian(flat)(np.concatenate([a, b.ravel()]))
    np.testing.assert_allclose(dg.laplacian(f, argnums=(0, 1), sigma=S)(a, b),
                               _weighted(H, S), rtol=1e-10)
    # batched, two arguments, one sigma per instance over both arguments' coordinates
    A = rng.standard_normal((2, 3))
    g = lambda a, b: np.sum(np.tanh(a @ A) * b, axis=1) + np.sum(a ** 3, axis=1) * b[:, 0]  # noqa: E731,E501
    a, b, Sb = rng.standard_normal((4, 2)), rng.standard_normal((4, 3)), \
        rng.standard_normal((4, 5, 2))
    one = lambda z: g(z[None, :2], z[None, 2:])[0]                 # noqa: E731
    pts = np.concatenate([a, b], axis=1)
    np.testing.assert_allclose(dg.laplacian(g, argnums=(0, 1), batch_axes=0, sigma=Sb)(a, b),
                               [_weighted(dg.hessian(one)(p), s) for p, s in zip(pts, Sb)],
                               rtol=1e-10)
    np.testing.assert_allclose(dg.biharmonic(g, argnums=(0, 1), batch_axes=0)(a, b),
                               [dg.biharmonic(one)(p) for p in pts], rtol=1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_weighted_laplacian_batched_shared_and_per_instance(dtype):
    rng = np.random.default_rng(2)
    u, u_one = _net(rng, 3, dtype=dtype)
    X = rng.standard_normal((6, 3))
    Hs = [dg.hessian(u_one)(p) for p in X]
    S = rng.standard_normal((3, 2))
    Sb = rng.standard_normal((6, 3, 4))
    Xd = X.astype(dtype)
    shared = dg.laplacian(u, batch_axes=0, sigma=S)(Xd)
    per = dg.laplacian(u, batch_axes=0, sigma=Sb)(Xd)
    assert shared.dtype == dtype and per.shape == (6,)
    np.testing.assert_allclose(shared, [_weighted(H, S) for H in Hs], **TOL[dtype])
    np.testing.assert_allclose(per, [_weighted(H, s) for H, s in zip(Hs, Sb)], **TOL[dtype])
    # chunked over the directions, and by a memory budget: exact
    np.testing.assert_allclose(dg.laplacian(u, batch_axes=0, sigma=Sb, chunk_size=3)(Xd),
                               per, **TOL[dtype])
    np.testing.assert_allclose(dg.laplacian(u, batch_axes=0, sigma=Sb,
                                            memory_budget=2000)(Xd), per, **TOL[dtype])
    # instances along the last axis: sigma's batch axes are the argument's
    np.testing.assert_allclose(dg.laplacian(lambda xt: u(xt.T), batch_axes=1, sigma=Sb)(
        Xd.T), per, **TOL[dtype])
    # two batch axes, in either order: sigma's batch axes follow batch_axes, as the result's
    Xg, Sg = rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3, 3, 2))
    ug = lambda X: u(X.reshape(-1, 3)).reshape(X.shape[:2])      # noqa: E731
    want = [[_weighted(dg.hessian(u_one)(Xg[i, j]), Sg[i, j]) for j in range(3)]
            for i in range(2)]
    np.testing.assert_allclose(dg.laplacian(ug, batch_axes=(0, 1), sigma=Sg)(Xg), want,
                               rtol=1e-9)
    np.testing.assert_allclose(
        dg.laplacian(lambda X: ug(X).T, batch_axes=(1, 0), sigma=np.swapaxes(Sg, 0, 1))(Xg),
        np.transpose(want), rtol=1e-9)
    # a new sigma of the same shape reuses the program and gives its own answer
    lap = dg.laplacian(u, batch_axes=0, sigma=2 * Sb)
    np.testing.assert_allclose(lap(Xd), 4 * per, **TOL[dtype])


def test_weighted_laplacian_gradients_through_sigma_and_parameters():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((4, 2))
    W2 = rng.standard_normal((5, 1))

    def residual(W, Sb):
        u = lambda X: (np.tanh(X @ W) @ W2)[:, 0]                  # noqa: E731
        return np.mean(dg.laplacian(u, batch_axes=0, sigma=Sb)(X) ** 2)

    W, Sb = rng.standard_normal((2, 5)) / 2, rng.standard_normal((4, 2, 3))
    gW, gS = dg.grad(residual, argnums=(0, 1))(W, Sb)
    for arr, g, idx, which in ((W, gW, (1, 3), 0), (Sb, gS, (2, 1, 2), 1)):
        E = np.zeros_like(arr)
        E[idx] = 1e-6
        args_p = [W, Sb]
        args_m = [W, Sb]
        args_p[which], args_m[which] = arr + E, arr - E
        fd = (residual(*args_p) - residual(*args_m)) / 2e-6
        np.testing.assert_allclose(g[idx], fd, rtol=1e-6, atol=1e-8)
    # sigma computed inside the differentiated function (sigma(x) of a Fokker-Planck
    # equation from parameters), under jit too
    def loss(theta):
        Sb = np.tanh(theta * X)[:, :, None] * np.ones((1, 1, 2))
        return residual(W, Sb)

    theta = np.array(0.7)
    fd = (loss(theta + 1e-6) - loss(theta - 1e-6)) / 2e-6
    np.testing.assert_allclose(dg.grad(loss)(theta), fd, rtol=1e-6)
    np.testing.assert_allclose(dg.jit(dg.grad(loss))(theta), fd, rtol=1e-6)


def test_weighted_laplacian_errors():
    u = lambda x: np.sum(x ** 3)                                   # noqa: E731
    x = np.ones(3)
    with pytest.raises(dg.ShapeMismatchError, match="sigma must have shape"):
        dg.laplacian(u, sigma=np.ones((2, 2)))(x)
    with pytest.raises(dg.ShapeMismatchError, match="sigma must have shape"):
        dg.laplacian(u, sigma=np.ones(3))
    with pytest.raises(dg.ShapeMismatchError, match=r"sigma.*\(3, R\)"):
        dg.laplacian(u, sigma=np.ones((4, 3, 2)))(x)               # batch without batch_axes
    with pytest.raises(dg.ArgumentTypeError, match="sigma must be a real floating-point"):
        dg.laplacian(u, sigma=np.ones((3, 2), dtype=int))
    with pytest.raises(dg.ArgumentTypeError, match="sigma"):
        dg.laplacian(u, sigma=np.ones((3, 2), dtype=complex))
    X = np.ones((4, 3))
    v = lambda X: np.sum(X ** 3, axis=1)                           # noqa: E731
    with pytest.raises(dg.ShapeMismatchError, match=r"\(4, 3, R\)"):
        dg.laplacian(v, batch_axes=0, sigma=np.ones((5, 3, 2)))(X)
    with pytest.raises(dg.InvalidArgumentError, match="chunk_size or memory_budget"):
        dg.laplacian(u, sigma=np.ones((3, 2)), chunk_size=1, memory_budget=10)


@pytest.mark.parametrize("name", sorted(n for n, s in SPECS.items() if s.kind == "diff"))
@settings(max_examples=1, **_SETTINGS)
@given(data=st.data())
def test_weighted_laplacian_of_every_op(name, data):
    """Every differentiable entry of the registry table with two random directions (no
    identity seeds: the rules' pairings of Jacobians must not assume them), against
    ``sum_r s_r . H s_r`` by HVPs of the output contracted with a random cotangent."""
    f, args = SPECS[name].build(data, np.float64)
    out = np.asarray(f(*args))
    ybar = np.random.default_rng(3).standard_normal(out.shape)
    for i, a in enumerate(args):
        if np.asarray(a).dtype.kind != "f" or np.size(a) == 0:
            continue
        S = np.random.default_rng(4).standard_normal((np.size(a), 2))
        g = lambda *xs: dnp.sum(dnp.multiply(f(*xs), ybar))      # noqa: E731, B023
        hvp = dg.hvp(g, argnums=i)
        want = sum(float(np.sum(S[:, r] * np.ravel(
            hvp(*args, S[:, r].reshape(np.shape(a)))))) for r in range(2))
        lap = np.asarray(dg.laplacian(f, argnums=i, sigma=S)(*args))
        assert lap.shape == out.shape
        np.testing.assert_allclose(np.sum(lap * ybar), want, rtol=1e-7, atol=1e-8)


# ------------------------------------------------------------------ randomized Laplacian
def _draw(seed, shape, K, distribution="rademacher"):
    """The documented draw: ``default_rng(seed)``, scaled by ``1/sqrt(K)``."""
    rng = np.random.default_rng(seed)
    V = rng.standard_normal(shape) if distribution == "gaussian" else \
        rng.integers(0, 2, size=shape) * 2.0 - 1.0
    return V / np.sqrt(K)


@pytest.mark.parametrize("distribution", ["rademacher", "gaussian"])
def test_hutchinson_laplacian_is_the_weighted_laplacian_of_its_draws(distribution):
    rng = np.random.default_rng(4)
    u, u_one = _net(rng, 3)
    x, X = rng.standard_normal(3), rng.standard_normal((5, 3))
    est = dg.laplacian(u_one, method="hutchinson", num_samples=6, seed=11,
                       distribution=distribution)
    np.testing.assert_allclose(est(x), dg.laplacian(u_one, sigma=_draw(11, (3, 6), 6,
                                                                        distribution))(x),
                               rtol=1e-12)
    # one set of directions per instance with batch_axes
    est_b = dg.laplacian(u, batch_axes=0, method="hutchinson", samples=6, seed=11,
                         distribution=distribution)
    want = dg.laplacian(u, batch_axes=0, sigma=_draw(11, (5, 3, 6), 6, distribution))(X)
    np.testing.assert_allclose(est_b(X), want, rtol=1e-12)
    # a seed fixes them at every call, traced or not; seed=None draws anew
    np.testing.assert_array_equal(est_b(X), est_b(X))
    np.testing.assert_allclose(dg.jit(est_b)(X), want, rtol=1e-12)
    fresh = dg.laplacian(u, batch_axes=0, method="hutchinson", num_samples=6, seed=None)
    assert not np.array_equal(fresh(X), fresh(X))


def test_new_directions_reuse_the_program():
    """sigma's values, the seed and a new transform object of the same options are not in
    the cache key: one build per shape."""
    u = lambda X: np.sum(np.tanh(X) ** 3, axis=1)                # noqa: E731
    X = np.random.default_rng(0).standard_normal((4, 3))
    dg.laplacian(u, batch_axes=0, sigma=np.ones((4, 3, 2)))(X)
    dg.biharmonic(u, batch_axes=0, method="hutchinson", num_samples=2, seed=0)(X)
    before = dg.cache_info()["misses"]
    for k in range(3):
        dg.laplacian(u, batch_axes=0, sigma=np.full((4, 3, 2), k + 1.0))(X)
        dg.biharmonic(u, batch_axes=0, method="hutchinson", num_samples=2, seed=k)(X)
    assert dg.cache_info()["misses"] == before
    dg.laplacian(u, batch_axes=0, sigma=np.ones((4, 3, 5)))(X)    # a new R: a new program
    assert dg.cache_info()["misses"] == before + 1


def test_hutchinson_laplacian_is_unbiased():
    """The mean over 400 seeds of 4-sample estimates is within 5 standard errors of the
    exact per-point Laplacians (deterministic seeds: the test cannot flake), and the
    standard error itself is the one of Hutchinson's estimator (not zero: the directions
    do differ)."""
    rng = np.random.default_rng(5)
    u, _ = _net(rng, 4)
    X = rng.standard_normal((3, 4))
    exact = dg.laplacian(u, batch_axes=0)(X)
    for distribution in ("rademacher", "gaussian"):
        est = [dg.laplacian(u, batch_axes=0, method="hutchinson", num_samples=4, seed=s,
                            distribution=distribution)(X) for s in range(400)]
        est = np.array(est)
        se = est.std(axis=0) / np.sqrt(len(est))
        assert np.all(se > 0)
        assert np.all(np.abs(est.mean(axis=0) - exact) < 5 * se), (est.mean(axis=0), exact)
    # chunked over the directions: the same estimate
    a = dg.laplacian(u, batch_axes=0, method="hutchinson", num_samples=8, seed=3)(X)
    b = dg.laplacian(u, batch_axes=0, method="hutchinson", num_samples=8, seed=3,
                     chunk_size=3)(X)
    np.testing.assert_allclose(a, b, rtol=1e-12)


def test_hutchinson_weighted_laplacian():
    """``sigma`` with ``method="hutchinson"``: the weighted Laplacian of ``S V / sqrt(K)``,
    ``V`` of shape ``(R, K)`` per instance (``E[V Vᵀ] = K I``): unbiased for tr(S Sᵀ H), at
    the cost of ``K`` directions instead of ``R``; differentiable in ``S``."""
    rng = np.random.default_rng(9)
    u, _ = _net(rng, 3)
    X = rng.standard_normal((3, 3))
    for S in (rng.standard_normal((3, 6)), rng.standard_normal((3, 3, 6))):
        got = dg.laplacian(u, batch_axes=0, sigma=S, method="hutchinson", num_samples=2,
                           seed=5)(X)
        V = _draw(5, (3, 6, 2), 2)
        np.testing.assert_allclose(got, dg.laplacian(u, batch_axes=0, sigma=S @ V)(X),
                                   rtol=1e-12)
        exact = dg.laplacian(u, batch_axes=0, sigma=S)(X)
        est = np.array([dg.laplacian(u, batch_axes=0, sigma=S, method="hutchinson",
                                     num_samples=2, seed=s)(X) for s in range(300)])
        se = est.std(axis=0) / np.sqrt(len(est))
        assert np.all(np.abs(est.mean(axis=0) - exact) < 5 * se), (est.mean(axis=0), exact)

    def loss(S):
        return np.sum(dg.laplacian(u, batch_axes=0, sigma=S, method="hutchinson",
                                   num_samples=2, seed=5)(X))

    S = rng.standard_normal((3, 3, 6))
    E = np.zeros_like(S)
    E[1, 2, 4] = 1e-6
    np.testing.assert_allclose(dg.grad(loss)(S)[1, 2, 4],
                               (loss(S + E) - loss(S - E)) / 2e-6, rtol=1e-6)


def test_hutchinson_laplacian_errors():
    u = lambda x: np.sum(x ** 3)                                   # noqa: E731
    with pytest.raises(dg.InvalidArgumentError, match="method must be 'exact' or "):
        dg.laplacian(u, method="hutch++")
    with pytest.raises(dg.InvalidArgumentError, match="num_samples is a parameter"):
        dg.laplacian(u, num_samples=3)
    with pytest.raises(dg.InvalidArgumentError, match="num_samples or its alias"):
        dg.laplacian(u, method="hutchinson", num_samples=3, samples=3)
    with pytest.raises(dg.InvalidArgumentError, match="positive int"):
        dg.laplacian(u, method="hutchinson", num_samples=0)
    with pytest.raises(dg.ArgumentTypeError, match="seed must be an int"):
        dg.laplacian(u, method="hutchinson", seed=1.5)
    with pytest.raises(dg.InvalidArgumentError, match="distribution"):
        dg.laplacian(u, method="hutchinson", distribution="uniform")
    est = dg.laplacian(u, method="hutchinson", num_samples=2, seed=None)
    with pytest.raises(dg.RandomInTraceError, match="seed=None"):
        dg.grad(lambda x: est(x))(np.ones(3))


# ------------------------------------------------------------------ biharmonic
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_biharmonic_closed_forms(dtype):
    for D in (1, 2, 3, 5):
        x = np.linspace(-1.0, 1.5, D).astype(dtype)
        got = dg.biharmonic(lambda x: np.sum(x ** 2) ** 2)(x)     # Δ²|x|⁴ = 8 D (D + 2)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, 8 * D * (D + 2), **TOL[dtype])
    # Δ²(x⁴ y + x² y² + sin(x) z) = 24 y + 8 + sin(x)
    p = np.array([0.3, -0.7, 1.2], dtype=dtype)
    f = lambda p: p[0] ** 4 * p[1] + p[0] ** 2 * p[1] ** 2 + np.sin(p[0]) * p[2]  # noqa: E731
    np.testing.assert_allclose(dg.biharmonic(f)(p), 24 * p[1] + 8 + np.sin(p[0]) * p[2],
                               **TOL[dtype])
    # batched: one value per point
    P = np.array([[0.3, -0.7, 1.2], [1.0, 2.0, -1.0]], dtype=dtype)
    fb = lambda P: P[:, 0] ** 4 * P[:, 1] + P[:, 0] ** 2 * P[:, 1] ** 2  # noqa: E731
    np.testing.assert_allclose(dg.biharmonic(fb, batch_axes=0)(P), 24 * P[:, 1] + 8,
                               **TOL[dtype])


def test_biharmonic_against_nested_laplacians_and_hessians():
    rng = np.random.default_rng(6)
    u, u_one = _net(rng, 3)
    x, X = rng.standard_normal(3), rng.standard_normal((4, 3))
    want = dg.laplacian(dg.laplacian(u_one))(x)
    np.testing.assert_allclose(dg.biharmonic(u_one)(x), want, rtol=1e-10)
    # the Hessian of the Laplacian, by dg.hessian
    np.testing.assert_allclose(np.trace(dg.hessian(dg.laplacian(u_one))(x)), want, rtol=1e-10)
    per = [dg.biharmonic(u_one)(p) for p in X]
    for kw in ({}, {"chunk_size": 1}, {"chunk_size": 2}, {"memory_budget": 4000}):
        np.testing.assert_allclose(dg.biharmonic(u, batch_axes=0, **kw)(X), per, rtol=1e-10)
    np.testing.assert_allclose(dg.jit(dg.biharmonic(u, batch_axes=0))(X), per, rtol=1e-10)
    np.testing.assert_allclose(dg.vmap(dg.biharmonic(u_one))(X), per, rtol=1e-10)


def test_biharmonic_pinn_gradient():
    rng = np.random.default_rng(7)
    X = rng.uniform(size=(5, 2))
    W2 = rng.standard_normal((4, 1))

    def loss(W):
        w = lambda X: (np.tanh(X @ W) @ W2)[:, 0]                  # noqa: E731
        return np.mean((dg.biharmonic(w, batch_axes=0)(X) - 1.0) ** 2)

    W = rng.standard_normal((2, 4)) / 2
    g = dg.grad(loss)(W)
    E = np.zeros_like(W)
    E[0, 2] = 1e-6
    np.testing.assert_allclose(g[0, 2], (loss(W + E) - loss(W - E)) / 2e-6, rtol=1e-6)


def test_biharmonic_hutchinson_unbiased_and_independent_levels():
    rng = np.random.default_rng(8)
    u, u_one = _net(rng, 3)
    X = rng.standard_normal((2, 3))
    # the two levels' directions: the first and second draw of default_rng(seed)
    K = 3
    r = np.random.default_rng(21)
    V1, V2 = [(r.integers(0, 2, size=(2, 3, K)) * 2.0 - 1.0) / np.sqrt(K) for _ in range(2)]
    inner = dg.laplacian(u, batch_axes=0, sigma=V1)
    want = dg.laplacian(inner, batch_axes=0, sigma=V2)(X)
    got = dg.biharmonic(u, batch_axes=0, method="hutchinson", num_samples=K, seed=21)(X)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    exact = dg.biharmonic(u, batch_axes=0)(X)
    est = np.array([dg.biharmonic(u, batch_axes=0, method="hutchinson", samples=2,
                                  seed=s)(X) for s in range(300)])
    se = est.std(axis=0) / np.sqrt(len(est))
    assert np.all(se > 0)
    assert np.all(np.abs(est.mean(axis=0) - exact) < 5 * se), (est.mean(axis=0), exact)


def test_biharmonic_errors():
    with pytest.raises(dg.SeparabilityError):
        dg.biharmonic(lambda X: np.sum(X ** 2, axis=0) * np.sum(X), batch_axes=1)(
            np.ones((3, 2)))
    with pytest.raises(dg.InvalidArgumentError, match="biharmonic: method"):
        dg.biharmonic(np.sin, method="hutch++")
    with pytest.raises(dg.InvalidArgumentError, match="biharmonic: give chunk_size"):
        dg.biharmonic(np.sin, chunk_size=1, memory_budget=10)


# ------------------------------------------------------------------ the GPU plans, on the CPU
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gpu_plans_emulate_like_the_graphs(dtype):
    """The programs' fusion plans (what CuPy runs), emulated on the host, give the unfused
    graphs' values, and their CUDA source is generated: the shared and per-instance
    direction seeds, chunked directions, the exact and randomized biharmonic."""
    from dualgpu.codegen.cuda import plan_source
    from dualgpu.core.interpret import eval_graph
    from dualgpu.fusion import emulate, plan_graph

    rng = np.random.default_rng(10)
    u, _ = _net(rng, 3, width=8, dtype=dtype)
    X = rng.standard_normal((16, 3)).astype(dtype)
    S2, Sb, Sc = (rng.standard_normal(s).astype(dtype) for s in ((3, 2), (16, 3, 2),
                                                                  (16, 3, 5)))
    cases = [(dg.laplacian(u, batch_axes=0, sigma=S2), [X, S2]),
             (dg.laplacian(u, batch_axes=0, sigma=Sb), [X, Sb]),
             (dg.laplacian(u, batch_axes=0, sigma=Sc, chunk_size=2), [X, Sc]),
             (dg.biharmonic(u, batch_axes=0), [X]),
             (dg.biharmonic(u, batch_axes=0, method="hutchinson", num_samples=2), [X, Sb, Sb])]
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    for t, args in cases:
        g = t.graph(X)
        assert len(g.inputs) == len(args)
        plan = plan_graph(g)
        for got, want in zip(emulate(plan, args), eval_graph(g, args)):
            np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
        assert "__global__" in plan_source(plan)
