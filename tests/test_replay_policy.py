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
    p.add_graph("a", 1)
    p.add_graph("b", 2)
    assert p.graph("a") == 1       # "a" used: "b" is now the oldest
    p.add_graph("c", 3)
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


def test_output_layout_is_aligned_and_covers_every_output():
    outs = [np.zeros(3, np.float32), np.zeros((), np.float64), np.zeros((70, 2))]
    layout, total = output_layout(outs)
    offsets = [off for _, _, off in layout]
    assert offsets == [0, 256, 512]
    assert all(off % 256 == 0 for off in offsets)
    assert total >= offsets[-1] + outs[-1].nbytes
    assert [(shape, dt) for shape, dt, _ in layout] == [((3,), np.float32), ((), np.float64),
                                                        ((70, 2), np.float64)]
