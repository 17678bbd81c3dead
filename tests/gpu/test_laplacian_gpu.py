"""Issue 16 on the device: the per-point Laplacian of the benchmark's tanh MLP on CuPy,
against the float64 forward Laplacian in NumPy, at both matmul precisions; and the memory
a call holds (each value freed after its last read) against the CPU count of the program."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.runtime.executor import config

cp = pytest.importorskip("cupy")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks import laplacian as bench  # noqa: E402

HIDDEN, POINTS, D = (256, 256, 128, 128), 512, 20


@pytest.fixture(autouse=True)
def _restore():
    yield
    config["matmul_precision"] = "float32"


def _rel_err(got, want):
    got = cp.asnumpy(got).astype(np.float64)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


@pytest.mark.parametrize("precision,tol", [("float32", 1e-4), ("tf32", 2e-2)])
def test_mlp_laplacian_at_both_precisions(precision, tol):
    args = bench.make_inputs(np, D, HIDDEN, POINTS)
    want = bench.reference(np, args)
    config["matmul_precision"] = precision
    got = dg.laplacian(bench.u, batch_axes=0)(*(cp.asarray(a) for a in args))
    assert got.shape == (POINTS,) and got.dtype == np.float32
    assert _rel_err(got, want) < tol


def test_mlp_laplacian_holds_what_is_alive():
    """The pool grows to about the program's live peak (two Jacobians of the widest layer),
    not to the sum of every value the call computes."""
    args = bench.make_inputs(np, D, HIDDEN, POINTS)
    costs = bench.program_costs(dg.trace(dg.laplacian(bench.u, batch_axes=0), *args))
    lap = dg.laplacian(bench.u, batch_axes=0)
    dev = [cp.asarray(a) for a in args]
    lap(*dev)                                   # build and compile outside the measure
    pool = cp.get_default_memory_pool()
    cp.cuda.get_current_stream().synchronize()
    pool.free_all_blocks()
    before = pool.total_bytes()
    out = lap(*dev)
    cp.cuda.get_current_stream().synchronize()
    peak_mb = (pool.total_bytes() - before) / 2**20
    del out
    assert peak_mb < 1.3 * costs["peak_MB"] + 8, (peak_mb, costs)   # + the small values
    assert peak_mb < 0.6 * costs["materialised_MB"], (peak_mb, costs)
