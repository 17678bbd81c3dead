"""``matmul_precision="tf32x3"`` on the device: float32-class errors from TF32 tensor cores
(the CPU tests emulate the tensor cores; these run them), in every operand layout the
launcher hands cuBLAS, in row blocks, through a CUDA-graph replay, and in a whole program."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.backends import cublas
from dualgpu.runtime.executor import config

cp = pytest.importorskip("cupy")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks import laplacian  # noqa: E402


def _rel_err(got, a, b):
    want = np.matmul(cp.asnumpy(a).astype(np.float64), cp.asnumpy(b).astype(np.float64))
    got = cp.asnumpy(got).astype(np.float64)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def _operands(case):
    rng = cp.random.default_rng(0)
    if case == "plain":
        return rng.standard_normal((3000, 768), cp.float32), rng.standard_normal(
            (768, 512), cp.float32)
    if case == "transposed":
        return rng.standard_normal((768, 3000), cp.float32).T, rng.standard_normal(
            (512, 768), cp.float32).T
    if case == "vector":
        return rng.standard_normal(768, cp.float32), rng.standard_normal((768, 64), cp.float32)
    return rng.standard_normal((4, 300, 768), cp.float32), rng.standard_normal(
        (768, 96), cp.float32)


@pytest.mark.parametrize("case", ["plain", "transposed", "vector", "batched"])
def test_products_are_float32_class(case, monkeypatch):
    monkeypatch.setattr(cublas, "SPLIT_BYTES", 2 * 768 * 4 * 1000)   # row blocks of 1000
    monkeypatch.setattr(cublas, "SPLIT_MIN_MNK", 0)                  # split every product
    monkeypatch.setattr(cublas, "SPLIT_MIN_SIDE", 1)
    a, b = _operands(case)
    gemm = cublas.CublasGemm.get()
    errs = {p: _rel_err(gemm.matmul(a, b, p), a, b) for p in ("float32", "tf32", "tf32x3")}
    assert errs["tf32x3"] < 4 * errs["float32"] + 1e-6, errs
    if case != "vector":    # cuBLAS runs a vector's product on the CUDA cores even in TF32
        assert errs["tf32"] > 50 * errs["tf32x3"], errs


def test_small_products_are_float32_itself():
    a, b = _operands("plain")
    gemm = cublas.CublasGemm.get()
    small = a[:200], b[:, :300]
    assert cp.array_equal(gemm.matmul(*small, "tf32x3"), gemm.matmul(*small, "float32"))


def test_program_replays_what_it_computes_eagerly(monkeypatch):
    """The per-point Laplacian under tf32x3: near float32's error, far from TF32's, and a
    graph replay returns bit for bit what the eager call returned."""
    monkeypatch.setattr(cublas, "SPLIT_MIN_MNK", 1 << 20)    # these products are split
    monkeypatch.setattr(cublas, "SPLIT_BYTES", 2 * 256 * 4 * 2000)
    args = laplacian.make_inputs(cp, 20, (256, 256, 128, 128), 300)
    ref = cp.asnumpy(laplacian.reference(cp, args))
    errs = {}
    for precision in ("float32", "tf32", "tf32x3"):
        config["matmul_precision"] = precision
        f = dg.laplacian(laplacian.u, batch_axes=0)
        outs = [cp.asnumpy(f(*args)) for _ in range(4)]     # eager, then captured replays
        for o in outs[1:]:
            assert np.array_equal(o, outs[0]), precision
        errs[precision] = float(np.max(np.abs(outs[0] - ref)) / np.max(np.abs(ref)))
    assert errs["tf32x3"] < 5 * errs["float32"] + 1e-6, errs
    assert errs["tf32"] > 20 * errs["tf32x3"], errs
