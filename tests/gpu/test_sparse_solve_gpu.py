"""``cupyx.scipy.sparse.linalg.spsolve`` inside traced functions on CuPy: values equal to
cupyx's own solve, and derivatives (with respect to ``b`` and to the matrix's values) equal
to those of the same program on NumPy (SuperLU), for one and several right-hand sides."""
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
import scipy.sparse as sp  # noqa: E402
import scipy.sparse.linalg  # noqa: E402

import dualgpu as dg  # noqa: E402


def _system(n=40, k=None):
    a = (sp.random(n, n, density=0.1, random_state=0) + 4 * sp.eye(n)).tocsr()
    b = np.random.default_rng(0).standard_normal((n,) if k is None else (n, k))
    return a, b


@pytest.mark.parametrize("k", [None, 3])
def test_spsolve_values_and_gradients_match_numpy(k):
    a, b = _system(k=k)
    ag = cupyx.scipy.sparse.csr_matrix(a)

    def loss(solve, A):
        return lambda b: np.sum(np.tanh(solve(A, b)) ** 2)

    x = dg.jit(lambda b: cupyx.scipy.sparse.linalg.spsolve(ag, b))(cp.asarray(b))
    np.testing.assert_allclose(cp.asnumpy(x), scipy.sparse.linalg.spsolve(a, b), rtol=1e-10)
    want = dg.grad(loss(scipy.sparse.linalg.spsolve, a))(b)
    got = dg.grad(loss(cupyx.scipy.sparse.linalg.spsolve, ag))(cp.asarray(b))
    np.testing.assert_allclose(cp.asnumpy(got), want, rtol=1e-9, atol=1e-12)


def test_spsolve_gradient_wrt_the_matrix_on_gpu():
    a, b = _system()
    f_cpu = lambda A, b: np.sum(np.sin(scipy.sparse.linalg.spsolve(A, b)))   # noqa: E731
    f_gpu = lambda A, b: np.sum(np.sin(cupyx.scipy.sparse.linalg.spsolve(A, b)))  # noqa: E731
    want = dg.grad(f_cpu)(a, b)
    got = dg.grad(f_gpu)(cupyx.scipy.sparse.csr_matrix(a), cp.asarray(b))
    np.testing.assert_allclose(cp.asnumpy(got.data), want.data, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("k", [None, 3])
def test_a_singular_matrix_is_named_on_gpu(k):
    """cupyx's solve returns non-finite values for a singular A instead of raising: the
    program names A as singular, as SuperLU's refusal does on the CPU."""
    a, b = _system(k=k)
    singular = a.tolil()
    singular[:, 2] = 0
    singular[2, :] = 0
    singular = singular.tocsr()
    singular.eliminate_zeros()
    ag = cupyx.scipy.sparse.csr_matrix(singular)
    with pytest.raises(dg.DualgpuError, match="the matrix A is singular"):
        dg.jit(lambda b: cupyx.scipy.sparse.linalg.spsolve(ag, b))(cp.asarray(b))
