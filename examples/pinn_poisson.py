"""A physics-informed network for the Poisson equation, with the per-point Laplacian.

Solve ``-Δu = f`` on the unit square with ``u = 0`` on the boundary, for
``f = 2 π² sin(πx) sin(πy)`` (exact solution ``sin(πx) sin(πy)``). The network is
``u(p) = x (1 - x) y (1 - y) · N(p)`` (the factor enforces the boundary condition), ``N`` a
small tanh MLP. The loss is the mean squared residual ``-Δu - f`` at collocation points;
``dg.laplacian(u, batch_axes=0)`` gives one exact Laplacian per point (forward-Laplacian
propagation, no Hessian), and ``dg.value_and_grad`` differentiates the loss, Laplacian
included, with respect to the weights. A few hundred Adam steps; the relative L2 error
against the exact solution is printed, and a plot saved when matplotlib is importable.

Run: ``python examples/pinn_poisson.py``
"""
import time

import numpy as np

import dualgpu as dg

rng = np.random.default_rng(0)
WIDTH, STEPS, POINTS = 24, 600, 256


def init(sizes):
    return [{"W": rng.standard_normal((m, n)) / np.sqrt(m), "b": np.zeros(n)}
            for m, n in zip(sizes[:-1], sizes[1:])]


def u(pts, params):
    """The network at points ``pts`` (shape (P, 2)): one value per point."""
    h = pts
    for layer in params[:-1]:
        h = np.tanh(h @ layer["W"] + layer["b"])
    out = (h @ params[-1]["W"] + params[-1]["b"])[:, 0]
    x, y = pts[:, 0], pts[:, 1]
    return x * (1 - x) * y * (1 - y) * out


def source(pts):
    return 2 * np.pi ** 2 * np.sin(np.pi * pts[:, 0]) * np.sin(np.pi * pts[:, 1])


def exact(pts):
    return np.sin(np.pi * pts[:, 0]) * np.sin(np.pi * pts[:, 1])


lap_u = dg.laplacian(u, argnums=0, batch_axes=0)   # per point, w.r.t. the coordinates


def loss(params, pts, f):
    return np.mean((-lap_u(pts, params) - f) ** 2)


def adam(params, grads, state, lr=3e-3, b1=0.9, b2=0.999, eps=1e-8):
    t, m, v = state
    t += 1
    leaves, tree = dg.tree.flatten(params)
    g = dg.tree.flatten(grads)[0]
    m = [b1 * mi + (1 - b1) * gi for mi, gi in zip(m, g)]
    v = [b2 * vi + (1 - b2) * gi * gi for vi, gi in zip(v, g)]
    new = [p - lr * (mi / (1 - b1 ** t)) / (np.sqrt(vi / (1 - b2 ** t)) + eps)
           for p, mi, vi in zip(leaves, m, v)]
    return dg.tree.unflatten(tree, new), (t, m, v)


def main():
    params = init([2, WIDTH, WIDTH, 1])
    pts = rng.uniform(0, 1, size=(POINTS, 2))
    f = source(pts)
    # the per-point Laplacian against a dense Hessian at one point
    one = lambda p, params: u(p[None, :], params)[0]
    H = dg.hessian(one)(pts[0], params)
    assert np.isclose(lap_u(pts, params)[0], np.trace(H), rtol=1e-10), "Laplacian FAILED"

    value_and_grad = dg.value_and_grad(loss)
    leaves = dg.tree.flatten(params)[0]
    state = (0, [np.zeros_like(p) for p in leaves], [np.zeros_like(p) for p in leaves])
    t0 = time.perf_counter()
    first = None
    for step in range(STEPS):
        value, grads = value_and_grad(params, pts, f)
        first = value if first is None else first
        params, state = adam(params, grads, state)
        if step % 300 == 0:
            print(f"step {step:4d}  loss {float(value):.4e}")
    elapsed = time.perf_counter() - t0
    grid = np.stack(np.meshgrid(np.linspace(0, 1, 41), np.linspace(0, 1, 41)), -1).reshape(-1, 2)
    pred, ref = u(grid, params), exact(grid)
    err = np.linalg.norm(pred - ref) / np.linalg.norm(ref)
    print(f"{STEPS} steps in {elapsed:.1f} s; loss {float(first):.3e} -> {float(value):.3e}; "
          f"relative L2 error vs the exact solution {err:.3f}")
    if not (float(value) < 0.1 * float(first) and err < 0.2):
        print("training FAILED to reduce the residual")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not importable: no plot")
        return
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    for ax, z, title in zip(axes, (pred, ref, pred - ref), ("PINN", "exact", "difference")):
        im = ax.imshow(z.reshape(41, 41), origin="lower", extent=(0, 1, 0, 1))
        ax.set_title(title)
        fig.colorbar(im, ax=ax)
    fig.tight_layout()
    fig.savefig("pinn_poisson.png", dpi=90)
    print("wrote pinn_poisson.png")


if __name__ == "__main__":
    main()
