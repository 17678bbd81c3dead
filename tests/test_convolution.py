"""N-d convolution on traced values: ``scipy.signal``'s ``convolve``, ``correlate``,
``fftconvolve``, ``convolve2d`` and ``correlate2d`` under ``dg.jit`` against SciPy's own
results (every mode, by module path and by imported name, complex inputs, the swap of
``"valid"``), and ``dg.lax.conv_general_dilated`` against a loop over the window offsets
written here (dimension numbers, strides, SAME/VALID/explicit padding, both dilations,
feature groups); gradients and HVPs through both spellings against finite differences;
vmap, the separability proof, the sparsity pattern; the bad arguments. The derivatives of
the ``conv`` primitive itself are checked by tests/test_registry.py."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.signal
from scipy.signal import convolve2d, correlate, correlate2d

import dualgpu as dg
from dualgpu import lax
from dualgpu.testing import check_grads

RNG = np.random.default_rng(11)
MODES = ("full", "same", "valid")


def rand(*shape, complex_=False):
    x = RNG.uniform(-1, 1, shape)
    return x + 1j * RNG.uniform(-1, 1, shape) if complex_ else x


# --------------------------------------------------------------------------- scipy.signal
SIGNAL = {  # name: (f(a, b, mode), a, b)
    "convolve 1-d": (lambda a, b, m: scipy.signal.convolve(a, b, m), rand(7), rand(3)),
    "convolve 1-d even window": (lambda a, b, m: scipy.signal.convolve(a, b, m), rand(6),
                                 rand(4)),
    "correlate 2-d fft, imported": (lambda a, b, m: correlate(a, b, m, method="fft"),
                                    rand(4, 5), rand(2, 3)),
    "convolve 3-d direct": (lambda a, b, m: scipy.signal.convolve(a, b, mode=m,
                                                                  method="direct"),
                            rand(3, 4, 3), rand(2, 2, 3)),
    "convolve in2 larger": (lambda a, b, m: scipy.signal.convolve(a, b, m), rand(2, 3),
                            rand(4, 5)),
    "correlate complex, in2 larger": (lambda a, b, m: scipy.signal.correlate(a, b, m),
                                      rand(2, 3, complex_=True), rand(3, 4, complex_=True)),
    "fftconvolve": (lambda a, b, m: scipy.signal.fftconvolve(a, b, m), rand(5, 3), rand(2, 2)),
    "convolve2d fillvalue, imported": (lambda a, b, m: convolve2d(a, b, m, fillvalue=0.5),
                                       rand(4, 5), rand(3, 2)),
    "correlate2d even window": (lambda a, b, m: correlate2d(a, b, m), rand(4, 5), rand(2, 2)),
    "correlate2d complex fill, in2 larger": (
        lambda a, b, m: scipy.signal.correlate2d(a, b, m, "fill", 1.5 - 1j),
        rand(2, 2, complex_=True), rand(3, 4, complex_=True)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(SIGNAL))
def test_scipy_signal_matches_scipy(name, mode):
    f, a, b = SIGNAL[name]
    want = f(a, b, mode)  # on concrete arrays: SciPy's own function
    got = dg.jit(lambda a, b: f(a, b, mode))(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_scipy_signal_derivatives():
    """Gradients and HVPs in both inputs (and in convolve2d's fill value)."""
    a, b = rand(4, 3), rand(2, 2)
    check_grads(lambda a, b, c: scipy.signal.convolve2d(a, b, "same", fillvalue=c),
                (a, b, 0.3), order=2)
    check_grads(lambda a, b: scipy.signal.correlate(np.sin(a), b, "valid") ** 2,
                (rand(5, 4), b), order=2)


# --------------------------------------------------------------------------- lax
def reference(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, groups):
    """``conv_general_dilated`` in the layouts NC.../OI.../NC...: ``lhs`` dilated and padded
    (negative: cropped), then one product per window offset."""
    d = lhs.ndim - 2
    x = np.zeros(lhs.shape[:2] + tuple((s - 1) * r + 1 for s, r in
                                       zip(lhs.shape[2:], lhs_dilation)))
    x[(slice(None),) * 2 + tuple(slice(None, None, r) for r in lhs_dilation)] = lhs
    for axis, (lo, hi) in enumerate(padding, 2):
        x = np.pad(x, [(0, 0)] * axis + [(max(lo, 0), max(hi, 0))] + [(0, 0)] * (d + 1 - axis))
        x = x[(slice(None),) * axis + (slice(max(-lo, 0), x.shape[axis] - max(-hi, 0)),)]
    window = rhs.shape[2:]
    out_shape = [(p - (k - 1) * r - 1) // s + 1 for p, k, r, s in
                 zip(x.shape[2:], window, rhs_dilation, strides)]
    o, i = rhs.shape[:2]
    out = np.zeros((lhs.shape[0], o) + tuple(out_shape))
    for k in np.ndindex(*window):
        reads = tuple(slice(kk * r, kk * r + (n - 1) * s + 1, s)
                      for kk, r, n, s in zip(k, rhs_dilation, out_shape, strides))
        for g in range(groups):
            part = x[(slice(None), slice(g * i, (g + 1) * i)) + reads]
            outs = slice(g * o // groups, (g + 1) * o // groups)
            out[:, outs] += np.einsum("nc...,oc->no...", part, rhs[(outs, slice(None)) + k])
    return out


LAX = {  # name: (lhs, rhs, kwargs, canonical padding, lhs/rhs/out layouts as permutations)
    "1-d VALID stride 2": (rand(2, 3, 9), rand(4, 3, 3), dict(window_strides=(2,),
                                                            padding="VALID"), ((0, 0),), None),
    "2-d SAME stride (2, 1)": (rand(1, 2, 5, 6), rand(3, 2, 3, 2),
                               dict(window_strides=(2, 1), padding="SAME"),
                               ((1, 1), (0, 1)), None),
    "2-d SAME_LOWER": (rand(1, 2, 5, 6), rand(3, 2, 3, 2),
                       dict(window_strides=(1, 1), padding="SAME_LOWER"),
                       ((1, 1), (1, 0)), None),
    "NHWC/HWIO atrous, 2 groups": (
        rand(2, 6, 7, 4), rand(3, 2, 2, 6),
        dict(window_strides=(1, 2), padding="SAME", rhs_dilation=(2, 1), feature_group_count=2,
             dimension_numbers=("NHWC", "HWIO", "NHWC")),
        ((2, 2), (0, 1)), ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))),
    "NCHW/OIHW transposed conv, negative padding": (
        rand(2, 2, 4, 3), rand(4, 2, 3, 3),
        dict(window_strides=(1, 1), padding=((2, -1), (1, 2)), lhs_dilation=(2, 3),
             dimension_numbers=("NCHW", "OIHW", "NCHW")),
        ((2, -1), (1, 2)), None),
    "ConvDimensionNumbers NWC/WIO/NCW, 3 groups": (
        rand(2, 8, 6), rand(3, 2, 6),
        dict(window_strides=(3,), padding=((1, 0),), feature_group_count=3,
             dimension_numbers=((0, 2, 1), (2, 1, 0), (0, 1, 2))),
        ((1, 0),), ((0, 2, 1), (2, 1, 0), (0, 1, 2))),
    "3-d all parameters": (
        rand(1, 4, 4, 3, 5), rand(2, 2, 2, 1, 2),
        dict(window_strides=(1, 2, 2), padding=((0, 1), (1, 1), (-1, 0)), lhs_dilation=(1, 2, 1),
             rhs_dilation=(2, 1, 2), feature_group_count=2),
        ((0, 1), (1, 1), (-1, 0)), None),
}


