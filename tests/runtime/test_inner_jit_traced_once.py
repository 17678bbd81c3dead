"""A ``dg.jit`` function called inside another transformed function and at the top level is
traced once for both (as JAX's jit caches its trace per signature): the inlined trace and
the compiled program share it, in either order."""
from __future__ import annotations

import numpy as np

import dualgpu as dg


def _counted(fn):
    traces: list = []

    @dg.jit
    def inner(x):
        traces.append(x)
        return fn(x)

    return inner, traces


def test_traced_inside_first_then_called_at_the_top_level():
    inner, traces = _counted(np.sin)
    x = np.array([0.5, 1.0])
    g = dg.grad(lambda x: np.sum(inner(x) ** 2))
    np.testing.assert_allclose(g(x), 2 * np.sin(x) * np.cos(x), rtol=1e-14)
    np.testing.assert_allclose(inner(x), np.sin(x), rtol=1e-14)
    np.testing.assert_allclose(inner(x + 1), np.sin(x + 1), rtol=1e-14)
    dg.jit(lambda x: inner(x) + 1)(x)
    assert len(traces) == 1


def test_called_at_the_top_level_first_then_traced_inside():
    inner, traces = _counted(np.cos)
    x = np.array([0.5, 1.0])
    np.testing.assert_allclose(inner(x), np.cos(x), rtol=1e-14)
    np.testing.assert_allclose(dg.grad(lambda x: np.sum(inner(x)))(x), -np.sin(x),
                               rtol=1e-14)
    assert len(traces) == 1
    inner(np.ones(3))  # another signature: traced for it
    assert len(traces) == 2
