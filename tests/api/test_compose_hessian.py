"""dg.hessian and dg.hessp are transforms like the others (issue 23): jit, vmap, grad, jvp,
another hessian and dg.export of them work, with keyword arguments passed through to f;
HessianOperator products work on traced vectors and a HessianOperator built on a traced
point is a clear error naming dg.hessp / dg.hvp.

The reference is the closed form of f(x) = c * sum(x**3) + x0 * x1 * x2 (3 variables):
H_ii = 6 c x_i, H_ij = x_k ({i, j, k} = {0, 1, 2}); the third derivatives are d H_ii/dx_i = 6c
and d H_ij/dx_k = 1.
"""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

X = np.array([0.5, -1.25, 2.0])
P = np.array([1.0, -2.0, 0.5])
OTHER = {(0, 1): 2, (1, 0): 2, (0, 2): 1, (2, 0): 1, (1, 2): 0, (2, 1): 0}


def f(x, c=1.0):
    return c * np.sum(x ** 3) + x[0] * x[1] * x[2]


def f_data(w, x, c=1.0):  # x as argument 1: hessp(argnums=1) and extra arguments
    return f(x, c) + np.sum(w * x)


def hessian_closed(x, c=1.0):
    H = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            H[i, j] = 6 * c * x[i] if i == j else x[OTHER[i, j]]
    return H


def third_closed(c=1.0):
    """T[i, j, m] = d H_ij / d x_m."""
    T = np.zeros((3, 3, 3))
    for i in range(3):
        T[i, i, i] = 6 * c
        for j in range(3):
            if i != j:
                T[i, j, OTHER[i, j]] = 1.0
    return T


def test_hessian_closed_form_and_keywords():
    np.testing.assert_allclose(dg.hessian(f)(X), hessian_closed(X), rtol=1e-13)
    np.testing.assert_allclose(dg.hessian(f)(X, c=2.5), hessian_closed(X, 2.5), rtol=1e-13)
    np.testing.assert_allclose(dg.hessian(f_data, argnums=1)(P, X, c=2.5),
                               hessian_closed(X, 2.5), rtol=1e-13)


def test_jit_of_hessian():
    h = dg.jit(dg.hessian(f))
    np.testing.assert_allclose(h(X), hessian_closed(X), rtol=1e-13)
    np.testing.assert_allclose(dg.jit(lambda x: dg.hessian(f)(x, c=3.0))(X),
                               hessian_closed(X, 3.0), rtol=1e-13)


def test_vmap_of_hessian():
    Xs = np.stack([X, 2 * X, -X, X + 1])
    got = dg.vmap(dg.hessian(f))(Xs)
    np.testing.assert_allclose(got, np.stack([hessian_closed(x) for x in Xs]), rtol=1e-13)


def test_grad_of_hessian_is_the_third_derivative():
    W = np.arange(9.0).reshape(3, 3) - 4
    g = dg.grad(lambda x: np.sum(W * dg.hessian(f)(x, c=2.0)))(X)
    np.testing.assert_allclose(g, np.einsum("ij,ijm->m", W, third_closed(2.0)), rtol=1e-13)
    # and against central differences of the closed-form Hessian
    eps = 1e-6
    fd = [np.sum(W * (hessian_closed(X + eps * e, 2.0) - hessian_closed(X - eps * e, 2.0)))
          / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-7, atol=1e-7)


def test_jvp_of_hessian_and_hessian_of_hessian():
    H, dH = dg.jvp(dg.hessian(f), (X,), (P,))
    np.testing.assert_allclose(H, hessian_closed(X), rtol=1e-13)
    np.testing.assert_allclose(dH, third_closed() @ P, rtol=1e-13)
    # g = sum(H * H) = (36 c^2 + 2) sum(x^2): its Hessian is 2 (36 c^2 + 2) I
    hh = dg.hessian(lambda x: np.sum(dg.hessian(f)(x) ** 2))(X)
    np.testing.assert_allclose(hh, 2 * 38 * np.eye(3), rtol=1e-13)


def test_export_of_hessian():
    text = dg.export(dg.hessian(f), X, name="hess")
    namespace: dict = {}
    exec(text, namespace)
    np.testing.assert_allclose(namespace["hess"](2 * X), hessian_closed(2 * X), rtol=1e-13)
    assert "import dualgpu" not in text


def test_hessian_of_an_empty_point_and_a_scalar():
    g = lambda x: np.sum(x ** 2) + 1.0  # noqa: E731
    assert dg.jit(dg.hessian(g))(np.ones(0)).shape == (0, 0)
    np.testing.assert_allclose(dg.jit(dg.hessian(lambda s: s ** 3))(2.0), 12.0)


