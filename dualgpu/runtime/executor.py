"""Turn a graph into a callable for one backend: generated Python on NumPy; on CuPy the
fused-kernel plan run by :mod:`dualgpu.codegen.launcher` (with CUDA-graph replay where safe).

Results are owned by the caller: an output that is (a view of) an argument or a closed-over
constant, or that repeats another output, is copied (:func:`owned_outputs`); only the
documented ``"reuse"`` mode of CUDA-graph replay hands out buffers that the next call
overwrites.

Switches (see docs/gpu.md), read when a program is built (``fuse``) or called (the rest)::

    dg.config["fuse"] = False                 # CuPy runs the generated Python, op by op
    dg.config["cuda_graphs"] = False          # no CUDA-graph capture and replay
    dg.config["cuda_graph_outputs"] = "reuse" # replay writes one static output block,
                                              # overwritten by the next call
    dg.config["cuda_graph_max_bytes"] = 1 << 30  # programs whose outputs are larger run
                                                 # eagerly (each captured output slot
                                                 # keeps one block of that size)
    dg.config["matmul_precision"] = "tf32"    # CuPy float32 products on TF32 tensor cores
    dg.config["stack_gemms"] = True           # grad/hvp programs merge products sharing an
                                              # operand ("auto", the default: on CuPy only
                                              # large ones with small others, "large")
    dg.config["recompute"] = False            # CuPy plans: every kernel reads the values of
                                              # earlier kernels (default True: a kernel
                                              # recomputes cheap elementwise values of an
                                              # earlier one that only it reads)
    dg.config["tiny_kernel"] = False          # CuPy: a program of small values runs its
                                              # plan, not one kernel of one block
    dg.config["host_kernel"] = True           # NumPy: a program of small values runs as
                                              # its tiny kernel compiled for the host CPU
                                              # (default False: the generated Python)
    dg.config["host_interpreter"] = False     # NumPy: a program of small values runs as
                                              # the generated Python (default True: by the
                                              # prebuilt interpreter of tiny programs)
    dg.config["host_fused"] = False           # NumPy: no program runs by its fusion plan
                                              # with regions compiled for the host CPU
                                              # (default True, for a region of at least
                                              # HOST_FUSED_MIN elements)
    dg.config["check_indices"] = False        # CuPy: index arrays a program receives are
                                              # not checked (default True: an index out
                                              # of range raises IndexOutOfBoundsError, at
                                              # the cost of one small reduction and one
                                              # copy to the host per call of the programs
                                              # that gather with them)

The switches that shape a program (:data:`BUILD_SWITCHES`) are part of every program's
cache key: changing one builds new programs and never reuses one built under another value.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..backends.cuda_graphs import CudaGraphRunner
from ..codegen.host import host_program
from ..codegen.host_regions import host_fused_program
from ..codegen.interpreter import interpreted_program
from ..codegen.launcher import compile_fused
from ..codegen.python import compile_python
from ..core.ir import Graph
from ..errors import DualgpuError, InvalidArgumentError, did_you_mean
from ..transforms.index_bounds import first_out_of_bounds, out_of_bounds_error, with_index_bounds


class Config(dict):
    """The global switches (see docs/gpu.md): a dict that refuses unknown keys and values of
    the wrong kind, so a typo never passes silently. A switch is never missing: ``del``,
    ``pop`` and ``clear`` restore defaults (:data:`DEFAULTS`), ``setdefault`` returns the
    value, ``update`` checks every entry before setting any, and ``popitem`` is refused.

    Example::

        >>> dg.config["cuda_graphs"] = False
        >>> dg.config.pop("cuda_graphs")          # the default again
        False
        >>> dg.config["cuda_graphs"]
        True
    """

    _CHECKS = {
        "fuse": (lambda v: isinstance(v, bool), "True or False"),
        "cuda_graphs": (lambda v: isinstance(v, bool), "True or False"),
        "cuda_graph_outputs": (lambda v: v in ("copy", "reuse"), "'copy' or 'reuse'"),
        "cuda_graph_max_bytes": (lambda v: isinstance(v, int) and not isinstance(v, bool)
                                 and v >= 0, "an int >= 0"),
        "cache_size": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                       "an int >= 0"),
        "matmul_precision": (lambda v: v in MATMUL_PRECISIONS,
                             "'float32', 'tf32' or 'tf32x3'"),
        "stack_gemms": (lambda v: isinstance(v, bool) or v in ("auto", "large"),
                        "'auto', 'large', True or False"),
        "recompute": (lambda v: isinstance(v, bool), "True or False"),
        "tiny_kernel": (lambda v: isinstance(v, bool), "True or False"),
        "host_kernel": (lambda v: isinstance(v, bool), "True or False"),
        "host_fused": (lambda v: isinstance(v, bool), "True or False"),
        "host_interpreter": (lambda v: isinstance(v, bool), "True or False"),
        "check_indices": (lambda v: isinstance(v, bool), "True or False"),
        "keep_freed_memory": (lambda v: isinstance(v, bool), "True or False"),
    }

    def _check(self, key: Any, value: Any, value_too: bool = True) -> None:
        check = self._CHECKS.get(key) if isinstance(key, str) else None
        if check is None:
            raise InvalidArgumentError(f"dg.config has no switch {key!r}"
                                       f"{did_you_mean(str(key), self._CHECKS)}; the switches "
                                       f"are {', '.join(sorted(self._CHECKS))}")
        if not value_too:
            return
        try:
            ok = bool(check[0](value))
        except (TypeError, ValueError):  # an array compared with a string, say
            ok = False
        if not ok:
            raise InvalidArgumentError(f"dg.config[{key!r}] must be {check[1]}, got "
                                       f"{value!r:.80}")

    def __missing__(self, key: Any) -> Any:
        # reading an unknown switch: a KeyError, as of any dict, that says what it may mean
        try:
            self._check(key, None, value_too=False)
        except InvalidArgumentError as e:
            raise KeyError(str(e)) from None
        raise KeyError(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._check(key, value)
        changed = key in BUILD_SWITCHES and self.get(key, value) != value
        super().__setitem__(key, value)
        if changed:
            generation[0] += 1  # the fast paths of cached calls check it
        for apply in _WATCHERS.get(key, ()):
            apply(value)

    def watch(self, key: str, apply: Callable[[Any], Any]) -> None:
        """Call ``apply(value)`` whenever switch ``key`` is set (the layers above apply
        the switches they own: the program cache applies ``cache_size``)."""
        self._check(key, None, value_too=False)
        _WATCHERS.setdefault(key, []).append(apply)

    def stack_gemms_for(self, backend: Any) -> Any:
        """How grad/hvp programs for ``backend`` stack their GEMMs: ``True`` (everywhere),
        ``False``, or ``"large"`` — what ``"auto"`` gives on CuPy: only large products that
        share an operand, the others being small (``X @ W1`` and ``X @ V1`` as
        ``X @ [W1 | V1]``: two weight matrices copied, one wider GEMM). On NumPy ``"auto"``
        does not stack: the concatenations cost more than the products gain. Stacking
        everything lost on CuPy too once programs replay as CUDA graphs (H200: MLP HVP
        470 µs unstacked, 502 µs stacked; benchmarks/NOTES.md, issue 12)."""
        value = self["stack_gemms"]
        if value != "auto":
            return value
        return "large" if getattr(backend, "name", None) == "cupy" else False

    def build_key(self) -> tuple:
        """The values of the switches that shape a compiled program (part of its key)."""
        return tuple(self[k] for k in BUILD_SWITCHES)

    def update(self, *args: Any, **kwargs: Any) -> None:
        """Set several switches; every key and value is checked before any is set, so a
        refused update changes nothing."""
        try:
            items = dict(*args, **kwargs)
        except (TypeError, ValueError) as e:
            raise DualgpuError(f"dg.config.update takes a mapping or (key, value) pairs: "
                               f"{e}") from None
        for k, v in items.items():
            self._check(k, v)
        for k, v in items.items():
            self[k] = v

    # dict's | makes a plain dict; |= updates this one in place, through the checks
    def __ior__(self, other: Any) -> Config:  # type: ignore[misc]
        self.update(other)
        return self

    def setdefault(self, key: Any, default: Any = None) -> Any:
        """The switch's value (every switch always has one; ``default`` is not used)."""
        self._check(key, None, value_too=False)
        return self[key]

    # A switch is never missing (every call reads them all): removing one restores its
    # default, through __setitem__ (so programs built under the old value are not reused).
    def __delitem__(self, key: Any) -> None:
        self._check(key, None, value_too=False)
        self[key] = DEFAULTS[key]

    def pop(self, key: Any, *default: Any) -> Any:
        """Restore switch ``key``'s default; returns the value it had."""
        self._check(key, None, value_too=False)
        old = self[key]
        self[key] = DEFAULTS[key]
        return old

    def clear(self) -> None:
        """Restore every switch's default."""
        self.update(DEFAULTS)

    def popitem(self) -> tuple[Any, Any]:
        raise DualgpuError("dg.config.popitem(): the switches cannot be removed; restore one "
                           "with dg.config.pop(name) or del dg.config[name] (its default), or "
                           "all with dg.config.clear()")


