"""Timing helpers shared by the workloads.

Three clocks, one method: warm up first, then time ``groups`` groups of ``reps`` calls each
and report the median over groups of the per-call time. Each call takes the next input set
from a small rotation, so that repeated calls do not find their inputs in the L2 cache.

* :class:`CupyClock` and :class:`TorchClock` bracket a group with CUDA events.
* :class:`HostClock` reads ``time.perf_counter`` around a group and calls ``sync`` (for JAX,
  ``block_until_ready`` on every output of the group) before reading it again.

:func:`host_overhead` is different on purpose: it reads the host clock around calls without
any synchronisation, to measure what a call costs the Python thread.
"""
from __future__ import annotations

import signal
import statistics
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class Timing:
    """Per-call time of one implementation, in microseconds."""

    median_us: float
    min_us: float
    max_us: float
    reps: int
    groups: int
    clock: str

    def as_dict(self) -> dict:
        return asdict(self)


class HostClock:
    """Host clock around a group; ``sync(outputs)`` waits for the device (or does nothing)."""

    name = "host"

    def __init__(self, sync: Callable[[list], None] | None = None, name: str = "host"):
        self.sync = sync or (lambda outs: None)
        self.name = name

    def time_group(self, call: Callable[[int], Any], reps: int) -> float:
        self.sync([])
        outs = []
        t0 = time.perf_counter()
        for i in range(reps):
            outs.append(call(i))
        self.sync(outs)
        return (time.perf_counter() - t0) / reps * 1e6


class LatencyClock:
    """Host clock around each call *and* its completion: ``sync(out)`` after every call.

    What a caller that needs the result at once sees (a Krylov solver reading a dot
    product): launch overhead, host work and device time together.
    """

    def __init__(self, sync: Callable[[Any], None], name: str = "host latency"):
        self.sync = sync
        self.name = name

    def time_group(self, call: Callable[[int], Any], reps: int) -> float:
        self.sync(None)
        t0 = time.perf_counter()
        for i in range(reps):
            self.sync(call(i))
        return (time.perf_counter() - t0) / reps * 1e6


class CupyClock:
    """CUDA events of the current CuPy stream around a group."""

    name = "cuda-events(cupy)"

    def __init__(self):
        import cupy

        self.cupy = cupy

    def time_group(self, call, reps):
        cp = self.cupy
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for i in range(reps):
            call(i)
        stop.record()
        stop.synchronize()
        return cp.cuda.get_elapsed_time(start, stop) * 1e3 / reps


class TorchClock:
    """``torch.cuda.Event`` around a group."""

    name = "cuda-events(torch)"

    def __init__(self):
        import torch

        self.torch = torch

    def time_group(self, call, reps):
        torch = self.torch
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(reps):
            call(i)
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop) * 1e3 / reps


def jax_sync(outs: list) -> None:
    """Wait for every array in ``outs`` (nested tuples allowed); JAX dispatch is async."""
    import jax

    if outs:
        jax.block_until_ready(outs)


def fit_reps(est_s: float, reps: int, groups: int, budget_s: float) -> tuple[int, int]:
    """Shrink ``reps`` (then ``groups``) so that ``groups * reps`` calls of ``est_s`` seconds
    fit in ``budget_s``; never below one group of one call."""
    est_s = max(est_s, 1e-9)
    if est_s * reps * groups > budget_s:
        reps = max(1, int(budget_s / (est_s * groups)))
        if est_s * reps * groups > budget_s:
            groups = max(1, int(budget_s / est_s))
    return reps, groups


def time_fn(fn: Callable, inputs: Sequence[tuple], clock, *, warmup: int = 3, reps: int = 20,
            groups: int = 5, budget_s: float = 10.0) -> Timing:
    """Median per-call time of ``fn(*inputs[i % len(inputs)])``.

    The warm-up calls also estimate the cost of one call; ``reps`` and ``groups`` shrink so
    that the timed part stays within ``budget_s`` (down to one group of one call), which keeps
    a slow implementation from eating the whole benchmark. Where the budget allows, one
    untimed group runs first: pipelined calls need more memory in flight than single ones,
    and the first group otherwise pays for the allocator's growth (seen with JAX).
    """
    n_inputs = len(inputs)
    call = lambda i: fn(*inputs[i % n_inputs])
    est_us = float("inf")
    for i in range(max(1, warmup)):
        est_us = min(est_us, clock.time_group(lambda j, i=i: call(i + j), 1))
    reps, groups = fit_reps(est_us * 1e-6, reps, groups, budget_s)
    if est_us * 1e-6 * reps * (groups + 1) <= budget_s:
        clock.time_group(call, reps)   # untimed: lets allocators grow to a pipelined group
    per_call = [clock.time_group(call, reps) for _ in range(groups)]
    return Timing(statistics.median(per_call), min(per_call), max(per_call), reps, groups,
                  clock.name)


