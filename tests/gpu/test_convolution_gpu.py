"""Convolutions on CuPy: ``dg.lax.conv_general_dilated`` and ``scipy.signal``'s functions
(the ``conv`` primitive: a strided view of the padded input and one ``cupy.einsum``) give the
NumPy backend's values, gradients and HVPs (which the CPU tests check against SciPy and
finite differences) on each GPU path; ``cupyx.scipy.signal``'s functions of traced CuPy
arrays give cupyx's own values."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.signal
from test_numpy_functions_gpu import agrees_with_numpy

import dualgpu as dg
from dualgpu import lax

cp = pytest.importorskip("cupy")

RNG = np.random.default_rng(5)
X = RNG.uniform(-1, 1, (2, 6, 7, 4))
W = RNG.uniform(-1, 1, (3, 2, 2, 6)) / 2


def _nhwc(x):
    return lax.conv_general_dilated(x, W.astype(x.dtype), (1, 2), "SAME", rhs_dilation=(2, 1),
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                    feature_group_count=2)


CASES = {
    "conv_general_dilated NHWC groups": (_nhwc, X),
    "transposed conv": (lambda x: lax.conv_general_dilated(
        x, x[:1, :2], (1, 1), ((2, -1), (1, 2)), lhs_dilation=(2, 3)), X[:, :2]),
    "scipy.signal convolve 3-d same": (lambda x: scipy.signal.convolve(
        x[0], x[1, :2, :3, :2], "same"), X),
    "scipy.signal correlate2d fill": (lambda x: scipy.signal.correlate2d(
        x[0, :, :, 0], x[1, :2, :3, 1], "full", fillvalue=0.5), X),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_convolution_on_cupy_matches_numpy(name, dtype, path):
    f, x = CASES[name]
    agrees_with_numpy(f, x, dtype, RNG, f"{name} ({path})")


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_cupyx_signal_of_traced_values_matches_cupyx(mode):
    csignal = pytest.importorskip("cupyx.scipy.signal")
    a, b = cp.asarray(RNG.uniform(-1, 1, (5, 6))), cp.asarray(RNG.uniform(-1, 1, (2, 3)))
    for name in ("convolve", "correlate", "convolve2d", "correlate2d"):
        fn = getattr(csignal, name)
        # SciPy's as the reference: cupyx's own convolve/correlate of 2-D arrays choose their
        # method through a helper that refuses N-d inputs in CuPy 14
        want = getattr(scipy.signal, name)(cp.asnumpy(a), cp.asnumpy(b), mode)
        got = dg.jit(lambda a, b, fn=fn: fn(a, b, mode))(a, b)
        assert isinstance(got, cp.ndarray)
        np.testing.assert_allclose(cp.asnumpy(got), want, rtol=0, atol=1e-12)
    g = dg.grad(lambda b: np.sum(csignal.convolve(a, b, mode) ** 2))(b)
    g_host = dg.grad(lambda b: np.sum(scipy.signal.convolve(cp.asnumpy(a), b, mode) ** 2))(
        cp.asnumpy(b))
    np.testing.assert_allclose(cp.asnumpy(g), g_host, rtol=1e-10, atol=1e-12)
