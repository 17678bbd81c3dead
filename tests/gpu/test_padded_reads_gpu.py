"""Padded reads on the device (tests/codegen/test_padded_reads.py checks them on the CPU,
emulated and
as the kernels' text compiled by g++): the transposes of slices read in the region kernels,
and with recomputation (the default) their inputs recomputed at the shifted index, so that a
stencil's compressed HVPs are one kernel. Values against the NumPy backend, in float64 and
float32, over sizes that leave partial blocks."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_device import cupy_or_skip  # noqa: E402

cp = cupy_or_skip()

import dualgpu as dg  # noqa: E402
from dualgpu.api.vectorize import vmap  # noqa: E402
from dualgpu.runtime.executor import config  # noqa: E402


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def energy(x):
    u = x.reshape(37, 41)
    return (np.sum((u[1:, :] - u[:-1, :]) ** 2) + np.sum((u[:, 1:] - u[:, :-1]) ** 2)
            + np.sum(u ** 4) - np.sum(u[::2, 1::3]))


def gradient_loss(x):
    return np.sum(np.gradient(x.reshape(37, 41), 0.5, axis=1) ** 2)


@pytest.mark.parametrize("recompute", [True, False], ids=["recomputed", "read"])
@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 2e-5)],
                         ids=["f64", "f32"])
@pytest.mark.parametrize("f", [rosenbrock, energy, gradient_loss],
                         ids=["rosenbrock", "five_point", "np_gradient"])
def test_compressed_hvps_on_cupy_equal_numpy(f, dtype, rtol, recompute):
    config["recompute"] = recompute
    n, k = 37 * 41, 5
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, n).astype(dtype)
    seeds = rng.uniform(-1, 1, (k, n)).astype(dtype)
    program = dg.jit(lambda x, s: vmap(dg.hvp(f), in_axes=(None, 0))(x, s))
    want = program(x, seeds)
    for _ in range(3):    # eager, captured, replayed
        got = cp.asnumpy(program(cp.asarray(x), cp.asarray(seeds)))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())


def test_the_sparse_hessian_of_a_stencil_is_one_kernel_and_right():
    """The compressed program of dg.sparse_hessian (one kernel and the gather) on the
    device equals the NumPy Hessian."""
    x = np.random.default_rng(1).uniform(-1, 1, 37 * 41)
    want = dg.sparse_hessian(energy)(x).toarray()
    hess = dg.sparse_hessian(energy)
    for _ in range(3):
        got = hess(cp.asarray(x)).get().toarray()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    exe = hess._entry((cp.asarray(x),), {}).exe   # the compressed program's cache entry
    assert exe.plan.kernel_count() == 1, exe.plan.describe()