@pytest.mark.parametrize("name", sorted(LAX))
def test_conv_general_dilated_matches_reference(name):
    lhs, rhs, kwargs, padding, perms = LAX[name]
    lhs_perm, rhs_perm, out_perm = perms or (tuple(range(lhs.ndim)),) * 3
    d = lhs.ndim - 2
    want = reference(lhs.transpose(lhs_perm), rhs.transpose(rhs_perm),
                     kwargs["window_strides"], padding, kwargs.get("lhs_dilation", (1,) * d),
                     kwargs.get("rhs_dilation", (1,) * d), kwargs.get("feature_group_count", 1))
    want = want.transpose(np.argsort(out_perm))
    got = dg.jit(lambda a, b: lax.conv_general_dilated(a, b, **kwargs))(lhs, rhs)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(lax.conv_general_dilated(lhs, rhs, **kwargs), want, rtol=0,
                               atol=1e-12)  # concrete arrays compute at once


def cnn_loss(w1, w2, x):
    """A two-layer CNN in JAX's NHWC/HWIO layouts, a squared loss."""
    dn = ("NHWC", "HWIO", "NHWC")
    h = np.tanh(lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=dn))
    y = lax.conv_general_dilated(h, w2, (2, 2), "VALID", rhs_dilation=(1, 2),
                                 dimension_numbers=dn, feature_group_count=2)
    return np.sum((y - 0.5) ** 2)


