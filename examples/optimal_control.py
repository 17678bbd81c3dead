"""Optimal control of a gantry crane with ``scipy.optimize.minimize(method="trust-constr")``
and the sparse derivatives dualgpu detects from the code.

A cart carries a load on a cable of length ``l``; the control is the cart's acceleration
``a``. The load should follow the cart to ``p = 1`` m along a smooth reference without
swinging. Discretised by implicit Euler over ``N`` steps of ``h = T / N``:

    p[k+1] - p[k] - h v[k+1] = 0                     (cart position, velocity)
    v[k+1] - v[k] - h a[k] = 0
    th[k+1] - th[k] - h om[k+1] = 0                  (cable angle, angular velocity)
    om[k+1] - om[k] + h (g/l sin th[k+1] + a[k]/l cos th[k+1] + b om[k+1]) = 0

with the initial state at rest. The decision vector is ``z = (p, v, th, om, a)`` flattened
(``5 N + 4`` unknowns, ``4 N + 4`` equality constraints ``c(z) = 0``); the objective is a
tracking cost plus swing and control effort. trust-constr gets

- ``jac=`` of the objective from ``dg.grad(objective)``,
- the constraints' Jacobian from ``dg.sparse_jacobian(constraints)`` (CSR),
- the Hessian of the Lagrangian ``L(z, lam) = f(z) + lam @ c(z)`` from one
  ``dg.sparse_hessian(lagrangian)`` (``lam`` is a second argument, not differentiated).

Patterns and colorings are detected once; each iteration reuses them. On a small instance
the sparse matrices are checked against dense ``dg.jacobian`` / ``dg.hessian`` and those
against central differences; the solution is checked for feasibility and optimality.

Run: ``python examples/optimal_control.py``
"""
import sys
import time

import numpy as np
import scipy.sparse as sp
from scipy.optimize import NonlinearConstraint, minimize

import dualgpu as dg

T = 4.0          # horizon, s
GRAVITY = 9.81   # m/s^2
CABLE = 1.0      # cable length l, m
DAMPING = 0.1    # b, 1/s
TRACKING = 100.0  # weight of (p - p_ref)^2 in the objective
SWING = 10.0     # of th^2
EFFORT = 1e-2    # weight of a^2


def unpack(z):
    """The states (``N + 1`` each) and the controls (``N``) of the flat ``z``."""
    n_steps = (z.size - 4) // 5
    states = z[: 4 * (n_steps + 1)].reshape(4, n_steps + 1)
    return states[0], states[1], states[2], states[3], z[4 * (n_steps + 1):]


def reference(n_steps):
    """The cart's reference position: a smoothstep from 0 to 1 m over the first 2/3 of T."""
    s = np.clip(np.linspace(0.0, 1.5, n_steps + 1), 0.0, 1.0)
    return s * s * (3 - 2 * s)


def make_problem(n_steps):
    h = T / n_steps
    p_ref = reference(n_steps)

    def objective(z):
        p, v, th, om, a = unpack(z)
        return h * (TRACKING * np.sum((p - p_ref) ** 2) + SWING * np.sum(th ** 2)
                    + EFFORT * np.sum(a ** 2))

    def constraints(z):
        p, v, th, om, a = unpack(z)
        swing = GRAVITY / CABLE * np.sin(th[1:]) + a / CABLE * np.cos(th[1:]) \
            + DAMPING * om[1:]
        return np.concatenate([
            p[1:] - p[:-1] - h * v[1:],
            v[1:] - v[:-1] - h * a,
            th[1:] - th[:-1] - h * om[1:],
            om[1:] - om[:-1] + h * swing,
            np.stack([p[0], v[0], th[0], om[0]]),   # at rest at the start
        ])

    def lagrangian(z, lam):
        return objective(z) + lam @ constraints(z)

    return objective, constraints, lagrangian


def check(what, ok, detail):
    print(f"{what}: {detail} {'ok' if ok else 'FAILED'}")
    if not ok:
        sys.exit(1)


def relative_error(got, want):
    return np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300)


