"""User-defined ops (dg.custom_op): a VJP alone gives jvp and hvp (the JVP is derived by
transposing the pullback), a JVP alone gives grad, and unsafe names or C expressions are
refused before they can reach generated code."""
import numpy as np
import pytest

import dualgpu as dg
from dualgpu.testing import check_grads, check_hvp, check_jvp

# softsign(x) = x / (1 + |x|): only the VJP is given.
softsign = dg.custom_op(
    "test_softsign", lambda xp, x: x / (1 + xp.abs(x)),
    vjp=lambda g, primals, ans: (g / (1 + np.abs(primals[0])) ** 2,),
    c="({0} / (1 + fabs({0})))")

# A binary op with broadcasting, VJP only.
soft_hypot = dg.custom_op(
    "test_soft_hypot", lambda xp, x, y: xp.sqrt(x * x + y * y + 1.0),
    vjp=lambda g, primals, ans: (g * primals[0] / ans, g * primals[1] / ans))

# A JVP only: the VJP is derived by transposing the pushforward.
cube = dg.custom_op("test_cube", lambda xp, x: x ** 3,
                    jvp=lambda primals, tangents, ans: 3 * primals[0] ** 2 * tangents[0])

# A non-elementwise op with a shape rule: row norms of a matrix.
row_norm = dg.custom_op(
    "test_row_norm", lambda xp, a: xp.sqrt(xp.sum(a * a, axis=1)),
    shape=lambda a: (a.shape[:1], a.dtype),
    vjp=lambda g, primals, ans: (g[:, None] * primals[0] / ans[:, None],))

X = np.array([0.7, -1.9, 0.2, 2.5])


def test_vjp_only_supports_jvp_against_finite_differences():
    check_jvp(softsign, (X,))
    out, tangent = dg.jvp(softsign, (X,), (np.ones(4),))
    np.testing.assert_allclose(out, X / (1 + np.abs(X)))
    np.testing.assert_allclose(tangent, 1 / (1 + np.abs(X)) ** 2)


def test_vjp_only_supports_hvp_against_finite_differences():
    f = lambda x: np.sum(np.tanh(softsign(x)) * x)
    check_hvp(f, (X,))
    check_grads(f, (X,), order=2)
    hv = dg.hvp(f)(X, np.ones(4))
    assert "test_softsign" in dg.source(dg.hvp(f), X, np.ones(4))
    assert hv.shape == X.shape


def test_vjp_only_binary_op_with_broadcasting():
    y = np.array([[0.5], [-1.5]])
    check_grads(lambda x, y: soft_hypot(x, y), (X, y), order=2)
    check_grads(lambda x, y: np.sum(soft_hypot(x, y) ** 3), (X, y), order=2)


def test_jvp_only_supports_grad_and_hvp():
    f = lambda x: np.sum(np.sin(cube(x)))
    np.testing.assert_allclose(dg.grad(f)(X), np.cos(X ** 3) * 3 * X ** 2)
    check_grads(f, (X,), order=2)


def test_shape_rule_for_a_non_elementwise_op():
    a = np.arange(1.0, 7.0).reshape(2, 3)
    check_grads(lambda a: np.sum(row_norm(a) ** 3), (a,), order=2)
    check_jvp(row_norm, (a,))


def test_concrete_call_and_reregistration():
    np.testing.assert_allclose(softsign(np.array([1.0])), [0.5])
    again = dg.custom_op("test_cube", lambda xp, x: x * x * x,
                         jvp=lambda p, t, ans: 3 * p[0] * p[0] * t[0])
    np.testing.assert_allclose(again(np.array([2.0])), [8.0])


@pytest.mark.parametrize("name", ["bad name", "1abc", "x;import os", "class", "", "a" * 65])
def test_bad_names_are_refused(name):
    with pytest.raises(dg.CodegenSafetyError):
        dg.custom_op(name, lambda xp, x: x, vjp=lambda g, p, ans: (g,))


@pytest.mark.parametrize("expr", [
    "system({0})",                 # not a whitelisted function
    "({0}); exit(1)",              # statement separator
    "{0} + {1}",                   # placeholder out of range for a unary op
    "__import__('os')",            # quotes and dunder names
    "{0} /* comment */",           # comments
    "x[0]",                        # indexing
])
def test_bad_c_expressions_are_refused(expr):
    with pytest.raises(dg.CodegenSafetyError):
        dg.custom_op("test_unsafe", lambda xp, x: x, vjp=lambda g, p, ans: (g,), c=expr)


def test_builtin_names_are_protected():
    with pytest.raises(dg.DualgpuError):
        dg.custom_op("exp", lambda xp, x: x, vjp=lambda g, p, ans: (g,))


def test_op_without_rules_refuses_to_be_differentiated():
    plain = dg.custom_op("test_plain", lambda xp, x: x + 1.0)
    np.testing.assert_allclose(dg.jit(lambda x: plain(x) * 2)(X), 2 * (X + 1.0))
    with pytest.raises(dg.DualgpuError, match="no VJP rule"):
        dg.grad(lambda x: np.sum(plain(x) * x))(X)
    with pytest.raises(dg.DualgpuError, match="no JVP rule"):
        dg.jvp(plain, (X,), (X,))
