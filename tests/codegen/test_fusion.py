"""The fusion planner and the CUDA code generator, tested without a GPU.

* every plan is evaluated with NumPy, region by region in plan order, the way the kernels
  evaluate it (``dualgpu.fusion.emulate``), and compared with the unfused program;
* the generated kernel text of scenario 2 and of a small elementwise chain is compared with
  golden files (``DUALGPU_UPDATE_GOLDEN=1 pytest tests/codegen/test_fusion.py`` rewrites them);
* when ``nvcc`` is on PATH, every generated kernel compiles (``nvcc --ptx``).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.codegen.c_source import c_literal
from dualgpu.codegen.cuda import plan_source, region_kernels
from dualgpu.codegen.products import matmul_kernel
from dualgpu.core.interpret import eval_graph
from dualgpu.fusion import LibraryStep, emulate, plan_graph

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


# --------------------------------------------------------------------------- programs
def scenario2(x, mu):
    return np.exp(-np.sum((x - mu[:, None, None, :]) ** 2, axis=0))


def dense_loss(p, x, y):
    W = p[:10].reshape(10, 1)
    b = p[10:]
    return np.sum((dg.nn.sigmoid(x @ W + b) - y) ** 2)


def column_of_a_row(x, y, w):
    """The first kernel computes ``x + y`` along the columns (``w * x`` made its domain 2-D)
    and cannot read its column along the rows: the second kernel reads it from memory."""
    return w * x, x * (x + y).reshape(-1, 1)


def recomputed_along_rows(x, y, w, q):
    """The second kernel reads ``exp(x + y)`` along the rows (the axis of ``sin(w)``'s
    reshape); the first computes it along the columns."""
    a = np.exp(x + y)
    m = w * x
    return m @ q, w * y, np.sin(w).reshape(-1) * a


def fusion_cases(dtype=np.float64, n=4, seed=0):
    """``name -> (function to trace, example args)``: the programs the tests plan, emulate,
    compile and (on a GPU) run. Shared with tests/gpu."""
    rng = np.random.default_rng(seed)

    def r(*shape, lo=-1.0, hi=1.0):
        return rng.uniform(lo, hi, size=shape).astype(dtype)

    w10 = r(64, 10)
    cases = {
        "scenario2": (dg.grad_and_hvp(scenario2, batch_axes=(1, 2, 3), return_value=True),
                      (r(3, n, n, n), r(3, n), r(3, n, n, n))),
        "dense_hvp": (dg.hvp(dense_loss), (r(11), r(4, 10), r(4, 1), r(11))),
        "dense_grad_and_hvp": (dg.grad_and_hvp(dense_loss, return_value=True),
                               (r(11), r(4, 10), r(4, 1), r(11))),
        "chain": (dg.jit(lambda x: np.exp(-x * x) * np.sin(x) + 1.5), (r(37),)),
        "log_softmax": (dg.grad_and_hvp(
            lambda x: np.sum(dg.nn.log_softmax(x, axis=-1) * w10)), (r(64, 10), r(64, 10))),
        "keepdims_middle": (dg.grad_and_hvp(
            lambda x: np.sum(np.tanh(x - np.sum(x, axis=1, keepdims=True) * 0.2) ** 2)),
            (r(4, 5, 6), r(4, 5, 6))),
        "broadcast_growth": (dg.jit(lambda a, b: np.sin(a) * b + a), (r(5), r(3, 5))),
        "where_int": (dg.jit(lambda x, k: np.where(x > 0, x * k, -x) + (k > 2)),
                      (r(6, 7), rng.integers(0, 5, size=(6, 7)).astype(np.int32))),
        "extrema_prod": (dg.grad(lambda x: np.sum(np.max(x, axis=0) * np.prod(x, axis=0)
                                                  + np.min(x, axis=0))), (r(3, 50),)),
        "value_and_grad": (dg.value_and_grad(lambda x: np.sum(x ** 3)), (r(1000),)),
        "rolled_loop": (dg.grad_and_hvp(lambda x: np.sum(np.cos(np.sum(x * x, axis=0)))),
                        (r(40, 3000), r(40, 3000))),
        "two_stage": (dg.grad_and_hvp(
            lambda x: np.sum(np.exp(x - np.max(x, axis=0)) / np.sum(np.exp(x), axis=0))),
            (r(5, 300), r(5, 300))),
        "scalar_inputs": (dg.grad(lambda x, y: np.sum(np.sin(x) * y)), (r(8), r())),
        # a value of one kernel that another reads along other domain axes: merged into
        # one kernel, or recomputed by the second, it must keep the reader's axes
        "column_of_a_row": (dg.jit(column_of_a_row), (r(n + 1), r(n + 1), r(n + 1, 1))),
        "recomputed_along_rows": (dg.jit(recomputed_along_rows),
                                  (r(n + 1), r(n + 1), r(n + 1, 1), r(n + 1, 2))),
    }
    return cases


def _graph(case):
    fn, args = case
    return dg.trace(fn, *args), args


def _assert_close(got, want, rtol=1e-12, atol=1e-14):
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64),
                                   rtol=rtol, atol=atol)


def _check_plan_covers(graph, plan, recompute=False):
    """Every equation appears exactly once (with ``recompute``: at most in two places or
    pruned as dead), and every value is defined before use."""
    seen = []
    for step in plan.steps:
        seen += [step.eqn] if isinstance(step, LibraryStep) else step.eqns
    if recompute:
        assert set(map(id, seen)) <= set(map(id, graph.eqns))
        return
    assert sorted(map(id, seen)) == sorted(map(id, graph.eqns))


# --------------------------------------------------------------------------- plans
CASE_NAMES = list(fusion_cases())


@pytest.mark.parametrize("name", CASE_NAMES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("recompute", [False, True])
def test_emulated_plan_matches_unfused(name, dtype, recompute):
    graph, args = _graph(fusion_cases(dtype)[name])
    plan = plan_graph(graph, recompute=recompute)
    _check_plan_covers(graph, plan, recompute)
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    _assert_close(emulate(plan, args), eval_graph(graph, args), rtol=rtol, atol=rtol * 1e-2)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_releases_drop_each_value_once_after_its_last_read(name):
    """``plan.releases`` (what a runner frees after each step): every value a step reads or
    writes is dropped exactly once, after the last step that reads it, never an output."""
    graph, _ = _graph(fusion_cases()[name])
    plan = plan_graph(graph)
    outputs = {a.id for a in graph.outputs if hasattr(a, "id")}
    consts = {c.id for c in graph.consts}
    touched, last, dropped_at = set(), {}, {}
    for i, step in enumerate(plan.steps):
        if isinstance(step, LibraryStep):
            reads, writes = [a for a in step.eqn.inputs if hasattr(a, "id")], step.eqn.outs
        else:
            reads, writes = step.inputs, step.outputs
        for v in reads:
            last[v.id] = i
        touched.update(v.id for v in list(reads) + list(writes))
        for vid in plan.releases[i]:
            assert vid not in dropped_at, "dropped twice"
            dropped_at[vid] = i
    assert set(dropped_at) == touched - outputs - consts
    for vid, i in dropped_at.items():
        assert last.get(vid, i) == i


def test_scenario2_is_one_region_of_two_kernels():
    graph, _ = _graph(fusion_cases(np.float32, n=100)["scenario2"])
    plan = plan_graph(graph)
    assert len(plan.regions) == 1
    assert plan.kernel_count() == 2
    region = plan.regions[0]
    assert region.loop_extent() == 3 and region.unrolled()
    assert region.thread_count() == 100 ** 3
    assert [s.eqn.prim.name for s in plan.library_steps] == ["getitem"]
    assert len(region.outputs) == 3  # value, gradient, H·v


def test_dense_hvp_elementwise_part_is_one_region():
    graph, _ = _graph(fusion_cases()["dense_hvp"])
    plan = plan_graph(graph)
    big = max(plan.regions, key=lambda r: len(r.eqns))
    names = {e.prim.name for e in big.eqns}
    assert {"logistic", "multiply", "reduce_sum"} <= names
    libs = {s.eqn.prim.name for s in plan.library_steps}
    assert "matmul" in libs and "logistic" not in libs


def test_log_softmax_reductions_fuse_into_loops():
    graph, _ = _graph(fusion_cases()["log_softmax"])
    plan = plan_graph(graph)
    fused = [e.prim.name for r in plan.regions for e in r.eqns]
    assert "reduce_max" in fused and fused.count("reduce_sum") >= 1
    assert any(r.loop_extent() == 10 for r in plan.regions)


def test_describe_names_kernels_and_library_calls():
    fn, args = fusion_cases()["scenario2"]
    plan = plan_graph(dg.trace(fn, *args))
    text = plan_source(plan)
    assert "library: " in text and "getitem" in text
    assert "dg_fused_" in text and "dg_finish_" in text
    assert "grid reduction" in text
    assert 'extern "C" __global__' in text


try:
    from fuzz_programs import programs
    from hypothesis import HealthCheck, given, settings
except ImportError:  # pragma: no cover - the fuzzer module or hypothesis is missing
    programs = None


@pytest.mark.skipif(programs is None, reason="needs hypothesis and tests/helpers/fuzz_programs.py")
def test_random_programs_emulate_like_unfused():
    @settings(max_examples=40, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(programs(max_nodes=8, sparse=False))
    def check(prog):
        f, loss = prog.functions()
        args = prog.args()
        argnums = tuple(range(len(args)))
        dirs = tuple(np.ones_like(np.asarray(a)) * 0.3 for a in args)
        fns = [(dg.jit(f), args, args),
               (dg.grad_and_hvp(loss, argnums=argnums, return_value=True), args + (dirs,),
                args + dirs)]
        for fn, a, flat in fns:
            try:
                graph = dg.trace(fn, *a)
            except dg.DualgpuError:
                continue
            if len(graph.inputs) != len(flat):  # unused inputs were pruned
                continue
            for recompute in (False, True):
                plan = plan_graph(graph, recompute=recompute)
                _check_plan_covers(graph, plan, recompute)
                _assert_close(emulate(plan, flat), eval_graph(graph, flat), rtol=1e-10,
                              atol=1e-12)
                for region in plan.regions:
                    region_kernels(region)  # generates without error

    check()


# --------------------------------------------------------------------------- kernel text
def test_c_literals_are_typed():
    assert c_literal(2, np.float32) == "2.0f"
    assert c_literal(0.1, np.float32) == "0.1f"
    assert c_literal(2, np.float64) == "2.0"
    assert c_literal(-1.5, np.float64) == "(-1.5)"
    assert c_literal(-1.5, np.float32) == "(-1.5f)"
    assert c_literal(3, np.int64) == "3LL"
    assert c_literal(True, np.bool_) == "true"
    assert c_literal(float("nan"), np.float64) == "__longlong_as_double(0x7ff8000000000000LL)"


def test_small_matmul_kernel_reads_strided_operands():
    name, src = matmul_kernel(4, 1, 10, (1, 4), (1, 0), np.float32)
    assert name.startswith("dg_matmul_") and "a[i * 1 + p * 4]" in src and "float acc" in src


def test_float32_kernels_use_float_literals():
    fn, args = fusion_cases(np.float32)["chain"]
    text = plan_source(plan_graph(dg.trace(fn, *args)))
    assert "1.5f" in text and "double" not in text


def test_kernel_sources_are_deterministic():
    texts = []
    for _ in range(2):
        fn, args = fusion_cases(np.float32, n=100)["scenario2"]
        texts.append(plan_source(plan_graph(dg.trace(fn, *args))))
    assert texts[0] == texts[1]


def test_large_domains_use_64_bit_indices():
    x = np.broadcast_to(np.zeros(1, np.float32), (3, 1 << 30))
    graph = dg.trace(lambda x: np.exp(x) * 2, x)
    src = region_kernels(plan_graph(graph).regions[0]).source
    assert "long long tid" in src
    small = region_kernels(plan_graph(dg.trace(lambda x: np.exp(x) * 2,
                                               np.zeros(8, np.float32))).regions[0]).source
    assert "const int tid" in small


def _golden_sources():
    fn, args = fusion_cases(np.float32, n=100)["scenario2"]
    s2 = plan_graph(dg.trace(fn, *args))
    fn, args = fusion_cases(np.float32)["chain"]
    chain = plan_graph(dg.trace(fn, *args))
    return {"scenario2_float32.cu": region_kernels(s2.regions[0]).full_source(),
            "elementwise_chain_float32.cu": region_kernels(chain.regions[0]).full_source()}


@pytest.mark.parametrize("name", ["scenario2_float32.cu", "elementwise_chain_float32.cu"])
def test_golden_kernel_text(name):
    text = _golden_sources()[name]
    path = GOLDEN / name
    if os.environ.get("DUALGPU_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing {path}: run with DUALGPU_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{name} changed; review it, then update the golden file"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_generated_kernels_compile_with_nvcc(tmp_path):
    sources: dict[str, str] = {}
    for dtype in (np.float64, np.float32):
        for case in fusion_cases(dtype).values():
            graph, _ = _graph(case)
            for region in plan_graph(graph).regions:
                rk = region_kernels(region)
                sources[rk.name] = rk.source
                if rk.finish_name:
                    sources[rk.finish_name] = rk.finish_source
    x = np.broadcast_to(np.zeros(1, np.float32), (3, 1 << 30))
    rk = region_kernels(plan_graph(dg.trace(lambda x: np.sum(np.exp(x) * 2), x)).regions[0])
    sources[rk.name] = rk.source
    sources[rk.finish_name] = rk.finish_source
    for dtype in (np.float64, np.float32):
        name, src = matmul_kernel(4, 1, 10, (1, 4), (1, 0), dtype)
        sources[name] = src
    cu = tmp_path / "kernels.cu"
    cu.write_text("\n".join(sources.values()))
    done = subprocess.run(["nvcc", "--ptx", "-x", "cu", str(cu), "-o", str(tmp_path / "k.ptx")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]


def test_region_reading_a_slice_of_a_big_array_indexes_in_64_bits():
    """x[:, :8] of a 300000 x 8192 float32 array: the region's domain is small, but the
    offset i0 * 8192 of its last rows passes INT_MAX; a 32-bit index wraps and reads the
    wrong memory."""
    x = np.ones((300000, 8), np.float32)
    region = plan_graph(dg.trace(lambda x: np.sin(x) * 2, x)).regions[0]
    src = region_kernels(region, {region.inputs[0].id: (8192, 1)}).source
    assert "const long long i0" in src and "in0[i0 * 8192 + i1]" in src, src
    # contiguous: the 32-bit text
    assert "const int i0" in region_kernels(region).source


def _held_peak_bytes(plan) -> int:
    """The most bytes of values a call holds at once: each step's new values (views made
    by library steps hold none), less the values released after each step."""
    live, peak = {}, 0
    for step, dead in zip(plan.steps, plan.releases):
        library = isinstance(step, LibraryStep)
        if not (library and step.eqn.prim.has("view")):
            for v in step.eqn.outs if library else step.outputs:
                live[v.id] = int(np.prod(v.shape)) * np.dtype(v.dtype).itemsize
        peak = max(peak, sum(live.values()))
        for vid in dead:
            live.pop(vid, None)
    return peak


def test_recompute_on_the_mlp_hvp():
    """Planner item 5 of issue 12: the sigmoid layer's kernel writes only what the products
    read; the last kernel recomputes the rest from the two pre-activations (and absorbs the
    sum of two products), so the HVP holds at most 2x the gradient's values."""

    from benchmarks.mlp import Dims, make_inputs, make_loss

    dims = Dims(784, 512, 10, 256)
    loss = make_loss(dims)
    p, X, Y, v = make_inputs(np, dims, 1)[0]
    hvp = dg.trace(dg.hvp(loss), p, X, Y, v)
    grad = dg.trace(dg.grad(loss), p, X, Y)
    before, after = plan_graph(hvp), plan_graph(hvp, recompute=True)
    assert [len(r.outputs) for r in before.regions] == [7, 2, 1, 1, 1]
    assert [len(r.outputs) for r in after.regions] == [2, 2, 1, 1]
    assert len(after.regions[-1].inputs) < len(before.regions[-1].inputs)
    ratio_before = _held_peak_bytes(before) / _held_peak_bytes(plan_graph(grad))
    ratio_after = (_held_peak_bytes(after)
                   / _held_peak_bytes(plan_graph(grad, recompute=True)))
    assert ratio_after <= 2.0 < ratio_before, (ratio_before, ratio_after)
    args = (p, X, Y, v)
    _assert_close(emulate(after, args), eval_graph(hvp, args), rtol=1e-5, atol=1e-7)


