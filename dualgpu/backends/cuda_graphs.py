"""CUDA-graph replay of compiled programs, with no copies of inputs or outputs.

A captured graph reads and writes fixed addresses. So a program keeps several graphs, each
keyed by the addresses (and strides) of the arrays it was captured on, and by the *output
slot* it writes: a block of device memory holding every output of one call, handed to the
caller as views. A call replays the graph of its input addresses and of a free slot; a slot
is free again once the caller has dropped every result of it (its memory is referenced by
nothing but the slot: a CPython reference count, the same fact that frees CuPy memory).

The policy (:class:`ReplayPolicy`: when to capture, which slot, which graph to evict) is pure
Python and tested on the CPU; :class:`CudaGraphRunner` applies it with CuPy.

* The first call runs eagerly (it compiles the kernels and learns the output layout).
* Input addresses seen twice become *hot*: that call captures a graph (on a private stream
  and memory pool; the program's GEMMs run on dualgpu's own cuBLAS handle, see
  :mod:`dualgpu.backends.cublas`, so they are captured too) and replays it.
* A call with cold addresses, or while every slot is held by the caller, runs eagerly.
* At most ``max_graphs`` graphs and ``max_slots`` slots per program (least recently used
  graphs are dropped).

Example (the policy alone)::

    >>> p = ReplayPolicy(max_graphs=2, max_slots=2)
    >>> p.hot("x@1"), p.hot("x@1")        # seen once: eager; twice: capture
    (False, True)
"""
from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from typing import Any

from .cublas import WORKSPACE_BYTES, CublasGemm

HOT_AFTER = 2        # a call whose input addresses were seen this many times is captured
SEEN_MAX = 256       # input-address keys remembered per program


class ReplayPolicy:
    """Which calls capture and replay, and what is kept: the bookkeeping of
    :class:`CudaGraphRunner` without CuPy.

    Example::

        >>> p = ReplayPolicy(max_graphs=1, max_slots=1)
        >>> p.add_graph(("k", 0), "g0")          # nothing evicted
        []
        >>> p.add_graph(("j", 0), "g1")          # an LRU of one: "g0" goes
        ['g0']
        >>> p.graph(("k", 0)) is None, p.graph(("j", 0))
        (True, 'g1')
    """

    def __init__(self, max_graphs: int = 16, max_slots: int = 3):
        self.max_graphs = max_graphs
        self.max_slots = max_slots
        self.graphs: OrderedDict = OrderedDict()   # (input key, slot index) -> graph
        self.seen: OrderedDict = OrderedDict()     # input key -> times seen
        self.slots: list = []
        self.reuse_slot: int | None = None   # the slot "reuse" calls write, once chosen

    def hot(self, key) -> bool:
        """Count a call with input key ``key``; True once it is worth a graph."""
        n = self.seen.pop(key, 0) + 1
        self.seen[key] = n
        while len(self.seen) > SEEN_MAX:
            self.seen.popitem(last=False)
        return n >= HOT_AFTER

    def graph(self, gkey):
        g = self.graphs.get(gkey)
        if g is not None:
            self.graphs.move_to_end(gkey)
        return g

    def add_graph(self, gkey, graph) -> list:
        """Keep ``graph``; returns the graphs evicted to stay within ``max_graphs``."""
        self.graphs[gkey] = graph
        self.graphs.move_to_end(gkey)
        evicted = []
        while len(self.graphs) > self.max_graphs:
            evicted.append(self.graphs.popitem(last=False)[1])
        return evicted

    def free_slot(self, reuse: bool, is_free, make):
        """Index of the slot a call writes: under ``reuse`` the reuse slot (documented: the
        next call overwrites it); else, or to choose the reuse slot, the first slot
        ``is_free`` says the caller has let go of, or a new one from ``make()`` while fewer
        than ``max_slots`` exist; else None. A slot written without ``reuse`` stops being
        the reuse slot: its results are the caller's until dropped."""
        if reuse and self.reuse_slot is not None:
            return self.reuse_slot
        s = None
        for i, slot in enumerate(self.slots):
            if is_free(slot):
                s = i
                break
        if s is None and len(self.slots) < self.max_slots:
            self.slots.append(make())
            s = len(self.slots) - 1
        if reuse:
            self.reuse_slot = s
        elif s is not None and s == self.reuse_slot:
            self.reuse_slot = None
        return s


