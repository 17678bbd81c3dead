"""The CUDA-graph replay policy (backends/cuda_graphs.py) on the CPU: when a call captures,
which output slot it writes, and what is evicted. The GPU half is tests/gpu/test_engine_gpu.py."""
from __future__ import annotations

import numpy as np

from dualgpu.backends.cuda_graphs import HOT_AFTER, SEEN_MAX, ReplayPolicy, output_layout


def test_addresses_turn_hot_on_their_second_call():
    p = ReplayPolicy()
    assert HOT_AFTER == 2
    assert [p.hot("a"), p.hot("b"), p.hot("a"), p.hot("a"), p.hot("b")] == \
        [False, False, True, True, True]


def test_seen_addresses_are_bounded():
    p = ReplayPolicy()
    for i in range(SEEN_MAX + 10):
        p.hot(i)
    assert len(p.seen) == SEEN_MAX
    assert not p.hot(0)            # forgotten: cold again
    assert p.hot(SEEN_MAX + 9)     # remembered


def test_graphs_are_least_recently_used():
    p = ReplayPolicy(max_graphs=2)
    assert p.add_graph("a", 1) == [] and p.add_graph("b", 2) == []
    assert p.graph("a") == 1       # "a" used: "b" is now the oldest
    assert p.add_graph("c", 3) == [2]   # the runner waits for an evicted graph to finish
    assert p.graph("b") is None and p.graph("a") == 1 and p.graph("c") == 3


class _Slot:
    def __init__(self):
        self.held = False


def _free(slot):
    return not slot.held


def test_slots_are_reused_once_released_and_bounded():
    p = ReplayPolicy(max_slots=2)
    s0 = p.free_slot(False, _free, _Slot)
    assert s0 == 0
    p.slots[0].held = True          # the caller keeps the results of slot 0
    assert p.free_slot(False, _free, _Slot) == 1
    p.slots[1].held = True
    assert p.free_slot(False, _free, _Slot) is None   # all held, at the bound: eager
    p.slots[0].held = False
    assert p.free_slot(False, _free, _Slot) == 0
    assert len(p.slots) == 2


def test_reuse_always_writes_slot_zero():
    p = ReplayPolicy(max_slots=2)
    assert p.free_slot(True, _free, _Slot) == 0
    p.slots[0].held = True
    assert p.free_slot(True, _free, _Slot) == 0      # documented: overwritten


def test_reuse_never_overwrites_results_handed_out_under_copy():
    """Switching ``cuda_graph_outputs`` to "reuse" must not overwrite a result the caller
    got, and still holds, under "copy" (those are promised fresh); only the reuse slot's
    own results are overwritten by the next reuse call."""
    p = ReplayPolicy(max_slots=2)
    assert p.free_slot(False, _free, _Slot) == 0
    p.slots[0].held = True                       # a "copy" result, kept
    r = p.free_slot(True, _free, _Slot)
    assert r == 1, "the reuse slot must not be a slot whose results are held"
    p.slots[1].held = True                       # reuse results held: overwritten anyway
    assert p.free_slot(True, _free, _Slot) == 1
    assert p.free_slot(False, _free, _Slot) is None   # copy: both held, eager
    p.slots[1].held = False
    assert p.free_slot(False, _free, _Slot) == 1      # copy takes the free reuse slot...
    p.slots[1].held = True
    assert p.free_slot(True, _free, _Slot) is None    # ...so reuse has none left: eager
    p.slots[0].held = False
    assert p.free_slot(True, _free, _Slot) == 0


def test_output_layout_is_aligned_and_covers_every_output():
    outs = [np.zeros(3, np.float32), np.zeros((), np.float64), np.zeros((70, 2))]
    layout, total = output_layout(outs)
    offsets = [off for _, _, off in layout]
    assert offsets == [0, 256, 512]
    assert all(off % 256 == 0 for off in offsets)
    assert total >= offsets[-1] + outs[-1].nbytes
    assert [(shape, dt) for shape, dt, _ in layout] == [((3,), np.float32), ((), np.float64),
                                                        ((70, 2), np.float64)]