# --------------------------------------------------------------------------- issue 40
def _written_and_computed(plan):
    """Per region: the ops it computes, and the names of the ops whose values it writes."""
    return [([e.prim.name for e in r.eqns],
             sorted({e.prim.name for e in r.eqns if e.outs[0] in r.outputs}))
            for r in plan.regions]


@pytest.mark.parametrize("recompute", [False, True])
def test_costly_producer_of_a_broadcast_is_materialised_once(recompute):
    """``sigmoid(x) * U`` with ``U`` ten copies of ``x``'s shape: a kernel over ``U``'s
    domain would compute exp and the division at each copy; the sigmoid is written once by
    a kernel of ``x``'s domain, which the product reads. A cheap producer (a negation and a
    cast) is recomputed by the product's kernel, and a costly one reduced over the axis it is
    broadcast along (an in-thread loop) is computed once per thread: one kernel each."""
    x, u = np.ones((128, 128), np.float32), np.ones((10, 128, 128), np.float32)

    def plan(f):
        return plan_graph(dg.trace(f, x, u), recompute=recompute)

    sigmoid = plan(lambda x, u: 1 / (1 + np.exp(-x)) * u)
    assert _written_and_computed(sigmoid) == [
        (["negative", "exp", "add", "true_divide"], ["true_divide"]),
        (["multiply"], ["multiply"])]
    assert [r.domain for r in sigmoid.regions] == [(1, 128, 128), (10, 128, 128)]
    small = plan(lambda x, u: 1 / (1 + np.exp(-x[:8, :8])) * u[:, :8, :8])   # launch-bound
    assert [len(r.eqns) for r in small.regions] == [5]
    cheap = plan(lambda x, u: (-x).astype(np.float64) * u)
    assert _written_and_computed(cheap) == [
        (["negative", "convert_element_type", "multiply"], ["multiply"])]
    looped = plan(lambda x, u: np.sum(np.tanh(x) * u, axis=0))
    assert [len(r.eqns) for r in looped.regions] == [3] and looped.regions[0].loop_axes
    _assert_close(emulate(sigmoid, (x, u)), [1 / (1 + np.exp(-x)) * u], rtol=1e-6)


