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

from typing import NamedTuple

import numpy as np

from .c_source import c_literal, ctype, named
from .cuda import BLOCK

SMALL_MATMUL = 1 << 16  # M*N*K up to which matmul runs as our "tiny" kernel ...
THIN_K = 16             # products over at most this many terms: one thread per output element
SKINNY_N = 16           # products with at most this many columns: one warp per output row
SKINNY_SHARED = 48 << 10  # ... when the right operand fits in a block's shared memory
SKINNY_MIN_ROWS = 256
WARPS = BLOCK // 32
THIN_MIN_N, THIN_MAX_N = 64, 4 * BLOCK   # thin products with a wide output ...
THIN_MIN_ROWS = 1024                     # ... and many rows: b held in registers
TINY_MAX_K = 256        # ... over at most this many terms (one thread loops over all of K)
SPLIT_MIN_K, SPLIT_BELOW_BLOCKS = 1024, 132   # skinny over a long K and few rows: split K
WIDE_M, WIDE_MIN_N = 16, 1024   # few rows and long contiguous ones: a thread a column,
WIDE_SHARED = 32 << 10          # ... a in shared memory (beside the warps' partial sums)


class ProductKernel(NamedTuple):
    """One of our product kernels: ``name``/``source``, launched on ``blocks`` blocks of
    ``BLOCK`` threads with ``(a, b, c)``."""
    name: str
    source: str
    blocks: int


