"""Scenario 3 of docs/faq.md: differentiable dense x sparse products.

1. The gradient of ``sum(tanh(x @ A)**2)`` with a sparse CSR ``A``, with respect to the dense
   ``x`` and to the values of ``A`` (returned as a CSR matrix with ``A``'s pattern).
2. A one-layer graph convolution, ``loss(W) = sum(sigmoid(A @ X @ W)**2)``: its gradient and
   its Hessian-vector product with respect to ``W``.

Every result is checked against central finite differences. ``A`` is never densified: the
products run as sparse x dense (SciPy here, cuSPARSE through cupyx on a GPU).

Run: ``python examples/sparse_graph_conv.py``
"""
import sys

import numpy as np

import dualgpu as dg
from dualgpu.backends.cupy import cupy_available

if cupy_available():
    import cupy as xp
    import cupyx.scipy.sparse as sparse
else:
    import scipy.sparse as sparse

    xp = np


def check(what, got, want, tol=1e-6):
    got, want = (np.asarray(a.get() if hasattr(a, "get") else a) for a in (got, want))
    err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300)
    print(f"{what}: relative error {err:.1e} {'ok' if err <= tol else 'FAILED'}")
    if err > tol:
        sys.exit(1)


def random_graph(n, degree, rng):
    """A symmetric-normalised adjacency matrix D^-1/2 (A + I) D^-1/2 in CSR."""
    import scipy.sparse as sp

    rows = rng.integers(0, n, n * degree)
    cols = rng.integers(0, n, n * degree)
    a = sp.coo_matrix((np.ones(n * degree), (rows, cols)), shape=(n, n)).tocsr()
    a = ((a + a.T) > 0).astype(float) + sp.eye(n, format="csr")
    d = 1 / np.sqrt(np.asarray(a.sum(axis=1)).ravel())
    a = sp.diags(d) @ a @ sp.diags(d)
    return sparse.csr_matrix(a.tocsr()) if xp is not np else a.tocsr()


def main():
    rng = np.random.default_rng(0)
    n, features, hidden = 300, 16, 8
    A = random_graph(n, 4, rng)
    print(f"A: {type(A).__name__} {A.shape[0]}x{A.shape[1]}, nnz={A.nnz}")

    # -- 1. dense x sparse: gradient wrt x and wrt the values of A
    x = xp.asarray(rng.standard_normal((5, n)))

    def f(A, x):
        return xp.sum(xp.tanh(x @ A) ** 2)

    grad_A, grad_x = dg.grad(f, argnums=(0, 1))(A, x)
    print(f"grad wrt A: {type(grad_A).__name__}, nnz={grad_A.nnz} (A's pattern)")
    d = xp.asarray(rng.standard_normal(x.shape))
    eps = 1e-6
    check("d/dx sum(tanh(x @ A)**2) along d", xp.sum(grad_x * d),
          (f(A, x + eps * d) - f(A, x - eps * d)) / (2 * eps))
    dv = xp.asarray(rng.standard_normal(A.nnz))
    shifted = [A.copy() for _ in range(2)]
    shifted[0].data += eps * dv
    shifted[1].data -= eps * dv
    check("d/dA.data along a random direction", xp.sum(grad_A.data * dv),
          (f(shifted[0], x) - f(shifted[1], x)) / (2 * eps))

    # -- 2. one-layer graph convolution: gradient and HVP wrt W
    X = xp.asarray(rng.standard_normal((n, features)))

    def loss(W):
        return xp.sum(dg.nn.sigmoid(A @ X @ W) ** 2)

    W = xp.asarray(rng.standard_normal((features, hidden)) * 0.3)
    V = xp.asarray(rng.standard_normal(W.shape))
    g, hv = dg.grad_and_hvp(loss)(W, V)
    grad = dg.grad(loss)
    check("grad of the GCN loss along V", xp.sum(g * V),
          (loss(W + eps * V) - loss(W - eps * V)) / (2 * eps))
    check("HVP of the GCN loss", hv, (grad(W + 1e-5 * V) - grad(W - 1e-5 * V)) / 2e-5,
          tol=1e-5)

    # the same with the sparse product inside the differentiated path: A @ (X @ W)
    def loss_inner(W):
        return xp.sum(dg.nn.sigmoid(A @ (X @ W)) ** 2)

    check("HVP with A @ (X @ W)", dg.hvp(loss_inner)(W, V), hv, tol=1e-10)
    print(dg.trace(dg.grad(loss_inner), W))


if __name__ == "__main__":
    main()
