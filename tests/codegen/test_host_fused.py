"""``dg.config["host_fused"]``: a NumPy program whose fusion plan has a large region runs its
plan, each region compiled for the host CPU (``dualgpu/codegen/host_regions.py``). Results
equal the generated NumPy program's (libm may differ from NumPy's SIMD functions in the last
bit, and a grid reduction sums in another order); a missing compiler or a refused text falls
back to the Python program; libraries are reused from disk.

Compiles are the cost here (~0.3 s each): the fuzzed programs are few in CI
(DUALGPU_HOST_FUSED_EXAMPLES for more), and the other tests share their programs' texts
(the session's disk cache).
"""
from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import fuzz_programs as fp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiny_harness import needs_gxx

import dualgpu as dg
from benchmarks.scenario2 import f as particles_f  # noqa: E402
from benchmarks.scenario2 import make_inputs as particles_inputs  # noqa: E402
from benchmarks.scenario2 import shape_for  # noqa: E402
from dualgpu.backends.numpy import NumpyBackend
from dualgpu.codegen import host, host_regions
from dualgpu.codegen.python import compile_python
from dualgpu.runtime.executor import BUILD_SWITCHES, DEFAULTS, Executable, config

EXAMPLES = int(os.environ.get("DUALGPU_HOST_FUSED_EXAMPLES", 3))
TOL = dict(rtol=1e-12, atol=1e-13)


@pytest.fixture(autouse=True)
def _switch_restored():
    before = config["host_fused"]
    yield
    config["host_fused"] = before
    dg.clear_cache()


@pytest.fixture
def every_region(monkeypatch):
    """Programs of small values take the host fused path too."""
    monkeypatch.setattr(host_regions, "HOST_FUSED_MIN", 0)


def _build(graph) -> Executable:
    return Executable(graph, NumpyBackend())


def _check(graph, args, tol=TOL):
    """The host fused program against the generated NumPy program; returns the executable."""
    exe = _build(graph)
    assert exe.source.startswith("// host fused plan") == (exe.host_fused is not None)
    want = compile_python(graph, np)(*args)
    got = exe(*args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, **tol)
    return exe


def _bitwise(got, want) -> bool:
    return all(np.asarray(g).dtype == np.asarray(w).dtype
               and np.asarray(g).tobytes() == np.asarray(w).tobytes()
               for g, w in zip(got, want))


# ------------------------------------------------------------------ results
@needs_gxx
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(fp.programs(max_nodes=6, sparse=False), st.booleans())
def test_fuzzed_programs_and_their_derivatives(every_region, monkeypatch, prog, threads):
    """Fuzzed programs, their gradients and HVPs: every region compiled and run on the host,
    as one serial loop or (``threads``) on OpenMP's threads, grid reductions by chunks
    (DUALGPU_HOST_FUSED_EXAMPLES=100 for a longer campaign)."""
    monkeypatch.setattr(host_regions, "PARALLEL_MIN", 0 if threads else 1 << 62)
    f, loss = prog.functions()
    args = tuple(np.asarray(a) for a in prog.args())
    argnums = tuple(range(len(args)))
    for graph, call_args in ((dg.trace(dg.jit(f), *args), args),
                             (dg.trace(dg.grad(loss, argnums=argnums), *args), args),
                             (dg.trace(dg.hvp(loss), *args, args[0]), args + (args[0],))):
        exe = _check(graph, call_args)
        has_regions = bool(host_regions.plan_graph(graph, True).regions)
        assert (exe.host_fused is not None) == has_regions, prog


@needs_gxx
def test_per_particle_program_runs_fused_at_its_benchmark_size():
    """benchmarks/cpu.py's per-particle grad + HVP, above the threshold (default settings):
    the plan runs on the host fused path, and its results are the Python program's."""
    shape = shape_for(200_000)
    assert int(np.prod(shape)) >= host_regions.HOST_FUSED_MIN
    x, mu, v = (a.astype(np.float64) for a in particles_inputs(np, shape, 1)[0])
    fn = dg.grad_and_hvp(particles_f, batch_axes=(1, 2, 3))
    got = fn(x, mu, v)
    assert dg.source(fn, x, mu, v).startswith("// host fused plan")
    config["host_fused"] = False
    want = fn(x, mu, v)
    assert not dg.source(fn, x, mu, v).startswith("// host fused plan")
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, **TOL)
    graph = dg.trace(dg.grad_and_hvp(particles_f, batch_axes=(1, 2, 3)), x, mu, v)
    config["host_fused"] = True
    assert _build(graph).host_fused is not None