def product_layout(a, b) -> tuple:
    """``(m, n, k, a_strides, b_strides)`` of the 1-D/2-D product ``a @ b`` (arrays with
    ``shape``, ``strides``, ``itemsize``) seen as ``(m, k) @ (k, n)``, strides in elements:
    a 1-D ``a`` is one row, a 1-D ``b`` one column.

    Example::

        >>> product_layout(np.ones((4, 6))[:, ::2], np.ones(3))
        (4, 1, 3, (6, 2), (1, 0))
    """
    item = a.itemsize
    a_row, b_col = len(a.shape) == 1, len(b.shape) == 1
    m, k = (1, a.shape[0]) if a_row else a.shape
    n = 1 if b_col else b.shape[1]
    sa = (0, a.strides[0] // item) if a_row else tuple(s // item for s in a.strides)
    sb = (b.strides[0] // item, 0) if b_col else tuple(s // item for s in b.strides)
    return m, n, k, sa, sb


def matmul_kernel_choice(m: int, n: int, k: int, a_strides, b_strides, itemsize: int):
    """Which of our kernels computes a 2-D product ``(m, k) @ (k, n)`` (element strides
    given), or None for cuBLAS. cuBLAS is slow on the skinny products of small networks
    (4096×512 @ 512×10: 12 µs for 8 MB read, H200 float32; 512×4096 @ 4096×10: 11.6 µs):

    * ``"tiny"``: M·N·K ≤ ``SMALL_MATMUL`` and K ≤ ``TINY_MAX_K`` (one thread per output
      element);
    * ``"thin"``: K ≤ ``THIN_K``, a wide output (``THIN_MIN_N`` ≤ N ≤ ``THIN_MAX_N``) and
      many rows (``g @ W2ᵀ``): each thread holds a few columns of ``b`` in registers and
      writes them for a band of rows, stores coalesced, ``b`` read once per block;
    * ``"tiny"`` too for other products with K ≤ ``THIN_K`` and ``b`` read along its rows;
    * ``"skinny"``: N ≤ ``SKINNY_N``, ``a``'s rows contiguous, at least ``SKINNY_MIN_ROWS``
      rows (each warp reads whole rows of ``a``, coalesced; ``b`` staged in shared memory,
      in slices of K when it does not fit);
    * ``"skinny_t"``: the same kernel on the transposed product ``cᵀ = bᵀ @ aᵀ`` (M small,
      ``b``'s columns contiguous), writing ``c`` through its transposed strides;
    * ``"wide"``: M ≤ ``WIDE_M``, ``b``'s rows contiguous and long (N ≥ ``WIDE_MIN_N``),
      ``a`` fits in shared memory: a thread a column, the block's warps split K.

    The feature-major network (``W1 @ X``, batch along the columns) meets the transposes of
    the batch-major one's products: ``"thin"`` with column tiles, ``"skinny_t"`` and
    ``"wide"`` are those, so either layout runs its small products on our kernels.

    Example::

        >>> matmul_kernel_choice(4096, 10, 512, (512, 1), (10, 1), 4)
        'skinny'
        >>> matmul_kernel_choice(512, 10, 4096, (1, 512), (10, 1), 4) is None   # hᵀ @ g
        True
        >>> matmul_kernel_choice(4096, 512, 10, (10, 1), (1, 10), 4)
        'thin'
        >>> matmul_kernel_choice(4096, 512, 784, (784, 1), (512, 1), 4) is None
        True
        >>> matmul_kernel_choice(10, 512, 4096, (4096, 1), (1, 4096), 4)  # g @ hᵀ, by feature
        'skinny_t'
        >>> matmul_kernel_choice(10, 4096, 512, (512, 1), (4096, 1), 4)   # W2 @ h, by feature
        'wide'
        >>> matmul_kernel_choice(512, 4096, 10, (1, 512), (4096, 1), 4)   # W2ᵀ @ g, by feature
        'thin'
    """
    if m * n * k <= SMALL_MATMUL and k <= TINY_MAX_K:
        return "tiny"
    if m * n >= 1 << 31:
        return None
    if k <= THIN_K and THIN_MIN_N <= n <= THIN_MAX_N and m >= THIN_MIN_ROWS:
        return "thin"
    if k <= THIN_K and n > THIN_MAX_N and m * n >= THIN_MIN_ROWS * THIN_MAX_N:
        return "thin"       # column tiles of BLOCK (a feature-major W2ᵀ @ g)
    if k <= THIN_K and (b_strides[1] == 1 or n == 1):
        return "tiny"
    if _skinny(m, n, k, a_strides):
        return "skinny"
    if _skinny(n, m, k, b_strides[::-1]):
        return "skinny_t"   # the skinny kernel on cᵀ = bᵀ @ aᵀ (a feature-major g @ hᵀ)
    if m <= WIDE_M and b_strides[1] == 1 and n >= WIDE_MIN_N and m * k * itemsize <= \
            WIDE_SHARED:
        return "wide"       # few rows, columns contiguous (a feature-major W2 @ h)
    return None


def _skinny(m: int, n: int, k: int, a_strides) -> bool:
    """Whether ``(m, k) @ (k, n)`` suits the skinny kernel: few columns, ``a``'s rows
    contiguous, many rows."""
    return n <= SKINNY_N and (a_strides[1] == 1 or k == 1) and m >= SKINNY_MIN_ROWS


def product_kernel(choice: str, m: int, n: int, k: int, a_strides, b_strides,
                   dtype, count: int = 1) -> ProductKernel:
    """The kernel of ``choice`` (:func:`matmul_kernel_choice`) for ``(m, k) @ (k, n)``;
    with ``count`` > 1, for that many independent products of the same shapes and strides
    in one launch (``count`` triples ``a, b, c`` as arguments; ``blockIdx.y`` picks one):
    one CUDA-graph node instead of ``count``, and more blocks to fill the GPU.

    Example::

        >>> pk = product_kernel("skinny", 4096, 10, 512, (512, 1), (10, 1), np.float32)
        >>> pk.blocks      # 8 warps a block, 4 rows a warp
        128
        >>> "blockIdx.y == 1 ? a_1 : a_2" in product_kernel("thin", 4096, 512, 10, (10, 1), (1, 10),
        ...                                     np.float32, count=3).source
        True
    """
    if choice == "tiny":
        name, src = matmul_kernel(m, n, k, a_strides, b_strides, dtype, count)
        return ProductKernel(name, src, max(1, -(-(m * n) // BLOCK)))
    if choice == "thin":
        tiles = thin_column_tiles(n)
        rows = thin_rows_per_block(m, tiles)
        name, src = thin_matmul_kernel(m, n, k, a_strides, b_strides, dtype, rows, count)
        return ProductKernel(name, src, tiles * -(-m // rows))
    if choice in ("skinny", "skinny_t"):
        t = choice == "skinny_t"     # the product cᵀ = bᵀ @ aᵀ, c written column-major
        rows_of, cols, a_row, bs = ((n, m, b_strides[1], a_strides[::-1]) if t else
                                    (m, n, a_strides[0], b_strides))
        if skinny_splits_k(rows_of, k):
            rows = split_rows_per_block(rows_of)
            name, src = skinny_split_kernel(rows_of, cols, k, a_row, bs, dtype, rows, count,
                                            transposed=t)
            return ProductKernel(name, src, -(-rows_of // rows))
        rows = skinny_rows_per_warp(rows_of, cols)
        name, src = skinny_matmul_kernel(rows_of, cols, k, a_row, bs, dtype, rows, count,
                                         transposed=t)
        return ProductKernel(name, src, -(-rows_of // (WARPS * rows)))
    if choice == "wide":
        name, src = wide_matmul_kernel(m, n, k, a_strides, b_strides[0], dtype, count)
        return ProductKernel(name, src, -(-n // 32))
    raise ValueError(f"no product kernel {choice!r}")


def _signature(ct: str, count: int) -> list:
    """The parameter lines of a product kernel: ``a, b, c``; or ``count`` triples, of
    which ``blockIdx.y`` picks the one this block computes, bound to ``a, b, c``."""
    if count == 1:
        return [f"    const {ct}* __restrict__ a, const {ct}* __restrict__ b, "
                f"{ct}* __restrict__ c) {{"]
    params = ", ".join(f"const {ct}* __restrict__ a_{i}, const {ct}* __restrict__ b_{i}, "
                       f"{ct}* __restrict__ c_{i}" for i in range(count))
    lines = [f"    {params}) {{"]
    for x, const in (("a", "const "), ("b", "const "), ("c", "")):
        pick = f"{x}_{count - 1}"
        for i in range(count - 2, -1, -1):
            pick = f"blockIdx.y == {i} ? {x}_{i} : {pick}"
        lines.append(f"  {const}{ct}* __restrict__ const {x} = {pick};")
    return lines


def skinny_rows_per_warp(m: int, n: int) -> int:
    """Rows of ``a`` each warp of the skinny kernel reads together: more rows reuse each
    value of ``b`` read from shared memory (and the staging of ``b`` per block), as long
    as about a wave of 128 blocks remains and the accumulators stay few (≤ 64).

    Example::

        >>> skinny_rows_per_warp(4096, 10), skinny_rows_per_warp(1024, 10)
        (4, 1)
    """
    for rows in (4, 2):
        if rows * n <= 64 and -(-m // (WARPS * rows)) >= 128:
            return rows
    return 1


def _warp_sums(rows: int, n: int) -> list:
    """Lines that add each accumulator ``acc<r>_<j>`` over the 32 lanes of a warp (every
    lane ends with the warp's sum), by butterfly shuffles."""
    lines = ["  for (int o = 16; o > 0; o >>= 1) {"]
    for r in range(rows):
        for j in range(n):
            lines.append(f"    acc{r}_{j} += __shfl_xor_sync(0xffffffffu, acc{r}_{j}, o);")
    return lines + ["  }"]


def skinny_matmul_kernel(m: int, n: int, k: int, a_row: int, b_strides, dtype,
                         rows: int = 1, count: int = 1, transposed: bool = False):
    """Name and source of ``c[m, n] = a[m, k] @ b[k, n]`` for few columns ``n``: ``b`` is
    staged in shared memory column by column (``bs[j*k + p]``: a warp reads consecutive
    words, no bank conflicts); each warp reads ``rows`` rows of ``a`` at once (row stride
    ``a_row``, unit stride along a row), coalesced, keeps ``rows × n`` accumulators and
    reduces them across the warp by shuffles. ``c`` is C-contiguous. When ``b`` does not
    fit in ``SKINNY_SHARED`` bytes it is staged in slices of K, one after the other.

    ``transposed=True`` is the kernel of ``cᵀ = bᵀ @ aᵀ``: it is passed ``(a, b, c)`` of the
    product ``(n, k) @ (k, m)`` and computes that product's transpose (its ``a`` is this
    ``b``, and it writes ``c`` column-major).

    Example::

        >>> name, src = skinny_matmul_kernel(4096, 10, 512, 512, (10, 1), np.float32, 4)
        >>> "__shfl_xor_sync" in src and "__shared__ float bs[5120]" in src
        True
        >>> src = skinny_matmul_kernel(512, 10, 4096, 4096, (1, 4096), np.float32)[1]
        >>> "__shared__ float bs[12160]" in src      # 1216 terms a slice: 48 KiB
        True
    """
    ct = ctype(dtype)
    b0, b1 = b_strides
    zero = c_literal(0, dtype)
    rs = range(rows)
    item = np.dtype(dtype).itemsize
    tile = k if k * n * item <= SKINNY_SHARED else SKINNY_SHARED // (n * item) // 32 * 32
    sliced = tile < k
    a_name, b_name = ("b", "a") if transposed else ("a", "b")
    lines = [
        f'extern "C" __global__ void __launch_bounds__({BLOCK}) @KERNEL@(',
        *_signature(ct, count),
        f"  __shared__ {ct} bs[{tile * n}];",
    ]
    stage = [
        f"  for (int t = threadIdx.x; t < {tile * n}; t += {BLOCK}) {{",
        f"    const int j = t / {tile}, p = t % {tile};",
        f"    bs[t] = {b_name}[(long long)p * {b0} + (long long)j * {b1}];",
        "  }",
        "  __syncthreads();",
    ]
    if not sliced:
        lines += stage
    lines += [
        "  const int lane = threadIdx.x & 31;",
        f"  const long long row = ((long long)blockIdx.x * {WARPS} + (threadIdx.x >> 5))"
        f" * {rows};",
    ]
    if sliced:   # every warp stays for the barriers of each slice
        lines.append(f"  const bool in0 = row < {m};")
    else:
        lines.append(f"  if (row >= {m}) return;   // the whole warp: no shuffle is left half-done")
    for r in rs:
        if r:
            lines.append(f"  const bool in{r} = row + {r} < {m};")
        lines.append(f"  const {ct}* a{r} = {a_name} + (row + {r}) * {a_row};")
        lines.append("  " + " ".join(f"{ct} acc{r}_{j} = {zero};" for j in range(n)))
    if sliced:
        lines += [
            f"  for (int p0 = 0; p0 < {k}; p0 += {tile}) {{",
            f"    const int kt = min({tile}, {k} - p0);",
            "    __syncthreads();   // the last slice is read",
            f"    for (int t = threadIdx.x; t < kt * {n}; t += {BLOCK}) {{",
            "      const int j = t / kt, p = t % kt;",
            f"      bs[j * {tile} + p] = {b_name}[(long long)(p0 + p) * {b0} + "
            f"(long long)j * {b1}];",
            "    }",
            "    __syncthreads();",
        ]
    lines += [   # loads of `rows` rows × the unrolled steps in flight at once: ~32 a lane
        f"#pragma unroll {max(1, 32 // rows)}",
        f"  for (int p = lane; p < {'kt' if sliced else k}; p += 32) {{",
    ]
    for r in rs:
        at = "p0 + p" if sliced else "p"
        load = f"a{r}[{at}]" if r == 0 and not sliced else f"in{r} ? a{r}[{at}] : {zero}"
        lines.append(f"    const {ct} x{r} = {load};")
    for j in range(n):
        lines.append(f"    {{ const {ct} bj = bs[{j * tile} + p]; "
                     + " ".join(f"acc{r}_{j} += x{r} * bj;" for r in rs) + " }")
    lines += ["  }"] + (["  }"] if sliced else []) + _warp_sums(rows, n)
    for r in rs:
        guard = f"if (in{r}) " if r or sliced else ""
        lines.append(f"  {guard}{{")
        for j in range(n):
            at = f"(row + {r}) + {j * m}" if transposed else f"(row + {r}) * {n} + {j}"
            lines.append(f"    if (lane == {j}) c[{at}] = acc{r}_{j};")
        lines.append("  }")
    lines.append("}")
    return named("\n".join(lines) + "\n", "skinny")


def skinny_splits_k(m: int, k: int) -> bool:
    """Whether a skinny product of ``m`` rows over ``k`` terms runs as
    :func:`skinny_split_kernel`: a long K over too few rows for a warp a row to fill the
    GPU (``g @ hᵀ`` of a feature-major network: 512 rows of 4096 terms).

    Example::

        >>> skinny_splits_k(512, 4096), skinny_splits_k(4096, 512)
        (True, False)
    """
    return k >= SPLIT_MIN_K and -(-m // WARPS) < SPLIT_BELOW_BLOCKS


def split_rows_per_block(m: int) -> int:
    """Rows of ``a`` each block of :func:`skinny_split_kernel` reads: as many as keep
    about a wave of 128 blocks (each value of ``b`` loaded serves them all).

    Example::

        >>> split_rows_per_block(512), split_rows_per_block(100)
        (4, 1)
    """
    for rows in (4, 2):
        if -(-m // rows) >= 128:
            return rows
    return 1


def skinny_split_kernel(m: int, n: int, k: int, a_row: int, b_strides, dtype,
                        rows: int = 1, count: int = 1, transposed: bool = False):
    """Name and source of the skinny product ``c[m, n] = a[m, k] @ b[k, n]`` over a long K
    split across a block: block ``h`` takes rows ``h*rows ...`` of ``a``; thread ``t`` the
    terms ``t, t + BLOCK, ...`` (the block reads ``BLOCK`` consecutive values of a row at a
    time, coalesced) and the matching values of ``b`` (read once for all ``rows`` rows);
    the ``rows × n`` sums are reduced across each warp by shuffles, then across the warps in
    shared memory in warp order (the same result every run). ``transposed`` as in
    :func:`skinny_matmul_kernel`.

    Example::

        >>> name, src = skinny_split_kernel(512, 10, 4096, 4096, (1, 4096), np.float32, 4)
        >>> name.startswith("dg_skinny_") and "part[" in src
        True
    """
    ct = ctype(dtype)
    b0, b1 = b_strides
    zero = c_literal(0, dtype)
    rs = range(rows)
    a_name, b_name = ("b", "a") if transposed else ("a", "b")
    at = f"(row + r) + (long long)j * {m}" if transposed else f"(row + r) * {n} + j"
    lines = [
        f'extern "C" __global__ void __launch_bounds__({BLOCK}) @KERNEL@(',
        *_signature(ct, count),
        f"  __shared__ {ct} part[{WARPS * rows * n}];",
        "  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;",
        f"  const long long row = (long long)blockIdx.x * {rows};",
    ]
    for r in rs:
        lines.append(f"  const bool in{r} = row + {r} < {m};")
        lines.append(f"  const {ct}* a{r} = {a_name} + (in{r} ? row + {r} : 0) * {a_row};")
        lines.append("  " + " ".join(f"{ct} acc{r}_{j} = {zero};" for j in range(n)))
    lines += [
        "#pragma unroll 4",
        f"  for (int p = threadIdx.x; p < {k}; p += {BLOCK}) {{",
        *(f"    const {ct} x{r} = in{r} ? a{r}[p] : {zero};" for r in rs),
    ]
    for j in range(n):
        lines.append(f"    {{ const {ct} bj = {b_name}[(long long)p * {b0} + {j * b1}LL]; "
                     + " ".join(f"acc{r}_{j} += x{r} * bj;" for r in rs) + " }")
    lines += ["  }", *_warp_sums(rows, n), "  if (lane == 0) {"]
    for r in rs:
        lines.append("    " + " ".join(f"part[{(r * n + j) * WARPS} + w] = acc{r}_{j};"
                                       for j in range(n)))
    lines += [
        "  }",
        "  __syncthreads();",
        f"  if (threadIdx.x < {rows * n}) {{",
        f"    const int r = threadIdx.x / {n}, j = threadIdx.x % {n};",
        f"    {ct} s = part[threadIdx.x * {WARPS}];",
        f"    for (int v = 1; v < {WARPS}; ++v) s += part[threadIdx.x * {WARPS} + v];",
        f"    if (row + r < {m}) c[{at}] = s;",
        "  }",
        "}",
    ]
    return named("\n".join(lines) + "\n", "skinny")


def thin_column_tiles(n: int) -> int:
    """Column tiles of the thin kernel: one up to ``THIN_MAX_N`` columns (each thread holds
    a few), else tiles of ``BLOCK`` columns, one a thread.

    Example::

        >>> thin_column_tiles(512), thin_column_tiles(4096)
        (1, 16)
    """
    return 1 if n <= THIN_MAX_N else -(-n // BLOCK)


def thin_rows_per_block(m: int, tiles: int = 1) -> int:
    """Rows of the output each block of the thin kernel writes: about two waves of blocks
    over ``tiles`` column tiles.

    Example::

        >>> thin_rows_per_block(4096), thin_rows_per_block(10 ** 6), thin_rows_per_block(512, 16)
        (16, 64, 16)
    """
    for rows in (64, 32):
        if tiles * -(-m // rows) >= 264:
            return rows
    return 16


def thin_matmul_kernel(m: int, n: int, k: int, a_strides, b_strides, dtype,
                       rows: int, count: int = 1) -> tuple[str, str]:
    """Name and source of ``c[m, n] = a[m, k] @ b[k, n]`` for few terms ``k`` and a wide
    output: thread ``t`` of block ``h`` holds column(s) ``t, t + BLOCK, ...`` of ``b`` in
    registers (any strides: read once per block) and writes them for rows ``h*rows ...``;
    each row of ``a`` is read by all threads at one address (a broadcast), the stores are
    coalesced. ``c`` is C-contiguous. Beyond ``THIN_MAX_N`` columns the blocks take tiles
    of ``BLOCK`` columns (:func:`thin_column_tiles`), one column a thread.

    Example::

        >>> name, src = thin_matmul_kernel(4096, 512, 10, (10, 1), (1, 10), np.float32, 16)
        >>> name.startswith("dg_thin_") and "b1_9" in src
        True
        >>> "blockIdx.x % 16" in thin_matmul_kernel(512, 4096, 10, (1, 512), (4096, 1),
        ...                                         np.float32, 16)[1]
        True
    """
    ct = ctype(dtype)
    a0, a1 = a_strides
    b0, b1 = b_strides
    tiles = thin_column_tiles(n)
    cols = range(-(-n // BLOCK)) if tiles == 1 else range(1)
    lines = [
        f'extern "C" __global__ void __launch_bounds__({BLOCK}) @KERNEL@(',
        *_signature(ct, count),
        "  const long long j0 = threadIdx.x;" if tiles == 1 else
        f"  const long long j0 = (long long)(blockIdx.x % {tiles}) * {BLOCK} + threadIdx.x;",
    ]
    for u in cols:
        lines.append(f"  const bool on{u} = j0 + {u * BLOCK} < {n};")
        lines.append("  " + " ".join(
            f"const {ct} b{u}_{p} = on{u} ? b[{p}LL * {b0} + (j0 + {u * BLOCK}) * {b1}] "
            f": {c_literal(0, dtype)};" for p in range(k)))
    band = "blockIdx.x" if tiles == 1 else f"(blockIdx.x / {tiles})"
    lines += [
        f"  const long long r0 = (long long){band} * {rows};",
        "#pragma unroll 4",
        f"  for (int r = 0; r < {rows}; ++r) {{",
        "    const long long i = r0 + r;",
        f"    if (i >= {m}) return;",
        "    " + " ".join(f"const {ct} x{p} = a[i * {a0} + {p}LL * {a1}];" for p in range(k)),
    ]
    for u in cols:
        dot = " + ".join(f"x{p} * b{u}_{p}" for p in range(k))
        lines.append(f"    if (on{u}) c[i * {n} + j0 + {u * BLOCK}] = {dot};")
    lines += ["  }", "}"]
    return named("\n".join(lines) + "\n", "thin")


def wide_matmul_kernel(m: int, n: int, k: int, a_strides, b_row: int, dtype,
                       count: int = 1) -> tuple[str, str]:
    """Name and source of ``c[m, n] = a[m, k] @ b[k, n]`` for few rows ``m`` and long
    contiguous rows of ``b`` (row stride ``b_row``): ``a`` is staged in shared memory; a
    block takes 32 columns, lane ``j`` one column, and its ``WARPS`` warps split K (warp
    ``w`` the terms ``w, w + WARPS, ...``: each a coalesced read of 32 consecutive values of
    ``b``); the warps' ``m`` partial sums a column are added in shared memory in warp order
    (the same result every run) and written coalesced.

    Example::

        >>> name, src = wide_matmul_kernel(10, 4096, 512, (512, 1), 4096, np.float32)
        >>> name.startswith("dg_wide_") and "__shared__ float as_[5120]" in src
        True
    """
    ct = ctype(dtype)
    a0, a1 = a_strides
    zero = c_literal(0, dtype)
    lines = [
        f'extern "C" __global__ void __launch_bounds__({BLOCK}) @KERNEL@(',
        *_signature(ct, count),
        f"  __shared__ {ct} as_[{m * k}];",
        f"  __shared__ {ct} part[{WARPS * m * 32}];",
        f"  for (int t = threadIdx.x; t < {m * k}; t += {BLOCK}) {{",
        f"    const int i = t / {k}, p = t % {k};",
        f"    as_[t] = a[(long long)i * {a0} + (long long)p * {a1}];",
        "  }",
        "  __syncthreads();",
        "  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;",
        "  const long long j = (long long)blockIdx.x * 32 + lane;",
        f"  const bool on = j < {n};",
        "  " + " ".join(f"{ct} acc{i} = {zero};" for i in range(m)),
        "#pragma unroll 8",
        f"  for (int p = w; p < {k}; p += {WARPS}) {{",
        f"    const {ct} x = on ? b[(long long)p * {b_row} + j] : {zero};",
        *(f"    acc{i} += as_[{i * k} + p] * x;" for i in range(m)),
        "  }",
        *(f"  part[({i} * {WARPS} + w) * 32 + lane] = acc{i};" for i in range(m)),
        "  __syncthreads();",
        f"  for (int i = w; i < {m}; i += {WARPS}) {{",
        f"    {ct} s = part[i * {WARPS * 32} + lane];",
        f"    for (int v = 1; v < {WARPS}; ++v) s += part[(i * {WARPS} + v) * 32 + lane];",
        f"    if (on) c[(long long)i * {n} + j] = s;",
        "  }",
        "}",
    ]
    return named("\n".join(lines) + "\n", "wide")


def matmul_kernel(m: int, n: int, k: int, a_strides, b_strides, dtype,
                  count: int = 1) -> tuple[str, str]:
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
        *_signature(ct, count),
        f"  const {it} t = ({it})blockIdx.x * {BLOCK} + ({it})threadIdx.x;",
        f"  if (t >= {m * n}) return;",
        f"  const {it} i = t / {max(n, 1)}, j = t % {max(n, 1)};",
        f"  {ct} acc = {c_literal(0, dtype)};",
        f"  for (int p = 0; p < {k}; ++p) "
        f"acc += a[i * {a0} + {w}p * {a1}] * b[{w}p * {b0} + j * {b1}];",
        "  c[t] = acc;",
        "}"]) + "\n"
    return named(template, "matmul")
