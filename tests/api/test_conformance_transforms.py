"""Transforms as JAX users call them (issue 25): a jitted method, refusals of what JAX
refuses (a generator function, a cotangent less precise than its output), scalar tangents
real or complex, a pullback across a jit boundary. References are closed forms."""
import numpy as np
import pytest

import dualgpu as dg

x = np.array([0.5, -1.0, 2.0])


def f(v):
    return np.sin(v) * v


def f_prime(v):
    return np.cos(v) * v + np.sin(v)


# ------------------------------------------------------------------------------ methods
class Model:
    def __init__(self, scale):
        self.scale = scale

    @dg.jit
    def apply(self, v):
        return self.scale * np.sin(v)

    @dg.jit(static_argnums=2)
    def power(self, v, n):
        return self.scale * v ** n

    loss_grad = dg.grad(lambda self, v: self.scale * np.sum(v ** 3), argnums=1)


def test_jit_on_a_method_binds_the_instance():
    a, b = Model(2.0), Model(-0.5)
    np.testing.assert_allclose(a.apply(x), 2.0 * np.sin(x), rtol=1e-15)
    np.testing.assert_allclose(b.apply(x), -0.5 * np.sin(x), rtol=1e-15)
    np.testing.assert_allclose(Model.apply(a, x), 2.0 * np.sin(x), rtol=1e-15)
    np.testing.assert_allclose(a.power(x, 3), 2.0 * x ** 3, rtol=1e-15)


def test_grad_as_a_class_attribute_binds_the_instance():
    np.testing.assert_allclose(Model(2.0).loss_grad(x), 6.0 * x ** 2, rtol=1e-15)


# ------------------------------------------------------------------------------ refusals
def test_jit_of_a_generator_function_is_a_type_error():
    def items(v):
        yield np.sin(v)

    with pytest.raises(dg.ArgumentTypeError, match="items is a generator function"):
        dg.jit(items)
    with pytest.raises(TypeError, match="generator"):
        dg.grad(items)


def test_a_cotangent_less_precise_than_the_output_is_refused():
    out, pullback = dg.vjp(f, x.astype(np.float32))
    with pytest.raises(dg.ShapeMismatchError, match="float16, less precise than the output's "
                                                    "float32"):
        pullback(np.ones(3, np.float16))
    (ct,) = pullback(np.ones(3))  # a more precise one is rounded to the output's type
    assert ct.dtype == np.float32
    np.testing.assert_allclose(ct, f_prime(x), rtol=1e-6)


def test_a_complex64_cotangent_of_a_complex128_output_is_refused():
    z = np.array([1 + 1j, 0.5 - 2j])
    _, pullback = dg.vjp(lambda v: v * v, z)
    with pytest.raises(dg.ShapeMismatchError, match="complex64"):
        pullback(np.ones(2, np.complex64))


# ------------------------------------------------------------------------------ scalars
@pytest.mark.parametrize("tangent", [np.complex128(1j), 1j, np.complex64(0.5 + 1j)])
def test_complex_scalar_tangents_are_accepted(tangent):
    z = np.complex128(1 + 2j)
    out, t = dg.jvp(lambda v: v * v, (z,), (tangent,))
    assert out == z * z
    np.testing.assert_allclose(t, 2 * z * tangent, rtol=1e-7)


@pytest.mark.parametrize("tangent", [np.float64(1.5), 1.5, np.float32(1.5), 2])
def test_real_scalar_tangents_are_accepted(tangent):
    _, t = dg.jvp(f, (np.float64(0.7),), (tangent,))
    np.testing.assert_allclose(t, f_prime(0.7) * tangent, rtol=1e-15)


# ------------------------------------------------------------------------------ across jit
def test_a_pullback_called_inside_jit_and_grad():
    _, pullback = dg.vjp(f, x)
    ct = np.array([1.0, 2.0, -1.0])
    np.testing.assert_allclose(dg.jit(lambda c: pullback(c)[0])(ct), f_prime(x) * ct,
                               rtol=1e-15)
    g = dg.grad(lambda c: np.sum(pullback(c)[0] ** 2))(ct)
    np.testing.assert_allclose(g, 2 * f_prime(x) ** 2 * ct, rtol=1e-14)
    inside = dg.jit(lambda v, c: dg.vjp(f, v)[1](c)[0])
    np.testing.assert_allclose(inside(x, ct), f_prime(x) * ct, rtol=1e-15)


