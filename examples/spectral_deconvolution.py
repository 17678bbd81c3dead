"""Deblurring a periodic signal with a smoothness prior, solved by Newton-CG through FFTs.

A signal ``u`` on a periodic grid was blurred by a Gaussian kernel (a product in Fourier
space) and measured with noise. The estimate minimises

    |irfft(K * rfft(u)) - y|^2 / 2  +  lam * |du/dx|^2 / 2  +  mu * sum(log cosh(u))

where ``du/dx`` is the spectral derivative (``irfft(2 pi i k * rfft(u))``) and the last term a
robust penalty that makes the problem nonlinear. dualgpu traces ``numpy.fft`` (``cupy.fft``
on a GPU) like any other op: the gradient and the Hessian-vector products of the objective
come from the two complex transforms underneath, each its own transpose, and the Newton
system is solved by conjugate gradients without forming the Hessian. The Hessian products
are checked against finite differences of the gradient, and the recovered signal against
the truth.

Run: ``python examples/spectral_deconvolution.py``
"""
import sys

import numpy as np

import dualgpu as dg
from dualgpu.backends.cupy import cupy_available

if cupy_available():
    import cupy as xp
    from cupyx.scipy.sparse.linalg import LinearOperator, cg
else:
    xp = np
    from scipy.sparse.linalg import LinearOperator, cg

N, LENGTH = 256, 2 * np.pi


def objective(u, y, blur, wavenumbers, lam, mu):
    spectrum = np.fft.rfft(u)
    misfit = np.fft.irfft(blur * spectrum, u.size) - y
    du = np.fft.irfft(1j * wavenumbers * spectrum, u.size)
    return (np.sum(misfit ** 2) + lam * np.sum(du ** 2)) / 2 + mu * np.sum(np.log(np.cosh(u)))


def check(what, err, tol):
    print(f"{what}: {err:.1e} {'ok' if err <= tol else 'FAILED'}")
    if err > tol:
        sys.exit(1)


def main():
    rng = np.random.default_rng(0)
    x = np.arange(N) * LENGTH / N
    truth = 0.8 * np.tanh(4 * np.sin(x)) + 0.3 * np.sin(5 * x)
    k = np.fft.rfftfreq(N, LENGTH / N) * 2 * np.pi       # angular wavenumbers
    blur = np.exp(-0.5 * (0.08 * k) ** 2)
    y = np.fft.irfft(blur * np.fft.rfft(truth), N) + 0.02 * rng.standard_normal(N)
    y, blur, k = xp.asarray(y), xp.asarray(blur), xp.asarray(k)
    lam, mu = 1e-3, 1e-3
    print(f"deconvolution of {N} periodic samples on {xp.__name__}")

    grad = dg.jit(dg.grad(objective))
    hvp = dg.hvp(objective)
    u = xp.zeros(N)
    for step in range(10):
        g = grad(u, y, blur, k, lam, mu)
        print(f"Newton step {step}: |grad| = {float(xp.linalg.norm(g)):.2e}")
        if float(xp.linalg.norm(g)) < 1e-10:
            break
        H = LinearOperator((N, N), matvec=lambda v, u=u: hvp(u, y, blur, k, lam, mu, v),
                           dtype=np.float64)
        du, _ = cg(H, -g, maxiter=200)
        u = u + du

    v = xp.asarray(rng.standard_normal(N))
    eps = 1e-6
    fd = (grad(u + eps * v, y, blur, k, lam, mu) - grad(u - eps * v, y, blur, k, lam, mu)) / (
        2 * eps)
    hv = hvp(u, y, blur, k, lam, mu, v)
    check("Hessian-vector product against differences of the gradient",
          float(xp.linalg.norm(hv - fd) / xp.linalg.norm(fd)), 1e-6)
    check("gradient at the solution", float(xp.linalg.norm(grad(u, y, blur, k, lam, mu))), 1e-8)
    err = float(xp.linalg.norm(u - xp.asarray(truth)) / np.linalg.norm(truth))
    check("relative error of the recovered signal", err, 0.1)


if __name__ == "__main__":
    main()
