"""autograd's spellings work on the first try (issue 25): elementwise_grad / deriv,
hessian_vector_product, make_hvp, argnum= on every transform taking argnums; names dualgpu
spells differently say how. References are closed forms."""
import numpy as np
import pytest

import dualgpu as dg

X = np.array([-0.7, 0.2, 1.3])
Y = np.array([0.5, -1.1, 2.0])
V = np.array([1.0, -2.0, 0.5])


def f2(x, y):
    return np.sum(x ** 2 * y ** 3)


def test_elementwise_grad_is_the_derivative_at_every_element():
    np.testing.assert_allclose(dg.elementwise_grad(np.tanh)(X), 1 - np.tanh(X) ** 2,
                               rtol=1e-14)
    np.testing.assert_allclose(dg.deriv(np.sin)(X), np.cos(X), rtol=1e-14)
    both = dg.elementwise_grad(lambda x, y: x ** 2 * y ** 3, argnum=1)
    np.testing.assert_allclose(both(X, Y), 3 * X ** 2 * Y ** 2, rtol=1e-14)
    np.testing.assert_allclose(dg.elementwise_grad(lambda x, y: x ** 2 * y ** 3, 0)(X, Y),
                               2 * X * Y ** 3, rtol=1e-14)


def test_elementwise_grad_made_anew_reuses_its_program():
    def g(x):
        return np.exp(x) * x

    dg.elementwise_grad(g)(X)
    misses = dg.cache_info()["misses"]
    np.testing.assert_allclose(dg.elementwise_grad(g)(X), np.exp(X) * (1 + X), rtol=1e-14)
    assert dg.cache_info()["misses"] == misses


def test_hessian_vector_product_and_make_hvp():
    def f(x):
        return np.sum(x ** 3)

    np.testing.assert_allclose(dg.hessian_vector_product(f)(X, V), 6 * X * V, rtol=1e-14)
    hvp_y = dg.hessian_vector_product(f2, argnum=1)
    np.testing.assert_allclose(hvp_y(X, Y, V), 6 * X ** 2 * Y * V, rtol=1e-14)
    hvp_at, g = dg.make_hvp(f)(X)
    np.testing.assert_allclose(g, 3 * X ** 2, rtol=1e-14)
    np.testing.assert_allclose(hvp_at(V), 6 * X * V, rtol=1e-14)
    hvp_at, g = dg.make_hvp(f2, argnum=1)(X, Y)
    np.testing.assert_allclose(g, 3 * X ** 2 * Y ** 2, rtol=1e-14)
    np.testing.assert_allclose(hvp_at(V), 6 * X ** 2 * Y * V, rtol=1e-14)


@pytest.mark.parametrize("call, want", [
    (lambda: dg.grad(f2, argnum=1)(X, Y), 3 * X ** 2 * Y ** 2),
    (lambda: dg.value_and_grad(f2, argnum=1)(X, Y)[1], 3 * X ** 2 * Y ** 2),
    (lambda: dg.grad(argnum=1)(f2)(X, Y), 3 * X ** 2 * Y ** 2),
    (lambda: dg.hvp(f2, argnum=1)(X, Y, V), 6 * X ** 2 * Y * V),
    (lambda: dg.grad_and_hvp(f2, argnum=1)(X, Y, V)[1], 6 * X ** 2 * Y * V),
    (lambda: dg.hessp(f2, argnum=1)(Y, V, X), 6 * X ** 2 * Y * V),
    (lambda: dg.hessian(f2, argnum=1)(X, Y), np.diag(6 * X ** 2 * Y)),
    (lambda: dg.hessian_diag(f2, argnum=1)(X, Y), 6 * X ** 2 * Y),
    (lambda: dg.jacobian(lambda x, y: x * y ** 2, argnum=1)(X, Y), np.diag(2 * X * Y)),
    (lambda: dg.jacfwd(lambda x, y: x * y ** 2, argnum=1)(X, Y), np.diag(2 * X * Y)),
    (lambda: dg.jacrev(lambda x, y: x * y ** 2, argnum=1)(X, Y), np.diag(2 * X * Y)),
])
def test_argnum_is_an_alias_of_argnums(call, want):
    np.testing.assert_allclose(call(), want, rtol=1e-13, atol=1e-14)


def test_argnum_and_argnums_together_are_refused():
    with pytest.raises(dg.InvalidArgumentError, match="argnums= .* or autograd's argnum="):
        dg.grad(f2, argnums=0, argnum=1)
    with pytest.raises(dg.InvalidArgumentError, match="not both"):
        dg.hvp(f2, 0, argnum=1)


@pytest.mark.parametrize("name, spelling", [
    ("make_vjp", "dg.vjp"), ("make_jvp", "dg.jvp"), ("grad_and_aux", "has_aux=True"),
    ("holomorphic_grad", "holomorphic=True"), ("primitive", "dg.custom_op"),
    ("grad_and_value", "dg.value_and_grad"),
])
def test_names_spelled_otherwise_say_how(name, spelling):
    with pytest.raises(AttributeError, match=f"'{name}'.*{spelling.replace('.', '[.]')}"):
        getattr(dg, name)
    assert not hasattr(dg, name)


@pytest.mark.parametrize("name", ["linearize", "custom_jvp", "custom_vjp"])
def test_names_dualgpu_now_has_are_not_foreign(name):
    assert callable(getattr(dg, name))


def test_unknown_names_are_a_plain_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'no_such_thing'$"):
        dg.no_such_thing  # noqa: B018


def test_an_output_of_size_one_is_taken_as_autograd_takes_it():
    """autograd's grad (and its HVPs, built on it) differentiates an output of size 1 of any
    shape, ``np.dot(w, x)`` of shape (1,): the value keeps its shape."""
    w = np.array([[1.0, -2.0, 0.5]])
    x = np.array([0.3, 0.2, -1.0])

    def f(x):
        return np.tanh(w @ x)      # shape (1,)

    slope = 1 - np.tanh(w @ x) ** 2
    np.testing.assert_allclose(dg.grad(f)(x), slope * w[0])
    value, g = dg.value_and_grad(f)(x)
    assert value.shape == (1,) and np.allclose(value, np.tanh(w @ x))
    v = np.array([1.0, 0.0, 2.0])
    curvature = -2 * np.tanh(w @ x) * slope * (w[0] @ v) * w[0]
    np.testing.assert_allclose(dg.hessian_vector_product(f)(x, v), curvature)
    np.testing.assert_allclose(dg.make_hvp(lambda x: f(x).reshape(1, 1))(x)[0](v), curvature)
    with pytest.raises(dg.NonScalarOutputError, match=r"shape \(2,\)"):
        dg.grad(lambda x: x[:2])(x)
