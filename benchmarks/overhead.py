"""Host overhead: the first call of the MLP HVP and the host time of a cached call.

* First call: trace + transform + code generation (+ kernel compilation) + one run, from an
  empty program cache, with the result waited for. Target < 1 s. CuPy keeps compiled
  kernels in an on-disk cache, so only a machine's very first run pays NVRTC in full; the
  row says how many files that cache held before. The peers' first calls (JAX trace + XLA
  compile; torch.func) are shown for scale.
* Cached call: ``time.perf_counter`` around calls without synchronising, in groups of a
  few calls with a synchronisation between groups (outside the timing), so the device queue
  never fills and blocks the host. Target < 30 µs, for the MLP HVP; the tiny Dense HVP is
  shown too.
"""
from __future__ import annotations

import os
import time
import traceback

from . import dense_tiny, mlp
from .common import Context, Skip, converted_sets, rel_err, short, to_jax, to_torch
from .report import Row
from .timing import BenchTimeout, fit_reps, host_overhead, time_limit

NAME = "overhead"


def _guarded(ctx: Context, row: Row, body) -> Row:
    """Run ``body(row)``; a skip, timeout or error becomes the row's note."""
    try:
        with time_limit(ctx.limit_for(row.impl)):
            body(row)
            row.status = "ok"
    except (Skip, BenchTimeout) as exc:
        row.note = str(exc)
    except Exception as exc:  # noqa: BLE001
        row.note = f"error: {short(exc)}"
        ctx.debug(f"[{NAME}/{row.case}/{row.impl}]\n{traceback.format_exc()}")
    ctx.log(f"  {NAME:<10} {row.case:<12} {row.impl:<22} {row.describe()}")
    return row


def first_call(ctx: Context, impl: str, make, args, wait, check, prepare=None) -> Row:
    """Wall time of ``make()`` (which returns the function and an argument converter), the
    first call and waiting for its result. ``prepare()`` (imports) runs before the clock."""
    def body(row):
        if prepare is not None:
            prepare()
        t0 = time.perf_counter()
        fn, convert = make()
        out = fn(*convert(args))
        wait(out)
        row.time_us = (time.perf_counter() - t0) * 1e6
        row.rel_err = check(out)

    return _guarded(ctx, Row(workload=NAME, case="first call", impl=impl,
                             metric="first call (wall)"), body)


def cached_host_time(ctx: Context, case: str, impl: str, build, sets, sync) -> Row:
    """Host time per call of an already-built, already-called function."""
    def body(row):
        fn = build()
        inputs = sets()
        sync(fn(*inputs[0]))
        t0 = time.perf_counter()
        sync(fn(*inputs[1 % len(inputs)]))
        reps, groups = fit_reps(time.perf_counter() - t0, ctx.reps(10, 5), ctx.reps(30, 5),
                                ctx.budget_s)
        t = host_overhead(fn, inputs, reps=reps, groups=groups, sync=sync)
        row.time_us, row.timing = t.median_us, t.as_dict()

    return _guarded(ctx, Row(workload=NAME, case=case, impl=impl,
                             metric="host time per call (no sync)"), body)


def kernel_cache_files() -> int:
    path = os.environ.get("CUPY_CACHE_DIR", os.path.expanduser("~/.cupy/kernel_cache"))
    try:
        return len(os.listdir(path))
    except OSError:
        return 0


def run(ctx: Context) -> list[Row]:
    dims = mlp.TINY if ctx.tiny else mlp.FULL
    xp = ctx.xp
    inputs = mlp.make_inputs(xp, dims, 2, seed=5)
    hvp_ref = mlp.reference(xp, dims, *inputs[0])[1]
    check = lambda out: rel_err(ctx, out, hvp_ref)
    cupy_sync = lambda out: ctx.sync()

    def jax_sync(out):
        if out is not None:
            out.block_until_ready()

    def torch_sync(out):
        if ctx.gpu:
            import torch

            torch.cuda.synchronize()

    jax_inputs = converted_sets(ctx, inputs, to_jax)
    torch_inputs = converted_sets(ctx, inputs, to_torch)

    def make_dualgpu():
        import dualgpu as dg

        dg.clear_cache()
        return dg.hvp(mlp.make_loss(dims)), lambda a: a

    # Each library first runs an unrelated small HVP (the Dense one), so that the first-call
    # rows hold the cost of a new function, not one-off imports and context creation.
    dense_sets = dense_tiny.make_inputs(xp)
    jax_dense = lambda: [tuple(to_jax(ctx, a) for a in s) for s in dense_sets]
    torch_dense = lambda: [tuple(to_torch(ctx, a) for a in s) for s in dense_sets]
    cache_files = kernel_cache_files() if ctx.gpu else None
    rows = [
        first_call(ctx, "dualgpu", make_dualgpu, inputs[0], cupy_sync, check,
                   prepare=lambda: cupy_sync(dense_tiny.build_dualgpu(ctx)(*dense_sets[0]))),
        first_call(ctx, "jax jit", lambda: (mlp.build_jax(ctx, dims, "hvp"),
                                            lambda a: [to_jax(ctx, x) for x in a]),
                   inputs[0], jax_sync, check,
                   prepare=lambda: jax_sync(dense_tiny.build_jax(ctx)(*jax_dense()[0]))),
        first_call(ctx, "torch.func", lambda: (mlp.torch_fn(ctx, dims, "hvp"),
                                               lambda a: [to_torch(ctx, x) for x in a]),
                   inputs[0], torch_sync, check,
                   prepare=lambda: torch_sync(dense_tiny.build_torch(ctx)(*torch_dense()[0]))),
    ]
    if cache_files is not None:
        rows[0].extra["cupy_kernel_cache_files_before"] = cache_files

    loss = mlp.make_loss(dims)
    rows += [
        cached_host_time(ctx, "cached call", "dualgpu",
                         lambda: mlp.build_dualgpu(ctx, loss, "hvp"), lambda: inputs,
                         cupy_sync),
        cached_host_time(ctx, "cached call", "jax jit",
                         lambda: mlp.build_jax(ctx, dims, "hvp"), jax_inputs, jax_sync),
        cached_host_time(ctx, "cached call", "torch.func",
                         lambda: mlp.torch_fn(ctx, dims, "hvp"), torch_inputs, torch_sync),
        cached_host_time(ctx, "cached Dense", "dualgpu",
                         lambda: dense_tiny.build_dualgpu(ctx), lambda: dense_sets, cupy_sync),
    ]
    return rows
