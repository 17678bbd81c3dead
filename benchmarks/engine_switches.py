"""The MLP 784-512-10 HVP (batch 4096, float32) under the engine's switches, side by side in
one run: GEMM stacking off/on and matmul precision float32/tf32 (``dg.config``). GPU only;
``python -m benchmarks.engine_switches``. Prints device and host time per call
(``cupyx.profiler.benchmark``) and the error against a float64 reference."""
from __future__ import annotations

import numpy as np

import dualgpu as dg

from .mlp import FULL, make_inputs, make_loss, reference


def main() -> None:
    import cupy as cp
    from cupyx.profiler import benchmark

    loss = make_loss(FULL)
    p, X, Y, v = make_inputs(cp, FULL, 1)[0]
    _, want = reference(cp, FULL, p, X, Y, v)
    print(f"{'stack_gemms':>12} {'precision':>10} {'gpu us':>9} {'cpu us':>9} {'rel err':>9}")
    for stack in (False, True):
        for precision in ("float32", "tf32"):
            dg.config["stack_gemms"] = stack
            dg.config["matmul_precision"] = precision
            h = dg.hvp(loss)
            got = h(p, X, Y, v)
            err = float(cp.linalg.norm(got - want) / cp.linalg.norm(want))
            r = benchmark(h, (p, X, Y, v), n_repeat=200, n_warmup=20)
            print(f"{stack!s:>12} {precision:>10} {np.median(r.gpu_times) * 1e6:9.1f} "
                  f"{np.median(r.cpu_times) * 1e6:9.1f} {err:9.2e}")
    dg.config["stack_gemms"] = "auto"
    dg.config["matmul_precision"] = "float32"


if __name__ == "__main__":
    main()
