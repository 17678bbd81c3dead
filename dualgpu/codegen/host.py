"""Tiny-program kernels (:mod:`dualgpu.codegen.tiny`) compiled for the host CPU.

The CUDA text of a tiny kernel is C++ once :data:`PRELUDE` makes a block of one thread
(``threadIdx.x == 0``, ``blockDim.x == 1``: every stage loop runs whole and in order, which
is what the block computes, since no stage reads what it writes), ``__shared__`` arrays
static, ``__syncthreads()`` nothing, and the CUDA bit casts of NaN literals functions.
:func:`host_program` compiles it with the host C++ compiler (:func:`find_compiler`:
``$CXX``, then ``c++``, ``g++``, ``clang++``) into a shared library kept on disk
(:func:`cache_dir`) and returns a :class:`HostProgram`: the graph's inputs in, fresh
C-contiguous NumPy outputs out (``dg.config["host_kernel"]``, see docs/api.md).

The library is keyed by the SHA-256 of the compiler's path, its flags and the whole text,
written to a temporary file and renamed into place, so processes that compile the same
kernel at once never read a half-written file. The text is the prelude, tiny.py's kernel
(which prints every number through the one encoder) and an entry point written here from
the kernel's argument types: nothing user-given reaches it.

Calls hold the GIL (``ctypes.PyDLL``): the static ``__shared__`` arrays are one per library,
so two threads must not run one kernel at once. The entry point reads each array's data
pointer out of the array object (``PyArrayObject.data``, the field after the object
header) -- ``a.ctypes.data`` costs ~0.9 µs an array; the entry point is checked against it
when a library is loaded, and the kernel is called with ``a.ctypes.data`` where they
disagree.

Example::

    >>> g = dg.trace(lambda x: np.sum(np.sin(x) ** 2), np.ones(3))
    >>> prog = host_program(g)          # None where no compiler is found
    >>> prog is None or np.allclose(prog(np.ones(3))[0], 3 * np.sin(1.0) ** 2)
    True
"""
from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import numpy as np

from ..base import names as naming
from ..core.ir import Graph
from .c_source import array_strides, ctype
from .tiny import TinyKernel, tiny_program_kernel

log = logging.getLogger("dualgpu")

PRELUDE = r"""
#include <cmath>
#include <cstring>
using namespace std;
#define __global__
#define __launch_bounds__(n)
#define __shared__ static
#define __syncthreads() ((void)0)
static struct { unsigned x; } threadIdx = {0}, blockDim = {1};
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline double __longlong_as_double(long long i) {
  double d; memcpy(&d, &i, 8); return d;
}
"""

FLAGS = ("-O2", "-shared", "-fPIC", "-x", "c++")
# the most serial steps (TinyKernel.work) a host kernel may take: one CPU thread runs every
# stage, products as plain loops, ~0.6 ns a step on the 2-core CI machine, where the Python
# program costs ~20 µs plus its (BLAS) library calls. Measured there, an MLP-shaped HVP:
# work 7434, host 7.4 µs against Python 19.4 µs; work 54290, host 33.5 µs against 23.1 µs.
HOST_WORK_MAX = 1 << 14
COMPILERS = ("c++", "g++", "clang++")     # after $CXX
# where PyArrayObject.data sits: right after the object header (numpy/ndarraytypes.h)
_DATA_OFFSET = object.__basicsize__
_PROBE = "dg_host_data_of"


class HostCompileError(RuntimeError):
    """The host compiler refused a kernel's text (the message holds its diagnostics)."""


def find_compiler() -> str | None:
    """The path of the host C++ compiler: ``$CXX``, else the first of ``c++``, ``g++``,
    ``clang++`` on the PATH; None when there is none."""
    for name in (os.environ.get("CXX"), *COMPILERS):
        path = shutil.which(name) if name else None
        if path:
            return path
    return None


