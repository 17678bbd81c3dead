"""Issue 38: dualgpu's Gauss-Newton, Fisher, K-FAC and EK-FAC operators agree with
curvlinops' on the same network and weights in float64 (relative 1e-6; measured ~1e-15,
benchmarks/NOTES.md). torch and curvlinops are optional peers, not installed in CI: these
run where both import (the GPU machine with the wheels of benchmarks/gpu_wheels.txt, or a
venv with them; ``python -m benchmarks.curvlinops_check`` prints the figures)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("curvlinops")

from benchmarks.curvlinops_check import CONFIGS, LOSSES, Problem, compare, rel  # noqa: E402


@pytest.mark.parametrize("layout,sizes", CONFIGS)
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_operators_agree_with_curvlinops(loss, layout, sizes):
    errs = compare(loss, layout, sizes)
    assert {k for k, e in errs.items() if not e < 1e-6} == set(), errs
    assert len(errs) == 15


def test_the_comparison_tells_different_matrices_apart():
    # a control: the GGN and the empirical Fisher of one network differ by far more than
    # the tolerance, so the agreement above is not a comparison of anything with itself
    P = Problem("cross_entropy")
    ggn = P.to_torch_order(P.dg("ggn").toarray())
    assert rel(ggn, P.torch_dense(P.cl("GGNLinearOperator"))) < 1e-6
    assert rel(ggn, P.torch_dense(P.cl("EFLinearOperator"))) > 1e-2
