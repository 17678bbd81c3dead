"""``dg.config["host_interpreter"]`` (on by default): a NumPy program that is tiny runs by
the prebuilt interpreter (``dualgpu/codegen/interpreter.py``, ``interp_lib.py``): encoded as
data, no compile per program. Results equal the generated NumPy program's to float
tolerance (libm may differ in the last bits), a cached call returns exactly what a fresh
build returns, two threads may run one program at once, and without a compiler (or where
it refuses the library) programs run as Python."""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import threading

import fuzz_programs as fp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from test_tiny_kernel import TOL, _mlp, fuzzed_programs
from tiny_harness import needs_gxx

import dualgpu as dg
from benchmarks.dense_tiny import loss as dense_loss  # noqa: E402
from benchmarks.dense_tiny import make_inputs as dense_inputs  # noqa: E402
from dualgpu.backends.numpy import NumpyBackend
from dualgpu.codegen import host, interp_lib
from dualgpu.codegen.interpreter import interpreted_refusal
from dualgpu.runtime.executor import BUILD_SWITCHES, DEFAULTS, Executable, config

pytestmark = needs_gxx
EXAMPLES = int(os.environ.get("DUALGPU_INTERP_EXAMPLES", 6))


@pytest.fixture(autouse=True)
def _switches_restored():
    before = config["host_interpreter"], config["host_kernel"]
    yield
    config["host_interpreter"], config["host_kernel"] = before
    dg.clear_cache()


def _build(graph, on: bool) -> Executable:
    config["host_interpreter"] = on
    return Executable(graph, NumpyBackend())


def _same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        tol = TOL[np.dtype(np.float32)] if w.dtype != np.float64 else TOL[np.dtype(np.float64)]
        np.testing.assert_allclose(g, w, **tol)


def _interpreted(source: str) -> bool:
    """Whether ``dg.source`` says the interpreter runs the program (its last line)."""
    return source.startswith("def ") and source.splitlines()[-1].startswith("# host interpreter")


def _bitwise(got, want) -> bool:
    return len(got) == len(want) and all(
        np.asarray(g).dtype == np.asarray(w).dtype and np.asarray(g).shape == np.asarray(w).shape
        and np.asarray(g).tobytes() == np.asarray(w).tobytes() for g, w in zip(got, want))


def _check(graph, args) -> Executable:
    """The interpreted program of ``graph`` against the Python program, a fresh build of it
    (bit for bit) and inputs of another layout."""
    exe = _build(graph, True)
    assert exe.interp is not None, interpreted_refusal(graph)
    got = exe(*args)
    _same(got, _build(graph, False)(*args))
    assert _bitwise(_build(graph, True)(*args), got), "a fresh build differs"
    assert _bitwise(exe(*[np.array(a, order="F") for a in args]), got)
    return exe


# ------------------------------------------------------------------ results
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_dense_hvp_runs_by_the_interpreter_by_default(dtype):
    assert DEFAULTS["host_interpreter"] is True and "host_interpreter" in BUILD_SWITCHES
    args = tuple(a.astype(dtype) for a in dense_inputs(np, n_sets=1)[0])
    fn = dg.grad_and_hvp(dense_loss, return_value=True)
    got = fn(*args)
    assert _interpreted(dg.source(fn, *args))
    config["host_interpreter"] = False
    want = fn(*args)
    assert not _interpreted(dg.source(fn, *args))
    _same(list(got), list(want))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_small_mlp_hvp(dtype):
    loss, args = _mlp(dtype, dims=(4, 6, 3))
    vs = tuple(np.ones_like(a) * 0.3 for a in args[:3])
    _check(dg.trace(dg.hvp(loss, argnums=(0, 1, 2)), *args, vs), args + vs)


def _ops_program(x, y, m):
    """Most of what the interpreter covers: casts, comparisons, where, bools, views,
    reductions, products, concatenation, literal and scalar outputs."""
    z = np.where(x > 0.2, np.exp(x), np.sin(y[::-1]) ** 3) - np.float32(2.5) * x
    b = (x > 0) & ~(y < 0.5)
    s = np.sum(m * m, axis=0) + np.max(m, axis=1)[:2].sum() + np.min(m.T, axis=(0, 1))
    p = np.prod(np.abs(m[:, 1:]) + 0.5, axis=1)
    q = np.einsum("ij,jk->ik", m.T, m) + np.einsum("ii->i", m.T @ m)[:, None]
    c = np.concatenate([z, x.astype(np.float32), p.astype(np.float32)])
    r = np.reshape(m.T, (6,)) + np.tanh(m.T.reshape(6))
    return (z, b, s, q, c, r, 1.5, x[0], b[1], b.astype(np.float64) * np.log1p(x * x),
            np.maximum(x, np.nan * y), np.power(np.abs(x) + 1, y))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_covered_ops(dtype):
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal(3).astype(dtype) for _ in range(2))
    m = rng.standard_normal((3, 2)).astype(dtype)
    g = dg.trace(dg.jit(_ops_program), x, y, m)
    assert interpreted_refusal(g) is None
    _check(g, (x, y, m))


def test_matmuls_of_every_rank():
    rng = np.random.default_rng(2)
    a, b, v, w = (rng.standard_normal(s) for s in ((2, 3, 4), (4, 5), (4,), (3,)))
    c = rng.standard_normal((1, 3, 4))[0, :, ::-1]         # a closed-over constant, strided
    f = dg.jit(lambda a, b, v, w: (a @ b, a @ v, v @ b, v @ v, w @ a, a[0] @ b + c @ b))
    _check(dg.trace(f, a, b, v, w), (a, b, v, w))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(fp.programs(max_nodes=6, sparse=False))
