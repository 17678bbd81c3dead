"""Array-API-style code (``xp = x.__array_namespace__()``) traces and differentiates."""
import numpy as np
import pytest

import dualgpu as dg
from dualgpu.testing import check_grads

X = np.linspace(0.1, 0.9, 6)


def _ns(x):
    return x.__array_namespace__()


def loss_basic(x):
    xp = _ns(x)
    return xp.sum(xp.exp(x) * xp.sin(x))


def test_namespace_of_traced_values_is_used():
    seen = []

    def f(x):
        xp = x.__array_namespace__()
        seen.append(xp)
        return xp.sum(xp.exp(x))

    dg.grad(f)(X)
    assert "tracing namespace" in repr(seen[-1])
    np.testing.assert_allclose(dg.grad(f)(X), np.exp(X), rtol=1e-14)
    np.testing.assert_allclose(f(X), np.sum(np.exp(X)))  # concrete arrays: plain NumPy


def test_basic_grad_and_hvp():
    np.testing.assert_allclose(dg.grad(loss_basic)(X),
                               np.exp(X) * (np.sin(X) + np.cos(X)), rtol=1e-13)
    check_grads(loss_basic, (X,), order=2)


# each entry: an expression in xp and x whose sum is differentiated
EXPRESSIONS = [
    "xp.acos(x)", "xp.asin(x)", "xp.atan(x)", "xp.atan2(x, 1.0 + x)", "xp.acosh(1 + x)",
    "xp.asinh(x)", "xp.atanh(x)", "xp.pow(x, 3)", "xp.concat([x, 2 * x])",
    "xp.concat([xp.reshape(x, (2, 3)), x[None, :3]], axis=0)",
    "xp.concat([xp.reshape(x, (2, 3)), xp.reshape(x, (3, 2))], axis=None)",
    "xp.permute_dims(xp.reshape(x, (2, 3)), (1, 0)) * xp.asarray([1.0, 2.0])",
    "xp.matrix_transpose(xp.reshape(x, (2, 3))) * xp.asarray([1.0, 2.0])",
    "xp.vecdot(xp.reshape(x, (2, 3)), xp.reshape(x, (2, 3)) ** 2)",
    "xp.cumulative_sum(x) ** 2", "xp.cumulative_sum(x, include_initial=True) ** 2",
    "xp.cumulative_sum(xp.reshape(x, (2, 3)), axis=1) ** 2",
    "xp.positive(x) ** 2",
    "xp.linalg.vector_norm(x)", "xp.linalg.vector_norm(xp.reshape(x, (2, 3)), axis=1)",
    "xp.linalg.vector_norm(x, ord=1)", "xp.linalg.vector_norm(x, ord=3)",
    "xp.linalg.vector_norm(x, ord=float('inf'))",
    "xp.linalg.matrix_norm(xp.reshape(x, (2, 3)))",
    "xp.linalg.matmul(xp.reshape(x, (2, 3)), xp.reshape(x, (3, 2)))",
    "xp.linalg.vecdot(x, x)",
    "xp.matmul(xp.reshape(x, (2, 3)), xp.reshape(x, (3, 2)))",
    "xp.tensordot(x, x, axes=1)", "xp.where(x > 0.5, x, -x) ** 2", "xp.square(x)",
    "xp.expand_dims(x, axis=0) ** 2", "xp.stack([x, x * x], axis=0)", "xp.mean(x ** 3)",
    "xp.prod(x)", "xp.max(x ** 2)", "xp.clip(x, 0.2, 0.8) ** 2", "xp.logaddexp(x, 2 * x)",
    "xp.sqrt(x)", "xp.broadcast_to(x, (2, 6)) ** 2", "xp.flip(x) * x", "xp.std(x)",
    "xp.var(x)", "xp.hypot(x, 2 * x)", "xp.maximum(x, 0.5) ** 2", "xp.abs(x - 0.5) ** 3",
    "xp.divide(x, 1 + x)", "xp.log(x) * x", "xp.log2(x)", "xp.log10(x)", "xp.expm1(x)",
    "xp.tanh(x)", "xp.take(x, xp.asarray([0, 2, 2])) ** 2",
    "xp.zeros_like(x) + x ** 2", "xp.ones((6,)) * x ** 2",
]


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_array_api_expression(expr):
    def f(x):
        xp = x.__array_namespace__()
        return xp.sum(eval(expr, {"xp": xp, "x": x}))

    f.__name__ = "f_" + str(abs(hash(expr)))
    check_grads(f, (X,), order=2)


