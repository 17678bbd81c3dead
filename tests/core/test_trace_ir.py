"""Tracing, the graph IR and its printers."""
import math

import networkx as nx
import numpy
import numpy as np
import pytest

import dualgpu as dg
from dualgpu.core.ir import Aval
from dualgpu.core.trace import trace_to_graph


def helper(z):
    return numpy.tanh(z) * 2.0


def uses_helper(x):
    return np.sum(helper(x) ** 2)


def test_trace_prints_a_readable_program():
    g = dg.trace(lambda x: np.sum(np.sin(x) ** 2), np.ones(3))
    text = str(g)
    assert text.splitlines()[0] == "{ lambda x:float64[3] ."
    assert "sin x" in text and "reduce_sum" in text
    assert text.strip().endswith("}")
    g.validate()


def test_trace_follows_plain_python_helpers_and_module_aliases():
    g = dg.trace(uses_helper, np.ones((2, 3)))
    assert [e.prim.name for e in g.eqns][:2] == ["tanh", "multiply"]


def test_closure_arrays_become_constants():
    w = np.arange(3.0)

    def f(x):
        return np.sum(x * w)

    g = dg.trace(f, np.ones(3))
    assert len(g.consts) == 1 and g.consts[0].value is w
    assert "consts c0:float64[3]" in str(g)


def test_python_scalars_are_weakly_typed():
    g = dg.trace(lambda x: x * 2.0 + 1, np.ones(3, dtype=np.float32))
    assert all(v.dtype == np.float32 for e in g.eqns for v in e.outs)


def test_numpy_scalars_are_strongly_typed():
    g = dg.trace(lambda x: x * np.float64(2.0), np.ones(3, dtype=np.float32))
    assert g.outputs[0].dtype == np.float64


def test_methods_and_properties():
    def f(x):
        y = x.T.reshape(-1).sum() + x.mean(axis=0).max() + x.ravel().dot(x.ravel())
        assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6 and x.dtype == np.float64
        return y + x.astype(np.float32).astype(np.float64).min() + x.copy()[1, ::-1].sum()

    x = np.arange(6.0).reshape(2, 3)
    assert np.allclose(dg.jit(f)(x), f(x))


def test_indexing_forms():
    x = np.arange(24.0).reshape(2, 3, 4)
    cases = [lambda a: a[0], lambda a: a[:, 1:, ::-2], lambda a: a[None, ..., 1],
             lambda a: a[:, [0, 2, 2]], lambda a: a[np.array([1, 0]), :, np.array([3, 3])],
             lambda a: a[a.shape[0] - 1, -1], lambda a: a[x > 10]]
    for f in cases:
        np.testing.assert_array_equal(dg.jit(f)(x), f(x))


def test_operators():
    x = np.linspace(0.5, 2.0, 4)
    f = lambda a: (-a + 1) * 2 / a - a ** 2 + 3 ** a + abs(a - 1) @ a + (a > 1) * 1.0
    np.testing.assert_allclose(dg.jit(f)(x), f(x))


def test_graph_exports():
    g = dg.trace(lambda x, y: np.sum(np.exp(x) * y), np.ones(2), np.ones(2))
    dg_nx = g.nx
    assert isinstance(dg_nx, nx.DiGraph)
    assert nx.is_directed_acyclic_graph(dg_nx)
    assert dg_nx.nodes["x"]["kind"] == "input"
    dot = g.to_dot()
    assert dot.startswith('digraph "<lambda>"') and "exp" in dot and dot.rstrip().endswith("}")


def test_validate_catches_a_wrong_shape():
    g = dg.trace(lambda x: np.sin(x), np.ones(3))
    g.eqns[0].outs[0].aval = Aval((4,), np.dtype(np.float64))
    with pytest.raises(dg.DualgpuError, match="sin"):
        g.validate()


def test_trace_of_transformed_function_is_the_derivative_program():
    f = lambda x: np.sum(np.sin(x))
    g = dg.trace(dg.grad_and_hvp(f, return_value=True), np.ones(3), np.ones(3))
    names = [e.prim.name for e in g.eqns]
    assert "sin" in names and "cos" in names and len(g.outputs) == 3
    # hvp alone computes neither the value nor the gradient (H·v = -sin(x) v)
    h = dg.trace(dg.hvp(f), np.ones(3), np.ones(3))
    assert len(h.outputs) == 1 and "cos" not in [e.prim.name for e in h.eqns]


def test_trace_to_graph_with_static_arguments():
    def f(x, n):
        return x * n

    g, _ = trace_to_graph(f, [Aval((2,), np.dtype(np.float64))], np, static={1: 3})
    assert g.eqns[0].inputs[1].value == 3


def test_constants_math_module_is_untouched():
    g = dg.trace(lambda x: x * math.pi + np.pi, np.ones(2))
    assert len(g.eqns) == 2


def test_slices_of_a_flat_vector_give_one_concatenate():
    """The gradient of unpacking p[:2], p[2:5], p[5:] is one concatenate, not three
    scatters into zeros and two adds."""
    def f(p):
        return np.sum(p[:2] ** 2) + np.sum(np.sin(p[2:5])) + np.sum(p[5:] ** 3)

    p = np.linspace(-1, 1, 7)
    counts = dg.trace(dg.grad(f), p).primitive_counts()
    assert counts.get("concatenate") == 1 and "scatter_add" not in counts
    want = np.concatenate([2 * p[:2], np.cos(p[2:5]), 3 * p[5:] ** 2])
    np.testing.assert_allclose(dg.grad(f)(p), want)


def test_overlapping_or_partial_slices_keep_their_scatters():
    f = lambda p: np.sum(p[:4] ** 2) + np.sum(p[2:] ** 2) + np.sum(p[1:3])
    p = np.linspace(-1, 1, 6)
    assert "concatenate" not in dg.trace(dg.grad(f), p).primitive_counts()
    i = np.arange(6)
    want = 2 * p * ((i < 4).astype(float) + (i >= 2)) + ((i >= 1) & (i < 3))
    np.testing.assert_allclose(dg.grad(f)(p), want)
