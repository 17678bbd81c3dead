"""The programs the CuPy export is tested on (tests/api/test_export_cupy.py on the CPU,
tests/gpu/test_export_gpu.py on the GPU): the design's scenario 2 (per-particle value, gradient
and HVP), the Dense(10->1) HVP of scenario 1, and an MLP HVP with dict parameters."""
from __future__ import annotations

import numpy as np

import dualgpu as dg

SHIFT = np.linspace(-0.5, 0.5, 4)  # a closed-over constant of the MLP


def f_batch(x, mu):
    return np.exp(-np.sum((x - mu[:, None, None, :]) ** 2, axis=0))


def dense_loss(p, X, y):
    """Dense(10 -> 1, sigmoid) on a batch of columns of X (10 x 4), params flattened."""
    W = p[:10].reshape(1, 10)
    b = p[10]
    pred = dg.nn.sigmoid(W @ X + b)[0]
    return np.mean((pred - y) ** 2)


def mlp_loss(params, X, y):
    h = dg.nn.sigmoid(X @ params["W1"] + params["b1"])
    out = np.tanh(h @ params["W2"] + params["b2"]) + SHIFT
    return np.mean((out - y) ** 2)


def scenarios(rng=None):
    """name -> (transformed function, example arguments), float64."""
    rng = rng or np.random.default_rng(0)
    n = 8
    x = rng.standard_normal((3, n, n, n))
    mu = rng.standard_normal((3, n))
    p, X, y = rng.standard_normal(11), rng.standard_normal((10, 4)), rng.random(4)
    params = {"W1": rng.standard_normal((6, 16)) / 3, "b1": rng.standard_normal(16),
              "W2": rng.standard_normal((16, 4)) / 4, "b2": rng.standard_normal(4)}
    direction = {k: rng.standard_normal(v.shape) for k, v in params.items()}
    Xm, ym = rng.standard_normal((32, 6)), rng.standard_normal((32, 4))
    return {
        "particles": (dg.grad_and_hvp(f_batch, batch_axes=(1, 2, 3), return_value=True),
                      (x, mu, rng.standard_normal(x.shape))),
        "dense": (dg.hvp(dense_loss), (p, X, y, rng.standard_normal(11))),
        "mlp": (dg.hvp(mlp_loss), (params, Xm, ym, direction)),
    }