@needs_gxx
@pytest.mark.parametrize("name", ["column_of_a_row", "recomputed_along_rows"])
def test_a_value_read_along_other_axes_than_it_is_computed(every_region, name):
    """A value one region computes along the columns and another reads along the rows: the
    planner neither merges the two regions nor lets the second recompute it (both gave a
    wrong answer with the default switches, from 2**17 elements on)."""
    from test_fusion import fusion_cases

    fn, args = fusion_cases()[name]
    assert _check(dg.trace(fn, *args), args).host_fused is not None


@needs_gxx
def test_small_programs_run_as_python_by_default():
    graph = dg.trace(dg.grad(lambda x: np.sum(np.tanh(x) ** 2)), np.ones(100))
    assert _build(graph).host_fused is None


@needs_gxx
def test_special_values_are_numpys(every_region):
    """NaN, infinities and signed zeros through a fused region (elementwise and grid
    reductions) equal NumPy's, bit for bit: no -ffast-math."""
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 1e-310, -2.5])

    def f(x):
        y = x * -1.0
        return (y, np.sqrt(np.abs(x)) * np.sign(x), np.exp(x), np.maximum(x, 0.0),
                np.minimum(y, -0.0), x / (x - x), np.max(x), np.min(x), np.sum(y * 0.0),
                np.max(np.where(np.isnan(x), 0.0, x)), np.floor_divide(x, np.inf))

    graph = dg.trace(dg.jit(f), x)
    exe = _build(graph)
    assert exe.host_fused is not None
    with np.errstate(all="ignore"):
        want = compile_python(graph, np)(x)
    got = exe(x)
    assert _bitwise(got, want), [(g, w) for g, w in zip(got, want)]


@needs_gxx
def test_integers_bools_and_float32(every_region):
    i = np.arange(-7, 8, dtype=np.int64)

    def f(i, x):
        return (i * 3 + 1) // 2, (i % 3) == 1, np.sum(i), np.max(x * np.float32(2.5))

    graph = dg.trace(dg.jit(f), i, np.linspace(-1, 1, 15, dtype=np.float32))
    got = _check(graph, (i, np.linspace(-1, 1, 15, dtype=np.float32)))
    assert got.host_fused is not None


@needs_gxx
def test_arrays_of_the_other_byte_order_run_as_python(every_region):
    """A '>f8' argument (read from a network-order file, say): the regions read native
    values, so the program runs as Python, with NumPy's values (it was refused with
    "no C type for >f8")."""
    x = np.linspace(-1, 1, 12)
    xb = x.astype(">f8")

    def f(x):
        return np.sum(np.exp(-x * x) * x)

    assert _build(dg.trace(dg.grad(f), xb)).host_fused is None
    np.testing.assert_array_equal(dg.grad(f)(xb), dg.grad(f)(x))
    np.testing.assert_array_equal(dg.jit(lambda x: x * 2.0 + 1.0)(xb), x * 2.0 + 1.0)


@needs_gxx
def test_views_empty_values_and_constant_outputs(every_region):
    """A strided argument is copied to a dense one; a region over an empty domain runs its
    equations eagerly; an argument or a constant returned is a fresh array."""
    base = np.linspace(-1.0, 1.0, 24).reshape(4, 6)
    c = np.arange(3.0)

    def f(x):
        return np.exp(x) * c, np.sum(np.tanh(x), axis=0), x, c

    x = base[:, ::2]
    graph = dg.trace(dg.jit(f), x)
    exe = _check(graph, (x,))
    out = dg.jit(f)(x)
    assert out[2] is not x and out[3] is not c and np.array_equal(out[2], x)
    empty = np.ones((0, 3))
    _check(dg.trace(lambda x: (np.sum(np.exp(x), axis=0), np.exp(x) + 1.0), empty), (empty,))
    assert exe.host_fused is not None


# ------------------------------------------------------------------ fallbacks and caching
def test_no_compiler_runs_the_python_program(every_region, monkeypatch, caplog):
    monkeypatch.setattr(host, "find_compiler", lambda: None)
    monkeypatch.setattr(host_regions, "_logged", set())
    x = np.linspace(-1.0, 1.0, 7)
    fn = dg.grad(lambda x: np.sum(np.tanh(x) ** 2))
    with caplog.at_level(logging.DEBUG, logger="dualgpu"):
        got = fn(x)
        dg.clear_cache()
        fn(x)
    assert dg.source(fn, x).startswith("def ")
    assert caplog.text.count("no C++ compiler found") == 1, "logged once"
    assert not any(r.levelno > logging.DEBUG for r in caplog.records)
    config["host_fused"] = False
    assert _bitwise([got], [fn(x)])


