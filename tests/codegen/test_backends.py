"""The Backend protocol (dualgpu/backends/base.py): every backend defines every member, the
NumPy backend's members do what they say, the executor's choice of program follows the
backend's capabilities, and export's CuPy stand-in implements the same protocol. The CuPy
backend's members are run in tests/gpu/test_backend_protocol_gpu.py."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg
import scipy.special

import dualgpu as dg
from dualgpu.api.export import CupyOnCpu
from dualgpu.backends import NUMPY, backend_named, backend_of
from dualgpu.backends.base import MEMBERS, Backend, missing_members
from dualgpu.backends.cupy import CupyBackend
from dualgpu.backends.numpy import NumpyBackend
from dualgpu.runtime.executor import Executable, config

CAPABILITIES = ("on_device", "runs_fused_kernels", "runs_host_kernels", "replays_cuda_graphs",
                "checks_indices")
BACKEND_CLASSES = (NumpyBackend, CupyBackend, CupyOnCpu)


@pytest.fixture(autouse=True)
def _restore_config():
    saved = dict(config)
    yield
    config.update(saved)


def test_members_list_everything_backend_declares():
    """A member added to Backend (a method or a declared attribute) is listed in MEMBERS,
    so that missing_members checks it on every backend."""
    declared = {k for k, v in vars(Backend).items() if callable(v) and not k.startswith("_")}
    declared |= set(Backend.__annotations__)
    assert declared == set(MEMBERS)


@pytest.mark.parametrize("cls", BACKEND_CLASSES, ids=lambda c: c.__name__)
def test_every_backend_defines_every_member(cls):
    assert missing_members(cls) == []
    for name in ("name", "export_target"):
        assert isinstance(getattr(cls, name), str)
    for name in CAPABILITIES:
        assert isinstance(getattr(cls, name), bool), name


def test_a_missing_member_is_named():
    members = {m: vars(NumpyBackend)[m] for m in MEMBERS if m != "stable_sort"}
    no_sort = type("NoSort", (Backend,), members)
    assert missing_members(no_sort) == ["stable_sort"]
    with pytest.raises(NotImplementedError, match="Backend.stable_sort"):
        no_sort().stable_sort(np.ones(2), 0)


def test_numpy_backend_modules_and_capabilities():
    b = backend_of([np.ones(2)])
    assert b is NUMPY and backend_named("numpy") is NUMPY
    assert (b.xp, b.special, b.linalg, b.sparse, b.sparse_linalg) == (
        np, scipy.special, scipy.linalg, scipy.sparse, scipy.sparse.linalg)
    assert (b.name, b.export_target) == ("numpy", "numpy")
    assert not b.on_device and not b.runs_fused_kernels and not b.replays_cuda_graphs
    assert b.runs_host_kernels
    with pytest.raises(ValueError, match="'numpy' and 'cupy'"):
        backend_named("jax")


def test_numpy_backend_methods():
    b = NUMPY
    a = np.arange(3.0)
    assert b.is_array(a) and not b.is_array(1.0) and not b.is_array(scipy.sparse.eye(2))
    assert b.is_sparse(scipy.sparse.eye(2)) and not b.is_sparse(a)
    assert b.to_device(a) is a
    assert b.to_host(a) is a
    scalar, arr = b.as_arrays([np.float64(2.5), a])
    assert type(scalar) is np.ndarray and scalar.shape == () and scalar == 2.5
    assert arr is a
    assert b.device_of(a) == "cpu" and b.default_device() == "cpu"
    assert b.synchronize() is None
    ties = np.array([[2.0, 1.0, 2.0, 1.0]])
    np.testing.assert_array_equal(b.stable_argsort(ties, 1), [[1, 3, 0, 2]])
    np.testing.assert_array_equal(b.stable_sort(ties, 1), [[1.0, 1.0, 2.0, 2.0]])
    out = b.scatter_add(np.zeros(3), np.array([0, 2, 2]), np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(out, [1.0, 0.0, 5.0])
    assert b.linear_operator_class() is scipy.sparse.linalg.LinearOperator
    with b.matmul_precision("tf32"):
        assert float(np.ones(2) @ np.ones(2)) == 2.0


def test_tracer_device_is_the_backend_default_device():
    seen = []

    def f(x):
        seen.append(x.device)
        return np.sum(np.asarray([1.0, 2.0, 3.0], device=x.device) * x ** 2)

    np.testing.assert_allclose(dg.grad(f)(np.arange(3.0)), [0.0, 4.0, 12.0])
    assert seen == [NUMPY.default_device()]


def _graph():
    x = np.arange(4.0)
    return dg.trace(lambda x: np.sum(np.sin(x) * x), x), x


def test_executor_runs_generated_python_on_numpy_by_default():
    graph, x = _graph()
    exe = Executable(graph, NUMPY)
    assert exe.plan is None and exe.host is None and exe.graph_runner is None
    assert "def " in exe.source
    (out,) = exe(x)
    assert type(out) is np.ndarray and out.shape == ()  # a NumPy scalar made an array
    np.testing.assert_allclose(out, np.sum(np.sin(x) * x), rtol=1e-15)


def test_executor_asks_the_backend_for_host_kernels():
    """With host_kernel on, the choice is the backend's runs_host_kernels capability."""
    config["host_kernel"] = True
    graph, x = _graph()

    class NoHostKernels(NumpyBackend):
        runs_host_kernels = False

    exe = Executable(graph, NoHostKernels())
    assert exe.host is None and "def " in exe.source
    host = Executable(graph, NUMPY)
    if host.host is None:
        pytest.skip("no C++ compiler for host kernels")
    assert host.source == host.host.source
    np.testing.assert_allclose(host(x)[0], exe(x)[0], rtol=1e-14)


