"""Issue 38: the loss Hessian's per-sample roots behind dg.ggn's per-sample diagonal and
dg.kfac's ``type-2`` factors: closed forms for the likelihood losses (no eigendecomposition)
that square to the Hessian of the loss (dg.hessian), float32 kept float32 through every
operator, and K-FAC's build running the model's forward once."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.api.gauss_newton import loss_hessian_roots

N, D, H, C = 5, 3, 4, 3
RNG = np.random.default_rng(0)
P = {"W1": RNG.normal(size=(D, H)) / 2, "b1": RNG.normal(size=H) / 2,
     "W2": RNG.normal(size=(H, C)) / 2}
X = RNG.normal(size=(N, D))
OUT = RNG.normal(size=(N, C)) * 3
YS = {"mse": RNG.normal(size=(N, C)), "cross_entropy": RNG.integers(0, C, N),
      "binary_cross_entropy_with_logits": (RNG.random((N, C)) < 0.5).astype(float)}


def model(p, X):
    return np.tanh(X @ p["W1"] + p["b1"]) @ p["W2"]


def _squared(S, signs):
    """``Σ_k signs[k, n] S[k, n] S[k, n]ᵀ`` per sample: ``(N, C, C)``."""
    S = S.reshape(S.shape[0], S.shape[1], -1)
    return np.einsum("kn,kni,knj->nij", signs, S, S)


@pytest.mark.parametrize("name", sorted(YS))
def test_closed_form_roots_square_to_the_loss_hessian(name, monkeypatch):
    loss = dg.nn.__dict__[name]
    hess = dg.hessian(lambda o: loss(o.reshape(OUT.shape), YS[name]))(OUT.reshape(-1))
    blocks = np.stack([hess[n * C:(n + 1) * C, n * C:(n + 1) * C] for n in range(N)])
    monkeypatch.setattr(np.linalg, "eigh", None)          # closed forms: no eigh
    S, signs = loss_hessian_roots(loss, OUT, YS[name], "test")
    assert S.shape == (C, N, C) and signs.shape == (C, N)
    np.testing.assert_allclose(_squared(S, signs), blocks, rtol=1e-13, atol=1e-16)
    S32, signs32 = loss_hessian_roots(loss, OUT.astype(np.float32), YS[name], "test")
    assert S32.dtype == signs32.dtype == np.float32
    np.testing.assert_allclose(_squared(S32, signs32), blocks, rtol=2e-6, atol=1e-8)


def test_float32_stays_float32_in_every_operator():
    f32 = {k: v.astype(np.float32) for k, v in P.items()}
    X32, Y32 = X.astype(np.float32), YS["mse"].astype(np.float32)
    parts = [(X32[:2], Y32[:2]), (X32[2:], Y32[2:])]
    for fisher_type in ("ggn", "mc", "empirical"):
        K = dg.kfac(model, "mse", f32, batches=parts, average=True, fisher_type=fisher_type)
        assert {f.dtype for pair in K.factors.values() for f in pair} == {np.dtype(np.float32)}
    F = dg.fisher(model, "mse", f32, batches=parts, average=True)
    G = dg.ggn(model, "mse", f32, batches=parts, average=True)
    assert F.factors[0].dtype == G.sample_factors(0)[0].dtype == np.float32
    assert F.per_sample_diagonal().dtype == G.per_sample_diagonal().dtype == np.float32
    # float32 cross-entropy was refused as "coupling the samples" (a float64 tolerance)
    K = dg.kfac(model, "cross_entropy", f32, X32, YS["cross_entropy"])
    assert K.factors["params['W1']"][1].dtype == np.float32
    d = dg.ggn(model, "cross_entropy", f32, X32, YS["cross_entropy"]).per_sample_diagonal()
    assert d.dtype == np.float32 and d.shape == (N, K.n)


def test_float32_loss_of_many_samples_is_not_refused_as_coupling():
    # a loss of per-sample terms by the generic (probing) path, in float32: its per-sample
    # blocks agree with the whole Hessian's product to float32 round-off, not to 1e-6
    rng = np.random.default_rng(1)
    out = rng.normal(size=(64, 10)).astype(np.float32) * 4
    Y = rng.normal(size=(64, 10)).astype(np.float32)
    S, signs = loss_hessian_roots(lambda o, y: np.mean(np.log(np.cosh(o - y))), out, Y, "t")
    assert S.dtype == np.float32 and S.shape == (10, 64, 10)


@pytest.mark.parametrize("name", sorted(YS))
def test_kfac_of_a_likelihood_runs_the_model_once_and_matches_the_generic_path(name,
                                                                                monkeypatch):
    # the same loss as a plain function goes through the probed roots (eigh) and the
    # model's own forward; by name, the roots are made inside the factors program
    generic = dg.kfac(model, lambda o, y: dg.nn.__dict__[name](o, y), P, X, YS[name],
                      batches=None, average=False)
    from dualgpu.api import gauss_newton

    def no_second_forward(fn, *args, **kwargs):
        assert fn is not model, "the model ran outside the factors program"
        return dg.jit(fn, *args, **kwargs)

    monkeypatch.setattr(gauss_newton, "jit", no_second_forward)
    monkeypatch.setattr(gauss_newton, "loss_hessian_roots", None)
    K = dg.kfac(model, name, P, X, YS[name])
    np.testing.assert_allclose(K.toarray(), generic.toarray(), rtol=1e-12, atol=1e-15)
    for key, pair in generic.factors.items():
        for got, want in zip(K.factors[key], pair):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_targets_wider_than_the_outputs_keep_the_closed_form():
    # mse of outputs (N, 1) against targets (N, 3): a mean over 3N entries, each output
    # counted 3 times: the Hessian is the closed form's 2 / (N·1), as the probed roots say
    one = lambda p, X: model(p, X)[:, :1]
    Y = YS["mse"]
    K = dg.kfac(one, "mse", P, X, Y)
    generic = dg.kfac(one, lambda o, y: dg.nn.mse(o, y), P, X, Y)
    np.testing.assert_allclose(K.toarray(), generic.toarray(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(dg.ggn(one, "mse", P, X, Y).per_sample_diagonal(),
                               dg.ggn(one, lambda o, y: dg.nn.mse(o, y), P, X, Y)
                               .per_sample_diagonal(), rtol=1e-12, atol=1e-15)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # its loss: a mean of none
@pytest.mark.parametrize("kind", ["empirical", "mc"])
def test_a_batch_of_no_rows_adds_nothing_to_the_fisher(kind):
    # its likelihood factors divided by the zero row count: a raw ZeroDivisionError
    Y = YS["cross_entropy"]
    F = dg.fisher(model, "cross_entropy", P, batches=[(X[:0], Y[:0]), (X, Y)], kind=kind,
                  seed=0).toarray()
    np.testing.assert_allclose(F, dg.fisher(model, "cross_entropy", P, X, Y, kind=kind,
                                            seed=0).toarray(), rtol=1e-12, atol=1e-15)


def test_parameters_changed_in_place_after_the_build_do_not_change_the_operator():
    # the products read the caller's pytree (an optimizer's in-place step), the Fisher's
    # factors were made at the build's point: a mixture of the two points
    p = {k: v.copy() for k, v in P.items()}
    Y = YS["cross_entropy"]
    F = dg.fisher(model, "cross_entropy", p, X, Y, kind="empirical")
    G = dg.ggn(model, "cross_entropy", p, X, Y)
    want_F, want_G = F.toarray(), G.toarray()
    p["W1"] *= 3.0
    np.testing.assert_array_equal(F.toarray(), want_F)
    np.testing.assert_array_equal(G.toarray(), want_G)
