"""A cached sparse derivative returns exactly what a freshly built one returns: the
pattern, the coloring, the index map and the compressed program come from one trace and
live in one entry of the program cache, under its key and its guards. Each call is checked
bitwise against a fresh ``dg.sparse_hessian(f)`` / ``dg.sparse_jacobian(f)`` (on a cleared
cache) and against the dense derivative. Also the keyword arguments, the dtypes of the
result and the calls on traced values (``dg.jit``)."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg


def same(a, b) -> bool:
    """Two CSR matrices stored alike: shape, dtype, indices, indptr and bitwise values."""
    a, b = a.tocsr(), b.tocsr()
    return (a.shape == b.shape and a.dtype == b.dtype
            and np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
            and a.data.tobytes() == b.data.tobytes())


def check(cached, make, args, kwargs, dense):
    """``cached(*args, **kwargs)`` equals a fresh build's result and the dense matrix."""
    got = cached(*args, **kwargs)
    dg.clear_cache()
    fresh = make()(*args, **kwargs)
    assert same(got, fresh), (got.toarray(), fresh.toarray())
    want = np.asarray(dense(*args, **kwargs)).reshape(got.shape)
    np.testing.assert_allclose(got.toarray(), want, rtol=1e-13, atol=1e-13)


def coupled(x, cfg):
    energy = np.sum(np.sin(x) ** 2)
    if cfg["couple"]:                       # the pattern depends on the dict's value
        energy = energy + np.sum(x[1:] * x[:-1])
    return energy


def test_a_dict_argument_changed_in_place():
    hess = dg.sparse_hessian(coupled)
    x = np.linspace(-1, 1, 6)
    cfg = {"couple": False}
    for value in (False, True, False, True):
        cfg["couple"] = value
        check(hess, lambda: dg.sparse_hessian(coupled), (x, cfg), {}, dg.hessian(coupled))


def shifted(x, shifts):
    return np.sum(x * np.roll(x, shifts[0]))


def test_a_list_argument_changed_in_place():
    hess = dg.sparse_hessian(shifted)
    x = np.linspace(-1, 1, 7)
    shifts = [1]
    for s in (1, 2, 1, 3):
        shifts[0] = s
        check(hess, lambda: dg.sparse_hessian(shifted), (x, shifts), {}, dg.hessian(shifted))


COUPLING = np.eye(5)


def through_matrix(x):
    return np.sum(x * (COUPLING @ x) ** 2)


def residual(x):
    return COUPLING @ np.sin(x)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_a_closed_over_matrix_changed_in_place_jacobian(mode, monkeypatch):
    matrix = np.eye(5)
    monkeypatch.setitem(globals(), "COUPLING", matrix)
    jac = dg.sparse_jacobian(residual, mode=mode)
    x = np.linspace(-1, 1, 5)
    for k in (1, 2, 0):
        matrix[...] = np.eye(5, k=k) + np.eye(5)   # in place: the same array object
        check(jac, lambda: dg.sparse_jacobian(residual, mode=mode), (x,), {},
              dg.jacobian(residual))


def test_a_closed_over_matrix_changed_in_place_hessian(monkeypatch):
    matrix = np.eye(5)
    monkeypatch.setitem(globals(), "COUPLING", matrix)
    hess = dg.sparse_hessian(through_matrix)
    x = np.linspace(-1, 1, 5)
    for k in (2, 0, 1):
        matrix[...] = np.eye(5, k=k)
        check(hess, lambda: dg.sparse_hessian(through_matrix), (x,), {},
              dg.hessian(through_matrix))


def test_a_closed_over_index_array_changed_in_place():
    order = np.arange(6)

    def gathered(x):
        return np.sum(x * x[order])

    hess = dg.sparse_hessian(gathered)
    x = np.linspace(-1, 1, 6)
    for perm in ([0, 1, 2, 3, 4, 5], [1, 0, 3, 2, 5, 4], [5, 4, 3, 2, 1, 0]):
        order[...] = perm
        check(hess, lambda: dg.sparse_hessian(gathered), (x,), {}, dg.hessian(gathered))


COUPLE = False


