"""Activations and losses of dg.nn: values against reference formulas, derivatives to second
order against finite differences, and numerical stability at |x| = 1000."""
import math

import numpy as np
import pytest
import scipy.special as ss

import dualgpu as dg
from dualgpu.testing import check_grads

X = np.array([-2.3, -0.7, -0.2, 0.4, 1.1, 2.9])  # away from the kinks at 0
BIG = np.array([-1000.0, -30.0, 0.5, 30.0, 1000.0])


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


REFERENCE = {
    "sigmoid": (dg.nn.sigmoid, ss.expit),
    "tanh": (dg.nn.tanh, np.tanh),
    "relu": (dg.nn.relu, lambda x: np.maximum(x, 0)),
    "leaky_relu": (dg.nn.leaky_relu, lambda x: np.where(x > 0, x, 0.01 * x)),
    "elu": (dg.nn.elu, lambda x: np.where(x > 0, x, np.expm1(x))),
    "selu": (dg.nn.selu, lambda x: 1.0507009873554805 * np.where(
        x > 0, x, 1.6732632423543772 * np.expm1(x))),
    "gelu": (dg.nn.gelu, lambda x: 0.5 * x * (1 + ss.erf(x / math.sqrt(2)))),
    "gelu_tanh": (lambda x: dg.nn.gelu(x, approximate=True), _gelu_tanh),
    "silu": (dg.nn.silu, lambda x: x * ss.expit(x)),
    "softplus": (dg.nn.softplus, lambda x: np.log1p(np.exp(x))),
    "mish": (dg.nn.mish, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    "hard_tanh": (dg.nn.hard_tanh, lambda x: np.clip(x, -1, 1)),
    "softmax": (dg.nn.softmax, lambda x: ss.softmax(x, axis=-1)),
    "log_softmax": (dg.nn.log_softmax, lambda x: ss.log_softmax(x, axis=-1)),
    "logsumexp": (dg.nn.logsumexp, ss.logsumexp),
    "logit": (lambda x: dg.nn.logit(ss.expit(x) * 0 + 0.5 + 0.1 * np.tanh(x)),
              lambda x: ss.logit(0.5 + 0.1 * np.tanh(x))),
}


@pytest.mark.parametrize("name", list(REFERENCE))
def test_activation_value_and_derivatives(name):
    ours, ref = REFERENCE[name]
    np.testing.assert_allclose(ours(X), ref(X), rtol=1e-12, atol=1e-14)
    traced = dg.jit(lambda x: ours(x))(X)
    np.testing.assert_allclose(traced, ref(X), rtol=1e-12, atol=1e-14)
    check_grads(ours, (X,), order=2)
    check_grads(lambda x: np.sum(ours(x) ** 2), (X,), order=2)


@pytest.mark.parametrize("name", ["softplus", "logsumexp", "log_softmax", "softmax",
                                  "sigmoid", "silu", "mish", "gelu", "elu", "selu"])
def test_stable_at_large_inputs(name):
    ours, _ = REFERENCE[name]
    f = lambda x: np.sum(ours(x) * np.linspace(0.5, 1.5, x.size))
    value = ours(BIG)
    g = dg.grad(f)(BIG)
    hv = dg.hvp(f)(BIG, np.ones_like(BIG))
    for arr in (value, g, hv):
        assert np.all(np.isfinite(arr)), (name, arr)


def test_stable_forms_match_exact_values_at_1000():
    np.testing.assert_allclose(dg.nn.softplus(BIG), [0, 9.357622968839299e-14, 0.9740769841801067,
                                                      30.000000000000092, 1000.0], rtol=1e-12)
    np.testing.assert_allclose(dg.nn.logsumexp(np.array([1000.0, 1000.0])),
                               1000 + math.log(2), rtol=1e-15)
    np.testing.assert_allclose(dg.nn.log_softmax(np.array([1000.0, 0.0, -1000.0])),
                               [0.0, -1000.0, -2000.0])
    g = dg.grad(lambda x: dg.nn.logsumexp(x))(np.array([1000.0, 1000.0]))
    np.testing.assert_allclose(g, [0.5, 0.5])


def test_reductions_along_axes_and_keepdims():
    x = np.random.default_rng(0).standard_normal((3, 4))
    for axis in (0, 1, (0, 1), None):
        for keepdims in (False, True):
            got = dg.nn.logsumexp(x, axis=axis, keepdims=keepdims)
            np.testing.assert_allclose(got, ss.logsumexp(x, axis=axis, keepdims=keepdims))
            check_grads(lambda x, a=axis, k=keepdims: dg.nn.logsumexp(x, axis=a, keepdims=k),
                        (x,))
    np.testing.assert_allclose(dg.nn.softmax(x, axis=0), ss.softmax(x, axis=0))
    check_grads(lambda x: dg.nn.log_softmax(x, axis=0), (x,))


def test_scipy_special_functions_trace_to_nn():
    x = np.random.default_rng(1).standard_normal((2, 5))

    def f(x):
        return (np.sum(ss.logsumexp(x, axis=1)) + np.sum(ss.softmax(x, axis=1) ** 2)
                + np.sum(ss.log_softmax(x, axis=0)) + np.sum(ss.expit(x))
                + np.sum(ss.xlogy(x ** 2, ss.expit(x))) + np.sum(ss.erf(x) + ss.erfc(x))
                + np.sum(ss.gammaln(x ** 2 + 1)) + np.sum(ss.logit(ss.expit(x) * 0.5 + 0.25)))

    check_grads(f, (x,), order=2)


def test_losses():
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((4, 3))
    labels = np.array([0, 2, 1, 2])
    want = -np.mean(ss.log_softmax(logits, axis=1)[np.arange(4), labels])
    np.testing.assert_allclose(dg.nn.cross_entropy(logits, labels), want)
    check_grads(lambda z: dg.nn.cross_entropy(z, labels), (logits,), order=2)

    z = rng.standard_normal(6) * 3
    t = (rng.random(6) > 0.5).astype(float)
    p = ss.expit(z)
    want = -np.mean(t * np.log(p) + (1 - t) * np.log1p(-p))
    np.testing.assert_allclose(dg.nn.binary_cross_entropy_with_logits(z, t), want)
    check_grads(lambda z: dg.nn.binary_cross_entropy_with_logits(z, t), (z,), order=2)
    big = np.array([1000.0, -1000.0])
    assert np.isfinite(dg.grad(lambda z: dg.nn.binary_cross_entropy_with_logits(
        z, np.array([0.0, 1.0])))(big)).all()

    pred, target = rng.standard_normal(5), rng.standard_normal(5)
    np.testing.assert_allclose(dg.nn.mse(pred, target), np.mean((pred - target) ** 2))
    check_grads(lambda p: dg.nn.mse(p, target), (pred,), order=2)


def test_one_layer_sigmoid_network_hvp():
    """The classic report: Dense(10 -> 1, sigmoid) on a 10 x 4 batch, params flattened."""
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((4, 10)), rng.standard_normal(4)

    def loss(params):
        w, b = params[:10], params[10]
        return dg.nn.mse(dg.nn.sigmoid(x @ w + b), y)

    check_grads(loss, (rng.standard_normal(11),), order=2)


TAIL = np.array([-40.0, -30.0, -10.0, 10.0, 30.0, 40.0])
# references accurate in the tails: SciPy's expit, log_expit and ndtr, and closed forms of
# the derivatives
TAIL_REFERENCE = {
    "sigmoid": (dg.nn.sigmoid, ss.expit),
    "log_sigmoid": (dg.nn.log_sigmoid, ss.log_expit),
    # the composite is SciPy's composite (log(1 - 4e-18) is 0), accurate for x <= 0
    "log_of_sigmoid": (lambda x: np.log(dg.nn.sigmoid(x)), lambda x: np.log(ss.expit(x))),
    # x / sqrt(2) rounds: a relative error of ~x**2 ulps at -30, in ndtr's value too
    "gelu": (dg.nn.gelu, lambda x: x * ss.ndtr(x), 1e-12),
    "gelu_tanh": (lambda x: dg.nn.gelu(x, approximate=True),
                  lambda x: x * ss.expit(2 * math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
    "silu": (dg.nn.silu, lambda x: x * ss.expit(x)),
    "elu": (dg.nn.elu, lambda x: np.where(x > 0, x, np.expm1(x))),
}
TAIL_GRADIENT = {
    "sigmoid": lambda x: ss.expit(x) * ss.expit(-x),
    "log_sigmoid": lambda x: ss.expit(-x),
    "log_of_sigmoid": lambda x: ss.expit(-x),
    "tanh": lambda x: 1 / np.cosh(x) ** 2,
    "silu": lambda x: ss.expit(x) + x * ss.expit(x) * ss.expit(-x),
    "elu": lambda x: np.where(x > 0, 1.0, np.exp(x)),
    "softplus": ss.expit,
}


@pytest.mark.parametrize("name", list(TAIL_REFERENCE))
def test_values_in_the_tails(name):
    """Where 1 - sigmoid, 1 + erf or 1 + tanh would cancel (x = -40: sigmoid is 4e-18, and
    log(sigmoid) -40), eager and traced."""
    ours, ref, *rtol = TAIL_REFERENCE[name]
    rtol = rtol[0] if rtol else 1e-13
    np.testing.assert_allclose(ours(TAIL), ref(TAIL), rtol=rtol)
    np.testing.assert_allclose(dg.jit(lambda x: ours(x))(TAIL), ref(TAIL), rtol=rtol)


@pytest.mark.parametrize("name", list(TAIL_GRADIENT))
def test_gradients_in_the_tails(name):
    """d sigmoid / dx at 40 is 4e-18 (ans * (1 - ans) gave 0), d log(sigmoid) / dx at -40 is
    1 (it was NaN), tanh' at 30 is 3.5e-26, elu' at -40 is exp(-40)."""
    ours = {**{k: v[0] for k, v in TAIL_REFERENCE.items()}, "tanh": dg.nn.tanh,
            "softplus": dg.nn.softplus}[name]
    g = dg.grad(lambda x: np.sum(ours(x)))(TAIL)
    np.testing.assert_allclose(g, TAIL_GRADIENT[name](TAIL), rtol=1e-13)
