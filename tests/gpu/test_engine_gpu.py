"""Issue 12 on the device: matmul precision (TF32) and stacked GEMMs, against NumPy."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.runtime.executor import config

cp = pytest.importorskip("cupy")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.mlp import TINY, Dims, make_inputs, make_loss, reference  # noqa: E402


@pytest.fixture(autouse=True)
def _restore():
    yield
    config["matmul_precision"] = "float32"
    config["stack_gemms"] = True


def _compute_type():
    from cupy._core import _routines_linalg

    return _routines_linalg.get_compute_type(np.float32)


def _rel_err(got, want):
    got = cp.asnumpy(got).astype(np.float64)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def test_tf32_products_are_tf32_and_restored():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 4096)).astype(np.float32)
    b = rng.standard_normal((4096, 256)).astype(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    f = dg.jit(lambda a, b: a @ b)
    before = _compute_type()
    err32 = _rel_err(f(cp.asarray(a), cp.asarray(b)), want)
    config["matmul_precision"] = "tf32"
    err_tf32 = _rel_err(f(cp.asarray(a), cp.asarray(b)), want)
    assert _compute_type() == before, "the compute type was not restored"
    config["matmul_precision"] = "float32"
    err32_again = _rel_err(f(cp.asarray(a), cp.asarray(b)), want)
    assert err32 < 1e-5 and err32_again < 1e-5
    assert 1e-5 < err_tf32 < 1e-2, err_tf32  # TF32 rounding is visible, and bounded


@pytest.mark.parametrize("precision,tol", [("float32", 2e-4), ("tf32", 2e-2)])
def test_mlp_hvp_at_both_precisions(precision, tol):
    dims = Dims(256, 128, 10, 512)
    loss = make_loss(dims)
    args = make_inputs(np, dims, 1)[0]
    _, hvp_ref = reference(np, dims, *args)
    config["matmul_precision"] = precision
    got = dg.hvp(loss)(*(cp.asarray(a) for a in args))
    assert _rel_err(got, hvp_ref) < tol


@pytest.mark.parametrize("stack", [True, False])
def test_stacked_gemms_on_the_device(stack):
    """The stacked program (concatenated operands, sliced results, in the fused plan) gives
    what NumPy gives, in float64 to 1e-12."""
    config["stack_gemms"] = stack
    loss = make_loss(TINY)
    args = [a.astype(np.float64) for a in make_inputs(np, TINY, 1)[0]]
    grad_ref, hvp_ref = reference(np, TINY, *args)
    g, hv = dg.grad_and_hvp(loss)(*(cp.asarray(a) for a in args))
    np.testing.assert_allclose(cp.asnumpy(g), grad_ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(cp.asnumpy(hv), hvp_ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(cp.asnumpy(dg.hvp(loss)(*(cp.asarray(a) for a in args))),
                               hvp_ref, rtol=1e-12, atol=1e-15)


def test_stacked_mlp_float32_large():
    """A size where the products are cuBLAS calls (not the small-product kernels)."""
    dims = Dims(784, 512, 10, 1024)
    loss = make_loss(dims)
    args = make_inputs(np, dims, 1)[0]
    _, hvp_ref = reference(np, dims, *args)
    got = dg.hvp(loss)(*(cp.asarray(a) for a in args))
    assert _rel_err(got, hvp_ref) < 2e-4


def test_first_call_kernels_compiled_together_and_at_their_steps():
    """The first call compiles its region and product kernels as a few NVRTC modules
    (codegen/first_call.py); a second call with a Fortran-ordered argument compiles the
    kernels of that layout at their steps; both give NumPy's values, eager and replayed."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((800, 32))
    w, v = rng.standard_normal((32, 3)), rng.standard_normal((32, 3))

    def f(x, w, v):
        h = np.tanh(x * 0.5)
        return np.sum((h @ w) * (h @ v) + np.sin(h[:, :3]) ** 2)

    want = dg.grad(f, argnums=(0, 1, 2))(x, w, v)
    g = dg.grad(f, argnums=(0, 1, 2))
    xs = cp.asarray(x)
    for first in (xs, cp.asfortranarray(xs)):
        for _ in range(3):
            got = g(first, cp.asarray(w), cp.asarray(v))
            for a, b in zip(got, want):
                np.testing.assert_allclose(cp.asnumpy(a), b, rtol=1e-12, atol=1e-12)
