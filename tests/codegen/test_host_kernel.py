"""``dg.config["host_kernel"]``: a NumPy program that is tiny runs as its tiny kernel
(``dualgpu/codegen/tiny.py``) compiled for the host CPU (``dualgpu/codegen/host.py``).
Results must equal the generated NumPy program's (libm may differ in the last bits); the
switch keys the program cache; refused programs and a missing compiler fall back to the
Python program; compiled libraries are reused from disk."""
from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path

import fuzz_programs as fp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from test_tiny_kernel import _mlp
from tiny_harness import needs_gxx

import dualgpu as dg
from benchmarks.dense_tiny import loss as dense_loss  # noqa: E402
from benchmarks.dense_tiny import make_inputs as dense_inputs  # noqa: E402
from dualgpu.backends.numpy import NumpyBackend
from dualgpu.codegen import host
from dualgpu.runtime.executor import BUILD_SWITCHES, Executable, config

pytestmark = needs_gxx
EXAMPLES = int(os.environ.get("DUALGPU_HOST_EXAMPLES", 8))
from test_tiny_kernel import TOL, fuzzed_programs  # noqa: E402  (the tiny kernel's tests)


@pytest.fixture(autouse=True)
def _switch_restored(host_kernel_restored):
    """Every test here flips dg.config["host_kernel"] (tests/conftest.py restores it)."""


def _build(graph, on: bool) -> Executable:
    config["host_kernel"] = on
    return Executable(graph, NumpyBackend())


def _same(got, want, dtype=np.float64):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, **TOL[np.dtype(dtype)])


