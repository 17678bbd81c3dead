"""Scenario 2: per-particle value + gradient + HVP of a Gaussian bump, and the N sweep.

``f(x, mu) = exp(-sum((x - mu[:, None, None, :])**2, axis=0))`` with ``x`` of shape
``(3, na, nb, ng)``: one value per particle, separable over particles, so the HVP of
``sum(f)`` is the per-particle HVP. Every implementation returns
``(sum of values, grad, H·v)``.

With ``d = x - mu`` and ``e = f(x)`` per particle: ``grad = -2 d e`` and
``H·v = e (4 d (d·v) - 2 v)``. The hand-fused kernel computes exactly that, one thread per
particle (four with float4 loads), reading ``x`` and ``v`` once and writing ``grad`` and
``H·v`` once: 48 bytes per particle, the HBM floor.
"""
from __future__ import annotations

import numpy as np

from .common import (
    HBM_BYTES_PER_S,
    Context,
    Skip,
    import_jax,
    import_torch,
    jax_clock,
    max_rel_err,
    measure,
    n_input_sets,
    normal,
    to_jax,
    to_torch,
    torch_clock,
)
from .report import Row

NAME = "scenario2"
SWEEP = "sweep"


def f(x, mu):
    """The user's per-particle function (traced by dualgpu; ``np`` is rebound to CuPy)."""
    return np.exp(-np.sum((x - mu[:, None, None, :]) ** 2, axis=0))


