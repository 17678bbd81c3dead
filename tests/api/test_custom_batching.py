"""Custom functions under vmap (api/custom_batching.py): vmap of a custom_jvp / custom_vjp
function, an autograd primitive or a custom op is one custom op of the batched body and
batched rules, not one equation per example; a body that runs on values keeps the
per-example loop. Values and derivatives (grad of vmap, vmap of grad, jacfwd, jacrev, hvp)
agree with the loop's and with finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.api.custom_op import CustomPrimitive
from dualgpu.autograd_compat import defvjp, primitive

X = np.linspace(0.3, 1.4, 6).reshape(3, 2)
W = np.array([0.7, -1.2])


@dg.custom_jvp
def scaled_sin(w, x):
    return w * np.sin(x)


@scaled_sin.defjvp
def _scaled_sin_jvp(primals, tangents):
    (w, x), (dw, dx) = primals, tangents
    return scaled_sin(w, x), scaled_sin(dw, x) + w * np.cos(x) * dx  # the op on a tangent


@dg.custom_vjp
def cube_sum(w, x):
    return np.sum(w * x ** 3)


defvjp_fwd = lambda w, x: (cube_sum(w, x), (w, x))  # noqa: E731
cube_sum.defvjp(defvjp_fwd, lambda res, g: (g * res[1] ** 3, 3 * g * res[0] * res[1] ** 2))

softcube = dg.custom_op("batching_test_softcube", lambda xp, w, x: w * x ** 3 / (1 + x * x),
                        shape=lambda w, x: x,
                        vjp=lambda g, p, ans: (
                            g * p[1] ** 3 / (1 + p[1] ** 2),
                            g * p[0] * (3 * p[1] ** 2 + p[1] ** 4) / (1 + p[1] ** 2) ** 2))


@primitive
def ag_tanh(x):
    return np.tanh(x)


defvjp(ag_tanh, lambda ans, x: lambda g: g * (1 - ans ** 2))

FUNCTIONS = {
    "custom_jvp": lambda w, x: np.sum(scaled_sin(w, x) ** 2),
    "custom_vjp": lambda w, x: cube_sum(w, x) * np.sum(x),
    "custom_op": lambda w, x: np.sum(softcube(w, x) * x),
    "autograd": lambda w, x: np.sum(ag_tanh(w * x) ** 2),
}


@pytest.fixture
def loop(monkeypatch):
    """Custom ops batched example by example (the fallback) for the reference results."""
    def off():
        monkeypatch.setattr(CustomPrimitive, "batching_rule", None)
    return off


def _derivatives(f):
    """vmap of grad, grad of vmap, jacfwd and jacrev (through vmap), hvp of a vmap."""
    per_row = dg.vmap(f, in_axes=(None, 0))
    total = lambda w, x: np.sum(per_row(w, x) ** 2)  # noqa: E731
    v = np.array([0.3, -0.5])
    return [per_row(W, X),
            dg.vmap(dg.grad(f, argnums=(0, 1)), in_axes=(None, 0))(W, X),
            dg.grad(total, argnums=(0, 1))(W, X),
            dg.jacfwd(per_row)(W, X), dg.jacrev(per_row, argnums=1)(W, X),
            dg.hvp(lambda w: total(w, X))(W, v)]


def _custom_eqns(graph) -> int:
    return sum(getattr(e.prim, "custom", False) for e in graph.eqns)


@pytest.mark.parametrize("kind", sorted(FUNCTIONS))
def test_vmap_of_a_custom_function_is_one_op_and_its_derivatives_are_the_loops(kind, loop):
    f = FUNCTIONS[kind]
    graph = dg.trace(dg.vmap(dg.vmap(f, in_axes=(None, 0)), in_axes=(0, None)),
                     np.stack([W, 2 * W]), X)
    assert _custom_eqns(graph) == 1  # (the loop: 2 x 3 equations)
    got = _derivatives(f)
    loop()
    assert _custom_eqns(dg.trace(dg.vmap(f, in_axes=(None, 0)), W, X)) == 3
    for a, b in zip(got, _derivatives(f)):
        for x, y in zip(dg.tree_util.tree_leaves(a), dg.tree_util.tree_leaves(b)):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)


def test_derivatives_of_the_batched_op_agree_with_finite_differences():
    per_row = dg.vmap(lambda w, x: scaled_sin(w, x) + cube_sum(w, x) + softcube(w, x),
                      in_axes=(None, 0))
    dg.testing.check_grads(lambda w, x: np.sum(np.cos(per_row(w, x))), (W, X), order=2,
                           modes=("fwd", "rev"))


def test_a_body_that_runs_on_values_is_batched_example_by_example():
    @dg.custom_vjp
    def newton_sqrt(a):
        x = np.ones_like(a)
        while np.max(np.abs(x * x - a)) > 1e-12:  # a loop on the values: not traceable
            x = 0.5 * (x + a / x)
        return x

    newton_sqrt.defvjp(lambda a: (newton_sqrt(a), newton_sqrt(a)),
                       lambda r, g: (g / (2 * r),))
    A = np.array([[1.0, 4.0], [9.0, 2.0]])
    assert _custom_eqns(dg.trace(dg.vmap(newton_sqrt), A)) == 2
    np.testing.assert_allclose(dg.vmap(newton_sqrt)(A), np.sqrt(A))
    np.testing.assert_allclose(dg.grad(lambda a: np.sum(dg.vmap(newton_sqrt)(a)))(A),
                               0.5 / np.sqrt(A))


def test_a_pytree_output_and_integer_operands_batch():
    @dg.custom_jvp
    def pair(x, n):
        return {"s": np.sin(x) * n, "c": np.cos(x)}

    @pair.defjvp
    def _pair_jvp(primals, tangents):
        (x, n), (dx, _) = primals, tangents
        return pair(x, n), {"s": np.cos(x) * n * dx, "c": -np.sin(x) * dx}

    n = np.array([2, 3])
    f = lambda x: dg.vmap(lambda r: pair(r, n))(x)  # noqa: E731
    out = f(X)
    assert _custom_eqns(dg.trace(f, X)) == 1
    np.testing.assert_allclose(out["s"], np.sin(X) * n)
    g = dg.grad(lambda x: np.sum(f(x)["s"]) + np.sum(f(x)["c"] ** 2))(X)
    np.testing.assert_allclose(g, np.cos(X) * n - 2 * np.cos(X) * np.sin(X), rtol=1e-12)


K = 2.0


def test_the_batched_op_follows_the_globals_its_body_reads():
    global K
    op = dg.custom_op("batching_test_scaled", lambda xp, x: K * x, shape=lambda a: a)
    np.testing.assert_allclose(dg.vmap(op)(X), 2 * X)
    K = 5.0
    try:
        np.testing.assert_allclose(dg.vmap(op)(X), 5 * X)
    finally:
        K = 2.0


def test_an_empty_batch_is_the_batched_op_of_no_examples():
    # refused before ('no batching rule ... size 0'), as the per-example loop must refuse
    Z = np.zeros((0, 2))
    f = dg.vmap(scaled_sin, in_axes=(None, 0))
    assert f(W, Z).shape == (0, 2)
    assert dg.grad(lambda x: np.sum(f(W, x)))(Z).shape == (0, 2)
    np.testing.assert_array_equal(dg.grad(lambda w: np.sum(f(w, Z)))(W), np.zeros(2))
