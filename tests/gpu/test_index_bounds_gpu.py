"""Out-of-range indices given at run time raise on CuPy as on NumPy: every gather and scatter
of tests/transforms/test_index_bounds.py (whose index array is an argument) on every CuPy
path -- the
generated Python, the fused plan launched step by step, its CUDA-graph replay (the bounds
computed inside the replayed graph: the indices changed in place), the tiny-kernel switch on
-- and in a module of ``dg.export``; in-range negative indices count from the end, as
NumPy's."""
from __future__ import annotations

import numpy as np
import pytest
from gpu_device import cupy_or_skip

import dualgpu as dg
from dualgpu.backends.cupy import get_cupy_backend
from dualgpu.runtime.executor import Executable, config

cp = cupy_or_skip()
from test_index_bounds import GATHERS, X  # noqa: E402

PATHS = {
    "python": dict(fuse=False, cuda_graphs=False),
    "fused": dict(fuse=True, cuda_graphs=False, tiny_kernel=False),
    "graphs": dict(fuse=True, cuda_graphs=True, tiny_kernel=False),
    "tiny": dict(fuse=True, cuda_graphs=False, tiny_kernel=True),
}
OUT_OF_RANGE = r"index -?\d+ is out of bounds for axis \d with size \d+ -- .*test_index_bounds"


def _bad(n):
    return [np.array([0, n, 1]), np.array([0, -n - 1, 1])]


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("op", list(GATHERS))
def test_out_of_range_indices_raise_on_every_cupy_path(op, path):
    fn, n = GATHERS[op]
    config.update(PATHS[path])   # restored by conftest's _restore_switches
    x = cp.asarray(X)
    exe = Executable(dg.trace(fn, x, cp.asarray([0, n - 1, 1])), get_cupy_backend())
    assert exe.index_sites, "the program returns its index bounds"
    for bad in _bad(n):
        with pytest.raises(dg.IndexOutOfBoundsError, match=OUT_OF_RANGE):
            exe(x, cp.asarray(bad))
    if op != "nn.cross_entropy":   # its labels are in [0, k)
        negative = np.array([-1, -n, 0])
        got = exe(x, cp.asarray(negative))[-1]   # a gradient program returns the value first
        np.testing.assert_allclose(cp.asnumpy(got), fn(X, negative % n), rtol=1e-13)


@pytest.mark.parametrize("op", list(GATHERS))
def test_a_replayed_graph_checks_the_indices_it_reads(op):
    """The same index array, captured with good indices, then changed in place: the replay
    computes the bounds of what it reads now."""
    fn, n = GATHERS[op]
    config.update(PATHS["graphs"])
    x, idx = cp.asarray(X), cp.asarray([0, n - 1, 1])
    exe = Executable(dg.trace(fn, x, idx), get_cupy_backend())
    for _ in range(3):
        exe(x, idx)
    replays = exe.graph_runner.replays
    assert exe.graph_runner.failed is None and replays >= 1
    for bad in _bad(n):
        idx[...] = cp.asarray(bad)
        with pytest.raises(dg.IndexOutOfBoundsError, match=OUT_OF_RANGE):
            exe(x, idx)
    assert exe.graph_runner.replays == replays + 2
    idx[...] = cp.asarray([0, n - 1, 1])
    exe(x, idx)   # good indices again: no error left behind


def test_the_check_can_be_turned_off():
    fn, n = GATHERS["x[idx]"]
    config["check_indices"] = False
    x = cp.asarray(X)
    exe = Executable(dg.trace(fn, x, cp.asarray([0, 1, 2])), get_cupy_backend())
    assert exe.index_sites == ()
    exe(x, cp.asarray([0, n, 1]))   # CuPy's indexing wraps around; nothing is read back


@pytest.mark.parametrize("op", ["x[rows, idx]", "grad of x[idx] (scatter_add)",
                                "nn.cross_entropy"])
def test_an_exported_cupy_module_raises_numpys_index_error(op):
    fn, n = GATHERS[op]
    namespace: dict = {}
    exec(dg.export(fn, X, np.array([0, n - 1, 1]), backend="cupy", name="f"), namespace)
    f, x = namespace["f"], cp.asarray(X)
    for bad in _bad(n):
        with pytest.raises(IndexError, match=r"out of bounds for axis \d with size \d+ "
                           r"\(indexed at .*test_index_bounds.py"):
            f(x, cp.asarray(bad))
    good = np.array([0, n - 1, 1])
    want = fn(X, good)
    got = f(x, cp.asarray(good))
    np.testing.assert_allclose(cp.asnumpy(got), want, rtol=1e-13)
