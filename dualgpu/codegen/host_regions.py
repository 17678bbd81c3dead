"""Fused regions compiled for the host CPU: a NumPy program run by its fusion plan
(``dg.config["host_fused"]``, see docs/api.md).

The plan is the GPU's (:func:`dualgpu.fusion.plan_graph`), planned for the host's costs
(``target="host"``: a costly value is computed again at fewer copies). Each region becomes a
C++ function written by the region kernels' emitter (:class:`~dualgpu.codegen.cuda._Emitter`:
the same loops, C expressions and stores), its threads run in order by one loop per thread
axis (nested, the last innermost, where the kernel decomposes its thread index); a grid
reduction is accumulated in one local across all of them (its monoid's identity first) and
stored once at the end: no partials, no finish kernel. Inputs are read as C-contiguous
arrays of their value's dtype (the runner copies a value that is not one: a strided
argument, a transposed view made by a library step), not specialised on strides. Every
region of a program goes into one shared library, compiled by
:func:`dualgpu.codegen.host.load_library` (the host compiler, the hashed on-disk cache) with
:data:`~dualgpu.codegen.host.FLAGS` (``-O2``, no ``-ffast-math``: NaN, infinities and signed
zeros stay IEEE's; no ``-march=native``: the cache may be shared between machines).

:class:`HostFusedProgram` runs the plan's steps in order: library steps by their op's NumPy
implementation, regions by their function into fresh arrays, dropping each value after its
last reader (``plan.releases``).

Example::

    >>> g = dg.trace(lambda x: np.sum(np.exp(-x * x)), np.ones(4))
    >>> prog = host_fused_program(g, min_elements=0)   # None where no compiler is found
    >>> prog is None or np.allclose(prog(np.ones(4))[0], 4 * np.exp(-1.0))
    True
    >>> from dualgpu.fusion import plan_graph
    >>> print(region_host_text(plan_graph(g).regions[0]))
    extern "C" void dg_hostfused_...(
        const double* __restrict__ in0,
        double* __restrict__ out0) {
      double g0 = 0.0;
      for (int i0 = 0; i0 < 4; ++i0) {
        const double v0 = in0[i0];  // load
        const double v1 = (-v0);  // negative
        const double v2 = (v1 * v0);  // multiply
        const double v3 = exp(v2);  // exp
        g0 = (g0 + v3);
      }
      out0[0] = g0;
    }
    <BLANKLINE>
"""
from __future__ import annotations

import ctypes
import logging

import numpy as np

from ..core.interpret import read
from ..core.ir import Graph, Literal
from ..fusion import LibraryStep, Plan, Region, plan_graph, run_library_step
from . import host
from .c_source import combine, contiguous_strides, ctype, identity_of, indent, named
from .cuda import Emitter

log = logging.getLogger("dualgpu")

# The smallest region (its domain's element count) for which a program runs by its fused
# host plan rather than as the generated Python. The compiled loop is scalar (libm's exp,
# no -ffast-math), NumPy's ufuncs are SIMD: while NumPy's temporaries stay in cache (and
# its allocator recycles them without page faults) the Python program keeps up on small
# programs. Measured on a shared 2-core EPYC (OPENBLAS_NUM_THREADS=1; figures vary 2-5x
# between runs there), with the regions on 2 OpenMP threads, fused against Python:
# per-particle grad+HVP (domain 3n) in benchmarks/cpu.py's process, n = 100k 0.49-0.54
# against 0.54-0.62 ms, n = 300k 4.1-4.3 against 15-16 ms; in a process without JAX
# (NumPy's temporaries page-faulted each call) n = 100k 1.5 against 4.2 ms, n = 30k 0.23
# against 0.17 ms (Python ahead), n = 10k 0.09 against 0.09 ms; the MLP 784-256-10 HVP
# (regions of 65536 elements) 4.7 against 4.3 ms (Python ahead).
HOST_FUSED_MIN = 1 << 17
# A region of at least this many threads runs them on OpenMP's threads (where the compiler
# takes -fopenmp); a grid reduction then sums CHUNKS fixed chunks, each in order, and their
# partials in order: the same bits whatever the number of threads.
PARALLEL_MIN = 1 << 15
CHUNKS = 64
FLAGS = host.FLAGS + ("-fopenmp",)

_logged: set = set()      # reasons already logged (each once per process)


