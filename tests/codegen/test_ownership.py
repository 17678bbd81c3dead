"""Ownership (issue 10, item 6): results never alias the arguments, the closed-over constants
or each other; sparse results own their index arrays; a sparse direction must have the
argument's pattern. CuPy versions: tests/gpu/test_ownership_gpu.py."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import dualgpu as dg
from dualgpu.runtime.executor import owned_outputs

X = np.arange(1.0, 4.0)
Y = np.arange(2.0, 5.0)


def _leaves(r):
    if isinstance(r, (tuple, list)):
        return [leaf for item in r for leaf in _leaves(item)]
    return [r]


def _assert_owned(result, *sources):
    leaves = [a for a in _leaves(result) if isinstance(a, np.ndarray)]
    for i, a in enumerate(leaves):
        for s in sources:
            assert not np.shares_memory(a, s), f"result {i} shares memory with an argument"
        for j in range(i):
            assert not np.shares_memory(a, leaves[j]), f"results {j} and {i} share memory"


def test_gradient_is_not_the_other_argument():
    x, y = X.copy(), Y.copy()
    gx = dg.grad(lambda x, y: np.sum(x * y))(x, y)
    assert gx is not y and np.array_equal(gx, y)
    _assert_owned(gx, x, y)
    gx[:] = 0
    assert np.array_equal(y, Y)
    gx, gy = dg.grad(lambda x, y: np.sum(x * y), argnums=(0, 1))(x, y)
    _assert_owned((gx, gy), x, y)


def test_identity_and_views_of_arguments_are_copies():
    x = X.copy()
    for fn in (lambda a: a, lambda a: a.reshape(3, 1), lambda a: a.T, lambda a: a[1:],
               lambda a: np.broadcast_to(a, (2, 3)), lambda a: (a, a), lambda a: (a, a[:2]),
               lambda a: dg.stop_gradient(a)):
        out = dg.jit(fn)(x)
        assert out is not x
        _assert_owned(out, x)
    out = dg.jit(lambda a: a)(x)
    out[:] = -1
    assert np.array_equal(x, X)


def test_repeated_outputs_are_distinct_objects():
    x = X.copy()
    a, b = dg.jit(lambda a: (a * 2, a * 2))(x)   # one graph variable, two results
    assert a is not b
    _assert_owned((a, b), x)
    a, b = dg.jit(lambda a: ((a * 2).reshape(3, 1), a * 2))(x)  # a view of a result
    _assert_owned((a, b), x)
    out, pullback = dg.vjp(lambda a: (a * 2, a * 2), x)
    _assert_owned(out, x)


def test_closed_over_constants_are_not_handed_out():
    W = np.ones(3)
    f = dg.jit(lambda a: W)
    out = f(X)
    assert out is not W and not np.shares_memory(out, W)
    out[:] = 5
    np.testing.assert_array_equal(f(X), np.ones(3))   # the cached program is unchanged
    assert np.array_equal(W, np.ones(3))


def test_every_transform_returns_owned_results():
    x, t = X.copy(), Y.copy()
    _assert_owned(dg.jvp(lambda a: a, (x,), (t,)), x, t)
    _assert_owned(dg.jvp(lambda a, b: a * b, (x, t), (t, x)), x, t)
    out, pb = dg.vjp(lambda a: a, x)
    _assert_owned((out, pb(t)), x, t)
    _assert_owned(dg.value_and_grad(lambda a, b: np.sum(a * b), argnums=(0, 1))(x, t), x, t)
    _assert_owned(dg.hvp(lambda a: np.sum(a ** 2) / 2)(x, t), x, t)
    _assert_owned(dg.grad_and_hvp(lambda a: np.sum(a ** 2) / 2)(x, t), x, t)
    _assert_owned(dg.hessp(lambda a: np.sum(a ** 2) / 2)(x, t), x, t)


def test_only_aliasing_outputs_are_copied():
    x = X.copy()
    fresh1, fresh2 = np.zeros(3), np.ones(3)
    outs = owned_outputs([fresh1, x, fresh2, fresh1, x[:2]], [x])
    assert outs[0] is fresh1 and outs[2] is fresh2
    assert outs[1] is not x and outs[3] is not fresh1 and outs[4].base is None
    assert all(np.array_equal(a, b) for a, b in zip(outs, [fresh1, x, fresh2, fresh1, x[:2]]))


# --------------------------------------------------------------------------- sparse
CLASSES = [sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.csc_array,
           sp.coo_array]


def _make(cls, seed=0):
    A = sp.random(6, 5, density=0.4, format="csr", random_state=seed)
    return cls(A)


def _index_arrays(A):
    return (A.row, A.col) if A.format == "coo" else (A.indices, A.indptr)


def _loss(A, x):
    return np.sum(np.tanh(A @ x) ** 2)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_sparse_results_own_their_index_arrays(cls):
    A = _make(cls)
    x = np.linspace(-1, 1, 5)
    before = [a.copy() for a in _index_arrays(A)] + [A.data.copy()]
    V = A.copy()
    V.data = np.ones(A.nnz)
    results = [dg.grad(_loss)(A, x), dg.hvp(_loss)(A, x, V),
               dg.grad_and_hvp(_loss)(A, x, V)[1], dg.jvp(_loss, (A, x), (V, x))[1]]
    for r in results[:3]:
        assert type(r) is type(A)
        for mine, theirs in zip(_index_arrays(r), _index_arrays(A)):
            assert not np.shares_memory(mine, theirs)
        assert not np.shares_memory(r.data, A.data)
    gA = results[0]
    gA.data[:2] = 0
    gA.eliminate_zeros()
    if gA.format != "coo":
        gA.sort_indices()
    for a, b in zip(list(_index_arrays(A)) + [A.data], before):
        np.testing.assert_array_equal(a, b)
    assert A.nnz == len(before[-1])


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_sparse_direction_with_another_pattern_is_refused(cls):
    A = _make(cls)
    B = _make(cls, seed=1)
    x = np.linspace(-1, 1, 5)
    assert A.nnz == B.nnz  # same format, shape and nnz: only the pattern differs
    with pytest.raises(dg.DualgpuError, match="sparse argument 0.*another sparsity pattern"):
        dg.hvp(_loss)(A, x, B)
    with pytest.raises(dg.DualgpuError, match="sparse argument 0"):
        dg.jvp(_loss, (A, x), (B, x))
    # the same entries in another order: the values would not line up either
    if A.format == "coo":
        perm = np.arange(A.nnz)[::-1]
        P = cls((A.data[perm], (A.row[perm], A.col[perm])), shape=A.shape)
        with pytest.raises(dg.DualgpuError, match="another sparsity pattern"):
            dg.hvp(_loss)(A, x, P)
    # the argument's pattern, in other arrays, and the plain vector of values are accepted
    V = A.copy()
    V.data = np.ones(A.nnz)
    hv = dg.hvp(_loss)(A, x, V)
    np.testing.assert_allclose(dg.hvp(_loss)(A, x, np.ones(A.nnz)).data, hv.data)
    with pytest.raises(dg.DualgpuError, match="sparse argument 0"):
        dg.hvp(_loss)(A, x, cls(_make(sp.csr_matrix, 2)[:, :4]))