# ------------------------------------------------------------------ the runner, fake CuPy
def _fake_cupy(launches: list):
    """Just enough CuPy for :class:`CudaGraphRunner`: arrays with addresses, memory whose
    references are counted like CuPy's (views hold it), and streams ordered by vector
    clocks (``record``/``wait_event``); a graph's launch is logged with its stream's clock."""
    import contextlib
    import itertools
    import threading
    import types

    addresses, stream_ids, local = itertools.count(1 << 20, 1 << 16), itertools.count(1), \
        threading.local()

    class Memory:
        def __init__(self):
            self.ptr = next(addresses)

    class MemoryPointer:
        def __init__(self, mem, offset=0):
            self.mem, self.offset = mem, offset

        @property
        def ptr(self):
            return self.mem.ptr + self.offset

        def __add__(self, offset):
            return MemoryPointer(self.mem, self.offset + offset)

    class ndarray:  # noqa: N801 - CuPy's name
        def __init__(self, shape, dtype=np.float64, memptr=None):
            self.shape = tuple(shape) if isinstance(shape, tuple) else (shape,)
            self.dtype = np.dtype(dtype)
            self.nbytes = int(np.prod(self.shape)) * self.dtype.itemsize
            self.data = memptr if memptr is not None else MemoryPointer(Memory())
            self.strides = tuple(int(np.prod(self.shape[i + 1:])) * self.dtype.itemsize
                                 for i in range(len(self.shape)))

    class Event:
        def __init__(self, clock):
            self.clock = dict(clock)

    class Graph:
        def launch(self, stream):
            launches.append((self, stream.ptr, stream.tick()))

    class Stream:
        def __init__(self, non_blocking=False):
            self.ptr = next(stream_ids)
            self.clock = {self.ptr: 0}

        def tick(self):
            self.clock[self.ptr] += 1
            return dict(self.clock)

        def record(self):
            return Event(self.tick())

        def wait_event(self, event):
            for s, t in event.clock.items():
                self.clock[s] = max(self.clock.get(s, 0), t)

        def __enter__(self):
            local.__dict__.setdefault("stack", []).append(self)
            return self

        def __exit__(self, *exc):
            local.stack.pop()

        def begin_capture(self, mode=None):
            pass

        def end_capture(self):
            return Graph()

    null = Stream()
    cp = types.ModuleType("cupy")
    cp.ndarray, cp.uint8 = ndarray, np.uint8
    cp.empty = lambda shape, dtype=np.float64: ndarray(shape, dtype)
    cp.cuda = types.SimpleNamespace(
        Stream=Stream, get_current_stream=lambda: (getattr(local, "stack", None) or [null])[-1],
        MemoryPool=lambda: types.SimpleNamespace(malloc=None),
        using_allocator=lambda malloc: contextlib.nullcontext(),
        runtime=types.SimpleNamespace(getDevice=lambda: 0, streamCaptureModeRelaxed=1))
    return cp


def _fake_runner(monkeypatch):
    import sys
    import types

    import dualgpu.backends.cuda_graphs as cg

    launches: list = []
    cp = _fake_cupy(launches)
    monkeypatch.setitem(sys.modules, "cupy", cp)
    handle = types.SimpleNamespace(capture_workspace=None)
    monkeypatch.setattr(cg, "CublasGemm", types.SimpleNamespace(get=lambda: handle))

    def fn(x, out=None):
        return list(out) if out is not None else [cp.empty(x.shape)]

    return cg.CudaGraphRunner(fn), cp, launches


def test_a_capture_on_another_stream_waits_for_the_last_replay(monkeypatch):
    """The graphs of a program share their scratch memory (one private pool, one cuBLAS
    workspace): a graph captured and launched on stream 2 must wait for the replay still
    running on stream 1, as a replay of an existing graph does."""
    runner, cp, launches = _fake_runner(monkeypatch)
    x1, x2 = cp.empty((3,)), cp.empty((3,))
    s1, s2 = cp.cuda.Stream(), cp.cuda.Stream()
    runner.run((x1,))                      # eager: learns the layout
    with s1:
        for _ in range(3):                 # cold, capture + replay, replay
            runner.run((x1,))
    with s2:
        for _ in range(2):                 # cold (new address), capture + replay
            runner.run((x2,))
    assert runner.captures == 2 and len(launches) == 3
    for (_, s_a, clock_a), (_, s_b, clock_b) in zip(launches, launches[1:]):
        assert clock_b.get(s_a, 0) >= clock_a[s_a], \
            f"a launch on stream {s_b} does not wait for the launch on stream {s_a}"
