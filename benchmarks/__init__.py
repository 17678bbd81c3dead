"""Side-by-side benchmarks of dualgpu against JAX, PyTorch and hand-fused CuPy kernels.

Run on a GPU machine with ``make bench`` (``python -m benchmarks.run``); see
``docs/performance.md`` for what each workload measures and ``benchmarks/NOTES.md`` for the
method and the predictions. Every workload lives in its own module and exposes
``run(ctx) -> list[Row]``; the peers (JAX, PyTorch, CuPy) are imported lazily, so the
modules import anywhere (CI imports them on a CPU-only machine).
"""