def cache_dir() -> Path:
    """Where compiled kernels are kept: ``$DUALGPU_CACHE_DIR/host``, by default
    ``~/.cache/dualgpu/host``."""
    root = os.environ.get("DUALGPU_CACHE_DIR")
    return (Path(root) if root else Path.home() / ".cache" / "dualgpu") / "host"


def _entry_text(kernel: TinyKernel) -> str:
    """The entry point: the kernel called on array objects, each one's data pointer read
    out of it; and the probe that checks where the pointer is read."""
    args = list(kernel.inputs) + list(kernel.outputs)
    params = ", ".join(f"const void* a{k}" for k in range(len(args)))
    calls = ", ".join(f"({ctype(a.dtype)}*)dg_data(a{k})" for k, a in enumerate(args))
    return (f"\n#define DG_DATA_OFFSET {int(_DATA_OFFSET)}\n"
            "static inline void* dg_data(const void* a) {\n"
            "  void* p; memcpy(&p, (const char*)a + DG_DATA_OFFSET, sizeof p); return p;\n}\n"
            f'extern "C" void* {_PROBE}(const void* a) {{ return dg_data(a); }}\n'
            f'extern "C" void {naming.host_entry_name(kernel.name)}({params}) {{\n'
            f"  {kernel.name}({calls});\n}}\n")


def library_text(kernel: TinyKernel) -> str:
    """The whole C++ text compiled for ``kernel``: prelude, kernel, entry point."""
    return PRELUDE + kernel.source + _entry_text(kernel)


def _run_compiler(cmd: list, text: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, input=text, capture_output=True, text=True)


def compile_library(text: str, compiler: str, flags=FLAGS) -> Path:
    """The shared library of ``text`` in :func:`cache_dir`, compiled unless already there."""
    key = "\0".join([compiler, " ".join(flags), text])
    digest = hashlib.sha256(key.encode()).hexdigest()
    folder = cache_dir()
    path = folder / f"dg_{digest[:40]}.so"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{digest[:16]}-", suffix=".so", dir=folder)
    os.close(fd)
    try:
        proc = _run_compiler([compiler, *flags, "-o", tmp, "-"], text)
        if proc.returncode:
            raise HostCompileError(f"{compiler} refused a kernel:\n{proc.stderr[-4000:]}")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


_LIBS: dict = {}              # (library path, loader) -> library, loaded once per process
_LOCK = threading.Lock()


def load_library(text: str, compiler: str, loader=ctypes.PyDLL, flags=FLAGS):
    """``text`` compiled with ``flags`` (or found on disk) and loaded by ``loader``:
    ``ctypes.PyDLL`` (calls hold the GIL) or ``ctypes.CDLL`` (calls release it)."""
    with _LOCK:
        path = compile_library(text, compiler, flags)
        lib = _LIBS.get((path, loader))
        if lib is None:
            lib = _LIBS[(path, loader)] = loader(str(path))
        return lib


def library_or_none(text: str, compiler: str, what: str, level: int = logging.WARNING,
                    loader=ctypes.PyDLL, flags=FLAGS):
    """:func:`load_library`, or None where the compiler refuses ``text`` or the library
    does not load: logged at ``level`` on the ``"dualgpu"`` logger, naming ``what``, and
    the caller runs the Python program instead."""
    try:
        return load_library(text, compiler, loader, flags)
    except (HostCompileError, OSError) as e:
        log.log(level, "dualgpu: %s not compiled, running the Python program: %s", what, e)
        return None


def _reads_data_pointers(lib) -> bool:
    """Whether the library's entry points find arrays' data where NumPy says it is."""
    probe = getattr(lib, _PROBE)
    probe.argtypes, probe.restype = [ctypes.c_void_p], ctypes.c_void_p
    samples: list[np.ndarray] = [np.ones(3), np.ones((4, 5))[1:, ::2], np.full((), 2.0, np.float32)]
    return all(probe(id(a)) == a.ctypes.data for a in samples)


