"""Random draws in traced functions on CuPy (frontend/numpy/random.py): cupy.random's global
state and a CuPy generator are drawn again at every call, on the device, as eager CuPy
draws them; NumPy's draws reach the program on the device; a traced parameter of a CuPy
draw is refused (CuPy's streams are not checked to be loc + scale * z)."""
from __future__ import annotations

import numpy as np
import pytest
from gpu_device import cupy_or_skip

import dualgpu as dg

cp = cupy_or_skip()


def test_cupy_random_is_drawn_again_at_every_call(path):
    def f(x):
        return cp.sum(cp.sin(x) * cp.random.standard_normal(3)) + cp.random.uniform() * x[0]

    x = cp.asarray([0.3, -0.2, 1.0])
    g = dg.grad(f)
    cp.random.seed(4)
    got = [g(x) for _ in range(3)]
    after = float(cp.random.uniform())
    cp.random.seed(4)
    for gi in got:
        z, s = cp.random.standard_normal(3), cp.random.uniform()
        want = cp.cos(x) * z + cp.asarray([float(s), 0.0, 0.0])
        assert isinstance(gi, cp.ndarray)
        cp.testing.assert_allclose(gi, want, rtol=1e-12)
    assert after == float(cp.random.uniform())


def test_a_cupy_generator_and_numpy_draws():
    rng = cp.random.default_rng(1)

    def f(x):
        return x * rng.standard_normal(2) + cp.asarray(np.random.normal(size=2))

    x = cp.ones(2)
    np.random.seed(0)
    got = dg.jit(f)(x)
    twin = cp.random.default_rng(1)
    np.random.seed(0)
    cp.testing.assert_allclose(got, twin.standard_normal(2) + cp.asarray(
        np.random.normal(size=2)), rtol=1e-14)
    with pytest.raises(dg.RandomInTraceError, match="traced parameter"):
        dg.grad(lambda m: cp.sum(cp.random.normal(m, 1.0)))(cp.zeros(2))
