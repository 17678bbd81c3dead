"""dualgpu against itself: the headline workloads timed with whatever ``dualgpu`` is first on
the path, so that two versions are compared in one GPU session without their peers (which
``make bench`` times). Prints one JSON line per workload: device and host microseconds per
call (``cupyx.profiler.benchmark``, medians) and the first call's seconds.

Run it once per version, in one session, from inside each checkout, and compare the
lines::

    (cd old_checkout && python -m benchmarks.ab) > old.jsonl
    python -m benchmarks.ab > new.jsonl

``python -m`` puts the current folder first on ``sys.path``, before ``PYTHONPATH``: run from
the new checkout with ``PYTHONPATH=old_checkout``, both runs would time the new one (as one
did on 2026-12-05). Each line names the ``dualgpu`` it timed, and a run refuses to start
when ``PYTHONPATH`` names a checkout whose ``dualgpu`` is not the one imported.
"""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from . import dense_tiny, laplacian, mlp, scenario2, sparse_derivatives


def _time(fn, args, n_repeat=50):
    import cupy as cp
    from cupyx.profiler import benchmark

    t0 = time.perf_counter()
    fn(*args)
    cp.cuda.Device().synchronize()
    first = time.perf_counter() - t0
    r = benchmark(fn, args, n_repeat=n_repeat, n_warmup=5)
    return dict(gpu_us=float(np.median(r.gpu_times) * 1e6),
                cpu_us=float(np.median(r.cpu_times) * 1e6), first_s=round(first, 3))


def workloads(cp):
    import dualgpu as dg

    args = laplacian.make_inputs(cp, 50, laplacian.HIDDEN, laplacian.POINTS)
    yield "laplacian D=50", dg.laplacian(laplacian.u, batch_axes=0), args, 50
    args5 = laplacian.make_inputs(cp, 5, laplacian.HIDDEN, laplacian.POINTS)
    yield "biharmonic D=5", dg.biharmonic(laplacian.u, batch_axes=0), args5, 30
    p, X, Y, v = mlp.make_inputs(cp, mlp.FULL, 1)[0]
    yield "mlp hvp 784-512-10", dg.hvp(mlp.make_loss(mlp.FULL)), (p, X, Y, v), 200
    yield "dense tiny hvp", dg.hvp(dense_tiny.loss), dense_tiny.make_inputs(cp, 1)[0], 500
    x, mu, vv = scenario2.make_inputs(cp, scenario2.shape_for(10**6), 1)[0]
    yield "particles grad+hvp 1e6", dg.grad_and_hvp(scenario2.f, batch_axes=(1, 2, 3)), \
        (x, mu, vv), 200
    n = 10**6
    xr = cp.asarray(np.random.default_rng(0).uniform(-1, 1, n))
    yield "sparse hessian rosenbrock 1e6", dg.sparse_hessian(sparse_derivatives.rosenbrock(np)), \
        (xr,), 100
    yield "sparse hessian poisson 1000^2", \
        dg.sparse_hessian(sparse_derivatives.poisson(np, 1000)), (xr,), 100


def check_version(imported: str, pythonpath: str) -> None:
    """Exit when the first folder of ``pythonpath`` holds a ``dualgpu`` package and the one
    imported (``imported``: its ``__init__.py``) is another.

    Example::

        >>> check_version("/new/dualgpu/__init__.py", "")   # no PYTHONPATH: nothing to check
    """
    first = pythonpath.split(os.pathsep)[0]
    if not first or not os.path.isdir(os.path.join(first, "dualgpu")):
        return
    wanted = os.path.realpath(os.path.join(first, "dualgpu"))
    if os.path.dirname(os.path.realpath(imported)) != wanted:
        sys.exit(f"benchmarks.ab: PYTHONPATH names {first}, but dualgpu was imported from "
                 f"{imported} (python -m puts the current folder first): run it from "
                 f"inside {first}")


def main() -> None:
    import cupy as cp

    import dualgpu as dg

    check_version(dg.__file__, os.environ.get("PYTHONPATH", ""))
    only = sys.argv[1:]
    for name, fn, args, repeat in workloads(cp):
        if only and not any(o in name for o in only):
            continue
        try:
            row = _time(fn, args, repeat)
        except Exception as e:  # noqa: BLE001 -- a row that fails is reported, not fatal
            row = dict(error=f"{type(e).__name__}: {e}"[:300])
        print(json.dumps(dict(workload=name, dualgpu=dg.__file__, **row)), flush=True)
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
