"""Loss-landscape curvature: the extreme Hessian eigenvalues of a classifier's loss by Lanczos.

``dg.HessianOperator`` is a linear operator (one forward-over-reverse product per ``H @ v``),
so ``eigsh`` (implicitly restarted Lanczos; cupyx's on a GPU) finds the top eigenvalues
with a few dozen products instead of forming the Hessian. The sharpness (largest
eigenvalue) and the most negative eigenvalue are what loss-landscape studies track.

Run: ``python examples/hessian_eigs.py``
"""
import sys

import numpy as np
from scipy.optimize import minimize

import dualgpu as dg
from dualgpu.backends.cupy import cupy_available

if cupy_available():
    import cupy as xp
    from cupyx.scipy.sparse.linalg import eigsh

    to_host = lambda a: a.get() if hasattr(a, "get") else np.asarray(a)
else:
    xp = np
    from scipy.sparse.linalg import eigsh

    to_host = np.asarray

N_IN, N_HID, N_OUT = 4, 20, 3
N_PARAMS = N_IN * N_HID + N_HID + N_HID * N_OUT + N_OUT


def loss(p, X, labels):
    """Softmax cross-entropy of a 4-20-3 tanh network; p holds all weights, flattened."""
    k = N_IN * N_HID
    W1 = p[:k].reshape(N_IN, N_HID)
    b1 = p[k:k + N_HID]
    k += N_HID
    W2 = p[k:k + N_HID * N_OUT].reshape(N_HID, N_OUT)
    b2 = p[k + N_HID * N_OUT:]
    logits = np.tanh(X @ W1 + b1) @ W2 + b2
    return dg.nn.cross_entropy(logits, labels)


def check(what, got, want, tol):
    got, want = to_host(got), to_host(want)
    err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300)
    print(f"{what}: relative error {err:.1e} {'ok' if err <= tol else 'FAILED'}")
    if err > tol:
        sys.exit(1)


def main():
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((N_OUT, N_IN))
    labels = rng.integers(0, N_OUT, size=300)
    X = centers[labels] + rng.standard_normal((300, N_IN))
    X, labels = xp.asarray(X), xp.asarray(labels)
    print(f"4-20-3 classifier ({N_PARAMS} parameters), 300 samples, on {xp.__name__}")

    # train a little with L-BFGS (SciPy on host vectors)
    grad = dg.grad(loss)
    res = minimize(lambda q: float(loss(xp.asarray(q), X, labels)),
                   rng.standard_normal(N_PARAMS) * 0.3,
                   jac=lambda q: to_host(grad(xp.asarray(q), X, labels)),
                   method="L-BFGS-B", options={"maxiter": 30})
    p = xp.asarray(res.x)
    print(f"after {res.nit} L-BFGS iterations: loss {res.fun:.4f}")

    H = dg.HessianOperator(loss, p, X, labels)
    v = xp.asarray(rng.standard_normal(N_PARAMS))
    eps = 1e-6
    fd = (grad(p + eps * v, X, labels) - grad(p - eps * v, X, labels)) / (2 * eps)
    check("H·v vs finite differences", H @ v, fd, 1e-5)

    H.nprod = 0
    top = np.sort(to_host(eigsh(H.op, k=4, which="LA", return_eigenvectors=False)))[::-1]
    n_top = H.nprod
    print(f"top eigenvalues (Lanczos, {n_top} products): {np.round(top, 5)}")
    if xp is np:  # the smallest eigenvalue too (cupyx's eigsh finds the largest only)
        H.nprod = 0
        low = eigsh(H.op, k=1, which="SA", return_eigenvectors=False, tol=1e-8)[0]
        print(f"most negative eigenvalue ({H.nprod} products): {low:.3e}")

    dense = to_host(dg.hessian(loss)(p, X, labels))   # N_PARAMS products: to check only
    eig = np.linalg.eigvalsh((dense + dense.T) / 2)
    check("top eigenvalues vs dense eigvalsh", top, eig[::-1][:4], 1e-6)
    print(f"sharpness {eig[-1]:.4f}, condition of the top block {eig[-1] / eig[-4]:.1f}, "
          f"{np.sum(eig < -1e-8)} negative eigenvalues of {N_PARAMS}")


if __name__ == "__main__":
    main()
