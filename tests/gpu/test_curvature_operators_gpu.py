"""Issue 38 on the GPU machine: dg.ggn, dg.fisher and dg.kfac on CuPy arrays (cupyx operators
agreeing with the NumPy ones), and the comparison with curvlinops (PyTorch, float64 on the
CPU: needs torch and curvlinops-for-pytorch, carried as wheels) on the same network and
weights: the GGN, the empirical Fisher and K-FAC (type-2 and empirical) entry for entry."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

N, D, H, C = 16, 5, 7, 3


def model(p, X):                        # torch's layout: Linear holds W as (out, in)
    return np.tanh(X @ p[0].T + p[1]) @ p[2].T + p[3]


def _setup():
    rng = np.random.default_rng(0)
    p = [rng.normal(size=(H, D)) / 2, rng.normal(size=H) / 2,
         rng.normal(size=(C, H)) / 2, rng.normal(size=C) / 2]
    return p, rng.normal(size=(N, D)), rng.integers(0, C, N)


def test_operators_on_cupy_agree_with_numpy():
    cp = pytest.importorskip("cupy")
    splinalg = pytest.importorskip("cupyx.scipy.sparse.linalg")
    p, X, Y = _setup()
    pc, Xc, Yc = [cp.asarray(a) for a in p], cp.asarray(X), cp.asarray(Y)
    for make in (lambda *a: dg.ggn(model, "cross_entropy", *a),
                 lambda *a: dg.fisher(model, "cross_entropy", *a, kind="empirical"),
                 lambda *a: dg.kfac(model, "cross_entropy", *a),
                 lambda *a: dg.ekfac(model, "cross_entropy", *a)):
        ref = make(p, X, Y)
        op = make(pc, Xc, Yc)
        assert isinstance(op, splinalg.LinearOperator)
        np.testing.assert_allclose(cp.asnumpy(op.toarray()), ref.toarray(), rtol=1e-9,
                                   atol=1e-13)
        v = cp.linspace(-1, 1, op.n)
        np.testing.assert_allclose(cp.asnumpy(op @ v), ref @ cp.asnumpy(v), rtol=1e-9,
                                   atol=1e-13)
    G = dg.ggn(model, "cross_entropy", pc, Xc, Yc)
    np.testing.assert_allclose(float(G.trace("exact")), np.trace(cp.asnumpy(G.toarray())),
                               rtol=1e-10)
    K = dg.kfac(model, "cross_entropy", pc, Xc, Yc)
    inv = K.inverse(0.1)
    v = cp.ones(K.n)
    np.testing.assert_allclose(cp.asnumpy(inv @ (K @ v + 0.1 * v)), np.ones(K.n), rtol=1e-8)


def test_per_sample_diagonal_spectra_and_average_on_cupy():
    cp = pytest.importorskip("cupy")
    p, X, Y = _setup()
    pc, Xc, Yc = [cp.asarray(a) for a in p], cp.asarray(X), cp.asarray(Y)
    parts = [(X[:5], Y[:5]), (X[5:], Y[5:])]
    parts_c = [(cp.asarray(a), cp.asarray(b)) for a, b in parts]
    for name in ("ggn", "fisher"):
        make = getattr(dg, name)
        kw = {"kind": "empirical"} if name == "fisher" else {}
        ref = make(model, "cross_entropy", p, batches=parts, average=True, **kw)
        op = make(model, "cross_entropy", pc, batches=parts_c, average=True, **kw)
        np.testing.assert_allclose(cp.asnumpy(op.per_sample_diagonal()),
                                   ref.per_sample_diagonal(), rtol=1e-9, atol=1e-14)
        np.testing.assert_allclose(cp.asnumpy(op.toarray()), ref.toarray(), rtol=1e-9,
                                   atol=1e-13)
    K = dg.ekfac(model, "cross_entropy", pc, Xc, Yc)
    ref = dg.ekfac(model, "cross_entropy", p, X, Y)
    np.testing.assert_allclose(cp.asnumpy(K.diagonal()), ref.diagonal(), rtol=1e-9,
                               atol=1e-14)
    np.testing.assert_allclose(cp.asnumpy(K.eigenvalues(4)), ref.eigenvalues(4), rtol=1e-9)
    np.testing.assert_allclose(float(K.trace()), float(ref.trace()), rtol=1e-10)


def _curvlinops_dense(curvlinops, torch, cls, p, X, Y, **kw):
    net = torch.nn.Sequential(torch.nn.Linear(D, H), torch.nn.Tanh(),
                              torch.nn.Linear(H, C)).double()
    with torch.no_grad():
        for q, a in zip(net.parameters(), p):
            q.copy_(torch.from_numpy(a))
    params = list(net.parameters())
    data = [(torch.from_numpy(X), torch.from_numpy(Y))]
    op = cls(net, torch.nn.CrossEntropyLoss(), params, data, check_deterministic=False, **kw)
    n = sum(a.size for a in p)
    return (op @ torch.eye(n, dtype=torch.float64)).detach().numpy()


@pytest.mark.parametrize("what", ["ggn", "empirical fisher", "kfac type-2", "kfac empirical"])
def test_against_curvlinops(what):
    torch = pytest.importorskip("torch")
    curvlinops = pytest.importorskip("curvlinops")
    p, X, Y = _setup()
    if what == "ggn":
        ours = dg.ggn(model, "cross_entropy", p, X, Y)
        theirs = _curvlinops_dense(curvlinops, torch, curvlinops.GGNLinearOperator, p, X, Y)
    elif what == "empirical fisher":
        ours = dg.fisher(model, "cross_entropy", p, X, Y, kind="empirical")
        theirs = _curvlinops_dense(curvlinops, torch, curvlinops.EFLinearOperator, p, X, Y)
    else:
        kind = what.split()[1]
        ours = dg.kfac(model, "cross_entropy", p, X, Y,
                       fisher_type="ggn" if kind == "type-2" else kind)
        theirs = _curvlinops_dense(curvlinops, torch, curvlinops.KFACLinearOperator, p, X, Y,
                                   fisher_type=kind)
    dense = ours.toarray()
    np.testing.assert_allclose(dense, theirs, rtol=1e-6, atol=1e-6 * np.abs(theirs).max())


@pytest.mark.parametrize("loss", ["mse", "cross_entropy", "binary_cross_entropy_with_logits"])
def test_kfac_roots_in_the_factors_program_on_cupy(loss):
    # the likelihood losses' roots are made inside the CuPy factors program (closed forms,
    # one forward): the same factors as NumPy's, float32 kept float32
    cp = pytest.importorskip("cupy")
    p, X, Y = _setup()
    Y = {"mse": np.eye(3)[Y], "cross_entropy": Y,
         "binary_cross_entropy_with_logits": np.eye(3)[Y]}[loss]
    for dtype, rtol in ((np.float64, 1e-10), (np.float32, 1e-4)):
        pd, Xd = [a.astype(dtype) for a in p], X.astype(dtype)
        Yd = Y if loss == "cross_entropy" else Y.astype(dtype)
        ref = dg.kfac(model, loss, pd, Xd, Yd)
        K = dg.kfac(model, loss, [cp.asarray(a) for a in pd], cp.asarray(Xd), cp.asarray(Yd))
        for name, pair in ref.factors.items():
            for got, want in zip(K.factors[name], pair):
                assert got.dtype == dtype
                np.testing.assert_allclose(cp.asnumpy(got), want, rtol=rtol,
                                           atol=rtol * float(np.abs(want).max()))
