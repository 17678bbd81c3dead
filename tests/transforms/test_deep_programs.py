"""Deep programs: time-stepping loops and long chains of tens of thousands of equations
trace, transform (jvp, grad, hvp), simplify and generate code (Python, and CUDA text without
a GPU) with no recursion and in time linear in their length.

Every build runs under a recursion limit only a few hundred frames above the caller's, so a
pass that recursed once per equation (or per step of a chain) fails here at once.
"""
from __future__ import annotations

import contextlib
import json
import sys
import time

import numpy as np
import pytest

import dualgpu as dg
from benchmarks import build_time
from dualgpu.codegen.cuda import plan_source
from dualgpu.core.interpret import eval_graph
from dualgpu.fusion import ROLLED_LOOPS_MAX, emulate, plan_graph

DT = 0.01
HEADROOM = 400  # frames allowed above the test's own: far below one per step


@contextlib.contextmanager
def shallow_stack(headroom: int = HEADROOM):
    """Lower the recursion limit to ``headroom`` frames above the current depth."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + headroom)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


# --------------------------------------------------------------------------- explicit Euler
def euler_loss(steps: int):
    """``sum(y_N ** 2)`` after ``steps`` explicit Euler steps of
    ``y' = W sin(y) - y**3 - 0.1 y`` (8 equations a step)."""
    def loss(x, W):
        y = x
        for _ in range(steps):
            y = y + DT * (W @ np.sin(y) - y ** 3 - 0.1 * y)
        return np.sum(y ** 2)

    return loss


def euler_reference(x, W, v, steps: int):
    """Value, gradient and H·v of :func:`euler_loss`, by a hand-written adjoint sweep (and
    its tangent) in plain NumPy."""
    ys, y_dots = [], []
    y, y_dot = x, v
    for _ in range(steps):
        ys.append(y)
        y_dots.append(y_dot)
        y_dot = y_dot + DT * (W @ (np.cos(y) * y_dot) - 3 * y ** 2 * y_dot - 0.1 * y_dot)
        y = y + DT * (W @ np.sin(y) - y ** 3 - 0.1 * y)
    value = np.sum(y ** 2)
    g, g_dot = 2 * y, 2 * y_dot
    for y, y_dot in zip(reversed(ys), reversed(y_dots)):
        wg, wg_dot = W.T @ g, W.T @ g_dot
        g_dot = g_dot + DT * (np.cos(y) * wg_dot - 3 * y ** 2 * g_dot - 0.1 * g_dot
                              - np.sin(y) * y_dot * wg - 6 * y * y_dot * g)
        g = g + DT * (np.cos(y) * wg - 3 * y ** 2 * g - 0.1 * g)
    return value, g, g_dot


@pytest.fixture(scope="module")
def euler_args():
    rng = np.random.default_rng(0)
    return rng.uniform(-1, 1, 6), rng.normal(size=(6, 6)) / 3, rng.normal(size=6)