def host_overhead(fn: Callable, inputs: Sequence[tuple], *, reps: int = 200, groups: int = 5,
                  sync: Callable[[Any], None] | None = None) -> Timing:
    """Host time of one call, without waiting for the device between calls (median of groups).

    ``sync(last_output)`` (if given) runs between groups, outside the timed region, so that
    the device queue does not fill up and start blocking the host.
    """
    n_inputs = len(inputs)
    per_call = []
    out = None
    for _ in range(groups):
        if sync is not None:
            sync(out)
        t0 = time.perf_counter()
        for i in range(reps):
            out = fn(*inputs[i % n_inputs])
        per_call.append((time.perf_counter() - t0) / reps * 1e6)
    if sync is not None:
        sync(out)
    return Timing(statistics.median(per_call), min(per_call), max(per_call), reps, groups,
                  "host(no sync)")


class BenchTimeout(Exception):
    """An implementation ran past its time limit (raised by :func:`time_limit`)."""


@contextmanager
def time_limit(seconds: float | None):
    """Raise :class:`BenchTimeout` in the main thread after ``seconds`` (POSIX only).

    Interrupts Python code between bytecodes; a single long call into a C library finishes
    first. A no-op when ``seconds`` is falsy or SIGALRM is unavailable.
    """
    if not seconds or not hasattr(signal, "SIGALRM"):
        yield
        return

    def _raise(signum, frame):
        raise BenchTimeout(f"ran past its {seconds:.0f} s limit")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def to_numpy(x):
    """A host NumPy array from a NumPy, CuPy, JAX or torch array (or a Python scalar)."""
    import numpy as np

    if hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        return x.get()
    if type(x).__module__.startswith("torch"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def array_library(out, depth: int = 3) -> str | None:
    """``"jax"``, ``"torch"`` or ``"cupy"``: the library of the first array in ``out``
    (tuples, lists, dicts and result objects read ``depth`` levels deep), None when there
    is none of them.

    Example::

        >>> array_library((1.0, [None]))
    """
    module = type(out).__module__.split(".")[0]
    if module in ("jax", "jaxlib"):
        return "jax"
    if module in ("torch", "cupy"):
        return module
    if depth and isinstance(out, (tuple, list, dict)):
        for leaf in (out.values() if isinstance(out, dict) else out):
            found = array_library(leaf, depth - 1)
            if found is not None:
                return found
    elif depth and hasattr(out, "__dict__") and module not in ("numpy", "builtins"):
        for leaf in vars(out).values():
            found = array_library(leaf, depth - 1)
            if found is not None:
                return found
    return None


def wait_for(out, depth: int = 3) -> None:
    """Wait until ``out`` (an array of NumPy, CuPy, JAX or torch, or tuples, lists and
    result objects of them, ``depth`` levels deep) is computed: JAX, CuPy and torch on the
    GPU dispatch asynchronously. Used to time a first call to its result."""
    module = type(out).__module__
    if hasattr(out, "block_until_ready"):
        out.block_until_ready()
    elif module.startswith("cupy"):
        import cupy

        cupy.cuda.get_current_stream().synchronize()
    elif module.startswith("torch"):
        if getattr(out, "is_cuda", False):
            import torch

            torch.cuda.synchronize()
    elif depth and isinstance(out, (tuple, list)):
        for leaf in out:
            wait_for(leaf, depth - 1)
    elif depth and hasattr(out, "__dict__") and not module.startswith(("numpy", "builtins")):
        for leaf in vars(out).values():        # a result object (a sparse matrix, say)
            wait_for(leaf, depth - 1)
