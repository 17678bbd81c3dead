"""NumPy's (CuPy's) functions of a cupyx sparse matrix read by traced code: the same values
and shapes as SciPy's matrices on the CPU (tests/frontend/test_sparse_numpy_functions.py),
through the cupy namespace (``cp.sum(A)``) and numpy's (``np.sum(A)``)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_device import cupy_or_skip  # noqa: E402

cp = cupy_or_skip()

import cupyx.scipy.sparse  # noqa: E402
import scipy.sparse as sp  # noqa: E402

import dualgpu as dg  # noqa: E402

BASE = sp.random(4, 3, density=0.5, format="csr", random_state=3)
# np.multiply, not *: an axis sum of a *_matrix is an np.matrix on SciPy (* is its product)
FUNCTIONS = {
    "np.sum": lambda M, x: np.sum(M) * x,
    "cp.sum axis=0": lambda M, x: np.multiply(cp.sum(M, axis=0), x).ravel(),
    "np.mean axis=1": lambda M, x: np.multiply(np.mean(M, axis=1), x[0]).ravel(),
    "np.max": lambda M, x: np.max(M) * x,
    # (a vector of the input's library: a cupyx matrix takes no NumPy operand, eagerly either)
    "np.transpose": lambda M, x: np.transpose(M) @ np.concatenate([x, x[:1]]),
    "np.sin": lambda M, x: np.sin(M) @ x,
    "np.dot": lambda M, x: np.dot(M, x),
}


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_numpy_functions_of_cupyx_matrices_match_scipy(fmt):
    A = BASE.asformat(fmt)
    Ag = {"csr": cupyx.scipy.sparse.csr_matrix, "csc": cupyx.scipy.sparse.csc_matrix,
          "coo": cupyx.scipy.sparse.coo_matrix}[fmt](A)
    x = np.linspace(0.5, 1.5, 3)
    for name, fn in FUNCTIONS.items():
        want = dg.jit(lambda x, fn=fn: fn(A, x))(x)
        closed_over = dg.jit(lambda x, fn=fn: fn(Ag, x))(cp.asarray(x))
        traced = dg.jit(lambda M, x, fn=fn: fn(M, x))(Ag, cp.asarray(x))
        for got in (closed_over, traced):
            np.testing.assert_allclose(cp.asnumpy(got), np.asarray(want), rtol=1e-12,
                                       err_msg=name)
