"""Composed transforms, pytrees and the call cache on CuPy (fused kernels and CUDA-graph
replay), each against the NumPy backend."""
from __future__ import annotations

import numpy as np
import pytest
from gpu_device import cupy_or_skip

import dualgpu as dg

cp = cupy_or_skip()


def f(x):
    return cp.sum(cp.sin(x) ** 3) if isinstance(x, cp.ndarray) else np.sum(np.sin(x) ** 3)


def loss(x):
    return np.sum(np.sin(x) ** 3)


x_np = np.linspace(-1.0, 2.0, 7)
v_np = np.linspace(0.5, 1.5, 7)


def _close(got, want):
    assert isinstance(got, cp.ndarray)
    np.testing.assert_allclose(cp.asnumpy(got), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("make", [
    lambda: dg.jit(dg.grad(loss)),
    lambda: dg.grad(dg.jit(loss)),
    lambda: dg.grad(lambda x: np.sum(dg.grad(loss)(x) ** 2)),
    lambda: dg.grad(lambda x: loss(x) + np.sum(dg.grad(loss)(x) ** 2)),
])
def test_compositions_match_numpy(make):
    want = make()(x_np)
    _close(make()(cp.asarray(x_np)), want)


def test_hvp_of_jit_and_vjp_of_grad():
    x, v = cp.asarray(x_np), cp.asarray(v_np)
    _close(dg.hvp(dg.jit(loss))(x, v), dg.hvp(loss)(x_np, v_np))
    _, pullback = dg.vjp(dg.grad(loss), x)
    _close(pullback(v)[0], dg.hvp(loss)(x_np, v_np))


def test_a_pullback_keeps_the_values_of_its_vjp_call():
    """CuPy arrays changed in place after dg.vjp, the argument and one the function closed
    over: the pullback (fused, replayed the second time) is the derivative at the vjp's
    values, as on NumPy."""
    G = cp.asarray(np.linspace(-1.0, 1.0, 14).reshape(7, 2))
    x = cp.asarray(x_np)

    def h(x):
        return cp.sum(cp.sin(x @ G) ** 3)

    _, pullback = dg.vjp(h, x)
    want = cp.asnumpy(pullback(1.0)[0])
    G0 = cp.asnumpy(G)
    want_np = dg.vjp(lambda y: np.sum(np.sin(y @ G0) ** 3), x_np)[1](1.0)[0]
    np.testing.assert_allclose(want, want_np, rtol=1e-12, atol=1e-12)
    x[...] = 2.0
    G[...] = -1.0
    for _ in range(2):
        _close(pullback(1.0)[0], want_np)


def test_f_jvp_keeps_the_values_of_its_linearize_call():
    """linearize's f_jvp on CuPy: the point and a closed-over CuPy array changed in place
    afterwards, also through dg.jit of f_jvp (replayed): the derivative at the linearize
    call's values, as on NumPy."""
    G = cp.asarray(np.linspace(-1.0, 1.0, 14).reshape(7, 2))
    x = cp.asarray(x_np)
    t_np = np.linspace(0.5, -0.5, x_np.size).reshape(x_np.shape)

    def h(x):
        return cp.tanh(x @ G) ** 2

    _, f_jvp = dg.linearize(h, x)
    G0 = cp.asnumpy(G)
    want_np = dg.linearize(lambda y: np.tanh(y @ G0) ** 2, x_np)[1](t_np)
    _close(f_jvp(cp.asarray(t_np)), want_np)
    x[...] = 2.0
    G[...] = -1.0
    jitted = dg.jit(f_jvp)
    for _ in range(3):
        _close(f_jvp(cp.asarray(t_np)), want_np)
        _close(jitted(cp.asarray(t_np)), want_np)


def test_aliasing_and_replay_give_fresh_results():
    h = dg.hvp(loss)
    x, v = cp.asarray(x_np), cp.asarray(v_np)
    h(x, x)
    for _ in range(3):  # replayed calls read the new direction
        _close(h(x, v), dg.hvp(loss)(x_np, v_np))
    y = h(x, v)
    assert y.data.ptr not in (x.data.ptr, v.data.ptr)


def test_pytree_params_on_cupy():
    params = {"W": cp.ones((3, 2)), "b": cp.zeros(2)}
    X = cp.asarray(np.arange(6.0).reshape(2, 3))

    def mse(p, X):
        return np.sum((X @ p["W"] + p["b"]) ** 2)

    g = dg.grad(mse)(params, X)
    want = dg.grad(mse)({k: cp.asnumpy(a) for k, a in params.items()}, cp.asnumpy(X))
    for k in want:
        _close(g[k], want[k])
    params2 = {"W": 2 * params["W"], "b": params["b"] + 1}
    g2 = dg.grad(mse)(params2, X)
    want2 = dg.grad(mse)({k: cp.asnumpy(a) for k, a in params2.items()}, cp.asnumpy(X))
    for k in want2:
        _close(g2[k], want2[k])
