"""Device time of every step of a compiled program's plan (each step captured 20 times in one
CUDA graph, replayed between events: no launch gaps), for the workloads of issue 12:
``python -m benchmarks.profile_steps [--top N]``. GPU only.

Prints, per workload, the steps sorted by time with their share, and the sum against the
time of the whole call (replayed as a CUDA graph): what to optimise next. Also the
per-point Laplacian of issue 16 at d = 50, and the MLP of :mod:`.mlp_layouts` in each layout
and loss (issue 27). ``--only`` picks groups: mlp, layouts, tiny, particles, laplacian."""
from __future__ import annotations

import argparse

import numpy as np

import dualgpu as dg

from . import laplacian, mlp_layouts
from .mlp import FULL, make_inputs, make_loss


def _exe(fn, args):
    from dualgpu.runtime.signature import Signature

    fargs, _ = fn.split(tuple(args))
    return fn.compiled(Signature(fargs, {}, fn.argnums, fn.__name__)).exe


def _program_args(exe, fn, args):
    """The arrays the compiled program receives for ``fn(*args)`` (its own order)."""
    seen = {}
    program = exe._eager
    dg.config["cuda_graphs"] = False
    exe._eager = lambda *arrays, **kw: seen.setdefault("args", arrays) and program(*arrays)
    try:
        fn(*args)
    finally:
        exe._eager = program
        dg.config["cuda_graphs"] = True
    return seen["args"]


def profile(name: str, fn, args, top: int) -> None:
    from cupyx.profiler import benchmark

    fn(*args)
    exe = _exe(fn, args)
    rows = exe._fn.step_times(*_program_args(exe, fn, args))
    whole = np.median(benchmark(fn, tuple(args), n_repeat=100, n_warmup=10).gpu_times) * 1e6
    total = sum(t for _, _, t in rows)
    print(f"\n## {name}: {len(rows)} steps, sum of steps {total:.1f} us, "
          f"whole call (graph replay) {whole:.1f} us")
    for i, label, t in sorted(rows, key=lambda r: -r[2])[:top]:
        print(f"  [{i:3d}] {t:8.1f} us {100 * t / total:5.1f}%  {label}")


def main(argv=None) -> None:
    import cupy as cp

    p = argparse.ArgumentParser(prog="python -m benchmarks.profile_steps")
    p.add_argument("--top", type=int, default=12)
    p.add_argument("--only", action="append",
                   choices=("mlp", "layouts", "tiny", "particles", "laplacian"))
    opts = p.parse_args(argv)
    groups = set(opts.only or ("mlp", "layouts", "tiny", "particles", "laplacian"))
    args = make_inputs(cp, FULL, 1)[0]
    if "mlp" in groups:
        loss = make_loss(FULL)
        for precision in ("float32", "tf32", "tf32x3"):
            dg.config["matmul_precision"] = precision
            profile(f"MLP 784-512-10 HVP, batch 4096, {precision}", dg.hvp(loss), args,
                    opts.top)
            profile(f"MLP gradient, {precision}", dg.grad(loss), args[:3], opts.top)
    if "layouts" in groups:
        for layout in mlp_layouts.LAYOUTS:
            (lay_args,) = mlp_layouts.layout_inputs(cp, FULL, layout, [args])
            for loss_name in mlp_layouts.LOSSES:
                fn = mlp_layouts.make_loss(FULL, layout, loss_name)
                for precision in ("float32", "tf32"):
                    dg.config["matmul_precision"] = precision
                    profile(f"MLP HVP {layout} {loss_name}, {precision}", dg.hvp(fn),
                            lay_args, opts.top)
    dg.config["matmul_precision"] = "float32"
    if groups & {"tiny", "particles", "laplacian"}:
        _small_and_laplacian(cp, groups, opts.top)


def _small_and_laplacian(cp, groups, top) -> None:
    def f(x, mu):
        return np.exp(-np.sum((x - mu[:, None, None, :]) ** 2, axis=0))

    rng = np.random.default_rng(0)

    def dense(p, x, y):
        z = 1 / (1 + np.exp(-(x @ p[:10] + p[10])))
        return np.sum((z - y[:, 0]) ** 2)

    tiny = [cp.asarray(a) for a in (rng.standard_normal(11), rng.standard_normal((4, 10)),
                                    rng.random((4, 1)), rng.standard_normal(11))]
    if "tiny" in groups:
        profile("Dense(10->1) HVP, batch 4, float64", dg.hvp(dense), tiny, top)
    if "particles" in groups:
        x = cp.random.standard_normal((3, 100, 100, 100), dtype=cp.float32)
        mu = cp.zeros((3, 100), cp.float32)
        profile("per-particle value+grad+HVP, N = 1M",
                dg.grad_and_hvp(f, batch_axes=(1, 2, 3), return_value=True), (x, mu, x), top)
    if "laplacian" in groups:
        lap_args = laplacian.make_inputs(cp, 50, laplacian.HIDDEN, laplacian.POINTS)
        for precision in ("float32", "tf32", "tf32x3"):
            dg.config["matmul_precision"] = precision
            profile(f"per-point Laplacian, tanh MLP, d = 50, {precision}",
                    dg.laplacian(laplacian.u, batch_axes=0), lap_args, top)
        dg.config["matmul_precision"] = "float32"


if __name__ == "__main__":
    main()
