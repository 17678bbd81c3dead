"""Issue 35 on the device: the CuPy plan against NumPy float64 where one kernel computes a
value along some axes of its domain and another reads it along others (the planner merged
such neighbours, or let the second recompute the value, and both then read it along the
first's axes: a silent wrong answer), the fuzzed flat-parameter losses that found it
(tests/codegen/test_cupy_launcher.py runs them on a fake CuPy, tests/codegen/test_fusion.py and
tests/codegen/test_host_fused.py the plans on the CPU), and the gradient of a slice of a slice (the
plan ran the transpose of the inner slice after its reader: a KeyError)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.runtime.executor import config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_device import cupy_or_skip  # noqa: E402

cp = cupy_or_skip()

from test_cupy_launcher import FLAT_LOSS_FOUND, _unflatten  # noqa: E402
from test_fusion import column_of_a_row, recomputed_along_rows  # noqa: E402

RTOL = 1e-12


@pytest.fixture(params=[(True, False), (False, False), (True, True)],
                ids=["recomputed", "read", "tiny"])
def switches(request):
    """The plan with recomputation (the default) and without, and the tiny kernel (the
    default's choice for small programs); restored by tests/gpu/conftest.py."""
    config["recompute"], config["tiny_kernel"] = request.param
    dg.clear_cache()
    yield
    dg.clear_cache()


def _on_numpy(fn, *args):
    """``fn(*args)`` by the generated NumPy program (no fused host regions: the CPU twin of
    the plan under test)."""
    saved = config["fuse"]
    config["fuse"] = False
    dg.clear_cache()
    try:
        return fn(*args)
    finally:
        config["fuse"] = saved
        dg.clear_cache()


def _compare(fn, args):
    want = _on_numpy(fn, *args)
    want = want if isinstance(want, tuple) else (want,)
    for _ in range(4):   # eager, captured, replayed
        got = fn(*(cp.asarray(a) for a in args))
        got = got if isinstance(got, tuple) else (got,)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert isinstance(g, cp.ndarray)
            np.testing.assert_allclose(cp.asnumpy(g), w, rtol=RTOL,
                                       atol=RTOL * max(1.0, float(np.abs(w).max())))


@pytest.mark.parametrize("name", sorted(FLAT_LOSS_FOUND))
@pytest.mark.parametrize("transform", ["grad", "hvp"])
def test_flat_losses_found_by_the_fuzzer_on_cupy(name, transform, switches):
    _, loss = FLAT_LOSS_FOUND[name].functions()
    args = tuple(np.asarray(a) for a in FLAT_LOSS_FOUND[name].args())
    shapes = [a.shape for a in args]
    p = np.concatenate([a.ravel() for a in args])

    def flat_loss(p):
        return loss(*_unflatten(p, shapes))

    if transform == "grad":
        _compare(dg.grad(flat_loss), (p,))
    else:
        _compare(dg.hvp(flat_loss), (p, p[::-1].copy()))


@pytest.mark.parametrize("n", [5, 700])
@pytest.mark.parametrize("f", [column_of_a_row, recomputed_along_rows])
def test_a_value_read_along_other_axes_on_cupy(f, n, switches):
    """The two smallest such programs (tests/codegen/test_fusion.py), small and past the tiny
    kernel's sizes."""
    rng = np.random.default_rng(0)
    args = (rng.standard_normal(n), rng.standard_normal(n), rng.standard_normal((n, 1)),
            rng.standard_normal((n, 2)))[:2 + (f is recomputed_along_rows) + 1]
    _compare(dg.jit(f), args)
    if n > 5:   # and their HVPs
        def loss(x, *rest):
            return sum(np.sum(np.tanh(o)) for o in f(x, *rest))

        _compare(dg.hvp(loss), args + (args[0][::-1].copy(),))


@pytest.mark.parametrize("n", [11, 4099])
def test_the_gradient_of_a_slice_of_a_slice_on_cupy(n, switches):
    """Two padded reads in a row (tests/codegen/test_padded_reads.py): the plan ran the first after
    the second."""
    p = np.random.default_rng(1).uniform(-1, 1, n)
    _compare(dg.grad(lambda p: np.sum(np.sin(p[1:-1][::2]) * p[2])), (p,))
