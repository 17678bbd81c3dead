"""Drive the benchmarks: ``python -m benchmarks.run [--quick] [--only NAME ...]``.

Runs every workload (or those named), prints the ratio table and the performance targets with
met / not met, and writes ``bench-<time>.json``, ``bench-<time>.png`` and
``bench-<time>.log`` (plus ``latest.*`` copies, unless ``--no-latest``) under
``benchmarks/results/``. Without CuPy
and a CUDA device it runs the tiny CPU sizes (what the smoke test runs), so that the
harness itself can be tried anywhere.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")   # before any jax import

from . import (  # noqa: E402
    curvature,
    dense_tiny,
    laplacian,
    mlp,
    mlp_deep,
    mlp_layouts,
    overhead,
    scenario2,
    sparse,
    sparse_derivatives,
    taylor,
)
from .common import Context  # noqa: E402
from .report import Report, environment  # noqa: E402

WORKLOADS = {
    "scenario2": scenario2.run,
    "mlp": mlp.run,
    "mlp_deep": mlp_deep.run,
    "mlp_layouts": mlp_layouts.run,
    "dense_tiny": dense_tiny.run,
    "sparse": sparse.run,
    "overhead": overhead.run,
    "sweep": scenario2.run_sweep,
    "laplacian": laplacian.run,
    "sparse_derivatives": sparse_derivatives.run,
    "taylor": taylor.run,
    "curvature": curvature.run,
}
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001
        return False


def _free_device_memory(gpu: bool) -> None:
    """Hand pooled memory back between workloads (CuPy pool, torch cache)."""
    if not gpu:
        return
    import cupy

    cupy.get_default_memory_pool().free_all_blocks()
    if "torch" in sys.modules:
        sys.modules["torch"].cuda.empty_cache()


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer sizes and repetitions")
    p.add_argument("--only", action="append", choices=sorted(WORKLOADS), metavar="NAME",
                   help=f"run only this workload (repeatable): {', '.join(WORKLOADS)}")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile rows")
    p.add_argument("--tf32", action="store_true",
                   help="TF32 matmuls for CuPy (CUPY_TF32=1: dualgpu and the hand-fused "
                        "kernels) and torch; JAX keeps its default precision either way")
    p.add_argument("--recompute", choices=("on", "off"), default=None,
                   help="set dg.config['recompute'] for every dualgpu row (default: the "
                        "library's default)")
    p.add_argument("--cpu", action="store_true",
                   help="tiny NumPy sizes even when a GPU is present (harness check)")
    p.add_argument("--out", default=RESULTS, help="folder for JSON, PNG and log")
    p.add_argument("--latest", action=argparse.BooleanOptionalAction, default=True,
                   help="also copy the results to latest.* in the --out folder (tracked "
                        "files in benchmarks/results/: `dualgpu bench` does not, unless asked)")
    p.add_argument("--impl-timeout", type=float, default=90.0,
                   help="seconds allowed for one implementation (build, check, timing)")
    p.add_argument("--dualgpu-timeout", type=float, default=None,
                   help="a tighter per-implementation limit for the dualgpu rows")
    p.add_argument("--budget", type=float, default=None,
                   help="seconds of timed calls per implementation (default 4, quick 1.5)")
    return p.parse_args(argv)


def main(argv=None, progress=None) -> int:
    """Run the benchmarks; ``progress(done, total, label)`` (``dualgpu bench`` passes a
    progress bar) is called before and after each workload. Returns the exit status."""
    args = parse_args(argv)
    if args.tf32:
        os.environ["CUPY_TF32"] = "1"        # read by CuPy; must precede its import
    gpu = gpu_available() and not args.cpu
    if args.recompute is not None:
        import dualgpu as dg

        dg.config["recompute"] = args.recompute == "on"
    os.makedirs(args.out, exist_ok=True)
    base = fresh_base(args.out, time.strftime("%Y%m%d-%H%M%S", time.gmtime()))
    log, debug, log_file = open_log(base + ".log")
    ctx = Context(gpu=gpu, quick=args.quick, compile=not args.no_compile, tiny=not gpu,
                  tf32=args.tf32,
                  impl_timeout_s=args.impl_timeout, dualgpu_timeout_s=args.dualgpu_timeout,
                  budget_s=args.budget or (1.5 if args.quick else 4.0), log=log, debug=debug)
    if not gpu:
        log("no CuPy/CUDA device (or --cpu): running the tiny CPU sizes only")
    names = args.only or list(WORKLOADS)
    report = Report(env={"gpu": "pending"}, args={"quick": args.quick, "only": names, "gpu": gpu,
                          "compile": ctx.compile, "tf32": args.tf32,
                          "recompute": args.recompute,
                          "budget_s": ctx.budget_s})
    t_all = time.perf_counter()
    run_workloads(ctx, {name: WORKLOADS[name] for name in names}, report, base + ".json",
                  progress)
    report.env = environment(gpu)
    report.sections["total"] = round(time.perf_counter() - t_all, 2)

    log("\n" + report.table())
    log("\nTargets (docs/performance.md)\n" + report.targets_table())
    log(f"\nenvironment: {report.env.get('gpu', 'CPU')}  driver/smi: "
        f"{report.env.get('nvidia_smi', '-')}  versions: "
        + ", ".join(f"{k} {v}" for k, v in report.env["versions"].items() if v))
    paths = [report.write_json(base + ".json")]
    png = report.plot(base + ".png")
    if png:
        paths.append(png)
    else:
        log("matplotlib not importable: no plot")
    log(f"total {report.sections['total']:.1f} s; wrote " + ", ".join(paths))
    log_file.close()
    for path in (paths + [base + ".log"]) if args.latest else ():
        shutil.copyfile(path, os.path.join(args.out, "latest" + os.path.splitext(path)[1]))
    return 0


def open_log(path: str):
    """``(log, debug, file)``: ``log(text)`` prints and writes a line to the file at
    ``path`` (a new file), ``debug(text)`` (tracebacks) writes it to the file only."""
    log_file = open(path, "x")

    def log(text: str) -> None:
        print(text, flush=True)
        log_file.write(text + "\n")
        log_file.flush()

    def debug(text: str) -> None:
        log_file.write(text + "\n")
        log_file.flush()

    return log, debug, log_file


def run_workloads(ctx: Context, workloads: dict, report: Report, json_path: str,
                  progress=None) -> None:
    """Run each ``workloads[name](ctx)`` in turn into ``report`` (its seconds in
    ``report.sections``), each from the same ``dg.config``; a workload that raises is a
    logged failure, not the end of the run. The JSON is rewritten after each, so that partial
    results survive a kill; pooled device memory is handed back between workloads."""
    import dualgpu as dg

    switches = dict(dg.config)      # every workload starts from these (rows set precision)
    names = list(workloads)
    for i, name in enumerate(names):
        dg.config.update(switches)
        if progress is not None:
            progress(i, len(names), name)
        ctx.log(f"== {name}")
        t0 = time.perf_counter()
        try:
            report.add(workloads[name](ctx))
        except Exception as exc:  # noqa: BLE001  (a broken workload must not stop the rest)
            import traceback

            ctx.log(f"  workload {name} failed: {type(exc).__name__}: {exc}")
            ctx.debug(traceback.format_exc())
        report.sections[name] = round(time.perf_counter() - t0, 2)
        ctx.log(f"   ({report.sections[name]:.1f} s)")
        report.write_json(json_path)
        _free_device_memory(ctx.gpu)
    if progress is not None:
        progress(len(names), len(names), "done")


def fresh_base(out: str, stamp: str, prefix: str = "bench") -> str:
    """``out/<prefix>-<stamp>``, or ``out/<prefix>-<stamp>-2``, ... : a name no earlier
    run's files have (two runs in one second never overwrite each other's results)."""
    names = os.listdir(out)
    for n in range(1, len(names) + 2):
        name = f"{prefix}-{stamp}" + (f"-{n}" if n > 1 else "")
        if not any(os.path.splitext(f)[0] == name for f in names):
            return os.path.join(out, name)
    raise AssertionError("unreachable")


if __name__ == "__main__":
    sys.exit(main())
