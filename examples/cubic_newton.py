"""A cubic-regularised Newton solver (ARC) driven by Hessian-vector products, with counting.

Each iteration minimises the cubic model ``m(s) = g·s + s·Hs/2 + sigma/3 |s|³`` over a
Krylov space built by Lanczos from ``H @ v`` products (``dg.HessianOperator``), then adapts
``sigma`` by the ratio of actual to predicted decrease (Cartis, Gould & Toint 2011). Cubic
regularisation handles negative curvature without line searches or trust-region radii.

Run: ``python examples/cubic_newton.py``
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


def rosenbrock(x):
    """The extended Rosenbrock function: nonconvex, minimum 0 at x = (1, ..., 1)."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def lanczos(H, g, k):
    """Orthonormal Q (n×m) and tridiagonal T = QᵀHQ of the Krylov space of (H, g); m ≤ k
    products of H (full reorthogonalisation: k is small)."""
    n = g.size
    Q = xp.zeros((n, k), dtype=g.dtype)
    alpha, beta = [], []
    q = g / xp.linalg.norm(g)
    for j in range(k):
        Q[:, j] = q
        w = H @ q
        alpha.append(float(q @ w))
        scale = float(xp.linalg.norm(w))
        for _ in range(2):  # full reorthogonalisation, twice
            w = w - Q[:, :j + 1] @ (Q[:, :j + 1].T @ w)
        beta.append(float(xp.linalg.norm(w)))
        if beta[-1] <= 1e-8 * scale:  # invariant subspace
            break
        q = w / beta[-1]
    m = len(alpha)
    T = np.diag(alpha) + np.diag(beta[:m - 1], 1) + np.diag(beta[:m - 1], -1)
    return Q[:, :m], T


def cubic_model_min(T, gnorm, sigma):
    """Minimise gnorm·y0 + y·Ty/2 + sigma/3 |y|³ exactly (T small, symmetric).

    The minimiser is y = -(T + lam I)⁻¹ gnorm e1 with lam = sigma |y| and T + lam I ⪰ 0:
    a decreasing scalar equation in lam, solved by bisection in T's eigenbasis.
    """
    theta, U = np.linalg.eigh(T)
    b = U[0] * gnorm
    lo = max(0.0, -theta[0])
    lo += 1e-12 * max(1.0, abs(theta[0]))
    with np.errstate(divide="ignore"):
        gap = lambda lam: np.linalg.norm(b / (theta + lam)) - lam / sigma
        if gap(lo) <= 0:  # the "hard case": g has (almost) no weight on the lowest mode
            lam = max(0.0, -theta[0])
            z = b[1:] / (theta[1:] + lam)
            tau = np.sqrt(max((lam / sigma) ** 2 - z @ z, 0.0))
            y = -(U[:, 1:] @ z) + tau * U[:, 0]
        else:
            hi = lo + 1.0
            while gap(hi) > 0:
                hi *= 2
            for _ in range(100):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if gap(mid) > 0 else (lo, mid)
            y = -(U @ (b / (theta + hi)))
    model = gnorm * y[0] + 0.5 * y @ T @ y + sigma / 3 * np.linalg.norm(y) ** 3
    return y, model


def arc(f, x, *, sigma=1.0, krylov=10, gtol=1e-8, maxiter=200):
    """Adaptive regularisation with cubics; returns x, iterations, total H·v products."""
    grad = dg.grad(f)
    nprod = 0
    fx = float(f(x))
    for it in range(maxiter):
        g = grad(x)
        gnorm = float(xp.linalg.norm(g))
        if gnorm < gtol:
            return x, it, nprod
        H = dg.HessianOperator(f, x)
        Q, T = lanczos(H, g, min(krylov, x.size))
        nprod += H.nprod
        y, model = cubic_model_min(T, gnorm, sigma)
        s = Q @ xp.asarray(y)
        f_new = float(f(x + s))
        rho = (fx - f_new) / max(-model, 1e-300)
        if rho > 0.1:                       # successful: accept the step
            x, fx = x + s, f_new
        sigma = max(sigma / 3, 1e-10) if rho > 0.9 else sigma if rho > 0.1 else 2 * sigma
    return x, maxiter, nprod


def check(what, got, want, tol):
    got, want = to_host(got), to_host(want)
    err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300)
    print(f"{what}: relative error {err:.1e} {'ok' if err <= tol else 'FAILED'}")
    if err > tol:
        sys.exit(1)


def main():
    n = 50
    x0 = xp.zeros(n)
    print(f"extended Rosenbrock, n = {n}, on {xp.__name__}")
    rng = np.random.default_rng(0)
    v = xp.asarray(rng.standard_normal(n))
    eps = 1e-6
    grad = dg.grad(rosenbrock)
    check("grad·v vs finite differences", grad(x0) @ v,
          (rosenbrock(x0 + eps * v) - rosenbrock(x0 - eps * v)) / (2 * eps), 1e-7)
    check("H·v vs finite differences", dg.hvp(rosenbrock)(x0, v),
          (grad(x0 + eps * v) - grad(x0 - eps * v)) / (2 * eps), 1e-7)

    x, iters, nprod = arc(rosenbrock, x0)
    gnorm = float(xp.linalg.norm(grad(x)))
    print(f"ARC: f = {float(rosenbrock(x)):.3e}, |grad| = {gnorm:.1e} after {iters} "
          f"iterations and {nprod} Hessian-vector products")
    check("minimiser vs (1, ..., 1)", x, xp.ones(n), 1e-6)

    # the same problem with SciPy's trust-region Krylov method and dg.hessp, for reference
    hessp = dg.hessp(rosenbrock)
    counter = [0]

    def hp(q, p):
        counter[0] += 1
        return to_host(hessp(xp.asarray(q), xp.asarray(p)))

    res = minimize(lambda q: float(rosenbrock(xp.asarray(q))), to_host(x0),
                   jac=lambda q: to_host(grad(xp.asarray(q))), hessp=hp,
                   method="trust-krylov", options={"gtol": 1e-8})
    print(f"scipy trust-krylov: f = {res.fun:.3e} after {res.nit} iterations and "
          f"{counter[0]} Hessian-vector products")


if __name__ == "__main__":
    main()