def shape_for(n_particles: int) -> tuple[int, int, int, int]:
    """``(3, na, nb, ng)`` with ``na*nb*ng == n_particles``: cubes where N is a cube (1M is
    100³, 8M is 200³), else ``ng = 100`` and ``nb <= 1000``."""
    side = round(n_particles ** (1 / 3))
    if side ** 3 == n_particles:
        return (3, side, side, side)
    ng = 100 if n_particles % 100 == 0 else n_particles
    rest = n_particles // ng
    nb = min(rest, 1000)
    while rest % nb:
        nb -= 1
    return (3, rest // nb, nb, ng)


def make_inputs(xp, shape, n_sets: int, seed: int = 0) -> list[tuple]:
    """``n_sets`` independent ``(x, mu, v)`` in float32, never zeros."""
    rng = xp.random.default_rng(seed)
    sets = []
    for _ in range(n_sets):
        x = normal(rng, xp, shape, 0.5)
        mu = normal(rng, xp, (3, shape[-1]), 0.5)
        v = normal(rng, xp, shape)
        sets.append((x, mu, v))
    return sets


def reference(xp, x, mu, v):
    """(sum of values, grad, H·v) in float64 from the closed form."""
    x, mu, v = (a.astype(xp.float64) for a in (x, mu, v))
    d = x - mu[:, None, None, :]
    e = xp.exp(-xp.sum(d * d, axis=0))
    dv = xp.sum(d * v, axis=0)
    return xp.sum(e), -2.0 * d * e, e * (4.0 * d * dv - 2.0 * v)


def numpy_hand(x, mu, v):
    """The closed form in float32 NumPy: the CPU stand-in for the hand-fused kernel."""
    d = x - mu[:, None, None, :]
    e = np.exp(-np.sum(d * d, axis=0))
    dv = np.sum(d * v, axis=0)
    return np.sum(e), -2.0 * d * e, e * (4.0 * d * dv - 2.0 * v)


# ------------------------------------------------------------------------------ hand-fused
KERNEL_SOURCE = r"""
__device__ __forceinline__ void particle(float x0, float x1, float x2, float m0, float m1,
                                         float m2, float v0, float v1, float v2,
                                         float& g0, float& g1, float& g2,
                                         float& h0, float& h1, float& h2, float& acc) {
    float d0 = x0 - m0, d1 = x1 - m1, d2 = x2 - m2;
    float e = expf(-(d0 * d0 + d1 * d1 + d2 * d2));
    float dv4 = 4.0f * (d0 * v0 + d1 * v1 + d2 * v2);
    float m2e = -2.0f * e;
    g0 = m2e * d0; g1 = m2e * d1; g2 = m2e * d2;
    h0 = e * (dv4 * d0 - 2.0f * v0);
    h1 = e * (dv4 * d1 - 2.0f * v1);
    h2 = e * (dv4 * d2 - 2.0f * v2);
    acc += e;
}

__device__ __forceinline__ void block_sum(float acc, float* value_sum) {
    __shared__ float partial[32];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) partial[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < (blockDim.x >> 5) ? partial[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
        if (lane == 0) atomicAdd(value_sum, acc);
    }
}

// One particle per thread, grid-stride. x, v, grad, hvp are (3, N); mu is (3, ng).
extern "C" __global__ void particle_vgh(
        const float* __restrict__ x, const float* __restrict__ mu,
        const float* __restrict__ v, float* __restrict__ grad, float* __restrict__ hvp,
        float* __restrict__ value_sum, unsigned int n, unsigned int ng) {
    float acc = 0.0f;
    for (unsigned int p = blockIdx.x * blockDim.x + threadIdx.x; p < n;
         p += gridDim.x * blockDim.x) {
        unsigned int g = p % ng;
        float g0, g1, g2, h0, h1, h2;
        particle(x[p], x[n + p], x[2 * n + p], __ldg(mu + g), __ldg(mu + ng + g),
                 __ldg(mu + 2 * ng + g), v[p], v[n + p], v[2 * n + p],
                 g0, g1, g2, h0, h1, h2, acc);
        grad[p] = g0; grad[n + p] = g1; grad[2 * n + p] = g2;
        hvp[p] = h0; hvp[n + p] = h1; hvp[2 * n + p] = h2;
    }
    block_sum(acc, value_sum);
}

// Four particles per thread with 16-byte loads and stores; needs n % 4 == 0, ng % 4 == 0.
extern "C" __global__ void particle_vgh4(
        const float4* __restrict__ x, const float4* __restrict__ mu,
        const float4* __restrict__ v, float4* __restrict__ grad, float4* __restrict__ hvp,
        float* __restrict__ value_sum, unsigned int n4, unsigned int ng4) {
    float acc = 0.0f;
    for (unsigned int q = blockIdx.x * blockDim.x + threadIdx.x; q < n4;
         q += gridDim.x * blockDim.x) {
        unsigned int g = q % ng4;
        float4 a0 = x[q], a1 = x[n4 + q], a2 = x[2 * n4 + q];
        float4 b0 = __ldg(mu + g), b1 = __ldg(mu + ng4 + g), b2 = __ldg(mu + 2 * ng4 + g);
        float4 w0 = v[q], w1 = v[n4 + q], w2 = v[2 * n4 + q];
        float4 g0, g1, g2, h0, h1, h2;
        particle(a0.x, a1.x, a2.x, b0.x, b1.x, b2.x, w0.x, w1.x, w2.x,
                 g0.x, g1.x, g2.x, h0.x, h1.x, h2.x, acc);
        particle(a0.y, a1.y, a2.y, b0.y, b1.y, b2.y, w0.y, w1.y, w2.y,
                 g0.y, g1.y, g2.y, h0.y, h1.y, h2.y, acc);
        particle(a0.z, a1.z, a2.z, b0.z, b1.z, b2.z, w0.z, w1.z, w2.z,
                 g0.z, g1.z, g2.z, h0.z, h1.z, h2.z, acc);
        particle(a0.w, a1.w, a2.w, b0.w, b1.w, b2.w, w0.w, w1.w, w2.w,
                 g0.w, g1.w, g2.w, h0.w, h1.w, h2.w, acc);
        grad[q] = g0; grad[n4 + q] = g1; grad[2 * n4 + q] = g2;
        hvp[q] = h0; hvp[n4 + q] = h1; hvp[2 * n4 + q] = h2;
    }
    block_sum(acc, value_sum);
}
"""


def hand_fused(ctx: Context):
    """The limit reference: one launch (plus a 4-byte memset for the value sum).

    Host work per call is kept small (one allocation for both outputs, a memset rather
    than ``cp.zeros``): below ~1M particles every implementation is bound by host time, and
    the reference should show how low that can go from Python.
    """
    if not ctx.gpu:
        return numpy_hand
    import cupy as cp

    module = cp.RawModule(code=KERNEL_SOURCE)
    scalar, vec4 = module.get_function("particle_vgh"), module.get_function("particle_vgh4")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    threads = 256

    def run(x, mu, v):
        n, ng = x.size // 3, mu.shape[1]
        if n >= 2**31:
            raise Skip("hand-fused kernel indexes with 32-bit integers")
        out = cp.empty((2,) + x.shape, dtype=cp.float32)     # grad, hvp: one allocation
        value = cp.empty((), dtype=cp.float32)
        value.data.memset_async(0, 4)                         # cheaper than cp.zeros
        use4 = n % 4 == 0 and ng % 4 == 0
        work = n // 4 if use4 else n
        blocks = max(1, min((work + threads - 1) // threads, sms * 16))
        grad, hvp = out[0], out[1]
        args = (x, mu, v, grad, hvp, value, np.uint32(work), np.uint32(ng // 4 if use4 else ng))
        (vec4 if use4 else scalar)((blocks,), (threads,), args)
        return value, grad, hvp

    return run


# ------------------------------------------------------------------------------ peers
def build_dualgpu(ctx: Context):
    import dualgpu as dg

    return dg.grad_and_hvp(f, batch_axes=(1, 2, 3), return_value=True)


def build_jax(ctx: Context):
    jax = import_jax()
    jnp = jax.numpy

    def fsum(x, mu):
        return jnp.sum(jnp.exp(-jnp.sum((x - mu[:, None, None, :]) ** 2, axis=0)))

    value_and_grad = jax.value_and_grad(fsum)

    @jax.jit
    def step(x, mu, v):
        (val, g), (_, hv) = jax.jvp(lambda x: value_and_grad(x, mu), (x,), (v,))
        return val, g, hv

    return step


def torch_step(ctx: Context):
    torch = import_torch(ctx)
    from torch.func import grad_and_value, jvp

    def fsum(x, mu):
        return torch.exp(-((x - mu[:, None, None, :]) ** 2).sum(0)).sum()

    def step(x, mu, v):
        (g, val), (hv, _) = jvp(lambda x: grad_and_value(fsum)(x, mu), (x,), (v,))
        return val, g, hv

    return step


def build_torch_compile(ctx: Context):
    torch = import_torch(ctx)
    if not ctx.compile:
        raise Skip("torch.compile not requested (--no-compile)")
    return torch.compile(torch_step(ctx), dynamic=False)


# ------------------------------------------------------------------------------ workload
def bench_case(ctx: Context, workload: str, case: str, n_particles: int,
               with_compile: bool = False) -> list[Row]:
    """All implementations on one size; the hand-fused kernel is the ratio reference."""
    xp = ctx.xp
    shape = shape_for(n_particles)
    inputs = make_inputs(xp, shape, n_input_sets(2 * 4 * 3 * n_particles))
    ref = reference(xp, *inputs[0])
    check = lambda out: max_rel_err(ctx, out, ref)
    common = dict(workload=workload, case=case, check=check)
    extra = (lambda fn: {"N": n_particles}) if workload == SWEEP else None
    floor_us = 48 * n_particles / HBM_BYTES_PER_S * 1e6     # x, v read; grad, H·v written
    rows = [
        measure(ctx, impl="hand-fused", build=lambda: hand_fused(ctx), inputs=inputs,
                reference=True, extra=lambda fn: {"N": n_particles, "hbm_floor_us": floor_us},
                **common),
        measure(ctx, impl="dualgpu", build=lambda: build_dualgpu(ctx), inputs=inputs,
                extra=extra, **common),
    ]

    def jax_inputs():
        return [tuple(to_jax(ctx, a) for a in s) for s in inputs]

    rows.append(measure(ctx, impl="jax jit(jvp(grad))", inputs=jax_inputs,
                        build=lambda: build_jax(ctx), clock=jax_clock(), extra=extra,
                        **common))

    def torch_inputs():
        return [tuple(to_torch(ctx, a) for a in s) for s in inputs]

    rows.append(measure(ctx, impl="torch.func", inputs=torch_inputs,
                        build=lambda: torch_step(ctx), clock=lambda: torch_clock(ctx), extra=extra,
                        **common))
    if with_compile:
        rows.append(measure(ctx, impl="torch.compile", inputs=torch_inputs,
                            build=lambda: build_torch_compile(ctx), clock=lambda: torch_clock(ctx),
                            **common))
    return rows


def run(ctx: Context) -> list[Row]:
    """N = 1M and 8M particles (d = 3), as in the performance bar; tiny sizes on the CPU."""
    if ctx.tiny:
        return bench_case(ctx, NAME, "N=216", 216, with_compile=False)
    rows = bench_case(ctx, NAME, "N=1M", 100**3, with_compile=ctx.compile)
    rows += bench_case(ctx, NAME, "N=8M", 200**3, with_compile=ctx.compile and not ctx.quick)
    return rows


def run_sweep(ctx: Context) -> list[Row]:
    """N from 10^4 to 10^8 (10^7 with --quick): where launch overhead stops mattering."""
    if ctx.tiny:
        sizes = [100, 1000]
    elif ctx.quick:
        sizes = [10**4, 10**5, 10**6, 10**7]
    else:
        sizes = [10**4, 10**5, 10**6, 10**7, 10**8]
    rows = []
    for n in sizes:
        rows += bench_case(ctx, SWEEP, f"N=1e{round(np.log10(n))}", n)
        _free(ctx)
    return rows


def _free(ctx: Context) -> None:
    """Return pooled device memory between sizes (the 10^8 case needs ~10 GB per peer)."""
    if not ctx.gpu:
        return
    import cupy as cp

    cp.get_default_memory_pool().free_all_blocks()
    try:
        import torch

        torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001
        pass
