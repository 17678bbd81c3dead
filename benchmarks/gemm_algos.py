"""cuBLASLt's heuristic candidates for the float32 GEMMs of the MLP and Laplacian
benchmarks, each timed and checked against cublasGemmEx's default choice (the call dualgpu
makes): how much an autotuned algorithm could save. ``python -m benchmarks.gemm_algos``
(GPU only; a measurement, not part of ``make bench``).

Measured 2026-12-02 on the H200 (benchmarks/results/gemm-algos-20261202.log, by the same
calls in a first, unlinted form of this script): the best candidate is 1–3 % faster than
the default on the large shapes, 7 % on (1024, 768) @ (768, 768).
"""
from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np

from dualgpu.backends.cublas import CublasGemm, gemm_layout, loaded_library

COMPUTE_32F, R_32F = 68, 0                 # cublasComputeType_t, cudaDataType_t
DESC_TRANSA, DESC_TRANSB = 3, 4            # cublasLtMatmulDescAttributes_t
PREF_MAX_WORKSPACE_BYTES = 1               # cublasLtMatmulPreferenceAttributes_t
WORKSPACE_BYTES = 32 << 20
CANDIDATES = 16

SHAPES = [("(51200,768)@(768,768)", (51200, 768), (768, 768), False),
          ("(51200,768)@(768,512)", (51200, 768), (768, 512), False),
          ("(51200,512)@(512,512)", (51200, 512), (512, 512), False),
          ("(1024,768)@(768,768)", (1024, 768), (768, 768), False),
          ("(4096,784)@(784,512)", (4096, 784), (784, 512), False),
          ("(784,4096)T@(4096,512)", (4096, 784), (4096, 512), True),
          ("(8192,1024)@(1024,1024)", (8192, 1024), (1024, 1024), False)]


class Heuristic(ctypes.Structure):
    """``cublasLtMatmulHeuristicResult_t``."""

    _fields_ = [("algo", ctypes.c_uint64 * 8), ("workspace", ctypes.c_size_t),
                ("state", ctypes.c_int), ("waves", ctypes.c_float),
                ("reserved", ctypes.c_int * 4)]


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"{what}: cuBLASLt status {status}")


def _library():
    """The cuBLASLt CuPy's cuBLAS loaded."""
    from cupy_backends.cuda.libs import cublas

    cublas.destroy(cublas.create())
    return ctypes.CDLL(loaded_library("libcublasLt.so") or ctypes.util.find_library("cublasLt"))


class Probe:
    def __init__(self, cp):
        self.cp, self.lt = cp, _library()
        self.handle = ctypes.c_void_p()
        _check(self.lt.cublasLtCreate(ctypes.byref(self.handle)), "create")
        self.ws = cp.empty(WORKSPACE_BYTES, cp.uint8)
        self.one, self.zero = np.ones(1, np.float32), np.zeros(1, np.float32)

    def _layout(self, rows: int, cols: int, ld: int):
        lay = ctypes.c_void_p()
        _check(self.lt.cublasLtMatrixLayoutCreate(ctypes.byref(lay), R_32F, ctypes.c_uint64(rows),
                                                  ctypes.c_uint64(cols), ctypes.c_int64(ld)),
               "layout")
        return lay

    def _time(self, fn) -> float:
        from cupyx.profiler import benchmark

        return float(np.median(benchmark(fn, (), n_repeat=30, n_warmup=3).gpu_times) * 1e6)

    def run(self, label: str, a, b) -> str:
        cp, lt = self.cp, self.lt
        out = cp.empty((a.shape[0], b.shape[1]), cp.float32)
        lay = gemm_layout(a.shape, a.strides, b.shape, b.strides, 4)
        gemm = CublasGemm.get()
        default = self._time(lambda: gemm.run(lay, a, b, out, "float32"))
        want = out.copy()
        m, n, k = lay.m, lay.n, lay.k
        desc = ctypes.c_void_p()
        _check(lt.cublasLtMatmulDescCreate(ctypes.byref(desc), COMPUTE_32F, R_32F), "desc")
        for attr, op in ((DESC_TRANSA, lay.op_b), (DESC_TRANSB, lay.op_a)):
            value = ctypes.c_int(0 if op == "N" else 1)
            _check(lt.cublasLtMatmulDescSetAttribute(desc, attr, ctypes.byref(value), 4), "op")
        # column-major C^T = B^T A^T, as CublasGemm computes the row-major C = A @ B
        first = self._layout(n, k, lay.ld_b) if lay.op_b == "N" else self._layout(k, n, lay.ld_b)
        second = self._layout(k, m, lay.ld_a) if lay.op_a == "N" else self._layout(m, k,
                                                                                  lay.ld_a)
        result = self._layout(n, m, n)
        pref = ctypes.c_void_p()
        _check(lt.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "preference")
        ws_bytes = ctypes.c_uint64(WORKSPACE_BYTES)
        _check(lt.cublasLtMatmulPreferenceSetAttribute(pref, PREF_MAX_WORKSPACE_BYTES,
                                                       ctypes.byref(ws_bytes), 8), "workspace")
        found, count = (Heuristic * CANDIDATES)(), ctypes.c_int()
        _check(lt.cublasLtMatmulAlgoGetHeuristic(self.handle, desc, first, second, result,
                                                 result, pref, CANDIDATES, found,
                                                 ctypes.byref(count)), "heuristic")
        stream = ctypes.c_void_p(cp.cuda.get_current_stream().ptr)
        timed = []
        for i in range(count.value):
            cand = found[i]
            if cand.state != 0:
                continue

            def call(cand=cand):
                _check(lt.cublasLtMatmul(
                    self.handle, desc, ctypes.c_void_p(self.one.ctypes.data),
                    ctypes.c_void_p(b.data.ptr), first, ctypes.c_void_p(a.data.ptr), second,
                    ctypes.c_void_p(self.zero.ctypes.data), ctypes.c_void_p(out.data.ptr),
                    result, ctypes.c_void_p(out.data.ptr), result, ctypes.byref(cand.algo),
                    ctypes.c_void_p(self.ws.data.ptr), ctypes.c_size_t(WORKSPACE_BYTES),
                    stream), "matmul")

            call()
            right = bool(cp.allclose(out, want, rtol=1e-4, atol=1e-3))
            timed.append((i, self._time(call), right))
        best = min((t for _, t, right in timed if right), default=float("nan"))
        each = " ".join(f"{i}:{t:.0f}{'' if right else '(wrong)'}" for i, t, right in timed)
        return (f"{label:26s} GemmEx default {default:8.1f} us | {count.value} candidates, "
                f"best {best:8.1f} us ({best / default:.3f}x) | {each}")


def main() -> None:
    import cupy as cp

    probe = Probe(cp)
    rng = cp.random.default_rng(0)
    for label, sa, sb, transposed in SHAPES:
        a = rng.standard_normal(sa, cp.float32)
        a = a.T if transposed else a
        print(probe.run(label, a, rng.standard_normal(sb, cp.float32)), flush=True)


if __name__ == "__main__":
    main()
