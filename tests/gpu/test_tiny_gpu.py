"""Tiny programs on the device: the Dense(10→1) HVP runs as one kernel of one block
(dualgpu/codegen/tiny.py), captured as a CUDA graph of one node and replayed on new values,
equal to the NumPy backend."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from gpu_device import cupy_or_skip

import dualgpu as dg
from dualgpu.runtime.executor import config
from dualgpu.runtime.signature import Signature

cp = cupy_or_skip()
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.dense_tiny import loss, make_inputs  # noqa: E402


def _exe(fn, args):
    fargs, _ = fn.split(tuple(args))
    return fn.compiled(Signature(fargs, {}, fn.argnums, fn.__name__)).exe


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 2e-5)])
def test_dense_hvp_is_one_tiny_kernel_replayed_as_a_graph(dtype, tol):
    h = dg.hvp(loss)
    sets = [tuple(a.astype(dtype) for a in s) for s in make_inputs(np, n_sets=4)]
    g = [cp.asarray(a) for a in sets[0]]
    h(*g)
    exe = _exe(h, g)
    assert exe._fn.tiny is not None, "the Dense HVP takes the tiny path"
    assert "one tiny kernel" in exe.source
    runner = exe.graph_runner
    for k in range(12):             # the same arrays, new values in place: replays
        values = sets[k % len(sets)]
        for d, a in zip(g, values):
            d[...] = cp.asarray(a)
        got = cp.asnumpy(h(*g))
        np.testing.assert_allclose(got, h(*values), rtol=tol, atol=tol)
    assert runner.failed is None, runner.failed
    assert runner.replays >= 3


def test_the_switch_keeps_the_plan():
    config["tiny_kernel"] = False
    h = dg.hvp(loss)
    g = [cp.asarray(a) for a in make_inputs(np, n_sets=1)[0]]
    want = h(*[cp.asnumpy(a) for a in g])
    np.testing.assert_allclose(cp.asnumpy(h(*g)), want, rtol=1e-5, atol=1e-6)
    assert _exe(h, g)._fn.tiny is None
