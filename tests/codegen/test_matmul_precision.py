"""Issue 12, item 6: ``dg.config["matmul_precision"]`` -- validated, part of every program's
cache key, and on CuPy the compute type of the library products (checked here against a
stand-in of CuPy's matmul module; tests/gpu/test_engine_gpu.py runs the real one)."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.backends import backend_of
from dualgpu.backends import cupy as cupy_backend
from dualgpu.runtime.executor import Executable, config

DEFAULT, TF32 = 1, 7


class FakeLinalg:
    """What dualgpu uses of ``cupy._core._routines_linalg``, recording the calls."""

    COMPUTE_TYPE_DEFAULT = DEFAULT
    COMPUTE_TYPE_TF32 = TF32

    def __init__(self, current=DEFAULT):
        self.current = current
        self.calls = []

    def get_compute_type(self, dtype):
        self.calls.append(("get", np.dtype(dtype).name))
        return self.current

    def set_compute_type(self, dtype, compute_type):
        self.calls.append(("set", np.dtype(dtype).name, compute_type))
        self.current = compute_type


@pytest.fixture
def fake_linalg(monkeypatch):
    fake = FakeLinalg()
    monkeypatch.setattr(cupy_backend, "_linalg_module", lambda: fake)
    return fake


@pytest.fixture(autouse=True)
def _restore_precision():
    yield
    config["matmul_precision"] = "float32"


def test_default_and_validation():
    assert config["matmul_precision"] == "float32"
    config["matmul_precision"] = "tf32"
    assert config["matmul_precision"] == "tf32"
    for bad in ("highest", "TF32", None, 32):
        with pytest.raises(dg.DualgpuError, match="matmul_precision"):
            config["matmul_precision"] = bad
    assert config["matmul_precision"] == "tf32"


def test_precision_is_part_of_the_cache_key():
    traces = []

    def f(x):
        traces.append(1)
        return np.sum(np.tanh(x @ x))

    g = dg.grad(f)
    x = np.eye(3) * 0.5
    first = g(x)
    g(x)
    assert len(traces) == 1
    config["matmul_precision"] = "tf32"
    np.testing.assert_array_equal(g(x), first)  # NumPy: no effect on the values
    assert len(traces) == 2, "a program built under float32 was reused under tf32"
    fast, = g._quick.values()
    program = fast.program()
    assert program.exe.matmul_precision == "tf32"
    config["matmul_precision"] = "float32"  # the float32 program is still cached
    g(x)
    assert len(traces) == 2
    fast, = g._quick.values()
    program = fast.program()
    assert program.exe.matmul_precision == "float32"


def test_setting_the_same_value_keeps_the_fast_path():
    g = dg.grad(lambda x: np.sum(x @ x))
    x = np.eye(2)
    g(x)
    quick = dict(g._quick)
    config["matmul_precision"] = "float32"
    g(x)
    assert g._quick == quick


def test_tf32_scope_sets_and_restores(fake_linalg):
    with cupy_backend.MatmulPrecision("tf32"):
        assert fake_linalg.current == TF32
    assert fake_linalg.current == DEFAULT
    assert fake_linalg.calls == [("get", "float32"), ("set", "float32", TF32),
                                 ("set", "float32", DEFAULT)]


def test_float32_scope_overrides_cupy_tf32_env(fake_linalg):
    fake_linalg.current = TF32  # what CUPY_TF32=1 gives
    with cupy_backend.MatmulPrecision("float32"):
        assert fake_linalg.current == DEFAULT
    assert fake_linalg.current == TF32


def test_scope_is_a_no_op_when_already_right(fake_linalg):
    with cupy_backend.MatmulPrecision("float32"):
        pass
    assert fake_linalg.calls == [("get", "float32")]


def test_scope_nests_and_restores_on_error(fake_linalg):
    scope = cupy_backend.MatmulPrecision("tf32")
    with pytest.raises(RuntimeError):
        with scope:
            with scope:
                assert fake_linalg.current == TF32
            raise RuntimeError
    assert fake_linalg.current == DEFAULT


def test_executable_runs_inside_the_scope(fake_linalg):
    """The eager call path of a CuPy program (what the graph runner also captures): the
    products run while the compute type is TF32, and it is restored when the call returns;
    a NumPy program has no scope at all."""
    from dualgpu.runtime.executor import _under

    seen = []
    x = np.ones((2, 2))
    exe = Executable(dg.trace(lambda x: x @ x, x), backend_of([x]))
    assert exe._eager is exe._fn  # NumPy programs: no scope at all
    run = exe._fn
    exe._eager = _under(cupy_backend.MatmulPrecision("tf32"),
                        lambda *a: (seen.append(fake_linalg.current), run(*a))[1])
    np.testing.assert_array_equal(exe(x)[0], x @ x)
    assert seen == [TF32] and fake_linalg.current == DEFAULT
