"""custom_vjp / custom_jvp functions (and autograd's primitives) whose bodies branch on their
operands' values -- an iteration until convergence, autograd's misc.fixed_points -- or write
them into a NumPy array or hand them to a C function (paragami's primitives) run eagerly,
under the derivative transforms and under jit: the op runs the body on the values at every
call; the body is traced only for its output's shape (run on the values of the call where
known, else taking every loop's exit), never guarded."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.linalg

import dualgpu as dg
from dualgpu.autograd_compat import defvjp, primitive
from dualgpu.errors import ShapeMismatchError


@dg.custom_vjp
def newton_sqrt(a):
    x = np.ones_like(a)
    while np.max(np.abs(x * x - a)) > 1e-12:  # a Python loop on the values
        x = 0.5 * (x + a / x)
    return x


def _sqrt_fwd(a):
    x = newton_sqrt(a)
    return x, x


newton_sqrt.defvjp(_sqrt_fwd, lambda x, g: (g / (2 * x),))


@dg.custom_jvp
def soft_abs(x):
    if np.sum(x) > 0:  # a branch on the values
        return x * 1.0
    return -x


@soft_abs.defjvp
def _soft_abs_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return soft_abs(x), np.sign(np.sum(x)) * x_dot


def test_a_custom_vjp_body_that_loops_on_values_runs_eagerly_under_grad_and_jit():
    a = np.array([2.0, 9.0])
    np.testing.assert_allclose(newton_sqrt(a), np.sqrt(a), rtol=1e-12)
    traces = []

    def loss(a):
        traces.append(a)
        return np.sum(newton_sqrt(a) ** 3)

    g = dg.grad(loss)
    np.testing.assert_allclose(g(a), 1.5 * np.sqrt(a), rtol=1e-12)
    # another value takes another number of iterations: the same program, no retrace
    np.testing.assert_allclose(g(np.array([4.0, 0.25])), 1.5 * np.sqrt([4.0, 0.25]),
                               rtol=1e-12)
    assert len(traces) == 1
    np.testing.assert_allclose(dg.jit(lambda a: newton_sqrt(a) + 1)(a), np.sqrt(a) + 1,
                               rtol=1e-12)


def test_a_custom_jvp_body_that_branches_on_values_takes_each_calls_branch():
    traces = []

    def loss(x):
        traces.append(x)
        return np.sum(soft_abs(x) ** 2)

    f = dg.grad(loss)
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(f(x), 2 * x)
    np.testing.assert_allclose(f(-x), -2 * x)  # the other branch, by the op at run time
    assert len(traces) == 1


@primitive
def fixed_point(f, a, x0, tol):
    """autograd's misc.fixed_points, reduced: a function argument (static) and a loop."""
    x, x_prev = f(a, x0), x0
    while np.abs(x - x_prev) > tol:
        x, x_prev = f(a, x), x
    return x


def _fixed_point_vjp(ans, f, a, x0, tol):
    def adjoint(a_and_ans, x):  # x = g + x * df/dx, a fixed point called inside the rule
        a, ans, g = a_and_ans
        _, pullback = dg.vjp(lambda y: f(a, y), ans)
        return g + pullback(x)[0]

    def vjp(g):
        x_bar = fixed_point(adjoint, (a, ans, g), np.zeros_like(ans), tol)
        return dg.vjp(lambda b: f(b, ans), a)[1](x_bar)[0]

    return vjp


defvjp(fixed_point, None, _fixed_point_vjp, None, None)


def _newton(a, x):
    return 0.5 * (x + a / x)


def test_an_autograd_primitive_with_a_function_argument_loops_in_its_rule_too():
    sqrt = lambda a: fixed_point(_newton, a, 10.0, 1e-12)
    assert sqrt(2.0) == pytest.approx(np.sqrt(2.0), rel=1e-12)
    assert dg.grad(sqrt)(2.0) == pytest.approx(0.5 / np.sqrt(2.0), rel=1e-12)
    assert dg.grad(dg.grad(sqrt))(2.0) == pytest.approx(-0.25 * 2.0 ** -1.5, rel=1e-10)


def test_a_body_whose_shape_follows_the_values_is_refused_at_the_call_that_changes_it():
    @dg.custom_vjp
    def positives(x):
        return x[:2] if np.sum(x) > 0 else x

    positives.defvjp(lambda x: (positives(x), None), lambda res, g: (g,))
    f = dg.jit(lambda x: positives(x) * 2)
    with pytest.raises(ShapeMismatchError, match="custom op .*positives"):
        f(np.ones(3))