def test_fuzzed_programs_and_their_derivatives(prog):
    for g, a in fuzzed_programs(prog):
        if _build(g, True).interp is not None:
            _check(g, a)


def test_a_cached_call_returns_what_a_fresh_program_returns():
    args = dense_inputs(np, n_sets=1)[0]
    fn = dg.grad_and_hvp(dense_loss, return_value=True)
    first = fn(*args)
    cached = [fn(*args) for _ in range(3)]
    dg.clear_cache()
    fresh = fn(*args)
    assert _interpreted(dg.source(fn, *args))
    for got in cached + [first]:
        assert _bitwise(got, fresh)


def test_two_threads_run_one_program_at_once():
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal((8, 8)) for _ in range(2)]
    exe = _build(dg.trace(dg.jit(lambda x: np.tanh(x @ x.T) @ x + 1), xs[0]), True)
    assert exe.interp is not None
    want = [exe(x)[0] for x in xs]
    bad = []

    def work(k):
        for _ in range(300):
            if not np.array_equal(exe(xs[k])[0], want[k]):
                bad.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


# ------------------------------------------------------------------ what it refuses
def test_refused_programs_run_the_python_program():
    x = np.arange(12.0).reshape(3, 4)
    for f, why in ((lambda x: np.cumsum(x, axis=0), "cumsum has no interpreted form"),
                   (lambda x: x.astype(np.int64) * 2, "dtype int64"),
                   (lambda x: np.sin(x.reshape(-1)[:, None] * np.ones((1, 4000))),
                    "a value of 48000 elements")):
        g = dg.trace(f, x)
        assert interpreted_refusal(g) == why
        assert _build(g, True).interp is None


def test_too_much_work_runs_the_python_program():
    w = np.ones((64, 64))
    g = dg.trace(lambda w: np.tanh(w @ w), w)      # 64**3 steps of products
    assert interpreted_refusal(g).endswith("element steps")


def test_a_custom_op_is_not_in_the_table():
    op = dg.custom_op("interp_test_twice", lambda xp, x: 2 * x, c="(2 * {0})")
    g = dg.trace(lambda x: op(np.sin(x)), np.ones(3))
    assert _build(g, True).interp is None


# ------------------------------------------------------------------ the library
def test_no_compiler_runs_the_python_program_silently(monkeypatch, caplog):
    monkeypatch.setattr(host, "find_compiler", lambda: None)
    monkeypatch.setattr(interp_lib, "_STATE", {})          # as in a new process
    g = dg.trace(lambda x: np.sin(x) * 2, np.ones(3))
    with caplog.at_level(logging.DEBUG, logger="dualgpu"):
        exe = _build(g, True)
    assert exe.interp is None and "def " in exe.source and not caplog.records
    np.testing.assert_array_equal(exe(np.ones(3))[0], np.sin(np.ones(3)) * 2)


def test_a_refused_library_warns_once_and_runs_the_python_program(monkeypatch, tmp_path,
                                                                   caplog):
    monkeypatch.setenv("DUALGPU_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(interp_lib, "_STATE", {})
    calls = []

    def refuse(cmd, text):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, "", "error: no")

    monkeypatch.setattr(host, "_run_compiler", refuse)
    with caplog.at_level(logging.WARNING, logger="dualgpu"):
        for k in range(2):
            exe = _build(dg.trace(lambda x, k=k: np.sin(x) + k, np.ones(3)), True)
            assert exe.interp is None
    assert len(calls) == 1 and "interpreter not compiled" in caplog.text


def test_the_library_is_compiled_once_per_machine(monkeypatch, tmp_path):
    """A new disk cache compiles it once (here: the real library copied, a fake compiler);
    then new programs and a new process compile nothing."""
    built = host.compile_library(interp_lib.library_text(), host.find_compiler())
    monkeypatch.setenv("DUALGPU_CACHE_DIR", str(tmp_path))
    calls = []

    def fake(cmd, text):
        calls.append(cmd)
        shutil.copy(built, cmd[cmd.index("-o") + 1])
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(host, "_run_compiler", fake)
    for new_process in (True, False, True):
        if new_process:
            monkeypatch.setattr(interp_lib, "_STATE", {})
            monkeypatch.setattr(host, "_LIBS", {})
        exe = _build(dg.trace(lambda x: np.cos(x) * len(calls), np.ones(3)), True)
        assert exe.interp is not None
    assert len(calls) == 1


def test_floating_point_errors_follow_errstate():
    """A run that raises a floating-point exception runs the Python program instead, whose
    NumPy calls warn or raise as np.errstate says."""
    exe = _build(dg.trace(lambda x: np.log(x) * 2, np.ones(2)), True)
    square = _build(dg.trace(lambda x: x * x + 1, np.ones(1)), True)
    assert exe.interp is not None and square.interp is not None
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        exe(np.array([0.0, 1.0]))
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        got = exe(np.array([0.0, 1.0]))
    np.testing.assert_array_equal(got[0], [-np.inf, 0.0])
    np.testing.assert_array_equal(square(np.array([1e-200]))[0], [1.0])   # ignored
    with np.errstate(under="raise"), pytest.raises(FloatingPointError):
        square(np.array([1e-200]))
