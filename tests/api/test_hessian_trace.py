"""dg.hessian_trace and the Hutchinson diagonal: exact equals the dense trace; Hutchinson is
unbiased (the mean over many seeds is close); Hutch++ has a much smaller spread on a
decaying spectrum; seeds reproduce; chunking (by chunk_size or by the memory budget) does
not change the estimate; pytree arguments; errors name the argument."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

RNG = np.random.default_rng(0)
N = 24
_U, _ = np.linalg.qr(RNG.standard_normal((N, N)))
M = (_U * (100.0 * 0.5 ** np.arange(N))) @ _U.T   # a decaying spectrum


def f(x):
    return 0.5 * x @ (M @ x) + np.sum(np.cos(x))


X = RNG.standard_normal(N)
EXACT = float(np.trace(dg.hessian(f)(X)))


def estimates(method, m, seeds):
    return np.array([float(dg.hessian_trace(f, method=method, num_samples=m, seed=s)(X))
                     for s in seeds])


def test_exact_is_the_dense_trace():
    np.testing.assert_allclose(dg.hessian_trace(f)(X), EXACT, rtol=1e-12)
    np.testing.assert_allclose(dg.hessian_trace(f, method="exact")(X), EXACT, rtol=1e-12)


def test_hutchinson_is_unbiased_and_hutchpp_has_lower_variance():
    h = estimates("hutchinson", 9, range(200))
    p = estimates("hutch++", 9, range(200))
    # standard error of the mean of 200 estimates: 4 of them is a generous band
    assert abs(h.mean() - EXACT) < 4 * h.std() / np.sqrt(len(h))
    assert abs(p.mean() - EXACT) < 4 * p.std() / np.sqrt(len(p)) + 1e-9
    assert p.std() < 0.5 * h.std()


def test_seed_reproduces_and_chunks_do_not_change_the_estimate():
    a = dg.hessian_trace(f, method="hutch++", num_samples=12, seed=7)(X)
    b = dg.hessian_trace(f, method="hutch++", num_samples=12, seed=7, chunk_size=3)(X)
    c = dg.hessian_trace(f, method="hutch++", num_samples=12, seed=7, memory_budget=1)(X)
    np.testing.assert_allclose(b, a, rtol=1e-12)
    np.testing.assert_allclose(c, a, rtol=1e-12)
    h1 = dg.hessian_trace(f, method="hutchinson", num_samples=10, seed=3)(X)
    h2 = dg.hessian_trace(f, method="hutchinson", num_samples=10, seed=3, chunk_size=4)(X)
    np.testing.assert_allclose(h1, h2, rtol=1e-12)


def test_hutchinson_diagonal_converges():
    want = np.diag(dg.hessian(f)(X))
    got = dg.hessian_diag(f, method="hutchinson", num_samples=4000, seed=0)(X)
    assert np.max(np.abs(got - want)) < 0.1 * np.max(np.abs(want))
    exact = dg.hessian_diag(f)(X)
    np.testing.assert_allclose(exact, want, rtol=1e-10, atol=1e-12)


def test_pytree_argument_mlp_loss():
    rng = np.random.default_rng(1)
    Xd, Y = rng.standard_normal((8, 3)), rng.standard_normal((8, 1))
    params = {"W": rng.standard_normal((3, 4)) / 2, "b": np.zeros(4),
              "V": rng.standard_normal((4, 1)) / 2}

    def loss(p, Xd, Y):
        return np.mean((np.tanh(Xd @ p["W"] + p["b"]) @ p["V"] - Y) ** 2)

    exact = dg.hessian_trace(loss)(params, Xd, Y)
    diag = dg.hessian_diag(loss)(params, Xd, Y)
    np.testing.assert_allclose(exact, sum(np.sum(d) for d in diag.values()), rtol=1e-10)
    # a full-rank sketch: Hutch++ with 3 n products is exact
    n = sum(v.size for v in params.values())
    pp = dg.hessian_trace(loss, method="hutch++", num_samples=3 * n, seed=0)(params, Xd, Y)
    np.testing.assert_allclose(pp, exact, rtol=1e-8)
    hd = dg.hessian_diag(loss, method="hutchinson", num_samples=4, seed=0)(params, Xd, Y)
    assert set(hd) == set(params) and hd["W"].shape == (3, 4)


def test_float32_and_argnums():
    g = lambda a, x: np.sum(a * x ** 4)
    x = np.array([1.0, 2.0], np.float32)
    t = dg.hessian_trace(g, argnums=1, method="hutchinson", num_samples=4)(np.float32(1), x)
    assert t.dtype == np.float32
    np.testing.assert_allclose(t, 60.0, rtol=1e-6)


def test_errors():
    with pytest.raises(dg.DualgpuError, match="method"):
        dg.hessian_trace(f, method="hutch")
    with pytest.raises(dg.DualgpuError, match="num_samples"):
        dg.hessian_trace(f, method="hutchinson", num_samples=0)
    with pytest.raises(dg.DualgpuError, match="num_samples"):
        dg.hessian_trace(f, method="hutch++", num_samples=2)
    with pytest.raises(dg.DualgpuError, match="chunk_size"):
        dg.hessian_trace(f, method="hutchinson", chunk_size=-1)
    with pytest.raises(dg.DualgpuError, match="memory_budget"):
        dg.hessian_trace(f, method="hutchinson", memory_budget=0)
    with pytest.raises(dg.DualgpuError, match="seed"):
        dg.hessian_trace(f, method="hutchinson", seed=1.5)
    with pytest.raises(dg.DualgpuError, match="argnums"):
        dg.hessian_trace(f, method="hutchinson", argnums=(0,))
    with pytest.raises(dg.DualgpuError, match="batch_axes"):
        dg.hessian_trace(f, method="hutchinson", batch_axes=0)
    with pytest.raises(dg.DualgpuError, match="hutch"):
        dg.hessian_diag(f, method="hutch++")
    with pytest.raises(dg.DualgpuError, match="argnums"):
        dg.hessian_trace(f, method="hutchinson", argnums=3)(X)


def test_memory_budget_counts_the_vmapped_program():
    """The chunk for ``memory_budget`` is the most directions whose vmapped HVP program,
    counted on its GPU plan, fits: 7 when the budget is just above the count at 7."""
    from dualgpu.base import tree as pytree

    rng = np.random.default_rng(0)

    def loss(p, X):
        return np.mean(np.tanh(X @ p["W"]) @ p["v"])

    p = {"W": rng.standard_normal((20, 64)), "v": rng.standard_normal(64)}
    X = rng.standard_normal((256, 20))
    leaves, tree = pytree.flatten(p)
    probe = dg.hessian_trace(loss, method="hutchinson")
    held = {k: probe._held((p, X), leaves, tree, np, k) for k in (1, 7, 8)}
    assert held[1] < held[7] < held[8]
    est = dg.hessian_trace(loss, method="hutchinson", num_samples=20,
                           memory_budget=held[7] + 1000)
    assert est.chunk_for((p, X), leaves, tree, np) == 7
    small = dg.hessian_trace(loss, method="hutchinson", num_samples=20, memory_budget=1)
    assert small.chunk_for((p, X), leaves, tree, np) == 1
    np.testing.assert_allclose(est(p, X), small(p, X), rtol=1e-12)
