"""Taylor mode on the device (issue 28): ``dg.jet`` and ``dg.differential_operator`` on
CuPy arrays against the same calls on NumPy (float64: to rounding; float32: loosely), with
NumPy directions moved to the device, and an op by the nested-JVP fallback (sort)."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

cp = pytest.importorskip("cupy")


_RNG = np.random.default_rng(0)
W1, W2 = _RNG.standard_normal((3, 32)) / 2, _RNG.standard_normal((32, 32)) / 6


def _net(p, sort=True):
    h = np.tanh(np.tanh(p @ W1.astype(p.dtype)) @ W2.astype(p.dtype))
    g = np.sort(h, axis=-1) if sort else h + np.max(h, axis=-1, keepdims=True)
    return np.sum(g * np.exp(-h * h), axis=-1)


def _net_sep(p):   # sort couples instances for batch_axes' check: a max per point instead
    return _net(p, sort=False)


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 2e-3)])
def test_jet_on_cupy(dtype, tol):
    x = np.random.default_rng(1).uniform(-1, 1, (8, 3)).astype(dtype)
    terms = tuple(np.random.default_rng(k).standard_normal((8, 3)).astype(dtype)
                  for k in range(4))
    want_y, want = dg.jet(_net, (x.astype(np.float64),),
                          (tuple(t.astype(np.float64) for t in terms),))
    y, got = dg.jet(_net, (cp.asarray(x),), (tuple(cp.asarray(t) for t in terms),))
    assert isinstance(y, cp.ndarray) and y.dtype == dtype
    for g, w in zip(got, want):
        scale = float(np.max(np.abs(w)))
        assert float(np.max(np.abs(cp.asnumpy(g) - w))) <= tol * max(scale, 1.0)


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 5e-3)])
def test_biharmonic_per_point_on_cupy(dtype, tol):
    pts = np.random.default_rng(2).uniform(-1, 1, (256, 3)).astype(dtype)
    dirs, w = dg.biharmonic_directions(3)
    op = dg.differential_operator(_net_sep, dirs, 4, w, batch_axes=0)
    want = op(pts.astype(np.float64))
    got = op(cp.asarray(pts))                   # NumPy directions, moved to the device
    assert isinstance(got, cp.ndarray) and got.shape == (256,) and got.dtype == dtype
    scale = float(np.max(np.abs(want)))
    assert float(np.max(np.abs(cp.asnumpy(got) - want))) <= tol * scale
