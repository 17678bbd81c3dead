"""Where a cached ``dg.sparse_hessian`` call's microseconds go on the GPU (issue 26):
``python -m benchmarks.profile_sparse [--n N]``. GPU only; a probe for NOTES.md, not a
benchmark (ratios against peers are in ``sparse_derivatives.py``).

For the chained Rosenbrock (n = 10^6 and 10^4) and the 2-D Poisson energy (1000 x 1000):
host and device time (``cupyx.profiler.benchmark``, median of 200) of the whole cached
call, of its compiled program (products, gather into the CSR values, copies of the
structure) and of the CSR wrapper; the device time of each step of the program
(:func:`benchmarks.profile_steps.profile`); and one ``dg.hvp`` for scale.
"""
from __future__ import annotations

import argparse

import numpy as np

import dualgpu as dg

from .profile_steps import profile
from .sparse_derivatives import hand_seeds, make_point, poisson, rosenbrock


def _timed(name: str, fn, args=()) -> None:
    from cupyx.profiler import benchmark

    r = benchmark(fn, args, n_repeat=200, n_warmup=20)
    print(f"  {name:<36} host {np.median(r.cpu_times) * 1e6:8.1f} us   "
          f"device {np.median(r.gpu_times[0]) * 1e6:8.1f} us", flush=True)


def probe(label: str, f, x_host: np.ndarray, seed: np.ndarray) -> None:
    import cupy as cp

    print(label, flush=True)
    x = cp.asarray(x_host)
    hess = dg.sparse_hessian(f)
    hess(x)
    _timed("sparse_hessian (cached, whole call)", hess, (x,))
    entry = hess._entry((x,), {})   # its program-cache entry: the program and the plan
    program, plan = entry.exe, entry.trees
    _timed("its program", program, (x,))
    profile(f"{label}: the program's steps", hess, (x,), 12)
    _timed("the CSR wrapper", plan.csr, (program.backend,) + tuple(program(x)))
    _timed("one dg.hvp", dg.hvp(f), (x, cp.asarray(seed)))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.profile_sparse")
    p.add_argument("--n", type=int, default=10**6, help="Rosenbrock size (also 10^4)")
    opts = p.parse_args(argv)
    for n in (opts.n, 10**4):
        probe(f"rosenbrock n={n}", rosenbrock(np), make_point(n),
              hand_seeds("rosenbrock", n)[0])
    side = 1000
    probe(f"poisson {side}x{side}", poisson(np, side), make_point(side * side, 1),
          hand_seeds("poisson", side * side, side)[0])


if __name__ == "__main__":
    main()
