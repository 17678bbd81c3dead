"""autograd's ``@primitive`` and ``defvjp`` (dualgpu.autograd_compat): a function whose
reverse derivative is given by vjp makers ``maker(ans, *args) -> (g -> cotangent)``, as
autograd's examples/define_gradient.py writes it (tests/corpus runs that program)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special

import dualgpu as dg
from dualgpu.autograd_compat import defjvp, defvjp, make_diagonal, primitive
from dualgpu.errors import DualgpuError, InvalidArgumentError, UnsupportedOpError


@primitive
def logsumexp(x):
    max_x = np.max(x)
    return max_x + np.log(np.sum(np.exp(x - max_x)))


def logsumexp_vjp(ans, x):  # reached through defvjp's closure, not a global name
    x_shape = x.shape
    return lambda g: np.full(x_shape, g) * np.exp(x - np.full(x_shape, ans))


defvjp(logsumexp, logsumexp_vjp)


def test_the_makers_give_the_gradient_and_their_numpy_calls_are_traced():
    y = np.random.default_rng(0).standard_normal(6)
    g = dg.grad(lambda y: logsumexp(y ** 2))(y)
    np.testing.assert_allclose(g, 2 * y * np.exp(y ** 2 - scipy.special.logsumexp(y ** 2)),
                               rtol=1e-12)
    assert logsumexp(y) == pytest.approx(scipy.special.logsumexp(y), rel=1e-14)
    dg.testing.check_grads(lambda y: logsumexp(y ** 2), (y,), order=2, modes=("rev",))


def test_argnums_and_a_missing_maker_give_zero():
    @primitive
    def scaled(x, a):
        return a * np.sin(x)

    defvjp(scaled, lambda ans, x, a: lambda g: g * a * np.cos(x), None)
    x, a = np.array([0.3, 1.2]), np.array(2.0)
    gx, ga = dg.grad(lambda x, a: np.sum(scaled(x, a)), argnums=(0, 1))(x, a)
    np.testing.assert_allclose(gx, 2.0 * np.cos(x), rtol=1e-14)
    assert ga == 0.0

    @primitive
    def scaled_a(x, a):
        return a * np.sin(x)

    defvjp(scaled_a, lambda ans, x, a: lambda g: np.sum(g * np.sin(x)), argnums=(1,))
    assert dg.grad(lambda a: np.sum(scaled_a(x, a)))(a) == pytest.approx(np.sum(np.sin(x)))


def test_defvjp_of_an_undecorated_function_or_a_wrong_count_is_refused():
    with pytest.raises(InvalidArgumentError, match="primitive"):
        defvjp(np.sin, lambda ans, x: lambda g: g * np.cos(x))
    with pytest.raises(InvalidArgumentError, match="2 vjp makers for 1 argnums"):
        defvjp(logsumexp, logsumexp_vjp, logsumexp_vjp, argnums=(0,))
    with pytest.raises(InvalidArgumentError, match="expects a function"):
        primitive(3.0)


def test_a_primitive_without_rules_runs_and_refuses_only_differentiation():
    @primitive
    def cube(x):  # autograd: a function until differentiated (vittles' inner vjp)
        return x ** 3

    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(cube(x), x ** 3)
    with pytest.raises(DualgpuError, match="no VJP rule"):
        dg.grad(lambda x: np.sum(cube(x)))(x)


def test_defjvp_gives_forward_mode_and_reverse_mode_is_its_transpose():
    @primitive
    def scaled(a, x, how):  # a static argument (a string) among the arrays, as autograd boxes
        return a * np.sin(x) if how == "sin" else a * x

    defjvp(scaled, lambda g, ans, a, x, how: g * np.sin(x),
           lambda g, ans, a, x, how: g * a * np.cos(x))
    a, x = np.array(1.5), np.array([0.3, 1.2])
    _, t = dg.jvp(lambda x: scaled(a, x, "sin"), (x,), (np.ones(2),))
    np.testing.assert_allclose(t, 1.5 * np.cos(x), rtol=1e-14)
    ga, gx = dg.grad(lambda a, x: np.sum(scaled(a, x, "sin")), argnums=(0, 1))(a, x)
    np.testing.assert_allclose([ga, *gx], [np.sum(np.sin(x)), *(1.5 * np.cos(x))], rtol=1e-14)
    dg.testing.check_grads(lambda x: scaled(a, x, "sin"), (x,), order=2)


def test_defjvp_beside_defvjp_and_of_numpy_functions():
    @primitive
    def double(x):
        return 2.0 * x

    defvjp(double, lambda ans, x: lambda g: 2.0 * g)
    defjvp(double, lambda g, ans, x: 2.0 * g)
    x = np.array([1.0, -2.0])
    assert dg.jvp(double, (x,), (x,))[1].tolist() == [2.0, -4.0]
    assert dg.grad(lambda x: np.sum(double(x) ** 2))(x).tolist() == [8.0, -16.0]
    # autograd programs add forward rules to autograd's own primitives (paragami): dualgpu
    # differentiates NumPy's and SciPy's functions by its own rules, and keeps them
    defjvp(np.linalg.inv, lambda g, ans, x: 0.0 * g)
    defjvp(scipy.special.gammaln, lambda g, ans, x: 0.0 * g)
    a = np.array([[2.0, 1.0], [0.0, 4.0]])
    np.testing.assert_allclose(dg.jacobian(np.linalg.inv)(a).reshape(4, 4),
                               -np.kron(np.linalg.inv(a), np.linalg.inv(a).T), rtol=1e-14)
    with pytest.raises(InvalidArgumentError, match="primitive"):
        defjvp(lambda x: x, lambda g, ans, x: g)
    with pytest.raises(InvalidArgumentError, match="2 jvp makers for 1 argnums"):
        defjvp(double, None, None, argnums=(0,))


def test_make_diagonal_is_autograds():
    d = np.array([[1.0, -2.0, 3.0], [0.5, np.inf, 0.0]])
    out = make_diagonal(d, offset=0, axis1=-1, axis2=-2)
    assert out.shape == (2, 3, 3) and out.dtype == np.float64
    np.testing.assert_array_equal(np.diagonal(out, axis1=-1, axis2=-2), d)
    assert np.count_nonzero(out) == 5 and not np.isnan(out).any()  # off the diagonal: 0
    g = dg.grad(lambda d: np.sum(np.sin(make_diagonal(d, 0, -1, -2)) ** 2))(d[:1])
    np.testing.assert_allclose(g, np.sin(2 * d[:1]), rtol=1e-14)
    with pytest.raises(UnsupportedOpError, match="axis1=-1, axis2=-2"):
        make_diagonal(d)


def test_make_diagonal_traced_is_its_value_and_a_0d_array_is_refused():
    """Traced float32 gave float32 (on values autograd's float64); a complex D lost its
    imaginary part on values; a 0-d D raised a raw IndexError."""
    diagonal = lambda d: make_diagonal(d, 0, -1, -2)  # noqa: E731
    for d in (np.ones(2, np.float32), np.array([1j, 2.0])):
        got, want = dg.jit(diagonal)(d), diagonal(d)
        assert got.dtype == want.dtype == np.result_type(d, np.float64)
        np.testing.assert_array_equal(got, np.diag(d))
    with pytest.raises(dg.InvalidArgumentError, match="at least one axis"):
        dg.jit(diagonal)(np.array(1.0))


def test_an_integer_argument_is_static_as_autograd_never_boxes_it():
    @primitive
    def padded(x, n):  # n, a size, is a shape in the body, also inside the jvp rule
        out = np.zeros(n)
        out[:len(x)] = x
        return out

    defvjp(padded, lambda ans, x, n: lambda g: g[:len(x)])
    defjvp(padded, lambda g, ans, x, n: padded(g, n))
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(dg.jvp(lambda x: padded(x, 4), (x,), (x,))[1], [1, 2, 0, 0])
    np.testing.assert_allclose(dg.hessian(lambda x: np.sum(padded(x, 3) ** 3))(x),
                               np.diag(6 * x), rtol=1e-14)


def test_an_exception_of_the_body_keeps_its_type():
    @primitive
    def at_theta0(x):  # vittles' get_return_par: evaluated elsewhere, it raises ValueError
        if np.any(x != 1.0):
            raise ValueError("must be evaluated at 1")
        return 2 * x

    defvjp(at_theta0, lambda ans, x: lambda g: 2 * g)
    at_theta0(np.ones(2))  # its shape known: the op's implementation runs the body
    for call in (lambda: at_theta0(np.zeros(2)),
                 lambda: dg.grad(lambda x: np.sum(at_theta0(x)))(np.zeros(2))):
        with pytest.raises(ValueError, match="must be evaluated at 1") as info:
            call()
        assert isinstance(info.value, DualgpuError) and "at_theta0" in str(info.value)


WEIGHTS = np.array([1.0, 2.0, 3.0])


@primitive
def weighted(x):
    return np.sum(WEIGHTS * x)


defvjp(weighted, lambda ans, x: lambda g: g * WEIGHTS * np.ones_like(x))


def test_a_maker_reads_the_globals_of_each_call_not_of_defvjp():
    global WEIGHTS
    saved = WEIGHTS
    try:
        np.testing.assert_allclose(dg.grad(weighted)(np.ones(3)), [1.0, 2.0, 3.0])
        WEIGHTS = np.array([10.0, 20.0, 30.0])  # reassigned: the makers see the new one
        np.testing.assert_allclose(dg.grad(weighted)(np.ones(3)), [10.0, 20.0, 30.0])
    finally:
        WEIGHTS = saved
