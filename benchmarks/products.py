"""Our product kernels (``dualgpu/codegen/products.py``) against cuBLAS on dualgpu's own
handle, shape by shape, at full float32: the evidence behind :func:`matmul_kernel_choice`.
GPU only; ``python -m benchmarks.products``. Each product is the one step of a compiled
``a @ b`` and is timed by :meth:`FusedProgram.step_times` (20 copies captured in one CUDA
graph: device time without launch gaps), once as the launcher runs it and once with our
kernels switched off; the bandwidth is over the bytes the product must move."""
from __future__ import annotations

import numpy as np

import dualgpu as dg
import dualgpu.codegen.launcher as launcher
from dualgpu.backends.cupy import get_cupy_backend
from dualgpu.codegen.products import matmul_kernel_choice, product_layout

# (label, shape of a, shape of b, a transposed, b transposed): the MLP 784-512-10 HVP's
# skinny, thin and transposed-skinny products at batch 4096, the deep MLP's at 8192, a long vector
SHAPES = [
    ("h @ W2", (4096, 512), (512, 10), False, False),
    ("g @ W2.T", (4096, 10), (512, 10), False, True),
    ("h.T @ g", (4096, 512), (4096, 10), True, False),
    ("X.T @ g (784)", (4096, 784), (4096, 10), True, False),
    ("h @ W (1024, b8192)", (8192, 1024), (1024, 10), False, False),
    ("h.T @ g (1024, b8192)", (8192, 1024), (8192, 10), True, False),
    ("g @ W.T (1024, b8192)", (8192, 10), (1024, 10), False, True),
    ("x @ B (long x)", (100000,), (100000, 3), False, False),
    # the same MLP written feature-major (W1 @ X): the transposes of the first four
    ("W2 @ h (by feature)", (10, 512), (512, 4096), False, False),
    ("W2.T @ g (by feature)", (10, 512), (10, 4096), True, False),
    ("g @ h.T (by feature)", (10, 4096), (512, 4096), False, True),
    ("g @ X.T (784, by feature)", (10, 4096), (784, 4096), False, True),
]


def product_time(a, b, ours: bool) -> tuple[float, object]:
    """Device microseconds of ``a @ b`` as the launcher runs it (``ours``) or on cuBLAS,
    and the result."""
    graph = dg.trace(lambda a, b: a @ b, a, b)
    choice = launcher.matmul_kernel_choice
    if not ours:
        launcher.matmul_kernel_choice = lambda *args: None
    try:
        program = launcher.FusedProgram(graph, get_cupy_backend())
        out = program(a, b)[0]
        (_, _, t), = program.step_times(a, b)
    finally:
        launcher.matmul_kernel_choice = choice
    return t, out


def main() -> None:
    import cupy as cp

    rng = np.random.default_rng(0)
    print(f"{'product':>26} {'choice':>8} {'ours us':>8} {'GB/s':>7} {'cuBLAS us':>10} "
          f"{'GB/s':>7} {'max rel err':>12}")
    for label, sa_, sb_, ta, tb in SHAPES:
        a = cp.asarray(rng.standard_normal(sa_), dtype=cp.float32)
        b = cp.asarray(rng.standard_normal(sb_), dtype=cp.float32)
        a, b = (a.T if ta else a), (b.T if tb else b)
        m, n, k, sa, sb = product_layout(a, b)
        moved = 4 * (a.size + b.size + m * n) / 1e3   # KB: GB/s = KB / us
        want = cp.matmul(a.astype(cp.float64), b.astype(cp.float64))
        choice = matmul_kernel_choice(m, n, k, sa, sb, 4)
        ours_t, got = product_time(a, b, True)
        err = float(cp.abs(got - want).max() / cp.abs(want).max())
        blas_t, _ = product_time(a, b, False)
        print(f"{label:>26} {choice or '-':>8} {ours_t:8.1f} {moved / ours_t:7.0f} "
              f"{blas_t:10.1f} {moved / blas_t:7.0f} {err:12.2e}", flush=True)


if __name__ == "__main__":
    main()