def test_a_body_that_fails_on_the_loop_exits_it_is_traced_with_says_so():
    @dg.custom_vjp
    def checked(x):
        if not np.all(x > 0):  # under jit the values are not known: the trace takes False
            raise ValueError("x must be positive")
        return np.sqrt(x)

    checked.defvjp(lambda x: (checked(x), x), lambda x, g: (g / (2 * np.sqrt(x)),))
    with pytest.raises(dg.TracerControlFlowError,
                       match="checked branches on .* raised ValueError: x must be positive"):
        dg.jit(lambda x: checked(x) + 1)(np.ones(2))
    # where the values are known (grad), the trace takes their branch
    np.testing.assert_allclose(dg.grad(lambda x: np.sum(checked(x)))(np.ones(2)), [0.5, 0.5])


# ------------------------------------------------------------- rules that branch on values
def _sign_scaled():
    """``f(x) = x ** 3`` whose bwd scales by 2 where ``sum(x) > 0`` and by 3 elsewhere (a
    branch on a residual's value, as JAX follows it outside jit)."""
    @dg.custom_vjp
    def f(x):
        return x ** 3

    def bwd(x, g):
        if np.sum(x) > 0:
            return (2 * g * 3 * x ** 2,)
        return (3 * g * 3 * x ** 2,)

    f.defvjp(lambda x: (f(x), x), bwd)
    return f


def test_a_rule_that_branches_on_values_takes_each_calls_branch():
    f = _sign_scaled()
    traces = []

    def loss(x):
        traces.append(1)
        return np.sum(f(x))

    g, h = dg.grad(loss), dg.hvp(loss)
    x, v = np.array([1.0, 2.0]), np.array([1.0, -1.0])
    for s, k in ((1.0, 2), (-1.0, 3), (1.0, 2)):
        np.testing.assert_allclose(g(s * x), k * 3 * x ** 2)
        np.testing.assert_allclose(h(s * x, v), k * 6 * s * x * v)
    assert len(traces) == 4  # a program per branch, for grad and for hvp; then reused
    # a custom_op rule too
    op = dg.custom_op("my_branching_cube", lambda xp, x: x ** 3,
                      vjp=lambda g, p, ans: (g * 3 * p[0] ** 2 * (2 if np.sum(p[0]) > 0 else 3),))
    np.testing.assert_allclose(dg.grad(lambda x: np.sum(op(x)))(-x), 9 * x ** 2)


def test_a_rule_branching_on_values_under_jit_or_on_a_tangent_is_refused():
    f = _sign_scaled()
    with pytest.raises(dg.TracerControlFlowError, match="bool"):  # as JAX under jit
        dg.jit(dg.grad(lambda x: np.sum(f(x))))(np.ones(2))

    @dg.custom_jvp
    def h(x):
        return 2 * x

    h.defjvp(lambda p, t: (h(*p), 2 * t[0] if np.sum(t[0]) > 0 else -2 * t[0]))
    with pytest.raises(dg.TracerControlFlowError, match="tangent or cotangent in the jvp "
                                                        "rule of custom op"):
        dg.jvp(h, (np.ones(2),), (np.ones(2),))


@primitive
def unvectorize(vec):  # paragami's _unvectorize_ld_matrix: a body NumPy runs, not traceable
    mat = np.zeros((2, 2))
    mat[0, 0], mat[1, 0], mat[1, 1] = vec[0], vec[1], vec[2]
    mat[0, 1] = vec[1]
    return mat


defvjp(unvectorize, lambda ans, vec: lambda g: np.stack([g[0, 0], g[1, 0] + g[0, 1], g[1, 1]]))


def test_a_body_that_writes_values_into_a_numpy_array_runs_as_numpy_runs_it():
    vec = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(unvectorize(vec), [[1.0, 2.0], [2.0, 3.0]])
    f = lambda v: np.sum(np.sin(unvectorize(v)) * np.array([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_allclose(dg.grad(f)(vec), np.cos(vec) * [1.0, 5.0, 4.0], rtol=1e-14)
    assert dg.jit(f)(vec) == pytest.approx(f(vec), rel=1e-14)
    dg.testing.check_grads(f, (vec,), order=2)


def test_a_body_that_calls_a_c_function_on_its_operands_runs_on_their_values():
    solve = scipy.sparse.linalg.splu(scipy.sparse.csc_matrix([[4.0, 1.0], [1.0, 3.0]])).solve

    @primitive
    def z_solve(b):  # paragami's get_differentiable_solver: SuperLU takes NumPy arrays only
        return solve(b)

    defvjp(z_solve, lambda ans, b: lambda g: z_solve(g))  # the matrix is symmetric
    b = np.array([1.0, 2.0])
    a_inv = np.linalg.inv([[4.0, 1.0], [1.0, 3.0]])
    np.testing.assert_allclose(dg.grad(lambda b: np.sum(z_solve(b) ** 2))(b),
                               2 * a_inv @ a_inv @ b, rtol=1e-14)
    assert dg.jit(lambda b: np.sum(z_solve(b)))(b) == pytest.approx(np.sum(a_inv @ b))