def test_executor_asks_the_backend_for_graph_replay():
    """A backend that replays CUDA graphs gets a graph runner and runs its eager calls
    under its matmul precision; the NumPy backend gets neither."""
    graph, x = _graph()
    entered = []

    class Precision:
        def __enter__(self):
            entered.append(True)

        def __exit__(self, *exc):
            return False

    class Replaying(NumpyBackend):
        replays_cuda_graphs = True

        def matmul_precision(self, precision):
            return Precision()

    config["cuda_graphs"] = False
    exe = Executable(graph, Replaying())
    assert exe.graph_runner is not None and exe.plan is None
    np.testing.assert_allclose(exe(x)[0], np.sum(np.sin(x) * x), rtol=1e-15)
    assert entered == [True]
    assert Executable(graph, NUMPY).graph_runner is None


def test_cupy_on_cpu_stands_for_cupy():
    b = CupyOnCpu()
    for name in ("name", "export_target", *CAPABILITIES):
        assert getattr(b, name) == getattr(CupyBackend, name), name
    assert not b.is_array(np.ones(2)) and not b.is_sparse(scipy.sparse.eye(2))
    with pytest.raises(dg.DualgpuError, match="needs CuPy and a GPU"):
        b.to_device(np.ones(2))
    with pytest.raises(dg.DualgpuError, match="needs CuPy and a GPU"):
        b.stable_sort(np.ones(2), 0)


def test_export_target_follows_the_backend():
    text = dg.export(dg.grad(lambda x: np.sum(x ** 2)), np.ones(3))
    assert "import cupy" not in text and "import numpy" in text


# files another developer is restructuring (issue 24); their library tests go with that work
_PENDING: set[str] = set()


def test_no_library_identity_tests_outside_backends():
    """Outside dualgpu/backends/, code asks the backend (a capability or a method), never
    which library it is (is_cupy, xp is np)."""
    root = Path(__file__).resolve().parents[2]
    found = []
    for path in sorted((root / "dualgpu").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("dualgpu/backends/") or rel in _PENDING:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\bis_cupy\b|\bxp is (not )?np\b", line):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert found == []