@needs_gxx
def test_a_refused_text_runs_the_python_program(every_region, monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("DUALGPU_CACHE_DIR", str(tmp_path))

    def refuse(cmd, text):
        return host.subprocess.CompletedProcess(cmd, 1, "", "error: no")

    monkeypatch.setattr(host, "_run_compiler", refuse)
    graph = dg.trace(lambda x: np.exp(x) * 2.0, np.ones(5))
    with caplog.at_level(logging.DEBUG, logger="dualgpu"):
        exe = _build(graph)
    assert exe.host_fused is None and "not compiled" in caplog.text
    assert not any(r.levelno > logging.DEBUG for r in caplog.records)
    np.testing.assert_array_equal(exe(np.ones(5))[0], np.exp(np.ones(5)) * 2.0)


@needs_gxx
def test_a_cached_call_returns_what_a_fresh_build_returns(every_region):
    x = np.linspace(-2.0, 2.0, 11)
    fn = dg.hvp(lambda x: np.sum(np.exp(-x * x) * np.sin(x)))
    first, cached = fn(x, x), fn(x, x)
    fresh = _build(dg.trace(dg.hvp(lambda x: np.sum(np.exp(-x * x) * np.sin(x))), x, x))
    assert fresh.host_fused is not None
    assert _bitwise([first], [cached]) and _bitwise([cached], fresh(x, x))


@needs_gxx
def test_the_disk_cache_is_hit_on_a_second_build(every_region, monkeypatch, tmp_path):
    monkeypatch.setenv("DUALGPU_CACHE_DIR", str(tmp_path))
    runs = []
    real = host._run_compiler
    monkeypatch.setattr(host, "_run_compiler", lambda cmd, text: runs.append(1) or
                        real(cmd, text))
    graph = dg.trace(lambda x: np.sum(np.cos(x) * x), np.ones(6))
    assert _build(graph).host_fused is not None and len(runs) == 1
    monkeypatch.setattr(host, "_LIBS", {})       # as in a new process
    exe = _build(graph)
    assert exe.host_fused is not None and len(runs) == 1, "no second compile"
    np.testing.assert_allclose(exe(np.ones(6))[0], 6 * np.cos(1.0))


def test_the_switch_is_checked_and_keys_programs():
    assert "host_fused" in BUILD_SWITCHES and DEFAULTS["host_fused"] is True
    with pytest.raises(dg.DualgpuError, match="host_fused"):
        config["host_fused"] = "yes"
    assert config["host_fused"] is True


# ------------------------------------------------------------------ OpenMP threads
_THREADS_SCRIPT = """
import sys
import numpy as np
import dualgpu as dg
from dualgpu.codegen.host_regions import host_fused_program
x = np.random.default_rng(5).uniform(-3, 3, 3 * 70001)
g = dg.trace(lambda x: (np.sum(np.exp(-x * x)), np.sin(x) * x), x)
prog = host_fused_program(g, min_elements=0)
assert prog is not None and "#pragma omp" in prog.source
total, values = prog(x)
print(float(total).hex(), float(np.sum(values)).hex())
"""


@needs_gxx
def test_parallel_regions_give_the_same_bits_on_any_number_of_threads():
    """A large region runs on OpenMP's threads; its grid reduction sums fixed chunks in
    order, so one thread and two give the same bits (and both NumPy's value closely)."""
    import subprocess

    outs = []
    for threads in ("1", "2"):
        env = dict(os.environ, OMP_NUM_THREADS=threads,
                   PYTHONPATH=str(Path(__file__).resolve().parents[2]))
        proc = subprocess.run([sys.executable, "-c", _THREADS_SCRIPT], env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        outs.append(proc.stdout.split())
    assert outs[0] == outs[1]
    x = np.random.default_rng(5).uniform(-3, 3, 3 * 70001)
    np.testing.assert_allclose(float.fromhex(outs[0][0]), np.sum(np.exp(-x * x)), rtol=1e-12)


def test_which_regions_run_on_threads():
    """Elementwise regions of at least PARALLEL_MIN threads share their loops out; a grid
    reduction that large sums CHUNKS chunks; a small region stays one serial loop."""
    from dualgpu.fusion import plan_graph

    def text(n, f):
        return host_regions.region_host_text(plan_graph(dg.trace(f, np.ones(n))).regions[0])

    big = host_regions.PARALLEL_MIN
    assert "#pragma omp parallel for collapse(1)" in text(big, lambda x: np.sin(x) * x)
    chunked = text(big, lambda x: np.sum(np.exp(x)))
    assert f"part_g0[{host_regions.CHUNKS}]" in chunked and "for (int c = 0;" in chunked
    assert "#pragma omp" not in text(big - 1, lambda x: np.sum(np.exp(x)))
