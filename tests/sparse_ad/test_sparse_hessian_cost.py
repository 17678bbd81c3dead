"""A cached sparse Hessian on NumPy (one HVP per color, read straight into the CSR values)
equals the closed form of a 2-D Poisson energy, with its 5 colors. What it costs (in single
HVPs) is measured by the sparse_derivatives benchmark (benchmarks/), not here: timings are
not tests."""
from __future__ import annotations

import numpy as np

import dualgpu as dg
from benchmarks.sparse_derivatives import make_point, poisson, poisson_hessian


def test_a_cached_sparse_hessian_is_the_closed_form():
    side = 60
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
    again = hess(x)  # the cached call: the same matrix, in fresh arrays
    assert abs(again - h).max() == 0 and again.data is not h.data
