"""Smoke tests of the benchmark harness (benchmarks/), on the CPU with tiny sizes.

The real benchmarks need a GPU (``make bench``); here we check that the modules import,
that the report writer turns fake timings into a table, targets, JSON and a plot, and that
every workload runs its correctness checks at a tiny NumPy size. Peers (JAX, torch) that are
not installed must give skipped rows, never a crash.
"""
from __future__ import annotations

import json
import time

import pytest

from benchmarks import (
    common,
    curvature,
    dense_tiny,
    laplacian,
    mlp,
    mlp_deep,
    mlp_layouts,
    overhead,
    report,
    run,
    scenario2,
    sparse,
    sparse_derivatives,
    taylor,
    timing,
)
from benchmarks.report import Report, Row


def tiny_ctx(**kw) -> common.Context:
    logs: list[str] = []
    ctx = common.Context(gpu=False, quick=True, tiny=True, compile=False, budget_s=0.02,
                         impl_timeout_s=60, log=logs.append, debug=logs.append, **kw)
    ctx.logs = logs
    return ctx


# ------------------------------------------------------------------------------ report
def fake_rows(gpu_sizes: bool = True) -> list[Row]:
    rows = [
        Row("scenario2", "N=1M", "hand-fused", "ok", 20.0, 1e-7, reference=True),
        Row("scenario2", "N=1M", "dualgpu", "ok", 24.0, 2e-7),
        Row("scenario2", "N=1M", "jax jit(jvp(grad))", "ok", 52.0, 3e-7),
        Row("scenario2", "N=1M", "torch.func", "skipped", note="torch not importable"),
        Row("scenario2", "N=8M", "hand-fused", "ok", 100.0, reference=True),
        Row("scenario2", "N=8M", "dualgpu", "ok", 140.0),
        Row("mlp", "hvp", "dualgpu", "ok", 300.0, extra={"peak_MB": 90.0}),
        Row("mlp", "hvp", "dualgpu (tf32)", "ok", 140.0),
        Row("mlp", "hvp", "jax", "ok", 148.0),
        Row("mlp", "hvp", "jax (precision=highest)", "ok", 350.0),
        Row("mlp", "grad", "dualgpu", "ok", 200.0, extra={"peak_MB": 40.0}),
        Row("dense_tiny", "B=4", "dualgpu", "ok", 25.0),
        Row("overhead", "first call", "dualgpu", "ok", 5e5),
        Row("sweep", "N=1e4", "hand-fused", "ok", 5.0, reference=True, extra={"N": 10**4}),
        Row("sweep", "N=1e4", "dualgpu", "ok", 9.0, extra={"N": 10**4}),
        Row("sweep", "N=1e5", "dualgpu", "ok", 12.0, extra={"N": 10**5}),
    ]
    return rows


def test_report_ratios_targets_json_and_plot(tmp_path):
    rep = Report(env={"gpu": "fake"}, args={"gpu": True})
    rep.add(fake_rows())
    table = rep.table()
    assert "1.20" in table                      # 24 / 20 on N=1M
    assert "skipped" in table and "torch not importable" in table
    verdicts = {(t["what"]): t["verdict"] for t in rep.targets()}
    assert verdicts["value+grad+HVP, N=1M"] == "met"              # 1.2x <= 1.25x
    assert verdicts["value+grad+HVP, N=8M"] == "NOT met"          # 1.4x
    assert verdicts["MLP 784-512-10 HVP, float32"] == "NOT met"   # 300 / 350 > 0.8
    assert verdicts["MLP 784-512-10 HVP, tf32"] == "met"          # 140 / 148 <= 1.0
    assert verdicts["MLP 784-512-10 HVP / gradient"] == "met"     # 1.5 <= 1.6
    assert verdicts["MLP 784-512-10 HVP peak memory"] == "NOT met"    # 2.25x > 2x
    assert verdicts["Dense(10->1) HVP, batch 4"] == "NOT met"     # 25 us > 20 us
    assert verdicts["grad sum(tanh(x@A)), nnz 2M"] == "n/a"       # not measured
    assert verdicts["first call of the MLP HVP"] == "met"
    assert "NOT met" in rep.targets_table()
    data = json.loads(open(rep.write_json(str(tmp_path / "r.json"))).read())
    assert data["rows"][1]["ratio"] == pytest.approx(1.2)
    assert {t["verdict"] for t in data["targets"]} >= {"met", "NOT met", "n/a"}
    png = rep.plot(str(tmp_path / "r.png"))
    if png is not None:                          # matplotlib is optional
        assert (tmp_path / "r.png").stat().st_size > 0


