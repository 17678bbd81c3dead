"""Ownership on CuPy (issue 10, item 6): results alias neither the arguments nor each other,
on every path of the executor -- fused plan eager, CUDA-graph replay ("copy"), the generated
Python (``fuse`` off) -- and cupyx sparse results own their index arrays. CPU versions:
tests/codegen/test_ownership.py."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

cp = pytest.importorskip("cupy")


def _leaves(r):
    if isinstance(r, (tuple, list)):
        return [leaf for item in r for leaf in _leaves(item)]
    return [r]


def _assert_owned(result, *sources):
    leaves = [a for a in _leaves(result) if isinstance(a, cp.ndarray)]
    for i, a in enumerate(leaves):
        for s in sources:
            assert not cp.shares_memory(a, s), f"result {i} shares memory with an argument"
        for j in range(i):
            assert not cp.shares_memory(a, leaves[j]), f"results {j} and {i} share memory"


def test_results_do_not_alias_arguments(path):
    x, y = cp.arange(1.0, 4.0), cp.arange(2.0, 5.0)
    for _ in range(3):  # eager, capture, replay
        gx = dg.grad(lambda x, y: np.sum(x * y))(x, y)
        assert gx is not y
        _assert_owned(gx, x, y)
        out = dg.jit(lambda a: a)(x)
        assert out is not x
        _assert_owned(out, x)
        _assert_owned(dg.jit(lambda a: (a * 2, a * 2))(x), x)
        _assert_owned(dg.jit(lambda a: (a, a.reshape(3, 1), a.T))(x), x)
        _assert_owned(dg.hvp(lambda a: np.sum(a ** 2) / 2)(x, y), x, y)
    out = dg.jit(lambda a: a)(x)
    out[:] = -1
    cp.testing.assert_array_equal(x, cp.arange(1.0, 4.0))


def test_closed_over_constant_is_not_handed_out(path):
    W = cp.ones(3)
    f = dg.jit(lambda a: W)
    for _ in range(3):
        out = f(cp.zeros(3))
        assert out is not W and not cp.shares_memory(out, W)
        out[:] = 5
    cp.testing.assert_array_equal(W, cp.ones(3))


def test_cupyx_sparse_results_own_their_indices():
    import cupyx.scipy.sparse as csp
    import scipy.sparse as sp

    A = csp.csr_matrix(sp.random(6, 5, density=0.4, format="csr", random_state=0))
    B = csp.csr_matrix(sp.random(6, 5, density=0.4, format="csr", random_state=1))
    x = cp.linspace(-1, 1, 5)

    def loss(A, x):
        return np.sum(np.tanh(A @ x) ** 2)

    gA = dg.grad(loss)(A, x)
    assert not cp.shares_memory(gA.indices, A.indices)
    assert not cp.shares_memory(gA.indptr, A.indptr)
    before = A.indices.copy()
    gA.data[:2] = 0
    gA.eliminate_zeros()
    cp.testing.assert_array_equal(A.indices, before)
    with pytest.raises(dg.DualgpuError, match="sparse argument 0"):
        dg.hvp(loss)(A, x, B)
    V = A.copy()
    V.data = cp.ones(A.nnz)
    hv = dg.hvp(loss)(A, x, V)
    assert not cp.shares_memory(hv.indices, A.indices)

