"""Our product kernels (``dualgpu/codegen/products.py``) against cuBLAS on dualgpu's own
handle, shape by shape, at full float32: the evidence behind :func:`matmul_kernel_choice`.
GPU only; ``python -m benchmarks.products``. Prints device time per product
(``cupyx.profiler.benchmark``), the bandwidth it reaches over the bytes it must move, and
the kernel the launcher picks."""
from __future__ import annotations

import numpy as np

from dualgpu.backends.cublas import CublasGemm, gemm_operands
from dualgpu.codegen.cuda import BLOCK
from dualgpu.codegen.products import matmul_kernel_choice, product_kernel

# (label, shape of a, shape of b, a transposed, b transposed): the MLP 784-512-10 HVP's
# skinny and tall products at batch 4096, the deep MLP's, and a few more
SHAPES = [
    ("h @ W2", (4096, 512), (512, 10), False, False),
    ("g @ W2.T", (4096, 10), (512, 10), False, True),
    ("h.T @ g", (4096, 512), (4096, 10), True, False),
    ("X.T @ g (784)", (4096, 784), (4096, 10), True, False),
    ("h @ W (1024, b8192)", (8192, 1024), (1024, 10), False, False),
    ("h.T @ g (1024, b8192)", (8192, 1024), (8192, 10), True, False),
    ("g @ W.T (1024, b8192)", (8192, 10), (1024, 10), False, True),
    ("x @ B (long x)", (100000,), (100000, 3), False, False),
]


def _launch(pk, main_k, finish, a, b, out, part):
    """The launches of one product by our kernel, as the launcher makes them."""
    def run():
        if finish is None:
            main_k((pk.blocks,), (BLOCK,), (a, b, out))
        else:
            main_k((pk.blocks,), (BLOCK,), (a, b, part))
            finish((pk.finish_blocks,), (BLOCK,), (part, out))
    return run


def main() -> None:
    import cupy as cp
    from cupyx.profiler import benchmark

    rng = np.random.default_rng(0)
    print(f"{'product':>24} {'choice':>7} {'ours us':>8} {'GB/s':>7} {'cuBLAS us':>10} "
          f"{'GB/s':>7} {'max rel err':>12}")
    for label, sa_, sb_, ta, tb in SHAPES:
        a = cp.asarray(rng.standard_normal(sa_), dtype=cp.float32)
        b = cp.asarray(rng.standard_normal(sb_), dtype=cp.float32)
        a, b = (a.T if ta else a), (b.T if tb else b)
        m, k = (1, a.shape[0]) if a.ndim == 1 else a.shape
        n = 1 if b.ndim == 1 else b.shape[1]
        sa = (0, a.strides[0] // 4) if a.ndim == 1 else tuple(s // 4 for s in a.strides)
        sb = (b.strides[0] // 4, 0) if b.ndim == 1 else tuple(s // 4 for s in b.strides)
        moved = 4 * (a.size + b.size + m * n)
        want = cp.matmul(a.astype(cp.float64), b.astype(cp.float64))
        choice = matmul_kernel_choice(m, n, k, sa, sb, 4)
        ours_t = ours_bw = err = float("nan")
        if choice is not None:
            pk = product_kernel(choice, m, n, k, sa, sb, np.float32)
            main_k = cp.RawKernel(pk.source, pk.name)
            finish = cp.RawKernel(pk.finish_source, pk.finish_name) if pk.parts else None
            out = cp.empty(want.shape, cp.float32)
            part = cp.empty((max(pk.parts, 1), m, n), cp.float32)

            ours = _launch(pk, main_k, finish, a, b, out, part)
            ours()
            err = float(cp.abs(out - want).max() / cp.abs(want).max())
            ours_t = np.median(benchmark(ours, (), n_repeat=200, n_warmup=20).gpu_times) * 1e6
            ours_bw = moved / ours_t / 1e3
        gemm = CublasGemm.get()
        ga, gb, lay = gemm_operands(a, b, cp)
        out2 = cp.empty(want.shape, cp.float32)
        blas_t = np.median(benchmark(gemm.run, (lay, ga, gb, out2, "float32"),
                                     n_repeat=200, n_warmup=20).gpu_times) * 1e6
        print(f"{label:>24} {choice or '-':>7} {ours_t:8.1f} {ours_bw:7.0f} {blas_t:10.1f} "
              f"{moved / blas_t / 1e3:7.0f} {err:12.2e}", flush=True)


if __name__ == "__main__":
    main()
