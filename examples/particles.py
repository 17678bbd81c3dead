"""Scenario 2 of docs/faq.md: per-particle Newton dynamics with batched Hessian-vector products.

``x`` has shape ``(3, na, nb, ng)``: one 3-D position per particle. Each particle has its
own energy ``E_i(x_i)`` (a convex bowl plus the Gaussian bump of the user report), so the
Hessian of ``sum(E)`` is block-diagonal with 3×3 blocks, and
``dg.hvp(E, batch_axes=(1, 2, 3))`` gives every particle's ``H_i v_i`` in one program (one
fused pass on the GPU). Every particle then runs Newton's method, solving ``H_i s_i = -g_i``
by conjugate gradients *batched over particles*: the dot products reduce over the
coordinate axis only, so all particles iterate in lockstep with one batched HVP per step.

Run: ``python examples/particles.py``
"""
import sys
import textwrap
import time

import numpy as np

import dualgpu as dg
from dualgpu.backends.cupy import cupy_available

if cupy_available():
    import cupy as xp

    to_host = lambda a: a.get() if hasattr(a, "get") else np.asarray(a)
    N = 100
else:
    xp = np
    to_host = np.asarray
    N = 20


def f_batch(x, mu):
    """The user's per-particle function: exp(-|x_i - mu|²), one value per particle."""
    return np.exp(-np.sum((x - mu[:, None, None, :]) ** 2, axis=0))


def energy(x, mu):
    """A strictly convex per-particle energy: sum_d cosh(x_d - mu_d) + 0.4 f_batch."""
    return np.sum(np.cosh(x - mu[:, None, None, :]), axis=0) + 0.4 * f_batch(x, mu)


def batched_cg(hvp, g, iters=3):
    """Solve H_i s_i = -g_i for every particle at once (3×3 blocks: 3 CG steps are exact)."""
    dot = lambda a, b: xp.sum(a * b, axis=0)        # per-particle inner products
    s = xp.zeros_like(g)
    r = -g
    d = r
    rr = dot(r, r)
    for _ in range(iters):
        Hd = hvp(d)
        alpha = rr / xp.maximum(dot(d, Hd), 1e-300)
        s = s + alpha * d
        r = r - alpha * Hd
        rr_new = dot(r, r)
        d = r + (rr_new / xp.maximum(rr, 1e-300)) * d
        rr = rr_new
    return s


def check(what, got, want, tol):
    got, want = to_host(got), to_host(want)
    err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300)
    print(f"{what}: relative error {err:.1e} {'ok' if err <= tol else 'FAILED'}")
    if err > tol:
        sys.exit(1)


def main():
    rng = np.random.default_rng(0)
    x = xp.asarray(rng.standard_normal((3, N, N, N)) * 0.7)
    mu = xp.asarray(rng.standard_normal((3, N)) * 0.5)
    print(f"{N ** 3} particles, x of shape {tuple(x.shape)}, on {xp.__name__}")

    hvp = dg.hvp(energy, batch_axes=(1, 2, 3))
    grad_hvp = dg.grad_and_hvp(energy, batch_axes=(1, 2, 3), return_value=True)

    # checks against finite differences: separability lets one shifted evaluation give
    # every particle's partial derivative along a coordinate
    v = xp.asarray(rng.standard_normal(x.shape))
    total, g, hv = grad_hvp(x, mu, v)
    eps = 1e-6
    fd_g = []
    for d in range(3):
        e = xp.zeros_like(x)
        e[d] = eps
        fd_g.append((energy(x + e, mu) - energy(x - e, mu)) / (2 * eps))
    check("per-particle gradient vs finite differences", g, xp.stack(fd_g), 1e-6)
    grad_sum = dg.grad(lambda x, mu: np.sum(energy(x, mu)))
    fd_hv = (grad_sum(x + eps * v, mu) - grad_sum(x - eps * v, mu)) / (2 * eps)
    check("per-particle H·v vs finite differences", hv, fd_hv, 1e-6)

    # Newton's method for every particle at once
    t0 = time.perf_counter()
    n_hvp = 0
    for it in range(20):
        g = dg.grad(lambda x, mu: np.sum(energy(x, mu)))(x, mu)
        worst = float(xp.max(xp.sqrt(xp.sum(g * g, axis=0))))
        print(f"  Newton iteration {it}: sum E = {float(xp.sum(energy(x, mu))):.10f}, "
              f"max per-particle |grad| = {worst:.2e}")
        if worst < 1e-10:
            break
        x = x + batched_cg(lambda d, x=x: hvp(x, mu, d), g)
        n_hvp += 3
    took = time.perf_counter() - t0
    print(f"converged in {it} Newton iterations, {n_hvp} batched HVP calls "
          f"({n_hvp * N ** 3} per-particle products), {took:.2f} s")
    if worst > 1e-8:
        sys.exit(1)

    # a function that couples particles is refused, with the op and the line that couples
    def normalized(x, mu):
        f = f_batch(x, mu)
        return f / np.sum(f)

    try:
        dg.hvp(normalized, batch_axes=(1, 2, 3))(x, mu, v)
        print("FAILED: a coupled function was accepted")
        sys.exit(1)
    except dg.SeparabilityError as e:
        print("coupled function refused:")
        print(textwrap.fill(str(e), width=100, initial_indent="  ", subsequent_indent="  "))


if __name__ == "__main__":
    main()