def test_array_api_spectral_norm_is_the_largest_singular_value():
    def f(x):
        xp = x.__array_namespace__()
        return xp.linalg.matrix_norm(xp.reshape(x, (2, 3)), ord=2)

    np.testing.assert_allclose(dg.jit(f)(X), np.linalg.norm(X.reshape(2, 3), 2), rtol=1e-12)
    check_grads(f, (X,), order=1)


def test_array_api_names_also_work_through_numpy_protocols():
    # np.concat / np.permute_dims called on tracers reach dualgpu via __array_function__
    def f(x):
        y = np.concat([x, x ** 2])
        return np.sum(np.permute_dims(np.reshape(y, (3, 4)), (1, 0)) ** 2)

    check_grads(f, (X,), order=2)


def test_array_api_hvp_batched():
    def f(x):
        xp = x.__array_namespace__()
        return xp.exp(-xp.sum(x ** 2, axis=0))

    x = np.random.default_rng(0).standard_normal((3, 5))
    v = np.ones_like(x)
    hv = dg.hvp(f, batch_axes=(1,))(x, v)
    f0 = np.exp(-np.sum(x ** 2, axis=0))
    np.testing.assert_allclose(hv, (4 * x * np.sum(x * v, axis=0) - 2 * v) * f0, rtol=1e-12)


def test_sums_of_several_slices():
    """Regression: the cotangent of a slice (a scatter of a uniform fill into zeros) must not
    be treated as a uniform fill itself."""
    x = np.arange(12.0).reshape(3, 4)

    def f(x):
        xp = x.__array_namespace__()
        return xp.sum(x[..., 1:]) + xp.sum(x[None, 0]) + xp.sum(xp.take(x, xp.asarray([2]),
                                                                       axis=0) ** 2)

    want = np.zeros_like(x)
    want[:, 1:] += 1
    want[0] += 1
    want[2] += 2 * x[2]
    np.testing.assert_allclose(dg.grad(f)(x), want)
    check_grads(f, (x,), order=2)


def test_traced_values_have_a_device():
    def f(x):
        xp = x.__array_namespace__()
        c = xp.asarray(np.array([1.0, 2.0, 3.0]), device=x.device)
        return xp.sum(x * c)

    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(dg.grad(f)(x), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("call", [
    lambda x: np.linalg.diagonal(x),
    lambda x: np.linalg.diagonal(x, offset=1),
    lambda x: np.linalg.trace(x),
    lambda x: np.linalg.trace(x, offset=-1, dtype=np.float32),
])
def test_linalg_diagonal_and_trace_take_the_last_two_axes(call):
    """np.linalg.diagonal and trace (NumPy 2's array-API functions) work on the last two
    axes of a stack of matrices; they were np.diagonal's and np.trace's first two: a (2, 3, 3)
    stack gave shape (3, 2) for (2, 3)."""
    x = np.arange(18.0).reshape(2, 3, 3) ** 1.5
    got, want = dg.jit(call)(x), call(x)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-6 if want.dtype == np.float32 else 1e-14)


def test_linalg_outer_takes_vectors_only():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(dg.jit(lambda x: np.linalg.outer(x[0], x[1]))(x),
                                  np.linalg.outer(x[0], x[1]))
    with pytest.raises(ValueError, match="one-dimensional"):
        dg.jit(lambda x: np.linalg.outer(x, x))(x)