class HostProgram:
    """A tiny program compiled for the host: ``prog(*inputs) -> list of arrays`` (fresh,
    C-contiguous, of the graph's output shapes and dtypes). Inputs of another dtype or
    layout (or unaligned) are copied first (``np.array(a, dtype, order="C")``); closed-over
    constants are read in place. ``source`` is the kernel's text with a line saying how it runs."""

    def __init__(self, kernel: TinyKernel, consts: list, lib, compiler: str):
        self.kernel = kernel
        self.compiler = compiler
        n_in = len(kernel.inputs) - len(consts)
        self._in_dtypes = [np.dtype(v.dtype) for v in kernel.inputs[:n_in]]
        self._out_specs = [(tuple(a.shape), np.dtype(a.dtype)) for a in kernel.outputs]
        self._consts = consts           # kept alive: the kernel reads them in place
        n_args = len(kernel.inputs) + len(kernel.outputs)
        self._by_object = _reads_data_pointers(lib)
        if self._by_object:
            fn = getattr(lib, naming.host_entry_name(kernel.name))
            self._const_args = [id(c) for c in consts]
        else:
            fn = getattr(lib, kernel.name)
            self._const_args = [c.ctypes.data for c in consts]
        fn.argtypes, fn.restype = [ctypes.c_void_p] * n_args, None
        self._fn = fn
        self.source = (f"// host kernel {kernel.name}: {len(kernel.stages)} stages run in "
                       f"order by one CPU thread, compiled by {compiler} {FLAGS[0]} "
                       "(dg.config['host_kernel'])\n" + kernel.source)

    def __call__(self, *arrays) -> list:
        if len(arrays) != len(self._in_dtypes):
            raise TypeError(f"{self.kernel.name} takes {len(self._in_dtypes)} arrays, "
                            f"got {len(arrays)}")
        args = []
        for a, dt in zip(arrays, self._in_dtypes):
            if type(a) is not np.ndarray or a.dtype != dt or not a.flags.c_contiguous or \
                    not a.flags.aligned:
                a = np.array(a, dtype=dt, order="C")     # a copy: aligned, contiguous
            args.append(a)
        outs = [np.empty(shape, dt) for shape, dt in self._out_specs]
        if self._by_object:
            self._fn(*map(id, args), *self._const_args, *map(id, outs))
        else:
            self._fn(*[a.ctypes.data for a in args], *self._const_args,
                     *[o.ctypes.data for o in outs])
        return outs


def _const_arrays(graph: Graph) -> list | None:
    """The closed-over constants as the dense arrays the kernel reads (None: one is not)."""
    consts = []
    for c in graph.consts:
        value = c.value
        if not isinstance(value, np.ndarray):
            if getattr(value, "strides", None) is None:
                return None
            value = np.asarray(value)
        if value.dtype != np.dtype(c.dtype):
            return None
        consts.append(value)
    return consts


def host_program(graph: Graph, compiler: str | None = None) -> HostProgram | None:
    """``graph`` as one tiny kernel compiled for the host CPU, or None: no compiler
    (:func:`find_compiler`), a program that is not tiny (:func:`~dualgpu.codegen.tiny.
    tiny_refusal`) or whose kernel would take more than :data:`HOST_WORK_MAX` serial steps
    (the Python program is faster there), or a kernel the compiler refused (logged as a
    warning)."""
    compiler = compiler or find_compiler()
    if compiler is None:
        return None
    consts = _const_arrays(graph)
    if consts is None:
        return None
    strides = {c.id: array_strides(a) for c, a in zip(graph.consts, consts)}
    kernel = tiny_program_kernel(graph, strides)
    if kernel is None or kernel.work > HOST_WORK_MAX:
        return None
    lib = library_or_none(library_text(kernel), compiler, f"host kernel {kernel.name}")
    if lib is None:
        return None
    return HostProgram(kernel, consts, lib, compiler)
