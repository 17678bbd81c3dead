"""Issue 38, correctness against curvlinops: dualgpu's Gauss-Newton, Fisher and K-FAC
operators and curvlinops' on the same network and weights, in float64.

The network is ``Linear(d0, d1) -> tanh -> Linear(d1, d2)``, written twice: a
``torch.nn.Sequential`` and a NumPy function of the parameter list ``[W1, b1, W2, b2]``.
With ``layout="out_in"`` the NumPy weights are torch's own ``(out, in)`` arrays (``X @ W.T``),
so both flat vectors are the same; with ``"in_out"`` they are their transposes
(``X @ W``) and the dualgpu side is permuted into torch's order before comparing.

Conventions (the same matrices, once these are matched):

* the losses: ``dg.nn.mse`` / ``MSELoss()`` (a mean over every entry), ``"cross_entropy"`` /
  ``CrossEntropyLoss()`` (a mean over the rows), ``"binary_cross_entropy_with_logits"`` /
  ``BCEWithLogitsLoss()`` (a mean over every entry);
* batches: dualgpu's operator over ``batches=`` is the *sum* of each batch's matrix (each
  batch its own mean); curvlinops' is the matrix of the mean over the whole dataset, which
  is dualgpu's with ``average=True`` (each batch weighted by its share of the samples):
  compared so, on batches of unequal sizes;
* the Monte-Carlo Fisher: the two libraries draw labels from different generators, so the
  products cannot match draw for draw. dualgpu's MC Fisher at its draws is compared with
  curvlinops' *empirical* Fisher at the same labels (recovered from dualgpu's factors),
  which is the same matrix; the MC Fisher's expectation (the Gauss-Newton matrix) is
  reported for both libraries at many samples (a statistical figure, not to 1e-6);
* K-FAC: curvlinops' ``type-2`` is dualgpu's ``fisher_type="ggn"``; its ``A`` is
  ``(1/N_data) Σ a aᵀ`` and its ``G`` is ``(1/N_data) Σ_n Σ_k g gᵀ`` (unscaled per-sample
  gradients), dualgpu's ``A`` the mean over rows and ``G`` ``Σ_n Σ_k g gᵀ`` with the loss's
  ``1/N`` inside ``g`` (and the batch's weight): the same factors. The MC K-FAC is compared
  like the MC Fisher (curvlinops' empirical K-FAC at dualgpu's drawn labels).

``python -m benchmarks.curvlinops_check`` (torch and curvlinops importable) prints the
largest relative error (``max |a - b| / max |b|``) of each quantity;
``tests/api/test_curvlinops_agreement.py`` asserts them below 1e-6 where torch and
curvlinops import.
"""
from __future__ import annotations

import numpy as np

CONFIGS = [("out_in", (8,)), ("in_out", (8,)), ("out_in", (8, 5, 3))]
LOSSES = {"mse": "MSELoss", "cross_entropy": "CrossEntropyLoss",
          "binary_cross_entropy_with_logits": "BCEWithLogitsLoss"}


def rel(a, b) -> float:
    """``max |a - b| / max |b|``."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def model_out_in(p, X):
    """The network on torch's layout: weights ``(out, in)``."""
    W1, b1, W2, b2 = p
    return np.tanh(X @ W1.T + b1) @ W2.T + b2


def model_in_out(p, X):
    """The network on the NumPy layout: weights ``(in, out)``."""
    W1, b1, W2, b2 = p
    return np.tanh(X @ W1 + b1) @ W2 + b2


