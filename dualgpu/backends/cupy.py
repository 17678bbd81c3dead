"""The CuPy backend. This is the only module of dualgpu that imports CuPy."""
from __future__ import annotations

import functools

from .base import Backend


class CupyBackend(Backend):
    name = "cupy"
    is_cupy = True

    def __init__(self):
        import cupy
        import cupyx
        import cupyx.scipy.sparse
        import cupyx.scipy.special

        self.xp = cupy
        self.cupyx = cupyx
        self.special = cupyx.scipy.special
        self.sparse = cupyx.scipy.sparse

    def is_array(self, x) -> bool:
        return isinstance(x, self.xp.ndarray)

    def is_sparse(self, x) -> bool:
        return self.sparse.issparse(x)

    def scatter_add(self, out, key, values):
        self.cupyx.scatter_add(out, key, values)
        return out

    def linear_operator_class(self):
        """cupyx's LinearOperator (HessianOperator subclasses it for CuPy inputs)."""
        from cupyx.scipy.sparse.linalg import LinearOperator

        return LinearOperator



@functools.lru_cache(maxsize=1)
def get_cupy_backend() -> CupyBackend:
    return CupyBackend()


def cupy_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


class CudaGraphRunner:
    """Replays a program as a captured CUDA graph once its shapes are known.

    The first call runs eagerly (it compiles the kernels); the second captures the program
    on a private stream and memory pool, with static input and output buffers; later calls
    copy the inputs into those buffers, launch the graph on the current stream and copy the
    outputs out (``config["cuda_graph_outputs"] = "reuse"`` returns the buffers themselves,
    overwritten by the next call). When capture fails (an op that synchronises with the
    host, a sparse or non-array value), the program keeps running eagerly.

    Example::

        >>> import cupy as cp
        >>> runner = CudaGraphRunner(lambda x: [cp.sin(x) * 2])
        >>> x = cp.ones(3)
        >>> outs = runner((x,))       # the first call runs eagerly (and compiles the kernels)
        >>> outs = runner((x,))       # the second captures the program, then replays it
        >>> runner.replays
        1
    """

    def __init__(self, fn):
        import threading

        self.fn = fn
        self.calls = 0
        self.nbytes = 0
        self.graph = None
        self.failed: str | None = None
        self.replays = 0
        self._lock = threading.Lock()
        self._last_stream = None

    def __call__(self, arrays, reuse_outputs: bool = False, max_bytes: int | None = None):
        return self.run(arrays, reuse_outputs, max_bytes)[0]

    def run(self, arrays, reuse_outputs: bool = False, max_bytes: int | None = None):
        """``(outputs, replayed)``: replayed outputs are views of the runner's buffers
        (``reuse_outputs``) or of one fresh block, never of an input."""
        if self.failed is not None or self.calls == 0 or (
                max_bytes is not None and self.nbytes > max_bytes):
            self.calls += 1
            outs = self.fn(*arrays)
            if self.calls == 1:
                self._check_graphable(arrays, outs)
            return outs, False
        with self._lock:
            if self.graph is None:
                try:
                    self._capture(arrays)
                except Exception as e:  # noqa: BLE001 - any failure means "run eagerly"
                    self.failed = f"{type(e).__name__}: {e}"
                    self.graph = None
                    return self.fn(*arrays), False
            if cupy_device_id() != self.device:
                return self.fn(*arrays), False
            return self._replay(arrays, reuse_outputs), True

    def _check_graphable(self, arrays, outs):
        import cupy

        both = list(arrays) + list(outs)
        if not all(isinstance(a, cupy.ndarray) for a in both):
            self.failed = "an input or output is not a dense CuPy array"
            return
        # replay copies every input and output once: worth it for small, launch-bound calls
        self.nbytes = sum(a.nbytes for a in both)

    @staticmethod
    def _copy(dst, src, stream):
        import cupy
        from cupy.cuda import runtime

        if src.flags.c_contiguous and src.dtype == dst.dtype:
            if src.nbytes:
                runtime.memcpyAsync(dst.data.ptr, src.data.ptr, src.nbytes,
                                    runtime.memcpyDeviceToDevice, stream.ptr)
        else:
            cupy.copyto(dst, src)

    def _capture(self, arrays):
        import cupy
        from cupy.cuda import runtime

        cur = cupy.cuda.get_current_stream()
        self.device = cupy_device_id()
        self.static_in = [cupy.empty(a.shape, dtype=a.dtype) for a in arrays]
        for dst, a in zip(self.static_in, arrays):
            self._copy(dst, a, cur)
        self.pool = cupy.cuda.MemoryPool()
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.stream.wait_event(cur.record())
        mode = getattr(runtime, "streamCaptureModeRelaxed", None)
        with cupy.cuda.using_allocator(self.pool.malloc), self.stream:
            warm = self.fn(*self.static_in)  # fills the private pool: no mallocs in capture
            del warm
            if mode is None:
                self.stream.begin_capture()
            else:
                self.stream.begin_capture(mode)
            try:
                outs = self.fn(*self.static_in)
                self._pack_outputs(outs)
            except BaseException:
                try:
                    self.stream.end_capture()
                except Exception:  # noqa: BLE001 - the capture is already broken
                    pass
                raise
            self.graph = self.stream.end_capture()
        self.static_out = [self._view(self.block, *layout) for layout in self.layout]
        cur.wait_event(self.stream.record())
        self._last_stream = cur

    def _pack_outputs(self, outs):
        """Inside the capture: copy every output into one block, so that a replay returns
        them with one allocation and one copy."""
        import cupy

        self.layout, offset = [], 0
        for o in outs:
            self.layout.append((tuple(o.shape), o.dtype, offset))
            offset += -(-o.nbytes // 256) * 256
        self.total = max(offset, 256)
        self.block = cupy.empty(self.total, dtype=cupy.uint8)
        for o, (shape, dtype, off) in zip(outs, self.layout):
            if o.size:
                cupy.copyto(self._view(self.block, shape, dtype, off), o)

    @staticmethod
    def _view(block, shape, dtype, offset):
        import cupy

        return cupy.ndarray(shape, dtype=dtype, memptr=block.data + offset)

    def _replay(self, arrays, reuse_outputs):
        import cupy

        cur = cupy.cuda.get_current_stream()
        if self._last_stream is not None and cur.ptr != self._last_stream.ptr:
            cur.wait_event(self._last_stream.record())
        self._last_stream = cur
        for dst, a in zip(self.static_in, arrays):
            self._copy(dst, a, cur)
        self.graph.launch(cur)
        self.replays += 1
        if reuse_outputs:
            return list(self.static_out)
        from cupy.cuda import runtime

        block = cupy.empty(self.total, dtype=cupy.uint8)
        runtime.memcpyAsync(block.data.ptr, self.block.data.ptr, self.total,
                            runtime.memcpyDeviceToDevice, cur.ptr)
        return [self._view(block, *layout) for layout in self.layout]


def cupy_device_id() -> int:
    import cupy

    return cupy.cuda.runtime.getDevice()


def _linalg_module():
    """CuPy's matmul module: its per-dtype cuBLAS compute type is what TF32 switches."""
    from cupy._core import _routines_linalg

    return _routines_linalg


class MatmulPrecision:
    """A reusable context that runs CuPy's float32 matmul/einsum library calls with the
    cuBLAS compute type of ``precision`` and restores the previous one afterwards.

    ``"tf32"`` is ``COMPUTE_TYPE_TF32`` (tensor cores, 10-bit mantissa products, float32
    accumulation); ``"float32"`` is ``COMPUTE_TYPE_DEFAULT`` (full float32, even when
    ``CUPY_TF32=1`` is set). CuPy keeps the compute type in one process-wide table, so a
    CuPy matmul of another thread made during the call sees it too.

    Example::

        >>> import cupy as cp
        >>> with MatmulPrecision("tf32"):
        ...     y = cp.ones((64, 64), dtype=cp.float32) @ cp.ones((64, 64), dtype=cp.float32)
    """

    __slots__ = ("precision", "_saved")

    def __init__(self, precision: str):
        self.precision = precision
        self._saved = []

    def _wanted(self, linalg) -> int:
        if self.precision == "tf32":
            return getattr(linalg, "COMPUTE_TYPE_TF32", 7)
        return getattr(linalg, "COMPUTE_TYPE_DEFAULT", 1)

    def __enter__(self):
        import numpy as np

        linalg = _linalg_module()
        previous = linalg.get_compute_type(np.float32)
        wanted = self._wanted(linalg)
        if previous != wanted:
            linalg.set_compute_type(np.float32, wanted)
            self._saved.append(previous)
        else:
            self._saved.append(None)
        return self

    def __exit__(self, *exc):
        import numpy as np

        previous = self._saved.pop()
        if previous is not None:
            _linalg_module().set_compute_type(np.float32, previous)
        return False