def check_small_instance(n_steps=12):
    """Sparse against dense on a small instance, and dense against central differences."""
    objective, constraints, lagrangian = make_problem(n_steps)
    rng = np.random.default_rng(0)
    z = 0.3 * rng.standard_normal(5 * n_steps + 4)
    lam = rng.standard_normal(4 * n_steps + 4)

    def close(what, got, want, tol):
        err = relative_error(got, want)
        check(f"small instance: {what}", err < tol, f"relative error {err:.1e}")

    J_dense = dg.jacobian(constraints)(z)
    close("sparse Jacobian vs dense", dg.sparse_jacobian(constraints)(z).toarray(), J_dense,
          1e-14)
    eps = 1e-6
    J_fd = np.stack([(constraints(z + eps * e) - constraints(z - eps * e)) / (2 * eps)
                     for e in np.eye(z.size)], axis=1)
    close("dense Jacobian vs central differences", J_dense, J_fd, 1e-8)

    H_dense = dg.hessian(lagrangian)(z, lam)
    close("sparse Hessian of the Lagrangian vs dense",
          dg.sparse_hessian(lagrangian)(z, lam).toarray(), H_dense, 1e-14)
    # second differences of L (NumPy alone) along random directions: u' H w
    u, w = rng.standard_normal((2, z.size))
    eps = 1e-4
    mixed = (lagrangian(z + eps * u + eps * w, lam) - lagrangian(z + eps * u - eps * w, lam)
             - lagrangian(z - eps * u + eps * w, lam)
             + lagrangian(z - eps * u - eps * w, lam)) / (4 * eps ** 2)
    check("small instance: u'Hw vs second differences of L", abs(u @ H_dense @ w - mixed)
          < 1e-5 * max(1.0, abs(mixed)), f"{u @ H_dense @ w:.8f} vs {mixed:.8f}")


def solve(n_steps=1000):
    objective, constraints, lagrangian = make_problem(n_steps)
    grad = dg.grad(objective)
    jac = dg.sparse_jacobian(constraints)
    hess = dg.sparse_hessian(lagrangian)
    z0 = np.zeros(5 * n_steps + 4)            # at rest throughout: feasible
    lam0 = np.zeros(4 * n_steps + 4)

    start = time.perf_counter()
    J, H = jac(z0), hess(z0, lam0)
    first = time.perf_counter() - start
    start = time.perf_counter()
    jac(z0 + 0.1), hess(z0 + 0.1, lam0 + 1.0)      # new values: pattern, colors, program reused
    cached = time.perf_counter() - start
    print(f"crane, N = {n_steps}: {z0.size} unknowns, {lam0.size} constraints; Jacobian and "
          f"Hessian: first call {first:.3f} s (detect, color, compile), next {cached:.4f} s")
    jac_colors = jac.coloring(z0).max() + 1
    hess_colors = hess.coloring(z0, lam0).max() + 1
    print(f"  constraint Jacobian {J.shape[0]} x {J.shape[1]}, {J.nnz} nonzeros, "
          f"{jac_colors} colors")
    print(f"  Lagrangian Hessian {H.shape[0]} x {H.shape[1]}, {H.nnz} nonzeros, "
          f"{hess_colors} colors")
    # one product holds one entry of each row (of each column for row colors): the densest
    # row needs that many colors, whatever N is
    by_columns = len(jac.coloring(z0)) == J.shape[1]
    densest = np.diff((J if by_columns else J.T).tocsr().indptr).max()
    check("Jacobian colors optimal", jac_colors == densest, f"{jac_colors} = {densest}")
    densest = np.diff(H.tocsr().indptr).max()
    check("Hessian colors optimal", hess_colors == densest, f"{hess_colors} = {densest}")

    # trust-constr's Lagrangian is f + v @ c: it adds hess= of the objective to the
    # constraint's hess(z, v). The whole Lagrangian's Hessian goes in the second, zero in
    # the first.
    no_curvature = sp.csr_matrix((z0.size, z0.size))
    dynamics = NonlinearConstraint(constraints, 0.0, 0.0, jac=jac, hess=hess)
    start = time.perf_counter()
    res = minimize(objective, z0, method="trust-constr", jac=grad,
                   hess=lambda z: no_curvature, constraints=[dynamics],
                   options={"gtol": 1e-8, "xtol": 1e-12, "maxiter": 300})
    took = time.perf_counter() - start
    p, v, th, om, a = unpack(res.x)
    violation = np.abs(constraints(res.x)).max()
    print(f"  trust-constr: {res.nit} iterations, {took:.2f} s, status {res.status} "
          f"({res.message})")
    print(f"  objective {res.fun:.6f}, constraint violation {violation:.1e}, "
          f"optimality {res.optimality:.1e}")
    print(f"  cart at {p[-1]:.4f} m, largest swing {np.degrees(np.abs(th).max()):.2f} deg, "
          f"largest acceleration {np.abs(a).max():.2f} m/s^2")

    check("converged", res.status in (1, 2), f"status {res.status}")
    check("dynamics hold", violation < 1e-6, f"max |c(z)| = {violation:.1e}")
    # KKT: grad f + J' lam = 0 with trust-constr's multipliers
    kkt = grad(res.x) + jac(res.x).T @ res.v[0]
    check("stationary", np.abs(kkt).max() < 1e-6, f"max |grad L| = {np.abs(kkt).max():.1e}")
    check("cart reaches the target", abs(p[-1] - 1.0) < 1e-2, f"|p[N] - 1| = {abs(p[-1] - 1):.1e}")


if __name__ == "__main__":
    check_small_instance()
    solve()
