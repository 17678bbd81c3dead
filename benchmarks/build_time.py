"""Build time against program length: ``python -m benchmarks.build_time`` (``make bench-build``).

CPU only (NumPy). The program is an explicit Euler loop, ``y = y + dt * (W @ sin(y) - y**3
- 0.1 * y)`` then ``sum(y**2)``: 8 equations a step, so 125, 1,250 and 12,500 steps give
programs of about 1k, 10k and 100k equations. For each length and each of ``dg.jit``,
``dg.grad`` and ``dg.hvp`` it measures, from an empty program cache:

* ``trace``: tracing the user function (``dg.trace``: trace + simplify);
* ``first call``: the whole first call of a fresh transformed function (trace, transform,
  simplify, Python code generation, ``compile()``, one run of the NumPy program);
* ``codegen``: generating and compiling the Python source of the built program alone (a
  share of the first call, measured again on its graph);
* ``cuda text``: the fusion plan and the CUDA source of the built program (no GPU; not part
  of the NumPy first call).

Wall times on a quiet machine are the figures; CPU time of the first call is recorded too.
Linear behaviour shows as a constant ``us/eqn`` column and a growth of about 10x per row.
Prints a table and writes ``benchmarks/results/build_time.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

import dualgpu as dg
from dualgpu.codegen.cuda import plan_source
from dualgpu.codegen.python import compile_python
from dualgpu.fusion import plan_graph

DT = 0.01
EQNS_PER_STEP = 8
SIZES = (1_000, 10_000, 100_000)
MODES = ("jit", "grad", "hvp")
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def euler_loss(steps: int):
    """The benchmark program: ``steps`` explicit Euler steps, then a scalar loss."""
    def loss(x, W):
        y = x
        for _ in range(steps):
            y = y + DT * (W @ np.sin(y) - y ** 3 - 0.1 * y)
        return np.sum(y ** 2)

    return loss


def _transformed(mode: str, loss):
    """A fresh transformed function: a new cache entry, so its first call builds."""
    return {"jit": dg.jit, "grad": dg.grad, "hvp": dg.hvp}[mode](loss)


def _timed(fn, *args):
    """``(result, wall seconds, CPU seconds)`` of one call."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - w0, time.process_time() - c0


def measure(mode: str, size: int, cuda: bool = True) -> dict:
    """One row: the build of ``mode`` on a program of about ``size`` equations."""
    rng = np.random.default_rng(0)
    x, W, v = rng.uniform(-1, 1, 6), rng.normal(size=(6, 6)) / 3, rng.normal(size=6)
    steps = max(1, size // EQNS_PER_STEP)
    loss = euler_loss(steps)
    base, t_trace, _ = _timed(dg.trace, loss, x, W)
    fn = _transformed(mode, loss)
    args = (x, W, v) if mode == "hvp" else (x, W)
    _, t_first, c_first = _timed(fn, *args)
    built = dg.trace(fn, *args)  # the cached program: no second build
    _, t_codegen, _ = _timed(compile_python, built, np)
    t_cuda = _timed(lambda g: plan_source(plan_graph(g)), built)[1] if cuda else None
    return {"mode": mode, "size": size, "steps": steps, "eqns": len(base.eqns),
            "built_eqns": len(built.eqns), "trace_s": t_trace, "first_call_s": t_first,
            "first_call_cpu_s": c_first, "codegen_s": t_codegen, "cuda_text_s": t_cuda,
            "us_per_eqn": t_first / len(base.eqns) * 1e6}


def table(rows: list[dict]) -> str:
    """The rows as text, with each row's growth over the previous size of its mode."""
    head = (f"{'mode':<5} {'eqns':>7} {'built':>8} {'trace s':>8} {'first call s':>13} "
            f"{'us/eqn':>7} {'growth':>7} {'codegen s':>10} {'cuda text s':>12}")
    lines = [head, "-" * len(head)]
    previous: dict[str, dict] = {}
    for r in rows:
        prev = previous.get(r["mode"])
        growth = f"{r['first_call_s'] / prev['first_call_s']:.1f}x" if prev else "-"
        cuda = "-" if r["cuda_text_s"] is None else f"{r['cuda_text_s']:.2f}"
        lines.append(f"{r['mode']:<5} {r['eqns']:>7} {r['built_eqns']:>8} "
                     f"{r['trace_s']:>8.2f} {r['first_call_s']:>13.2f} "
                     f"{r['us_per_eqn']:>7.0f} {growth:>7} {r['codegen_s']:>10.2f} {cuda:>12}")
        previous[r["mode"]] = r
    return "\n".join(lines)


def environment() -> dict:
    return {"python": sys.version.split()[0], "platform": platform.platform(),
            "numpy": np.__version__, "cpus": os.cpu_count(),
            "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
            "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(prog="python -m benchmarks.build_time", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES),
                   help="program lengths in equations (default: 1000 10000 100000)")
    p.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    p.add_argument("--no-cuda", action="store_true", help="skip the CUDA text column")
    p.add_argument("--out", default=os.path.join(RESULTS, "build_time.json"),
                   help="JSON file to write ('' to write none)")
    args = p.parse_args(argv)
    for mode in args.modes:  # imports and first-use caches are not charged to the first row
        measure(mode, 2 * EQNS_PER_STEP, cuda=not args.no_cuda)
    rows = []
    for mode in args.modes:
        for size in sorted(args.sizes):
            rows.append(measure(mode, size, cuda=not args.no_cuda))
            print(f"  {mode} {size}: first call {rows[-1]['first_call_s']:.2f} s", flush=True)
    print(table(rows))
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as fh:
            json.dump({"env": environment(), "rows": rows}, fh, indent=2)
        print(f"wrote {args.out}")
    return rows


if __name__ == "__main__":
    main()
