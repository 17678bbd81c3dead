"""Issue 28 on the device: Taylor mode (``dg.jet``, ``dg.differential_operator``), the
weighted and randomized Laplacians and the biharmonic (forward and nested) on CuPy, each
against the same program on NumPy in float64, through the three GPU paths."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

cp = pytest.importorskip("cupy")

RNG = np.random.default_rng(28)
D, POINTS, WIDTH = 4, 64, 32


def network(X, W1, b1, W2, b2, w3):
    h = np.tanh(X @ W1 + b1)
    h = np.tanh(h @ W2 + b2)
    return h @ w3


def args64():
    return [RNG.standard_normal((POINTS, D)),
            RNG.standard_normal((D, WIDTH)) / 2, 0.1 * RNG.standard_normal(WIDTH),
            RNG.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH),
            0.1 * RNG.standard_normal(WIDTH), RNG.standard_normal(WIDTH) / np.sqrt(WIDTH)]


def on_gpu(args, dtype):
    return [cp.asarray(a.astype(dtype)) for a in args]


def close(got, want, tol):
    got = cp.asnumpy(got).astype(np.float64)
    assert got.shape == np.shape(want)
    assert np.max(np.abs(got - want)) <= tol * max(1.0, np.max(np.abs(want)))


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 2e-3)])
def test_biharmonic(path, dtype, tol):
    args = args64()
    want = dg.biharmonic(network, batch_axes=0)(*args)
    close(dg.biharmonic(network, batch_axes=0)(*on_gpu(args, dtype)), want, tol)
    nested = dg.laplacian(dg.laplacian(network, batch_axes=0), batch_axes=0)
    close(nested(*on_gpu(args, dtype)), want, tol)


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 1e-3)])
def test_weighted_laplacian(path, dtype, tol):
    args = args64()
    S = RNG.standard_normal((D, 3))
    want = dg.laplacian(network, batch_axes=0, sigma=S)(*args)
    got = dg.laplacian(network, batch_axes=0, sigma=cp.asarray(S.astype(dtype)))(
        *on_gpu(args, dtype))
    close(got, want, tol)


def test_randomized_laplacian_runs_on_device(path):
    args = on_gpu(args64(), np.float64)
    est = dg.laplacian(network, batch_axes=0, method="hutchinson", num_samples=256, seed=3)
    exact = dg.laplacian(network, batch_axes=0)(*args)
    got = est(*args)
    assert isinstance(got, cp.ndarray) and got.shape == exact.shape
    # an unbiased estimate from 256 samples: within a few standard errors on average
    assert float(cp.mean(cp.abs(got - exact))) < 0.5 * float(cp.mean(cp.abs(exact))) + 1e-6


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 2e-3)])
def test_jet_order_four(path, dtype, tol):
    args = args64()
    series = [RNG.standard_normal((POINTS, D)) / 2 for _ in range(4)]

    def f(x):
        return network(x, *args[1:])

    want_p, want_s = dg.jet(f, (args[0],), (series,))
    params = on_gpu(args[1:], dtype)

    def g(x):
        return network(x, *params)

    got_p, got_s = dg.jet(g, (cp.asarray(args[0].astype(dtype)),),
                          ([cp.asarray(s.astype(dtype)) for s in series],))
    close(got_p, want_p, tol)
    for a, b in zip(got_s, want_s):
        close(a, b, tol * 10)


def test_differential_operator_biharmonic_instance(path):
    args = args64()
    eye = np.eye(D)
    dirs, weights = list(eye), [1.0 - (D - 1) / 3.0] * D
    for i in range(D):
        for j in range(i + 1, D):
            dirs += [eye[i] + eye[j], eye[i] - eye[j]]
            weights += [1.0 / 6.0, 1.0 / 6.0]
    V, w = np.array(dirs), np.array(weights)
    want = dg.biharmonic(network, batch_axes=0)(*args)
    op = dg.differential_operator(network, cp.asarray(V), 4, weights=cp.asarray(w),
                                  batch_axes=0)
    close(op(*on_gpu(args, np.float64)), want, 1e-9)
