"""A producer read by a consumer k times larger (k > 1): recompute or materialise?

``p(x) * U`` with ``x`` of shape ``(n, m)`` and ``U`` of shape ``(k, n, m)``, planned two
ways: one region over the consumer's domain that recomputes ``p(x)`` at each of its ``k``
copies (the planner before issue 40), and two regions, ``p(x)`` written once then read by
the product (``dualgpu.fusion.plan.REPEAT_MAX``, per target, and ``recomputes_cheaply``
patched for the measurement). On CuPy the plan runs as CUDA kernels (CUDA events), on
NumPy as the host fused plan (host clock, best of the calls)::

    python -m benchmarks.broadcast_recompute [--cupy] [--n 4096] [--m 512]

Prints one row per ``k``: for each producer, milliseconds recomputed / materialised.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import dualgpu as dg
from dualgpu.fusion import plan

PRODUCERS = {
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "x*x+1": lambda x: x * x + 1,
    "x/3": lambda x: x / 3,
    "neg": lambda x: -x,
}


def _program(graph, cupy: bool):
    if cupy:
        from dualgpu.backends.cupy import get_cupy_backend
        from dualgpu.codegen.launcher import compile_fused
        return compile_fused(graph, get_cupy_backend(), recompute=True)
    from dualgpu.codegen.host_regions import host_fused_program
    return host_fused_program(graph, True, 0)


def _time_ms(fn, args, xp, calls: int) -> float:
    fn(*args)
    if xp is np:
        best = float("inf")
        for _ in range(calls):
            t0 = time.perf_counter()
            fn(*args)
            best = min(best, time.perf_counter() - t0)
        return best * 1e3
    start, stop = xp.cuda.Event(), xp.cuda.Event()
    start.record()
    for _ in range(calls):
        fn(*args)
    stop.record()
    stop.synchronize()
    return xp.cuda.get_elapsed_time(start, stop) / calls


def measure(ks, n: int, m: int, cupy: bool, dtype, calls: int) -> None:
    xp = __import__("cupy") if cupy else np
    cheap, repeat = plan.recomputes_cheaply, plan.REPEAT_MAX
    rng = np.random.default_rng(0)
    x = xp.asarray(rng.random((n, m)).astype(dtype))
    try:
        for k in ks:
            u = xp.asarray(rng.random((k, n, m)).astype(dtype))
            row = []
            for name, p in PRODUCERS.items():
                graph = dg.trace(lambda x, u, p=p: p(x) * u, x, u)
                times = []
                for split in (False, True):
                    plan.REPEAT_MAX = dict.fromkeys(repeat, 1 if split else 1 << 62)
                    plan.recomputes_cheaply = (lambda e: False) if split else cheap
                    fn = _program(graph, cupy)
                    if fn is None:
                        raise SystemExit("no host compiler: nothing to measure")
                    assert len(fn.plan.regions) == 1 + split, fn.plan.describe()
                    times.append(_time_ms(fn, (x, u), xp, calls))
                row.append(f"{name} {times[0]:.3f}/{times[1]:.3f}")
            print(f"k={k:3d} {np.dtype(dtype).name}: " + " | ".join(row), flush=True)
    finally:
        plan.recomputes_cheaply, plan.REPEAT_MAX = cheap, repeat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cupy", action="store_true")
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--m", type=int, default=512)
    ap.add_argument("--k", type=int, nargs="+", default=[2, 3, 4, 8, 16])
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--calls", type=int, default=9)
    a = ap.parse_args()
    measure(a.k, a.n, a.m, a.cupy, np.dtype(a.dtype), a.calls)


if __name__ == "__main__":
    main()