class Problem:
    """One network, its weights and data, in NumPy and in torch."""

    def __init__(self, loss: str, layout: str = "out_in", dims=(4, 5, 3), sizes=(8,),
                 seed: int = 0):
        import torch

        self.torch, self.loss, self.layout = torch, loss, layout
        self.average = len(sizes) > 1
        rng = np.random.default_rng(seed)
        d0, d1, d2 = dims
        self.torch_params = [rng.normal(size=(d1, d0)) / 2, rng.normal(size=d1) / 2,
                             rng.normal(size=(d2, d1)) / 2, rng.normal(size=d2) / 2]
        self.net = torch.nn.Sequential(torch.nn.Linear(d0, d1), torch.nn.Tanh(),
                                       torch.nn.Linear(d1, d2)).double()
        with torch.no_grad():
            for t, a in zip(self.net.parameters(), self.torch_params):
                t.copy_(torch.from_numpy(a))
        if layout == "out_in":
            self.params, self.model = [a.copy() for a in self.torch_params], model_out_in
        else:
            self.params = [a.T.copy() if a.ndim == 2 else a.copy() for a in self.torch_params]
            self.model = model_in_out
        self.batches = []
        for n in sizes:
            X = rng.normal(size=(n, d0))
            if loss == "cross_entropy":
                Y = rng.integers(0, d2, n)
            elif loss == "mse":
                Y = rng.normal(size=(n, d2))
            else:
                Y = (rng.random((n, d2)) < 0.5).astype(np.float64)
            self.batches.append((X, Y))
        self.sizes = [a.size for a in self.torch_params]
        self.perm = self._permutation()

    def _permutation(self) -> np.ndarray:
        """``perm`` with ``dualgpu_flat[perm] = torch_flat``."""
        parts, start = [], 0
        for a in self.params:
            idx = np.arange(start, start + a.size).reshape(a.shape)
            parts.append((idx.T if a.ndim == 2 and self.layout == "in_out" else idx).ravel())
            start += a.size
        return np.concatenate(parts)

    def to_torch_order(self, M: np.ndarray) -> np.ndarray:
        """A dualgpu matrix (``n × n``) in torch's coordinates."""
        return M[np.ix_(self.perm, self.perm)]

    def torch_loss(self):
        return getattr(self.torch.nn, LOSSES[self.loss])()

    def torch_data(self, batches=None):
        torch = self.torch
        return [(torch.from_numpy(X), torch.from_numpy(Y)) for X, Y in
                (batches or self.batches)]

    def torch_dense(self, op) -> np.ndarray:
        """A curvlinops operator as a dense array (its products with the unit vectors)."""
        n = sum(self.sizes)
        return (op @ self.torch.eye(n, dtype=self.torch.float64)).numpy()

    def dg_args(self):
        return dict(batches=self.batches) if len(self.batches) > 1 else \
            dict(X=self.batches[0][0], Y=self.batches[0][1])

    def curvlinops_kwargs(self):
        return dict(check_deterministic=False)

    # the operators -------------------------------------------------------------------
    def dg(self, name: str, **kw):
        import dualgpu as dg

        kw.setdefault("average", self.average)
        return getattr(dg, name)(self.model, self.loss, self.params, **self.dg_args(), **kw)

    def cl(self, cls_name: str, batches=None, **kw):
        import curvlinops

        cls = getattr(curvlinops, cls_name)
        return cls(self.net, self.torch_loss(), list(self.net.parameters()),
                   self.torch_data(batches), **self.curvlinops_kwargs(), **kw)

    def drawn_labels(self, F) -> list:
        """The labels dualgpu's Monte-Carlo Fisher ``F`` drew (one set per sample), from
        its factors ``S = sqrt(scale / K) · ∇_f(-log p(y | f))`` (``F`` built with
        ``average=False``)."""
        out = []
        for (X, _), S, f in zip(self.batches, F.factors, F.outputs):
            K = S.shape[0]
            scale = 1.0 / (f.shape[0] if self.loss == "cross_entropy" else f.size)
            grads = S / np.sqrt(scale / K)
            for k in range(K):
                if self.loss == "cross_entropy":
                    e = np.exp(f - f.max(-1, keepdims=True))
                    onehot = e / e.sum(-1, keepdims=True) - grads[k]
                    out.append((k, X, np.argmax(onehot, axis=-1)))
                elif self.loss == "mse":         # grads = 2 (f - y)
                    out.append((k, X, f - grads[k] / 2))
                else:                            # grads = sigmoid(f) - y
                    out.append((k, X, np.round(1 / (1 + np.exp(-f)) - grads[k])))
        return out


