"""Issue 12, item 3: each transform's program computes only what the call returns."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import dualgpu as dg
from benchmarks.mlp import TINY, make_inputs, make_loss, reference  # noqa: E402
from dualgpu.ops.products import matmul


def _counts(graph):
    return len(graph.eqns), sum(e.prim is matmul for e in graph.eqns)


@pytest.fixture(scope="module")
def mlp():
    p, X, Y, v = (a.astype(np.float64) for a in make_inputs(np, TINY, 1)[0])
    return make_loss(TINY), (p, X, Y, v)


def test_hvp_program_returns_only_the_products(mlp):
    loss, args = mlp
    g = dg.trace(dg.hvp(loss), *args)
    assert [tuple(o.shape) for o in g.outputs] == [(TINY.n_params,)]


def test_pruned_mlp_hvp_counts(mlp):
    """The value and the gradient's own tail are gone: 80 -> 68 equations, 13 -> 11
    matmuls (benchmarks/NOTES.md, issue 12) before GEMM stacking."""
    loss, args = mlp
    hvp_eqns, hvp_mm = _counts(dg.trace(dg.hvp(loss), *args))
    gh_eqns, gh_mm = _counts(dg.trace(dg.grad_and_hvp(loss), *args))
    ghv_eqns, ghv_mm = _counts(dg.trace(dg.grad_and_hvp(loss, return_value=True), *args))
    assert (hvp_eqns, hvp_mm) == (68, 11)
    assert gh_mm == ghv_mm == 13
    assert hvp_eqns < gh_eqns < ghv_eqns


@pytest.mark.parametrize("return_value", [False, True])
def test_grad_and_hvp_results_unchanged(mlp, return_value):
    loss, args = mlp
    grad_ref, hvp_ref = reference(np, TINY, *args)
    res = dg.grad_and_hvp(loss, return_value=return_value)(*args)
    if return_value:
        value, *res = res
        np.testing.assert_allclose(value, loss(*args[:3]), rtol=1e-12)
    np.testing.assert_allclose(res[0], grad_ref, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(res[1], hvp_ref, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(dg.hvp(loss)(*args), hvp_ref, rtol=1e-10, atol=1e-14)


def test_pruned_outputs_with_aux_and_tuples():
    def f(x, y):
        return np.sum(np.sin(x) * y ** 2), {"m": np.max(x)}

    x, y = np.linspace(0.1, 1.0, 4), np.linspace(1.0, 2.0, 4)
    vx, vy = np.ones(4), np.full(4, 0.5)
    hv, aux = dg.hvp(f, argnums=(0, 1), has_aux=True)(x, y, (vx, vy))
    g, hv2, aux2 = dg.grad_and_hvp(f, argnums=(0, 1), has_aux=True)(x, y, (vx, vy))
    value, g3, hv3, _ = dg.grad_and_hvp(f, argnums=(0, 1), has_aux=True,
                                        return_value=True)(x, y, (vx, vy))
    assert aux == aux2 == {"m": 1.0}
    np.testing.assert_allclose(value, np.sum(np.sin(x) * y ** 2))
    for a, b, c in zip(hv, hv2, hv3):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    np.testing.assert_allclose(g[0], np.cos(x) * y ** 2)
    np.testing.assert_array_equal(g[1], g3[1])


def test_batched_hvp_pruned():
    def f(x, mu):
        return np.exp(-np.sum((x - mu[:, None]) ** 2, axis=0))

    x, mu, v = np.ones((3, 5)) * 0.3, np.array([0.1, 0.2, 0.3]), np.ones((3, 5))
    g = dg.trace(dg.hvp(f, batch_axes=(1,)), x, mu, v)
    assert len(g.outputs) == 1
    hv = dg.hvp(f, batch_axes=(1,))(x, mu, v)
    _, hv2 = dg.grad_and_hvp(f, batch_axes=(1,))(x, mu, v)
    np.testing.assert_array_equal(hv, hv2)
    counts = collections.Counter(e.prim.name for e in g.eqns)
    assert counts["reduce_sum"] <= 2
