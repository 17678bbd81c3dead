"""The CuPy backend implements the Backend protocol (dualgpu/backends/base.py): each member
run on CuPy, and the choices the layers above make from its capabilities (the executor's
fused plan and graph replay, closed-over NumPy constants and converted scalars moved to the
device, the tracer's device)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import scipy.sparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_device import cupy_or_skip  # noqa: E402

cp = cupy_or_skip()

import cupyx.scipy.linalg  # noqa: E402
import cupyx.scipy.sparse  # noqa: E402
import cupyx.scipy.sparse.linalg  # noqa: E402
import cupyx.scipy.special  # noqa: E402

import dualgpu as dg  # noqa: E402
from dualgpu.backends import array_backend, backend_for_xp, backend_named, backend_of  # noqa: E402
from dualgpu.backends.base import missing_members  # noqa: E402
from dualgpu.backends.cupy import CupyBackend  # noqa: E402
from dualgpu.runtime.executor import Executable, config  # noqa: E402


def _cupy():
    return backend_of([cp.ones(1)])


def test_detection_and_modules():
    b = _cupy()
    assert missing_members(type(b)) == []
    assert isinstance(b, CupyBackend) and b is backend_for_xp(cp) is backend_named("cupy")
    assert (b.xp, b.special, b.linalg, b.sparse, b.sparse_linalg) == (
        cp, cupyx.scipy.special, cupyx.scipy.linalg, cupyx.scipy.sparse,
        cupyx.scipy.sparse.linalg)
    assert (b.name, b.export_target) == ("cupy", "cupy")
    assert b.on_device and b.runs_fused_kernels and b.replays_cuda_graphs
    assert not b.runs_host_kernels
    a = cp.arange(3.0)
    s = cupyx.scipy.sparse.csr_matrix(scipy.sparse.eye(3, format="csr"))
    assert b.is_array(a) and not b.is_array(np.ones(2)) and not b.is_array(s)
    assert b.is_sparse(s) and not b.is_sparse(a)
    assert array_backend(s) is b


def test_moving_arrays():
    b = _cupy()
    host = np.arange(4.0)
    dev = b.to_device(host)
    assert isinstance(dev, cp.ndarray)
    back = b.to_host(dev)
    assert type(back) is np.ndarray
    np.testing.assert_array_equal(back, host)
    outs = [cp.float64(1.0) * cp.ones(()), dev]
    assert b.as_arrays(outs) is outs
    assert b.device_of(dev) == b.default_device() == cp.cuda.Device()
    b.synchronize()


def test_library_calls():
    b = _cupy()
    ties = cp.asarray([[2.0, 1.0, 2.0, 1.0]])
    order = b.stable_argsort(ties, 1)
    assert order.dtype == np.int64
    np.testing.assert_array_equal(order.get(), [[1, 3, 0, 2]])
    np.testing.assert_array_equal(b.stable_sort(ties, 1).get(), [[1.0, 1.0, 2.0, 2.0]])
    out = b.scatter_add(cp.zeros(3), cp.asarray([0, 2, 2]), cp.asarray([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(out.get(), [1.0, 0.0, 5.0])
    assert b.linear_operator_class() is cupyx.scipy.sparse.linalg.LinearOperator
    np.testing.assert_allclose(b.special.erf(cp.asarray([0.5])).get(),
                               [0.5204998778130465], rtol=1e-14)
    from cupy._core import _routines_linalg

    before = _routines_linalg.get_compute_type(np.float32)
    with b.matmul_precision("tf32"):
        assert _routines_linalg.get_compute_type(np.float32) == getattr(
            _routines_linalg, "COMPUTE_TYPE_TF32", 7)
    assert _routines_linalg.get_compute_type(np.float32) == before


def test_executor_choices():
    x = cp.arange(4.0)
    graph = dg.trace(lambda x: cp.sum(cp.sin(x) * x), x)
    want = float(np.sum(np.sin(np.arange(4.0)) * np.arange(4.0)))
    fused = Executable(graph, _cupy())
    assert fused.plan is not None and fused.graph_runner is not None and fused.host is None
    config["fuse"] = False
    plain = Executable(graph, _cupy())
    assert plain.plan is None and plain.graph_runner is not None
    for exe in (fused, plain):
        (out,) = exe(x)
        assert isinstance(out, cp.ndarray)
        np.testing.assert_allclose(float(out), want, rtol=1e-14)


def test_host_values_move_to_the_device():
    """A closed-over NumPy constant and a differentiated Python scalar reach a CuPy program
    on the device; the tracer's device is the backend's."""
    c = np.arange(3.0)
    seen = []

    def f(x, s):
        seen.append(x.device)
        return cp.sum(x * c) * s

    g = dg.grad(f, argnums=(0, 1))(cp.ones(3), 2.0)
    assert isinstance(g[0], cp.ndarray) and isinstance(g[1], cp.ndarray)
    np.testing.assert_allclose(g[0].get(), 2.0 * c)
    np.testing.assert_allclose(float(g[1]), 3.0)
    assert seen and all(d == _cupy().default_device() for d in seen)


def test_hessian_operator_is_cupyx_linear_operator():
    H = dg.HessianOperator(lambda p: cp.sum(p ** 3), cp.ones(3))
    assert isinstance(H, cupyx.scipy.sparse.linalg.LinearOperator)
    np.testing.assert_allclose((H @ cp.ones(3)).get(), 6.0 * np.ones(3))
