"""Newton-CG training of a small MLP with scipy.optimize.minimize and dg.hessp.

``dg.grad(loss)`` is the ``jac`` and ``dg.hessp(loss)`` the ``hessp`` of
``scipy.optimize.minimize(method="Newton-CG")``: each CG iteration inside Newton-CG costs one
Hessian-vector product (forward-over-reverse), never a full Hessian. On a GPU the data and
the network live on the device; only the flat parameter vector crosses to SciPy.

Run: ``python examples/newton_cg_mlp.py``
"""
import sys

import numpy as np
from scipy.optimize import minimize

import dualgpu as dg
from dualgpu.backends.cupy import cupy_available

if cupy_available():
    import cupy as xp

    to_host = lambda a: a.get() if hasattr(a, "get") else np.asarray(a)
else:
    xp = np
    to_host = np.asarray

SIZES = [(2, 16), (16, 16), (16, 1)]  # 2 -> 16 -> 16 -> 1, tanh hidden layers


def unflatten(p):
    layers, k = [], 0
    for n_in, n_out in SIZES:
        W = p[k:k + n_in * n_out].reshape(n_in, n_out)
        k += n_in * n_out
        b = p[k:k + n_out]
        k += n_out
        layers.append((W, b))
    return layers


N_PARAMS = sum(n_in * n_out + n_out for n_in, n_out in SIZES)


def loss(p, X, y):
    """Mean squared error of the MLP on inputs X (n, 2), targets y (n,), plus weight decay."""
    h = X
    layers = unflatten(p)
    for W, b in layers[:-1]:
        h = np.tanh(h @ W + b)
    W, b = layers[-1]
    pred = (h @ W + b)[:, 0]
    return np.mean((pred - y) ** 2) + 1e-4 * np.sum(p ** 2)


def check(what, got, want, tol):
    got, want = to_host(got), to_host(want)
    err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300)
    print(f"{what}: relative error {err:.1e} {'ok' if err <= tol else 'FAILED'}")
    if err > tol:
        sys.exit(1)


def main():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(256, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1])           # a smooth 2-D regression target
    X, y = xp.asarray(X), xp.asarray(y)
    p0 = rng.standard_normal(N_PARAMS) * 0.5
    print(f"MLP 2-16-16-1 ({N_PARAMS} parameters), 256 samples, on {xp.__name__}")

    grad, hessp = dg.grad(loss), dg.hessp(loss)

    # derivatives against finite differences at the starting point
    p = xp.asarray(p0)
    v = xp.asarray(rng.standard_normal(N_PARAMS))
    eps = 1e-6
    fd_dir = (loss(p + eps * v, X, y) - loss(p - eps * v, X, y)) / (2 * eps)
    check("grad·v vs finite differences", xp.sum(grad(p, X, y) * v), fd_dir, 1e-6)
    fd_hv = (grad(p + eps * v, X, y) - grad(p - eps * v, X, y)) / (2 * eps)
    check("hessp vs finite differences", hessp(p, v, X, y), fd_hv, 1e-5)

    # SciPy works on host vectors: wrap the device functions
    nhess = [0]

    def fun(q):
        return float(loss(xp.asarray(q), X, y))

    def jac(q):
        return to_host(grad(xp.asarray(q), X, y))

    def hp(q, d):
        nhess[0] += 1
        return to_host(hessp(xp.asarray(q), xp.asarray(d), X, y))

    f0 = fun(p0)
    res = minimize(fun, p0, jac=jac, hessp=hp, method="Newton-CG",
                   options={"maxiter": 50, "xtol": 1e-10})
    print(f"Newton-CG: loss {f0:.4f} -> {res.fun:.6f} in {res.nit} iterations, "
          f"{nhess[0]} Hessian-vector products, |grad| = {np.linalg.norm(jac(res.x)):.1e}")
    lbfgs = minimize(fun, p0, jac=jac, method="L-BFGS-B", options={"maxiter": res.nit})
    print(f"L-BFGS-B with the same iteration budget: loss {lbfgs.fun:.6f}")
    if not res.fun < 0.1 * f0:
        print("FAILED: Newton-CG did not reduce the loss tenfold")
        sys.exit(1)


if __name__ == "__main__":
    main()
