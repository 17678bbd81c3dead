"""The Kolmogorov backward (Fokker-Planck adjoint) residual with the weighted Laplacian.

For the diffusion ``dX = b(X) dt + σ(X) dW`` in ``D`` dimensions driven by ``R`` Brownian
motions (``σ(x)`` is ``D × R``), ``u(t, x) = E[g(X_T) | X_t = x]`` solves

    ∂_t u + b·∇u + ½ tr(σσᵀ ∇²u) = 0,    u(T, x) = g(x).

The diffusion term is the weighted Laplacian ``dg.laplacian(u, sigma=S)``: the Jacobians
are seeded with the ``R`` columns of ``σ`` instead of the ``D`` identity rows, so it costs
``R`` directions, not ``D`` (here ``D = 8``, ``R = 2``), and with ``batch_axes`` each
collocation point has its own ``σ(x)`` (an array of shape ``(points, D, R)``, computed in
the traced loss). ``b·∇u`` and ``∂_t u`` are forward-mode products (``dg.jvp``).

1. An Ornstein-Uhlenbeck process (``b = -θx``, constant ``σ``) and ``g = |x|²``, whose
   solution is known: its residual is zero to rounding.
2. A state-dependent ``σ(x)``: a small network ``u = g + (T - t) N(t, x)`` (the terminal
   condition built in) trained a few Adam steps on the mean squared residual, the
   gradient taken through the weighted Laplacian; the loss is printed as it goes down.
3. The randomized form (``method="hutchinson"`` with ``sigma``): the weighted Laplacian
   of ``σ(x) V / sqrt(K)`` for random ``V`` (``R × K``, per point) is an unbiased estimate
   of the same term (``E[V Vᵀ] = K I``); with ``R`` large, ``K`` directions instead of
   ``R``. (Here ``R = 2 < K``: it only shows that the mean converges.)

Runs on CuPy arrays when CuPy is importable (a GPU), on NumPy otherwise.

Run: ``python examples/kolmogorov_backward.py``
"""
import time

import numpy as np

import dualgpu as dg
from dualgpu.backends.cupy import cupy_available

if cupy_available():
    import cupy as xp
else:
    xp = np

rng = np.random.default_rng(0)
D, R, POINTS, WIDTH, STEPS, THETA, T = 8, 2, 128, 24, 300, 0.5, 1.0
A = xp.asarray(rng.standard_normal((D, R)) / np.sqrt(D))     # the constant part of σ


def drift(X):
    return -THETA * X


def sigma(X):
    """σ(x) per point, shape (points, D, R): A scaled by 1 + ½ tanh(x_d) along each row."""
    return (1 + 0.5 * np.tanh(X))[:, :, None] * A


def residual(u, t, X, S):
    """∂_t u + b·∇u + ½ tr(S Sᵀ ∇²u) per point, for ``u(t, X)`` (one value per point)."""
    _, u_t = dg.jvp(lambda t: u(t, X), (t,), (np.ones_like(t),))
    _, b_grad = dg.jvp(lambda X: u(t, X), (X,), (drift(X),))
    diffusion = dg.laplacian(u, argnums=1, batch_axes=0, sigma=S)(t, X)
    return u_t + b_grad + 0.5 * diffusion


def ou_solution(t, X):
    decay = np.exp(-2 * THETA * (T - t))
    return decay * np.sum(X ** 2, axis=1) + np.sum(A ** 2) * (1 - decay) / (2 * THETA)


def init(sizes):
    return [{"W": xp.asarray(rng.standard_normal((m, n)) / np.sqrt(m)), "b": xp.zeros(n)}
            for m, n in zip(sizes[:-1], sizes[1:])]


def network(params):
    def u(t, X):
        h = np.concatenate([t[:, None], X], axis=1)
        for layer in params[:-1]:
            h = np.tanh(h @ layer["W"] + layer["b"])
        out = (h @ params[-1]["W"] + params[-1]["b"])[:, 0]
        return np.sum(X ** 2, axis=1) + (T - t) * out
    return u


def loss(params, t, X):
    return np.mean(residual(network(params), t, X, sigma(X)) ** 2)


def adam(params, grads, state, lr=3e-3, b1=0.9, b2=0.999, eps=1e-8):
    k, m, v = state
    k += 1
    leaves, tree = dg.tree.flatten(params)
    g = dg.tree.flatten(grads)[0]
    m = [b1 * mi + (1 - b1) * gi for mi, gi in zip(m, g)]
    v = [b2 * vi + (1 - b2) * gi * gi for vi, gi in zip(v, g)]
    new = [p - lr * (mi / (1 - b1 ** k)) / (xp.sqrt(vi / (1 - b2 ** k)) + eps)
           for p, mi, vi in zip(leaves, m, v)]
    return dg.tree.unflatten(tree, new), (k, m, v)


def main():
    t = xp.asarray(rng.uniform(0, T, size=POINTS))
    X = xp.asarray(rng.standard_normal((POINTS, D)))

    # 1. the Ornstein-Uhlenbeck solution has a zero residual
    ou = float(xp.max(xp.abs(residual(ou_solution, t, X, A))))
    print(f"1. OU solution: max |residual| = {ou:.1e} (D = {D}, R = {R} directions)")
    if not ou < 1e-10:
        print("OU residual FAILED")

    # 2. the weighted Laplacian against a dense Hessian at one point, then training
    params = init([1 + D, WIDTH, WIDTH, 1])
    u = network(params)
    S = sigma(X)
    one = lambda x: u(t[:1], x[None, :])[0]                                  # noqa: E731
    H = dg.hessian(one)(X[0])
    want = float(xp.trace(S[0].T @ H @ S[0]))
    got = float(dg.laplacian(u, argnums=1, batch_axes=0, sigma=S)(t, X)[0])
    assert np.isclose(got, want, rtol=1e-9), f"weighted Laplacian FAILED: {got} vs {want}"
    value_and_grad = dg.value_and_grad(loss)
    leaves = dg.tree.flatten(params)[0]
    state = (0, [xp.zeros_like(p) for p in leaves], [xp.zeros_like(p) for p in leaves])
    t0 = time.perf_counter()
    first = None
    for step in range(STEPS):
        value, grads = value_and_grad(params, t, X)
        first = float(value) if first is None else first
        params, state = adam(params, grads, state)
        if step % 50 == 0:
            print(f"2. step {step:4d}  loss {float(value):.4e}")
    print(f"2. {STEPS} steps in {time.perf_counter() - t0:.1f} s on {xp.__name__}; loss "
          f"{first:.3e} -> {float(value):.3e}")
    if not float(value) < 0.2 * first:
        print("training FAILED to reduce the residual")

    # 3. the randomized diffusion term: unbiased, K directions per point
    u = network(params)
    exact = dg.laplacian(u, argnums=1, batch_axes=0, sigma=S)(t, X)
    K, draws = 4, 200
    est = 0
    for seed in range(draws):   # sigma S V / sqrt(K), V Rademacher (R, K) per point
        est = est + dg.laplacian(u, argnums=1, batch_axes=0, sigma=S, method="hutchinson",
                                 num_samples=K, seed=seed)(t, X)
    rel = float(xp.linalg.norm(est / draws - exact) / xp.linalg.norm(exact))
    print(f"3. mean of {draws} randomized estimates ({K} directions each) vs exact: relative "
          f"difference {rel:.3f}")
    if not rel < 0.1:
        print("randomized estimate FAILED")


if __name__ == "__main__":
    main()
