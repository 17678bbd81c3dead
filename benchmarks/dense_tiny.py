"""Scenario 1 as reported: one HVP of a Dense(10→1, sigmoid) layer on a batch of 4.

Eleven parameters (``w``: 10, ``b``: 1) flattened into ``p``; mean squared error. The work
is a few hundred flops, so what is measured is the cost of one call as a Krylov solver sees
it: the call plus waiting for its result (latency), median over repeated groups. dualgpu's
target is a cached graph replay at ≤ 20 µs; the hand-fused reference is one kernel launch.
"""
from __future__ import annotations

import numpy as np

from .common import (
    Context,
    import_jax,
    import_torch,
    measure,
    normal,
    rel_err,
    to_jax,
    to_torch,
    uniform,
)
from .report import Row
from .timing import LatencyClock

NAME = "dense_tiny"
N_IN, BATCH = 10, 4


def loss(p, X, Y):
    """The reported model, as the user writes it (``np`` is rebound when traced)."""
    w = p[:N_IN].reshape(N_IN, 1)
    b = p[N_IN:]
    pred = 1.0 / (1.0 + np.exp(-(X @ w + b)))
    return np.mean((pred - Y) ** 2)


def make_inputs(xp, n_sets: int = 4, seed: int = 2) -> list[tuple]:
    rng = xp.random.default_rng(seed)
    return [(normal(rng, xp, N_IN + 1),
             normal(rng, xp, (BATCH, N_IN)),
             uniform(rng, xp, (BATCH, 1)),
             normal(rng, xp, N_IN + 1)) for _ in range(n_sets)]


def reference(xp, p, X, Y, v):
    """H·v in float64: with ``z = Xw + b``, ``s = σ(z)``, ``r = s - y``, ``c = 2/B``,
    ``H·v = Σ_b c (s'² + r s'') (x_b·dw + db) [x_b, 1]``."""
    p, X, Y, v = (a.astype(xp.float64) for a in (p, X, Y, v))
    Xa = xp.concatenate([X, xp.ones((X.shape[0], 1))], axis=1)
    s = 1.0 / (1.0 + xp.exp(-(Xa @ p[:, None])))
    s1 = s * (1.0 - s)
    s2 = s1 * (1.0 - 2.0 * s)
    c = 2.0 / X.shape[0]
    dz = Xa @ v[:, None]
    return (Xa.T @ (c * (s1 * s1 + (s - Y) * s2) * dz)).ravel()


KERNEL_SOURCE = r"""
// One thread per parameter j (0..n_in); parameter n_in is the bias.
extern "C" __global__ void dense_hvp(const float* p, const float* X, const float* Y,
                                     const float* v, float* hv, int batch, int n_in) {
    int j = threadIdx.x;
    if (j > n_in) return;
    float c = 2.0f / batch, acc = 0.0f;
    for (int b = 0; b < batch; ++b) {
        float z = p[n_in], dz = v[n_in];
        for (int k = 0; k < n_in; ++k) {
            z += X[b * n_in + k] * p[k];
            dz += X[b * n_in + k] * v[k];
        }
        float s = 1.0f / (1.0f + expf(-z));
        float s1 = s * (1.0f - s), s2 = s1 * (1.0f - 2.0f * s);
        float xj = j < n_in ? X[b * n_in + j] : 1.0f;
        acc += c * (s1 * s1 + (s - Y[b]) * s2) * dz * xj;
    }
    hv[j] = acc;
}
"""


def hand_fused(ctx: Context):
    if not ctx.gpu:
        return lambda p, X, Y, v: reference(np, p, X, Y, v).astype(np.float32)
    import cupy as cp

    kernel = cp.RawKernel(KERNEL_SOURCE, "dense_hvp")

    def run(p, X, Y, v):
        hv = cp.empty(N_IN + 1, dtype=cp.float32)
        kernel((1,), (32,), (p, X, Y, v, hv, np.int32(X.shape[0]), np.int32(N_IN)))
        return hv

    return run


def build_dualgpu(ctx: Context):
    import dualgpu as dg

    return dg.hvp(loss)


def build_jax(ctx: Context):
    jax = import_jax()
    jnp = jax.numpy

    def jloss(p, X, Y):
        pred = jax.nn.sigmoid(X @ p[:N_IN].reshape(N_IN, 1) + p[N_IN:])
        return jnp.mean((pred - Y) ** 2)

    g = jax.grad(jloss)
    return jax.jit(lambda p, X, Y, v: jax.jvp(lambda q: g(q, X, Y), (p,), (v,))[1])


def build_torch(ctx: Context):
    torch = import_torch(ctx)
    from torch.func import grad, jvp

    def tloss(p, X, Y):
        pred = torch.sigmoid(X @ p[:N_IN].reshape(N_IN, 1) + p[N_IN:])
        return ((pred - Y) ** 2).mean()

    g = grad(tloss)
    return lambda p, X, Y, v: jvp(lambda q: g(q, X, Y), (p,), (v,))[1]


def cupy_sync(ctx: Context):
    return lambda out: ctx.sync()


def jax_sync_one(out) -> None:
    if out is not None:
        out.block_until_ready()


def torch_sync(ctx: Context):
    def sync(out):
        if ctx.gpu:
            import torch

            torch.cuda.synchronize()
    return sync


def run(ctx: Context) -> list[Row]:
    """Latency of one HVP call (call + wait for the result) per implementation."""
    xp = ctx.xp
    inputs = make_inputs(xp)
    ref = reference(xp, *inputs[0])
    common = dict(workload=NAME, case=f"B={BATCH}", check=lambda out: rel_err(ctx, out, ref),
                  metric="latency per call", reps=ctx.reps(200, 50), groups=ctx.reps(7, 3))
    return [
        measure(ctx, impl="hand-fused", build=lambda: hand_fused(ctx), inputs=inputs,
                reference=True, clock=LatencyClock(cupy_sync(ctx)), **common),
        measure(ctx, impl="dualgpu", build=lambda: build_dualgpu(ctx), inputs=inputs,
                clock=LatencyClock(cupy_sync(ctx)), **common),
        measure(ctx, impl="jax jit", build=lambda: build_jax(ctx),
                inputs=lambda: [tuple(to_jax(ctx, a) for a in s) for s in inputs],
                clock=LatencyClock(jax_sync_one, "host latency (block_until_ready)"),
                **common),
        measure(ctx, impl="torch.func", build=lambda: build_torch(ctx),
                inputs=lambda: [tuple(to_torch(ctx, a) for a in s) for s in inputs],
                clock=lambda: LatencyClock(torch_sync(ctx)), **common),
    ]
