"""jit's traced Python floats on CuPy: weakly typed 0-d inputs in the fused kernels, the
unfused path and CUDA-graph replays (a new value is data, never a baked-in constant)."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

cp = pytest.importorskip("cupy")


def test_cupy_traced_float_is_weak_and_new_values_are_data(path):
    x = np.linspace(-1.0, 1.0, 7).astype(np.float32)
    xd = cp.asarray(x)
    calls = []

    def step(v, dt):
        calls.append(None)
        return v + dt * np.sin(v) - np.where(v > dt, v, dt)

    f = dg.jit(step)
    for dt in (0.1, -0.0, 0.35, 0.1):
        got = f(xd, dt)
        want = x + dt * np.sin(x) - np.where(x > dt, x, dt)
        assert got.dtype == want.dtype == np.float32
        np.testing.assert_allclose(cp.asnumpy(got), want, rtol=1e-6, atol=1e-7)
    assert len(calls) == 1
