"""What every workload shares: the run context, the peer imports, input rotation, and
:func:`measure`, which checks one implementation against a reference and then times it.

A workload never crashes the run: a peer that is not installed, an implementation that
raises, or one that runs past its time limit becomes a skipped row with a note.
"""
from __future__ import annotations

import glob
import importlib
import math
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .report import Row
from .timing import (
    BenchTimeout,
    CupyClock,
    HostClock,
    TorchClock,
    array_library,
    jax_sync,
    time_fn,
    time_limit,
    wait_for,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHEELS = os.path.join(ROOT, ".wheels")     # git-ignored: peers' wheels for the GPU machine
PEER_SITE = os.path.join(ROOT, "benchmarks", "peer")   # git-ignored: where they install
L2_BYTES = 60 * 2**20          # H200 L2; inputs rotate over at least 4x this
HBM_BYTES_PER_S = 4.3e12       # device-to-device copy measured on an H200 (read + write)


class Skip(Exception):
    """An implementation cannot run here (peer missing, no GPU, unsupported case)."""


@dataclass
class Context:
    """Options and environment of one benchmark run."""

    gpu: bool = False
    quick: bool = False
    compile: bool = True               # try torch.compile where the workload offers it
    impl_timeout_s: float = 90.0       # per implementation: build + check + timing
    dualgpu_timeout_s: float | None = None   # a tighter limit for dualgpu rows, if given
    budget_s: float = 4.0              # timed part of one implementation
    log: Callable[[str], None] = print
    debug: Callable[[str], None] = lambda text: None   # tracebacks: the log file only
    tiny: bool = False                 # CPU smoke-test sizes (project/test_benchmarks_smoke)
    tf32: bool = False                 # TF32 matmuls for CuPy (CUPY_TF32) and torch

    @property
    def xp(self):
        if self.gpu:
            import cupy

            return cupy
        import numpy

        return numpy

    def device_clock(self):
        """The clock for dualgpu and the hand-fused kernels."""
        return CupyClock() if self.gpu else HostClock()

    def sync(self) -> None:
        if self.gpu:
            import cupy

            cupy.cuda.get_current_stream().synchronize()

    def limit_for(self, impl: str) -> float:
        """Seconds allowed for one implementation's build, check and timing."""
        if impl.startswith("dualgpu") and self.dualgpu_timeout_s:
            return self.dualgpu_timeout_s
        return self.impl_timeout_s

    def reps(self, full: int, quick: int) -> int:
        return quick if (self.quick or self.tiny) else full


def n_input_sets(bytes_per_set: int, most: int = 4) -> int:
    """How many input sets to rotate so that together they exceed 4x the L2 cache."""
    return max(1, min(most, math.ceil(4 * L2_BYTES / max(1, bytes_per_set))))


# ------------------------------------------------------------------------------ peers
def import_jax():
    """JAX, configured for benchmarking next to CuPy and torch (no preallocation)."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
    except Exception as exc:  # noqa: BLE001  (any import failure means "not usable")
        raise Skip(f"jax not importable ({type(exc).__name__}: {exc})") from None
    return jax


def jax_device(ctx: Context):
    jax = import_jax()
    kind = "gpu" if ctx.gpu else "cpu"
    try:
        return jax.devices(kind)[0]
    except Exception as exc:  # noqa: BLE001
        raise Skip(f"jax has no {kind} device ({exc})") from None


def to_jax(ctx: Context, a):
    """A JAX-owned copy of a CuPy/NumPy array on JAX's device.

    On the GPU the array crosses by DLPack (no host round trip) and is then copied into a
    buffer of JAX's own allocator: the check run of 2026-11-30 saw JAX's per-call dispatch
    cost about 130 µs with DLPack-imported arguments, far above its usual cost.
    """
    jax = import_jax()
    if ctx.gpu:
        return jax.numpy.array(jax.dlpack.from_dlpack(a), copy=True)
    return jax.device_put(a, jax_device(ctx))


def import_torch(ctx: Context):
    try:
        import torch
    except Exception as exc:  # noqa: BLE001
        raise Skip(f"torch not importable ({type(exc).__name__}: {exc})") from None
    if ctx.gpu and not torch.cuda.is_available():
        raise Skip("torch sees no CUDA device")
    if ctx.gpu:
        torch.backends.cuda.matmul.allow_tf32 = ctx.tf32
    try:
        import torch.func  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        raise Skip(f"torch.func missing ({exc})") from None
    return torch


def to_torch(ctx: Context, a):
    torch = import_torch(ctx)
    if ctx.gpu:
        return torch.from_dlpack(a)
    return torch.from_numpy(a)


def converted_sets(ctx: Context, inputs, convert):
    """A function returning ``inputs`` (a list of argument tuples) converted by
    ``convert(ctx, array)`` (:func:`to_jax`, :func:`to_torch`), converting once, on first
    use: a peer that is skipped never pays for the copies."""
    cache: dict = {}

    def sets():
        if "sets" not in cache:
            cache["sets"] = [tuple(convert(ctx, a) for a in s) for s in inputs]
        return cache["sets"]

    return sets


def import_from_wheels(module: str, wheels: Sequence[str], *, site: str,
                       python: tuple[int, int] = (3, 10), how: str = ""):
    """``module``, installed on first use from the wheels of :data:`WHEELS` whose file names
    start with one of ``wheels`` (the peer's and its pure-Python dependencies) into the
    folder ``benchmarks/peer/<site>`` (``pip install --no-index --no-deps --target``),
    when it is not importable already. The GPU machine has no network: the wheels travel
    with the checkout (``benchmarks/gpu_wheels.txt`` lists them). Raises :class:`Skip`
    saying why when the module cannot be had: an older Python than ``python``, no wheel
    (``how`` says how to download it), a failed install or import."""
    if sys.version_info < python:
        raise Skip(f"{module} needs Python >= {python[0]}.{python[1]} "
                   f"(this is {sys.version.split()[0]})")
    target = os.path.join(PEER_SITE, site)
    if os.path.isdir(target) and target not in sys.path:
        sys.path.insert(0, target)
    try:
        return importlib.import_module(module)
    except ImportError:
        pass
    found = sorted(w for w in glob.glob(os.path.join(WHEELS, "*.whl"))
                   if os.path.basename(w).lower().startswith(tuple(n.lower() for n in wheels)))
    if not any(os.path.basename(w).lower().startswith(wheels[0].lower()) for w in found):
        raise Skip(f"{module} not installed and no {wheels[0]} wheel in {WHEELS}"
                   + (f" ({how})" if how else ""))
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index",
                           "--no-deps", "--no-compile", "--target", target, *found],
                          capture_output=True, text=True)
    if done.returncode:
        raise Skip(f"{module} wheels did not install: {done.stderr.strip()[-200:]}")
    if target not in sys.path:
        sys.path.insert(0, target)
    importlib.invalidate_caches()
    try:
        return importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001  (any import failure means "not usable")
        raise Skip(f"{module} not importable ({type(exc).__name__}: {exc})") from None


def torch_clock(ctx: Context):
    return TorchClock() if ctx.gpu else HostClock()


def jax_clock():
    return HostClock(jax_sync, name="host+block_until_ready")


def clock_for(ctx: Context, out):
    """The clock for an implementation whose first result is ``out``: XLA computes on its
    own streams, which the CUDA events of CuPy's stream do not wait for (a JAX call timed by
    them measures its dispatch), so JAX results are waited for on the host; torch's events
    for torch; the device clock otherwise."""
    library = array_library(out)
    if library == "jax":
        return jax_clock()
    if library == "torch":
        return torch_clock(ctx)
    return ctx.device_clock()


def short(exc: BaseException, limit: int = 160) -> str:
    """One line for a table cell: exception type and the start of its message."""
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ------------------------------------------------------------------------------ measure
def measure(ctx: Context, *, workload: str, case: str, impl: str,
            build: Callable[[], Callable], inputs: Sequence[tuple] | Callable[[], Sequence],
            check: Callable[[Any], float] | None = None, clock=None, tol: float = 1e-3,
            reference: bool = False, reps: int | None = None, groups: int | None = None,
            metric: str = "per call", extra: Callable[[Callable], dict] | None = None) -> Row:
    """Build one implementation, check its first result, time it, and return its row.

    ``build()`` returns the callable (it may raise :class:`Skip`); ``check(out)`` returns the
    relative error against the workload's reference. ``inputs`` and ``clock`` may be given as
    zero-argument factories, called inside the guard (converting inputs to a peer's arrays
    imports the peer). ``extra(fn)`` may add fields (peak memory, say) after timing.
    ``first_call_s``: wall seconds of ``build()`` and the first call, to its result.
    """
    row = Row(workload=workload, case=case, impl=impl, reference=reference, metric=metric)
    try:
        with time_limit(ctx.limit_for(impl)):
            if callable(inputs):
                inputs = inputs()
            if clock is not None and not hasattr(clock, "time_group"):
                clock = clock()
            t0 = time.perf_counter()
            fn = build()
            out = fn(*inputs[0])
            wait_for(out)
            row.first_call_s = time.perf_counter() - t0
            row.note = getattr(fn, "bench_note", "")
            if check is not None:
                row.rel_err = check(out)
                if not (row.rel_err <= tol):  # NaN fails too
                    row.note = f"WRONG: rel err {row.rel_err:.2e} > tol {tol:.0e}; " + row.note
            clock = clock or clock_for(ctx, out)
            del out
            t = time_fn(fn, inputs, clock,
                        warmup=2 if ctx.tiny else 3,
                        reps=reps or ctx.reps(20, 10), groups=groups or ctx.reps(7, 3),
                        budget_s=ctx.budget_s)
            row.time_us = t.median_us
            row.timing = t.as_dict()
            row.status = "ok"
            if extra is not None:
                row.extra.update(extra(fn))
    except Skip as exc:
        row.status, row.note = "skipped", str(exc)
    except BenchTimeout as exc:
        row.status, row.note = "skipped", f"timeout: {exc}"
    except Exception as exc:  # noqa: BLE001  (a failing implementation is a row, not a crash)
        row.status, row.note = "skipped", f"error: {short(exc)}"
        ctx.debug(f"[{workload}/{case}/{impl}]\n{traceback.format_exc()}")
    ctx.log(f"  {workload:<10} {case:<12} {impl:<22} {row.describe()}")
    return row


# ------------------------------------------------------------------------------ checking
def to_xp(ctx: Context, a):
    """``a`` (NumPy, CuPy, JAX or torch) as an array of ``ctx.xp``, on the device where the
    run is, without a host round trip on the GPU."""
    xp = ctx.xp
    if not ctx.gpu:
        from .timing import to_numpy

        return to_numpy(a)
    if isinstance(a, xp.ndarray):
        return a
    try:
        return xp.from_dlpack(a)
    except Exception:  # noqa: BLE001  (0-d or exotic arrays: go through the host)
        from .timing import to_numpy

        return xp.asarray(to_numpy(a))


def rel_err(ctx: Context, out, ref) -> float:
    """``‖out − ref‖ / ‖ref‖`` in float64, computed where the arrays live."""
    xp = ctx.xp
    a = to_xp(ctx, out).astype(xp.float64).ravel()
    b = to_xp(ctx, ref).astype(xp.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"result has {a.size} elements, reference {b.size}")
    den = float(xp.linalg.norm(b))
    num = float(xp.linalg.norm(a - b))
    return num / den if den > 0 else num


def max_rel_err(ctx: Context, outs: Sequence, refs: Sequence) -> float:
    """The largest relative error over matching outputs (a tuple result vs a tuple)."""
    if len(outs) != len(refs):
        raise ValueError(f"{len(outs)} outputs, expected {len(refs)}")
    return max(rel_err(ctx, o, r) for o, r in zip(outs, refs))


# ------------------------------------------------------------------------------ inputs
def normal(rng, xp, shape, scale: float = 1.0):
    """float32 normal samples from a NumPy or CuPy ``Generator`` (never zeros)."""
    try:
        a = rng.standard_normal(shape, dtype=xp.float32)
    except TypeError:
        a = rng.standard_normal(shape).astype(xp.float32)
    return a if scale == 1.0 else (scale * a).astype(xp.float32)


def uniform(rng, xp, shape):
    """float32 uniform samples in [0, 1)."""
    try:
        return rng.random(shape, dtype=xp.float32)
    except TypeError:
        return rng.random(shape).astype(xp.float32)
