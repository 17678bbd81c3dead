"""Matrix products on dualgpu's own cuBLAS handle, so that a whole program -- its GEMMs
included -- can be captured into one CUDA graph (CuPy refuses its own cuBLAS calls during
stream capture, cupy issue 6290).

Two halves:

* :func:`gemm_layout` (pure Python, tested on the CPU): how a NumPy ``matmul`` of row-major
  strided operands maps onto one column-major ``cublasGemmStridedBatchedEx`` call -- which
  operand is transposed, the leading dimensions and batch strides -- or ``None`` when the
  strides cannot be expressed (the caller copies the operand first);
  :func:`emulate_gemm` runs such a layout with NumPy over flat buffers, the way cuBLAS reads
  memory, which is how the layouts are tested without a GPU;
* :class:`CublasGemm` (CuPy): one handle per thread and device, bound to the current stream
  with a preallocated workspace, host pointer mode (scalars are read when the call is made
  or captured), the compute type of the program's precision.

Row-major ``C = A @ B`` is computed as the column-major ``Cᵀ = Bᵀ Aᵀ``: cuBLAS's first
operand is ``B``, its second ``A``, and ``C`` is written contiguously with ``ldc = n``.

Under the precision ``"tf32x3"`` a float32 product runs on TF32 tensor cores with float32
accuracy: every operand is split into a TF32 part and the float32 remainder
(``x = hi + lo``, :func:`tf32_round`), and ``A @ B`` is computed as two TF32 products,
the small terms first, ``C = [Ahi | Alo] @ [Blo ; Bhi]``, then ``C += Ahi @ Bhi`` (cuBLAS's
``beta = 1``, a float32 add in the epilogue): three passes of the tensor cores, whose only
dropped term ``Alo @ Blo`` is ~2⁻²² relative (:func:`split_operands`). Only large products
are split (:func:`split_pays`); smaller ones run in float32, as fast. It is the algorithm
JAX calls ``TF32_TF32_F32_X3`` and CUTLASS "3xTF32". The small terms get an accumulator of
their own: summed into the large one inside the tensor cores, they measured 10× float32's
error. ``A`` is split in row blocks of at most :data:`SPLIT_BYTES`, so the temporaries stay
small next to the operands. An infinite operand entry has no finite remainder: where float32
gives ±inf, the split products give NaN.

Example::

    >>> lay = gemm_layout((4, 3), (3 * 8, 8), (3, 2), (8 * 2, 8), itemsize=8)
    >>> lay.op_b, lay.op_a, (lay.m, lay.n, lay.k), (lay.ld_b, lay.ld_a)
    ('N', 'N', (4, 2, 3), (2, 3))
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, NamedTuple

import numpy as np

# cuBLAS and CUDA enumerations (cublas_api.h, library_types.h)
_OP = {"N": 0, "T": 1}
_DATA_TYPE = {np.dtype(np.float32): 0, np.dtype(np.float64): 1}   # CUDA_R_32F, CUDA_R_64F
COMPUTE_32F = 68
COMPUTE_32F_FAST_TF32 = 77
COMPUTE_64F = 70
_GEMM_DEFAULT = -1
WORKSPACE_BYTES = 32 << 20   # cuBLAS's advice for Hopper when capturing graphs
SPLIT_BYTES = 64 << 20       # the largest block of the split left operand (tf32x3)
# tf32x3 splits a product only from this many multiply-adds, and when both sides of its
# output have SPLIT_MIN_SIDE or more: below that, float32 on the CUDA cores is as fast
# (H200, in CUDA graphs: 4096x784 @ 784x512 53.8 µs split, ~75 µs float32; a 10-wide output
# 44.8 µs split against 6.5 µs)
SPLIT_MIN_MNK = 1 << 31
SPLIT_MIN_SIDE = 256
STREAM_WORKSPACES = 8        # streams whose workspaces are kept (least recently used out)


class GemmLayout(NamedTuple):
    """One strided-batched column-major GEMM computing a row-major ``matmul``.

    ``op_b``/``op_a`` ("N" or "T") and ``ld_b``/``ld_a`` describe cuBLAS's first and second
    operands (``B`` and ``A`` of the row-major product); ``m, n, k`` are the row-major sizes
    (``C`` is ``m x n``); strides are in elements; ``out_shape`` is NumPy's result shape.
    """

    op_b: str
    op_a: str
    m: int
    n: int
    k: int
    ld_b: int
    ld_a: int
    batch: int
    stride_b: int
    stride_a: int
    out_shape: tuple

    @property
    def flops(self) -> int:
        return 2 * self.batch * self.m * self.n * self.k


def _as_matrices(shape, strides, vector_axis: int):
    """``(batch shape, batch strides, (rows, cols), (row stride, col stride))`` of an operand;
    a 1-D operand is a row (``vector_axis=0``, left of ``@``) or a column vector."""
    shape, strides = tuple(shape), tuple(strides)
    if len(shape) == 1:
        if vector_axis == 0:
            return (), (), (1, shape[0]), (0, strides[0])
        return (), (), (shape[0], 1), (strides[0], 0)
    return shape[:-2], strides[:-2], shape[-2:], strides[-2:]


def _column_major(rows: int, cols: int, s_row: int, s_col: int):
    """``(op, ld)`` such that cuBLAS reads the *transpose* of the row-major ``rows x cols``
    matrix with strides ``(s_row, s_col)`` as ``op(M)`` of a column-major ``M`` with leading
    dimension ``ld``; ``None`` when no such ``M`` exists (overlapping or 2-D strided)."""
    # a unit dimension has no stride of its own: pick the one that makes the layout valid
    if cols == 1:
        s_col = 1
    if rows == 1:
        s_row = max(cols, 1) if s_col == 1 else 1
    if s_col == 1 and s_row >= max(cols, 1):
        return "N", max(s_row, 1)          # the transpose is column-major cols x rows
    if s_row == 1 and s_col >= max(rows, 1):
        return "T", max(s_col, 1)          # the matrix itself is column-major rows x cols
    return None


def _batch_stride(batch_shape, shape, strides):
    """The single element stride that walks an operand's batch (its axes broadcast to
    ``batch_shape``), or ``None`` when its batch axes do not collapse to one stride."""
    offset = len(batch_shape) - len(shape)
    eff = [0] * offset + [0 if n == 1 else s for n, s in zip(shape, strides)]
    sizes = list(batch_shape)
    live = [(n, s) for n, s in zip(sizes, eff) if n != 1]
    if not live:
        return 0
    if all(s == 0 for _, s in live):
        return 0
    # the batch must be one arithmetic progression: inner axis stride s, next n*s, ...
    step = live[-1][1]
    if step < 0:
        return None   # a reversed batch: whether cuBLAS takes a negative stride is unchecked
    expect = step
    for n, s in reversed(live):
        if s != expect:
            return None
        expect = s * n
    return step


def gemm_layout(a_shape, a_strides, b_shape, b_strides, itemsize: int):
    """The :class:`GemmLayout` of ``a @ b`` (NumPy ``matmul`` semantics, strides in bytes),
    or ``None`` when an operand's strides cannot be handed to cuBLAS as they are.

    Example (``b`` is the transpose of a contiguous array: cuBLAS reads it transposed)::

        >>> lay = gemm_layout((5, 4), (32, 8), (4, 6), (8, 32), itemsize=8)
        >>> lay.op_b, lay.ld_b, lay.op_a, lay.ld_a
        ('T', 4, 'N', 4)
    """
    if any(s % itemsize for s in tuple(a_strides) + tuple(b_strides)):
        return None
    a_el = [s // itemsize for s in a_strides]
    b_el = [s // itemsize for s in b_strides]
    a_bshape, a_bstr, (m, k), (sa_r, sa_c) = _as_matrices(a_shape, a_el, 0)
    b_bshape, b_bstr, (k2, n), (sb_r, sb_c) = _as_matrices(b_shape, b_el, 1)
    if k != k2 or min(m, n, k) == 0:
        return None
    try:
        batch_shape = tuple(np.broadcast_shapes(a_bshape, b_bshape))
    except ValueError:
        return None
    batch = int(np.prod(batch_shape, dtype=np.int64)) if batch_shape else 1
    if batch == 0:
        return None
    ca = _column_major(m, k, sa_r, sa_c)
    cb = _column_major(k, n, sb_r, sb_c)
    stride_a = _batch_stride(batch_shape, a_bshape, a_bstr)
    stride_b = _batch_stride(batch_shape, b_bshape, b_bstr)
    if ca is None or cb is None or stride_a is None or stride_b is None:
        return None
    out_shape = batch_shape + (m, n)
    if len(a_shape) == 1:
        out_shape = out_shape[:-2] + out_shape[-1:]
    if len(b_shape) == 1:
        out_shape = out_shape[:-1]
    return GemmLayout(cb[0], ca[0], m, n, k, cb[1], ca[1], batch, stride_b, stride_a,
                      out_shape)


def emulate_gemm(lay: GemmLayout, a_flat, a_offset: int, b_flat, b_offset: int):
    """Run ``lay`` with NumPy on flat element buffers the way cuBLAS addresses memory
    (column-major, ``op``, leading dimensions, batch strides); returns the row-major
    ``(batch, m, n)`` result. For testing layouts without a GPU.

    Example::

        >>> a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
        >>> lay = gemm_layout(a.shape, a.strides, b.shape, b.strides, 8)
        >>> np.array_equal(emulate_gemm(lay, a.ravel(), 0, b.ravel(), 0)[0], a @ b)
        True
    """

    def read(flat, offset, op, ld, rows, cols, stride, i):
        # the column-major operand op(M) of size rows x cols
        r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        if op == "N":
            idx = r + c * ld
        else:
            idx = c + r * ld
        return flat[offset + i * stride + idx]

    out = np.empty((lay.batch, lay.m, lay.n), dtype=np.result_type(a_flat, b_flat))
    for i in range(lay.batch):
        first = read(b_flat, b_offset, lay.op_b, lay.ld_b, lay.n, lay.k, lay.stride_b, i)
        second = read(a_flat, a_offset, lay.op_a, lay.ld_a, lay.k, lay.m, lay.stride_a, i)
        out[i] = (first @ second).T   # column-major C^T (n x m) is row-major C
    return out


def gemm_dtype_ok(dtype) -> bool:
    """Whether cuBLAS runs this dtype here (float32, float64)."""
    return np.dtype(dtype) in _DATA_TYPE


def compute_type(dtype, precision: str) -> int:
    """The cuBLAS compute type of a product of ``dtype`` under ``precision``."""
    if np.dtype(dtype) == np.float64:
        return COMPUTE_64F
    return COMPUTE_32F_FAST_TF32 if precision == "tf32" else COMPUTE_32F


# the split ``x = hi + lo`` of a float32 into its TF32 rounding and the exact remainder; the
# tensor cores read ``hi`` exactly and ``lo`` to 10 bits, so ``hi + lo`` carries 21 bits
TF32_SPLIT_PREAMBLE = r"""
__device__ __forceinline__ float dg_tf32_round(float x) {
  unsigned u = __float_as_uint(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;              /* inf, nan: as they are */
  unsigned r = (u + 0x1000u) & 0xffffe000u;                    /* nearest, ties away */
  if ((r & 0x7f800000u) == 0x7f800000u) r = u & 0xffffe000u;   /* would overflow: truncate */
  return __uint_as_float(r);
}
"""
TF32_SPLIT_BODY = "hi = dg_tf32_round(x); lo = x - hi;"


def tf32_round(x):
    """NumPy's twin of the kernel's rounding: float32 ``x`` to the nearest TF32 value (10-bit
    mantissa, ties away from zero), kept in float32; ``x - tf32_round(x)`` is exact.

    Example::

        >>> x = np.float32(1 + 2 ** -11 + 2 ** -20)
        >>> float(tf32_round(x)) == 1 + 2 ** -10, float(x - tf32_round(x)) == -2 ** -11 + 2 ** -20
        (True, True)
    """
    x = np.asarray(x, dtype=np.float32)
    u = x.view(np.uint32)
    special = (u & np.uint32(0x7F800000)) == np.uint32(0x7F800000)
    r = (u + np.uint32(0x1000)) & np.uint32(0xFFFFE000)
    r = np.where((r & np.uint32(0x7F800000)) == np.uint32(0x7F800000),
                 u & np.uint32(0xFFFFE000), r)
    return np.where(special, u, r).astype(np.uint32).view(np.float32)


def tf32_split_numpy(x, hi, lo) -> None:
    """What the split kernel does, in NumPy (for the CPU tests): ``hi = tf32(x)``,
    ``lo = x - tf32(x)``, written into the given (possibly strided) views."""
    h = tf32_round(x)
    hi[...] = h
    lo[...] = np.asarray(x, np.float32) - h


def split_operands(a: Any, b: Any, xp: Any, split: Any) -> tuple[Any, Any]:
    """``(a2, b2)`` with ``a2 @ b2 = Ahi·Blo + Alo·Bhi`` (the small terms), and ``Ahi``,
    ``Bhi`` inside them (:func:`large_parts`): ``a2`` is ``[Ahi | Alo]`` along ``a``'s last
    axis (:func:`split_left`), ``b2`` is ``[Blo ; Bhi]`` along the contracted axis of ``b``,
    its first for a vector (:func:`split_right`). ``split(x, hi, lo)`` writes the parts of
    ``x`` into two views.

    Example (the split of NumPy, exact for values with a short mantissa, whose ``lo`` is 0)::

        >>> a, b = np.ones((2, 3), np.float32), np.full((3, 4), 0.5, np.float32)
        >>> a2, b2 = split_operands(a, b, np, tf32_split_numpy)
        >>> ahi, bhi = large_parts(a2, b2)
        >>> a2.shape, b2.shape, bool(np.all(a2 @ b2 + ahi @ bhi == a @ b))
        ((2, 6), (6, 4), True)
    """
    return split_left(a, xp, split), split_right(b, a.shape[-1], xp, split)


def large_parts(a2, b2):
    """``(Ahi, Bhi)``: the TF32 parts inside split operands (views, no copy)."""
    k = a2.shape[-1] // 2
    return a2[..., :k], (b2[k:] if b2.ndim == 1 else b2[..., k:, :])


def _unit_rows(x) -> bool:
    """A matrix stored column by column (a transposed view): split it in that order, so
    the kernel reads and writes memory contiguously."""
    return x.ndim == 2 and x.strides[0] == x.itemsize and x.strides[1] != x.itemsize


def split_left(a, xp, split):
    """``[Ahi | Alo]``: the left operand's parts side by side along its last axis (stored
    column by column when ``a`` is)."""
    k = a.shape[-1]
    if _unit_rows(a):
        t = xp.empty((2 * k, a.shape[0]), dtype=a.dtype)
        split(a.T, t[:k], t[k:])
        return t.T
    a2 = xp.empty(a.shape[:-1] + (2 * k,), dtype=a.dtype)
    split(a, a2[..., :k], a2[..., k:])
    return a2


def split_right(b, k: int, xp, split):
    """``[Blo ; Bhi]``: the right operand's parts stacked along its contracted axis."""
    if b.ndim == 1:
        b2 = xp.empty((2 * k,), dtype=b.dtype)
        split(b, b2[k:], b2[:k])
        return b2
    if _unit_rows(b):
        t = xp.empty((b.shape[1], 2 * k), dtype=b.dtype)
        split(b.T, t[:, k:], t[:, :k])
        return t.T
    b2 = xp.empty(b.shape[:-2] + (2 * k, b.shape[-1]), dtype=b.dtype)
    split(b, b2[..., k:, :], b2[..., :k, :])
    return b2


