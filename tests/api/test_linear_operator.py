"""HessianOperator is a SciPy LinearOperator: the algebra users write (damping, scaling,
transposes, products with other operators, blocks of vectors) works and every product is
counted."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, aslinearoperator, cg, eigsh, minres

import dualgpu as dg


def f(x):
    return np.sum(x ** 4) / 4 + np.sum(np.sin(x[:-1] * x[1:]))


X = np.linspace(-0.8, 0.9, 6)
H_DENSE = dg.hessian(f)(X)


def test_is_a_linear_operator():
    H = dg.HessianOperator(f, X)
    assert isinstance(H, LinearOperator) and isinstance(H, dg.HessianOperator)
    assert aslinearoperator(H) is H and H.op is H
    assert H.shape == (6, 6) and H.dtype == np.float64


@pytest.mark.parametrize("build, dense", [
    (lambda H, I: H + 0.5 * I, lambda: H_DENSE + 0.5 * np.eye(6)),
    (lambda H, I: 3.0 * H, lambda: 3.0 * H_DENSE),
    (lambda H, I: H * 2.0 - I, lambda: 2.0 * H_DENSE - np.eye(6)),
    (lambda H, I: H.T, lambda: H_DENSE.T),
    (lambda H, I: H.H, lambda: H_DENSE.T),
    (lambda H, I: H.adjoint(), lambda: H_DENSE.T),
    (lambda H, I: H @ H, lambda: H_DENSE @ H_DENSE),
    (lambda H, I: -H, lambda: -H_DENSE),
], ids=["damped", "scaled", "scaled-minus-I", "T", "H", "adjoint", "H@H", "neg"])
def test_algebra_matches_the_dense_hessian(build, dense):
    H = dg.HessianOperator(f, X)
    op = build(H, aslinearoperator(np.eye(6)))
    v = np.arange(6.0) - 2.5
    np.testing.assert_allclose(op @ v, dense() @ v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(op.matvec(v), dense() @ v, rtol=1e-12, atol=1e-12)
    V = np.random.default_rng(0).standard_normal((6, 3))
    np.testing.assert_allclose(op @ V, dense() @ V, rtol=1e-12, atol=1e-12)


def test_products_through_sums_are_counted():
    H = dg.HessianOperator(f, X)
    damped = H + 0.1 * aslinearoperator(np.eye(6))
    damped @ np.ones(6)
    assert H.nprod == 1
    damped @ np.ones((6, 4))
    assert H.nprod == 5


def test_block_of_vectors_is_one_program():
    H = dg.HessianOperator(f, X)
    V = np.random.default_rng(1).standard_normal((6, 5))
    np.testing.assert_allclose(H @ V, H_DENSE @ V, rtol=1e-12)
    assert H.nprod == 5
    # one vmapped program for the columns, and the single-vector HVP was never run
    assert H._hvp_columns is not None and not H._hvp._programs


def test_solvers_on_the_damped_operator():
    H = dg.HessianOperator(f, X)
    damped = H + 2.0 * aslinearoperator(np.eye(6))
    b = np.ones(6)
    x, info = minres(damped, b, rtol=1e-12)
    assert info == 0
    np.testing.assert_allclose(x, np.linalg.solve(H_DENSE + 2 * np.eye(6), b), rtol=1e-8)
    top = eigsh(H, k=1, which="LA", return_eigenvectors=False)[0]
    assert np.isclose(top, np.linalg.eigvalsh(H_DENSE)[-1])
    y, info = cg(H + 5.0 * aslinearoperator(np.eye(6)), b, rtol=1e-12)
    assert info == 0


def test_matmul_with_a_number_is_refused_clearly():
    H = dg.HessianOperator(f, X)
    with pytest.raises(dg.DualgpuError, match="scale the operator"):
        H @ 2.0
    np.testing.assert_allclose((H * 2.0) @ np.ones(6), 2 * H_DENSE @ np.ones(6))


def test_float32_point_keeps_its_dtype():
    H = dg.HessianOperator(f, X.astype(np.float32))
    assert H.dtype == np.float32 and (H @ np.ones(6)).dtype == np.float32
    assert (H + aslinearoperator(np.eye(6, dtype=np.float32))).dtype == np.float32


# ------------------------------------------------------------------ SciPy algebra newcomers type
def cubic(x):
    return x[0] ** 2 * x[1] + x[1] * x[2] ** 3


def cubic_hessian(x):  # closed form
    return np.array([[2 * x[1], 2 * x[0], 0.0],
                     [2 * x[0], 0.0, 3 * x[2] ** 2],
                     [0.0, 3 * x[2] ** 2, 6 * x[1] * x[2]]])


P = np.array([0.7, -1.3, 0.4])


def test_toarray_is_the_dense_hessian():
    H = dg.HessianOperator(cubic, P)
    np.testing.assert_allclose(H.toarray(), cubic_hessian(P), rtol=1e-12, atol=1e-12)
    assert H.nprod == 3


@pytest.mark.parametrize("combine, dense", [
    (lambda H: H + 0.1 * np.eye(3), lambda A: A + 0.1 * np.eye(3)),
    (lambda H: 0.1 * np.eye(3) + H, lambda A: A + 0.1 * np.eye(3)),
    (lambda H: H + 0.1 * sp.eye(3), lambda A: A + 0.1 * np.eye(3)),
    (lambda H: 0.1 * sp.eye_array(3) + H, lambda A: A + 0.1 * np.eye(3)),
    (lambda H: H - 2.0 * np.eye(3), lambda A: A - 2.0 * np.eye(3)),
    (lambda H: np.eye(3) - H, lambda A: np.eye(3) - A),
    (lambda H: sp.eye(3, format="csr") - H, lambda A: np.eye(3) - A),
])
def test_plus_and_minus_a_matrix(combine, dense):
    H = dg.HessianOperator(cubic, P)
    op = combine(H)
    assert isinstance(op, LinearOperator) and op.shape == (3, 3)
    v = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(op @ v, dense(cubic_hessian(P)) @ v, rtol=1e-12)
    b = np.ones(3)
    shifted = H + 20.0 * sp.eye(3)  # positive definite: cg converges
    sol, info = cg(shifted, b, rtol=1e-12)
    assert info == 0
    np.testing.assert_allclose((cubic_hessian(P) + 20.0 * np.eye(3)) @ sol, b, rtol=1e-8)


def test_plus_a_number_or_a_wrong_matrix_is_refused_with_the_fix():
    H = dg.HessianOperator(cubic, P)
    with pytest.raises(dg.DualgpuError, match=r"lam \* scipy.sparse.eye\(3\)"):
        H + 0.1
    with pytest.raises(dg.ShapeMismatchError, match=r"\(2, 2\).*3x3"):
        H + np.eye(2)
