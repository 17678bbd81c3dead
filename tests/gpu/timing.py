"""GPU timings for docs/gpu.md (not a test): ``PYTHONPATH=. python tests/gpu/timing.py``.

Scenario 2 (value + gradient + per-particle H·v, float32, N = n^3 particles) against a
hand-written fused CuPy kernel, and scenario 1's tiny Dense(10 -> 1) HVP per call, with and
without CUDA-graph replay. Times are medians of repeated calls (cupyx.profiler.benchmark).
"""
from __future__ import annotations

import sys
from pathlib import Path

import cupy as cp
import numpy as np
from cupyx.profiler import benchmark

import dualgpu as dg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
from test_fusion import dense_loss, scenario2  # noqa: E402

HAND = r"""
extern "C" __global__ void hand(const float* x, const float* mu, const float* v,
                                float* g, float* hv, float* value, int n, int N) {
  __shared__ float sh[256];
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  float e = 0.0f;
  if (p < N) {
    int k = p % n;
    float d[3], w[3], s = 0.0f, dv = 0.0f;
    for (int a = 0; a < 3; ++a) {
      d[a] = x[a * N + p] - mu[a * n + k];
      w[a] = v[a * N + p];
      s += d[a] * d[a];
      dv += d[a] * w[a];
    }
    e = expf(-s);
    for (int a = 0; a < 3; ++a) {
      g[a * N + p] = -2.0f * d[a] * e;
      hv[a * N + p] = (-2.0f * w[a] + 4.0f * d[a] * dv) * e;
    }
  }
  sh[threadIdx.x] = e;
  __syncthreads();
  for (int s2 = 128; s2 > 0; s2 >>= 1) {
    if (threadIdx.x < s2) sh[threadIdx.x] += sh[threadIdx.x + s2];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(value, sh[0]);
}
"""


def _median_us(res) -> tuple[float, float]:
    return float(np.median(res.cpu_times)) * 1e6, float(np.median(res.gpu_times[0])) * 1e6


def scenario2_timing(n: int):
    rng = np.random.default_rng(0)
    N = n ** 3
    x = cp.asarray(rng.standard_normal((3, n, n, n)).astype(np.float32))
    mu = cp.asarray(rng.standard_normal((3, n)).astype(np.float32))
    v = cp.asarray(rng.standard_normal((3, n, n, n)).astype(np.float32))
    gh = dg.grad_and_hvp(scenario2, batch_axes=(1, 2, 3), return_value=True)
    out = gh(x, mu, v)
    exe = gh.compiled((x, mu, v))[0].exe
    rows = {}
    for graphs in (True, False):
        dg.config["cuda_graphs"] = graphs
        for _ in range(3):
            gh(x, mu, v)
        rows[f"dualgpu (cuda_graphs={graphs})"] = _median_us(
            benchmark(gh, (x, mu, v), n_repeat=200, n_warmup=10))
    dg.config["cuda_graphs"] = True
    kern = cp.RawKernel(HAND, "hand")
    g, hv = cp.empty_like(x), cp.empty_like(x)

    def hand():
        value = cp.zeros((), cp.float32)
        kern(((N + 255) // 256,), (256,), (x, mu, v, g, hv, value, np.int32(n), np.int32(N)))
        return value, g, hv

    # the generated kernels alone, launched directly (no Python around them)
    prog = exe._fn
    region = prog.plan.regions[0]
    arrays = [x, mu[:, None, None, :], v]
    rk, main, finish = prog._functions(region, arrays)
    outs = [cp.empty(o.shape, dtype=o.dtype) for o in region.outputs]
    grid = prog._grid_positions[region.index]
    parts = [cp.empty(rk.blocks, dtype=np.float32) for _ in region.grid]
    margs = tuple(arrays + [o for i, o in enumerate(outs) if i not in grid] + parts)
    fargs = tuple(a for p, i in zip(parts, grid) for a in (p, outs[i]))

    def kernels_only():
        main((rk.blocks,), (256,), margs)
        finish((len(parts),), (256,), fargs)

    def hand_only():
        kern(((N + 255) // 256,), (256,), (x, mu, v, g, hv, value0, np.int32(n), np.int32(N)))

    value0 = cp.zeros((), cp.float32)
    rows["generated kernels only (2 launches)"] = _median_us(
        benchmark(kernels_only, (), n_repeat=200, n_warmup=10))
    rows["hand kernel only"] = _median_us(benchmark(hand_only, (), n_repeat=200, n_warmup=10))
    value, _, _ = hand()
    err = [float(cp.max(cp.abs(a - b)) / (cp.max(cp.abs(b)) + 1e-30))
           for a, b in zip(out, (value, g, hv))]
    rows["hand-fused kernel (+ memset)"] = _median_us(benchmark(hand, (), n_repeat=200,
                                                                n_warmup=10))
    print(f"scenario 2, n={n} ({N} particles), float32: kernels in plan = "
          f"{exe.plan.kernel_count()}, rel. difference to hand kernel = "
          f"{max(err):.2e}, graph capture failed: {exe.graph_runner.failed}")
    for k, (cpu, gpu) in rows.items():
        print(f"  {k:34s} cpu {cpu:8.1f} us   gpu {gpu:8.1f} us")


def dense_timing():
    rng = np.random.default_rng(0)
    p, x, y, v = (cp.asarray(a) for a in (rng.standard_normal(11), rng.standard_normal((4, 10)),
                                          rng.random((4, 1)), rng.standard_normal(11)))
    h = dg.hvp(dense_loss)
    exe = h.compiled((p, x, y, v))[0].exe
    print(f"scenario 1 Dense(10->1) HVP: {len(exe.plan.steps)} plan steps, "
          f"{exe.plan.kernel_count()} generated kernels")
    for graphs, outputs in ((True, "copy"), (True, "reuse"), (False, "copy")):
        dg.config["cuda_graphs"] = graphs
        dg.config["cuda_graph_outputs"] = outputs
        for _ in range(3):
            h(p, x, y, v)
        cpu, gpu = _median_us(benchmark(h, (p, x, y, v), n_repeat=2000, n_warmup=20))
        def exe_only(*a):
            return exe(*a)

        ecpu, egpu = _median_us(benchmark(exe_only, (p, x, y, v), n_repeat=2000, n_warmup=20))
        print(f"  cuda_graphs={graphs!s:5s} outputs={outputs:5s}: cpu {cpu:7.1f} us per call, "
              f"gpu {gpu:7.1f} us; executable alone (no API layer) cpu {ecpu:7.1f} us, "
              f"gpu {egpu:7.1f} us")
        # throughput: many calls queued, one synchronisation
        import time

        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        for _ in range(2000):
            h(p, x, y, v)
        cp.cuda.Device().synchronize()
        print(f"      back-to-back: {(time.perf_counter() - t) / 2000 * 1e6:7.1f} us per call")
    dg.config["cuda_graphs"] = True
    dg.config["cuda_graph_outputs"] = "copy"
    print("  graph capture failed:", exe.graph_runner.failed)


if __name__ == "__main__":
    dense_timing()
    for n in (100, 200):
        scenario2_timing(n)