class _HostEmitter(Emitter):
    """A region's text as one C++ function whose loops run the region's threads in order:
    one loop per thread axis, nested, the last innermost (where the kernel decomposes its
    thread index into those axes)."""

    flat = False   # threads by one flat index (chunks of a parallel grid reduction)

    def _thread_index(self) -> list:
        return super()._thread_index() if self.flat else []

    def generate_host(self) -> str:
        """The function's text (its name left as ``@KERNEL@``): inputs, then every output
        (a grid reduction's output is written once, after the loop). A region of at least
        :data:`PARALLEL_MIN` threads runs them on OpenMP's threads: without grid reductions
        the nested loops are shared out as they are (each point is computed alone: the
        values do not depend on the thread count); with them, the flat thread range is cut
        into :data:`CHUNKS` fixed chunks, each accumulated in order into its partial, and
        the partials are combined in chunk order after the loop, so the result does not
        depend on how many threads ran the chunks either."""
        threads = self.r.thread_count()
        if self.grid and threads >= PARALLEL_MIN:
            body = self._chunked()
        else:
            body = [f"{g.ctype} {g.name} = {identity_of(g.op, g.var.dtype)};"
                    for g in self.grid]
            body += self._nested(parallel=threads >= PARALLEL_MIN)
        body += [f"{self.out_names[g.var.id]}[0] = {g.name};" for g in self.grid]
        params = [f"const {ctype(v.dtype)}* __restrict__ {self.in_names[v.id]}"
                  for v in self.r.inputs]
        params += [f"{ctype(v.dtype)}* __restrict__ {self.out_names[v.id]}"
                   for v in self.r.outputs]
        head = ['extern "C" void @KERNEL@(', "    " + ",\n    ".join(params) + ") {"]
        return "\n".join(head + indent(body) + ["}"]) + "\n"

    def _nested(self, parallel: bool) -> list:
        """One loop per thread axis, nested, the last innermost."""
        idx, axes = self.idx, self.r.thread_axes()
        loops = self.thread_code()
        for d in reversed(axes):
            loops = [f"for ({idx} {self.axis(d)} = 0; {self.axis(d)} < {self.r.domain[d]}; "
                     f"++{self.axis(d)}) {{", *indent(loops), "}"]
        if parallel and axes:
            loops = [f"#pragma omp parallel for collapse({len(axes)}) schedule(static)",
                     *loops]
        return loops

    def _chunked(self) -> list:
        """The threads as :data:`CHUNKS` chunks of the flat thread index, in parallel, each
        grid reduction's partials combined in chunk order."""
        idx, n = self.idx, self.r.thread_count()
        self.flat = True
        try:
            code = self.thread_code()
        finally:
            self.flat = False
        lines = [f"{g.ctype} part_{g.name}[{CHUNKS}];" for g in self.grid]
        chunk = [f"{g.ctype} {g.name} = {identity_of(g.op, g.var.dtype)};" for g in self.grid]
        chunk += [f"const {idx} lo = ({idx})((long long){n} * c / {CHUNKS});",
                  f"const {idx} hi = ({idx})((long long){n} * (c + 1) / {CHUNKS});",
                  f"for ({idx} tid = lo; tid < hi; ++tid) {{", *indent(code), "}"]
        chunk += [f"part_{g.name}[c] = {g.name};" for g in self.grid]
        lines += ["#pragma omp parallel for schedule(static)",
                  f"for (int c = 0; c < {CHUNKS}; ++c) {{", *indent(chunk), "}"]
        for g in self.grid:
            lines += [f"{g.ctype} {g.name} = {identity_of(g.op, g.var.dtype)};",
                      f"for (int c = 0; c < {CHUNKS}; ++c) "
                      f"{g.name} = {combine(g.op, g.name, f'part_{g.name}[c]')};"]
        return lines


def region_host_text(region: Region) -> str:
    """The C++ function of ``region`` for C-contiguous inputs, named by its text's hash."""
    strides = {v.id: contiguous_strides(v.shape) for v in region.inputs}
    return named(_HostEmitter(region, strides).generate_host(), "hostfused")[1]


def _function_name(text: str) -> str:
    return text.split("(", 1)[0].rsplit(" ", 1)[1]


def _log_once(reason: str, *args) -> None:
    if reason not in _logged:
        _logged.add(reason)
        log.debug(reason, *args)


