"""Issue 39's colorings on CuPy: dg.sparse_hessian(coloring="acyclic") decompresses by
substitution (gathers and a cumsum) inside the compiled program, and
dg.sparse_jacobian(mode="bidirectional") runs its forward and reverse products in one
program; both equal the NumPy results."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_device import cupy_or_skip  # noqa: E402

cp = cupy_or_skip()

import cupyx.scipy.sparse  # noqa: E402

import dualgpu as dg  # noqa: E402


def hub_and_chain(x):
    return (x ** 3).sum() * cp.cos(x[0]) + (x[1:] * cp.sin(x[:-1])).sum()


def arrowhead(x):
    return cp.concatenate([(x ** 2).sum()[None], x[1:] ** 3 + cp.sin(x[0]) * x[1:]])


@pytest.mark.parametrize("coloring", ["star", "acyclic"])
@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 1e-4)])
def test_sparse_hessian_colorings_on_the_device(coloring, dtype, tol):
    x = np.random.default_rng(0).standard_normal(300).astype(dtype)
    hess = dg.sparse_hessian(hub_and_chain, coloring=coloring)
    h = hess(cp.asarray(x))
    assert isinstance(h, cupyx.scipy.sparse.csr_matrix) and h.dtype == dtype
    want = cp.asnumpy(dg.hessian(hub_and_chain)(cp.asarray(x.astype(np.float64))))
    scale = np.abs(want).max()
    np.testing.assert_allclose(cp.asnumpy(h.toarray()), want, rtol=tol, atol=tol * scale)
    assert int(hess.coloring(cp.asarray(x)).max()) + 1 <= (3 if coloring == "acyclic" else 4)


def test_bidirectional_jacobian_on_the_device():
    x = np.random.default_rng(1).standard_normal(500)
    jac = dg.sparse_jacobian(arrowhead, mode="bidirectional")
    j = jac(cp.asarray(x))
    assert isinstance(j, cupyx.scipy.sparse.csr_matrix)
    want = cp.asnumpy(dg.jacobian(arrowhead)(cp.asarray(x)))
    np.testing.assert_allclose(cp.asnumpy(j.toarray()), want, rtol=1e-12, atol=1e-12)
    columns, rows = jac.coloring(cp.asarray(x))
    assert (columns.max() + 1, rows.max() + 1) == (2, 1)
