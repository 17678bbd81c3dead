"""``scipy.sparse.linalg.spsolve`` in traced functions (the ``spsolve`` op): values as SciPy's,
the routes by which a traced function reaches it (the module's attribute, imported by name,
the matrix a traced argument), batching, patterns that hold every nonzero of the dense
derivative (dense only within A's connected blocks), sparse derivatives equal to the dense
ones, and the refusals. The derivative rules themselves are the registry's row
(tests/ops/test_registry.py)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg
from scipy.sparse.linalg import spsolve

import dualgpu as dg
from dualgpu.errors import DualgpuError
from dualgpu.frontend.scipy.sparse import Pattern
from dualgpu.ops.sparse import spsolve as spsolve_op


def system(n=6, seed=0, fmt="csr", blocks=1, density=0.3):
    """A well-conditioned sparse matrix of ``blocks`` diagonal blocks, and a right-hand side."""
    parts = [sp.random(n, n, density=density, random_state=seed + i) + 3 * sp.eye(n)
             for i in range(blocks)]
    a = sp.block_diag(parts).asformat(fmt)
    return a, np.random.default_rng(seed).standard_normal(a.shape[0])


def fd_grad(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])


@pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning")  # SciPy's, COO
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_values_are_scipys_for_vectors_matrices_and_one_column(fmt):
    a, b = system(fmt=fmt)
    solve = dg.jit(lambda b: scipy.sparse.linalg.spsolve(a, b))
    np.testing.assert_allclose(solve(b), spsolve(a, b), rtol=1e-12)
    bs = np.stack([b, 2 * b, -b], axis=1)
    np.testing.assert_allclose(solve(bs), spsolve(a, bs), rtol=1e-12)
    assert solve(b[:, None]).shape == spsolve(a, b[:, None]).shape == (6,)


def test_gradients_by_every_route_equal_finite_differences():
    a, b = system()
    by_attribute = lambda b: np.sum(np.tanh(scipy.sparse.linalg.spsolve(a, b)) ** 2)  # noqa: E731
    by_name = lambda b: np.sum(np.tanh(spsolve(a, b)) ** 2)  # noqa: E731
    for f in (by_attribute, by_name):
        np.testing.assert_allclose(dg.grad(f)(b), fd_grad(f, b), rtol=1e-6, atol=1e-9)
    # the matrix an argument (its values traced), b a constant: a sparse gradient
    of_a = lambda A: np.sum(np.sin(spsolve(A, b)))  # noqa: E731
    g = dg.grad(of_a)(a)
    assert type(g) is type(a) and g.nnz == a.nnz

    def of_values(d):
        return of_a(sp.csr_matrix((d, a.indices, a.indptr), shape=a.shape))

    np.testing.assert_allclose(g.data, fd_grad(of_values, a.data), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("width", [(), (2,)])
def test_vmap_over_right_hand_sides_and_over_matrices(width):
    a, _ = system(n=4, fmt="coo")
    p = Pattern.of(a)
    rng = np.random.default_rng(1)
    bs = rng.standard_normal((3, 4) + width)
    ds = a.data + 0.1 * rng.standard_normal((3, a.nnz))

    def solve(d, b):
        return spsolve_op(d, b, p.ind, p.ptr, fmt="coo", shape=a.shape, transpose=True)

    def loop(d, b):
        return sp.coo_matrix((d, (a.row, a.col)), shape=a.shape).T.tocsc()

    got = dg.vmap(lambda b: solve(a.data, b))(bs)
    np.testing.assert_allclose(got, [spsolve(loop(a.data, None), b) for b in bs], rtol=1e-12)
    got = dg.vmap(solve)(ds, bs)
    np.testing.assert_allclose(got, [spsolve(loop(d, None), b) for d, b in zip(ds, bs)],
                               rtol=1e-12)
    got = dg.vmap(solve, in_axes=(0, None))(ds, bs[0])
    np.testing.assert_allclose(got, [spsolve(loop(d, None), bs[0]) for d in ds], rtol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_patterns_hold_every_nonzero_and_are_dense_only_within_blocks(seed):
    blocks = np.kron(np.eye(3), np.ones((3, 3))).astype(bool)
    # the last seed: dense blocks, so that the pattern in b is exactly the three blocks
    a, b = system(n=3, seed=seed, blocks=3, fmt="csc", density=1.0 if seed == 3 else 0.3)
    p = Pattern.of(a)

    def f(d, b):
        x = spsolve_op(d, b ** 2, p.ind, p.ptr, fmt=p.fmt, shape=p.shape, transpose=False)
        return np.sin(x)

    for k in (0, 1):
        pattern = dg.jacobian_sparsity(f, argnums=k)(a.data, b).toarray()
        dense = dg.jacobian(f, argnums=k)(a.data, b)
        assert not (np.abs(dense) > 0)[~pattern].any()
    in_b = dg.jacobian_sparsity(f, argnums=1)(a.data, b).toarray()
    assert not in_b[~blocks].any()   # x's entries of one block read only that block's b
    if seed == 3:
        np.testing.assert_array_equal(in_b, blocks)
    # the Hessian in b: x is linear in b, so only b ** 2 and sin(x) couple, within blocks
    h_pattern = dg.hessian_sparsity(lambda b: np.sum(f(a.data, b)))(b).toarray()
    h_dense = dg.hessian(lambda b: np.sum(f(a.data, b)))(b)
    assert not (np.abs(h_dense) > 0)[~h_pattern].any() and not h_pattern[~blocks].any()
    # in A's values: x itself is not linear in them (a sum of x adds no coupling of its own)
    def total(d):
        return np.sum(spsolve_op(d, b, p.ind, p.ptr, fmt=p.fmt, shape=p.shape, transpose=True))

    h_pattern = dg.hessian_sparsity(total)(a.data).toarray()
    assert not (np.abs(dg.hessian(total)(a.data)) > 0)[~h_pattern].any()


def test_sparse_jacobian_and_hessian_equal_the_dense_ones():
    a, b = system(n=4, blocks=3)

    def residual(b):
        return np.tanh(spsolve(a, b ** 3)) + b

    np.testing.assert_allclose(dg.sparse_jacobian(residual)(b).toarray(),
                               dg.jacobian(residual)(b), rtol=1e-10, atol=1e-12)
    loss = lambda b: np.sum(residual(b) ** 2)  # noqa: E731
    np.testing.assert_allclose(dg.sparse_hessian(loss)(b).toarray(), dg.hessian(loss)(b),
                               rtol=1e-9, atol=1e-12)


def test_bad_arguments_are_named():
    a, b = system()
    f = lambda A, b: spsolve(A, b)  # noqa: E731
    with pytest.raises(DualgpuError, match="A must be square"):
        dg.jit(lambda b: spsolve(sp.random(6, 5, density=0.5, format="csr"), b[:6]))(b)
    with pytest.raises(DualgpuError, match=r"right-hand side b must have shape \(6,\)"):
        dg.jit(lambda b: spsolve(a, b))(np.ones(5))
    with pytest.raises(DualgpuError, match="A must be a sparse matrix"):
        dg.jit(lambda b: spsolve(a.toarray(), b))(b)
    singular = a.tolil()
    singular[2, :] = 0
    singular = singular.tocsr()
    singular.eliminate_zeros()
    with pytest.raises(DualgpuError, match="matrix A is singular"):
        dg.jit(f)(singular, b)


def test_a_sparse_matrix_read_by_traced_code_is_still_sparse_to_scipy():
    """Inside the trace a closed-over matrix is a SparseValue: scipy.sparse.issparse said
    False (SciPy's own function, which does not know it), and a library function given only
    the matrix and constants ran SciPy's on it (np.dot(A, c): an object array)."""
    a, b = system()
    np.testing.assert_array_equal(dg.jit(lambda x: x * sp.issparse(a))(np.ones(2)), [1, 1])
    np.testing.assert_allclose(dg.jit(lambda x: x + np.dot(a, b))(np.zeros(6)), a @ b)
    np.testing.assert_allclose(dg.jit(lambda x: x + spsolve(a, b))(np.zeros(6)), spsolve(a, b))


def test_the_gradient_program_is_two_sparse_solves():
    """The generated program (the CuPy one has the same text, ``ops.spsolve`` running cupyx's
    solve there): the solve, then the transposed solve of the VJP; nothing densified."""
    a, b = system(n=4)
    text = dg.source(dg.grad(lambda b: np.sum(spsolve(a, b) ** 2)), b)
    assert text.count("ops.spsolve(") == 2
    assert "transpose=False" in text and "transpose=True" in text
    assert "float64[16]" not in text   # no dense 4 x 4 matrix among the constants


@pytest.mark.parametrize("transpose", [False, True])
def test_the_pattern_follows_blocks_that_pair_other_rows_and_columns(transpose):
    """A's rows 0, 1 meet its columns 2, 3, rows 2, 3 columns 4, 5, rows 4, 5 columns 0, 1
    (a cycle of blocks): x's entries 2, 3 read b's 0, 1 (x is indexed by A's columns, b by
    its rows), and the other way round for A.T. Joining row i with column i would make the
    pattern dense; mixing up rows and columns would give the other direction's."""
    cycle = np.roll(np.eye(3), 1, axis=1)           # block i of rows -> block i + 1 of columns
    a = sp.csr_matrix(np.kron(cycle, np.array([[2.0, 1.0], [1.0, 3.0]])))
    p = Pattern.of(a)

    def solve(b):
        return spsolve_op(a.data, b, p.ind, p.ptr, fmt="csr", shape=(6, 6), transpose=transpose)

    b = np.arange(1.0, 7.0)
    dense = a.T.toarray() if transpose else a.toarray()
    np.testing.assert_allclose(solve(b), np.linalg.solve(dense, b))
    pattern = dg.jacobian_sparsity(solve)(b).toarray()
    np.testing.assert_array_equal(pattern, np.kron(cycle if transpose else cycle.T,
                                                   np.ones((2, 2))).astype(bool))
    assert not (np.abs(dg.jacobian(solve)(b)) > 0)[~pattern].any()


def test_a_program_factors_its_matrix_once_and_again_when_it_changes(monkeypatch):
    """The value's solve and the gradient's transposed one share one SuperLU factorization;
    new values (also written into the same array) are factored again, never a stale one."""
    factored = []
    splu = scipy.sparse.linalg.splu

    def counted(a, *args, **kwargs):
        factored.append(a.nnz)
        return splu(a, *args, **kwargs)

    monkeypatch.setattr(scipy.sparse.linalg, "splu", counted)
    a, b = system()
    f = dg.value_and_grad(lambda A, b: np.sum(np.sin(spsolve(A, b))), argnums=(0, 1))
    f(a, b)
    assert len(factored) == 1
    a.data *= 2.0                                   # in place: the same arrays, new values
    value, (g_a, g_b) = f(a, b)
    assert len(factored) == 2
    np.testing.assert_allclose(value, np.sum(np.sin(spsolve(a, b))), rtol=1e-12)
    np.testing.assert_allclose(g_b, spsolve(a.T.tocsc(), np.cos(spsolve(a, b))), rtol=1e-10)



def test_a_pattern_changed_in_place_with_equal_values_is_factored_again():
    """The factorization is reused only for the same entries: index arrays rewritten in
    place (the same objects) under unchanged values are another matrix."""
    a, b = system()
    solve = dg.jit(lambda A, b: spsolve(A, b))
    solve(a, b)
    row = int(np.argmax(np.diff(a.indptr) >= 2))    # a row with two entries: swap them
    start = a.indptr[row]
    a.indices[[start, start + 1]] = a.indices[[start + 1, start]]
    np.testing.assert_allclose(solve(a, b), spsolve(a, b), rtol=1e-10)

def _emulated_cupyx(monkeypatch):
    """The CuPy backend as _spsolve_impl sees it, on the host: cupyx's solve does not raise
    for a singular matrix but returns non-finite values, as SciPy's spsolve (with a warning)
    does."""
    import types
    import warnings

    from dualgpu.backends import cupy as cupy_backend

    def solve(a, b):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", scipy.sparse.linalg.MatrixRankWarning)
            return scipy.sparse.linalg.spsolve(a, b)

    xp = types.ModuleType("cupy")
    xp.__getattr__ = lambda name: getattr(np, name)
    fake = types.SimpleNamespace(on_device=True, runs_fused_kernels=False, xp=xp, sparse=sp,
                                 sparse_linalg=types.SimpleNamespace(spsolve=solve))
    monkeypatch.setattr(cupy_backend, "get_cupy_backend", lambda: fake)
    return xp


@pytest.mark.parametrize("transpose", [False, True])
def test_cupy_branch_refuses_a_singular_matrix(monkeypatch, transpose):
    """cupyx's solve returns NaN for a singular A: the CuPy branch names A as singular (as
    SuperLU's on the CPU does), for one and several right-hand sides; a non-finite b (or
    value of A) is not blamed on A."""
    xp = _emulated_cupyx(monkeypatch)
    a, b = system()
    singular = a.tolil()
    singular[:, 2] = 0
    singular[2, :] = 0
    singular = singular.tocsr()
    singular.eliminate_zeros()
    p = Pattern.of(singular)

    def run(data, rhs):
        return spsolve_op.impl(xp, data, rhs, p.ind, p.ptr, fmt="csr", shape=p.shape,
                               transpose=transpose)

    name = "A.T" if transpose else "A"
    for rhs in (b, np.stack([b, 2 * b], axis=1)):
        with pytest.raises(DualgpuError, match=f"the matrix {name} is singular"):
            run(singular.data, rhs)
    regular = Pattern.of(a)
    x = spsolve_op.impl(xp, a.data, b, regular.ind, regular.ptr, fmt="csr", shape=a.shape,
                        transpose=transpose)
    np.testing.assert_allclose(x, spsolve(a.T if transpose else a, b), rtol=1e-12)
    b_inf = b.copy()
    b_inf[0] = np.inf
    assert not np.isfinite(run(singular.data, b_inf)).all()  # NaN in, NaN out: not A's fault
    data_nan = singular.data.copy()
    data_nan[0] = np.nan
    assert not np.isfinite(run(data_nan, b)).all()