def global_coupled(x):
    return coupled(x, {"couple": COUPLE})


def test_a_reassigned_global(monkeypatch):
    hess = dg.sparse_hessian(global_coupled)
    x = np.linspace(-1, 1, 6)
    for value in (False, True, False):
        monkeypatch.setitem(globals(), "COUPLE", value)
        check(hess, lambda: dg.sparse_hessian(global_coupled), (x,), {},
              dg.hessian(global_coupled))


# ------------------------------------------------------------------ keyword arguments
def keyword_coupled(x, *, couple=False, scale=1.0):
    return scale * coupled(x, {"couple": couple})


def test_keyword_arguments_pass_through_and_key_the_pattern():
    hess = dg.sparse_hessian(keyword_coupled)
    x = np.linspace(-1, 1, 6)
    for kwargs in ({}, {"couple": True}, {"couple": True, "scale": 2.0}, {"couple": False}):
        check(hess, lambda: dg.sparse_hessian(keyword_coupled), (x,), kwargs,
              dg.hessian(keyword_coupled))
    jac = dg.sparse_jacobian(lambda x, *, k=1: x[k:] * x[:-k])
    assert jac(x, k=2).shape == (4, 6) and jac(x).shape == (5, 6)
    assert dg.hessian_sparsity(keyword_coupled)(x, couple=True).nnz == 6 + 2 * 5
    assert dg.jacobian_sparsity(lambda x, *, k=1: x[k:])(x, k=2).nnz == 4


# ------------------------------------------------------------------ dtypes
def widened(x):
    return np.sin(x.astype(np.float64)) * x[::-1]


@pytest.mark.parametrize("mode", ["fwd", "rev", "auto"])
def test_a_float32_argument_with_a_float64_output(mode):
    """No cotangent is the user's: the seeds take the output's dtype; the result has the
    argument's dtype in every mode (docs/api.md), as dg.jacobian's."""
    x = np.linspace(-1, 1, 5).astype(np.float32)
    jac = dg.sparse_jacobian(widened, mode=mode)(x)
    dense = dg.jacobian(widened)(x)
    assert jac.dtype == dense.dtype == np.float32
    np.testing.assert_allclose(jac.toarray(), dense, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_hessian_has_the_arguments_dtype(dtype):
    f = lambda x: np.sum(np.sin(x.astype(np.float64)) * x[::-1])  # noqa: E731
    x = np.linspace(-1, 1, 5).astype(dtype)
    hess = dg.sparse_hessian(f)(x)
    assert hess.dtype == dtype
    np.testing.assert_allclose(hess.toarray(), dg.hessian(f)(x), rtol=1e-6)


# ------------------------------------------------------------------ inside dg.jit
def rosenbrock(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def test_a_sparse_hessian_inside_jit_is_a_sparse_value():
    x = np.linspace(-1, 1, 6)
    v = np.cos(np.arange(6.0))
    hess = dg.sparse_hessian(rosenbrock)
    product = dg.jit(lambda x, v: hess(x) @ v)
    np.testing.assert_allclose(product(x, v), dg.hessian(rosenbrock)(x) @ v, rtol=1e-13)
    dense = dg.jit(lambda x: hess(x).toarray())
    np.testing.assert_allclose(dense(x), dg.hessian(rosenbrock)(x), rtol=1e-13)


def test_jit_of_a_sparse_hessian_is_refused_with_the_fix():
    with pytest.raises(dg.DualgpuError, match="outside dg.jit"):
        dg.jit(dg.sparse_hessian(rosenbrock))(np.ones(4))


def test_the_guarded_constants_are_the_ones_the_pattern_rules_read():
    from dualgpu.transforms.sparsity import detect_pattern
    order, shift, coupling = np.array([1, 0, 2]), np.ones(3), np.eye(3)

    def f(x):   # order selects, coupling's zeros shape the product; shift is only added
        return np.sum((x[order] + shift) * (coupling @ x))

    pattern, read = detect_pattern(dg.trace(f, np.ones(3)), [0], hessian=True)
    assert {id(a) for a, _ in read} == {id(order), id(coupling)}
    assert all("sparsity pattern of" in what for _, what in read)
