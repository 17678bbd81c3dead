"""``matmul_precision="tf32x3"``: float32 products as one TF32 product of split operands
(backends/cublas.py), checked on the CPU.

* the split kernel's CUDA text, compiled by the host C++ compiler, rounds exactly like
  :func:`tf32_round` (random floats and the edge cases: ties, overflow, inf, nan, subnormals);
* the small terms ``[Ahi | Alo] @ [Blo ; Bhi]``, then ``+= Ahi @ Bhi``, run through the real
  :class:`CublasGemm` code path (row blocks and column-major operands included) with the
  tensor cores emulated -- operands cut to TF32 as the hardware reads them -- give
  float32-class errors, where one TF32 pass is a thousand times worse;
* the switch is validated and keys the program cache.
"""
from __future__ import annotations

import ctypes
import types

import numpy as np
import pytest
from tiny_harness import GXX, needs_gxx

import dualgpu as dg
from dualgpu.backends import cublas
from dualgpu.backends.cublas import (
    COMPUTE_32F_FAST_TF32,
    TF32_SPLIT_PREAMBLE,
    CublasGemm,
    compute_type,
    emulate_gemm,
    gemm_layout,
    large_parts,
    split_operands,
    split_rows,
    tf32_round,
    tf32_split_numpy,
)
from dualgpu.errors import DualgpuError

HOST_SHIM = r"""
#include <cstring>
#define __device__
#define __forceinline__ inline
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
"""
HOST_ENTRY = r"""
extern "C" void round_all(const float* x, float* y, long n) {
  for (long i = 0; i < n; ++i) y[i] = dg_tf32_round(x[i]);
}
"""


def _edge_floats():
    f = np.float32
    bits = np.array([0x3F801000, 0x3F803000, 0xBF801000, 0x3F800FFF, 0x7F7FFFFF, 0xFF7FF000,
                     0x7F7FEFFF, 0x00000001, 0x00001000, 0x00400000, 0x807FFFFF, 0x7F800000,
                     0xFF800000, 0x7FC00000, 0x80000000, 0x00000000], dtype=np.uint32)
    return np.concatenate([bits.view(f), np.array([1.0, -2.5, 3.0e38, 1e-40], f)])