def _bitwise(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# ------------------------------------------------------------------ results
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dense_hvp_runs_as_the_host_kernel(dtype):
    for p, X, Y, v in dense_inputs(np, n_sets=2):
        args = tuple(a.astype(dtype) for a in (p, X, Y, v))
        for fn in (dg.hvp(dense_loss), dg.grad_and_hvp(dense_loss, return_value=True)):
            config["host_kernel"] = False
            want = fn(*args)
            assert not dg.source(fn, *args).startswith("// host kernel")
            config["host_kernel"] = True
            got = fn(*args)
            assert dg.source(fn, *args).startswith("// host kernel dg_tiny_")
            _same(list(got) if isinstance(got, tuple) else [got],
                  list(want) if isinstance(want, tuple) else [want], dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_small_mlp_hvp(dtype):
    loss, args = _mlp(dtype)
    vs = tuple(np.ones_like(a) * 0.3 for a in args[:3])
    g = dg.trace(dg.hvp(loss, argnums=(0, 1, 2)), *args, vs)
    exe = _build(g, True)
    assert exe.host is not None
    _same(exe(*args, *vs), _build(g, False)(*args, *vs), dtype)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(fp.programs(max_nodes=6, sparse=False))
def test_fuzzed_programs_and_their_derivatives(prog):
    for g, a in fuzzed_programs(prog):
        exe = _build(g, True)
        want = _build(g, False)(*a)
        if exe.host is not None:
            _same(exe(*a), want)
            # another layout and a Python scalar's worth of conversion: the same values
            _same(exe(*[np.array(b, order="F") for b in a]), want)
        config["host_kernel"] = False


def test_inputs_of_other_layouts_are_converted_and_outputs_are_fresh():
    x = np.linspace(-1, 1, 12).reshape(3, 4)
    f = dg.jit(lambda x: (x, np.sin(x), x, 2.0 * x.T))
    unaligned = np.frombuffer(b"\0" + x.tobytes(), np.float64, offset=1).reshape(3, 4)
    assert not unaligned.flags.aligned
    for arg in (x, np.asfortranarray(x), np.repeat(x, 2, axis=1)[:, ::2], x[::-1], unaligned):
        config["host_kernel"] = False
        want = f(arg)
        config["host_kernel"] = True
        got = f(arg)
        assert dg.source(f, arg).startswith("// host kernel")
        _same(got, want)
        ids = {id(g) for g in got} | {id(arg)}
        assert len(ids) == len(got) + 1 and all(g.base is None for g in got)
        assert not any(np.shares_memory(g, arg) for g in got)


def test_literal_and_scalar_outputs():
    x = np.linspace(0.1, 1, 3)
    f = dg.jit(lambda x: (np.sin(x), 2.5, x[0], np.float32(1.5), np.sum(x > 0.5)))
    want = f(x)
    config["host_kernel"] = True
    got = f(x)
    assert dg.source(f, x).startswith("// host kernel")
    for g, w in zip(got, want):
        assert type(g) is type(w)
    _same(got, want)


def test_closed_over_constants_are_read_in_place():
    c = np.arange(6.0).reshape(2, 3)[:, ::-1]     # a constant with other strides
    f = dg.jit(lambda x: np.sum(x * c, axis=0))
    x = np.ones((2, 3))
    want = f(x)
    config["host_kernel"] = True
    assert _bitwise(f(x), want) and dg.source(f, x).startswith("// host kernel")


# ------------------------------------------------------------------ the switch and the cache
def test_the_switch_is_a_build_switch_off_by_default():
    assert "host_kernel" in BUILD_SWITCHES
    with pytest.raises(dg.DualgpuError):
        config["host_kernel"] = "yes"
    assert config["host_kernel"] is False


def test_the_switch_keys_the_program_cache():
    args = dense_inputs(np, n_sets=1)[0]
    fn = dg.hvp(dense_loss)
    fn(*args)
    python_source = dg.source(fn, *args)
    misses = dg.cache_info()["misses"]
    config["host_kernel"] = True
    fn(*args)
    assert dg.cache_info()["misses"] == misses + 1, "a program built with it off was reused"
    assert dg.source(fn, *args).startswith("// host kernel")
    config["host_kernel"] = False
    fn(*args)
    assert dg.source(fn, *args) == python_source


def test_a_cached_call_returns_what_a_fresh_program_returns():
    args = dense_inputs(np, n_sets=1)[0]
    fn = dg.grad_and_hvp(dense_loss, return_value=True)
    config["host_kernel"] = True
    first = fn(*args)
    cached = [fn(*args) for _ in range(3)]
    dg.clear_cache()
    fresh = fn(*args)
    for got in cached + [first]:
        assert all(_bitwise(g, w) for g, w in zip(got, fresh))


# ------------------------------------------------------------------ fallbacks
def test_a_refused_program_runs_the_python_program():
    x = np.arange(12.0).reshape(3, 4)
    fn = dg.jit(lambda x: np.cumsum(np.sin(x), axis=0))
    config["host_kernel"] = True
    np.testing.assert_array_equal(fn(x), np.cumsum(np.sin(x), axis=0))
    assert "def " in dg.source(fn, x) and not dg.source(fn, x).startswith("//")
    big_endian = x.astype(">f8")              # traced as >f8: no kernel dtype
    fn = dg.jit(lambda x: np.sin(x) * 2)
    np.testing.assert_array_equal(fn(big_endian), np.sin(x) * 2)
    assert not dg.source(fn, big_endian).startswith("//")


def test_a_kernel_of_too_much_serial_work_runs_the_python_program():
    """Products as plain loops on one thread lose to BLAS past HOST_WORK_MAX steps: an HVP
    of a 32x32 layer on 32 points (work ~1e5) runs the Python program; 8x16x16 runs the
    kernel."""
    from dualgpu.codegen.tiny import tiny_program_kernel

    rng = np.random.default_rng(0)

    def loss(W, V, X):
        return np.sum(np.tanh(X @ W) @ V)

    for (b, i, h), host_runs in (((8, 16, 16), True), ((32, 32, 32), False)):
        W, V, X = (rng.standard_normal(s) for s in ((i, h), (h,), (b, i)))
        g = dg.trace(dg.hvp(loss), W, V, X, W)
        assert tiny_program_kernel(g).work > host.HOST_WORK_MAX or host_runs
        exe = _build(g, True)
        assert (exe.host is not None) == host_runs
        _same(exe(W, V, X, W), _build(g, False)(W, V, X, W))


def test_no_compiler_runs_the_python_program(monkeypatch):
    monkeypatch.setattr(host, "find_compiler", lambda: None)
    args = dense_inputs(np, n_sets=1)[0]
    fn = dg.hvp(dense_loss)
    want = fn(*args)
    config["host_kernel"] = True
    assert _bitwise(fn(*args), want)
    assert not dg.source(fn, *args).startswith("//")


def test_a_compile_error_warns_and_runs_the_python_program(monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("DUALGPU_CACHE_DIR", str(tmp_path))

    def refuse(cmd, text):
        return host.subprocess.CompletedProcess(cmd, 1, "", "error: no")

    monkeypatch.setattr(host, "_run_compiler", refuse)
    g = dg.trace(lambda x: np.sin(x) * 2, np.ones(3))
    with caplog.at_level(logging.WARNING, logger="dualgpu"):
        exe = _build(g, True)
    assert exe.host is None and "not compiled" in caplog.text
    assert list(tmp_path.rglob("*")) == [tmp_path / "host"], "no file left behind"
    np.testing.assert_allclose(exe(np.ones(3))[0], 2 * np.sin(1.0))


def test_the_compiler_is_found_in_order(monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler-here")
    found = host.find_compiler()
    assert found is None or Path(found).name in host.COMPILERS
    monkeypatch.setenv("CXX", "g++")
    assert Path(host.find_compiler()).name == "g++"


# ------------------------------------------------------------------ the disk cache
def test_the_disk_cache_is_reused(monkeypatch, tmp_path):
    monkeypatch.setenv("DUALGPU_CACHE_DIR", str(tmp_path))
    calls = []
    real = host._run_compiler
    monkeypatch.setattr(host, "_run_compiler", lambda cmd, text: calls.append(cmd) or
                        real(cmd, text))
    g = dg.trace(lambda x: np.tanh(x) ** 3 - np.sum(x), np.ones(5))
    x = np.linspace(0, 1, 5)
    first = _build(g, True)
    assert len(calls) == 1 and first.host is not None
    libs = list((tmp_path / "host").iterdir())
    assert len(libs) == 1 and libs[0].suffix == ".so", libs  # no temporary file left
    monkeypatch.setattr(host, "_LIBS", {})       # as in a new process
    second = _build(g, True)
    assert len(calls) == 1, "the second build ran the compiler"
    assert _bitwise(first(x)[0], second(x)[0])


def test_threads_calling_one_kernel_get_their_own_results():
    g = dg.trace(dg.hvp(dense_loss), *dense_inputs(np, n_sets=1)[0])
    exe = _build(g, True)
    sets = dense_inputs(np, n_sets=4)
    want = [exe(*s)[0] for s in sets]
    errors = []

    def work(k):
        for _ in range(300):
            if not _bitwise(exe(*sets[k])[0], want[k]):
                errors.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_processes_compiling_one_kernel_at_once(tmp_path):
    """Each writes its own temporary file and renames it into place: both load a whole
    library, and one library is left."""
    import subprocess

    code = ("import numpy as np, dualgpu as dg\n"
            "dg.config['host_kernel'] = True\n"
            "f = dg.jit(lambda x: np.cos(x) * 3 + np.sum(x))\n"
            "x = np.linspace(0, 1, 7)\n"
            "assert dg.source(f, x).startswith('// host kernel')\n"
            "print(repr(f(x).tolist()))\n")
    env = dict(os.environ, DUALGPU_CACHE_DIR=str(tmp_path),
               PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    assert len({o for o, _ in outs}) == 1
    assert [p.suffix for p in (tmp_path / "host").iterdir()] == [".so"]
