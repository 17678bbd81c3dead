"""Tiny-program kernels (:mod:`dualgpu.codegen.tiny`) run on the CPU: the CUDA text is
compiled by g++ with the prelude of :mod:`dualgpu.codegen.host`, which makes a block of one thread
(``threadIdx.x == 0``, ``blockDim.x == 1``: every stage loop runs whole and in order, which
is what the block computes, since no stage reads what it writes), ``__shared__`` arrays
static, ``__syncthreads()`` nothing, and the CUDA bit casts of NaN literals functions.
The kernel is called through ctypes on NumPy arrays, read in place through their strides.

``run_tiny(kernel, arrays)`` returns the outputs; :class:`RawKernel` stands for
``cupy.RawKernel`` in a fake CuPy.
"""
from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from dualgpu.codegen.host import PRELUDE  # noqa: F401 (tiny_block_harness imports it)

GXX = shutil.which("g++")
needs_gxx = pytest.mark.skipif(GXX is None, reason="no host C++ compiler (g++)")
_DIR = Path(tempfile.mkdtemp(prefix="dualgpu_tiny_"))
_LIBS: dict = {}


def compile_kernel(source: str):
    """The shared library of one kernel's text (compiled once per text)."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:16]
    lib = _LIBS.get(digest)
    if lib is None:
        src, so = _DIR / f"{digest}.cpp", _DIR / f"{digest}.so"
        src.write_text(PRELUDE + source)
        proc = subprocess.run([GXX, "-O1", "-shared", "-fPIC", "-o", str(so), str(src)],
                              capture_output=True, text=True)
        if proc.returncode:
            raise AssertionError(f"g++ refused the kernel:\n{proc.stderr}\n{source}")
        lib = _LIBS[digest] = ctypes.CDLL(str(so))
    return lib


def launch(source: str, name: str, arrays) -> None:
    """Run the kernel ``name`` of ``source`` on ``arrays`` (pointers to their first
    elements, as CuPy passes arrays)."""
    fn = getattr(compile_kernel(source), name)
    fn.restype = None
    fn(*[ctypes.c_void_p(a.ctypes.data) for a in arrays])


def run_tiny(kernel, arrays) -> list:
    """The outputs of a :class:`~dualgpu.codegen.tiny.TinyKernel` on ``arrays`` (one per
    ``kernel.inputs``, of their dtypes); outputs start as NaN (or -12345) so that an element
    never written shows."""
    for v, a in zip(kernel.inputs, arrays):
        assert a.dtype == v.dtype and a.shape == tuple(v.shape)
    outs = [np.full(tuple(a.shape), np.nan if np.dtype(a.dtype).kind == "f" else -12345,
                    dtype=a.dtype) for a in kernel.outputs]
    launch(kernel.source, kernel.name, list(arrays) + outs)
    return outs


class RawKernel:
    """``cupy.RawKernel`` for tiny kernels: ``fn(grid, block, args)`` runs the text on the
    CPU (``LOG`` records the names launched)."""

    LOG: list = []

    def __init__(self, source, name):
        self.source, self.name = source, name

    def __call__(self, grid, block, args):
        assert tuple(grid) == (1,), "a tiny kernel is one block"
        RawKernel.LOG.append(self.name)
        launch(self.source, self.name, args)
