"""Tiny-program kernels (:mod:`dualgpu.codegen.tiny`) run on the CPU as a block of many
threads, to check their ``__syncthreads()``: each CUDA thread is a host thread, and they
take turns -- between two barriers, thread 0 runs its whole part, then thread 1, ... (or
the reverse order) -- so a stage that reads what another thread writes with no barrier
between reads it too early (or too late) in one of the two orders, every time. Shared
arrays start as all-ones bytes (NaN, -1), like the outputs (NaN, -12345).

``run_tiny_block(kernel, arrays, nthreads, reverse)`` returns the outputs.
"""
from __future__ import annotations

import ctypes
import hashlib
import re
import subprocess

import numpy as np
from tiny_harness import _DIR, GXX, PRELUDE

BLOCK_PRELUDE = PRELUDE.replace(
    "#define __shared__ static\n#define __syncthreads() ((void)0)\n"
    "static struct { unsigned x; } threadIdx = {0}, blockDim = {1};\n", "") + r"""
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>
struct Dim { unsigned x; };
static thread_local Dim threadIdx;
static Dim blockDim;
alignas(16) static unsigned char shmem[1 << 16];
static std::mutex mu;
static std::condition_variable cv[1024];  // one a thread: a turn wakes only its thread
static unsigned turn, reverse_order;
// the rank of thread t in the turn order, and (the map is its own inverse) the thread of a rank
static unsigned rank_of(unsigned t) { return reverse_order ? blockDim.x - 1 - t : t; }
static void wait_turn() {
  std::unique_lock<std::mutex> l(mu);
  cv[threadIdx.x].wait(l, [] { return turn == rank_of(threadIdx.x); });
}
static void pass_turn() {
  unsigned next;
  { std::lock_guard<std::mutex> l(mu); turn = (turn + 1) % blockDim.x; next = rank_of(turn); }
  cv[next].notify_one();
}
static void __syncthreads() { pass_turn(); wait_turn(); }
"""

DRIVER = r"""
extern "C" void drive(unsigned nthreads, unsigned rev, void** args) {{
  memset(shmem, 0xff, sizeof shmem);
  blockDim.x = nthreads; reverse_order = rev; turn = 0;
  std::vector<std::thread> th;
  for (unsigned t = 0; t < nthreads; ++t)
    th.emplace_back([=] {{ threadIdx.x = t; wait_turn(); {name}({call}); pass_turn(); }});
  for (auto& x : th) x.join();
}}
"""

assert "#define __syncthreads" not in BLOCK_PRELUDE
_DECL = re.compile(r"__shared__ ([\w ]+?) (\w+)\[(\d+)\];")
_LIBS: dict = {}


def _library(kernel):
    offset = [0]

    def shared(mt):
        ct, name, n = mt.group(1), mt.group(2), int(mt.group(3))
        at = offset[0]
        offset[0] += -(-n * 8 // 16) * 16
        return f"{ct}* const {name} = ({ct}*)(shmem + {at});"

    body = _DECL.sub(shared, kernel.source)
    params = re.search(re.escape(kernel.name) + r"\((.*?)\)\s*\{", body,
                       re.S).group(1).split(",")
    call = ", ".join(f"({p.strip().rsplit(' ', 1)[0].replace('__restrict__', '').strip()})"
                     f"args[{i}]" for i, p in enumerate(params))
    text = BLOCK_PRELUDE + body + DRIVER.format(name=kernel.name, call=call)
    digest = hashlib.sha1(text.encode()).hexdigest()[:16]
    lib = _LIBS.get(digest)
    if lib is None:
        src, so = _DIR / f"b{digest}.cpp", _DIR / f"b{digest}.so"
        src.write_text(text)
        proc = subprocess.run([GXX, "-O1", "-shared", "-fPIC", "-pthread", "-o", str(so),
                               str(src)], capture_output=True, text=True)
        if proc.returncode:
            raise AssertionError(f"g++ refused the kernel:\n{proc.stderr}\n{text}")
        lib = _LIBS[digest] = ctypes.CDLL(str(so))
    return lib


def run_tiny_block(kernel, arrays, nthreads: int = 256, reverse: bool = False) -> list:
    """The outputs of a :class:`~dualgpu.codegen.tiny.TinyKernel` on ``arrays`` run by a
    block of ``nthreads`` threads (a power of two, at most 1024) taking turns between
    barriers."""
    assert 0 < nthreads <= 1024
    for v, a in zip(kernel.inputs, arrays):
        assert a.dtype == v.dtype and a.shape == tuple(v.shape)
    outs = [np.full(tuple(a.shape), np.nan if np.dtype(a.dtype).kind == "f" else -12345,
                    dtype=a.dtype) for a in kernel.outputs]
    ptrs = [a.ctypes.data for a in list(arrays) + outs]
    lib = _library(kernel)
    lib.drive(ctypes.c_uint(nthreads), ctypes.c_uint(int(reverse)),
              (ctypes.c_void_p * len(ptrs))(*ptrs))
    return outs
