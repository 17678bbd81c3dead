"""Sparse x dense products: the five expressions of the sparse scenario in every SciPy format,
gradients with respect to the dense operand and to the sparse values, HVPs through them, and
a product with a 200,000 x 200,000 matrix inside a small memory budget."""
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

import dualgpu as dg
from dualgpu.testing import check_grads

CLASSES = [sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.csc_array,
           sp.coo_array]
M, N, K = 6, 5, 3


def make(cls, m=M, n=N, seed=0):
    base = sp.random(m, n, density=0.4, format="coo", random_state=seed,
                     data_rvs=np.random.default_rng(seed).standard_normal)
    return cls(base)


def perturbed(A, i_or_vec, eps):
    B = A.copy()
    B.data = B.data + eps * i_or_vec
    return B


# Each expression takes (A, x) and returns a scalar; x's shape for an M x N matrix A.
EXPRESSIONS = {
    "sum(A @ x)": (lambda A, x: np.sum(A @ x), (N, K)),
    "sum(x @ A)": (lambda A, x: np.sum(x @ A), (K, M)),
    "sum(A @ x.T)": (lambda A, x: np.sum(A @ x.T), (K, N)),
    "sum((A @ x.T).T)": (lambda A, x: np.sum((A @ x.T).T), (K, N)),
    "sum(tanh(x @ A)**2)": (lambda A, x: np.sum(np.tanh(x @ A) ** 2), (K, M)),
}


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_expression_closed_over(cls, name):
    """A closed-over sparse matrix: value, gradient wrt x (an ordinary array), jvp, hvp."""
    expr, xshape = EXPRESSIONS[name]
    A = make(cls)
    Ad = A.toarray()
    x = np.random.default_rng(1).standard_normal(xshape)

    def f(x):
        return expr(A, x)

    g = dg.grad(f)(x)
    assert type(g) is np.ndarray and g.flags.writeable
    np.testing.assert_allclose(g, dg.grad(lambda x: expr(Ad, x))(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dg.jit(f)(x), expr(Ad, x), rtol=1e-12)
    check_grads(f, (x,), order=2)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_gradient_wrt_sparse_values(cls, name):
    """grad wrt a sparse argument is a matrix of the same class and pattern, equal to
    central differences of the values; hvp along a same-pattern direction too."""
    expr, xshape = EXPRESSIONS[name]
    A = make(cls)
    x = np.random.default_rng(2).standard_normal(xshape)
    gA, gx = dg.grad(expr, argnums=(0, 1))(A, x)
    assert type(gA) is type(A) and gA.format == A.format and gA.nnz == A.nnz
    if A.format == "coo":
        assert np.array_equal(gA.row, A.row) and np.array_equal(gA.col, A.col)
    else:
        assert np.array_equal(gA.indices, A.indices) and np.array_equal(gA.indptr, A.indptr)
    eps = 1e-6
    num = np.empty(A.nnz)
    for i in range(A.nnz):
        e = np.zeros(A.nnz)
        e[i] = 1
        num[i] = (expr(perturbed(A, e, eps), x) - expr(perturbed(A, e, -eps), x)) / (2 * eps)
    np.testing.assert_allclose(gA.data, num, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gx, dg.grad(expr, argnums=1)(A.toarray(), x), atol=1e-12)

    v = perturbed(A, np.random.default_rng(3).standard_normal(A.nnz) - A.data, 1.0)
    hv = dg.hvp(expr, argnums=0)(A, x, v)
    grad_a = dg.grad(expr, argnums=0)
    want = (grad_a(perturbed(A, v.data, 1e-5), x).data
            - grad_a(perturbed(A, v.data, -1e-5), x).data) / 2e-5
    assert type(hv) is type(A)
    np.testing.assert_allclose(hv.data, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_mixed_hvp_and_jvp_through_sparse(cls):
    """The HVP wrt x of a loss whose matrix is also an input, and jvp in both operands."""
    A = make(cls)
    x = np.random.default_rng(4).standard_normal((K, M))
    expr = EXPRESSIONS["sum(tanh(x @ A)**2)"][0]
    check_grads(lambda x: expr(A, x), (x,), order=2)
    dA = perturbed(A, np.random.default_rng(5).standard_normal(A.nnz) - A.data, 1.0)
    dx = np.random.default_rng(6).standard_normal(x.shape)
    _, tangent = dg.jvp(expr, (A, x), (dA, dx))
    eps = 1e-6
    want = (expr(perturbed(A, dA.data, eps), x + eps * dx)
            - expr(perturbed(A, dA.data, -eps), x - eps * dx)) / (2 * eps)
    np.testing.assert_allclose(tangent, want, rtol=1e-6)


def test_dot_multiply_transpose_and_attribute_access():
    A = make(sp.csr_matrix)
    Ad = A.toarray()

    class Layer:
        def __init__(self, A):
            self.A = A  # not a closure: reached through scipy's operator dispatch

        def loss(self, x):
            return np.sum(np.sin(self.A.dot(x)) ** 2)

    x = np.linspace(-1, 1, N)
    want = Ad.T @ (2 * np.sin(Ad @ x) * np.cos(Ad @ x))
    np.testing.assert_allclose(dg.grad(Layer(A).loss)(x), want, atol=1e-12)
    dense = np.random.default_rng(7).standard_normal((M, N))

    def f(w):
        return np.sum(A.multiply(w) @ np.ones(N)) + np.sum((A.T @ w[:, :1]) ** 2)

    def f_dense(w):
        return np.sum((Ad * w) @ np.ones(N)) + np.sum((Ad.T @ w[:, :1]) ** 2)

    np.testing.assert_allclose(dg.grad(f)(dense), dg.grad(f_dense)(dense), atol=1e-12)
    check_grads(f, (dense,), order=2)


def test_batched_dense_operand():
    A = make(sp.csc_array)
    x = np.random.default_rng(8).standard_normal((2, N, K))
    y = np.random.default_rng(9).standard_normal((2, 4, M))
    f = lambda x, y: np.sum(np.tanh(A @ x) ** 2) + np.sum(np.cos(y @ A))
    fd = lambda x, y: np.sum(np.tanh(A.toarray() @ x) ** 2) + np.sum(np.cos(y @ A.toarray()))
    gx, gy = dg.grad(f, argnums=(0, 1))(x, y)
    wx, wy = dg.grad(fd, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, wx, atol=1e-12)
    np.testing.assert_allclose(gy, wy, atol=1e-12)


def test_large_sparse_matrix_is_never_densified():
    """200,000 x 200,000 with 400,000 nonzeros (dense would be 320 GB)."""
    n, nnz = 200_000, 400_000
    rng = np.random.default_rng(0)
    A = sp.csr_matrix((rng.standard_normal(nnz), (rng.integers(0, n, nnz),
                                                  rng.integers(0, n, nnz))), shape=(n, n))
    x = rng.standard_normal(n)
    tracemalloc.start()
    try:
        g = dg.grad(lambda x: np.sum(np.tanh(x @ A) ** 2))(x)
        gA = dg.grad(lambda A, x: np.sum(np.tanh(A @ x) ** 2))(A, x)
        hv = dg.hvp(lambda x: np.sum(np.tanh(A @ x) ** 2))(x, x)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100e6, f"peak traced memory {peak / 1e6:.0f} MB"
    assert g.shape == hv.shape == (n,) and isinstance(gA, sp.csr_matrix) and gA.nnz == A.nnz
    want = A.T @ (2 * np.tanh(A @ x) * (1 - np.tanh(A @ x) ** 2))
    np.testing.assert_allclose(dg.grad(lambda x: np.sum(np.tanh(A @ x) ** 2))(x), want,
                               rtol=1e-10, atol=1e-12)


def test_graph_shows_a_sparse_product_not_a_dense_matmul():
    A = make(sp.csr_matrix)
    g = dg.trace(dg.grad(lambda x: np.sum(np.tanh(x @ A) ** 2)), np.ones((K, M)))
    names = g.primitive_counts()
    assert names.get("spmm", 0) >= 2 and "matmul" not in names


def test_unsupported_format_is_refused():
    A = sp.random(4, 4, density=0.5, format="dia", random_state=0)
    with pytest.raises(dg.UnsupportedSparseFormatError):
        dg.grad(lambda A, x: np.sum(A @ x))(A, np.ones(4))


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_cupyx_sparse_expressions(fmt):
    """The five expressions on cupyx matrices (the warp-per-row kernels): gradients wrt x and
    wrt the values (sparse, same class) and HVPs, against the dense CuPy program."""
    import cupy as cp
    import cupyx.scipy.sparse as csp

    A = getattr(csp, f"{fmt}_matrix")(make(sp.csr_matrix).asformat(fmt))
    Ad = A.toarray()
    for name, (expr, xshape) in EXPRESSIONS.items():
        x = cp.asarray(np.random.default_rng(0).standard_normal(xshape))
        g = dg.grad(lambda x, e=expr: e(A, x))(x)
        assert isinstance(g, cp.ndarray), name
        want = dg.grad(lambda x, e=expr: e(Ad, x))(x)
        np.testing.assert_allclose(g.get(), want.get(), rtol=1e-10, atol=1e-12)
        v = cp.ones_like(x)
        np.testing.assert_allclose(dg.hvp(lambda x, e=expr: e(A, x))(x, v).get(),
                                   dg.hvp(lambda x, e=expr: e(Ad, x))(x, v).get(),
                                   rtol=1e-10, atol=1e-12)
        gA = dg.grad(expr)(A, x)
        assert type(gA) is type(A) and gA.nnz == A.nnz


@pytest.mark.parametrize("cls", [sp.csr_matrix, sp.csc_array, sp.coo_matrix, sp.coo_array])
def test_a_matrix_made_from_traced_values_is_differentiated(cls):
    """``cls((data, indices, indptr))`` / ``cls((data, (row, col)))`` with traced ``data``:
    a sparse matrix of that pattern and class (SciPy's constructor raised a ValueError about
    1-D arrays); a dense traced matrix is refused by name."""
    a = cls(sp.random(4, 3, density=0.5, format="csr", random_state=2))
    x = np.linspace(0.5, 1.5, 3)
    if a.format == "coo":
        def make(d):
            return cls((d, (a.row, a.col)), shape=a.shape)
    else:
        def make(d):
            return cls((d, a.indices, a.indptr), shape=a.shape)

    def f(d):
        m = make(d)
        assert isinstance(m, cls) and m.format == a.format
        return np.sum(np.sin(m @ x)) + np.sum(np.asarray(m.sum(axis=0)) ** 2)

    d = a.data.copy()
    eps = 1e-6
    fd = [(f(d + eps * e) - f(d - eps * e)) / (2 * eps) for e in np.eye(len(d))]
    np.testing.assert_allclose(dg.grad(f)(d), fd, rtol=1e-6, atol=1e-9)
    with pytest.raises(dg.UnsupportedOpError, match="dense traced matrix has no pattern"):
        dg.jit(lambda m: cls(m))(a.toarray())


@pytest.mark.parametrize("cls", [sp.csr_matrix, sp.csr_array])
def test_division_by_a_dense_array_broadcasts_as_scipys(cls):
    # SciPy: A / x is A.multiply(1 / x); the stored values were divided by x in their
    # order (nnz == n: silently wrong; else a broadcast error)
    A = cls(np.array([[0, 2.0, 0], [0, 0, 3.0], [1.0, 0, 0]]))
    x = np.array([1.0, 2.0, 4.0])
    for f in (lambda x: (A / x).toarray(), lambda x: (A / x.reshape(3, 1)).toarray()):
        np.testing.assert_allclose(dg.jit(f)(x), f(x))
        check_grads(lambda x, f=f: np.sum(f(x) ** 2), (x,), order=1)


def test_sums_and_products_of_constant_matrices_are_scipys_in_traced_code():
    # (A + A.T) @ x and (A @ A) @ x of closed-over matrices raised a TypeError naming
    # dualgpu's class, and "sparse @ sparse is not supported on traced values"
    A = make(sp.csr_matrix, 5, 5)
    x = np.arange(1.0, 6.0)
    for f in (lambda x: (A + A.T) @ x, lambda x: (A - 2 * A) @ x, lambda x: (A @ A) @ x):
        np.testing.assert_allclose(dg.jit(f)(x), f(x))
    with pytest.raises(dg.DualgpuError, match="sparse matrix \\+"):
        dg.jit(lambda x: (A.multiply(x) + A) @ x)(x)
