"""NumPy/SciPy functions that had no rule (issue 25): values against NumPy's and SciPy's,
derivatives against closed forms and central differences, where the registry table
(tests/test_registry.py) cannot reach: jumps, special values, two outputs, options."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324, 1.5, -2.0, 3.0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_predicates_and_steps_are_numpy_s(dtype):
    x = SPECIAL.astype(dtype)

    def f(x):
        return (np.isinf(x), np.signbit(x), np.nextafter(x, np.float32(1.0)),
                np.nextafter(x, -x), np.heaviside(x, np.float32(0.5)), np.heaviside(x, x))

    with np.errstate(all="ignore"):
        want = f(x)
        got = dg.jit(f)(x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_heaviside_derivative_is_in_h0_at_the_jump_only():
    x = np.array([-1.0, 0.0, -0.0, 2.0])
    h0 = np.array([0.3, 0.4, 0.5, 0.6])
    np.testing.assert_array_equal(
        dg.grad(lambda h: np.sum(np.heaviside(x, h)))(h0), [0.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(
        dg.grad(lambda x: np.sum(np.heaviside(x, h0)))(x), np.zeros(4))
    eps = 1e-6
    fd = (np.heaviside(x, h0 + eps) - np.heaviside(x, h0 - eps)) / (2 * eps)
    np.testing.assert_allclose(dg.jvp(lambda h: np.heaviside(x, h), (h0,),
                                      (np.ones(4),))[1], fd)