MATMUL_PRECISIONS: tuple[str, ...] = ("float32", "tf32", "tf32x3")
# switches read when a program is built; changing one builds new programs
BUILD_SWITCHES = ("fuse", "matmul_precision", "stack_gemms", "recompute", "tiny_kernel",
                  "host_kernel", "host_fused", "host_interpreter", "check_indices")
# bumped by clear_cache and by a change of a build switch: cached calls' fast paths check it
generation = [0]
_WATCHERS: dict = {}  # switch -> what applies it when it is set (Config.watch)
DEFAULTS = dict(fuse=True, cuda_graphs=True, cuda_graph_outputs="copy",
                cuda_graph_max_bytes=1 << 30, cache_size=256, matmul_precision="float32",
                stack_gemms="auto", recompute=True, tiny_kernel=True, host_kernel=False,
                host_fused=True, host_interpreter=True, check_indices=True, keep_freed_memory=True)
config = Config(DEFAULTS)


class JitSwitch(threading.local):
    """``dg.disable_jit``'s state in a thread: ``on`` inside the context."""

    on = False


jit_switch = JitSwitch()
# the disable_jit contexts open in any thread: a call reads this int first (a module list:
# ~10 ns, where the thread-local's attribute costs ~45 ns), nothing more when it is 0
jit_switch_open = [0]


