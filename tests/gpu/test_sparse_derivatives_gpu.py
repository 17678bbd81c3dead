"""dg.sparse_jacobian and dg.sparse_hessian on CuPy: cupyx.scipy.sparse CSR matrices of the
argument's dtype on the device, equal to the closed form (Rosenbrock) and to the NumPy
result (a Brusselator residual, both modes); patterns detected once per signature; a
Newton step with cupyx's spsolve."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_device import cupy_or_skip  # noqa: E402

cp = cupy_or_skip()

import cupyx.scipy.sparse  # noqa: E402
import cupyx.scipy.sparse.linalg  # noqa: E402

import dualgpu as dg  # noqa: E402
from dualgpu.api import sparse_derivatives  # noqa: E402


def rosenbrock(x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def rosenbrock_hessian(x):
    n = len(x)
    h = np.zeros((n, n))
    i = np.arange(n - 1)
    h[i, i] += 1200 * x[:-1] ** 2 - 400 * x[1:] + 2
    h[i + 1, i + 1] += 200
    h[i, i + 1] = h[i + 1, i] = -400 * x[:-1]
    return h


def brusselator(x, x_old, dt=0.01, a=1.0, b=3.0, alpha=0.02):
    n = len(x) // 2
    u, v = x[:n], x[n:]
    xp = cp if isinstance(x, cp.ndarray) else np
    lap = lambda w: xp.pad(w, 1)[:-2] - 2 * w + xp.pad(w, 1)[2:]
    fu = a + u ** 2 * v - (b + 1) * u + alpha * n ** 2 * lap(u)
    fv = b * u - u ** 2 * v + alpha * n ** 2 * lap(v)
    return x - x_old - dt * xp.concatenate([fu, fv])


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-10), (np.float32, 1e-4)])
def test_sparse_hessian_is_a_cupyx_csr_on_the_device(dtype, tol):
    x = np.linspace(-1, 1, 200)
    hess = dg.sparse_hessian(rosenbrock)
    h = hess(cp.asarray(x, dtype=dtype))
    assert isinstance(h, cupyx.scipy.sparse.csr_matrix) and h.dtype == dtype
    want = rosenbrock_hessian(x.astype(dtype).astype(np.float64))
    np.testing.assert_allclose(cp.asnumpy(h.toarray()), want, rtol=tol, atol=tol * 100)
    assert int(hess.coloring(cp.asarray(x, dtype=dtype)).max()) + 1 == 3


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_sparse_jacobian_on_cupy_equals_numpy(mode):
    rng = np.random.default_rng(0)
    x_old = rng.uniform(0.5, 1.5, 64)
    x = x_old + 0.01 * rng.standard_normal(64)
    jac = dg.sparse_jacobian(brusselator, mode=mode)
    on_device = jac(cp.asarray(x), cp.asarray(x_old))
    assert isinstance(on_device, cupyx.scipy.sparse.csr_matrix)
    np.testing.assert_allclose(cp.asnumpy(on_device.toarray()),
                               jac(x, x_old).toarray(), rtol=1e-12, atol=1e-12)


def test_pattern_detected_once_per_signature_on_cupy(monkeypatch):
    calls = []
    detect = sparse_derivatives.detect_pattern
    monkeypatch.setattr(sparse_derivatives, "detect_pattern",
                        lambda *a, **k: calls.append(1) or detect(*a, **k))
    hess = dg.sparse_hessian(rosenbrock)
    x = cp.linspace(-1, 1, 1000)
    hess(x)
    second = hess(2 * x)
    assert len(calls) == 1
    np.testing.assert_allclose(cp.asnumpy(second.toarray()),
                               rosenbrock_hessian(cp.asnumpy(2 * x)), rtol=1e-10, atol=1e-8)


def test_newton_step_with_cupyx_spsolve():
    rng = np.random.default_rng(1)
    x_old = cp.asarray(rng.uniform(0.5, 1.5, 200))
    jac = dg.sparse_jacobian(brusselator)
    x = x_old.copy()
    for _ in range(4):
        x = x - cupyx.scipy.sparse.linalg.spsolve(jac(x, x_old), brusselator(x, x_old))
    assert float(cp.abs(brusselator(x, x_old)).max()) < 1e-10


def test_patterns_of_programs_closing_over_cupyx_matrices_equal_numpy():
    """Pattern detection reads the index arrays of spmm and spsolve on the host (copied
    once), so a function closing over cupyx matrices gets the patterns and the sparse
    Hessian of the same function over SciPy's."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import spsolve

    a = (sp.random(30, 30, density=0.05, random_state=0) + 4 * sp.eye(30)).tocsr()
    ag = cupyx.scipy.sparse.csr_matrix(a)

    def make(A, solve):
        return lambda x: np.sum(np.tanh(A @ x) ** 2) + np.sum(solve(A, x ** 2) ** 2)

    f_cpu, f_gpu = make(a, spsolve), make(ag, cupyx.scipy.sparse.linalg.spsolve)
    x = np.linspace(0.1, 0.9, 30)
    for detect in (dg.hessian_sparsity, dg.jacobian_sparsity):
        g = (lambda f: lambda x: dg.grad(f)(x)) if detect is dg.jacobian_sparsity else \
            (lambda f: f)
        want = detect(g(f_cpu))(x)
        got = detect(g(f_gpu))(cp.asarray(x))
        dense = got.toarray()
        np.testing.assert_array_equal(dense.get() if isinstance(dense, cp.ndarray) else dense,
                                      want.toarray())
    h = dg.sparse_hessian(f_gpu)(cp.asarray(x))
    np.testing.assert_allclose(cp.asnumpy(h.toarray()), dg.sparse_hessian(f_cpu)(x).toarray(),
                               rtol=1e-9, atol=1e-9)