# ------------------------------------------------------------------------------ linearize
def test_linearize_is_the_jvp_at_a_fixed_point():
    y = np.array([1.5, 0.25, -2.0])
    out, f_jvp = dg.linearize(lambda a, b: np.sin(a) * b, x, y)
    np.testing.assert_allclose(out, np.sin(x) * y, rtol=1e-15)
    for ta, tb in [(np.ones(3), np.zeros(3)), (np.zeros(3), np.ones(3)), (x, y)]:
        np.testing.assert_allclose(f_jvp(ta, tb), np.cos(x) * y * ta + np.sin(x) * tb,
                                   rtol=1e-14)
    with pytest.raises(dg.ShapeMismatchError, match="one tangent per primal"):
        f_jvp(np.ones(3))


def test_linearize_of_a_pytree_matches_central_differences():
    p = {"w": x, "b": 0.3}
    out, f_jvp = dg.linearize(lambda q: np.tanh(q["w"] * 2.0 + q["b"]), p)
    t = {"w": np.array([0.1, -0.2, 0.3]), "b": np.float64(0.5)}
    eps = 1e-6
    shifted = [np.tanh((x + s * eps * t["w"]) * 2.0 + 0.3 + s * eps * 0.5) for s in (1, -1)]
    np.testing.assert_allclose(f_jvp(t), (shifted[0] - shifted[1]) / (2 * eps), rtol=1e-7)


def test_linearize_takes_the_branch_its_values_take():
    """A derivative transform traces on the values (as jvp): its value came from dg.jit,
    which refused a Python branch on them (scipy.linalg.expm's squarings too)."""
    f = lambda v, k: (np.sin(v) if np.sum(v) > 0 else np.cos(v)) * k  # noqa: E731
    for v in (x, -x):
        out, f_jvp = dg.linearize(f, v, 2)
        want = dg.jvp(f, (v, 2), (x, np.zeros((), dg.float0)))
        np.testing.assert_array_equal(out, want[0])
        np.testing.assert_array_equal(f_jvp(x, np.zeros((), dg.float0)), want[1])


# ------------------------------------------------------------------------------ vmap out_axes
def test_vmap_out_axes_none_on_a_mapped_output_is_a_value_error_naming_it():
    # JAX raises ValueError: an output that depends on the mapped input has no single value
    shared_and_mapped = dg.vmap(lambda v, w: (np.sum(w), v * 2), in_axes=(0, None),
                                out_axes=(None, None))
    with pytest.raises(dg.InvalidArgumentError, match="out_axes is None for output 1") as e:
        shared_and_mapped(np.ones((3, 2)), np.arange(2.0))
    assert isinstance(e.value, ValueError)
    # the shared output alone is fine
    np.testing.assert_allclose(
        dg.vmap(lambda v, w: np.sum(w), in_axes=(0, None), out_axes=None)(
            np.ones((3, 2)), np.arange(2.0)), 1.0)


# ------------------------------------------------------------------------------ float0
def _is_float0_zeros(a, shape):
    return a.dtype == dg.float0 and a.shape == shape


def test_an_integer_output_has_a_float0_tangent():
    """JAX: the tangent of an integer (or bool) output is a float0 array of its shape."""
    (y, k), (ty, tk) = dg.jvp(lambda x: (x * 2, np.argmax(x, axis=0)),
                              (np.ones((3, 2)),), (np.ones((3, 2)),))
    np.testing.assert_allclose(ty, 2 * np.ones((3, 2)))
    assert _is_float0_zeros(tk, (2,)) and k.dtype == np.int64
    _, f_jvp = dg.linearize(lambda x: x > 0.5, np.ones(4))
    assert _is_float0_zeros(f_jvp(np.ones(4)), (4,))


def test_jvp_takes_a_float0_tangent_for_an_integer_primal():
    n = np.array([3, 4])
    out, t = dg.jvp(lambda v, k: np.sin(v) * k, (x[:2], n),
                    (np.ones(2), np.zeros(2, dtype=dg.float0)))
    np.testing.assert_allclose(out, np.sin(x[:2]) * n, rtol=1e-15)
    np.testing.assert_allclose(t, np.cos(x[:2]) * n, rtol=1e-15)
    # a Python int primal: a 0-d float0 tangent
    _, t = dg.jvp(lambda v, k: v * k, (x, 3), (np.ones(3), np.zeros((), dtype=dg.float0)))
    np.testing.assert_allclose(t, 3.0)


def test_jvp_refuses_a_numeric_tangent_for_an_integer_primal_naming_float0():
    with pytest.raises(dg.ArgumentTypeError, match=r"argument 1 .*float0.*np\.zeros\(\(2,\)"):
        dg.jvp(lambda v, k: v * k, (x[:2], np.array([3, 4])), (np.ones(2), np.zeros(2)))
    with pytest.raises(dg.ArgumentTypeError, match="float0"):
        dg.jvp(lambda v, k: v * k, (x[:2], np.array([3, 4])),
               (np.ones(2), np.zeros(3, dtype=dg.float0)))


