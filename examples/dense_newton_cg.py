"""Scenario 1 of docs/faq.md: Hessian-vector products of a Dense(10→1, sigmoid) loss.

The classic report: a one-layer network on a 10×4 batch, parameters flattened, the Hessian
used as an operator ``H @ v`` with a product counter inside a Krylov solver and a
cubic-regularised Newton step. dualgpu computes ``H @ v`` by forward-over-reverse on plain
arrays (NumPy here, CuPy on a GPU): no dual numbers ever reach a library kernel.

Run: ``python examples/dense_newton_cg.py``
"""
import sys

import numpy as np
from cubic_newton import cubic_model_min, lanczos  # the example beside this one

import dualgpu as dg
from dualgpu.backends.cupy import cupy_available

if cupy_available():
    import cupy as xp
    from cupyx.scipy.sparse.linalg import LinearOperator, cg
else:
    xp = np
    from scipy.sparse.linalg import LinearOperator, cg


def loss(p, X, y):
    """Mean squared error of sigmoid(W X + b); p = [W (10 values), b]."""
    W = p[:10].reshape(1, 10)
    b = p[10]
    pred = dg.nn.sigmoid(W @ X + b)[0]
    return ((pred - y) ** 2).mean()


def check(what, got, want, tol):
    got, want = (np.asarray(a.get() if hasattr(a, "get") else a) for a in (got, want))
    err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300)
    print(f"{what}: relative error {err:.1e} {'ok' if err <= tol else 'FAILED'}")
    if err > tol:
        sys.exit(1)


def cubic_step(H, g, sigma):
    """argmin_s g·s + s·Hs/2 + sigma/3 |s|³ over the Krylov space of (H, g).

    Lanczos (one product per vector) reduces H to a tridiagonal T, and the model is minimised
    exactly in that small space; both pieces come from the ARC solver in cubic_newton.py.
    """
    Q, T = lanczos(H, g, g.size)
    y, _ = cubic_model_min(T, float(xp.linalg.norm(g)), sigma)
    return Q @ xp.asarray(y)


def main():
    rng = np.random.default_rng(0)
    X = xp.asarray(rng.standard_normal((10, 4)))   # 10 features x 4 samples
    y = xp.asarray(rng.random(4))
    p = xp.asarray(rng.standard_normal(11))         # flattened parameters
    print(f"Dense(10->1, sigmoid), 11 parameters, on {xp.__name__}")

    g = dg.grad(loss)(p, X, y)
    H = dg.HessianOperator(loss, p, X, y)           # H @ v, counted in H.nprod

    # 1. check H·v against central differences of the gradient
    v = xp.asarray(rng.standard_normal(11))
    eps = 1e-5
    fd = (dg.grad(loss)(p + eps * v, X, y) - dg.grad(loss)(p - eps * v, X, y)) / (2 * eps)
    check("H·v vs finite differences", H @ v, fd, 1e-6)

    # 2. a damped Newton direction by conjugate gradients on (H + lam I) s = -g
    lam = 0.1
    H.nprod = 0
    shifted = LinearOperator(H.shape, matvec=lambda u: H @ u + lam * u, dtype=H.dtype)
    s, info = cg(shifted, -g, maxiter=100)
    dense = dg.hessian(loss)(p, X, y)               # 11 x 11: fine to form for checking
    want = xp.linalg.solve(dense + lam * xp.eye(11), -g)
    print(f"CG: info={info}, {H.nprod} Hessian-vector products")
    check("CG solution vs dense solve", s, want, 1e-4)

    # 3. one cubic-regularised Newton step
    H.nprod = 0
    sigma = 1.0
    step = cubic_step(H, g, sigma)
    f0, f1 = float(loss(p, X, y)), float(loss(p + step, X, y))
    print(f"cubic Newton step: loss {f0:.6f} -> {f1:.6f} with {H.nprod} products")
    if not f1 < f0:
        sys.exit(1)


if __name__ == "__main__":
    main()
