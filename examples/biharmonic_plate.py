"""A physics-informed network for Kirchhoff plate bending, with the per-point biharmonic.

A simply supported square plate under the load ``q = 4 π⁴ sin(πx) sin(πy)`` (bending
stiffness 1): ``Δ²w = q`` on the unit square, ``w = 0`` and ``Δw = 0`` on its edges; the
exact deflection is ``sin(πx) sin(πy)``. The network is ``w(p) = x (1 - x) y (1 - y) · N(p)``
(the factor gives ``w = 0`` on the edges), ``N`` a small tanh MLP. The loss is the mean
squared residual of ``Δ²w / (4 π⁴) - sin(πx) sin(πy)`` at interior collocation points
(``dg.biharmonic(w, batch_axes=0)``: one exact Δ²w per point, the forward Laplacian of the
forward-Laplacian program) plus the mean squared ``Δw`` at edge points
(``dg.laplacian(w, batch_axes=0)``); ``dg.value_and_grad`` differentiates it, the
fourth derivatives included, with respect to the weights. Adam steps; the loss is printed
as it goes down, and the relative L2 error against the exact deflection at the end. Runs
on CuPy arrays when CuPy is importable (a GPU), on NumPy otherwise.

Run: ``python examples/biharmonic_plate.py``
"""
import time

import numpy as np

import dualgpu as dg
from dualgpu.backends.cupy import cupy_available

if cupy_available():
    import cupy as xp

    to_host = lambda a: a.get() if hasattr(a, "get") else np.asarray(a)  # noqa: E731
else:
    xp = np
    to_host = np.asarray

rng = np.random.default_rng(0)
WIDTH, STEPS, POINTS, EDGE = 16, 400, 128, 64


def init(sizes):
    return [{"W": xp.asarray(rng.standard_normal((m, n)) / np.sqrt(m)),
             "b": xp.zeros(n)} for m, n in zip(sizes[:-1], sizes[1:])]


def w(pts, params):
    """The deflection at points ``pts`` (shape (P, 2)): one value per point."""
    h = pts
    for layer in params[:-1]:
        h = np.tanh(h @ layer["W"] + layer["b"])
    out = (h @ params[-1]["W"] + params[-1]["b"])[:, 0]
    x, y = pts[:, 0], pts[:, 1]
    return x * (1 - x) * y * (1 - y) * out


def exact(pts):
    return np.sin(np.pi * pts[:, 0]) * np.sin(np.pi * pts[:, 1])


bih_w = dg.biharmonic(w, argnums=0, batch_axes=0)   # Δ²w per point, w.r.t. the coordinates
lap_w = dg.laplacian(w, argnums=0, batch_axes=0)


def loss(params, pts, load, edge):
    interior = np.mean((bih_w(pts, params) / (4 * np.pi ** 4) - load) ** 2)
    return interior + np.mean(lap_w(edge, params) ** 2)


def adam(params, grads, state, lr=5e-3, b1=0.9, b2=0.999, eps=1e-8):
    t, m, v = state
    t += 1
    leaves, tree = dg.tree.flatten(params)
    g = dg.tree.flatten(grads)[0]
    m = [b1 * mi + (1 - b1) * gi for mi, gi in zip(m, g)]
    v = [b2 * vi + (1 - b2) * gi * gi for vi, gi in zip(v, g)]
    new = [p - lr * (mi / (1 - b1 ** t)) / (xp.sqrt(vi / (1 - b2 ** t)) + eps)
           for p, mi, vi in zip(leaves, m, v)]
    return dg.tree.unflatten(tree, new), (t, m, v)


def edge_points(n):
    s = rng.uniform(0, 1, size=n)
    side = rng.integers(0, 4, size=n)
    x = np.where(side == 0, 0.0, np.where(side == 1, 1.0, s))
    y = np.where(side == 2, 0.0, np.where(side == 3, 1.0, s))
    return np.stack([x, y], axis=1)


def main():
    params = init([2, WIDTH, WIDTH, 1])
    pts_h = rng.uniform(0, 1, size=(POINTS, 2))
    pts, edge = xp.asarray(pts_h), xp.asarray(edge_points(EDGE))
    load = xp.asarray(exact(pts_h))
    # the per-point biharmonic against the Laplacian of the Laplacian at one point
    one = lambda p, params: w(p[None, :], params)[0]                      # noqa: E731
    want = float(dg.laplacian(dg.laplacian(one))(pts[0], params))
    got = float(bih_w(pts, params)[0])
    assert np.isclose(got, want, rtol=1e-9), f"biharmonic FAILED: {got} vs {want}"

    value_and_grad = dg.value_and_grad(loss)
    leaves = dg.tree.flatten(params)[0]
    state = (0, [xp.zeros_like(p) for p in leaves], [xp.zeros_like(p) for p in leaves])
    t0 = time.perf_counter()
    first = None
    for step in range(STEPS):
        value, grads = value_and_grad(params, pts, load, edge)
        first = float(value) if first is None else first
        params, state = adam(params, grads, state)
        if step % 50 == 0:
            print(f"step {step:4d}  loss {float(value):.4e}")
    elapsed = time.perf_counter() - t0
    grid_h = np.stack(np.meshgrid(np.linspace(0, 1, 31), np.linspace(0, 1, 31)),
                      -1).reshape(-1, 2)
    pred = to_host(w(xp.asarray(grid_h), params))
    ref = exact(grid_h)
    err = np.linalg.norm(pred - ref) / np.linalg.norm(ref)
    print(f"{STEPS} steps in {elapsed:.1f} s on {xp.__name__}; loss {first:.3e} -> "
          f"{float(value):.3e}; relative L2 error vs the exact deflection {err:.3f}")
    if not (float(value) < 0.1 * first and err < 0.2):
        print("training FAILED to reduce the residual")


if __name__ == "__main__":
    main()
