"""The cuBLAS call a strided NumPy matmul becomes (backends/cublas.py), checked on the CPU by
running each layout over the operands' flat memory the way cuBLAS reads it."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dualgpu.backends.cublas import (
    COMPUTE_32F,
    COMPUTE_32F_FAST_TF32,
    COMPUTE_64F,
    compute_type,
    emulate_gemm,
    gemm_layout,
)


def _strided(rng, shape, transposed: bool, step: int, pad: int):
    """An operand of ``shape`` with the given memory order, a step along its last axis and
    padding in its rows; returns the array and (flat buffer, element offset)."""
    full = list(shape)
    if transposed and len(shape) >= 2:
        full[-2], full[-1] = full[-1], full[-2]
    full[-1] = full[-1] * step + pad
    base = rng.standard_normal(full)
    view = base[..., ::step][..., : (shape[-2] if transposed and len(shape) >= 2 else shape[-1])]
    if transposed and len(shape) >= 2:
        view = np.swapaxes(view, -1, -2)
    assert view.shape == tuple(shape), (view.shape, shape)
    flat = base.reshape(-1)
    offset = (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // 8
    return view, flat, offset


def _check(a, fa, oa, b, fb, ob):
    lay = gemm_layout(a.shape, a.strides, b.shape, b.strides, 8)
    want = a @ b
    if lay is None:
        return None
    got = emulate_gemm(lay, fa, oa, fb, ob).reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert lay.out_shape == want.shape
    return lay


@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("m,n,k", [(4, 3, 5), (1, 3, 5), (4, 1, 5), (4, 3, 1), (1, 1, 1)])
def test_transposes_and_unit_sizes(ta, tb, m, n, k):
    rng = np.random.default_rng(m * 100 + n * 10 + k)
    a, fa, oa = _strided(rng, (m, k), ta, 1, 0)
    b, fb, ob = _strided(rng, (k, n), tb, 1, 0)
    lay = _check(a, fa, oa, b, fb, ob)
    assert lay is not None, "a contiguous or transposed operand needs no copy"
    assert lay.batch == 1


def test_padded_rows_are_leading_dimensions():
    rng = np.random.default_rng(1)
    a, fa, oa = _strided(rng, (6, 4), False, 1, 3)   # rows of 7 elements, 4 used
    b, fb, ob = _strided(rng, (4, 5), True, 1, 2)
    lay = _check(a, fa, oa, b, fb, ob)
    assert (lay.op_a, lay.ld_a) == ("N", 7)
    assert (lay.op_b, lay.ld_b) == ("T", 6)


def test_strided_columns_need_a_copy():
    a = np.ones((4, 6))[:, ::2]
    b = np.ones((3, 2))
    assert gemm_layout(a.shape, a.strides, b.shape, b.strides, 8) is None
    bb = np.broadcast_to(np.ones(3), (2, 3)).T    # (3, 2) with a zero stride
    assert gemm_layout(b.T.shape, b.T.strides, bb.shape, bb.strides, 8) is None


def test_vectors_follow_numpy():
    rng = np.random.default_rng(2)
    for a_shape, b_shape in [((5,), (5, 3)), ((4, 5), (5,)), ((5,), (5,)),
                             ((2, 4, 5), (5,)), ((5,), (2, 5, 3))]:
        a = rng.standard_normal(a_shape)
        b = rng.standard_normal(b_shape)
        lay = _check(a, a.reshape(-1), 0, b, b.reshape(-1), 0)
        assert lay is not None, (a_shape, b_shape)


def test_batched_and_broadcast_batches():
    rng = np.random.default_rng(3)
    cases = [((3, 4, 5), (3, 5, 2)), ((3, 4, 5), (5, 2)), ((4, 5), (2, 3, 5, 2)),
             ((2, 1, 4, 5), (3, 5, 2)), ((2, 3, 4, 5), (2, 3, 5, 6))]
    for a_shape, b_shape in cases:
        a = rng.standard_normal(a_shape)
        b = rng.standard_normal(b_shape)
        lay = _check(a, a.reshape(-1), 0, b, b.reshape(-1), 0)
        if a_shape == (2, 1, 4, 5):   # a's batch (2, 1) over (2, 3): strides (20, 0)
            assert lay is None
        else:
            assert lay is not None and lay.batch > 1, (a_shape, b_shape)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.booleans(), st.booleans(),
       st.integers(1, 2), st.integers(1, 2), st.integers(0, 2), st.integers(0, 2),
       st.sampled_from([(), (1,), (3,), (2, 2)]), st.sampled_from([(), (1,), (3,), (2, 2)]))
def test_any_layout_is_exact_or_refused(m, n, k, ta, tb, sa, sb, pa, pb, ba, bb):
    """Every layout handed to cuBLAS computes exactly NumPy's product (refusals copy)."""
    try:
        np.broadcast_shapes(ba, bb)
    except ValueError:
        return
    rng = np.random.default_rng(m + 10 * n + 100 * k)
    a, fa, oa = _strided(rng, ba + (m, k), ta, sa, pa)
    b, fb, ob = _strided(rng, bb + (k, n), tb, sb, pb)
    _check(a, fa, oa, b, fb, ob)