def test_vjp_returns_a_float0_cotangent_for_an_integer_primal():
    n = np.array([3, 4])
    out, pullback = dg.vjp(lambda v, k: np.sin(v) * k, x[:2], n)
    ct_v, ct_n = pullback(np.ones(2))
    np.testing.assert_allclose(ct_v, np.cos(x[:2]) * n, rtol=1e-15)
    assert _is_float0_zeros(ct_n, (2,))
    (ct_b,) = dg.vjp(lambda b: np.where(b, 2.0, 1.0), np.array([True, False]))[1](np.ones(2))
    assert _is_float0_zeros(ct_b, (2,))


@pytest.mark.parametrize("jac", [dg.jacrev, dg.jacfwd])
def test_jacobians_with_allow_int_give_float0_blocks_of_the_block_shape(jac):
    n = np.array([3, 4])
    (j_vv, j_vn), (j_sv, j_sn) = jac(lambda v, k: (v * k, np.sum(v ** 2)), (0, 1),
                                     allow_int=True)(x[:2], n)
    np.testing.assert_allclose(j_vv, np.diag(n.astype(float)), rtol=1e-15)
    np.testing.assert_allclose(j_sv, 2 * x[:2], rtol=1e-15)
    assert _is_float0_zeros(j_vn, (2, 2)) and _is_float0_zeros(j_sn, (2,))
    with pytest.raises(dg.IntegerInputError, match="allow_int"):
        jac(lambda v, k: v * k, (0, 1))(x[:2], n)


# ------------------------------------------------------------------------------ linear_transpose
class ShapeDtype:  # what jax.ShapeDtypeStruct is: only shape and dtype are read
    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, np.dtype(dtype)


def test_linear_transpose_of_jaxs_example_keeps_the_primals_dtypes():
    scalar = ShapeDtype((), np.float32)
    f_t = dg.linear_transpose(lambda a, b: 0.5 * a - 0.5 * b, scalar, scalar)
    a_bar, b_bar = f_t(np.float32(1.0))
    assert a_bar.dtype == b_bar.dtype == np.float32
    assert (float(a_bar), float(b_bar)) == (0.5, -0.5)


def test_linear_transpose_is_the_matrix_transpose_on_pytrees():
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((4, 3)), rng.standard_normal((2, 5))

    def lin(p, w):  # linear in both arguments together
        return {"y": A @ p["u"] + np.sum(w) * np.ones(4), "z": (B @ p["v"].T).T * 2.0}

    primals = ({"u": np.zeros(3), "v": np.zeros((6, 5))}, np.zeros(2))
    ct = {"y": rng.standard_normal(4), "z": rng.standard_normal((6, 2))}
    p_bar, w_bar = dg.linear_transpose(lin, *primals)(ct)
    np.testing.assert_allclose(p_bar["u"], A.T @ ct["y"], rtol=1e-13)
    np.testing.assert_allclose(p_bar["v"], 2.0 * ct["z"] @ B, rtol=1e-13)
    np.testing.assert_allclose(w_bar, np.full(2, ct["y"].sum()), rtol=1e-13)
    # the defining identity <lin(x), c> == <x, lin_t(c)> at a random x
    u, v, w = rng.standard_normal(3), rng.standard_normal((6, 5)), rng.standard_normal(2)
    out = lin({"u": u, "v": v}, w)
    lhs = out["y"] @ ct["y"] + np.sum(out["z"] * ct["z"])
    rhs = u @ p_bar["u"] + np.sum(v * p_bar["v"]) + w @ w_bar
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12)


def test_linear_transpose_of_an_unused_argument_is_zero_and_is_cached():
    f_t = dg.linear_transpose(lambda a, b: 3.0 * a, np.zeros(2), np.zeros(3))
    a_bar, b_bar = f_t(np.ones(2))
    np.testing.assert_array_equal(a_bar, [3.0, 3.0])
    np.testing.assert_array_equal(b_bar, np.zeros(3))
    np.testing.assert_array_equal(f_t(np.array([1.0, -1.0]))[0], [3.0, -3.0])


@pytest.mark.parametrize("nonlinear, what", [
    (lambda v: v * v, "not linear in argument 0"),
    (np.sin, "not linear in argument 0"),
    (lambda v: np.where(v > 0, v, 0.0), "not linear in argument 0"),
    (lambda v: 2.0 * v + 1.0, "affine"),
])
def test_linear_transpose_refuses_a_nonlinear_function(nonlinear, what):
    with pytest.raises(dg.InvalidArgumentError, match=what):
        dg.linear_transpose(nonlinear, np.zeros(3))