def split_pays(lay: GemmLayout) -> bool:
    """Whether tf32x3 splits this product (else it runs in float32, as accurate).

    Example::

        >>> big = gemm_layout((51200, 768), (3072, 4), (768, 768), (3072, 4), itemsize=4)
        >>> thin = gemm_layout((4096, 512), (2048, 4), (512, 10), (40, 4), itemsize=4)
        >>> split_pays(big), split_pays(thin)
        (True, False)
    """
    return (lay.batch * lay.m * lay.n * lay.k >= SPLIT_MIN_MNK
            and min(lay.m, lay.n) >= SPLIT_MIN_SIDE)


def split_rows(m: int, k: int, itemsize: int = 4) -> int:
    """Rows of a ``m x k`` left operand split at a time under tf32x3 (its block of ``2k``
    columns stays within :data:`SPLIT_BYTES`).

    Example::

        >>> split_rows(51200, 768), split_rows(100, 768)
        (10922, 100)
    """
    return max(1, min(m, SPLIT_BYTES // (2 * k * itemsize)))


_ONE: dict[np.dtype, np.ndarray] = {np.dtype(np.float32): np.ones(1, np.float32),
                                    np.dtype(np.float64): np.ones(1)}
_ZERO: dict[np.dtype, np.ndarray] = {np.dtype(np.float32): np.zeros(1, np.float32),
                                     np.dtype(np.float64): np.zeros(1)}


def loaded_library(prefix: str) -> str | None:
    """The path of the shared library whose file name starts with ``prefix`` that this
    process has loaded (read from ``/proc/self/maps``), or None.

    Example::

        >>> loaded_library("libdualgpu_nothing.so") is None
        True
    """
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                if line.rsplit("/", 1)[-1].strip().startswith(prefix):
                    return line[line.index("/"):].strip()
    except OSError:  # pragma: no cover - not Linux
        pass
    return None


def _cublas_library():
    """The cuBLAS shared library CuPy loaded (so both use one copy), through ctypes: CuPy's
    own wrappers refuse every cuBLAS call while a stream is being captured."""
    import ctypes
    import ctypes.util

    from cupy_backends.cuda.libs import cublas

    cublas.destroy(cublas.create())   # makes sure the library is loaded in this process
    lib = ctypes.CDLL(loaded_library("libcublas.so") or ctypes.util.find_library("cublas"))
    vp, i32, i64, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_size_t
    lib.cublasCreate_v2.argtypes = [ctypes.POINTER(vp)]
    lib.cublasDestroy_v2.argtypes = [vp]
    lib.cublasSetStream_v2.argtypes = [vp, vp]
    lib.cublasSetWorkspace_v2.argtypes = [vp, vp, sz]
    lib.cublasGemmEx.argtypes = [vp, i32, i32, i32, i32, i32, vp, vp, i32, i32, vp, i32, i32,
                                 vp, vp, i32, i32, i32, i32]
    lib.cublasGemmStridedBatchedEx.argtypes = [
        vp, i32, i32, i32, i32, i32, vp, vp, i32, i32, i64, vp, i32, i32, i64, vp, vp, i32,
        i32, i64, i32, i32, i32]
    return lib


class CublasError(RuntimeError):
    """A cuBLAS call returned an error status."""


def _check(status: int, what: str) -> None:
    if status != 0:
        raise CublasError(f"{what} failed with cuBLAS status {status}")


class CublasGemm:
    """GEMMs on dualgpu's own cuBLAS handle (one per thread and device), bound to the current
    CuPy stream with a preallocated workspace, so a stream capture can hold them.

    Example::

        >>> import cupy as cp
        >>> a, b = cp.ones((64, 32), cp.float32), cp.ones((32, 16), cp.float32)
        >>> c = CublasGemm.get().matmul(a, b, "float32")
        >>> float(c[0, 0])
        32.0
    """

    _local = threading.local()
    _lib: Any = None  # cuBLAS's bindings (cupy_backends), loaded once
    _split_kernel = None

    @classmethod
    def get(cls) -> CublasGemm:
        import cupy

        dev = cupy.cuda.runtime.getDevice()
        per_thread = cls._local.__dict__.setdefault("handles", {})
        h = per_thread.get(dev)
        if h is None:
            h = per_thread[dev] = cls()
        return h

    def __init__(self):
        import ctypes

        import cupy

        if CublasGemm._lib is None:
            CublasGemm._lib = _cublas_library()
        self._cp = cupy
        handle = ctypes.c_void_p()
        _check(self._lib.cublasCreate_v2(ctypes.byref(handle)), "cublasCreate")
        self.handle = handle.value
        # one workspace per stream: two streams running products at once never share one
        self._workspaces: OrderedDict = OrderedDict()
        # set by a graph capture: returns the workspace its graphs keep (made on first use,
        # so a captured program without products holds none)
        self.capture_workspace = None
        self._bound = None

    def __del__(self):
        try:
            self._lib.cublasDestroy_v2(self.handle)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _workspace(self, stream: int):
        if self.capture_workspace is not None:
            return self.capture_workspace()
        ws = self._workspaces.get(stream)
        if ws is not None:
            self._workspaces.move_to_end(stream)
        else:
            # allocated while ``stream`` is current: CuPy's pool reuses it only in that
            # stream's order once it is dropped
            ws = self._workspaces[stream] = self._cp.empty(WORKSPACE_BYTES, self._cp.uint8)
            while len(self._workspaces) > STREAM_WORKSPACES:
                self._workspaces.popitem(last=False)
        return ws

    def _bind(self):
        stream = self._cp.cuda.get_current_stream().ptr
        ws = self._workspace(stream)
        key = (stream, ws.data.ptr)
        if key != self._bound:
            # cublasSetStream resets the workspace to cuBLAS's default pool: set ours after
            _check(self._lib.cublasSetStream_v2(self.handle, stream), "cublasSetStream")
            _check(self._lib.cublasSetWorkspace_v2(self.handle, ws.data.ptr, ws.nbytes),
                   "cublasSetWorkspace")
            self._bound = key

    def run(self, lay: GemmLayout, a, b, out, precision: str) -> None:
        """``out[...] = a @ b`` by ``lay`` (``out`` C-contiguous of ``lay.out_shape``)."""
        dt = np.dtype(a.dtype)
        self._bind()
        if precision == "tf32x3" and dt == np.float32 and split_pays(lay):
            self._run_tf32x3(a, b, out)
        else:
            self._call(lay, a, b, out, compute_type(dt, precision))

    def _split(self, x, hi, lo) -> None:
        kernel = CublasGemm._split_kernel
        if kernel is None:
            kernel = CublasGemm._split_kernel = self._cp.ElementwiseKernel(
                "float32 x", "float32 hi, float32 lo", TF32_SPLIT_BODY, "dualgpu_tf32_split",
                preamble=TF32_SPLIT_PREAMBLE)
        kernel(x, hi, lo)

    def _run_tf32x3(self, a, b, out) -> None:
        """``out = a @ b`` from the split operands: the small terms, then the large ones
        added by cuBLAS's epilogue; ``a`` split a block of rows at a time when it is a
        matrix (each block of ``out`` is its own product)."""
        cp = self._cp
        if a.ndim > 2 and b.ndim == 2 and a.flags.c_contiguous:
            # a batch of left operands against one right operand is one tall matrix
            a, out = a.reshape(-1, a.shape[-1]), out.reshape(-1, out.shape[-1])
        if a.ndim == 2 and out.ndim == 2:
            rows = split_rows(a.shape[0], a.shape[1])
            b2 = split_right(b, a.shape[1], cp, self._split)
            for r0 in range(0, a.shape[0], rows):
                self._split_product(split_left(a[r0:r0 + rows], cp, self._split), b2,
                                    out[r0:r0 + rows])
            return
        self._split_product(*split_operands(a, b, cp, self._split), out)

    def _split_product(self, a2, b2, out) -> None:
        ct = COMPUTE_32F_FAST_TF32
        self._call(gemm_layout(a2.shape, a2.strides, b2.shape, b2.strides, 4), a2, b2, out,
                   ct)
        ahi, bhi = large_parts(a2, b2)
        self._call(gemm_layout(ahi.shape, ahi.strides, bhi.shape, bhi.strides, 4), ahi, bhi,
                   out, ct, accumulate=True)

    def _call(self, lay: GemmLayout, a, b, out, ct: int, accumulate: bool = False) -> None:
        """One cuBLAS call: ``out = a @ b``, or ``out += a @ b`` with ``accumulate``."""
        lib, dt = self._lib, np.dtype(a.dtype)
        t = _DATA_TYPE[dt]
        alpha = _ONE[dt].ctypes.data
        beta = (_ONE if accumulate else _ZERO)[dt].ctypes.data
        m, n, k = lay.m, lay.n, lay.k
        if lay.batch == 1:
            status = lib.cublasGemmEx(
                self.handle, _OP[lay.op_b], _OP[lay.op_a], n, m, k, alpha,
                b.data.ptr, t, lay.ld_b, a.data.ptr, t, lay.ld_a, beta,
                out.data.ptr, t, n, ct, _GEMM_DEFAULT)
        else:
            status = lib.cublasGemmStridedBatchedEx(
                self.handle, _OP[lay.op_b], _OP[lay.op_a], n, m, k, alpha,
                b.data.ptr, t, lay.ld_b, lay.stride_b, a.data.ptr, t, lay.ld_a,
                lay.stride_a, beta, out.data.ptr, t, n, m * n, lay.batch, ct,
                _GEMM_DEFAULT)
        _check(status, "cublasGemmEx")

    def matmul(self, a, b, precision: str = "float32", out=None):
        """``a @ b`` (NumPy semantics) through this handle; operands whose strides cuBLAS
        cannot take are copied first. ``out`` (C-contiguous, right shape) receives it."""
        prepared = gemm_operands(a, b, self._cp)
        if prepared is None:
            raise ValueError(f"no cuBLAS product for {a.shape} @ {b.shape}")
        a, b, lay = prepared
        if out is None:
            out = self._cp.empty(lay.out_shape, dtype=a.dtype)
        self.run(lay, a, b, out, precision)
        return out


def gemm_operands(a, b, xp):
    """``(a, b, layout)`` for one cuBLAS call computing ``a @ b``: the operands as they are
    when :func:`gemm_layout` takes their strides, else C-contiguous copies; None for an
    empty product or one no layout expresses.

    Example::

        >>> a, b = np.ones((4, 6))[:, ::2], np.ones((3, 2))
        >>> a2, b2, lay = gemm_operands(a, b, np)   # a's columns are strided: copied
        >>> a2.flags.c_contiguous, lay.m, lay.n, lay.k
        (True, 4, 2, 3)
    """
    lay = gemm_layout(a.shape, a.strides, b.shape, b.strides, a.itemsize)
    if lay is None:
        if 0 in a.shape or 0 in b.shape:
            return None
        a, b = xp.ascontiguousarray(a), xp.ascontiguousarray(b)
        lay = gemm_layout(a.shape, a.strides, b.shape, b.strides, a.itemsize)
        if lay is None:
            return None
    return a, b, lay