class Executable:
    """A compiled program: ``exe(*arrays) -> list of arrays``; ``exe.source`` shows it.

    Which program runs is the backend's choice (its capabilities,
    :class:`~dualgpu.backends.base.Backend`). On a backend that ``runs_fused_kernels``
    (CuPy) with ``config["fuse"]``, ``exe.plan`` is the fusion plan
    (:class:`dualgpu.fusion.Plan`); where it ``replays_cuda_graphs``, ``exe.graph_runner``
    replays it as a CUDA graph. On one that ``runs_host_kernels`` (NumPy) with
    ``config["host_kernel"]`` (and ``"fuse"``), ``exe.host`` is the
    :class:`~dualgpu.codegen.host.HostProgram` that runs instead of the generated Python,
    when the program is tiny and a C++ compiler is found (else None: the Python runs); else,
    with ``config["host_interpreter"]``, ``exe.interp`` is the
    :class:`~dualgpu.codegen.interpreter.InterpretedProgram` that runs a tiny program by the
    prebuilt interpreter (no compile per program).
    Before that, with ``config["host_fused"]`` (and ``"fuse"``), ``exe.host_fused`` is the
    :class:`~dualgpu.codegen.host_regions.HostFusedProgram` that runs the fusion plan with
    its regions compiled for the host, when a region is large enough
    (:data:`~dualgpu.codegen.host_regions.HOST_FUSED_MIN` elements) and a compiler is found.

    Example::

        >>> from dualgpu.backends import backend_of
        >>> x = np.ones(3)
        >>> exe = Executable(dg.trace(lambda x: np.sin(x) * 2, x), backend_of([x]))
        >>> exe(x)
        [array([1.68294197, 1.68294197, 1.68294197])]
    """

    @property
    def source(self) -> str:
        """The program's text (generated Python, or the kernels' source): the generated
        function's, else the program's own ``source`` (a fused CUDA program and the
        interpreter's write theirs when first asked)."""
        text = getattr(self._fn, "__dualgpu_source__", None)
        return str(self._fn.source if text is None else text)

    def __init__(self, graph: Graph, backend: Any) -> None:
        self.graph = graph
        self.backend = backend
        self.plan = None
        self.graph_runner = None
        self.host = None
        self.host_fused = None
        self.interp = None
        self.matmul_precision = config["matmul_precision"]
        if config["keep_freed_memory"]:
            backend.keep_freed_memory()
        # closed-over constants: a result must not be (a view of) one of them either
        self._const_values = [c.value for c in graph.consts]
        # where the library's gathers do not check their indices, the program also
        # returns the bounds of the index arrays it receives, checked after each call
        self.index_sites = ()
        if not backend.checks_indices and config["check_indices"] and \
                (checked := with_index_bounds(graph)) is not None:
            graph, self.index_sites = checked
        if backend.runs_fused_kernels and config["fuse"]:
            self._fn = compile_fused(graph, backend, self.matmul_precision,
                                     config["recompute"], config["tiny_kernel"])
            self.plan = self._fn.plan
        elif backend.runs_host_kernels and config["fuse"] and config["host_fused"] and \
                (fused := host_fused_program(graph, config["recompute"])) is not None:
            self.host_fused = self._fn = fused
        elif backend.runs_host_kernels and config["fuse"] and config["host_kernel"] and \
                (host := host_program(graph)) is not None:
            self.host = self._fn = host
        elif backend.runs_host_kernels and config["fuse"] and config["host_interpreter"] and \
                (interp := interpreted_program(graph)) is not None:
            self.interp = self._fn = interp
        else:
            self._fn = compile_python(graph, backend.xp, arrays=True)
        # the generated Python returns arrays (``arrays=True``); the other programs' results
        # go through the backend (NumPy's host programs may return NumPy scalars)
        self._as_arrays = self.plan is not None or self.host is not None or \
            self.host_fused is not None
        # what an eager call runs: where graphs replay, under the program's matmul
        # precision, which the library's own products read (a replayed graph has its
        # products' precision baked in, so a replay skips setting it)
        self._eager = self._fn
        if backend.replays_cuda_graphs:
            runs = self._fn if self.plan is not None else _writing_into(self._fn, backend.xp)
            self._eager = _under(backend.matmul_precision(self.matmul_precision), runs)
            self.graph_runner = CudaGraphRunner(self._eager)

    def __call__(self, *arrays: Any) -> Any:
        if self.graph_runner is not None and config["cuda_graphs"]:
            reuse = config.get("cuda_graph_outputs") == "reuse"
            outs, replayed = self.graph_runner.run(arrays, reuse,
                                                   config.get("cuda_graph_max_bytes"))
            outs = self._checked(outs)
            # replayed outputs are the runner's own buffers ("reuse": documented) or a fresh
            # block; the eager calls of the runner are made to own their results here
            return outs if replayed else owned_outputs(outs, arrays, self._const_values)
        try:
            outs = self._eager(*arrays)
            if self._as_arrays:
                outs = self.backend.as_arrays(outs)
        except IndexError as e:
            raise out_of_bounds_error(self.graph, e) from e
        return owned_outputs(self._checked(outs), arrays, self._const_values)

    def _checked(self, outs: list) -> list:
        """The program's outputs, less the index bounds of :attr:`index_sites` (its last
        output, where it has them), which are read back (one copy to the host) and raise
        :class:`~dualgpu.errors.IndexOutOfBoundsError` for an index out of range."""
        if not self.index_sites:
            return outs
        message = first_out_of_bounds(self.index_sites, self.backend.to_host(outs[-1]))
        if message is not None:
            raise out_of_bounds_error(self.graph, message)
        return outs[:-1]


