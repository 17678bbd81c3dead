"""Jacobians and per-example derivatives with ``dg.vmap``.

* ``dg.jacrev`` / ``dg.jacfwd``: the Jacobian of a small network's outputs with respect to
  its parameters (a Gauss-Newton matrix ``J^T J`` from it), checked against central
  differences;
* ``dg.vmap(dg.grad(loss))``: per-example gradients in one program (the norms that
  differentially private SGD clips);
* ``dg.vmap(dg.hvp(loss))``: ``H @ V`` for a block of directions as one program whose
  products are as wide as the block, against the dense Hessian.

Run: ``python examples/jacobians.py``
"""
import time

import numpy as np

import dualgpu as dg

rng = np.random.default_rng(0)
N, D, H, K = 32, 5, 8, 3  # examples, inputs, hidden units, outputs
params = {"W1": rng.standard_normal((D, H)) / np.sqrt(D), "b1": np.zeros(H),
          "W2": rng.standard_normal((H, K)) / np.sqrt(H)}
X = rng.standard_normal((N, D))
y = rng.standard_normal((N, K))


def predict(p, x):
    return np.tanh(x @ p["W1"] + p["b1"]) @ p["W2"]


def loss(p, x, y):
    return 0.5 * np.sum((predict(p, x) - y) ** 2)


def central_differences(f, x, eps=1e-6):
    cols = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = eps
        cols.append((f(x + e.reshape(x.shape)) - f(x - e.reshape(x.shape))) / (2 * eps))
    return np.stack(cols, axis=-1)


# --- the Jacobian of the outputs with respect to the parameters, two ways
flat, unravel = dg.tree.ravel(params)
outputs = lambda w: predict(unravel(w), X).reshape(-1)  # noqa: E731
J_rev = dg.jacrev(outputs)(flat)
J_fwd = dg.jacfwd(outputs)(flat)
J_num = central_differences(outputs, flat)
print(f"Jacobian {J_rev.shape}: |rev - fwd| = {np.abs(J_rev - J_fwd).max():.1e}, "
      f"|rev - finite differences| = {np.abs(J_rev - J_num).max():.1e}")
assert np.allclose(J_rev, J_fwd, rtol=1e-10, atol=1e-12)
assert np.allclose(J_rev, J_num, rtol=1e-6, atol=1e-7)
gauss_newton = J_rev.T @ J_rev
print(f"Gauss-Newton matrix {gauss_newton.shape}, trace {np.trace(gauss_newton):.3f}")

# pytrees: the Jacobian with respect to each parameter, shaped like the parameters
J_tree = dg.jacrev(predict)(params, X[0])
assert J_tree["W1"].shape == (K, D, H) and J_tree["b1"].shape == (K, H)

# --- per-example gradients: one program for the whole batch
per_example = dg.vmap(dg.grad(loss), in_axes=(None, 0, 0))(params, X, y)
norms = np.sqrt(sum(np.sum(g.reshape(N, -1) ** 2, axis=1) for g in per_example.values()))
total = dg.grad(loss)(params, X, y)
assert np.allclose(per_example["W1"].sum(axis=0), total["W1"], rtol=1e-10)
print(f"per-example gradient norms: min {norms.min():.3f}, max {norms.max():.3f}")

# --- H @ V for a block of directions, one wide program against one HVP per direction
flat_loss = lambda w: loss(unravel(w), X, y)  # noqa: E731
V = rng.standard_normal((16, flat.size))
block = dg.vmap(dg.hvp(flat_loss), in_axes=(None, 0))
HV = block(flat, V)
assert np.allclose(HV, V @ dg.hessian(flat_loss)(flat), rtol=1e-9, atol=1e-10)
hvp = dg.hvp(flat_loss)
for _ in range(3):  # warm both caches, then time them
    block(flat, V), [hvp(flat, v) for v in V]
t0 = time.perf_counter()
block(flat, V)
t_block = time.perf_counter() - t0
t0 = time.perf_counter()
[hvp(flat, v) for v in V]
t_loop = time.perf_counter() - t0
matmuls = dg.trace(block, flat, V).primitive_counts()["matmul"]
print(f"H @ V, 16 directions: one program ({matmuls} GEMMs) {t_block * 1e3:.2f} ms, "
      f"16 HVP calls {t_loop * 1e3:.2f} ms")
