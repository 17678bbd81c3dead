"""Newton's method with sparse Jacobians and Hessians detected from the graph.

1. An implicit Euler step of the 2-D Brusselator reaction-diffusion system: the residual
   ``F(y) = y - y_old - dt f(y)`` has a sparse Jacobian (a 5-point stencil in each species,
   coupled pointwise); ``dg.sparse_jacobian`` detects its pattern, colors its columns and
   computes it with a handful of JVPs in one program, and ``scipy.sparse.linalg.spsolve``
   takes each Newton step.
2. A 2-D nonlinear Poisson energy minimised by Newton steps with ``dg.sparse_hessian``
   (5 HVPs per Hessian, whatever the grid size).

Each derivative is checked against central differences along a random direction.

Run: ``python examples/sparse_newton.py``
"""
import sys
import time

import numpy as np
import scipy.sparse.linalg

import dualgpu as dg


def laplacian(w):
    """The 5-point Laplacian of a square grid (zero outside), unscaled."""
    p = np.pad(w, 1)
    return p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * w


def brusselator_residual(y, y_old, dt=1e-3, a=1.0, b=3.4, alpha=0.002):
    side = int(round((y.size // 2) ** 0.5))
    u = y[: side * side].reshape(side, side)
    v = y[side * side:].reshape(side, side)
    h2 = (side + 1) ** 2
    fu = a + u ** 2 * v - (b + 1) * u + alpha * h2 * laplacian(u)
    fv = b * u - u ** 2 * v + alpha * h2 * laplacian(v)
    return y - y_old - dt * np.concatenate([fu.ravel(), fv.ravel()])


def poisson_energy(u, f):
    """The energy whose stationary point solves -Δu + u³ = f (the 5-point Laplacian on
    the unit square scaled by (side + 1)², u = 0 on the boundary; its Hessian is SPD)."""
    side = int(round(u.size ** 0.5))
    grid = np.pad(u.reshape(side, side), 1)
    h2 = (side + 1) ** 2
    return 0.5 * h2 * (np.sum((grid[1:] - grid[:-1]) ** 2)
                       + np.sum((grid[:, 1:] - grid[:, :-1]) ** 2)) \
        + 0.25 * np.sum(u ** 4) - np.sum(f * u)


def check(what, got, want, tol):
    err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300)
    print(f"{what}: relative error {err:.1e} {'ok' if err <= tol else 'FAILED'}")
    if err > tol:
        sys.exit(1)


def brusselator_step(side=40):
    rng = np.random.default_rng(0)
    y_old = np.concatenate([1 + 0.1 * rng.standard_normal(side * side),
                            3.4 + 0.1 * rng.standard_normal(side * side)])
    jac = dg.sparse_jacobian(brusselator_residual)
    start = time.perf_counter()
    J = jac(y_old, y_old)
    first = time.perf_counter() - start
    print(f"Brusselator, {y_old.size} unknowns: Jacobian with {J.nnz} nonzeros from "
          f"{jac.coloring(y_old, y_old).max() + 1} products ({first:.2f} s with detection)")
    v = rng.standard_normal(y_old.size)
    eps = 1e-6
    check("J·v vs central differences", J @ v,
          (brusselator_residual(y_old + eps * v, y_old)
           - brusselator_residual(y_old - eps * v, y_old)) / (2 * eps), 1e-7)
    y = y_old.copy()
    for k in range(5):
        r = brusselator_residual(y, y_old)
        print(f"  Newton {k}: |F| = {np.abs(r).max():.2e}")
        if np.abs(r).max() < 1e-12:
            break
        y = y - scipy.sparse.linalg.spsolve(jac(y, y_old).tocsc(), r)
    check("implicit step solved", np.abs(brusselator_residual(y, y_old)).max() + 1.0, 1.0,
          1e-11)


def poisson_newton(side=60):
    n = side * side
    f = 50.0 * np.ones(n)
    hess = dg.sparse_hessian(poisson_energy)
    grad = dg.grad(poisson_energy)
    u = np.zeros(n)
    H = hess(u, f)
    print(f"Poisson energy, {n} unknowns: Hessian with {H.nnz} nonzeros from "
          f"{hess.coloring(u, f).max() + 1} HVPs")
    v = np.random.default_rng(1).standard_normal(n)
    eps = 1e-6
    u_test = 0.1 * np.random.default_rng(2).standard_normal(n)
    check("H·v vs central differences of the gradient", hess(u_test, f) @ v,
          (grad(u_test + eps * v, f) - grad(u_test - eps * v, f)) / (2 * eps), 1e-6)
    for k in range(8):
        g = grad(u, f)
        print(f"  Newton {k}: |grad| = {np.abs(g).max():.2e}")
        if np.abs(g).max() < 1e-10:
            break
        u = u - scipy.sparse.linalg.spsolve(hess(u, f).tocsc(), g)
    check("stationary point", np.abs(grad(u, f)).max() + 1.0, 1.0, 1e-9)


if __name__ == "__main__":
    brusselator_step()
    poisson_newton()
