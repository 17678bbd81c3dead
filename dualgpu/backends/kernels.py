"""CUDA sources of dualgpu's own library kernels (the sparse products), and the one table of
C types for kernel dtypes. Kernels are compiled once per (kernel, dtype, index type), with
deterministic names so that CuPy's compile cache hits.

>>> from dualgpu.backends.kernels import C_TYPES
>>> C_TYPES["float32"], C_TYPES["int64"]
('float', 'long long')
"""
from __future__ import annotations

import numpy as np

from ..base.names import kernel_name

C_TYPES = {"bool": "bool", "int8": "signed char", "int16": "short", "int32": "int",
           "int64": "long long", "uint8": "unsigned char", "uint16": "unsigned short",
           "uint32": "unsigned int", "uint64": "unsigned long long", "float32": "float",
           "float64": "double"}

# cuSPARSE's SpMM is slow for a few dense columns (~0.9 ms for nnz 2M, 64 columns on an
# H200); a warp per output row, lanes over the dense columns, gathers whole rows of x
# (coalesced) and runs at the speed of those gathers.
SPMM_SOURCE = r"""
extern "C" __global__ void {name}(const {T}* __restrict__ data, const {I}* __restrict__ indices,
                                  const {I}* __restrict__ indptr, const {T}* __restrict__ x,
                                  {T}* __restrict__ out, long long nrows, int k) {{
    long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (row >= nrows) return;
    long long start = indptr[row], end = indptr[row + 1];
    for (int j0 = 0; j0 < k; j0 += 64) {{
        int j = j0 + lane;
        {T} acc0 = 0, acc1 = 0;
        for (long long p = start; p < end; ++p) {{
            {T} v = data[p];
            const {T}* xr = x + (long long)indices[p] * k;
            if (j < k) acc0 += v * xr[j];
            if (j + 32 < k) acc1 += v * xr[j + 32];
        }}
        if (j < k) out[row * k + j] = acc0;
        if (j + 32 < k) out[row * k + j + 32] = acc1;
    }}
}}
"""

# sddmm: a warp per stored entry, lanes over the dense columns, a shuffle reduction.
SDDMM_SOURCE = r"""
extern "C" __global__ void {name}(const {T}* __restrict__ g, const {T}* __restrict__ x,
                                  const {I}* __restrict__ gi, const {I}* __restrict__ xi,
                                  {T}* __restrict__ out, long long nnz, int k) {{
    long long p = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (p >= nnz) return;
    const {T}* gr = g + (long long)gi[p] * k;
    const {T}* xr = x + (long long)xi[p] * k;
    {T} acc = 0;
    for (int j = lane; j < k; j += 32) acc += gr[j] * xr[j];
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffff, acc, off);
    if (lane == 0) out[p] = acc;
}}
"""

_SOURCES = {"spmm": SPMM_SOURCE, "sddmm": SDDMM_SOURCE}
_compiled: dict = {}


def sparse_kernel(xp, which: str, dtype, itype):
    """The compiled ``spmm`` or ``sddmm`` kernel for values of ``dtype`` and indices of
    ``itype`` (``xp`` is cupy)."""
    key = (which, np.dtype(dtype).name, np.dtype(itype).name)
    kern = _compiled.get(key)
    if kern is None:
        name = kernel_name(which, "_".join(key[1:]))
        src = _SOURCES[which].format(name=name, T=C_TYPES[key[1]], I=C_TYPES[key[2]])
        kern = _compiled[key] = xp.RawKernel(src, name)
    return kern