def test_targets_are_not_judged_on_a_cpu_run():
    rep = Report(args={"gpu": False})
    rep.add(fake_rows())
    assert {t["verdict"] for t in rep.targets()} == {"n/a"}


def test_fmt_us():
    assert report.fmt_us(12.34) == "12.3 us"
    assert report.fmt_us(2500.0) == "2.50 ms"
    assert report.fmt_us(2.5e6) == "2.50 s"
    assert report.fmt_us(None) == "-"


# ------------------------------------------------------------------------------ timing
def test_time_fn_and_budget():
    calls = []
    t = timing.time_fn(lambda a: calls.append(a), [(1,), (2,)], timing.HostClock(),
                       warmup=2, reps=5, groups=3, budget_s=10)
    assert t.reps == 5 and t.groups == 3 and t.median_us >= 0
    assert set(calls) == {1, 2}                  # inputs rotate
    assert timing.fit_reps(1.0, 20, 7, 3.0) == (1, 3)
    assert timing.fit_reps(1e-6, 20, 7, 3.0) == (20, 7)


def test_time_limit_interrupts_python_loops():
    with pytest.raises(timing.BenchTimeout):
        with timing.time_limit(0.05):
            while True:
                time.sleep(0.001)


def test_measure_turns_failures_into_skipped_rows():
    ctx = tiny_ctx()

    def broken():
        raise RuntimeError("backend unfinished")

    row = common.measure(ctx, workload="w", case="c", impl="dualgpu", build=broken,
                         inputs=[(1,)])
    assert row.status == "skipped" and "backend unfinished" in row.note

    def missing():
        raise common.Skip("jax not importable")

    row = common.measure(ctx, workload="w", case="c", impl="jax", build=missing,
                         inputs=[(1,)])
    assert row.status == "skipped" and row.note == "jax not importable"
    row = common.measure(ctx, workload="w", case="c", impl="id", build=lambda: (lambda a: a),
                         inputs=[(2.0,)], check=lambda out: abs(out - 2.0))
    assert row.status == "ok" and row.rel_err == 0.0


# ------------------------------------------------------------------------------ workloads
WORKLOADS = {
    "scenario2": scenario2.run,
    "sweep": scenario2.run_sweep,
    "mlp": mlp.run,
    "mlp_deep": mlp_deep.run,
    "mlp_layouts": mlp_layouts.run,
    "dense_tiny": dense_tiny.run,
    "sparse": sparse.run,
    "overhead": overhead.run,
    "laplacian": laplacian.run,
    "sparse_derivatives": sparse_derivatives.run,
    "taylor": taylor.run,
    "curvature": curvature.run,
}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_tiny_numpy(name):
    rows = WORKLOADS[name](tiny_ctx())
    assert rows, "a workload returns at least one row"
    if name in ("mlp_deep", "mlp_layouts", "taylor", "curvature"):   # float64 references
        assert all(r.status == "ok" for r in rows if r.impl == "dualgpu")
    for r in rows:
        assert r.status in ("ok", "skipped")
        if r.status == "ok":
            assert r.time_us is not None and r.time_us >= 0
            assert not r.note.startswith("WRONG"), f"{r.impl}: {r.note}"
        else:
            assert r.note, "a skipped row says why"
    hand = [r for r in rows if r.impl == "hand-fused"]
    for r in hand:                                # the NumPy stand-ins always run
        assert r.status == "ok", r.note
        if r.rel_err is not None:
            assert r.rel_err < 1e-5


def _fd_hvp(f, q, X, Y, v, eps=1e-6, step=1e-4):
    """H·v of ``f(q, X, Y)`` by central differences of a central-difference gradient."""
    import numpy as np

    e = np.eye(q.size)
    grad = lambda q: np.array([(f(q + eps * e_i, X, Y) - f(q - eps * e_i, X, Y)) / (2 * eps)
                               for e_i in e])
    return (grad(q + step * v) - grad(q - step * v)) / (2 * step)