def test_compute_types():
    assert compute_type(np.float32, "float32") == COMPUTE_32F
    assert compute_type(np.float32, "tf32") == COMPUTE_32F_FAST_TF32
    assert compute_type(np.float64, "tf32") == COMPUTE_64F   # TF32 never touches float64


# ------------------------------------------------------------------ our kernels for thin products
def test_kernel_choice_by_shape():
    from dualgpu.codegen.products import matmul_kernel_choice as choose

    assert choose(4, 1, 10, (10, 1), (1, 0), 8) == "tiny"              # Dense(10->1)
    assert choose(4096, 10, 512, (512, 1), (10, 1), 4) == "skinny"     # h @ W2
    assert choose(4096, 512, 10, (10, 1), (1, 10), 4) == "thin"        # g @ W2.T (K = 10)
    assert choose(4096, 512, 10, (10, 1), (512, 1), 4) == "thin"       # any b strides
    assert choose(4096, 40, 10, (10, 1), (40, 1), 4) == "tiny"         # narrow: tiny
    assert choose(4096, 40, 10, (10, 1), (1, 10), 4) is None           # ... b down columns
    assert choose(500, 512, 10, (10, 1), (1, 10), 4) is None           # few rows: cuBLAS
    assert choose(512, 10, 4096, (1, 512), (10, 1), 4) is None         # h.T @ g: cuBLAS
    assert choose(1, 1, 60000, (0, 1), (1, 0), 8) is None              # a long dot product
    assert choose(1, 1, 200, (0, 1), (1, 0), 8) == "tiny"              # a short one
    assert choose(512, 10, 1024, (1024, 1), (10, 1), 4) == "skinny"    # rows contiguous
    assert choose(4096, 10, 4096, (4096, 1), (10, 1), 8) == "skinny"   # b staged in slices
    assert choose(100, 10, 512, (512, 1), (10, 1), 4) is None          # too few rows
    assert choose(4096, 512, 784, (784, 1), (512, 1), 4) is None       # a real GEMM
    # the same network written feature-major (W1 @ X): the transposed products
    assert choose(10, 4096, 512, (512, 1), (4096, 1), 4) == "wide"      # W2 @ h
    assert choose(10, 4096, 512, (512, 1), (1, 512), 4) == "skinny_t"   # ... hᵀ stored
    assert choose(10, 4096, 1024, (1024, 1), (4096, 1), 8) is None      # a too big to stage
    assert choose(512, 4096, 10, (1, 512), (4096, 1), 4) == "thin"      # W2ᵀ @ g: tiles
    assert choose(10, 512, 4096, (4096, 1), (1, 4096), 4) == "skinny_t"  # g @ hᵀ
    assert choose(10, 100, 4096, (4096, 1), (1, 4096), 4) is None       # too few rows of h


def test_skinny_kernel_text():
    from dualgpu.codegen.products import WARPS, skinny_matmul_kernel

    name, src = skinny_matmul_kernel(1000, 3, 64, 70, (1, 64), np.float64, rows=2)
    assert name.startswith("dg_skinny_") and name in src
    assert "__shared__ double bs[192]" in src
    assert "b[(long long)p * 1 + (long long)j * 64]" in src   # b's strides, as given
    assert "bs[t] = " in src and "const int j = t / 64, p = t % 64" in src   # column-major
    assert "a + (row + 1) * 70" in src                         # a's row stride
    assert "in1 ? a1[p] : 0.0" in src                          # the last row may be missing
    assert src.count("__shfl_xor_sync") == 6 and src.count("if (lane ==") == 6
    assert f"blockIdx.x * {WARPS} + (threadIdx.x >> 5)) * 2" in src
    # deterministic text: the same product compiles once (CuPy's cache hits)
    assert skinny_matmul_kernel(1000, 3, 64, 70, (1, 64), np.float64, rows=2) == (name, src)


