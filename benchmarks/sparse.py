"""Scenario 3: gradient with respect to ``x`` of ``sum(tanh(x @ A))``, ``A`` sparse CSR.

``A`` is 100,000 × 100,000 with 2M nonzeros at random places, ``x`` is 64 × 100,000.
The gradient is ``(1 - tanh(x A)²) Aᵀ``: two sparse × dense products and one elementwise
pass. The hand-fused reference is our own row-major SpMM kernel with the elementwise step
fused into the first product (``Aᵀ`` as CSR prepared once, outside the timing). Also timed:
the same gradient through cupyx/cuSPARSE plus one fused kernel, and cupyx's forward
product alone.
"""
from __future__ import annotations

import warnings

import numpy as np

from .common import (
    Context,
    Skip,
    import_jax,
    import_torch,
    jax_clock,
    measure,
    normal,
    rel_err,
    to_jax,
    to_torch,
    torch_clock,
)
from .report import Row

NAME = "sparse"
FULL = (100_000, 2_000_000, 64)   # n, nnz, batch
TINY = (60, 300, 3)


def make_matrix(ctx: Context, n: int, nnz: int, seed: int = 3):
    """A CSR ``n × n`` float32 matrix with ``nnz`` random places (duplicates summed)
    and normal values; built from random indices, not ``sparse.random`` (which permutes all
    n² places)."""
    xp = ctx.xp
    rng = xp.random.default_rng(seed)
    rows = rng.integers(0, n, nnz, dtype=xp.int32)
    cols = rng.integers(0, n, nnz, dtype=xp.int32)
    data = normal(rng, xp, nnz)
    if ctx.gpu:
        import cupyx.scipy.sparse as sparse
    else:
        import scipy.sparse as sparse
    A = sparse.coo_matrix((data, (rows, cols)), shape=(n, n)).tocsr()
    A.sum_duplicates()
    return A


def make_inputs(xp, n: int, batch: int, n_sets: int = 4, seed: int = 4) -> list[tuple]:
    rng = xp.random.default_rng(seed)
    return [(normal(rng, xp, (batch, n), 0.1),) for _ in range(n_sets)]


def reference(ctx: Context, A, x):
    """The gradient in float64: ``((1 - tanh(xA)²) Aᵀ)``."""
    xp = ctx.xp
    A64 = A.astype(np.float64)
    x64 = x.astype(xp.float64)
    zT = A64.T @ x64.T                  # (n, batch) = (x A)ᵀ
    wT = 1.0 - xp.tanh(zT) ** 2
    return xp.asarray((A64 @ wT).T)


def product_fn(ctx: Context, A):
    """``f(x) = sum(tanh(x @ A))`` as the user writes it (``np`` rebound when traced)."""
    def f(x):
        return np.sum(np.tanh(x @ A))
    return f


KERNEL_SOURCE = r"""
// out (n_rows x B, row-major) = M (CSR, n_rows x n_cols) @ D (n_cols x B, row-major).
// One warp per row of M; lane l owns columns l, l+32, l+64, l+96 (B <= 128), so each
// nonzero gathers one contiguous row of D. With apply != 0 the result r is replaced by
// 1 - tanh(r)^2: the elementwise step of the gradient, fused into the product.
extern "C" __global__ void csr_spmm_rows(const int* __restrict__ indptr,
                                         const int* __restrict__ indices,
                                         const float* __restrict__ data,
                                         const float* __restrict__ D, float* __restrict__ out,
                                         int n_rows, int B, int apply) {
    int row = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5);
    int lane = threadIdx.x & 31;
    if (row >= n_rows) return;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    int end = indptr[row + 1];
    for (int k = indptr[row]; k < end; ++k) {
        int c = __ldg(indices + k);
        float a = __ldg(data + k);
        const float* d = D + (size_t)c * B;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            int j = lane + 32 * q;
            if (j < B) acc[q] += a * __ldg(d + j);
        }
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        int j = lane + 32 * q;
        if (j < B) {
            float r = acc[q];
            if (apply) { float t = tanhf(r); r = 1.0f - t * t; }
            out[(size_t)row * B + j] = r;
        }
    }
}

// out (cols x rows) = in (rows x cols)^T through a 32 x 33 shared tile; block (32, 8).
extern "C" __global__ void transpose32(const float* __restrict__ in, float* __restrict__ out,
                                       int rows, int cols) {
    __shared__ float tile[32][33];
    int bx = blockIdx.x * 32, by = blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += 8) {
        int r = by + j, c = bx + threadIdx.x;
        if (r < rows && c < cols) tile[j][threadIdx.x] = in[(size_t)r * cols + c];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < 32; j += 8) {
        int r = bx + j, c = by + threadIdx.x;
        if (r < cols && c < rows) out[(size_t)r * rows + c] = tile[threadIdx.x][j];
    }
}
"""
TANH_PRIME_SOURCE = r"""
extern "C" __global__ void one_minus_tanh_sq(const float* z, float* w, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) { float t = tanhf(z[i]); w[i] = 1.0f - t * t; }
}
"""