def test_reference_formulas_agree_with_finite_differences():
    """The closed forms that every implementation is checked against are themselves right."""
    import numpy as np

    rng = np.random.default_rng(0)
    x, mu, v = scenario2.make_inputs(np, (3, 2, 2, 3), 1)[0]
    fsum = lambda x: float(np.sum(scenario2.reference(np, x, mu, v)[0]))
    grad = lambda x: scenario2.reference(np, x, mu, v)[1]
    _, g, hv = scenario2.reference(np, x, mu, v)
    eps = 1e-6
    x64 = x.astype(np.float64)
    d = rng.standard_normal(x.shape)
    assert (fsum(x64 + eps * d) - fsum(x64 - eps * d)) / (2 * eps) == pytest.approx(
        float(np.sum(g * d)), rel=1e-6)
    fd_hv = (grad(x64 + eps * v) - grad(x64 - eps * v)) / (2 * eps)
    np.testing.assert_allclose(fd_hv, hv, rtol=1e-5, atol=1e-8)

    dims = mlp.TINY
    p, X, Y, v = mlp.make_inputs(np, dims, 1)[0]
    g_of = lambda p: mlp.reference(np, dims, p, X, Y, v)[0]
    fd = (g_of(p.astype(np.float64) + eps * v) - g_of(p.astype(np.float64) - eps * v)) / (2 * eps)
    np.testing.assert_allclose(fd, mlp.reference(np, dims, p, X, Y, v)[1], rtol=1e-4,
                               atol=1e-8)

    deep = mlp_deep.TINY
    p, X, Y, v = (a.astype(np.float64) for a in mlp_deep.make_inputs(np, deep, 1)[0])
    g_of = lambda p: mlp_deep.reference(np, deep, p, X, Y, v)[0]
    np.testing.assert_allclose((g_of(p + eps * v) - g_of(p - eps * v)) / (2 * eps),
                               mlp_deep.reference(np, deep, p, X, Y, v)[1], rtol=1e-5,
                               atol=1e-9)
    loss_deep = mlp_deep.make_loss(deep)
    g_fd = np.array([(loss_deep(p + eps * e_i, X, Y) - loss_deep(p - eps * e_i, X, Y))
                     / (2 * eps) for e_i in np.eye(deep.n_params)])
    np.testing.assert_allclose(g_fd, g_of(p), rtol=1e-5, atol=1e-9)

    dims = mlp_layouts.TINY
    p, X, Y, v = (a.astype(np.float64) for a in mlp.make_inputs(np, dims, 1)[0])
    for loss_name in mlp_layouts.LOSSES:
        want = mlp_layouts.reference(np, dims, loss_name, p, X, Y, v)
        for layout in mlp_layouts.LAYOUTS:
            (q, Xl, Yl, vl), = mlp_layouts.layout_inputs(np, dims, layout, [(p, X, Y, v)])
            fd_hv = _fd_hvp(mlp_layouts.make_loss(dims, layout, loss_name), q, Xl, Yl, vl)
            expect = want if layout == "batch-major" else mlp_layouts.to_feature_major(
                np, dims, want)
            np.testing.assert_allclose(fd_hv, expect, rtol=1e-3, atol=1e-6)

    p, X, Y, v = dense_tiny.make_inputs(np, 1)[0]
    loss = lambda q: float(np.mean((1 / (1 + np.exp(-(X.astype(np.float64) @ q[:10, None]
                                                     + q[10]))) - Y) ** 2))
    q = p.astype(np.float64)
    e = np.eye(11)
    gq = lambda q: np.array([(loss(q + eps * e[i]) - loss(q - eps * e[i])) / (2 * eps)
                             for i in range(11)])
    fd = (gq(q + 1e-3 * v) - gq(q - 1e-3 * v)) / 2e-3
    np.testing.assert_allclose(fd, dense_tiny.reference(np, p, X, Y, v), rtol=1e-3, atol=1e-6)


def test_run_main_writes_json_png_and_log(tmp_path, capsys):
    assert run.main(["--cpu", "--only", "dense_tiny", "--out", str(tmp_path),
                     "--budget", "0.02"]) == 0
    out = capsys.readouterr().out
    assert "Targets (docs/performance.md)" in out and "dense_tiny" in out
    data = json.loads((tmp_path / "latest.json").read_text())
    assert data["args"]["only"] == ["dense_tiny"]
    assert any(r["impl"] == "hand-fused" and r["status"] == "ok" for r in data["rows"])
    assert (tmp_path / "latest.log").exists()


def test_results_never_overwrite_earlier_ones(tmp_path):
    (tmp_path / "bench-20260101-000000.log").write_text("an earlier run")
    (tmp_path / "bench-20260101-000000-2.json").write_text("{}")
    assert run.fresh_base(str(tmp_path), "20260101-000001") == str(
        tmp_path / "bench-20260101-000001")
    assert run.fresh_base(str(tmp_path), "20260101-000000") == str(
        tmp_path / "bench-20260101-000000-3")