def test_thin_product_kernel_indexes_big_operands_in_64_bits():
    """A thin-K product of a slice of a big array (X[:, :8] of a 300000×8192 float32 X) or
    of a long transposed operand reads offsets past INT_MAX: the kernel must form them in
    64 bits (a 32-bit ``i * 8192`` wraps and reads the wrong memory)."""
    from dualgpu.codegen.products import matmul_kernel, matmul_kernel_choice

    int_max = 2 ** 31 - 1
    m, n, k, sa, sb = 300000, 4, 8, (8192, 1), (4, 1)
    assert matmul_kernel_choice(m, n, k, sa, sb, 4) == "tiny"
    assert (m - 1) * sa[0] + (k - 1) * sa[1] > int_max
    _, src = matmul_kernel(m, n, k, sa, sb, np.float32)
    assert "const long long i = t / 4" in src and "a[i * 8192 +" in src, src

    m, n, k, sa, sb = 1 << 28, 1, 16, (1, 1 << 28), (1, 0)   # a = X.T, X of 16 × 2**28
    assert matmul_kernel_choice(m, n, k, sa, sb, 4) == "tiny"
    _, src = matmul_kernel(m, n, k, sa, sb, np.float32)
    assert f"(long long)p * {1 << 28}" in src, src
    # small products keep their 32-bit text (and kernel names)
    _, src = matmul_kernel(4, 1, 10, (1, 4), (1, 0), np.float32)
    assert "a[i * 1 + p * 4]" in src and "const int i" in src


def _any_strides(rng, shape, itemsize=8):
    """A view of ``shape`` with arbitrary element strides -- negative (``x[::-1]``), zero
    (broadcast), overlapping, padded, transposed -- over a flat buffer with a NaN margin:
    ``(view, flat buffer, element offset)``. A read outside the view's memory (an index
    that wraps below 0 included) lands on a NaN."""
    nd = len(shape)
    perm = rng.permutation(nd)
    strides, acc = [0] * nd, 1
    for ax in perm[::-1]:   # a random memory order, each axis stepped and padded
        strides[ax] = acc * int(rng.choice([1, 1, 2, 3]))
        acc = abs(strides[ax]) * shape[ax] + int(rng.choice([0, 0, 1]))
    for ax in range(nd):
        r = rng.random()
        if r < 0.2:
            strides[ax] = -strides[ax]
        elif r < 0.3:
            strides[ax] = 0
        elif r < 0.35:
            strides[ax] = int(rng.integers(-3, 4))   # overlapping rows
    low = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    high = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
    margin = 64
    flat = np.full(margin + (high - low + 1) + margin, np.nan)
    offset = margin - low
    flat[margin: margin + high - low + 1] = rng.standard_normal(high - low + 1)
    view = np.lib.stride_tricks.as_strided(flat[offset:], shape,
                                           [s * itemsize for s in strides])
    wrapped = np.concatenate([flat, np.full(flat.size, np.nan)])   # flat[-j] reads NaN
    return view, wrapped, offset


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.sampled_from([(), (1,), (3,), (2, 2), (1, 3)]),
       st.sampled_from([(), (1,), (3,), (2, 1)]), st.integers(1, 4), st.integers(1, 4),
       st.integers(1, 4), st.booleans(), st.booleans())
def test_arbitrary_strides_are_exact_or_refused(seed, ba, bb, m, n, k, vec_a, vec_b):
    """Negative, zero and overlapping strides, unit sizes, 1-D operands, batches that do or
    do not collapse: a layout handed to cuBLAS reads exactly the operands' memory."""
    try:
        np.broadcast_shapes(ba, bb)
    except ValueError:
        return
    rng = np.random.default_rng(seed)
    a_shape = (k,) if vec_a else ba + (m, k)
    b_shape = (k,) if vec_b else bb + (k, n)
    a, fa, oa = _any_strides(rng, a_shape)
    b, fb, ob = _any_strides(rng, b_shape)
    _check(a, fa, oa, b, fb, ob)


def test_strides_that_are_not_whole_elements_are_refused():
    base = np.zeros(64, np.uint8)
    a = np.lib.stride_tricks.as_strided(base.view(np.float64), (2, 3), (12, 4))
    b = np.ones((3, 2))
    assert gemm_layout(a.shape, a.strides, b.shape, b.strides, 8) is None
    assert gemm_layout(b.shape, b.strides, a.T.shape, a.T.strides, 8) is None
    assert gemm_layout((2, 3), (24, 8), (3, 0), (16, 8), 8) is None     # k != k, empty
    assert gemm_layout((0, 3), (24, 8), (3, 2), (16, 8), 8) is None     # an empty product

