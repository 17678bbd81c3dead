"""Out-of-range indices given at run time never give a value: every gather and scatter whose
indices are an argument of the program raises :class:`~dualgpu.errors.IndexOutOfBoundsError`
(a ``DualgpuError`` and an ``IndexError``, as NumPy raises) on every NumPy executor, for an
index ``>= n`` and one below ``-n``; in-range negative indices count from the end as NumPy's.

The host kernel (``config["host_kernel"]``) refuses programs with gathers (they run as the
generated Python: the ``host`` column checks it); the host fused plan runs gathers as library
steps between its compiled regions. CuPy's gathers wrap out-of-range indices without a check
(docs/gpu.md); the GPU tests do not cover that here.
"""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.backends.numpy import NumpyBackend
from dualgpu.codegen import host_regions
from dualgpu.errors import IndexOutOfBoundsError
from dualgpu.executor import Executable

X = np.linspace(0.1, 1.2, 12).reshape(3, 4)
ROWS = np.arange(3)

# name -> (function of (x, idx), idx in range, axis length the indices address)
GATHERS = {
    "x[idx]": (lambda x, i: x[i], 3),
    "x[:, idx]": (lambda x, i: np.sin(x[:, i]) * 2 + 1, 4),
    "x[rows, idx]": (lambda x, i: x[ROWS, i], 4),
    "take axis=1": (lambda x, i: np.take(x, i, axis=1), 4),
    "take flat": (lambda x, i: np.take(x, i), 12),
    "take_along_axis": (lambda x, i: np.take_along_axis(x, i[:, None], axis=1), 4),
    "grad of x[idx] (scatter_add)": (dg.grad(lambda x, i: np.sum(np.sin(x[i]))), 3),
    "put_along_axis_add": (lambda x, i: dg.lax.put_along_axis_add(x[:, :1], i[:, None], 1,
                                                              (3, 4)), 4),
    "nn.cross_entropy": (lambda x, i: dg.nn.cross_entropy(x, i), 4),
}
# config switches, and which program runs: (host_fused, host kernel)
EXECUTORS = {
    "python": (dict(fuse=False), (False, False)),
    "host_fused": (dict(host_fused=True), None),
    "host_kernel": (dict(host_fused=False, host_kernel=True), (False, False)),
}


@pytest.fixture
def executor(request, monkeypatch):
    switches, runs = EXECUTORS[request.param]
    monkeypatch.setattr(host_regions, "HOST_FUSED_MIN", 0)
    before = dict(dg.config)
    dg.config.update(switches)
    yield runs
    dg.config.update(before)
    dg.clear_cache()


@pytest.mark.parametrize("executor", list(EXECUTORS), indirect=True)
@pytest.mark.parametrize("op", list(GATHERS))
def test_out_of_range_indices_given_as_arguments_raise(op, executor):
    fn, n = GATHERS[op]
    good = np.array([0, n - 1, 1])
    exe = Executable(dg.trace(fn, X, good), NumpyBackend())
    if executor is not None:
        assert (exe.host_fused is not None, exe.host is not None) == executor
    for bad in (np.array([0, n, 1]), np.array([0, -n - 1, 1])):
        with pytest.raises(IndexOutOfBoundsError, match="out of bounds") as info:
            exe(X, bad)
        assert isinstance(info.value, IndexError) and isinstance(info.value, dg.DualgpuError)
        assert "test_index_bounds.py" in str(info.value), "names the user's line"


@pytest.mark.parametrize("op", [op for op in GATHERS if op != "nn.cross_entropy"])
def test_in_range_negative_indices_count_from_the_end(op):
    fn, n = GATHERS[op]
    negative = np.array([-1, -n, 0])
    got = dg.jit(fn)(X, negative)
    want = fn(X, negative % n)  # concrete indices: NumPy's own indexing
    np.testing.assert_allclose(got, want, rtol=1e-15)


@pytest.mark.parametrize("mode", ["wrap", "clip"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_take_modes_are_numpys(mode, axis):
    idx = np.array([[0, 5], [-7, 3]])  # out of range both ways: the mode decides
    want = np.take(X, idx, axis=axis, mode=mode)
    np.testing.assert_array_equal(
        dg.jit(lambda x, i: np.take(x, i, axis=axis, mode=mode))(X, idx), want)
    np.testing.assert_array_equal(dg.jit(lambda x: x.take(idx, axis=axis, mode=mode))(X), want)
    dg.testing.check_grads(lambda x: np.sum(np.take(x, idx, axis=axis, mode=mode) ** 2), (X,))


def test_take_refuses_an_unknown_mode():
    with pytest.raises(dg.InvalidArgumentError, match="mode.*'bogus'"):
        dg.jit(lambda x: np.take(x, [0], mode="bogus"))(X)
