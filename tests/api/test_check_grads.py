"""dg.testing.check_grads: argnums, static integer arguments, functions returning tuples
and pytrees -- and it still fails on a wrong derivative in each of those cases."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg
from dualgpu import testing

X = np.linspace(0.2, 1.4, 4)
Y = np.linspace(-0.5, 0.7, 4)

# a custom op whose derivative in its first operand is wrong (the second is right)
_bad = dg.custom_op("check_grads_bad_first", lambda xp, x, y: x * y,
                    vjp=lambda g, p, ans: (2.0 * g * p[1], g * p[0]))


def test_argnums_picks_the_arguments():
    f = lambda x, y: np.sum(_bad(x, y) ** 2)  # noqa: E731
    testing.check_grads(f, (X, Y), order=1, modes=("rev",), argnums=1)
    with pytest.raises(AssertionError):
        testing.check_grads(f, (X, Y), order=1, modes=("rev",), argnums=0)
    with pytest.raises(AssertionError):
        testing.check_grads(f, (X, Y), order=1, modes=("rev",))


def test_integer_arguments_are_held_fixed():
    f = lambda x, k, flag: np.sum(x ** k) if flag else np.sum(x)  # noqa: E731
    testing.check_grads(f, (X, 3, True))
    testing.check_grads(lambda x, idx: np.sum(np.sin(x[idx])), (X, np.array([0, 2, 2])))
    with pytest.raises(dg.IntegerInputError, match="argument 1"):  # asked for explicitly
        testing.check_grads(f, (X, np.array(3), True), argnums=(0, 1))


def test_tuple_and_pytree_outputs():
    testing.check_grads(lambda x: (np.sin(x), np.sum(x ** 3)), (X,))
    testing.check_grads(lambda x: {"a": np.tanh(x), "b": [x * x]}, (X,))
    with pytest.raises(AssertionError):
        testing.check_grads(lambda x, y: (_bad(x, y), x), (X, Y), order=1, modes=("rev",))


def test_bad_argnums_are_named():
    with pytest.raises(dg.DualgpuError, match="argnum"):
        testing.check_grads(lambda x: np.sum(x), (X,), argnums=2)


@pytest.mark.parametrize("mode", ["jvp", "vjp"])
def test_check_vjp_compares_the_value_with_f(monkeypatch, mode):
    """A transform whose derivatives are right but whose value is not ``f``'s is caught,
    by check_vjp and through check_grads."""
    real = getattr(testing, mode)

    def wrong_value(*args, **kwargs):
        out, rest = real(*args, **kwargs)
        return out + 1e-6, rest

    monkeypatch.setattr(testing, mode, wrong_value)
    with pytest.raises(AssertionError, match=f"the value {mode} of sin returns"):
        testing.check_vjp(np.sin, (X,))
    with pytest.raises(AssertionError, match=f"the value {mode} of"):
        testing.check_grads(lambda x: np.tanh(x) * x, (X,), order=1)


def test_check_vjp_compares_every_output():
    testing.check_vjp(lambda x, y: {"a": np.sin(x) * y, "b": (x ** 2, np.sum(y))}, (X, Y))


def test_second_order_of_a_scipy_function_with_fixed_arguments():
    # the checker's wrappers (fixed arguments, a vector output scalarized) reach SciPy's
    # function through a closure: it is traced there as where the user calls it
    stats = pytest.importorskip("scipy.stats")
    x, a = np.array([1.5, 2.0]), np.array([2.0, 3.0])
    testing.check_grads(stats.gamma.cdf, (x, a), modes=("rev",), argnums=0)


def test_float32_arguments_get_float32_steps_and_tolerances():
    """float64's step (1e-6) differences float32 values to rounding noise: the defaults
    follow the arguments' dtype (JAX's check_grads does too), and still catch a wrong
    derivative."""
    x = np.linspace(0.1, 1.0, 5).astype(np.float32)
    dg.testing.check_grads(lambda x: np.tanh(x) * x, (x,), order=2)
    dg.testing.check_grads(lambda x: np.exp(x) @ x, (x,), order=2)
    wrong = dg.custom_jvp(lambda x: np.sin(x))
    wrong.defjvp(lambda primals, tangents: (np.sin(primals[0]), 1.01 * np.cos(primals[0])
                                            * tangents[0]))
    with pytest.raises(AssertionError, match="rtol=0.002"):
        dg.testing.check_grads(wrong, (x,), order=1, modes=("fwd",))
