"""Training a small MLP with damped Gauss-Newton and K-FAC steps, against Adam, to a fixed loss.

A 1-16-16-1 tanh network fits ``sin(2x) + 0.3 cos(5x)`` on 200 points (mean squared
error). Three optimisers run from the same initial weights until the loss falls below
``TARGET``:

* **Gauss-Newton** (Levenberg-Marquardt): each step solves ``(G + λ I) d = -g`` by conjugate
  gradients on ``dg.ggn(model, "mse", params, X, Y)``, a SciPy ``LinearOperator``
  whose every product ``G v = Jᵀ H_l J v`` is one program (no Jacobian is formed); ``λ`` is
  halved after a step that lowers the loss and quadrupled (the step refused) otherwise;
* **K-FAC**: ``d = -(K + λ I)⁻¹ g`` with ``dg.kfac``, whose Kronecker factors come from the
  layers it finds in the traced network (the biases get their exact blocks), the same
  damping rule;
* **Adam** with ``dg.grad``.

It prints each one's steps and wall time to the target (on the GPU when CuPy finds one).

Run: ``python examples/gauss_newton_training.py``
"""
import sys
import time

import numpy as np
from scipy.sparse import identity
from scipy.sparse.linalg import cg

import dualgpu as dg

TARGET = 1e-3
SIZES = [(1, 16), (16, 16), (16, 1)]


def model(p, X):
    h = X
    for k in range(len(SIZES)):
        h = h @ p[f"W{k}"] + p[f"b{k}"]
        if k < len(SIZES) - 1:
            h = np.tanh(h)
    return h


def loss(p, X, Y):
    return dg.nn.mse(model(p, X), Y)


def data(n=200):
    X = np.linspace(-2, 2, n)[:, None]
    return X, np.sin(2 * X) + 0.3 * np.cos(5 * X)


def init(seed=1):
    rng = np.random.default_rng(seed)
    return {**{f"W{k}": rng.normal(0, 1 / np.sqrt(i), (i, o)) for k, (i, o) in enumerate(SIZES)},
            **{f"b{k}": np.zeros(o) for k, (_, o) in enumerate(SIZES)}}


def damped_steps(params, X, Y, solve, max_steps=200):
    """Levenberg-Marquardt: ``solve(params, g, lam)`` gives the step; returns the steps."""
    value_and_grad = dg.value_and_grad(loss)
    lam = 1.0
    value, g = value_and_grad(params, X, Y)
    for step in range(1, max_steps + 1):
        flat_g, unravel = dg.tree.ravel(g)
        d = unravel(solve(params, flat_g, lam))
        trial = {k: params[k] + d[k] for k in params}
        new_value, new_g = value_and_grad(trial, X, Y)
        if new_value < value:
            params, value, g, lam = trial, new_value, new_g, max(lam / 2, 1e-6)
        else:
            lam *= 4
        if value < TARGET:
            return step, float(value)
    return None, float(value)


def gauss_newton_step(params, flat_g, lam):
    G = dg.ggn(model, "mse", params, X, Y)
    d, _ = cg(G + lam * identity(G.n), -flat_g, maxiter=30)
    return d


def kfac_step(params, flat_g, lam):
    """K-FAC's direction, its length from the exact quadratic model along it (one GGN
    product: Martens & Grosse's rescaling)."""
    d = -(dg.kfac(model, "mse", params, X, Y).inverse(lam) @ flat_g)
    Gd = dg.ggn(model, "mse", params, X, Y) @ d + lam * d
    return d * (-(flat_g @ d) / (d @ Gd))


def adam(params, X, Y, lr=0.01, max_steps=20000):
    grad = dg.value_and_grad(loss)
    m = {k: np.zeros_like(v) for k, v in params.items()}
    s = {k: np.zeros_like(v) for k, v in params.items()}
    for step in range(1, max_steps + 1):
        value, g = grad(params, X, Y)
        if value < TARGET:
            return step, float(value)
        for k in params:
            m[k] = 0.9 * m[k] + 0.1 * g[k]
            s[k] = 0.999 * s[k] + 0.001 * g[k] ** 2
            params = {**params, k: params[k] - lr * (m[k] / (1 - 0.9 ** step))
                      / (np.sqrt(s[k] / (1 - 0.999 ** step)) + 1e-8)}
    return None, float(value)


def check_ggn(params):
    """The operator against the dense Jᵀ H_l J of a few samples (jacfwd and hessian)."""
    flat, unravel = dg.tree.ravel(params)
    x, y = X[::40], Y[::40]
    J = dg.jacfwd(lambda v: model(unravel(v), x).reshape(-1))(flat)
    out = model(params, x)
    H = dg.hessian(lambda o: dg.nn.mse(o.reshape(out.shape), y))(out.reshape(-1))
    v = np.random.default_rng(0).normal(size=flat.size)
    got = dg.ggn(model, "mse", params, x, y) @ v
    return np.abs(got - J.T @ (H @ (J @ v))).max() / np.abs(got).max()


if __name__ == "__main__":
    X, Y = data()
    err = check_ggn(init())
    print(f"GGN product against dense J^T H J: relative error {err:.1e}")
    failed = err > 1e-10
    for name, run in [("Gauss-Newton (CG)", lambda p, k: damped_steps(p, X, Y, gauss_newton_step,
                                                                     k)),
                      ("K-FAC", lambda p, k: damped_steps(p, X, Y, kfac_step, k)),
                      ("Adam (lr 0.01)", lambda p, k: adam(p, X, Y, max_steps=k))]:
        run(init(), 2)                      # build the programs, then time
        start = time.perf_counter()
        steps, value = run(init(), 20000)
        seconds = time.perf_counter() - start
        print(f"{name:>18}: loss {value:.3f} after {steps} steps, {seconds:.2f} s")
        failed |= steps is None
    print("FAILED" if failed else "ok")
    sys.exit(1 if failed else 0)