def test_repeats_allowed_per_target():
    """The GPU is memory-bound where the host loop is compute-bound (benchmarks/NOTES.md,
    "Issue 40"): at four copies the sigmoid is computed again at each by the device plan,
    written once by the host's; at ten copies both write it once."""
    x = np.ones((128, 256), np.float32)
    for k, device_regions in ((4, 1), (10, 2)):
        g = dg.trace(lambda x, u: 1 / (1 + np.exp(-x)) * u, x, np.ones((k,) + x.shape,
                                                                        np.float32))
        assert len(plan_graph(g, target="host").regions) == 2
        assert len(plan_graph(g).regions) == device_regions


def test_padded_read_broadcast_reads_a_costly_input_from_memory():
    """The gradient of a stencil (padded reads of ``cos`` and ``sin`` of differences) times
    ``U``, ten copies of its shape: with recomputation, a padded read in the product's
    kernel would evaluate the sines and cosines at each copy; it reads them from memory."""
    grad = dg.grad(lambda x: np.sum(np.sin(x[1:] - x[:-1]) ** 2))
    x, u = np.linspace(0, 1, 1 << 14), np.ones((10, 1 << 14))
    plan = plan_graph(dg.trace(lambda x, u: grad(x) * u, x, u), recompute=True)
    assert [r.domain for r in plan.regions] == [((1 << 14) - 1,), (10, 1 << 14)]
    assert not plan.regions[1].cones and plan.regions[0].outputs
    _assert_close(emulate(plan, (x, u)), [grad(x) * u])
