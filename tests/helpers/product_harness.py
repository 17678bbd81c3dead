"""Our product kernels' CUDA text (:mod:`dualgpu.codegen.products`) run on the CPU: g++
compiles the text with a prelude in which every CUDA thread of a block is a host thread
(``threadIdx``/``blockIdx`` thread-local), ``__syncthreads()`` is a barrier of the block
and ``__shfl_xor_sync`` exchanges values through a barrier of the warp's 32 lanes; blocks
run one after the other (``__shared__`` arrays are static: one block's at a time).

``run_product(pk, count, operands)`` launches a :class:`ProductKernel` on NumPy operands
(``count`` triples ``a, b, c``), reading them in place through their pointers;
``run_kernel(source, name, grid, arrays)`` launches any of our kernels (a fused region's,
its grid-reduction finish) on NumPy arrays, its parameter types read from its text.
"""
from __future__ import annotations

import ctypes
import hashlib
import subprocess

import numpy as np
from tiny_harness import _DIR, GXX

PRELUDE = r"""
#include <barrier>
#include <cmath>
#include <math.h>
#include <cstring>
#include <thread>
#include <vector>
#define __global__
#define __launch_bounds__(n)
#define __shared__ static
using namespace std;
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline double __longlong_as_double(long long i) {
  double d; memcpy(&d, &i, 8); return d;
}
struct Dim { unsigned x, y; };
static thread_local Dim threadIdx, blockIdx;
static std::barrier<>* block_bar;
static std::barrier<>* warp_bar[32];
static double lanes[1024];
static inline void __syncthreads() { block_bar->arrive_and_wait(); }
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int o) {
  const unsigned t = threadIdx.x, w = t >> 5;
  warp_bar[w]->arrive_and_wait();
  lanes[t] = (double)v;
  warp_bar[w]->arrive_and_wait();
  return (T)lanes[(w << 5) | ((t & 31) ^ o)];
}
"""

DRIVER = r"""
extern "C" void drive(unsigned gx, unsigned gy, unsigned nthreads, void** args) {{
  for (unsigned by = 0; by < gy; ++by)
    for (unsigned bx = 0; bx < gx; ++bx) {{
      std::barrier<> bb(nthreads);
      block_bar = &bb;
      std::vector<std::barrier<>*> ws;
      for (unsigned w = 0; w < nthreads / 32; ++w)
        ws.push_back(warp_bar[w] = new std::barrier<>(32));
      std::vector<std::thread> th;
      for (unsigned t = 0; t < nthreads; ++t)
        th.emplace_back([=] {{ threadIdx = {{t, 0}}; blockIdx = {{bx, by}}; {name}({call}); }});
      for (auto& x : th) x.join();
      for (auto* w : ws) delete w;
    }}
}}
"""

_LIBS: dict = {}


def _library(source: str, name: str, ct: str, count: int):
    call = ", ".join(f"({'const ' if j < 2 else ''}{ct}*)args[{3 * i + j}]"
                     for i in range(count) for j in range(3))
    return _compiled(source, name, call)


def _compiled(source: str, name: str, call: str):
    text = PRELUDE + source.replace("__restrict__", "") + DRIVER.format(name=name, call=call)
    digest = hashlib.sha1(text.encode()).hexdigest()[:16]
    lib = _LIBS.get(digest)
    if lib is None:
        src, so = _DIR / f"p{digest}.cpp", _DIR / f"p{digest}.so"
        src.write_text(text)
        proc = subprocess.run([GXX, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread",
                               "-Wno-unknown-pragmas", "-o", str(so), str(src)],
                              capture_output=True, text=True)
        if proc.returncode:
            raise AssertionError(f"g++ refused the kernel:\n{proc.stderr}\n{source}")
        lib = _LIBS[digest] = ctypes.CDLL(str(so))
    return lib


def run_product(pk, count: int, operands, threads: int = 256) -> None:
    """Launch ``pk`` (grid ``(pk.blocks, count)``) on ``operands``: ``count`` triples of
    NumPy arrays ``a, b, c`` (pointers to their first elements, as CuPy passes them)."""
    ct = "float" if operands[0].dtype == np.float32 else "double"
    lib = _library(pk.source, pk.name, ct, count)
    ptrs = (ctypes.c_void_p * len(operands))(*[a.ctypes.data for a in operands])
    lib.drive(ctypes.c_uint(pk.blocks), ctypes.c_uint(count), ctypes.c_uint(threads), ptrs)


def _parameter_types(source: str, name: str) -> list:
    """The C types of the kernel ``name``'s parameters (``const double*``, ``bool*`` ...)."""
    head = source[source.index(name + "(") + len(name) + 1:]
    params = head[:head.index(") {")]
    types = []
    for p in params.split(","):
        words = p.replace("__restrict__", "").split()
        types.append(" ".join(words[:-1]))
    return types


def run_kernel(source: str, name: str, grid: int, arrays, threads: int = 256) -> None:
    """Launch the kernel ``name`` of ``source`` on ``grid`` blocks of ``threads`` host
    threads, its pointer parameters bound to ``arrays`` (NumPy; the pointer to each view's
    first element, as CuPy passes it)."""
    types = _parameter_types(source, name)
    assert len(types) == len(arrays), (types, len(arrays))
    call = ", ".join(f"({t})args[{i}]" for i, t in enumerate(types))
    lib = _compiled(source, name, call)
    ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
    lib.drive(ctypes.c_uint(grid), ctypes.c_uint(1), ctypes.c_uint(threads), ptrs)