def _build_and_check(steps, x, W, v):
    """Build (first call) grad and hvp of the ``steps``-step loss; check both against the
    reference; return the CPU seconds the two first calls took."""
    loss = euler_loss(steps)
    value, g_want, hv_want = euler_reference(x, W, v, steps)
    t0 = time.process_time()
    with shallow_stack():
        val, g = dg.value_and_grad(loss)(x, W)
        hv = dg.hvp(loss)(x, W, v)
    seconds = time.process_time() - t0
    np.testing.assert_allclose(val, value, rtol=1e-12)
    np.testing.assert_allclose(g, g_want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(hv, hv_want, rtol=1e-10, atol=1e-12)
    return seconds


def test_150_euler_steps_grad_hvp_and_jvp(euler_args):
    x, W, v = euler_args
    _build_and_check(150, x, W, v)
    loss = euler_loss(150)
    with shallow_stack():
        _, out_dot = dg.jvp(loss, (x, W), (v, np.zeros_like(W)))
    np.testing.assert_allclose(out_dot, dg.grad(loss)(x, W) @ v, rtol=1e-10)


def test_1000_euler_steps_build_in_linear_time(euler_args):
    """8k equations (the HVP program: over 45k) build, and build in about 10× the time of
    800 equations; a quadratic pass would take about 100×. (3000 and then 1500 steps ran in
    CI until the suite neared its time limit; the depth they prove is the same: every build
    runs 400 frames above the test's own.)"""
    x, W, v = euler_args
    assert len(dg.trace(euler_loss(1000), x, W).eqns) >= 8_000
    small = min(_build_and_check(100, x, W, v) for _ in range(2))
    big = _build_and_check(1000, x, W, v)
    assert big < 60, f"grad + hvp of 8k equations took {big:.1f} s of CPU"
    assert big < 25 * max(small, 0.05), f"10x the equations took {big / small:.1f}x the time"


def test_the_graph_of_a_deep_hvp_prints_validates_and_generates(euler_args):
    x, W, v = euler_args
    hvp = dg.hvp(euler_loss(300))
    with shallow_stack():
        g = dg.trace(hvp, x, W, v)
        g.validate()
        text = str(g)
        source = dg.source(hvp, x, W, v)
    assert len(g.eqns) > 6_000
    assert text.count("\n") >= len(g.eqns)
    assert source.count("\n") >= len(g.eqns)


# --------------------------------------------------------------------------- long chains
@pytest.mark.parametrize("n", [493, 5000])
def test_chained_additions(n):
    def f(x):
        y = x
        for _ in range(n):
            y = y + x
        return np.sum(y)

    x = np.linspace(0.1, 1.0, 5)
    with shallow_stack():
        value = dg.jit(f)(x)
        g = dg.grad(f)(x)
        hv = dg.hvp(f)(x, np.ones(5))
    np.testing.assert_allclose(value, (n + 1) * np.sum(x))
    np.testing.assert_allclose(g, np.full(5, n + 1.0))
    np.testing.assert_allclose(hv, np.zeros(5))


def test_unpacking_thousands_of_elements_gives_one_concatenate():
    """The gradient of using p[0], p[1], ... p[2999] one by one: 3000 scatters and a chain
    of 2999 adds, merged into one concatenate."""
    n = 3000

    def f(p):
        total = p[0] ** 2
        for i in range(1, n):
            total = total + (i + 1) * p[i] ** 2
        return total

    p = np.linspace(-1, 1, n)
    with shallow_stack():
        counts = dg.trace(dg.grad(f), p).primitive_counts()
        g = dg.grad(f)(p)
    assert counts.get("concatenate") == 1 and "scatter_add" not in counts
    np.testing.assert_allclose(g, 2 * np.arange(1, n + 1) * p)


# --------------------------------------------------------------------------- CUDA text
def _row_centered_loss(steps):
    """A step that reduces along the rows: each step adds an in-kernel loop."""
    def loss(x):
        y = x
        for _ in range(steps):
            y = y - DT * np.sin(y - np.mean(y, axis=1, keepdims=True))
        return np.sum(y ** 2)

    return loss


@pytest.mark.parametrize("width", [8, 40])  # loops unrolled (8) and rolled (40)
def test_cuda_source_of_a_deep_program_is_linear(width):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2048, width)).astype(np.float32)
    sizes = {}
    for steps in (40, 160):
        with shallow_stack():
            graph = dg.trace(dg.hvp(_row_centered_loss(steps)), x, x)
            plan = plan_graph(graph)
            text = plan_source(plan)
        assert plan.regions and "for (int r = 0;" in text
        for region in plan.regions:
            if region.loop_axes and not region.unrolled():
                assert max(region.level.values()) <= ROLLED_LOOPS_MAX
        sizes[steps] = (len(graph.eqns), text.count("\n"))
    (n_small, lines_small), (n_big, lines_big) = sizes[40], sizes[160]
    assert lines_big / lines_small < 1.5 * n_big / n_small  # not ~16x for 4x the steps


def test_emulated_deep_plans_match_the_unfused_program():
    """Regions split by library calls (a matmul a step) and by the rolled-loop cap."""
    rng = np.random.default_rng(2)
    x, W = rng.normal(size=8), rng.normal(size=(8, 8)) / 3
    xs = rng.normal(size=(2048, 40))
    cases = [(dg.hvp(euler_loss(200)), (x, W, x)),
             (dg.hvp(_row_centered_loss(12)), (xs, xs))]
    for fn, args in cases:
        with shallow_stack():
            graph = dg.trace(fn, *args)
            plan = plan_graph(graph)
            got = emulate(plan, args)
        want = eval_graph(graph, args)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_build_time_benchmark_runs_at_a_tiny_size(tmp_path):
    out = tmp_path / "build_time.json"
    rows = build_time.main(["--sizes", "40", "80", "--modes", "hvp", "--out", str(out)])
    assert [r["size"] for r in rows] == [40, 80] and rows[1]["built_eqns"] > rows[1]["eqns"]
    assert json.loads(out.read_text())["rows"][0]["mode"] == "hvp"