def _under(precision: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run within the context ``precision`` (a
    :class:`~dualgpu.backends.cupy.MatmulPrecision`)."""

    def run(*arrays: Any, **kwargs: Any) -> Any:
        with precision:
            return fn(*arrays, **kwargs)

    return run


def _writing_into(fn: Callable[..., Any], xp: Any) -> Callable[..., Any]:
    """``fn`` with the ``out=`` of :class:`~dualgpu.backends.cuda_graphs.CudaGraphRunner`:
    the outputs copied into the given arrays (the unfused CuPy path)."""

    def run(*arrays: Any, out: Any = None) -> Any:
        outs = fn(*arrays)
        if out is None:
            return outs
        for d, o in zip(out, outs):
            xp.copyto(d, o)
        return list(out)

    return run


def _memory_root(a: Any) -> Any:
    """The object owning ``a``'s memory: ``a`` itself, or the end of its ``.base`` chain."""
    for _ in range(64):
        base = getattr(a, "base", None)
        if base is None:
            return a
        a = base
    return a


def _shared_within(a: Any) -> bool:
    """Whether writing into ``a`` is not a plain write: a read-only array (NumPy's
    broadcast views are) or one whose elements share memory along an axis of stride 0."""
    flags = getattr(a, "flags", None)
    if flags is not None and not getattr(flags, "writeable", True):
        return True
    strides = getattr(a, "strides", None)
    return strides is not None and 0 in strides and any(
        s == 0 and n > 1 for s, n in zip(strides, a.shape))


def owned_outputs(outs: Any, inputs: Any, consts: Any = ()) -> list:
    """Results the caller owns: fresh, writeable arrays that alias no input, no constant and
    no other result. An output that is (or is a view of) an argument or a closed-over
    constant, that shares memory with an earlier output (a graph output repeated), or that
    is read-only or a broadcast view (the gradient of ``sum(x)`` is a fill of ones) is
    copied -- only those.

    Example::

        >>> x, y = np.ones(3), np.zeros(2)
        >>> outs = owned_outputs([x, y, y], [x])    # [copy of x, y, copy of y]
        >>> [o is a for o, a in zip(outs, [x, y, y])]
        [False, True, False]
        >>> ones = np.broadcast_to(1.0, (3,))      # read-only, stride 0
        >>> owned_outputs([ones], [])[0].flags.writeable
        True
    """
    seen = set()
    for o in outs:  # the common case, checked cheaply: owning arrays, none an input (a
        # broadcast or read-only view has a base; an array a program allocates is writeable)
        if getattr(o, "base", None) is not None or id(o) in seen:
            break
        seen.add(id(o))
    else:
        if seen.isdisjoint(map(id, inputs)) and seen.isdisjoint(map(id, consts)):
            return list(outs)
    taken = {id(_memory_root(a)) for a in inputs}
    taken.update(id(_memory_root(c)) for c in consts)
    res = []
    for o in outs:
        root = id(_memory_root(o))
        if (root in taken or _shared_within(o)) and hasattr(o, "copy") and hasattr(o, "shape"):
            o = o.copy()
            root = id(o)
        taken.add(root)
        res.append(o)
    return res
