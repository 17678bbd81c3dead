"""Float32 matrix products at three precisions: ``dg.config["matmul_precision"]``.

The per-point Laplacian of a tanh MLP (the ``laplacian`` benchmark's network, smaller),
computed at ``"float32"`` (full float32 on the CUDA cores), ``"tf32"`` (one pass on TF32
tensor cores, ~1e-3 relative error) and ``"tf32x3"`` (three TF32 passes over split
operands: float32-class error for the large products), each against a float64 reference,
with the time of a call. On the H200 the benchmark's size (d = 50, 1024 points, widths
768-768-512-512) takes 3.27 ms, 0.81 ms and 2.68 ms at errors of 7e-7, 6e-4 and 4e-6.

With CuPy and a GPU it runs at that size and times each precision; without, on NumPy at a
small one, where the switch changes nothing (NumPy has no TF32) -- which it checks -- and
prints no timings (they would be CPU times of one and the same program).

Run: ``python examples/matmul_precision.py``
"""
import time

import numpy as np

import dualgpu as dg


def backend():
    try:
        import cupy as cp

        cp.cuda.runtime.getDeviceCount()
        return cp, True
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device
        return np, False


def u(X, *params):
    """The network at every point: ``(points, d) -> (points,)``."""
    h = X
    for W, b in zip(params[:-2:2], params[1:-2:2]):
        h = np.tanh(h @ W + b)
    return (h @ params[-2] + params[-1])[:, 0]


def inputs(xp, d, widths, points, seed=0):
    rng = np.random.default_rng(seed)
    sizes = (d,) + widths + (1,)
    args = [rng.standard_normal((points, d))]
    for m, n in zip(sizes[:-1], sizes[1:]):
        args += [rng.standard_normal((m, n)) / np.sqrt(m), 0.1 * rng.standard_normal(n)]
    return [xp.asarray(a, dtype=xp.float32) for a in args]


def main():
    xp, gpu = backend()
    d, widths, points = (50, (768, 768, 512, 512), 1024) if gpu else (6, (32, 32), 64)
    args = inputs(xp, d, widths, points)
    lap = dg.laplacian(u, batch_axes=0)
    ref = lap(*[a.astype(xp.float64) for a in args])
    if not gpu:
        print(f"no GPU: NumPy at a small size (d = {d}, {points} points); the precisions\n"
              "change nothing on the CPU: errors only, no timings")
    results = {}
    for precision in ("float32", "tf32", "tf32x3"):
        dg.config["matmul_precision"] = precision    # read when a program is built
        out = lap(*args)
        timing = ""
        if gpu:  # on the CPU the three are one program: a time would only show noise
            calls = 20
            xp.cuda.get_current_stream().synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                out = lap(*args)
            xp.cuda.get_current_stream().synchronize()
            timing = f" {(time.perf_counter() - t0) / calls * 1e3:8.3f} ms a call (GPU),"
        err = float(xp.max(xp.abs(out - ref)) / xp.max(xp.abs(ref)))
        results[precision] = out
        print(f"{precision:8s}{timing} relative error {err:.1e}")
    dg.config["matmul_precision"] = "float32"
    if not gpu:
        same = all(np.array_equal(results["float32"], r) for r in results.values())
        print("NumPy: the three precisions agree bit for bit" if same else
              "precision changed a NumPy result: FAILED")


if __name__ == "__main__":
    main()