def test_linear_transpose_refuses_mixed_integer_primals_and_bad_cotangents():
    # JAX (test_linear_transpose_integer): integer -> integer maps transpose; mixed do not
    with pytest.raises(dg.ArgumentTypeError, match="mix integer and floating"):
        dg.linear_transpose(lambda v, w: v + w, np.zeros(3, dtype=np.int64), np.zeros(3))
    with pytest.raises(dg.ArgumentTypeError, match="dtype float64, but the arguments are int"):
        dg.linear_transpose(lambda v: 0.5 * v, np.zeros(3, dtype=np.int64))
    with pytest.raises(dg.ShapeMismatchError, match="shape"):
        dg.linear_transpose(lambda v: 2.0 * v, np.zeros(3))(np.ones(4))


def test_linear_transpose_called_inside_jit():
    f_t = dg.linear_transpose(lambda v: np.cumsum(v), np.zeros(3))
    np.testing.assert_allclose(dg.jit(lambda c: f_t(c)[0])(np.ones(3)), [3.0, 2.0, 1.0])


# ------------------------------------------------------------------------------ nested jit
def test_a_jitted_function_inside_a_retraced_outer_function_is_traced_once():
    traces = []

    def body(v):
        traces.append(1)
        return np.sin(v) * 2.0

    inner = dg.jit(body)
    outer_grad = dg.grad(lambda v, k: k * np.sum(inner(v)))
    for k in range(1, 5):  # a new static k: the outer function is traced again each time
        np.testing.assert_allclose(outer_grad(x, k), 2.0 * k * np.cos(x), rtol=1e-15)
    for k in range(1, 4):
        np.testing.assert_allclose(dg.jit(lambda v, k: inner(v) * k)(x, k),
                                   2.0 * k * np.sin(x), rtol=1e-15)
    assert len(traces) == 1


def test_an_inlined_jit_still_sees_a_changed_global_and_enclosing_values():
    scale = {"s": 2.0}

    def body(v):
        return v * scale["s"]

    inner = dg.jit(body)
    np.testing.assert_allclose(dg.jit(lambda v: inner(v) + 0.0)(x), 2.0 * x)
    scale["s"] = 3.0  # a value the function reads from outside its arguments
    np.testing.assert_allclose(dg.jit(lambda v: inner(v) + 1.0)(x), 3.0 * x + 1.0)
    # a function reading a value of the enclosing trace is rebuilt in each trace
    np.testing.assert_allclose(dg.grad(lambda w: np.sum(dg.jit(lambda v: v * w)(x)))(x), x)
    np.testing.assert_allclose(dg.grad(lambda w: np.sum(dg.jit(lambda v: v * w)(x)))(2 * x), x)


def test_a_pullback_is_the_derivative_where_vjp_was_called():
    """As JAX's (whose arrays cannot change): a pullback, ``linearize``'s ``f_jvp`` and a
    ``linear_transpose`` keep the values of their call, whatever is changed in place after
    it, the argument or an array the function closed over (found by the call-sequence
    fuzzer: the pullback read both when it ran, and so did f_jvp); a new vjp sees the new
    values (tests/api/test_linearize_held.py: f_jvp under jit, vmap, export...)."""
    G = np.array([[1.0, 0.0], [0.0, 3.0], [2.0, 0.0]])
    x = np.array([0.3, -0.7, 1.1])

    def h(x):
        return np.sum(np.sin(x @ G) ** 3)

    _, pullback = dg.vjp(h, x)
    _, f_jvp = dg.linearize(h, x)
    transpose = dg.linear_transpose(lambda v: G @ v, np.zeros(2))
    want = (pullback(1.0)[0], f_jvp(np.ones(3)), transpose(np.ones(3))[0])
    x0, G0 = x.copy(), G.copy()
    x[:] = 2.0
    for g, w in zip((pullback(1.0)[0], f_jvp(np.ones(3)), transpose(np.ones(3))[0]), want):
        np.testing.assert_array_equal(g, w)
    G[...] = -1.0
    for g, w in zip((pullback(1.0)[0], f_jvp(np.ones(3)), transpose(np.ones(3))[0]), want):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_allclose(want[0], 3 * G0 @ (np.sin(x0 @ G0) ** 2 * np.cos(x0 @ G0)))
    assert not np.allclose(dg.vjp(h, x)[1](1.0)[0], want[0])
    # index arrays and masks the function closed over, too
    idx, mask = np.array([0, 1]), np.array([True, False])
    _, pullback = dg.vjp(lambda x: np.sum(x[idx] * np.array([1.0, 10.0]))
                         + np.sum(np.where(mask, x, 0.0)), np.array([1.0, 2.0]))
    idx[:], mask[:] = 1, [False, True]
    np.testing.assert_array_equal(pullback(1.0)[0], [2.0, 10.0])