# ------------------------------------------------------------------------------ hessp
def test_hessp_keywords_and_extra_arguments():
    want = hessian_closed(X, 2.0) @ P
    np.testing.assert_allclose(dg.hessp(f)(X, P, c=2.0), want, rtol=1e-13)
    np.testing.assert_allclose(dg.hessp(f)(X, P, 2.0), want, rtol=1e-13)
    np.testing.assert_allclose(dg.hessp(f_data, argnums=1)(X, P, P, c=2.0), want, rtol=1e-13)


def test_jit_vmap_grad_of_hessp():
    hp = dg.hessp(f)
    want = hessian_closed(X) @ P
    np.testing.assert_allclose(dg.jit(hp)(X, P), want, rtol=1e-13)
    np.testing.assert_allclose(dg.jit(lambda x, p: hp(x, p, c=2.0))(X, P),
                               hessian_closed(X, 2.0) @ P, rtol=1e-13)
    Ps = np.stack([P, 2 * P, -P, np.ones(3)])
    np.testing.assert_allclose(dg.vmap(hp, in_axes=(None, 0))(X, Ps),
                               Ps @ hessian_closed(X).T, rtol=1e-13)
    Xs = np.stack([X, 2 * X])
    np.testing.assert_allclose(dg.vmap(hp, in_axes=(0, None))(Xs, P),
                               np.stack([hessian_closed(x) @ P for x in Xs]), rtol=1e-13)
    # d/dx (p . H(x) p) contracts the third derivative twice with p
    g = dg.grad(lambda x: np.sum(P * hp(x, P)))(X)
    np.testing.assert_allclose(g, np.einsum("i,j,ijm->m", P, P, third_closed()), rtol=1e-13)
    # hessp of a Hessian-vector product is again a closed form: H(x) p is linear in x
    # through the off-diagonal entries and 6 c x_i on the diagonal
    gp = dg.grad(lambda p: np.sum(hp(X, p) ** 2) / 2)(P)
    np.testing.assert_allclose(gp, hessian_closed(X).T @ (hessian_closed(X) @ P), rtol=1e-13)


def test_export_of_hessp_with_extra_arguments():
    hp = dg.hessp(f_data, argnums=1)
    text = dg.export(hp, X, P, P, name="hp")
    namespace: dict = {}
    exec(text, namespace)
    x2, p2, w2 = 2 * X, np.array([0.25, 1.0, -1.0]), np.ones(3)
    np.testing.assert_allclose(namespace["hp"](x2, p2, w2), hessian_closed(x2) @ p2,
                               rtol=1e-13)
    np.testing.assert_allclose(namespace["hp"](x2, p2, w2), hp(x2, p2, w2), rtol=1e-13)


def test_hessp_flat_p_for_a_matrix_point_under_jit():
    x2 = np.arange(1.0, 7.0).reshape(2, 3)
    g = lambda x: np.sum(x ** 3)  # noqa: E731
    want = (6 * x2 * np.arange(6.0).reshape(2, 3))
    np.testing.assert_allclose(dg.jit(dg.hessp(g))(x2, np.arange(6.0)), want, rtol=1e-13)


# ------------------------------------------------------------------------------ HessianOperator
def test_hessian_operator_products_on_traced_vectors():
    H = dg.HessianOperator(f, X)
    want = hessian_closed(X)
    np.testing.assert_allclose(dg.jit(lambda v: H @ v)(P), want @ P, rtol=1e-13)
    np.testing.assert_allclose(dg.grad(lambda v: v @ (H @ v) / 2)(P), want @ P, rtol=1e-13)
    V = np.stack([P, np.ones(3)], axis=1)
    np.testing.assert_allclose(dg.jit(lambda V: H @ V)(V), want @ V, rtol=1e-13)
    np.testing.assert_allclose(dg.vmap(H.matvec)(V.T), (want @ V).T, rtol=1e-13)


@pytest.mark.parametrize("transform", [dg.jit, dg.grad, dg.vmap])
def test_hessian_operator_on_a_traced_point_names_the_fix(transform):
    def build(x):
        return np.sum(dg.HessianOperator(f, x) @ P)

    with pytest.raises(dg.DualgpuError, match=r"HessianOperator.*dg\.hessp.*dg\.hvp") as e:
        transform(build)(np.stack([X, X]) if transform is dg.vmap else X)
    assert "\n" not in str(e.value)


def test_hessp_refuses_a_list_direction_with_the_fix():
    """p is one program input (so the exported module takes it where the call gives it): a
    list would be several values, so it is refused with the fix."""
    with pytest.raises(dg.DualgpuError, match=r"hessp: p must be an array.*np\.asarray\(p\)"):
        dg.hessp(f)(X, [1.0, 0.0, 0.0])