@needs_gxx
def test_kernel_rounding_matches_numpy(tmp_path):
    import subprocess

    src, so = tmp_path / "split.cpp", tmp_path / "split.so"
    src.write_text(HOST_SHIM + TF32_SPLIT_PREAMBLE + HOST_ENTRY)
    subprocess.run([GXX, "-O1", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    lib = ctypes.CDLL(str(so))
    rng = np.random.default_rng(0)
    x = np.concatenate([_edge_floats(),
                        rng.integers(0, 2 ** 32, 200_000, dtype=np.uint64).astype(
                            np.uint32).view(np.float32),
                        rng.standard_normal(10_000).astype(np.float32)])
    y = np.empty_like(x)
    lib.round_all(x.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(ctypes.c_void_p),
                  ctypes.c_long(x.size))
    assert np.array_equal(y.view(np.uint32), tf32_round(x).view(np.uint32))


def test_rounding_is_nearest_tf32_with_an_exact_remainder():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(100_000) * 10.0 ** rng.integers(-30, 30, 100_000)).astype(
        np.float32)
    hi = tf32_round(x)
    assert not np.any(hi.view(np.uint32) & np.uint32(0x1FFF))          # 10-bit mantissa
    lo = x - hi
    assert np.array_equal((hi.astype(np.float64) + lo.astype(np.float64)),
                          x.astype(np.float64))                          # x = hi + lo exactly
    ulp = np.spacing(np.abs(hi)).astype(np.float64) * 2 ** 13            # TF32 spacing
    assert np.all(np.abs(lo.astype(np.float64)) <= ulp / 2)              # nearest
    edge = _edge_floats()
    r = tf32_round(edge)
    finite = np.isfinite(edge)
    assert np.all(np.isfinite(r[finite]))                                # never overflows
    assert np.array_equal(np.isnan(r), np.isnan(edge))
    assert float(tf32_round(np.float32(1 + 2 ** -11))) == 1 + 2 ** -10  # tie: away from zero


def _flat(a):
    """``(flat element buffer, element offset)`` of the memory a view reads (cuBLAS sees
    memory, not NumPy's strides)."""
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    assert root.flags.c_contiguous or root.flags.f_contiguous
    flat = root.ravel(order="K")      # memory order, a view
    offset = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return flat, offset // a.itemsize


def _tensor_core(x):
    """A float32 operand as a TF32 tensor core reads it: the low 13 mantissa bits dropped."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)


class _HostGemm(CublasGemm):
    """The real ``run`` / ``_run_tf32x3`` with NumPy arrays: the split in NumPy and every
    cuBLAS call emulated over the operands' memory, TF32 compute types on emulated tensor
    cores."""

    def __init__(self):
        self._cp = types.SimpleNamespace(empty=np.empty)
        self.calls = []

    def _bind(self):
        pass

    def _split(self, x, hi, lo):
        tf32_split_numpy(x, hi, lo)

    def _call(self, lay, a, b, out, ct, accumulate=False):
        assert lay == gemm_layout(a.shape, a.strides, b.shape, b.strides, a.itemsize)
        assert out.flags.c_contiguous and out.size == lay.batch * lay.m * lay.n
        self.calls.append((lay.m, lay.n, lay.k, ct, accumulate))
        fa, fb = _flat(a), _flat(b)
        read = _tensor_core if ct == COMPUTE_32F_FAST_TF32 else (lambda x: x.astype(np.float64))
        acc = emulate_gemm(lay, read(fa[0]), fa[1], read(fb[0]), fb[1])
        view = out.reshape(lay.batch, lay.m, lay.n)
        view[...] = acc + view if accumulate else acc   # the epilogue: alpha·acc + beta·C


def _product(gemm, a, b, precision):
    lay = gemm_layout(a.shape, a.strides, b.shape, b.strides, a.itemsize)
    out = np.full(lay.out_shape, np.nan, np.float32)
    gemm.run(lay, a, b, out, precision)
    return out


def _rel(out, a, b):
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
    return float(np.max(np.abs(out - ref)) / np.max(np.abs(ref)))


@pytest.mark.parametrize("shapes", [((37, 300), (300, 23)), ((300,), (300, 5)),
                                    ((6, 300), (300,)), ((3, 9, 300), (300, 7)),
                                    ((2, 5, 300), (2, 300, 4)), ("T", (300, 23)),
                                    ((37, 300), "T"), ("T", "T")])
def test_three_tf32_passes_give_float32_accuracy(shapes, monkeypatch):
    monkeypatch.setattr(cublas, "SPLIT_MIN_MNK", 0)     # split whatever the size
    monkeypatch.setattr(cublas, "SPLIT_MIN_SIDE", 1)
    rng = np.random.default_rng(2)
    a = (rng.standard_normal((300, 37)).T if shapes[0] == "T" else
         rng.standard_normal(shapes[0])).astype(np.float32)
    b = (rng.standard_normal((23, 300)).T if shapes[1] == "T" else
         rng.standard_normal(shapes[1])).astype(np.float32)
    if shapes[0] == "T":
        a = np.ascontiguousarray(a.T).T     # float32 and still column by column
    if shapes[1] == "T":
        b = np.ascontiguousarray(b.T).T
    gemm = _HostGemm()
    x3 = _rel(_product(gemm, a, b, "tf32x3"), a, b)
    one = _rel(_product(gemm, a, b, "tf32"), a, b)
    f32 = _rel(np.matmul(a, b), a, b)
    assert x3 < 4 * f32 + 1e-6, (x3, f32)       # float32-class
    assert one > 100 * x3, (one, x3)            # one TF32 pass is far worse
    k = a.shape[-1]
    assert [c[2::2] for c in gemm.calls[:2]] == [(2 * k, False), (k, True)]   # small, large


def test_left_operand_is_split_in_row_blocks(monkeypatch):
    monkeypatch.setattr(cublas, "SPLIT_MIN_MNK", 0)
    monkeypatch.setattr(cublas, "SPLIT_MIN_SIDE", 1)
    monkeypatch.setattr(cublas, "SPLIT_BYTES", 2 * 64 * 4 * 15)   # 15 rows of k = 64
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 95)).astype(np.float32).T       # strided: 95 x 64
    b = rng.standard_normal((64, 33)).astype(np.float32)
    gemm = _HostGemm()
    out = _product(gemm, a, b, "tf32x3")
    assert [c[0] for c in gemm.calls] == [15, 15] * 6 + [5, 5]
    assert not np.any(np.isnan(out))
    assert _rel(out, a, b) < 1e-6
    assert split_rows(95, 64) == 15


def test_a_batch_against_one_matrix_is_split_in_row_blocks(monkeypatch):
    """(3, 9, k) @ (k, n) is one 27-row product, so its blocks stay within SPLIT_BYTES."""
    monkeypatch.setattr(cublas, "SPLIT_MIN_MNK", 0)
    monkeypatch.setattr(cublas, "SPLIT_MIN_SIDE", 1)
    monkeypatch.setattr(cublas, "SPLIT_BYTES", 2 * 300 * 4 * 10)   # 10 rows of k = 300
    rng = np.random.default_rng(6)
    a = rng.standard_normal((3, 9, 300)).astype(np.float32)
    b = rng.standard_normal((300, 7)).astype(np.float32)
    gemm = _HostGemm()
    out = _product(gemm, a, b, "tf32x3")
    assert [c[0] for c in gemm.calls] == [10, 10, 10, 10, 7, 7]
    assert _rel(out, a, b) < 1e-6


@pytest.mark.parametrize("order", ["C", "F"])
def test_split_operands_stack_the_right_parts(order):
    rng = np.random.default_rng(4)
    a = np.asarray(rng.standard_normal((4, 5)), np.float32, order=order)
    b = np.asarray(rng.standard_normal((5, 3)), np.float32, order=order)
    a2, b2 = split_operands(a, b, np, tf32_split_numpy)
    ah, bh = tf32_round(a), tf32_round(b)
    assert np.array_equal(a2, np.concatenate([ah, a - ah], axis=1))
    assert np.array_equal(b2, np.concatenate([b - bh, bh], axis=0))
    big_a, big_b = large_parts(a2, b2)
    assert np.array_equal(big_a, ah) and np.array_equal(big_b, bh)
    assert a2.flags.f_contiguous == (order == "F")    # split in the operand's own order


def test_small_products_stay_float32(monkeypatch):
    """Below the split's threshold a tf32x3 product is one float32 call."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((300, 40)).astype(np.float32)
    b = rng.standard_normal((40, 300)).astype(np.float32)
    gemm = _HostGemm()
    _product(gemm, a, b, "tf32x3")
    assert gemm.calls == [(300, 300, 40, compute_type(np.float32, "float32"), False)]
    monkeypatch.setattr(cublas, "SPLIT_MIN_MNK", 300 * 300 * 40)
    _product(gemm, a, b, "tf32x3")
    assert [c[2] for c in gemm.calls[1:]] == [80, 40]
    monkeypatch.setattr(cublas, "SPLIT_MIN_SIDE", 301)
    _product(gemm, a, b, "tf32x3")
    assert len(gemm.calls) == 4


def test_float64_and_plain_precisions_are_untouched():
    gemm = _HostGemm()
    a, b = np.ones((3, 4)), np.ones((4, 2))
    out = np.empty((3, 2))
    gemm.run(gemm_layout(a.shape, a.strides, b.shape, b.strides, 8), a, b, out, "tf32x3")
    assert gemm.calls == [(3, 2, 4, compute_type(np.float64, "tf32x3"), False)]
    assert compute_type(np.float32, "float32") != COMPUTE_32F_FAST_TF32


def test_switch_is_validated_and_keys_the_cache():
    f = dg.grad(lambda x: np.sum(np.tanh(x @ x)))
    x = np.eye(3) * 0.5
    base = f(x)
    try:
        dg.config["matmul_precision"] = "tf32x3"
        assert np.array_equal(f(x), base)        # NumPy: no TF32, nothing changes
        assert "tf32x3" in dg.config.build_key()
    finally:
        dg.config["matmul_precision"] = "float32"
    with pytest.raises(DualgpuError, match="tf32x3"):
        dg.config["matmul_precision"] = "3xtf32"