def compare(loss: str, layout: str = "out_in", sizes=(8,), samples: int = 2,
            seed: int = 0) -> dict[str, float]:
    """The relative errors of each quantity for one loss, layout and batch sizes (several:
    dualgpu's ``average=True``)."""
    P = Problem(loss, layout, sizes=sizes, seed=seed)
    errs = {}
    ggn = P.dg("ggn")
    errs["ggn"] = rel(P.to_torch_order(ggn.toarray()), P.torch_dense(P.cl("GGNLinearOperator")))
    v = np.random.default_rng(1).normal(size=(ggn.n, 3))
    cl_ggn = P.cl("GGNLinearOperator")
    errs["ggn products"] = rel((ggn @ v)[P.perm],
                               (cl_ggn @ P.torch.from_numpy(v[P.perm])).numpy())
    errs["empirical fisher"] = rel(P.to_torch_order(P.dg("fisher", kind="empirical").toarray()),
                                   P.torch_dense(P.cl("EFLinearOperator")))
    F = P.dg("fisher", kind="mc", samples=samples, seed=seed)
    draws = P.drawn_labels(P.dg("fisher", kind="mc", samples=samples, seed=seed,
                                average=False))
    cl_at_draws = P.cl("EFLinearOperator", batches=[(X, Y) for _, X, Y in draws])
    errs["mc fisher (same draws)"] = rel(P.to_torch_order(F.toarray()),
                                         P.torch_dense(cl_at_draws))
    for kind, cl_kind, dg_kw in (("ggn", "type-2", {}), ("empirical", "empirical", {}),
                                 ("mc", None, {"samples": 1, "seed": seed})):
        K = P.dg("kfac", fisher_type=kind, **dg_kw)
        if cl_kind is None:       # the MC K-FAC: curvlinops' empirical one at dualgpu's draws
            Fd = P.dg("fisher", kind="mc", samples=1, seed=seed, average=False)
            batches = [(X, Y) for _, X, Y in P.drawn_labels(Fd)]
            cl = P.cl("KFACLinearOperator", batches=batches, fisher_type="empirical")
        else:
            cl = P.cl("KFACLinearOperator", fisher_type=cl_kind)
        dense = P.torch_dense(cl)       # computes the factors
        errs[f"kfac {kind}"] = rel(P.to_torch_order(K.toarray()), dense)
        a_err = g_err = 0.0
        for i, name in ((0, "0"), (2, "2")):
            A, G = K.factors[K.names[i]]
            a_err = max(a_err, rel(A, cl._input_covariances[name].numpy()))
            g_err = max(g_err, rel(G, cl._gradient_covariances[name].numpy()))
        errs[f"kfac {kind} A"], errs[f"kfac {kind} G"] = a_err, g_err
    for kind, cl_kind in (("ggn", "type-2"), ("empirical", "empirical")):
        cl = P.cl("EKFACLinearOperator", fisher_type=cl_kind)
        errs[f"ekfac {kind}"] = rel(P.to_torch_order(P.dg("ekfac", fisher_type=kind).toarray()),
                                    P.torch_dense(cl))
    return errs


def expectations(loss: str, samples: int = 4000, seed: int = 0) -> dict[str, float]:
    """The MC Fisher of each library at ``samples`` draws against the Gauss-Newton matrix:
    a statistical figure (``~ 1/sqrt(samples)``), not an agreement to round-off."""
    P = Problem(loss, seed=seed)
    G = P.torch_dense(P.cl("GGNLinearOperator"))
    F_dg = P.to_torch_order(P.dg("fisher", kind="mc", samples=samples, seed=seed).toarray())
    F_cl = P.torch_dense(P.cl("FisherMCLinearOperator", mc_samples=samples))
    return {"dualgpu mc fisher vs ggn": rel(F_dg, G), "curvlinops mc fisher vs ggn": rel(F_cl, G)}


def main() -> None:
    import torch

    torch.set_default_dtype(torch.float64)
    for loss in LOSSES:
        for layout, sizes in CONFIGS:
            errs = compare(loss, layout, sizes)
            print(f"{loss}, layout {layout}, batches of {sizes}: worst "
                  f"{max(errs.values()):.1e}")
            for k, e in errs.items():
                print(f"    {k:28s} {e:.1e}")
        for k, e in expectations(loss).items():
            print(f"    {k:28s} {e:.1e}  (4000 samples)")


if __name__ == "__main__":
    main()