def hand_fused(ctx: Context, A):
    """The limit reference, four launches: ``xᵀ`` (tiled transpose), ``wᵀ = 1 - tanh²(Aᵀxᵀ)``
    (row-major SpMM with the elementwise step fused in), ``gᵀ = A wᵀ`` (same kernel), and
    the transpose back to ``(batch, n)``. ``Aᵀ`` as CSR is built once, outside the timing.
    Row-major dense operands make every nonzero gather one contiguous 256-byte row."""
    AT = A.T.tocsr()
    if not ctx.gpu:
        def run_numpy(x):
            xT = np.ascontiguousarray(x.T)
            wT = 1.0 - np.tanh(AT @ xT) ** 2
            return np.ascontiguousarray((A @ wT).T)
        return run_numpy
    import cupy as cp

    module = cp.RawModule(code=KERNEL_SOURCE)
    spmm, transpose = module.get_function("csr_spmm_rows"), module.get_function("transpose32")
    mats = [(M.indptr.astype(cp.int32), M.indices.astype(cp.int32), M.data.astype(cp.float32),
             M.shape[0]) for M in (AT, A)]

    def t32(src):
        rows, cols = src.shape
        dst = cp.empty((cols, rows), dtype=cp.float32)
        transpose(((cols + 31) // 32, (rows + 31) // 32), (32, 8),
                  (src, dst, np.int32(rows), np.int32(cols)))
        return dst

    def product(mat, dense, apply):
        indptr, indices, data, n_rows = mat
        batch = dense.shape[1]
        out = cp.empty((n_rows, batch), dtype=cp.float32)
        spmm(((n_rows * 32 + 255) // 256,), (256,),
             (indptr, indices, data, dense, out, np.int32(n_rows), np.int32(batch),
              np.int32(apply)))
        return out

    def run(x):
        if x.shape[0] > 128:
            raise Skip("hand-fused SpMM handles batch <= 128")
        wT = product(mats[0], t32(x), 1)
        return t32(product(mats[1], wT, 0))

    return run


def cusparse_grad(ctx: Context, A):
    """The same gradient through cupyx/cuSPARSE (column-major dense operands) and one fused
    elementwise kernel: what a CuPy user gets without writing an SpMM."""
    AT = A.T.tocsr()
    if not ctx.gpu:
        return lambda x: (A @ (1.0 - np.tanh(AT @ x.T) ** 2)).T
    import cupy as cp

    kernel = cp.RawKernel(TANH_PRIME_SOURCE, "one_minus_tanh_sq")

    def run(x):
        zT = AT @ x.T                               # x.T is column-major (n, batch)
        wT = cp.empty_like(zT)
        kernel(((zT.size + 255) // 256,), (256,), (zT, wT, np.int64(zT.size)))
        return (A @ wT).T

    return run


def forward_only(ctx: Context, A):
    """The forward sparse product alone through cupyx (``Aᵀ xᵀ``, CSR ``Aᵀ`` prepared)."""
    AT = A.T.tocsr()
    return lambda x: AT @ x.T


def build_dualgpu(ctx: Context, A):
    import dualgpu as dg

    return dg.grad(product_fn(ctx, A))


def build_torch(ctx: Context, A):
    """torch autograd through a CSR tensor; ``x @ A`` first, ``(Aᵀ xᵀ)ᵀ`` if that fails."""
    torch = import_torch(ctx)
    dev = "cuda" if ctx.gpu else "cpu"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)     # "sparse CSR support is in beta"
        At = torch.sparse_csr_tensor(to_torch(ctx, A.indptr).long(),
                                     to_torch(ctx, A.indices).long(), to_torch(ctx, A.data),
                                     size=A.shape, device=dev)

    def grad_of(product):
        def g(x):
            x = x.detach().requires_grad_(True)
            y = torch.tanh(product(x)).sum()
            return torch.autograd.grad(y, x)[0]
        return g

    direct = grad_of(lambda x: x @ At)
    try:
        direct(torch.ones((1, A.shape[0]), device=dev))
        return direct
    except Exception as exc:  # noqa: BLE001
        g = grad_of(lambda x: (At.t() @ x.t()).t())
        g.bench_note = f"x @ A_csr failed ({type(exc).__name__}); timed (Aᵀ xᵀ)ᵀ"
        return g


def build_jax(ctx: Context, A):
    jax = import_jax()
    jnp = jax.numpy
    try:
        from jax.experimental import sparse as jsparse
    except Exception as exc:  # noqa: BLE001
        raise Skip(f"jax.experimental.sparse missing ({exc})") from None
    coo = A.tocoo()
    xp = ctx.xp
    indices = xp.stack([coo.row.astype(xp.int32), coo.col.astype(xp.int32)], axis=1)
    A_bcoo = jsparse.BCOO((to_jax(ctx, coo.data), to_jax(ctx, indices)), shape=A.shape)
    grad = jax.jit(jax.grad(lambda x, M: jnp.sum(jnp.tanh(x @ M))))
    return lambda x: grad(x, A_bcoo)


def run(ctx: Context) -> list[Row]:
    n, nnz, batch = TINY if ctx.tiny else FULL
    case = f"nnz={nnz // 10**6}M" if nnz >= 10**6 else f"nnz={nnz}"
    A = make_matrix(ctx, n, nnz)
    inputs = make_inputs(ctx.xp, n, batch)
    ref = reference(ctx, A, *inputs[0])
    check = lambda out: rel_err(ctx, out, ref)
    common = dict(workload=NAME, case=case, check=check, tol=2e-3)
    rows = [
        measure(ctx, impl="hand-fused", build=lambda: hand_fused(ctx, A), inputs=inputs,
                reference=True, **common),
        measure(ctx, impl="cuSPARSE + fused tanh'", build=lambda: cusparse_grad(ctx, A),
                inputs=inputs, **common),
        measure(ctx, impl="cupyx forward x@A only", build=lambda: forward_only(ctx, A),
                inputs=inputs, workload=NAME, case=case),
        measure(ctx, impl="dualgpu", build=lambda: build_dualgpu(ctx, A), inputs=inputs,
                **common),
        measure(ctx, impl="torch CSR autograd", build=lambda: build_torch(ctx, A),
                inputs=lambda: [tuple(to_torch(ctx, a) for a in s) for s in inputs],
                clock=lambda: torch_clock(ctx), **common),
        measure(ctx, impl="jax BCOO jit(grad)", build=lambda: build_jax(ctx, A),
                inputs=lambda: [tuple(to_jax(ctx, a) for a in s) for s in inputs],
                clock=jax_clock(), **common),
    ]
    for r in rows:
        r.extra.setdefault("nnz", int(A.nnz))
    return rows