class OutputSlot:
    """One block of device memory holding every output of a call, at fixed offsets."""

    def __init__(self, cupy, layout: list, total: int):
        self.block = cupy.empty(total, dtype=cupy.uint8)
        self.layout = layout
        self._cupy = cupy
        self.mem = self.block.data.mem
        self.baseline = sys.getrefcount(self.mem)

    def views(self) -> list:
        base = self.block.data
        return [self._cupy.ndarray(shape, dtype=dtype, memptr=base + off)
                for shape, dtype, off in self.layout]

    def overlaps(self, arrays) -> bool:
        """Whether any of ``arrays`` reads this slot's memory."""
        lo = self.block.data.ptr
        hi = lo + self.block.nbytes
        return any(lo <= a.data.ptr < hi for a in arrays)

    def is_free(self) -> bool:
        """No result of an earlier call is alive (nothing else references the memory)."""
        return sys.getrefcount(self.mem) <= self.baseline


def output_layout(outs) -> tuple[list, int]:
    """``([(shape, dtype, byte offset)], total bytes)``: outputs packed 256-byte aligned."""
    layout, offset = [], 0
    for o in outs:
        layout.append((tuple(o.shape), o.dtype, offset))
        offset += -(-o.nbytes // 256) * 256
    return layout, max(offset, 256)


class CudaGraphRunner:
    """Replays a program ``fn(*arrays, out=None) -> list of outputs`` as captured CUDA graphs
    (see the module docstring). ``fn`` must write its outputs into ``out`` when given.

    Example::

        >>> import cupy as cp
        >>> def fn(x, out=None):
        ...     y = cp.sin(x) * 2
        ...     if out is not None:
        ...         out[0][...] = y
        ...         y = out[0]
        ...     return [y]
        >>> runner = CudaGraphRunner(fn)
        >>> x = cp.ones(3)
        >>> outs = [runner.run((x,))[0] for _ in range(3)]  # eager, capture + replay, replay
        >>> runner.replays, runner.captures
        (2, 1)
    """

    def __init__(self, fn, max_graphs: int = 16, max_slots: int = 3):
        self.fn = fn
        self.policy = ReplayPolicy(max_graphs, max_slots)
        self.replays = 0
        self.captures = 0
        self.out_nbytes = 0
        self.failed: str | None = None
        self._layout: Any = None   # output_layout(outs), once learnt
        self._lock = threading.Lock()
        self._cp: Any = None       # the cupy module, once learnt
        self._stream: Any = None   # cupy.cuda.Stream and MemoryPool, made at the first capture
        self._pool: Any = None
        self._warm = False
        self._workspace = None
        self._last_stream = None
        self.device = None

    # -------------------------------------------------------------- the call
    def run(self, arrays, reuse_outputs: bool = False, max_bytes: int | None = None):
        """``(outputs, replayed)``: replayed outputs are views of a slot that no earlier
        result still uses (``reuse_outputs``: always the one reuse slot, overwritten by the
        next call)."""
        if self.failed is not None:
            return self.fn(*arrays), False
        if self._layout is None:
            # the first call (several at once under a threaded scheduler): eager, and it
            # learns the output layout; no graph before that is known
            outs = self.fn(*arrays)
            with self._lock:
                if self._layout is None and self.failed is None:
                    self._learn(arrays, outs)
            return outs, False
        if max_bytes is not None and self.out_nbytes > max_bytes:
            return self.fn(*arrays), False
        cp = self._cp
        if cp.cuda.runtime.getDevice() != self.device:
            return self.fn(*arrays), False
        key = tuple((a.data.ptr, a.strides) for a in arrays)
        with self._lock:
            if not self.policy.hot(key):
                return self.fn(*arrays), False
            s = self.policy.free_slot(reuse_outputs, OutputSlot.is_free, self._new_slot)
            if s is None:
                return self.fn(*arrays), False
            slot = self.policy.slots[s]
            if reuse_outputs and slot.overlaps(arrays):
                # a result of the last call passed back in: writing the one reused slot
                # while reading it would be a race (other slots are busy while read)
                return self.fn(*arrays), False
            graph = self.policy.graph((key, s))
            if graph is None:
                try:
                    graph = self._capture(arrays, slot)
                except Exception as e:  # noqa: BLE001 - any failure means "run eagerly"
                    self.failed = f"{type(e).__name__}: {e}"
                    return self.fn(*arrays), False
                evicted = self.policy.add_graph((key, s), graph)
                if evicted and self._last_stream is not None:
                    # an evicted graph may still be running: let it finish before it goes
                    self._last_stream.synchronize()
                del evicted
            return self._replay(graph, slot), True

    def _learn(self, arrays, outs):
        try:
            import cupy
        except ImportError:  # pragma: no cover - a runner only exists on CuPy
            self.failed = "CuPy is not importable"
            return
        self._cp = cupy
        if not all(isinstance(a, cupy.ndarray) for a in list(arrays) + list(outs)):
            self.failed = "an input or output is not a dense CuPy array"
            return
        self.device = cupy.cuda.runtime.getDevice()
        layout = output_layout(outs)
        self.out_nbytes = layout[1]
        self._layout = layout   # last: other threads test it without the lock

    def _new_slot(self) -> OutputSlot:
        return OutputSlot(self._cp, *self._layout)

    # -------------------------------------------------------------- capture and replay
    def _capture(self, arrays, slot: OutputSlot):
        cp = self._cp
        runtime = cp.cuda.runtime
        cur = cp.cuda.get_current_stream()
        if self._stream is None:
            self._stream = cp.cuda.Stream(non_blocking=True)
            self._pool = cp.cuda.MemoryPool()
        stream = self._stream
        stream.wait_event(cur.record())
        out = slot.views()
        gemm = CublasGemm.get()
        with cp.cuda.using_allocator(self._pool.malloc), stream:
            gemm.capture_workspace = self._gemm_workspace
            try:
                if not self._warm:  # fills the private pool: no allocation in the capture
                    self.fn(*arrays, out=out)
                    self._warm = True
                stream.begin_capture(runtime.streamCaptureModeRelaxed)
                try:
                    self.fn(*arrays, out=out)
                except BaseException:
                    try:
                        stream.end_capture()
                    except Exception:  # noqa: BLE001 - the capture is already broken
                        pass
                    raise
                graph = stream.end_capture()
            finally:
                gemm.capture_workspace = None
        cur.wait_event(stream.record())
        # _last_stream is left to _replay: the new graph shares the scratch memory of the
        # others, so its first launch too waits for the last replay (on another stream)
        self.captures += 1
        return graph

    def _gemm_workspace(self):
        """The cuBLAS workspace every graph of this program reads, made when its first
        product is captured (first in the warm-up run, outside the capture)."""
        if self._workspace is None:
            self._workspace = self._cp.empty(WORKSPACE_BYTES, dtype=self._cp.uint8)
        return self._workspace

    def _replay(self, graph, slot: OutputSlot) -> list:
        cur = self._cp.cuda.get_current_stream()
        last = self._last_stream
        if last is not None and cur.ptr != last.ptr:
            # graphs of one program share their scratch memory: one replay at a time
            cur.wait_event(last.record())
        self._last_stream = cur
        graph.launch(cur)
        self.replays += 1
        return slot.views()
