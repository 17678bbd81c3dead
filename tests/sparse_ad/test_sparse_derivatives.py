"""dg.sparse_jacobian / dg.sparse_hessian and the pattern detectors: values equal closed
forms and central differences on the problems they are for (chained Rosenbrock, a 2-D
nonlinear Poisson energy, a Brusselator residual), the colorings are the known ones, the
pattern and coloring are built once per signature, and bad input is a DualgpuError."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
import scipy.sparse.linalg

import dualgpu as dg
from dualgpu.api import sparse_derivatives


# ------------------------------------------------------------------ problems
def rosenbrock(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_hessian(x):
    """The closed form: tridiagonal."""
    n = len(x)
    diag = np.zeros(n)
    diag[:-1] += 1200 * x[:-1] ** 2 - 400 * x[1:] + 2
    diag[1:] += 200
    off = -400 * x[:-1]
    return sp.diags([off, diag, off], [-1, 0, 1]).toarray()


def poisson_energy(u, side):
    """sum of squared differences on a side x side grid plus sum(u^4)."""
    grid = u.reshape(side, side)
    return (np.sum((grid[1:] - grid[:-1]) ** 2) + np.sum((grid[:, 1:] - grid[:, :-1]) ** 2)
            + np.sum(grid ** 4))


def poisson_hessian(u, side):
    """2 * (graph Laplacian of the grid) + diag(12 u^2)."""
    path = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(side, side)).toarray()
    path[0, 0] = path[-1, -1] = 1
    eye = np.eye(side)
    return 2 * (np.kron(path, eye) + np.kron(eye, path)) + np.diag(12 * u ** 2)


def brusselator(x, x_old, dt=0.01, a=1.0, b=3.0, alpha=0.02):
    """The residual of one implicit Euler step of the 1-D Brusselator (zero boundary)."""
    n = len(x) // 2
    u, v = x[:n], x[n:]
    lap = lambda w: np.pad(w, 1)[:-2] - 2 * w + np.pad(w, 1)[2:]
    fu = a + u ** 2 * v - (b + 1) * u + alpha * n ** 2 * lap(u)
    fv = b * u - u ** 2 * v + alpha * n ** 2 * lap(v)
    return x - x_old - dt * np.concatenate([fu, fv])


def central_jacobian(f, x, eps=1e-6):
    cols = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(len(x))]
    return np.stack(cols, axis=1)


# ------------------------------------------------------------------ values
def test_rosenbrock_hessian_equals_the_closed_form_with_three_colors():
    x = np.random.default_rng(0).uniform(-1, 1, 30)
    hess = dg.sparse_hessian(rosenbrock)
    h = hess(x)
    assert sp.issparse(h) and h.format == "csr" and h.dtype == np.float64
    np.testing.assert_allclose(h.toarray(), rosenbrock_hessian(x), rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(h.toarray(), dg.hessian(rosenbrock)(x), rtol=1e-12, atol=1e-10)
    assert hess.coloring(x).max() + 1 == 3


def test_poisson_hessian_equals_the_closed_form_with_five_colors():
    side = 9
    u = np.random.default_rng(1).standard_normal(side * side)
    hess = dg.sparse_hessian(poisson_energy)
    np.testing.assert_allclose(hess(u, side).toarray(), poisson_hessian(u, side), rtol=1e-12,
                               atol=1e-10)
    assert hess.coloring(u, side).max() + 1 == 5
    pattern = dg.hessian_sparsity(poisson_energy)(u, side)
    np.testing.assert_array_equal(pattern.toarray(), poisson_hessian(np.ones_like(u), side) != 0)


@pytest.mark.parametrize("mode", ["fwd", "rev", "auto"])
def test_brusselator_jacobian_equals_central_differences(mode):
    rng = np.random.default_rng(2)
    x_old = rng.uniform(0.5, 1.5, 40)
    x = x_old + 0.01 * rng.standard_normal(40)
    jac = dg.sparse_jacobian(brusselator, mode=mode)
    j = jac(x, x_old)
    want = central_jacobian(lambda y: brusselator(y, x_old), x)
    np.testing.assert_allclose(j.toarray(), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(j.toarray(), dg.jacobian(brusselator)(x, x_old), rtol=1e-12,
                               atol=1e-12)
    colors = jac.coloring(x, x_old)
    assert len(colors) == 40 and colors.max() + 1 <= 4


def test_pattern_is_exact_on_the_brusselator():
    rng = np.random.default_rng(3)
    x_old = rng.uniform(0.5, 1.5, 20)
    pattern = dg.jacobian_sparsity(brusselator)(x_old, x_old)
    dense = central_jacobian(lambda y: brusselator(y, x_old), x_old + 0.1)
    np.testing.assert_array_equal(pattern.toarray(), np.abs(dense) > 1e-9)


def test_argnums_other_than_zero_and_a_float32_argument():
    f = lambda c, x: c * np.sum(np.sin(x[1:] * x[:-1]))
    x = np.linspace(0.1, 1.0, 12, dtype=np.float32)
    h = dg.sparse_hessian(f, argnums=1)(2.0, x)
    assert h.dtype == np.float32
    np.testing.assert_allclose(h.toarray(), dg.hessian(f, argnums=1)(2.0, x), rtol=1e-5,
                               atol=1e-5)


def test_a_matrix_argument_is_flattened_in_c_order():
    f = lambda w: np.sum(w[:, 1:] * w[:, :-1], axis=1) ** 2
    w = np.random.default_rng(4).standard_normal((3, 4))
    j = dg.sparse_jacobian(f)(w)
    assert j.shape == (3, 12)
    np.testing.assert_allclose(j.toarray(), central_jacobian(lambda v: f(v.reshape(3, 4)),
                                                             w.ravel()), rtol=1e-6, atol=1e-6)


def test_where_and_comparisons_take_both_branches():
    f = lambda x: np.where(x[:-1] > 0, x[1:] ** 2, np.exp(x[:-1]))
    pattern = dg.jacobian_sparsity(f)(np.ones(4))   # at x > 0 only x[1:] is read
    np.testing.assert_array_equal(pattern.toarray(), np.eye(3, 4, dtype=bool)
                                  | np.eye(3, 4, 1, dtype=bool))


def test_index_arrays_known_and_computed():
    idx = np.array([2, 0, 2])
    f = lambda x: x[idx] * x[0]
    np.testing.assert_array_equal(
        dg.jacobian_sparsity(f)(np.ones(4)).toarray().astype(int),
        [[1, 0, 1, 0], [1, 0, 0, 0], [1, 0, 1, 0]])
    g = lambda x: np.take_along_axis(x, np.argsort(x), axis=0)[:1]   # any entry may be read
    assert dg.jacobian_sparsity(g)(np.ones(3)).toarray().all()


def test_products_with_constant_matrices_follow_their_zeros():
    a = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 2.0]])
    j = dg.jacobian_sparsity(lambda x: a @ np.exp(x))(np.ones(3))
    np.testing.assert_array_equal(j.toarray(), a != 0)
    h = dg.hessian_sparsity(lambda x: x[:2] @ x[1:])(np.ones(3))   # x0 x1 + x1 x2
    np.testing.assert_array_equal(h.toarray().astype(int), [[0, 1, 0], [1, 0, 1], [0, 1, 0]])


def test_a_batch_of_decompositions_is_one_dense_block_per_matrix():
    a = np.random.default_rng(6).uniform(-1, 1, (4, 3, 3)) + 3 * np.eye(3)
    block = np.kron(np.eye(4), np.ones((9, 9))) != 0
    np.testing.assert_array_equal(dg.jacobian_sparsity(np.linalg.inv)(a).toarray(), block)
    det_sum = lambda a: np.sum(np.linalg.det(a))
    np.testing.assert_array_equal(dg.hessian_sparsity(det_sum)(a).toarray(), block)
    dense = dg.hessian(det_sum)(a).reshape(36, 36)
    assert not np.any((dense != 0) & ~block)
    np.testing.assert_allclose(dg.sparse_hessian(det_sum)(a).toarray(), dense, rtol=1e-12,
                               atol=1e-12)


# ------------------------------------------------------------------ reuse and use
def test_pattern_and_coloring_are_built_once_per_signature(monkeypatch):
    calls = []
    detect = sparse_derivatives.hessian_pattern
    monkeypatch.setattr(sparse_derivatives, "hessian_pattern",
                        lambda *a: calls.append(1) or detect(*a))
    hess = dg.sparse_hessian(rosenbrock)
    x = np.linspace(-1, 1, 10)
    first = hess(x).toarray()
    again = hess(2 * x).toarray()
    assert len(calls) == 1
    np.testing.assert_allclose(again, rosenbrock_hessian(2 * x), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(first, rosenbrock_hessian(x), rtol=1e-12, atol=1e-9)
    hess(np.ones(12))
    assert len(calls) == 2


def test_a_static_int_argument_is_part_of_the_signature():
    f = lambda x, k: np.sum(x[:k] ** 2 * x[1:k + 1])   # k is static: it shapes the pattern
    x = np.arange(1.0, 7.0)
    hess = dg.sparse_hessian(f)
    for k in (2, 4, 2):
        h = hess(x, k).toarray()
        want = np.zeros((6, 6))   # d2/dx_i dx_j of sum_i x_i^2 x_{i+1}, closed form
        for i in range(k):
            want[i, i] += 2 * x[i + 1]
            want[i, i + 1] += 2 * x[i]
            want[i + 1, i] += 2 * x[i]
        np.testing.assert_allclose(h, want, rtol=1e-12)


def test_values_read_only_by_comparisons_add_no_interaction():
    f = lambda x: np.sum(np.where(x ** 2 > 1, x, 2 * x))   # linear in x, branch by branch
    assert dg.hessian_sparsity(f)(np.ones(3)).nnz == 0
    g = lambda x: np.sum(np.floor(x * x) * x)
    assert dg.hessian_sparsity(g)(np.ones(3)).nnz == 0


def test_results_own_their_arrays():
    hess = dg.sparse_hessian(rosenbrock)
    x = np.linspace(-1, 1, 10)
    first, second = hess(x), hess(x)
    for a in (first.data, first.indices, first.indptr):
        for b in (second.data, second.indices, second.indptr):
            assert not np.shares_memory(a, b)
    second.indices[:] = 0   # editing one result leaves the next one whole
    np.testing.assert_allclose(hess(x).toarray(), rosenbrock_hessian(x), rtol=1e-12, atol=1e-9)


def test_a_given_pattern_is_used_and_checked():
    x = np.linspace(-1, 1, 8)
    full = sp.csr_matrix(np.ones((8, 8), dtype=bool))
    h = dg.sparse_hessian(rosenbrock, pattern=full, check_pattern=True)
    np.testing.assert_allclose(h(x).toarray(), rosenbrock_hessian(x), rtol=1e-12, atol=1e-9)
    assert h.coloring(x).max() + 1 == 8
    diagonal = sp.identity(8, format="csr", dtype=bool)
    with pytest.raises(dg.DualgpuError, match="pattern= misses entry .* not a superset"):
        dg.sparse_hessian(rosenbrock, pattern=diagonal, check_pattern=True)(x)
    with pytest.raises(dg.DualgpuError, match=r"pattern= has shape \(3, 3\)"):
        dg.sparse_hessian(rosenbrock, pattern=np.eye(3))(x)
    with pytest.raises(dg.DualgpuError, match=r"sparse_hessian: pattern= must be a matrix"):
        dg.sparse_hessian(rosenbrock, pattern="tridiagonal")
    with pytest.raises(dg.DualgpuError, match=r"sparse_jacobian: pattern= must be a matrix"):
        dg.sparse_jacobian(np.sin, pattern=np.ones((2, 2, 2)))
    with pytest.raises(dg.DualgpuError, match="check_pattern must be True or False"):
        dg.sparse_hessian(rosenbrock, pattern=full, check_pattern="yes")


def test_trust_constr_with_the_sparse_hessian():
    n = 10
    hess = dg.sparse_hessian(rosenbrock)
    res = scipy.optimize.minimize(rosenbrock, np.full(n, -0.5), method="trust-constr",
                                  jac=dg.grad(rosenbrock), hess=hess,
                                  options={"gtol": 1e-10, "maxiter": 500})
    np.testing.assert_allclose(res.x, np.ones(n), atol=1e-5)


def test_a_newton_step_with_spsolve_solves_the_brusselator_step():
    rng = np.random.default_rng(5)
    x_old = rng.uniform(0.5, 1.5, 60)
    jac = dg.sparse_jacobian(brusselator)
    x = x_old.copy()
    for _ in range(4):
        x = x - scipy.sparse.linalg.spsolve(jac(x, x_old).tocsc(), brusselator(x, x_old))
    assert np.abs(brusselator(x, x_old)).max() < 1e-12


# ------------------------------------------------------------------ bad input
def test_bad_input_is_a_clear_error():
    x = np.ones(4)
    with pytest.raises(dg.NonScalarOutputError, match="sparse_hessian: .* must return a scalar"):
        dg.sparse_hessian(lambda x: x ** 2)(x)
    with pytest.raises(dg.NonScalarOutputError, match="hessian_sparsity"):
        dg.hessian_sparsity(lambda x: x ** 2)(x)
    with pytest.raises(dg.IntegerInputError, match="argument 0 has dtype int64"):
        dg.sparse_jacobian(lambda x: x * 2)(np.arange(4))
    with pytest.raises(dg.ArgumentTypeError, match="complex128.*real floating-point"):
        dg.sparse_hessian(lambda x: np.sum(np.abs(x) ** 2))(np.ones(3, dtype=complex))
    with pytest.raises(dg.InvalidArgumentError, match="argnums must be an int or a tuple"):
        dg.sparse_jacobian(lambda x, y: x * y, argnums="x")(x, x)
    with pytest.raises(dg.InvalidArgumentError, match="argnums=2 but the function was called"):
        dg.sparse_jacobian(lambda x, y: x * y, argnums=(0, 2))(x, x)
    with pytest.raises(dg.InvalidArgumentError, match=r"argnums=\(\) differentiates no"):
        dg.sparse_hessian(lambda x: np.sum(x), argnums=())
    with pytest.raises(dg.IntegerInputError, match=r"argument 0 \(leaf 1\) has dtype int64"):
        dg.sparse_jacobian(lambda p: p[0] * p[1])((x, np.arange(4)))
    with pytest.raises(dg.InvalidArgumentError, match="mode must be one of"):
        dg.sparse_jacobian(lambda x: x, mode="forward")
    with pytest.raises(dg.ArgumentTypeError, match="must return one array"):
        dg.sparse_jacobian(lambda x: (x, x))(x)


def test_a_pattern_too_dense_for_a_sparse_matrix_is_refused_naming_the_op():
    with pytest.raises(dg.DualgpuError, match="cumsum .* too dense for a sparse matrix"):
        dg.jacobian_sparsity(np.cumsum)(np.ones(20_000))
    with pytest.raises(dg.DualgpuError, match="reduce_prod .* second-order interactions"):
        dg.hessian_sparsity(np.prod)(np.ones(10_000))


def test_an_op_without_a_sparsity_rule_is_named():
    opaque = dg.defprim("opaque_sparsity_test", impl=lambda xp, x: x[::-1] * 1.0,
                        abstract_eval=dg.core.primitives.same_as_first,
                        jvp=lambda p, t: (opaque.bind(p[0]), opaque.bind(t[0])))
    try:
        f = lambda x: opaque.bind(x) * 2
        with pytest.raises(dg.UnsupportedOpError,
                           match="opaque_sparsity_test .* no sparsity rule"):
            dg.sparse_jacobian(f)(np.ones(3))
        full = np.ones((3, 3), dtype=bool)   # a given pattern needs no rule
        np.testing.assert_allclose(dg.sparse_jacobian(f, pattern=full, mode="fwd")(
            np.ones(3)).toarray(), 2 * np.eye(3)[::-1])
    finally:
        dg.REGISTRY.pop("opaque_sparsity_test")