class HostFusedProgram:
    """A plan run on NumPy: ``prog(*inputs) -> list of outputs``; regions by their compiled
    functions (``functions[region.index]``), library steps by their op's implementation.
    ``source`` shows the plan and the C++ text."""

    def __init__(self, graph: Graph, plan: Plan, functions: dict, compiler: str, text: str):
        self.graph = graph
        self.plan = plan
        self.compiler = compiler
        self._functions = functions
        self.source = (f"// host fused plan of {graph.name}: {len(plan.regions)} region(s) "
                       f"compiled by {compiler} {host.FLAGS[0]}, each a loop over its "
                       "threads (dg.config['host_fused'])\n"
                       + "\n".join("// " + ln for ln in plan.describe().splitlines())
                       + "\n" + text)

    def _region(self, region: Region, env) -> None:
        if region.thread_count() == 0:   # an empty domain: some outputs have no writer
            for eqn in region.eqns:
                run_library_step(eqn, env)
            return
        args = [_dense(read(env, v), v.dtype) for v in region.inputs]
        outs = [np.empty(tuple(v.shape), v.dtype) for v in region.outputs]
        self._functions[region.index](*[a.ctypes.data for a in args],
                                      *[o.ctypes.data for o in outs])
        for v, o in zip(region.outputs, outs):
            env[v.id] = o

    def __call__(self, *arrays) -> list:
        env = {v.id: a for v, a in zip(self.graph.inputs, arrays)}
        for step, dead in zip(self.plan.steps, self.plan.releases):
            if isinstance(step, LibraryStep):
                run_library_step(step.eqn, env)
            else:
                self._region(step, env)
            for vid in dead:   # a call holds what is alive, not all it made
                env.pop(vid, None)
        return [np.full((), a.value, dtype=a.dtype) if isinstance(a, Literal)
                else read(env, a) for a in self.graph.outputs]


def _dense(a, dtype):
    """``a`` as an aligned C-contiguous ndarray of ``dtype`` (itself when it is one)."""
    flags = getattr(a, "flags", None)
    if type(a) is not np.ndarray or a.dtype != dtype or not flags.c_contiguous \
            or not flags.aligned:
        a = np.array(a, dtype=dtype, order="C")
    return a


def host_fused_program(graph: Graph, recompute: bool = True,
                       min_elements: int | None = None) -> HostFusedProgram | None:
    """``graph``'s fusion plan with its regions compiled for the host CPU, or None: no
    region of at least ``min_elements`` elements (default :data:`HOST_FUSED_MIN`: smaller
    programs run faster as the Python program), no compiler found, or a library the
    compiler refused (each logged once at debug level on the ``"dualgpu"`` logger), or an
    input or constant of non-native byte order (``">f8"``; the regions read native values)."""
    if any(not np.dtype(v.dtype).isnative for v in list(graph.inputs) + list(graph.consts)):
        return None   # an array of the other byte order ('>f8'): C reads native values only
    plan = plan_graph(graph, recompute=recompute, target="host")
    least = HOST_FUSED_MIN if min_elements is None else min_elements
    if not any(int(np.prod(r.domain, dtype=np.int64)) >= least for r in plan.regions):
        return None
    compiler = host.find_compiler()
    if compiler is None:
        _log_once("dualgpu: no C++ compiler found ($CXX, c++, g++, clang++): NumPy programs "
                  "run as generated Python (dg.config['host_fused'])")
        return None
    texts = {r.index: region_host_text(r) for r in plan.regions}
    names = {i: _function_name(t) for i, t in texts.items()}
    text = "".join(dict.fromkeys(texts.values()))   # a region's twin defined once
    lib = host.library_or_none(host.PRELUDE + text, compiler,
                               f"host fused plan of {graph.name} (OpenMP)", logging.DEBUG,
                               ctypes.CDLL, FLAGS) \
        or host.library_or_none(host.PRELUDE + text, compiler,
                                f"host fused plan of {graph.name}", logging.DEBUG,
                                ctypes.CDLL)   # without -fopenmp: the pragmas are ignored
    if lib is None:
        return None
    functions = {}
    for r in plan.regions:
        fn = getattr(lib, names[r.index])
        fn.argtypes = [ctypes.c_void_p] * (len(r.inputs) + len(r.outputs))
        fn.restype = None
        functions[r.index] = fn
    return HostFusedProgram(graph, plan, functions, compiler, text)