def test_cnn_gradients_and_hvp():
    w1, w2, x = rand(3, 3, 2, 4) / 2, rand(2, 2, 2, 2), rand(2, 6, 7, 2)
    check_grads(cnn_loss, (w1, w2, x), order=2, argnums=(0, 1))


def test_vmap_over_each_operand():
    lhs, rhs = rand(3, 2, 2, 4, 5), rand(3, 4, 1, 2, 2)

    def f(a, b):
        return lax.conv_general_dilated(a, b, (1, 2), "SAME", rhs_dilation=(2, 1),
                                        feature_group_count=2)

    for in_axes in ((0, None), (None, 0), (0, 0)):
        a = lhs if in_axes[0] == 0 else lhs[0]
        b = rhs if in_axes[1] == 0 else rhs[0]
        want = np.stack([f(a[k] if in_axes[0] == 0 else a, b[k] if in_axes[1] == 0 else b)
                         for k in range(3)])
        np.testing.assert_allclose(dg.vmap(f, in_axes=in_axes)(a, b), want, atol=1e-12)


def test_batch_axes_hvp_and_coupling():
    """Examples of ``lhs`` are instances; its feature axis is not."""
    w, x, v = rand(2, 3, 3), rand(4, 3, 6), rand(4, 3, 6)

    def per_example(x):
        return np.sum(np.tanh(lax.conv(x, w, (1,), "SAME")) ** 2, axis=(1, 2))

    got = dg.hvp(per_example, batch_axes=0)(x, v)
    want = np.stack([dg.hvp(lambda xi: per_example(xi[None])[0])(x[k], v[k])
                     for k in range(4)])
    np.testing.assert_allclose(got, want, atol=1e-12)
    with pytest.raises(dg.SeparabilityError, match="conv"):
        dg.hvp(lambda x: np.sum(lax.conv(x, w, (1,), "SAME"), axis=(0, 2)),
               batch_axes=1)(x, v)


def test_sparsity_pattern_is_the_stencil():
    k, x = rand(3), rand(8)
    pattern = dg.jacobian_sparsity(lambda x: scipy.signal.convolve(x, k, "same"))(x)
    dense = dg.jacobian(lambda x: scipy.signal.convolve(x, k, "same"))(x)
    np.testing.assert_array_equal(pattern.toarray(), dense != 0)


def test_export_refused():
    with pytest.raises(dg.DualgpuError, match="convolutions cannot be exported"):
        dg.export(lambda x: scipy.signal.convolve(x, x, "full"), rand(3))


# --------------------------------------------------------------------------- bad arguments
A2, B2 = rand(4, 4), rand(2, 2)
BAD = [
    (lambda a, b: scipy.signal.convolve(a, b, "middle"), "mode must be 'full'"),
    (lambda a, b: scipy.signal.correlate(a, b, method="spectral"), "method must be 'auto'"),
    (lambda a, b: scipy.signal.convolve(a, b[0]), "same rank"),
    (lambda a, b: scipy.signal.convolve(a[:1], b, "valid"), "at least as large"),
    (lambda a, b: convolve2d(a, b, boundary="wrap"), "boundary='wrap' is not supported"),
    (lambda a, b: convolve2d(a[0], b[0]), "2-D arrays"),
    (lambda a, b: convolve2d(a, b, fillvalue=a[0]), "fillvalue must be a single value"),
    (lambda a, b: scipy.signal.fftconvolve(a, b, axes=0), "axes=0 is not supported"),
    (lambda a, b: lax.conv_general_dilated(a[None, None], b[None, None], (1, 1), "VALID",
                                           batch_group_count=2), "batch_group_count=2"),
    (lambda a, b: lax.conv_general_dilated(a[None, None], b[None, None], (1, 1), "VALID",
                                           dimension_numbers=("NCHW", "OIHX", "NCHW")),
     "dimension_numbers"),
    (lambda a, b: lax.conv_general_dilated(a[None, None], b[None, None], (1, 1), "FULL"),
     "padding must be 'SAME'"),
    (lambda a, b: lax.conv_general_dilated(a[None, None], b[None, None], (1,), "SAME"),
     "window_strides must be 2 positive integers"),
    (lambda a, b: lax.conv_general_dilated(a[None], b[None, None], (1,), "SAME"),
     "same rank"),
    (lambda a, b: lax.conv_general_dilated(a[None, :3], b[None], (1,), "SAME",
                                           feature_group_count=2), "feature_group_count=2"),
]


@pytest.mark.parametrize("k", range(len(BAD)))
def test_bad_arguments_name_the_argument(k):
    f, match = BAD[k]
    with pytest.raises(dg.DualgpuError, match=match):
        dg.jit(f)(A2, B2)
