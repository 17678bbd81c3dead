"""Pattern detection of programs whose sparse matrices live on the device (cupyx): the index
arrays of spmm, sddmm and spsolve are read by their sparsity rules, which must see them on the
host (copied once by the backend's ``to_host``), never through ``np.asarray`` -- CuPy refuses
implicit conversion. Emulated here: the graph's constants are swapped for stand-ins of CuPy
arrays that refuse it, and the patterns must equal those of the same graph on NumPy."""
from __future__ import annotations

import types

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

import dualgpu as dg
from dualgpu.core.ir import Const
from dualgpu.transforms.sparsity import hessian_pattern, jacobian_pattern


class _DeviceArray:
    """A CuPy array as NumPy sees it: ``np.asarray`` of it raises, as CuPy's does."""

    __module__ = "cupy._core.core"

    def __init__(self, a):
        self.a = a
        self.shape, self.dtype, self.ndim = a.shape, a.dtype, a.ndim

    def __array__(self, *args, **kwargs):
        raise TypeError("Implicit conversion to a NumPy array is not allowed")


@pytest.fixture
def device_constants(monkeypatch):
    from dualgpu.backends import cupy as cupy_backend

    copies = []

    def to_host(x):
        copies.append(x)
        return x.a

    fake = types.SimpleNamespace(name="cupy", on_device=True, to_host=to_host,
                                 is_array=lambda x: isinstance(x, _DeviceArray),
                                 is_sparse=lambda x: False)
    monkeypatch.setattr(cupy_backend, "get_cupy_backend", lambda: fake)
    return copies


def _on_device(graph):
    for eqn in graph.eqns:
        for a in eqn.inputs:
            if isinstance(a, Const) and isinstance(a.value, np.ndarray):
                a.value = _DeviceArray(a.value)


A = (sp.random(6, 6, density=0.25, random_state=0) + 3 * sp.eye(6)).tocsr()
B = sp.random(6, 6, density=0.3, random_state=1, format="coo")
PROGRAMS = {
    "spmm": lambda x: np.tanh(A @ x) + (x ** 2) @ B,
    "spmm 2-D": lambda x: np.sin(A @ x.reshape(6, 1)).ravel() * x,
    "spsolve": lambda x: spsolve(A, x ** 2) + spsolve(A.T, np.cos(x)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_patterns_of_device_index_arrays_equal_the_host_ones(name, device_constants):
    f = PROGRAMS[name]
    x = np.linspace(0.1, 0.9, 6)
    graph = dg.trace(f, x)
    scalar = dg.trace(lambda x: np.sum(f(x) ** 3), x)
    expected = [jacobian_pattern(graph, [0]).toarray(), hessian_pattern(scalar, [0]).toarray()]
    _on_device(graph)
    _on_device(scalar)
    got = [jacobian_pattern(graph, [0]).toarray(), hessian_pattern(scalar, [0]).toarray()]
    assert device_constants  # the index arrays were copied to the host
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(g, e)


def test_sddmm_pattern_of_device_index_arrays(device_constants):
    """sddmm (the cotangent of spmm's values) in a gradient's program."""
    v = np.arange(6.0)
    grad = dg.grad(lambda y: np.sum(np.tanh(A.multiply(y) @ v) ** 2))
    graph = dg.trace(grad, np.linspace(0.1, 0.9, 36).reshape(6, 6))
    assert any(e.prim.name == "sddmm" for e in graph.eqns)
    expected = jacobian_pattern(graph, [0]).toarray()
    _on_device(graph)
    np.testing.assert_array_equal(jacobian_pattern(graph, [0]).toarray(), expected)
