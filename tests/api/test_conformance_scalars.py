"""Scalars as JAX users pass them (issue 25): Python floats under ``jit`` are traced, weakly
typed 0-d values (a new value reuses the program); ``static_argnums`` / ``static_argnames``
make arguments static; ints stay static. References are NumPy and closed forms."""
import collections
import inspect
import warnings

import numpy as np
import pytest

import dualgpu as dg

x = np.array([0.5, -1.0, 2.0])
x32 = x.astype(np.float32)


class Counted:
    """``fn`` with a count of its Python calls (one per trace). The count lives in a deque:
    an object the cache's guards compare by identity (a changed int attribute would be a
    changed outside value, and trace again)."""

    def __init__(self, fn):
        self.fn, self.traces = fn, collections.deque()
        self.__signature__ = inspect.signature(fn)  # static_argnames pair with positions

    calls = property(lambda self: len(self.traces))

    def __call__(self, *args, **kwargs):
        self.traces.append(None)
        return self.fn(*args, **kwargs)


def euler_step(y, dt):
    return y + dt * (-y)


# ------------------------------------------------------------------------------ traced floats
def test_a_new_float_reuses_the_program():
    f = Counted(lambda v, dt: v + dt * np.sin(v))
    step = dg.jit(f)
    for i in range(12):
        dt = 0.01 * (i + 1)
        np.testing.assert_array_equal(step(x, dt), x + dt * np.sin(x))
    assert f.calls == 1


def test_an_ode_loop_traces_once_and_matches_the_closed_form():
    f = Counted(euler_step)
    step, y, t, n = dg.jit(f), np.array([1.0, 2.0]), 0.0, 200
    for k in range(n):
        dt = 0.5 / n * (1 + 0.5 * np.sin(k))  # a varying Python float time step
        y, t = step(y, float(dt)), t + float(dt)
    assert f.calls == 1
    np.testing.assert_allclose(y, np.array([1.0, 2.0]) * np.exp(-t), rtol=5e-3)


@pytest.mark.parametrize("c", [0.1, -0.0, 3.0, 1e-30])
def test_python_floats_are_weakly_typed_as_numpy_literals(c):
    f = dg.jit(lambda v, s: v * s + s * 2.0 - np.where(v > s, v, s))
    want = x32 * c + c * 2.0 - np.where(x32 > c, x32, c)
    got = f(x32, c)
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def test_complex_python_scalars_are_weakly_typed():
    z = (x + 1j * x[::-1]).astype(np.complex64)
    got = dg.jit(lambda v, s: v * s)(z, 0.5 - 2j)
    assert got.dtype == np.complex64
    np.testing.assert_array_equal(got, z * (0.5 - 2j))


def test_numpy_scalars_are_traced_with_their_dtype():
    f = Counted(lambda v, s: v * s)
    g = dg.jit(f)
    for s in (np.float64(0.5), np.float64(2.0)):
        got = g(x32, s)
        assert got.dtype == (x32 * s).dtype == np.float64
        np.testing.assert_array_equal(got, x32 * s)
    assert f.calls == 1


def test_traced_float_keywords_and_pytree_leaves():
    f = Counted(lambda v, p, scale=1.0: scale * np.sum(v * p["a"]) + p["b"])
    g = dg.jit(f)
    for s in (1.0, 2.0, -3.5):
        assert float(g(x, {"a": x, "b": s}, scale=s)) == pytest.approx(
            s * np.sum(x * x) + s, rel=1e-15)
    assert f.calls == 1


def test_grad_under_jit_of_a_traced_float():
    g = dg.jit(dg.grad(lambda v, c: c * np.sum(v ** 2)))
    for c in (0.5, 1.5):
        np.testing.assert_allclose(g(x, c), 2 * c * x, rtol=1e-15)


def test_a_jitted_function_of_a_float_inside_grad():
    f = dg.jit(lambda v, c: np.sum(np.sin(v) * c))
    np.testing.assert_allclose(dg.grad(lambda v: f(v, 0.3))(x), 0.3 * np.cos(x), rtol=1e-15)


def test_ints_stay_static_for_shapes_and_loop_counts():
    def power(v, n):
        out = np.ones_like(v)
        for _ in range(n):
            out = out * v
        return np.reshape(out, (n, -1)) if n == 3 else out

    f = dg.jit(power)
    np.testing.assert_array_equal(f(x, 2), x ** 2)
    np.testing.assert_array_equal(f(x, 3), np.reshape(x ** 3, (3, 1)))


# ------------------------------------------------------------------------------ static args
def branchy(v, p):
    return v ** 2 if p > 1.5 else v * p


def test_branching_on_a_traced_float_says_how_to_make_it_static():
    with pytest.raises(dg.TracerControlFlowError, match=r"static_argnums=\(1,\)"):
        dg.jit(branchy)(x, 2.0)


@pytest.mark.parametrize("options", [{"static_argnums": 1}, {"static_argnums": (-1,)},
                                     {"static_argnames": "p"}, {"static_argnames": ("p",)}])
def test_static_arguments_are_keyed_by_value(options):
    f = Counted(branchy)
    g = dg.jit(f, **options)
    for p in (2.0, 1.0, 2.0, 0.5):
        np.testing.assert_array_equal(g(x, p), branchy(x, p))
        np.testing.assert_array_equal(g(x, p=p), branchy(x, p))
    assert f.calls == 3 * 2  # one trace per value, positional and keyword calls apart


def test_static_argnums_as_a_decorator_with_options():
    @dg.jit(static_argnums=1)
    def scaled(v, mode):
        return v * 2.0 if mode == "double" else v

    np.testing.assert_array_equal(scaled(x, "double"), 2 * x)
    np.testing.assert_array_equal(scaled(x, "same"), x)


def test_an_array_as_a_static_argument_is_refused():
    with pytest.raises(dg.ArgumentTypeError, match="argument 1 is static"):
        dg.jit(lambda v, w: v * w, static_argnums=1)(x, x)


def test_bad_static_options_are_refused():
    with pytest.raises(dg.ArgumentTypeError, match="static_argnames"):
        dg.jit(branchy, static_argnames=1)
    with pytest.raises(dg.ArgumentTypeError, match="argnums"):
        dg.jit(branchy, static_argnums="p")


def test_a_static_argument_that_keeps_changing_warns_with_the_function_name():
    g = dg.jit(branchy, static_argnums=1)
    with pytest.warns(UserWarning, match="jit_branchy has been traced 8 times"):
        for i in range(9):
            g(x, 2.0 + i)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h = dg.jit(lambda v, dt: v * dt)
        for i in range(20):  # traced floats: no retrace, no warning
            h(x, 0.1 * i)