def test_laplacian_reference_against_dense_hessians():
    """The hand-written forward Laplacian (the workload's reference) is the trace of the
    Hessian at each point."""
    import numpy as np

    import dualgpu as dg

    args = laplacian.make_inputs(np, 3, laplacian.TINY_HIDDEN, 4)
    args = tuple(a.astype(np.float64) for a in args)
    lap = laplacian.reference(np, args)
    X, params = args[0], args[1:]
    for p in range(4):
        one = lambda x: laplacian.u(x[None, :], *params)[0]
        assert abs(lap[p] - np.trace(dg.hessian(one)(X[p]))) < 1e-10 * (1 + abs(lap[p]))


def test_rows_of_peers_not_installed_collapse_into_one_line():
    from benchmarks.report import Report, Row

    rep = Report()
    rep.rows = [Row("w", "c", "dualgpu", status="ok", time_us=1.0),
                Row("w", "c", "jax", note="jax not importable (ModuleNotFoundError: x)"),
                Row("w", "d", "jax", note="jax not importable (ModuleNotFoundError: x)"),
                Row("w", "d", "torch", note="timeout: 90 s")]
    text = rep.table()
    assert "jax (2 rows)" in text and text.count("not importable") == 0
    assert "timeout" in text  # other skips keep their row


def test_multigpu_harness_on_cpu(tmp_path):
    """benchmarks/multigpu.py's steps with NumPy chunks and two CPU workers: the Dask rows
    match the plain call, only mu and per-chunk values travel between workers, and the
    results are gathered once."""
    pytest.importorskip("distributed")
    from benchmarks import multigpu

    out = tmp_path / "multigpu.json"
    rows = multigpu.main(["--cpu", "--n", "8", "--out", str(out)])
    assert [r["workers"] for r in rows] == [1, 1, 2]
    for r in rows[1:]:
        assert r["max_rel_diff_vs_plain"] == 0.0
        assert r["value_rel_diff_vs_plain"] < 1e-5
        assert r["bytes_gathered_once"] >= r["result_bytes"]
        assert r["bytes_gathered_once"] < 2 * r["result_bytes"]
    assert rows[1]["bytes_between_workers_per_call"] == 0
    assert 0 < rows[2]["bytes_between_workers_per_call"] < 2000
    assert json.loads(out.read_text())["rows"][2]["note"].startswith("CPU harness check")


def test_the_clock_follows_the_library_of_the_result():
    """XLA computes on its own streams, which CuPy's CUDA events do not wait for: a JAX
    implementation is timed on the host to block_until_ready, whatever its row says (the
    Laplacian's JAX rows were timed by CuPy's events: their dispatch), torch by its events."""
    jax_array = type("ArrayImpl", (), {"__module__": "jaxlib._jax"})
    tensor = type("Tensor", (), {"__module__": "torch"})
    ctx = tiny_ctx()
    assert timing.array_library([None, (jax_array(),)]) == "jax"
    assert common.clock_for(ctx, (jax_array(), 1.0)).name == "host+block_until_ready"
    assert timing.array_library({"a": tensor()}) == "torch"
    assert timing.array_library(tensor()) == "torch"
    assert common.clock_for(ctx, 1.0).name == ctx.device_clock().name


def test_ab_refuses_to_time_another_dualgpu_than_its_pythonpath_names(tmp_path):
    """benchmarks.ab run from the new checkout with PYTHONPATH=old imported the new dualgpu
    (python -m puts the current folder first): both "versions" were the new one. It now
    exits when the first PYTHONPATH folder holds a dualgpu that is not the one imported."""
    from benchmarks import ab

    old = tmp_path / "old"
    (old / "dualgpu").mkdir(parents=True)
    (old / "dualgpu" / "__init__.py").write_text("")
    with pytest.raises(SystemExit, match="run it from inside"):
        ab.check_version("/new/dualgpu/__init__.py", str(old))
    ab.check_version(str(old / "dualgpu" / "__init__.py"), str(old))  # the one named
    ab.check_version("/new/dualgpu/__init__.py", "")                   # none named
    ab.check_version("/new/dualgpu/__init__.py", str(tmp_path))        # no dualgpu there


def test_spectral_benchmark_on_numpy(capsys):
    """benchmarks/spectral.py at a tiny NumPy size: every implementation it finds prints a
    line, dualgpu's HVP agreeing with the hand-written one (and JAX's/PyTorch's, where
    installed, not failing)."""
    from benchmarks import spectral

    spectral.main(["--cpu", "--n", "64", "--repeat", "1"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    ours = [r for r in lines if r["impl"] == "dualgpu"]
    assert [r["dtype"] for r in ours] == ["float64", "float32"]
    assert ours[0]["rel_err"] < 1e-13 and ours[1]["rel_err"] < 1e-5
    assert not [r for r in lines if "error" in r]
