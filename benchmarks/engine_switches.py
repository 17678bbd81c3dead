"""The MLP 784-512-10 HVP (batch 4096, float32) under the engine's build switches, side by
side in one run: GEMM stacking off/on, kernel recomputation off/on and matmul precision
float32/tf32 (``dg.config``). GPU only; ``python -m benchmarks.engine_switches``. Prints device
and host time per call (``cupyx.profiler.benchmark``), the peak bytes an eager call takes
from CuPy's pool, the gradient's peak for scale, and the error against a float64 reference."""
from __future__ import annotations

import itertools

import numpy as np

import dualgpu as dg

from .mlp import FULL, eager_peak_bytes, make_inputs, make_loss, reference

SWITCHES = ("stack_gemms", "recompute", "matmul_precision")


def main() -> None:
    import cupy as cp
    from cupyx.profiler import benchmark

    loss = make_loss(FULL)
    p, X, Y, v = make_inputs(cp, FULL, 1)[0]
    _, want = reference(cp, FULL, p, X, Y, v)
    saved = {k: dg.config[k] for k in SWITCHES}
    print(f"{'stack_gemms':>12} {'recompute':>10} {'precision':>10} {'gpu us':>9} "
          f"{'cpu us':>9} {'peak MB':>8} {'grad MB':>8} {'rel err':>9}")
    try:
        for stack, recompute, precision in itertools.product(
                (False, True), (False, True), ("float32", "tf32")):
            dg.config.update(stack_gemms=stack, recompute=recompute,
                             matmul_precision=precision)
            h = dg.hvp(loss)
            g = dg.grad(loss)
            got = h(p, X, Y, v)
            err = float(cp.linalg.norm(got - want) / cp.linalg.norm(want))
            peak = eager_peak_bytes(h, (p, X, Y, v)) / 1e6
            gpeak = eager_peak_bytes(g, (p, X, Y)) / 1e6
            r = benchmark(h, (p, X, Y, v), n_repeat=200, n_warmup=20)
            print(f"{stack!s:>12} {recompute!s:>10} {precision:>10} "
                  f"{np.median(r.gpu_times) * 1e6:9.1f} {np.median(r.cpu_times) * 1e6:9.1f} "
                  f"{peak:8.1f} {gpeak:8.1f} {err:9.2e}", flush=True)
    finally:
        dg.config.update(saved)


if __name__ == "__main__":
    main()
