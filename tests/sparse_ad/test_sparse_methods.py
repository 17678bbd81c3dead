"""Methods of a sparse matrix read by traced code (closed over, or an argument, whose values
are traced): each gives SciPy's value, or one SparseMethodError naming the method and line."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import dualgpu as dg

A = (sp.random(4, 5, density=0.4, random_state=0, format="csr")
     + sp.eye(4, 5, k=1, format="csr")).tocsr()
X = np.linspace(0.1, 0.5, 5)

# name -> function of (sparse matrix, dense vector of 5); each returns a dense array
METHODS = {
    "tocsr": lambda M, x: M.tocsr() @ x,
    "tocsc": lambda M, x: M.tocsc() @ x,
    "tocoo": lambda M, x: M.tocoo() @ x,
    "asformat": lambda M, x: M.asformat("csc") @ x,
    "astype": lambda M, x: M.astype(np.float64) @ x,
    "copy": lambda M, x: M.copy() @ x,
    "T": lambda M, x: x[:4] @ M.T.T,
    "toarray": lambda M, x: M.toarray() @ x,
    "multiply": lambda M, x: M.multiply(x) @ x,
    "dot": lambda M, x: M.dot(x),
    "sum axis 0": lambda M, x: np.sum(np.multiply(M.sum(axis=0), np.arange(1.0, 6.0))) * x,
    "sum": lambda M, x: M.sum() * x,
    "mean": lambda M, x: np.sum(np.multiply(M.mean(axis=1).T, np.arange(1.0, 5.0))) * x + M.mean(),
    "diagonal": lambda M, x: M.diagonal() * x[:4],
    "diagonal k=1": lambda M, x: M.diagonal(1) * x[:4],
    "diagonal k=-2": lambda M, x: M.diagonal(-2) * x[:2],
    "@": lambda M, x: M @ x,
}


@pytest.mark.parametrize("name", list(METHODS))
def test_sparse_methods_in_traced_code_match_scipy(name):
    method = METHODS[name]
    want = np.asarray(method(A, X)).ravel()
    closed_over = dg.jit(lambda x: method(A, x))(X)  # a module-level matrix
    np.testing.assert_allclose(np.asarray(closed_over).ravel(), want, rtol=1e-6)
    # an argument whose values are traced: the gradient keeps the pattern
    loss = lambda M, x: np.sum(np.sin(method(M, x)))  # noqa: E731
    gA = dg.grad(loss)(A, X)
    assert gA.nnz == A.nnz and gA.format == A.format
    eps, k = 1e-6, 1
    Ap, Am = A.copy(), A.copy()
    Ap.data[k] += eps
    Am.data[k] -= eps
    fd = (float(loss(Ap, X)) - float(loss(Am, X))) / (2 * eps)
    np.testing.assert_allclose(gA.data[k], fd, rtol=1e-4, atol=1e-6)


def test_other_sparse_methods_are_one_error_naming_the_method():
    with pytest.raises(dg.SparseMethodError, match=r"\.getrow.*test_sparse_methods\.py"):
        dg.jit(lambda x: A.getrow(0) @ x)(X)
    with pytest.raises(AttributeError):
        dg.jit(lambda x: A.eliminate_zeros())(X)
