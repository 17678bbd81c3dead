"""autograd's ``@primitive`` and ``defvjp`` (dualgpu.autograd_compat): a function whose
reverse derivative is given by vjp makers ``maker(ans, *args) -> (g -> cotangent)``, as
autograd's examples/define_gradient.py writes it (tests/corpus runs that program)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special

import dualgpu as dg
from dualgpu.autograd_compat import defvjp, primitive
from dualgpu.errors import InvalidArgumentError


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
