"""CUDA source of our kernels for the matrix products cuBLAS runs badly: tiny products (a
small network's), thin ones (few terms) and skinny ones (few columns), and the rule that
picks one (:func:`matmul_kernel_choice`). Pure text generation, no CuPy: the launcher
(:mod:`dualgpu.codegen.launcher`) compiles and runs them.

Example::

    >>> name, src = matmul_kernel(4, 1, 10, (10, 1), (1, 0), np.float64)
    >>> name.startswith("dg_matmul_") and "acc" in src
    True
"""
from __future__ import annotations

from .cuda import BLOCK, _named, c_literal, ctype

SMALL_MATMUL = 1 << 16  # M*N*K up to which matmul runs as our kernel (capturable, no cuBLAS)
THIN_K = 16             # products over at most this many terms: one thread per output element
SKINNY_N = 16           # products with at most this many columns: one warp per output row
SKINNY_SHARED = 48 << 10  # ... when the right operand fits in a block's shared memory
SKINNY_MIN_ROWS = 256
ROWS_PER_BLOCK = BLOCK // 32


def matmul_kernel_choice(m: int, n: int, k: int, a_strides, b_strides, itemsize: int):
    """Which of our kernels computes a 2-D product ``(m, k) @ (k, n)`` (element strides
    given), or None for cuBLAS. cuBLAS is slow on the skinny products of small networks
    (4096×512 @ 512×10: 12 µs for 8 MB read, H200 float32; 4096×10 @ 10×512: 7 µs):

    * ``"tiny"``: M·N·K ≤ ``SMALL_MATMUL``, or K ≤ ``THIN_K`` with ``b`` read along its rows
      (one thread per output element, loads and stores coalesced);
    * ``"skinny"``: N ≤ ``SKINNY_N``, ``a``'s rows contiguous, ``b`` fits in shared memory,
      at least ``SKINNY_MIN_ROWS`` rows (one warp per row of ``a``, read once, coalesced).

    Example::

        >>> matmul_kernel_choice(4096, 10, 512, (512, 1), (10, 1), 4)
        'skinny'
        >>> matmul_kernel_choice(4096, 512, 10, (10, 1), (512, 1), 4)
        'tiny'
        >>> matmul_kernel_choice(4096, 512, 784, (784, 1), (512, 1), 4) is None
        True
    """
    if m * n * k <= SMALL_MATMUL:
        return "tiny"
    if m * n >= 1 << 31:
        return None
    if k <= THIN_K and (b_strides[1] == 1 or n == 1):
        return "tiny"
    if n <= SKINNY_N and (a_strides[1] == 1 or k == 1) and m >= SKINNY_MIN_ROWS \
            and k * n * itemsize <= SKINNY_SHARED:
        return "skinny"
    return None


def skinny_matmul_kernel(m: int, n: int, k: int, a_row: int, b_strides, dtype):
    """Name and source of ``c[m, n] = a[m, k] @ b[k, n]`` for few columns ``n``: ``b`` is
    staged in shared memory, each warp reads one row of ``a`` (row stride ``a_row``, unit
    stride along it) and keeps ``n`` accumulators, reduced across the warp by shuffles.

    Example::

        >>> name, src = skinny_matmul_kernel(4096, 10, 512, 512, (10, 1), np.float32)
        >>> "__shfl_xor_sync" in src and "__shared__ float bs[5120]" in src
        True
    """
    ct = ctype(dtype)
    b0, b1 = b_strides
    zero = c_literal(0, dtype)
    acc = "\n".join(f"  {ct} acc{j} = {zero};" for j in range(n))
    fma = "\n".join(f"    acc{j} += x * bs[p * {n} + {j}];" for j in range(n))
    red = "\n".join(f"    acc{j} += __shfl_xor_sync(0xffffffffu, acc{j}, o);"
                     for j in range(n))
    store = "\n".join(f"  if (lane == {j}) c[row * {n} + {j}] = acc{j};" for j in range(n))
    template = "\n".join([
        f'extern "C" __global__ void __launch_bounds__({BLOCK}) @KERNEL@(',
        f"    const {ct}* __restrict__ a, const {ct}* __restrict__ b, {ct}* __restrict__ c) {{",
        f"  __shared__ {ct} bs[{k * n}];",
        f"  for (int t = threadIdx.x; t < {k * n}; t += {BLOCK}) {{",
        f"    const int p = t / {n}, j = t % {n};",
        f"    bs[t] = b[(long long)p * {b0} + (long long)j * {b1}];",
        "  }",
        "  __syncthreads();",
        "  const int lane = threadIdx.x & 31;",
        f"  const long long row = (long long)blockIdx.x * {ROWS_PER_BLOCK} + (threadIdx.x >> 5);",
        f"  if (row >= {m}) return;   // the whole warp: no shuffle is left half-done",
        acc,
        f"  const {ct}* ar = a + row * {a_row};",
        f"  for (int p = lane; p < {k}; p += 32) {{",
        f"    const {ct} x = ar[p];",
        fma,
        "  }",
        "  for (int o = 16; o > 0; o >>= 1) {",
        red,
        "  }",
        store,
        "}"]) + "\n"
    return _named(template, "skinny")


def matmul_kernel(m: int, n: int, k: int, a_strides, b_strides, dtype) -> tuple[str, str]:
    """Name and source of ``c[m, n] = a[m, k] @ b[k, n]`` (element strides given), one thread
    per output element: for the tiny products of small networks, where launching cuBLAS
    costs more than the product, and which CUDA-graph capture cannot hold.

    Example::

        >>> name, src = matmul_kernel(4, 1, 10, (10, 1), (1, 0), np.float64)
        >>> name
        'dg_matmul_6b4cc3fee5a2faf4'
    """
    ct = ctype(dtype)
    a0, a1 = a_strides
    b0, b1 = b_strides
    # 64-bit indices once an offset (a thin slice of a big array: x[:, :8]) or the thread
    # index may pass INT_MAX; else the text (and its hash) of the 32-bit kernel
    reach = max(m * n + BLOCK, (m - 1) * abs(a0) + (k - 1) * abs(a1),
                (k - 1) * abs(b0) + (n - 1) * abs(b1))
    it, w = ("long long", "(long long)") if reach > 2 ** 31 - 1 else ("int", "")
    template = "\n".join([
        f'extern "C" __global__ void __launch_bounds__({BLOCK}) @KERNEL@(',
        f"    const {ct}* __restrict__ a, const {ct}* __restrict__ b, {ct}* __restrict__ c) {{",
        f"  const {it} t = ({it})blockIdx.x * {BLOCK} + ({it})threadIdx.x;",
        f"  if (t >= {m * n}) return;",
        f"  const {it} i = t / {max(n, 1)}, j = t % {max(n, 1)};",
        f"  {ct} acc = {c_literal(0, dtype)};",
        f"  for (int p = 0; p < {k}; ++p) "
        f"acc += a[i * {a0} + {w}p * {a1}] * b[{w}p * {b0} + j * {b1}];",
        "  c[t] = acc;",
        "}"]) + "\n"
    return _named(template, "matmul")
