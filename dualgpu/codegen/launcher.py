"""The CuPy launcher: runs a fusion plan on CuPy arrays -- generated region kernels, our
small-product kernels, the products on dualgpu's own cuBLAS handle, library calls -- eagerly
or into output destinations that a CUDA-graph replay hands to the caller. The inputs of a
concatenation are computed straight into their ranges of its output where the plan allows
(:func:`~dualgpu.fusion.concat_slots`): the flat gradient costs no copy.
"""
from __future__ import annotations

import numpy as np

from ..backends.cublas import (
    WORKSPACE_BYTES,
    CublasGemm,
    gemm_dtype_ok,
    gemm_layout,
    gemm_operands,
)
from ..core.ir import Literal, Var
from ..fusion import LibraryStep, Region, concat_slots, plan_graph
from .c_source import array_strides
from .cuda import BLOCK, plan_source, region_kernels
from .first_call import Layout, compile_modules, predicted_layouts
from .products import matmul_kernel_choice, product_kernel, product_layout
from .tiny import TINY_THREADS, tiny_program_kernel, worth_one_kernel


class FusedProgram:
    """Runs a plan on CuPy: library steps by their registry impls, regions as kernels.

    Calls are asynchronous: nothing here reads device memory from the host.
    """

    def __init__(self, graph, backend, precision: str = "float32", recompute: bool = False,
                 tiny: bool = False):
        self.graph = graph
        self.backend = backend
        self.cp = backend.xp
        self.precision = precision
        self.plan = plan_graph(graph, recompute=recompute)
        # with ``tiny``, a program of small values runs as one kernel of one block
        # (codegen/tiny.py) where that beats its plan's launches; the plan stays for
        # arguments whose strides the tiny kernel refuses
        self.tiny = tiny_program_kernel(graph) if tiny else None
        if self.tiny is not None and not worth_one_kernel(self.tiny, _launches(self.plan)):
            self.tiny = None
        self._source: str | None = None
        self._compiled: dict = {}
        self._ahead = False   # whether the first call compiled its kernels as one module
        # positions, among a region's outputs, of its grid reductions (in region.grid order)
        self._grid_positions = {
            r.index: _positions(r.outputs, [e.outs[0] for e in r.grid])
            for r in self.plan.regions}
        self._ones: dict = {}   # (length, dtype char) -> ones vector of _sum_as_product
        self._product_groups = product_groups(self.plan.steps)
        self._consts = {c.id: self.cp.asarray(c.value) if not backend.is_sparse(c.value)
                        else c.value for c in graph.consts}
        in_place = concat_slots(self.plan, _writes_into)
        self._concats = {cs.eqn.outs[0].id: cs for cs in in_place}   # output id -> slots
        self._slots = {h.id: (cs, i) for cs in in_place             # head id -> its range
                       for i, h in enumerate(cs.heads) if h is not None}

    @property
    def source(self) -> str:
        """The plan and its kernels' text (``dg.source``), written when first asked: the
        kernels that run are generated for their arguments' strides at the first call."""
        if self._source is None:
            text = plan_source(self.plan)
            if self.tiny is not None:
                text = (f"# {self.tiny.describe()}\n{self.tiny.source}\n"
                        f"# the plan, for arguments it refuses:\n{text}")
            self._source = text
        return self._source

    def _compile_ahead(self, arrays) -> None:
        """At the first call, the kernels whose layouts are known before the run
        (:func:`~dualgpu.codegen.first_call.predicted_layouts`: the regions' and our
        products') compiled together as a few NVRTC modules. A step whose arrays turn out
        otherwise compiles its own kernel, as :meth:`_functions` and
        :meth:`_product_kernel` key on the arrays given."""
        self._ahead = True
        known = {v.id: Layout.of(a) if a.dtype == v.dtype else Layout.new(v)
                 for v, a in zip(self.graph.inputs, arrays) if isinstance(a, self.cp.ndarray)}
        known.update((c.id, Layout.of(self._consts[c.id])) for c in self.graph.consts
                     if isinstance(self._consts[c.id], self.cp.ndarray))
        layouts = predicted_layouts(self.plan, known)
        regions, products, sources = [], [], {}
        for region in self.plan.regions:
            if not all(v.id in layouts for v in region.inputs):
                continue
            given = [layouts[v.id] for v in region.inputs]
            strides = [array_strides(k) for k in given]
            key = _region_key(region, strides)
            rk = region_kernels(region, {v.id: st for v, st in zip(region.inputs, strides)})
            if rk.threads == 0 or key in self._compiled:
                continue
            regions.append((key, rk))
            sources[rk.name] = rk.source
            if rk.finish_name and rk.finish_source:
                sources[rk.finish_name] = rk.finish_source
        for key, count in self._predicted_products(layouts):
            if (key, count) not in self._compiled:
                choice, m, n, k, sa, sb, dtype = key
                pk = product_kernel(choice, m, n, k, sa, sb, np.dtype(dtype), count)
                products.append(((key, count), pk))
                sources[pk.name] = pk.source
        if len(sources) < 2:
            return
        try:
            fns = compile_modules(self.cp, sources)
        except Exception:  # noqa: BLE001 -- only a speed-up: each kernel compiles at its
            return         # step as it would without it, and raises there if it must
        for key, rk in regions:
            self._compiled[key] = (rk, fns[rk.name],
                                   fns[rk.finish_name] if rk.finish_source else None)
        for key_count, pk in products:
            self._compiled[key_count] = (pk.blocks, fns[pk.name])

    def _predicted_products(self, layouts: dict) -> set:
        """``{(key, count)}`` of the product kernels a call will launch, by the predicted
        ``layouts``: the products of a group batched as :meth:`_batched_products` does, the
        others one at a time."""
        def key_of(eqn):
            a, b = (layouts.get(getattr(x, "id", None)) for x in eqn.inputs)
            return None if a is None or b is None else product_key(a, b)

        wanted, batched = set(), set()
        for group in self._product_groups.values():
            same: dict = {}
            for i in group:
                key = key_of(self.plan.steps[i].eqn)
                if key is not None:
                    same.setdefault(key, []).append(i)
            for key, members in same.items():
                for chunk in _batches(members):
                    wanted.add((key, len(chunk)))
                    batched.update(chunk)
        for i, step in enumerate(self.plan.steps):
            if isinstance(step, LibraryStep) and i not in batched \
                    and step.eqn.prim.lowering("library") == "gemm":
                key = key_of(step.eqn)
                if key is not None:
                    wanted.add((key, 1))
        return wanted

    def _functions(self, region, arrays):
        raw = (region.index,) + tuple(a.strides for a in arrays)   # a call's cheap key
        fns = self._compiled.get(raw)
        if fns is None:
            # the kernel is specialised on element strides (a size-1 axis's are 0: any
            # stride there reads the same element), so other byte strides may share it
            strides = [array_strides(a) for a in arrays]
            key = _region_key(region, strides)
            fns = self._compiled.get(key)
            if fns is None:
                rk = region_kernels(region, {v.id: st for v, st in zip(region.inputs, strides)})
                main = self.cp.RawKernel(rk.source, rk.name)
                finish = self.cp.RawKernel(rk.finish_source, rk.finish_name) \
                    if rk.finish_source else None
                fns = self._compiled[key] = (rk, main, finish)
            self._compiled[raw] = fns
        return fns

    def _run_region(self, region, env):
        cp = self.cp
        arrays = [self._as_input(self._read(env, v), v) for v in region.inputs]
        rk, main, finish = self._functions(region, arrays)
        if rk.threads == 0:
            self._eager_region(region, env)
            return
        outs = [self._dest(env, v) for v in region.outputs]
        grid = self._grid_positions[region.index]
        parts = [cp.empty(rk.blocks, dtype=e.outs[0].dtype) for e in region.grid]
        main((rk.blocks,), (BLOCK,),
             tuple(arrays + [o for i, o in enumerate(outs) if i not in grid] + parts))
        if finish is not None:
            fargs = []
            for p, i in zip(parts, grid):
                fargs += [p, outs[i]]
            finish((len(parts),), (BLOCK,), tuple(fargs))
        for v, o in zip(region.outputs, outs):
            env[v.id] = o

    def _dest(self, env, v):
        """Where the value ``v`` is written: its slot of the caller's output block when it
        is a program output (``__call__(..., out=)``), its range of a concatenation's output
        when it is computed in place there, else a new array."""
        dests = env.get(_DESTS)
        if dests is not None:
            d = dests.pop(v.id, None)
            if d is not None:
                return d
        slot = self._slots.get(v.id)
        if slot is not None:
            return self._range(env, *slot).reshape(v.shape)
        return self.cp.empty(v.shape, dtype=v.dtype)

    def _range(self, env, cs, i):
        """The range of input ``i`` of the in-place concatenation ``cs`` in its output, flat.
        The output is made (or taken from the caller's destinations) when a first input is
        computed, and bound to its variable at once: the steps before the concatenation
        never read that variable, and the plan releases it only after its last reader."""
        out = cs.eqn.outs[0]
        whole = env.get(out.id)
        if whole is None:
            whole = env[out.id] = self._dest(env, out)
        start = cs.offsets[i]
        return whole.reshape(-1)[start:start + cs.eqn.inputs[i].aval.size]

    def _concatenate(self, eqn, env):
        """The output of an in-place concatenation once every input is in its range: an
        input computed elsewhere (copied by design, or its producer made its own array: an
        eager fallback) is copied in. None when no input was computed in place."""
        cs = self._concats[eqn.outs[0].id]
        whole = env.get(eqn.outs[0].id)
        if whole is None:
            return None
        for i, (a, head) in enumerate(zip(eqn.inputs, cs.heads)):
            x = self._read(env, a)
            if head is None or not self._in_range(x, whole, cs.offsets[i]):
                self.cp.copyto(self._range(env, cs, i).reshape(a.shape), x)
        return whole

    def _in_range(self, x, whole, start) -> bool:
        """Whether the array ``x`` is the values at element ``start`` of ``whole``'s memory:
        C-contiguous, of its dtype, at that address (the input's size is the range's)."""
        return isinstance(x, self.cp.ndarray) and x.flags.c_contiguous \
            and x.dtype == whole.dtype \
            and _address(x) == _address(whole) + start * whole.itemsize

    def _as_input(self, a, v):
        if not isinstance(a, self.cp.ndarray):
            a = self.cp.asarray(a)
        return a if a.dtype == v.dtype else a.astype(v.dtype)

    def _eager_region(self, region, env):
        for eqn in region.eqns:
            self._library(eqn, env)

    def _read(self, env, a):
        if isinstance(a, Literal):
            return a.value
        if a.id in self._consts:
            return self._consts[a.id]
        return env[a.id]

    def _product_spec(self, eqn, env):
        """``(key, a, b)`` when our kernel computes the 1-D/2-D float product ``eqn``
        (:func:`matmul_kernel_choice`: tiny, thin or skinny; ``key`` names the kernel:
        choice, sizes, strides, dtype), else None (cuBLAS does it)."""
        a, b = (self._read(env, x) for x in eqn.inputs)
        if not (isinstance(a, self.cp.ndarray) and isinstance(b, self.cp.ndarray)):
            return None
        key = product_key(a, b)
        return None if key is None else (key, a, b)

    def _product_kernel(self, key, count: int):
        """``(blocks, RawKernel)`` of our product kernel ``key`` for ``count`` products."""
        fn = self._compiled.get((key, count))
        if fn is None:
            choice, m, n, k, sa, sb, dtype = key
            pk = product_kernel(choice, m, n, k, sa, sb, np.dtype(dtype), count)
            fn = self._compiled[(key, count)] = (pk.blocks, self.cp.RawKernel(pk.source,
                                                                              pk.name))
        return fn

    def _small_matmul(self, eqn, env):
        """``eqn``'s product by our kernel into its destination, else None (cuBLAS)."""
        spec = self._product_spec(eqn, env)
        if spec is None:
            return None
        key, a, b = spec
        blocks, fn = self._product_kernel(key, 1)
        out = self._dest(env, eqn.outs[0])
        fn((blocks,), (BLOCK,), (a, b, out))
        return out

    def _batched_products(self, group, env) -> set:
        """Run together, one launch per kernel, the products of ``group`` (indices of
        consecutive, independent matmul steps) that our kernel computes with the same key
        (``h @ W2``, ``ḣ @ W2``, ``h @ V2``: one graph node instead of three, and three times
        the blocks). Returns the indices it ran; the others run at their own step."""
        same: dict = {}
        for i in group:
            eqn = self.plan.steps[i].eqn
            spec = self._product_spec(eqn, env)
            if spec is not None:
                same.setdefault(spec[0], []).append((i, eqn, spec[1], spec[2]))
        ran = set()
        for key, members in same.items():
            for chunk in _batches(members):
                blocks, fn = self._product_kernel(key, len(chunk))
                args = []
                for i, eqn, a, b in chunk:
                    out = env[eqn.outs[0].id] = self._dest(env, eqn.outs[0])
                    args += [a, b, out]
                    ran.add(i)
                fn((blocks, len(chunk)), (BLOCK,), tuple(args))
        return ran

    def _sum_as_product(self, eqn, env):
        """A float sum over the leading (or the trailing) axes of a C-contiguous array as a
        product with a vector of ones on our cuBLAS handle, at full precision: reading
        the array once, coalesced (CuPy reduces a long leading axis with one thread per
        column: 44 µs for 4096×512 float32 on the H200, against ~3 µs); else None."""
        cp = self.cp
        x = self._read(env, eqn.inputs[0])
        axes = tuple(sorted(eqn.params["axes"]))
        if not isinstance(x, cp.ndarray) or not gemm_dtype_ok(x.dtype) \
                or not x.flags.c_contiguous or x.size == 0 or not axes or len(axes) == x.ndim:
            return None
        nd, r = x.ndim, len(axes)
        if axes == tuple(range(r)):
            rows = int(np.prod(x.shape[:r]))
            leading = True
        elif axes == tuple(range(nd - r, nd)):
            rows = int(np.prod(x.shape[: nd - r]))
            leading = False
        else:
            return None
        a = x.reshape(rows, x.size // rows)
        length = a.shape[0] if leading else a.shape[1]
        ones = self._ones.get((length, x.dtype.char))
        if ones is None:
            ones = cp.ones(length, dtype=x.dtype)
            stream = cp.cuda.get_current_stream()
            if not stream.is_capturing():
                # filled before any stream reads it (another thread's call may, at once)
                stream.synchronize()
            self._ones[(length, x.dtype.char)] = ones
        left, right = (ones, a) if leading else (a, ones)
        lay = gemm_layout(left.shape, left.strides, right.shape, right.strides, x.itemsize)
        out = self._dest(env, eqn.outs[0])
        CublasGemm.get().run(lay, left, right, out, "float32")
        return out

    def _gemm(self, eqn, env):
        """A float32/float64 product on dualgpu's own cuBLAS handle (a CUDA-graph capture
        holds it; CuPy's own cuBLAS calls are refused there), else None."""
        a, b = (self._read(env, x) for x in eqn.inputs)
        cp = self.cp
        if not (isinstance(a, cp.ndarray) and isinstance(b, cp.ndarray)) \
                or a.dtype != b.dtype or not gemm_dtype_ok(a.dtype):
            return None
        prepared = gemm_operands(a, b, cp)
        if prepared is None:
            return None
        a, b, lay = prepared
        out = self._dest(env, eqn.outs[0])
        CublasGemm.get().run(lay, a, b, out, self.precision)
        return out

    def _library(self, eqn, env):
        if eqn.outs[0].id in self._concats:
            out = self._concatenate(eqn, env)
            if out is not None:
                env[eqn.outs[0].id] = out
                return
        form = eqn.prim.lowering("library")
        if form == "sum_as_gemm":
            out = self._sum_as_product(eqn, env)
            if out is not None:
                env[eqn.outs[0].id] = out
                return
        if form == "gemm":
            out = self._small_matmul(eqn, env)
            if out is None:
                out = self._gemm(eqn, env)
            if out is not None:
                env[eqn.outs[0].id] = out
                return
        outs = eqn.prim.impl(self.cp, *[self._read(env, a) for a in eqn.inputs], **eqn.params)
        outs = outs if eqn.prim.multiple_results else [outs]
        for v, o in zip(eqn.outs, outs):
            env[v.id] = o

    def __call__(self, *arrays, out=None):
        """The outputs of the program on ``arrays``; with ``out`` (one C-contiguous array
        per output), every output is written into its array, produced there directly where
        a kernel or GEMM computes it, copied there otherwise."""
        cp = self.cp
        if self.tiny is not None:
            res = self._run_tiny(arrays, out)
            if res is not None:
                return res
        if not self._ahead:
            self._compile_ahead(arrays)
        env = {v.id: a for v, a in zip(self.graph.inputs, arrays)}
        if out is not None:
            env[_DESTS] = self._destinations(out)
        ran = ()    # steps already run with a batch of products
        for i, (step, dead) in enumerate(zip(self.plan.steps, self.plan.releases)):
            if i in self._product_groups:
                ran = self._batched_products(self._product_groups[i], env)
            if i in ran:
                pass
            elif isinstance(step, LibraryStep):
                self._library(step.eqn, env)
            else:
                self._run_region(step, env)
            for vid in dead:  # back to the pool: a call holds what is alive, not all it made
                env.pop(vid, None)
        res = []
        for a in self.graph.outputs:
            if isinstance(a, Literal):
                res.append(cp.full((), a.value, dtype=a.dtype))
            else:
                res.append(self._read(env, a))
        if out is not None:
            for i, (o, d) in enumerate(zip(res, out)):
                if o is not d:
                    cp.copyto(d, o)
                    res[i] = d
        return res

    def _run_tiny(self, arrays, out):
        """The program as its one tiny kernel, its outputs written into ``out`` where they
        fit (else copied there); None when the arguments' strides make it not tiny."""
        cp = self.cp
        args = [self._as_input(a, v) for v, a in zip(self.graph.inputs, arrays)]
        args += [self._consts[c.id] for c in self.graph.consts]
        key = ("tiny program",) + tuple(a.strides for a in args)
        if key not in self._compiled:
            tk = tiny_program_kernel(self.graph, {v.id: array_strides(a)
                                                  for v, a in zip(self.tiny.inputs, args)})
            self._compiled[key] = None if tk is None else cp.RawKernel(tk.source, tk.name)
        fn = self._compiled[key]
        if fn is None:
            return None
        dests = out if out is not None else [None] * len(self.graph.outputs)
        res = [d if d is not None and _fits(d, a) else cp.empty(a.shape, dtype=a.dtype)
               for a, d in zip(self.graph.outputs, dests)]
        fn((1,), (TINY_THREADS,), tuple(args + res))
        if out is not None:
            for k, d in enumerate(out):
                if res[k] is not d:
                    cp.copyto(d, res[k])
                    res[k] = d
        return res

    def step_times(self, *arrays, repeat: int = 20) -> list:
        """``[(step index, label, microseconds)]``: the device time of each step of the plan,
        for profiling. Each step is captured ``repeat`` times in a row as one CUDA graph,
        replayed once between two events, so the time is the step's own GPU time, with
        neither the host time of launching it nor a graph launch's gap (a step that cannot
        be captured is timed eagerly instead, and its label says so).

        Example::

            >>> import cupy as cp
            >>> from dualgpu.backends.cupy import get_cupy_backend
            >>> g = dg.trace(dg.grad(lambda w, x: cp.sum(cp.tanh(x @ w))), cp.ones((8, 4)),
            ...              cp.ones((16, 8)))
            >>> rows = FusedProgram(g, get_cupy_backend()).step_times(cp.ones((8, 4)),
            ...                                                      cp.ones((16, 8)))
            >>> [label.split()[0] for _, label, _ in rows]
            ['library', 'kernel', 'library']
        """
        cp = self.cp
        gemm = CublasGemm.get()
        workspace = cp.empty(WORKSPACE_BYTES, dtype=cp.uint8)
        stream = cp.cuda.Stream(non_blocking=True)
        env = {v.id: a for v, a in zip(self.graph.inputs, arrays)}
        rows = []
        with stream:
            for i, step in enumerate(self.plan.steps):
                if isinstance(step, LibraryStep):
                    def run(step=step):
                        self._library(step.eqn, env)
                    e = step.eqn
                    label = (f"library {e.prim.name} " + " ".join(
                        str(tuple(getattr(a, "shape", ()))) for a in e.inputs))
                else:
                    def run(step=step):
                        self._run_region(step, env)
                    label = (f"kernel region {step.index}: {len(step.eqns)} eqns, domain "
                             f"{tuple(step.domain)}, loop axes {tuple(step.loop_axes)}")
                run()   # compiles, and fills env for the steps after
                t = self._graph_time(run, stream, gemm, workspace, repeat)
                if t is None:
                    t = self._event_time(run, stream, repeat)
                    label += " (not capturable: eager, launch included)"
                rows.append((i, label, t))
        stream.synchronize()
        return rows

    def _graph_time(self, run, stream, gemm, workspace, repeat):
        """Microseconds per ``run()``: ``repeat`` runs captured back to back in one CUDA
        graph, replayed once between events (so no launch gap is counted); None when the
        step cannot be captured."""
        cp = self.cp
        gemm.capture_workspace = lambda: workspace
        try:
            stream.begin_capture(cp.cuda.runtime.streamCaptureModeRelaxed)
            try:
                for _ in range(repeat):
                    run()
            finally:
                graph = stream.end_capture()
        except Exception:  # noqa: BLE001 - this step cannot be captured
            return None
        finally:
            gemm.capture_workspace = None
        graph.launch(stream)
        return self._event_time(lambda: graph.launch(stream), stream, 1) / repeat

    def _event_time(self, run, stream, repeat):
        """Microseconds per ``run()`` on ``stream``: two events around ``repeat`` runs."""
        cp = self.cp
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        for _ in range(repeat):
            run()
        stop.record(stream)
        stop.synchronize()
        return cp.cuda.get_elapsed_time(start, stop) * 1e3 / repeat

    def _destinations(self, out) -> dict:
        """Var id -> the caller's array for each output computed by an equation of the
        program (first occurrence only: a repeated output or an input is copied)."""
        inputs = {v.id for v in self.graph.inputs} | set(self._consts)
        dests = {}
        for a, d in zip(self.graph.outputs, out):
            if isinstance(a, Var) and a.id not in inputs and a.id not in dests \
                    and d.flags.c_contiguous and d.dtype == a.dtype \
                    and tuple(d.shape) == tuple(a.shape):
                dests[a.id] = d
        return dests


_DESTS = ("destinations",)   # env key of the output destinations (never a var id)


MAX_BATCHED = 8              # products one launch computes at most


def product_key(a, b):
    """The key of our product kernel for ``a @ b`` (arrays, or
    :class:`~dualgpu.codegen.first_call.Layout`: shapes, strides, dtypes), None where
    cuBLAS computes it (:func:`matmul_kernel_choice`: tiny, thin or skinny products of
    1-D/2-D floats)."""
    if len(a.shape) not in (1, 2) or len(b.shape) not in (1, 2) or a.dtype != b.dtype \
            or a.dtype.kind != "f" or 0 in a.shape or 0 in b.shape:
        return None
    m, n, k, sa, sb = product_layout(a, b)
    choice = matmul_kernel_choice(m, n, k, sa, sb, a.itemsize)
    return None if choice is None else (choice, m, n, k, sa, sb, a.dtype.char)


def _region_key(region, strides: list) -> tuple:
    """The key of a region's kernels specialised on these element strides (apart from the
    keys of calls' byte strides, which start with the region's index)."""
    return ("region", region.index) + tuple(strides)


def _batches(members: list) -> list:
    """The launches of the products of one key in a group: chunks of two to
    :data:`MAX_BATCHED` (a last one left alone runs at its own step)."""
    chunks = [members[i:i + MAX_BATCHED] for i in range(0, len(members) - 1, MAX_BATCHED)]
    return [c for c in chunks if len(c) >= 2]


def product_groups(steps) -> dict:
    """Index of the first step -> indices of each run of two or more consecutive product
    steps (ops of library form ``gemm``: matmul) of which none reads another's result:
    products that may run in one launch.

    Example::

        >>> x, w, v = np.ones((8, 4)), np.ones((4, 2)), np.ones((4, 2))
        >>> g = dg.trace(lambda x, w, v: (x @ w) * (x @ v) @ w.T, x, w, v)
        >>> from dualgpu.fusion import plan_graph
        >>> product_groups(plan_graph(g).steps)   # x @ w and x @ v; not (...) @ w.T
        {0: (0, 1)}
    """
    groups: dict[int, tuple[int, ...]] = {}
    run: list[int] = []
    made: set[int] = set()
    for i, step in enumerate(steps):
        if isinstance(step, LibraryStep) and step.eqn.prim.lowering("library") == "gemm":
            if run and not any(isinstance(a, Var) and a.id in made for a in step.eqn.inputs):
                run.append(i)
                made.add(step.eqn.outs[0].id)
                continue
            if len(run) > 1:
                groups[run[0]] = tuple(run)
            run, made = [i], {step.eqn.outs[0].id}
        else:
            if len(run) > 1:
                groups[run[0]] = tuple(run)
            run, made = [], set()
    if len(run) > 1:
        groups[run[0]] = tuple(run)
    return groups


def _writes_into(step) -> bool:
    """Whether :class:`FusedProgram` computes the values of ``step`` into the destinations
    ``_dest`` gives: a kernel's outputs, a product's, a sum's (their eager fallbacks do not;
    an in-place concatenation checks)."""
    return isinstance(step, Region) \
        or step.eqn.prim.lowering("library") in ("gemm", "sum_as_gemm")


def _address(a) -> int:
    """The device address of the first element of the CuPy array ``a``."""
    return a.data.ptr


def _fits(d, a) -> bool:
    """Whether a kernel can write the value ``a`` straight into the array ``d``."""
    return d.flags.c_contiguous and d.dtype == a.dtype and tuple(d.shape) == tuple(a.shape)


def _launches(plan) -> int:
    """Launches of a call of the plan: its kernels and its library steps."""
    return plan.kernel_count() + len(plan.library_steps)


def _positions(vars_: list, wanted: list) -> list:
    """Positions in ``vars_`` of each of ``wanted`` (by id)."""
    where = {v.id: i for i, v in enumerate(vars_)}
    return [where[v.id] for v in wanted]


def compile_fused(graph, backend, precision: str = "float32", recompute: bool = False,
                  tiny: bool = False):
    """Plan ``graph`` and return its :class:`FusedProgram` ``fn``: ``fn(*arrays)`` returns
    the list of outputs (CuPy arrays), ``fn.source`` is the program's text. Kernels are
    generated and compiled on first use, once per input stride pattern. With ``tiny``, a
    program of small values runs as one kernel of one block (:mod:`dualgpu.codegen.tiny`).

    Example::

        >>> import cupy as cp
        >>> from dualgpu.backends.cupy import get_cupy_backend
        >>> x = v = cp.ones(3)
        >>> f = lambda x: cp.sum(cp.tanh(x) ** 2)
        >>> fn = compile_fused(dg.trace(dg.hvp(f), x, v), get_cupy_backend())
        >>> hv = fn(x, v)[-1]
        >>> hv.shape
        (3,)
    """
    return FusedProgram(graph, backend, precision, recompute, tiny)
