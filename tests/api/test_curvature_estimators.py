"""Issue 38, items 2 and 3: the estimators and spectra of every curvature operator (ggn,
fisher, kfac, ekfac and K-FAC's damped inverse) against their dense matrices; K-FAC's exact
diagonal, trace and eigenvalues from its blocks (no product), its eigendecompositions made on
first use (not by building it or by its products), once; the per-sample
diagonal against each sample's ``J_nᵀ H_n J_n`` built from dg.jacfwd and dg.hessian; the
progress of passes over batches; the refusals."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

N, D, H, C = 6, 3, 4, 3


def model(p, X):
    return np.tanh(X @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]


RNG = np.random.default_rng(3)
P = {"W1": RNG.normal(size=(D, H)) / 2, "b1": RNG.normal(size=H) / 2,
     "W2": RNG.normal(size=(H, C)) / 2, "b2": RNG.normal(size=C) / 2}
X, LABELS, TARGETS = RNG.normal(size=(N, D)), RNG.integers(0, C, N), RNG.normal(size=(N, C))
FLAT, UNRAVEL = dg.tree.ravel(P)


def sin_loss(out, Y):                       # an indefinite loss Hessian
    return np.mean(np.sin(out - Y))


OPERATORS = {
    "ggn": lambda: dg.ggn(model, "cross_entropy", P, X, LABELS),
    "fisher mc": lambda: dg.fisher(model, "mse", P, X, TARGETS, samples=2, seed=1),
    "fisher empirical": lambda: dg.fisher(model, "cross_entropy", P, X, LABELS,
                                          kind="empirical"),
    "kfac": lambda: dg.kfac(model, "cross_entropy", P, X, LABELS),
    "ekfac mc": lambda: dg.ekfac(model, "mse", P, X, TARGETS, fisher_type="mc", seed=2),
    "kfac inverse": lambda: dg.kfac(model, "mse", P, X, TARGETS).inverse(0.1),
}


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_estimators_and_spectra_of_every_operator(name):
    op = OPERATORS[name]()
    dense = op.toarray()
    lam = np.linalg.eigvalsh(dense)
    op.nprod = 0
    np.testing.assert_allclose(op.diagonal(), np.diag(dense), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(op.trace("exact"), np.trace(dense), rtol=1e-10)
    np.testing.assert_allclose(op.eigenvalues(2), lam[-2:], rtol=1e-8)
    if name.startswith("kfac") or name.startswith("ekfac"):   # from the blocks
        assert op.nprod == 0
        np.testing.assert_allclose(op.trace(), np.trace(dense), rtol=1e-10)
        np.testing.assert_allclose(op.eigenvalues(3, which="SA"), lam[:3], rtol=1e-8,
                                   atol=1e-14)
        np.testing.assert_allclose(op.eigenvalues(op.n), lam, rtol=1e-8, atol=1e-14)
    est = op.trace("hutch++", num_samples=3 * op.n, seed=0)  # a sketch of n: exact
    np.testing.assert_allclose(est, np.trace(dense), rtol=1e-8)
    diag = op.diagonal("hutchinson", num_samples=2000, seed=0)
    assert np.abs(diag - np.diag(dense)).max() < 0.25 * np.abs(dense).max()


def test_kfac_eigendecompositions_wait_for_their_first_use(monkeypatch):
    """Building K-FAC, its products, diagonal and trace take no eigendecomposition of a
    factor; its spectrum and inverse take one per factor (a bias shares its layer's ``G``),
    once, and agree with the dense matrix."""
    calls, eigh = [], np.linalg.eigh
    monkeypatch.setattr(np.linalg, "eigh",
                        lambda a, *args, **kw: calls.append(np.ndim(a)) or eigh(a, *args, **kw))
    K = dg.kfac(model, "cross_entropy", P, X, LABELS)
    v = np.linspace(-1.0, 1.0, K.n)
    Kv, dense = K @ v, K.toarray()
    np.testing.assert_allclose(K.diagonal(), np.diag(dense), rtol=1e-12)
    np.testing.assert_allclose(K.trace(), np.trace(dense), rtol=1e-12)
    assert calls.count(2) == 0                 # (the loss's per-sample roots are 3-D)
    np.testing.assert_allclose(K.eigenvalues(K.n), np.linalg.eigvalsh(dense), rtol=1e-8,
                               atol=1e-14)
    assert calls.count(2) == 4                 # A and G of W1 and of W2
    inv = K.inverse(0.1)
    np.testing.assert_allclose(inv @ (Kv + 0.1 * v), v, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(inv.toarray(), np.linalg.inv(dense + 0.1 * np.eye(K.n)),
                               rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(K @ v, Kv, rtol=1e-15)
    assert calls.count(2) == 4


def _per_sample_reference(loss, Y, n):
    """``diag(J_nᵀ H_n J_n)``: sample ``n``'s Jacobian by dg.jacfwd on that sample alone, and
    its block of the loss Hessian in the outputs of the whole batch by dg.hessian."""
    J = dg.jacfwd(lambda x: model(UNRAVEL(x), X[n:n + 1]).reshape(-1))(FLAT)
    out = model(P, X)
    H_l = dg.hessian(lambda o: loss(o.reshape(out.shape), Y))(out.reshape(-1))
    block = H_l[n * C:(n + 1) * C, n * C:(n + 1) * C]
    return np.diag(J.T @ block @ J)


@pytest.mark.parametrize("loss,Y", [(dg.nn.cross_entropy, LABELS), (dg.nn.mse, TARGETS),
                                    (sin_loss, TARGETS)])
def test_per_sample_ggn_diagonal_against_jacobians(loss, Y):
    G = dg.ggn(model, loss, P, X, Y)
    got = G.per_sample_diagonal()
    want = np.stack([_per_sample_reference(loss, Y, n) for n in range(N)])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(got.sum(0), G.diagonal(), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(G.per_sample_diagonal(chunk=4), got, rtol=1e-12, atol=1e-16)


def test_per_sample_fisher_diagonal_and_batches():
    fn = "cross_entropy"
    parts = [(X[:2], LABELS[:2]), (X[2:], LABELS[2:])]
    F = dg.fisher(model, fn, P, batches=parts, kind="empirical")
    got = F.per_sample_diagonal()
    want = np.concatenate([dg.fisher(model, fn, P, *b, kind="empirical").per_sample_diagonal()
                           for b in parts])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # the empirical Fisher's per-sample term: that sample's gradient squared, over N_batch
    g = dg.grad(lambda x: dg.nn.cross_entropy(model(UNRAVEL(x), X[:1]), LABELS[:1]))(FLAT)
    np.testing.assert_allclose(got[0], g ** 2 / 2, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(got.sum(0), F.diagonal(), rtol=1e-10, atol=1e-15)


def test_per_sample_refusals():
    centred = lambda p, X: model(p, X - np.mean(X, axis=0))      # noqa: E731
    G = dg.ggn(centred, "mse", P, X, TARGETS)
    with pytest.raises(dg.InvalidArgumentError, match="does not treat its samples independently"):
        G.per_sample_diagonal()
    with pytest.raises(dg.UnsupportedOpError, match=r"kfac.base.per_sample_diagonal\(\)"):
        dg.kfac(model, "mse", P, X, TARGETS).per_sample_diagonal()
    with pytest.raises(dg.DualgpuError, match="chunk"):
        dg.ggn(model, "mse", P, X, TARGETS).per_sample_diagonal(chunk=0)
    K = dg.kfac(model, "mse", P, X, TARGETS)
    with pytest.raises(dg.InvalidArgumentError, match="k=32 is over n=31"):
        K.eigenvalues(32)
    with pytest.raises(dg.InvalidArgumentError, match="which='LA' or 'SA'"):
        K.eigenvalues(1, which="LM")


def test_progress_reports_each_batch(capsys):
    parts = [(X[:2], TARGETS[:2]), (X[2:4], TARGETS[2:4]), (X[4:], TARGETS[4:])]
    seen = []
    G = dg.ggn(model, "mse", P, batches=parts,
               progress=lambda stage, done, total: seen.append((stage, done, total)))
    G @ np.ones(G.n)
    assert seen == [("outputs", 1, 3), ("outputs", 2, 3), ("outputs", 3, 3),
                    ("product", 1, 3), ("product", 2, 3), ("product", 3, 3)]
    seen.clear()
    dg.kfac(model, "mse", P, batches=parts, progress=lambda *a: seen.append(a))
    assert [s for s in seen if s[0] == "factors"] == [("factors", k, 3) for k in (1, 2, 3)]
    dg.fisher(model, "mse", P, batches=parts, progress=True).per_sample_diagonal()
    err = capsys.readouterr().err
    assert "fisher outputs: batch 3/3\n" in err and "per-sample diagonal: batch 3/3\n" in err
    with pytest.raises(dg.ArgumentTypeError, match="progress must be True, False, None"):
        dg.ggn(model, "mse", P, X, TARGETS, progress="yes")


@pytest.mark.parametrize("make", [
    lambda **kw: dg.ggn(model, "cross_entropy", P, **kw),
    lambda **kw: dg.fisher(model, "cross_entropy", P, kind="empirical", **kw),
    lambda **kw: dg.kfac(model, "cross_entropy", P, **kw),
    lambda **kw: dg.ekfac(model, "cross_entropy", P, **kw)], ids=["ggn", "ef", "kfac", "ekfac"])
def test_average_over_batches_is_the_matrix_of_the_whole_dataset(make):
    # a mean loss over batches of 1, 2 and 3 samples: weighted by their shares, the sum is
    # the matrix of the mean over all six (curvlinops' convention); unweighted, it is not
    parts = [(X[:1], LABELS[:1]), (X[1:3], LABELS[1:3]), (X[3:], LABELS[3:])]
    whole = make(X=X, Y=LABELS).toarray()
    np.testing.assert_allclose(make(batches=parts, average=True).toarray(), whole,
                               rtol=1e-10, atol=1e-15)
    assert not np.allclose(make(batches=parts).toarray(), whole)
    with pytest.raises(dg.ArgumentTypeError, match="average must be True or False"):
        make(X=X, Y=LABELS, average="yes")
