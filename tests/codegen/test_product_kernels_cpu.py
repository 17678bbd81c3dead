"""Our product kernels' CUDA text (skinny, thin, tiny; batched with ``count``) run on the
CPU by tests/helpers/product_harness.py: every thread of a block a host thread, ``__syncthreads``
and the warp shuffles real barriers. Rows not a multiple of the rows a warp or block
reads, n = 1, k = 1, reversed, broadcast and transposed operands."""
from __future__ import annotations

import numpy as np
import pytest
from product_harness import run_product
from tiny_harness import needs_gxx

from dualgpu.codegen.products import WARPS, ProductKernel, product_kernel, skinny_matmul_kernel

pytestmark = needs_gxx
R = np.random.default_rng(0)


def _check(choice, a, b, count=1, rows=None):
    m, k = a.shape
    n = b.shape[1]
    sa, sb = (tuple(s // a.itemsize for s in x.strides) for x in (a, b))
    if rows is None:
        pk = product_kernel(choice, m, n, k, sa, sb, a.dtype, count)
    else:   # the skinny kernel with few rows and several rows a warp
        name, src = skinny_matmul_kernel(m, n, k, sa[0], sb, a.dtype, rows, count)
        pk = ProductKernel(name, src, -(-m // (WARPS * rows)))
    outs = [np.full((m, n), np.nan, a.dtype) for _ in range(count)]
    run_product(pk, count, [x for c in outs for x in (a, b, c)])
    tol = 1e-12 if a.dtype == np.float64 else 1e-4
    for c in outs:
        np.testing.assert_allclose(c, a @ b, rtol=tol, atol=tol)


@pytest.mark.parametrize("rows", [1, 2, 4])
@pytest.mark.parametrize("m", [1, 33, 37])
def test_skinny_rows_of_a_warp(rows, m):
    _check("skinny", R.standard_normal((m, 70)), R.standard_normal((70, 3)), rows=rows)


def test_skinny_edges_and_batches():
    _check("skinny", R.standard_normal((37, 1)), R.standard_normal((1, 16)), rows=4)
    _check("skinny", R.standard_normal((40, 33)), R.standard_normal((33, 1)), rows=4)
    _check("skinny", R.standard_normal((40, 100))[::-1], R.standard_normal((100, 16)), rows=4)
    _check("skinny", np.broadcast_to(R.standard_normal((1, 100)), (40, 100)),
           R.standard_normal((16, 100)).T, rows=2)
    _check("skinny", R.standard_normal((300, 40)), R.standard_normal((40, 3)), count=2)


def test_thin_and_tiny():
    _check("thin", R.standard_normal((1100, 5)), R.standard_normal((5, 300)))
    _check("thin", R.standard_normal((1030, 1)), R.standard_normal((1, 64)))
    _check("thin", R.standard_normal((1030, 16)).astype(np.float32),
           R.standard_normal((16, 1024)).astype(np.float32))
    _check("thin", R.standard_normal((1100, 5))[::-1], R.standard_normal((300, 5)).T, count=3)
    _check("tiny", R.standard_normal((4, 5)), R.standard_normal((5, 3)), count=2)


def test_skinny_stages_b_in_slices_when_it_does_not_fit():
    """k·n·8 bytes over 48 KiB: ``b`` in two slices of 2048 terms, rows past the end of
    ``a`` still at every barrier."""
    _check("skinny", R.standard_normal((37, 2100)), R.standard_normal((2100, 3)), rows=4)


def test_skinny_transposed_writes_the_transpose():
    """``g @ hᵀ`` of a feature-major network: few rows, ``b`` a transposed view; the
    kernel computes ``h @ gᵀ`` and writes it column-major (every element once)."""
    _check("skinny_t", R.standard_normal((2, 50))[:, ::-1], R.standard_normal((40, 50)).T,
           count=2)


def test_thin_in_column_tiles_and_wide():
    """Outputs wider than 4·BLOCK columns in tiles of BLOCK (``W2ᵀ @ g`` by feature), and
    the wide kernel (``W2 @ h`` by feature: few rows, long contiguous rows of ``b``)."""
    _check("thin", R.standard_normal((3, 20)).T, R.standard_normal((3, 1030)), count=2)
    _check("wide", R.standard_normal((40, 16)).T, R.standard_normal((40, 33)), count=2)
    _check("wide", R.standard_normal((1, 9)).astype(np.float32),
           R.standard_normal((9, 100)).astype(np.float32))


@pytest.mark.parametrize("rows,transposed", [(4, False), (1, True)])
def test_skinny_over_a_long_k_splits_it_across_the_block(rows, transposed):
    """Few rows over a long K (``g @ hᵀ`` by feature: 512 rows of 4096 terms): the block's
    threads split K and the warps' sums meet in shared memory; rows past the end, one row
    and several rows a block, batched, and transposed."""
    from dualgpu.codegen.products import skinny_split_kernel, skinny_splits_k

    assert skinny_splits_k(512, 4096) and not skinny_splits_k(4096, 512)
    m, k, n = 9, 1500, 3
    a, b = R.standard_normal((m, k)), R.standard_normal((k, n))
    x, y = (b.T, a.T) if transposed else (a, b)
    sa, sb = a.strides[0] // 8, tuple(s // 8 for s in b.strides)
    name, src = skinny_split_kernel(m, n, k, sa, sb, a.dtype, rows, 2, transposed)
    outs = [np.full((x.shape[0], y.shape[1]), np.nan) for _ in range(2)]
    run_product(ProductKernel(name, src, -(-m // rows)), 2,
                [v for c in outs for v in (x, y, c)])
    for c in outs:
        np.testing.assert_allclose(c, x @ y, rtol=1e-12, atol=1e-12)
