"""The trace of an MLP loss Hessian with respect to its parameters: exact, Hutchinson and
Hutch++.

The trace of the Hessian (the sum of its eigenvalues: a sharpness measure of the loss
landscape) without the Hessian. ``method="exact"`` propagates the Hessian diagonal forward
(cost grows with the parameter count); the estimators need Hessian-vector products only,
all the products of a chunk as one program (``vmap`` of the HVP). At the same budget of
products, Hutch++ (Meyer et al. 2021) spends a third on sketching the top of the spectrum,
which it then takes exactly: for a Hessian whose spectrum decays, its error is far smaller.

Run: ``python examples/hutchpp_trace.py``
"""
import time

import numpy as np

import dualgpu as dg

rng = np.random.default_rng(0)
N, D, H, K = 64, 6, 12, 3
params = {"W1": rng.standard_normal((D, H)) / np.sqrt(D), "b1": np.zeros(H),
          "W2": rng.standard_normal((H, K)) / np.sqrt(H), "b2": np.zeros(K)}
X = rng.standard_normal((N, D)) * np.geomspace(4.0, 0.02, D)   # a decaying spectrum
Y = rng.standard_normal((N, K))


def loss(p, x, y):
    return 0.5 * np.mean(np.sum((np.tanh(x @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"] - y) ** 2,
                                axis=1))


def main():
    n = sum(v.size for v in params.values())
    t0 = time.perf_counter()
    exact = float(dg.hessian_trace(loss)(params, X, Y))
    print(f"{n} parameters; exact trace {exact:.4f} ({time.perf_counter() - t0:.2f} s)")
    flat_h = dg.hessian(lambda w: loss(unflatten(w), X, Y))(flatten(params))
    if not np.isclose(exact, np.trace(flat_h), rtol=1e-8):
        print("exact trace FAILED against the dense Hessian")
    budget, seeds = 45, range(40)
    for method in ("hutchinson", "hutch++"):
        t0 = time.perf_counter()
        est = np.array([float(dg.hessian_trace(loss, method=method, num_samples=budget,
                                               seed=s)(params, X, Y)) for s in seeds])
        err = np.abs(est - exact) / abs(exact)
        print(f"{method:>10}: {budget} products, mean relative error {err.mean():.4f} "
              f"(max {err.max():.4f}) over {len(est)} seeds, "
              f"{(time.perf_counter() - t0) / len(est) * 1e3:.1f} ms per estimate")


def flatten(p):
    return np.concatenate([p[k].ravel() for k in sorted(p)])


def unflatten(w):
    out, start = {}, 0
    for k in sorted(params):
        size = params[k].size
        out[k] = w[start:start + size].reshape(params[k].shape)
        start += size
    return out


if __name__ == "__main__":
    main()
