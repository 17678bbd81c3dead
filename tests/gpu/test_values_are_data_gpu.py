"""Values are data (issue 10, item 5) on the GPU: inf, -inf, nan and -0.0 literals and fill
values compile and run in fused kernels, float32 and float64, eager and replayed. CPU
version (kernel text, C literals through g++): tests/core/test_values_are_data.py."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

cp = pytest.importorskip("cupy")

FUNCTIONS = {
    "literal": lambda a, v: np.sin(a) * v,
    "fill": lambda a, v: (np.full_like(a, v), np.sin(a)),
    "maximum": lambda a, v: np.maximum(np.sin(a), v),
    "minimum": lambda a, v: np.minimum(a, v) + a,
    "where": lambda a, v: np.where(a > 1.0, a, np.full_like(a, v)),
}


def _leaves(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("v", [np.inf, -np.inf, np.nan, -0.0], ids=repr)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_special_values_in_kernels(name, v, dtype):
    fn = FUNCTIONS[name]
    x = cp.linspace(0.5, 1.5, 8, dtype=dtype)
    f = dg.jit(lambda a: fn(a, v))
    want = _leaves(fn(cp.asnumpy(x), v))
    for _ in range(3):  # eager, capture, replay
        got = _leaves(f(x))
        for g, w in zip(got, want):
            g = cp.asnumpy(g)
            assert g.dtype == dtype
            np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
            np.testing.assert_array_equal(np.signbit(g), np.signbit(w))
            np.testing.assert_allclose(g, w, rtol=1e-6)


def test_numpy_scalars_in_kernels():
    x = cp.linspace(0.5, 1.5, 8, dtype=np.float32)
    f = dg.jit(lambda a: (np.full_like(a, np.float32(0.1)), np.sin(a) * np.float32(3.0)))
    fill, y = f(x)
    assert fill.dtype == y.dtype == np.float32
    cp.testing.assert_array_equal(fill, cp.full(8, np.float32(0.1)))
    cp.testing.assert_allclose(y, cp.sin(x) * 3, rtol=1e-6)
