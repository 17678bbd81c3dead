"""Issue 38: the Gauss-Newton, Fisher and K-FAC operators (dg.ggn, dg.fisher, dg.kfac,
dg.ekfac) of a small tanh network in float64, against dense references built by hand: J by
dg.jacfwd, H_l by dg.hessian, G = Jᵀ H_l J entry for entry; the Fishers against their
closed forms (the empirical one from per-sample gradients, the Monte-Carlo one converging
to the Gauss-Newton matrix); the Kronecker factors against activations and output
gradients collected by hand; symmetry, positive semi-definiteness, G = H for a linear
model under squared loss; batches summed exactly; the estimators; the errors."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

N, D, H, C = 6, 3, 4, 3


def model(p, X):
    h = np.tanh(X @ p["W1"] + p["b1"])
    return np.einsum("ni,oi->no", h, p["W2"]) + p["b2"]   # W2 is (out, in), as in torch


def _setup(seed=0, n=N):
    rng = np.random.default_rng(seed)
    p = {"W1": rng.normal(size=(D, H)) / 2, "b1": rng.normal(size=H) / 2,
         "W2": rng.normal(size=(C, H)) / 2, "b2": rng.normal(size=C) / 2}
    return p, rng.normal(size=(n, D)), rng.integers(0, C, n), rng.normal(size=(n, C))


P, X, LABELS, TARGETS = _setup()
FLAT, UNRAVEL = dg.tree.ravel(P)
LOSSES = {"cross_entropy": (dg.nn.cross_entropy, LABELS), "mse": (dg.nn.mse, TARGETS),
          "log_cosh": (lambda o, Y: np.mean(np.log(np.cosh(o - Y))), TARGETS)}


def _dense_ggn(loss, Y, X=X):
    J = dg.jacfwd(lambda x: model(UNRAVEL(x), X).reshape(-1))(FLAT)
    out = model(P, X)
    H_l = dg.hessian(lambda o: loss(o.reshape(out.shape), Y))(out.reshape(-1))
    return J.T @ H_l @ J


@pytest.fixture(scope="module")
def ggns():
    return {name: (dg.ggn(model, fn, P, X, Y), _dense_ggn(fn, Y))
            for name, (fn, Y) in LOSSES.items()}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_ggn_is_jt_hl_j_entry_for_entry(ggns, name):
    G, dense = ggns[name]
    got = G.toarray()
    np.testing.assert_allclose(got, dense, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(got, got.T, atol=1e-14)
    if name != "log_cosh":           # a convex loss: positive semi-definite
        assert np.linalg.eigvalsh(got).min() > -1e-12
    v = np.random.default_rng(1).normal(size=G.n)
    np.testing.assert_allclose(G @ v, dense @ v, rtol=1e-10, atol=1e-13)
    assert G.unravel(v)["W1"].shape == (D, H) and G.shape == (FLAT.size, FLAT.size)


def test_ggn_product_is_one_program_and_operator_algebra(ggns):
    G, dense = ggns["mse"]
    damped = G + 0.5 * np.eye(G.n)
    v = np.ones(G.n)
    np.testing.assert_allclose(damped @ v, dense @ v + 0.5 * v, rtol=1e-10)
    from scipy.sparse.linalg import LinearOperator, cg
    assert isinstance(G, LinearOperator)
    x, info = cg(damped, v, rtol=1e-12)
    assert info == 0 and np.allclose((dense + 0.5 * np.eye(G.n)) @ x, v)
    np.testing.assert_allclose(dg.jit(lambda u: G @ u)(v), dense @ v, rtol=1e-10)  # traced
    K = dg.kfac(model, "mse", P, X, TARGETS)
    np.testing.assert_allclose(dg.jit(lambda u: K @ u)(v), K @ v, rtol=1e-12)


def test_ggn_equals_the_hessian_for_a_linear_model_under_squared_loss():
    lin = lambda p, X: X @ p["W"] + p["b"]                      # noqa: E731
    p = {"W": np.ones((D, 2)), "b": np.zeros(2)}
    Y = np.arange(2 * N, dtype=float).reshape(N, 2)
    G = dg.ggn(lin, "mse", p, X, Y).toarray()
    flat, unravel = dg.tree.ravel(p)
    Hess = dg.hessian(lambda x: dg.nn.mse(lin(unravel(x), X), Y))(flat)
    np.testing.assert_allclose(G, Hess, rtol=1e-12, atol=1e-12)


def test_batches_are_summed_exactly(ggns):
    fn, Y = LOSSES["cross_entropy"]
    parts = [(X[:2], Y[:2]), (X[2:], Y[2:])]
    G = dg.ggn(model, fn, P, batches=iter(parts))                 # a one-shot iterator
    want = _dense_ggn(fn, Y[:2], X[:2]) + _dense_ggn(fn, Y[2:], X[2:])
    np.testing.assert_allclose(G.toarray(), want, rtol=1e-10, atol=1e-13)
    F = dg.fisher(model, fn, P, batches=parts, kind="empirical")
    np.testing.assert_allclose(
        F.toarray(), dg.fisher(model, fn, P, *parts[0], kind="empirical").toarray()
        + dg.fisher(model, fn, P, *parts[1], kind="empirical").toarray(), rtol=1e-10)


def _per_sample_grads(nll):
    """The per-sample gradients of the negative log-likelihood, one dg.grad each."""
    def one(n):
        return dg.grad(lambda x: nll(model(UNRAVEL(x), X[n:n + 1]), n))(FLAT)

    return np.stack([one(n) for n in range(N)])


def test_empirical_fisher_is_the_mean_of_per_sample_gradient_outer_products():
    ce = lambda o, n: dg.nn.cross_entropy(o, LABELS[n:n + 1])     # noqa: E731
    g = _per_sample_grads(ce)
    F = dg.fisher(model, "cross_entropy", P, X, LABELS, kind="empirical").toarray()
    np.testing.assert_allclose(F, g.T @ g / N, rtol=1e-10, atol=1e-14)
    # mse = mean over N*C entries of the Gaussian NLL of variance 1/2, scaled by 1/(N C)
    sq = lambda o, n: np.sum((o - TARGETS[n:n + 1]) ** 2)        # noqa: E731
    g = _per_sample_grads(sq)
    F = dg.fisher(model, dg.nn.mse, P, X, TARGETS, kind="empirical").toarray()
    np.testing.assert_allclose(F, g.T @ g / (N * C), rtol=1e-10, atol=1e-14)
    t = (TARGETS > 0).astype(float)                               # Bernoulli per entry
    bce = lambda o, n: np.sum(np.logaddexp(0, o) - t[n:n + 1] * o)  # noqa: E731
    g = _per_sample_grads(bce)
    F = dg.fisher(model, "binary_cross_entropy_with_logits", P, X, t,
                  kind="empirical").toarray()
    np.testing.assert_allclose(F, g.T @ g / (N * C), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("name", ["cross_entropy", "mse"])
def test_monte_carlo_fisher_converges_to_the_gauss_newton_matrix(ggns, name):
    _, dense = ggns[name]
    Y = LOSSES[name][1]
    errs = [np.abs(dg.fisher(model, name, P, X, Y, samples=k, seed=3).toarray() - dense).max()
            for k in (10, 4000)]
    scale = np.abs(dense).max()
    assert errs[1] < 0.06 * scale and errs[1] < errs[0] / 5, (errs, scale)
    F = dg.fisher(model, name, P, X, Y, samples=10, seed=3)
    np.testing.assert_array_equal(F.toarray(), F.toarray())      # one fixed matrix
    assert np.linalg.eigvalsh(F.toarray()).min() > -1e-12


# ------------------------------------------------------------------------------ K-FAC
def _hand_factors():
    """mse's loss Hessian is 2/(N C) I per sample: the factors are its columns, carried back
    through the network by hand."""
    h = np.tanh(X @ P["W1"] + P["b1"])
    A1, A2 = X.T @ X / N, h.T @ h / N
    G1 = sum(np.diag(1 - h[n] ** 2) @ P["W2"].T @ P["W2"] @ np.diag(1 - h[n] ** 2)
             for n in range(N)) * 2 / (N * C)
    G2 = np.eye(C) * 2 / C
    return {"params['W1']": (A1, G1), "params['W2']": (A2, G2)}


def _blocks():
    sizes = np.cumsum([0] + [leaf.size for leaf in dg.tree.leaves(P)])
    return [slice(a, b) for a, b in zip(sizes[:-1], sizes[1:])]  # W1, W2, b1, b2


def test_kfac_factors_against_activations_and_gradients_by_hand(ggns):
    K = dg.kfac(model, "mse", P, X, TARGETS)
    for name, (A, G) in _hand_factors().items():
        np.testing.assert_allclose(K.factors[name][0], A, rtol=1e-12)
        np.testing.assert_allclose(K.factors[name][1], G, rtol=1e-10, atol=1e-15)
    dense, got = ggns["mse"][1], K.toarray()
    W1, W2, b1, b2 = _blocks()
    A, G = _hand_factors()["params['W1']"]
    np.testing.assert_allclose(got[W1, W1], np.kron(A, G), rtol=1e-10, atol=1e-15)
    A, G = _hand_factors()["params['W2']"]                       # W2 is (out, in)
    np.testing.assert_allclose(got[W2, W2], np.kron(G, A), rtol=1e-10, atol=1e-15)
    for b in (b1, b2):                                           # no Kronecker structure
        np.testing.assert_allclose(got[b, b], dense[b, b], rtol=1e-10, atol=1e-15)
    assert np.abs(got[W1, W2]).max() == 0 and np.allclose(got, got.T)
    assert K.structure == {"params['W1']": "kronecker", "params['W2']": "kronecker",
                           "params['b1']": "bias of params['W1']",
                           "params['b2']": "bias of params['W2']"}
    assert K.base.nprod == 0                     # the biases' blocks are the factors G


@pytest.mark.parametrize("fisher_type", ["ggn", "mc", "empirical"])
def test_kfac_and_ekfac_are_exact_for_one_sample(fisher_type):
    x, y = X[:1], LABELS[:1]
    if fisher_type == "ggn":
        exact = dg.ggn(model, "cross_entropy", P, x, y).toarray()
    else:
        exact = dg.fisher(model, "cross_entropy", P, x, y, kind=fisher_type, samples=3,
                          seed=5).toarray()
    for op in (dg.kfac, dg.ekfac):
        got = op(model, "cross_entropy", P, x, y, fisher_type=fisher_type, samples=3,
                 seed=5).toarray()
        for b in _blocks():
            np.testing.assert_allclose(got[b, b], exact[b, b], rtol=1e-9, atol=1e-14)


def test_ekfac_eigenvalues_are_the_curvature_in_the_kfac_eigenbasis(ggns):
    dense = ggns["cross_entropy"][1]
    K = dg.kfac(model, "cross_entropy", P, X, LABELS)
    E = dg.ekfac(model, "cross_entropy", P, X, LABELS)
    W1 = _blocks()[0]
    A, G = K.factors["params['W1']"]
    Q = np.kron(np.linalg.eigh(A)[1], np.linalg.eigh(G)[1])
    want = np.diag(Q.T @ dense[W1, W1] @ Q)
    np.testing.assert_allclose(np.diag(Q.T @ E.toarray()[W1, W1] @ Q), want, rtol=1e-9,
                               atol=1e-15)
    assert not np.allclose(np.diag(Q.T @ K.toarray()[W1, W1] @ Q), want)


def test_damped_inverse_is_exact():
    K = dg.kfac(model, "cross_entropy", P, X, LABELS)
    M = K.toarray()
    inv = K.inverse(0.1)
    np.testing.assert_allclose(inv.toarray(), np.linalg.inv(M + 0.1 * np.eye(K.n)),
                               rtol=1e-8)
    with pytest.raises(dg.InvalidArgumentError, match="damping"):
        K.inverse(-1.0)
    # an inverse's inverse is of the inverse's matrix, not of K's again
    np.testing.assert_allclose(inv.inverse(0.5).toarray(),
                               np.linalg.inv(inv.toarray() + 0.5 * np.eye(K.n)), rtol=1e-8)


@pytest.mark.parametrize("make", [
    lambda p, x: dg.kfac(model, "mse", p, x, TARGETS[:3].astype(np.float32)),
    lambda p, x: dg.ekfac(model, "mse", p, x, TARGETS[:3].astype(np.float32)),
    lambda p, x: dg.fisher(model, "mse", p, x, TARGETS[:3].astype(np.float32),
                           kind="empirical"),
    lambda p, x: dg.ggn(model, "mse", p, x, TARGETS[:3].astype(np.float32))],
    ids=["kfac", "ekfac", "fisher", "ggn"])
def test_float32_parameters_give_float32_products_and_diagonals(make):
    """The operator's dtype is its parameters': its products, diagonals and inverses are
    computed in it (no float64 weight promoting them)."""
    p32 = {k: v.astype(np.float32) for k, v in P.items()}
    op = make(p32, X[:3].astype(np.float32))
    results = [op @ np.ones(op.n, dtype=np.float32), op.diagonal()]
    results += [op.inverse(0.1) @ np.ones(op.n, dtype=np.float32)] if hasattr(op, "inverse") \
        else [op.per_sample_diagonal()]
    assert op.dtype == np.float32 and [r.dtype for r in results] == [np.float32] * 3


def test_kfac_finds_weights_through_a_transpose_and_einsum():
    torch_style = lambda p, X: np.tanh(X @ p[0].T) @ p[1]        # noqa: E731
    p = [P["W1"].T.copy(), P["W2"].T.copy()]
    K = dg.kfac(torch_style, "mse", p, X, TARGETS)
    A, G = K.factors["params[0]"]
    np.testing.assert_allclose(A, X.T @ X / N, rtol=1e-12)
    assert [f.shape for f in K.factors["params[1]"]] == [(H, H), (C, C)]
    assert all(b[2] is not None for b in K.blocks)               # no dense blocks


def test_estimators_and_spectra(ggns):
    G, dense = ggns["cross_entropy"]
    np.testing.assert_allclose(G.trace("exact"), np.trace(dense), rtol=1e-10)
    np.testing.assert_allclose(G.diagonal(), np.diag(dense), rtol=1e-10, atol=1e-15)
    est = G.trace("hutchinson", num_samples=400, seed=0)
    assert abs(est - np.trace(dense)) < 0.2 * np.trace(dense)
    np.testing.assert_allclose(G.eigenvalues(3), np.linalg.eigvalsh(dense)[-3:], rtol=1e-8)
    K = dg.kfac(model, "cross_entropy", P, X, LABELS)
    np.testing.assert_allclose(K.trace("exact"), np.trace(K.toarray()), rtol=1e-10)


# ------------------------------------------------------------------------------ errors
def test_bad_input_is_one_dualgpu_error():
    fn = LOSSES["log_cosh"][0]
    with pytest.raises(dg.InvalidArgumentError, match="likelihood.*cross_entropy.*mse"):
        dg.fisher(model, fn, P, X, TARGETS, kind="mc")
    with pytest.raises(dg.InvalidArgumentError, match="kind must be 'mc' or 'empirical'"):
        dg.fisher(model, "mse", P, X, TARGETS, kind="exact")
    with pytest.raises(dg.InvalidArgumentError, match="'hinge' is not a loss"):
        dg.ggn(model, "hinge", P, X, TARGETS)
    with pytest.raises(dg.IntegerInputError, match=r"params\['W'\]"):
        dg.ggn(model, "mse", {"W": np.ones(3, dtype=int)}, X, TARGETS)
    with pytest.raises(dg.ArgumentTypeError, match="params has no arrays"):
        dg.ggn(model, "mse", {}, X, TARGETS)
    with pytest.raises(dg.NonScalarOutputError, match="real scalar"):
        dg.ggn(model, lambda o, Y: o - Y, P, X, TARGETS)
    with pytest.raises(dg.ArgumentTypeError, match="not both"):
        dg.ggn(model, "mse", P, X, TARGETS, batches=[(X, TARGETS)])
    with pytest.raises(dg.ArgumentTypeError, match=r"batches\[0\] must be an \(X, Y\) pair"):
        dg.ggn(model, "mse", P, batches=[X])
    with pytest.raises(dg.ShapeMismatchError):
        dg.ggn(model, "mse", P, X, TARGETS) @ np.ones(3)


def test_kfac_refusals():
    shared = lambda p, X: np.tanh(X @ p["W"]) @ p["W"]           # noqa: E731
    with pytest.raises(dg.UnsupportedOpError, match=r"p\['W'\] is the weight.*2 times"):
        dg.kfac(shared, "mse", {"W": np.ones((D, D))}, X, np.zeros((N, D)))
    scaled = lambda p, X: (X * p["s"]) @ p["W"]                  # noqa: E731
    p = {"s": np.ones(D), "W": np.ones((D, C))}
    with pytest.raises(dg.UnsupportedOpError, match=r"params\['s'\] \(3 entries\).*dense_limit"):
        dg.kfac(scaled, "mse", p, X, TARGETS, dense_limit=2)
    K = dg.kfac(scaled, "mse", p, X, TARGETS)                   # s: its exact block
    exact = dg.ggn(scaled, "mse", p, X, TARGETS).toarray()
    assert K.structure["params['s']"] == "exact block"
    np.testing.assert_allclose(K.toarray()[9:, 9:], exact[9:, 9:], rtol=1e-10)  # W, then s
    coupled = lambda o, Y: np.sum(o) ** 2                        # noqa: E731
    with pytest.raises(dg.InvalidArgumentError, match="couples the samples"):
        dg.kfac(model, coupled, P, X, TARGETS)
    with pytest.raises(dg.InvalidArgumentError, match="fisher_type"):
        dg.kfac(model, "mse", P, X, TARGETS, fisher_type="type-2")


def test_kfac_of_a_model_without_products_is_its_exact_diagonal_blocks():
    scale = lambda p, X: X * p["s"] + p["c"]                     # noqa: E731
    p = {"c": np.zeros(D), "s": np.ones(D)}
    K = dg.kfac(scale, "mse", p, X, X ** 2)
    exact = dg.ggn(scale, "mse", p, X, X ** 2).toarray()
    assert set(K.structure.values()) == {"exact block"} and not K.factors
    got = K.toarray()
    for b in (slice(0, D), slice(D, 2 * D)):
        np.testing.assert_allclose(got[b, b], exact[b, b], rtol=1e-12)
    assert np.abs(got[:D, D:]).max() == 0 < np.abs(exact[:D, D:]).max()
