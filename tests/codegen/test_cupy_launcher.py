"""The CuPy launcher (``codegen/launcher.FusedProgram``) on the CPU, with a fake CuPy: every
region "kernel" evaluates its region with NumPy (:func:`dualgpu.fusion.emulate_region`),
every product on "our cuBLAS handle" runs its :class:`~dualgpu.backends.cublas.GemmLayout`
over the operands' memory (:func:`~dualgpu.backends.cublas.emulate_gemm`), and our small
product kernels run NumPy's matmul. So the launcher's own logic -- the order of the steps,
the values it releases, the products and sums it hands to cuBLAS, and above all the output
destinations a CUDA-graph replay writes into (``__call__(..., out=)``) and the
concatenations whose inputs are computed into their ranges of the output -- is checked
against the generated NumPy program on fuzzed programs, without a GPU (tests/gpu runs the
real one).
"""
from __future__ import annotations

import os
import types

import fuzz_programs as fp
import numpy as np
import product_harness
import pytest
import scipy.sparse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiny_harness import GXX

import dualgpu as dg
import dualgpu.codegen.launcher as cuda_codegen
from dualgpu.backends.cublas import emulate_gemm, gemm_layout
from dualgpu.codegen.c_source import array_strides
from dualgpu.codegen.launcher import FusedProgram
from dualgpu.codegen.python import compile_python
from dualgpu.fusion import emulate_region

HOST_KERNELS = GXX is not None  # our kernels' CUDA text run on the host (needs g++)
# DUALGPU_LAUNCHER_EXAMPLES=1500 for a longer campaign (the flat losses' 1500 programs: ~2
# minutes on 2 shared cores, 0 failures since FLAT_LOSS_FOUND's were fixed)
EXAMPLES = int(os.environ.get("DUALGPU_LAUNCHER_EXAMPLES", 12))
IDENTITY = {"sum": 0, "prod": 1, "max": -np.inf, "min": np.inf}
REDUCE = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


def _unwritten(shape, dtype=np.float64):
    """A new array of NaN (-12345 for integers, wrapped to narrow ones): a value nothing
    wrote shows up."""
    dt = np.dtype(dtype)
    return np.full(shape, np.nan if dt.kind in "fc" else np.array(-12345).astype(dt), dtype=dt)


def _fake_cupy():
    fake = types.ModuleType("cupy")
    fake.__getattr__ = lambda name: getattr(np, name)
    fake.ndarray = np.ndarray

    class RawKernel:   # our small product kernels (a region's kernels are bound below)
        def __init__(self, source, name):
            self.name = name
            LOG.append(name.split("_")[1])

        def __call__(self, grid, block, args):   # (a, b, c) triples, one a block row
            assert len(args) == 3 * (grid[1] if len(grid) > 1 else 1)
            for a, b, out in zip(args[::3], args[1::3], args[2::3]):
                out[...] = np.matmul(a, b).reshape(out.shape)

    class Stream:   # one host-ordered stream: nothing is ever in flight
        def is_capturing(self):
            return False

        def synchronize(self):
            pass

    def concatenate(arrays, axis=0):
        LOG.append("concatenate")
        return np.concatenate(arrays, axis=axis)

    def copyto(dst, src):
        LOG.append("copyto")
        np.copyto(dst, src)

    class RawModule:   # the first call's kernels compiled together
        def __init__(self, code):
            self.code = code
            LOG.append("module")

        def get_function(self, name):   # the kernel emulation of the time, not logged
            assert f" {name}(" in self.code, name
            LOG.append("module:" + name.split("_")[1])
            kernel = fake.RawKernel.__new__(fake.RawKernel)
            kernel.name = name
            return kernel

    fake.empty = _unwritten
    fake.RawModule = RawModule
    fake.concatenate = concatenate
    fake.copyto = copyto
    fake.RawKernel = RawKernel
    class Device:
        def __init__(self, id=0):
            self.id = id

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    fake.cuda = types.SimpleNamespace(get_current_stream=Stream, Device=Device)
    return fake


LOG: list = []


class FakeBackend:
    name = "cupy"
    on_device = True

    def __init__(self):
        self.xp = _fake_cupy()

    def is_sparse(self, x) -> bool:
        return scipy.sparse.issparse(x)


class _Main:
    def __init__(self, region, rk):
        self.region, self.rk = region, rk

    def __call__(self, grid, block, args):
        region, rk = self.region, self.rk
        grid_ids = [e.outs[0].id for e in region.grid]
        outs = [v for v in region.outputs if v.id not in grid_ids]
        assert len(args) == len(region.inputs) + len(outs) + len(grid_ids)
        env = {v.id: a for v, a in zip(region.inputs, args)}
        emulate_region(region, env)
        rest = args[len(region.inputs):]
        for v, a in zip(outs, rest):
            assert a.shape == tuple(v.shape) and a.dtype == v.dtype and a.flags.c_contiguous
            a[...] = env[v.id]
        for (var, op, _), part in zip(rk.grid, rest[len(outs):]):
            part[...] = _identity(op, part.dtype)
            part[0] = np.asarray(env[var.id]).reshape(-1)[0]   # one element


def _identity(op, dtype):
    """The identity of a grid reduction's partials (an integer max's or min's: the dtype's
    extremes)."""
    if np.dtype(dtype).kind in "iu" and op in ("max", "min"):
        info = np.iinfo(dtype)
        return info.min if op == "max" else info.max
    return IDENTITY[op]


class _Finish:
    def __init__(self, rk):
        self.rk = rk

    def __call__(self, grid, block, args):
        for (part, out), (_, op, _) in zip(zip(args[::2], args[1::2]), self.rk.grid):
            out[...] = REDUCE[op](part)


class EmulatedProgram(FusedProgram):
    """FusedProgram whose region kernels are emulated with NumPy."""

    def _functions(self, region, arrays):
        rk, _, _ = super()._functions(region, arrays)
        LOG.append("region")
        return rk, _Main(region, rk), (_Finish(rk) if rk.finish_source else None)


def _flat(a):
    """``(flat element buffer, element offset)`` of the memory the array ``a`` reads, as a
    device pointer and strides see it: the elements from ``a``'s lowest address to its
    highest, whatever the layout of the array that owns them (an einsum's output need not
    be C-ordered), so that a read outside ``a``'s own span fails."""
    low = a[tuple(slice(None, None, -1) if s < 0 else slice(None) for s in a.strides)]
    span = 1 + sum((n - 1) * s for n, s in zip(low.shape, low.strides)) // a.itemsize
    flat = np.lib.stride_tricks.as_strided(low, shape=(span,), strides=(a.itemsize,))
    offset = _address(a) - _address(low)
    assert offset % a.itemsize == 0
    return flat, offset // a.itemsize


def _address(a) -> int:
    return a.__array_interface__["data"][0]


class FakeGemm:
    """The products of "our cuBLAS handle": each layout run over the operands' memory."""

    layouts: list = []

    @classmethod
    def get(cls):
        return cls()

    def run(self, lay, a, b, out, precision):
        # cuBLAS sees memory: a contiguous output of the right size (a sum's result keeps
        # its unit axes, e.g. (1, 1) for the (1,) of the product)
        assert out.flags.c_contiguous and out.size == int(np.prod(lay.out_shape))
        assert lay == gemm_layout(a.shape, a.strides, b.shape, b.strides, a.itemsize)
        fa, fb = _flat(a), _flat(b)
        FakeGemm.layouts.append(lay)
        LOG.append("gemm")
        out.reshape(lay.batch, lay.m, lay.n)[...] = emulate_gemm(lay, *fa, *fb)


@pytest.fixture(autouse=True)
def _fake_gemm(monkeypatch):
    import dualgpu.ops.shape
    import dualgpu.ops.special_functions
    import dualgpu.rules.elementwise_rules
    from dualgpu.backends import backend_of

    numpy_backend = backend_of([np.ones(1)])
    for module in (dualgpu.rules.elementwise_rules, dualgpu.ops.special_functions,
                   dualgpu.ops.shape):   # special functions, scatter
        monkeypatch.setattr(module, "backend_for_xp", lambda xp: numpy_backend)
    monkeypatch.setattr(cuda_codegen, "CublasGemm", FakeGemm)
    monkeypatch.setattr(cuda_codegen, "_address", _address)
    FakeGemm.layouts = []
    LOG.clear()


def _destinations(graph):
    return [_unwritten(tuple(a.aval.shape), a.aval.dtype) for a in graph.outputs]


def _check(graph, args):
    """The launcher, with and without recomputation in the plan, eager and into
    destinations, against the generated NumPy program."""
    want = compile_python(graph, np)(*args)
    for recompute in (False, True):
        program = EmulatedProgram(graph, FakeBackend(), recompute=recompute)
        for got in (program(*args), program(*args)):
            assert len(got) == len(want)
            for g, w in zip(got, want):
                np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-11,
                                           atol=1e-12)
        dests = _destinations(graph)
        got = program(*args, out=dests)
        for g, d, w in zip(got, dests, want):
            assert g is d, "an output must be written into its destination"
            np.testing.assert_allclose(d, np.asarray(w), rtol=1e-11, atol=1e-12)
    return program


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(fp.programs(max_nodes=7, sparse=False))
def test_fuzzed_programs_and_their_hvps(prog):
    f, loss = prog.functions()
    args = tuple(np.asarray(a) for a in prog.args())
    _check(dg.trace(dg.jit(f), *args), args)
    _check(dg.trace(dg.grad(loss, argnums=tuple(range(len(args)))), *args), args)
    _check(dg.trace(dg.hvp(loss), *args, args[0]), args + (args[0],))


def _mlp(batch=64):
    rng = np.random.default_rng(0)
    W1, W2 = rng.standard_normal((20, 32)) / 5, rng.standard_normal((32, 3)) / 5
    X, Y = rng.standard_normal((batch, 20)), rng.standard_normal((batch, 3))

    def loss(W1, W2):
        h = np.tanh(X @ W1)
        return np.mean((h @ W2 - Y) ** 2)

    return loss, (W1, W2), (rng.standard_normal(W1.shape), rng.standard_normal(W2.shape))


def test_mlp_hvp_runs_its_products_on_the_handle_with_transposes():
    loss, (W1, W2), (V1, V2) = _mlp(batch=512)
    g = dg.trace(dg.hvp(loss, argnums=(0, 1)), W1, W2, (V1, V2))
    _check(g, (W1, W2, V1, V2))
    ops = {(lay.op_b, lay.op_a) for lay in FakeGemm.layouts}
    assert FakeGemm.layouts and any("T" in pair for pair in ops), ops


def test_independent_products_of_one_kernel_run_in_one_launch(monkeypatch):
    """The MLP HVP's three skinny products (h @ W2, ḣ @ W2, h @ V2) and its three thin ones
    run as one launch each, their strided operands read right (by the kernels' indexing),
    eager and into destinations; a product that reads another's result waits its turn."""
    loss, (W1, W2), (V1, V2) = _mlp(batch=800)   # (800, 32) @ (32, 3): skinny
    backend = FakeBackend()
    backend.xp.RawKernel = _kernel_emulation(monkeypatch)
    calls = []
    launch = backend.xp.RawKernel.__call__

    def counting(self, grid, block, args):
        calls.append((self.name.split("_")[1], len(args) // 3))
        return launch(self, grid, block, args)

    monkeypatch.setattr(backend.xp.RawKernel, "__call__", counting)
    g = dg.trace(dg.hvp(loss, argnums=(0, 1)), W1, W2, (V1, V2))
    want = compile_python(g, np)(W1, W2, V1, V2)
    program = EmulatedProgram(g, backend, recompute=True)
    for out in (None, _destinations(g)):
        got = program(W1, W2, V1, V2, out=out)
        for a, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(a), w, rtol=1e-11, atol=1e-12)
    assert ("skinny", 3) in calls, calls
    assert max(n for _, n in calls) <= 3
    # the batching itself: x @ w and x @ v together; (x @ w) * (x @ v) @ w.T after them
    x, w, v = (np.random.default_rng(i).standard_normal(s)
               for i, s in enumerate([(700, 30), (30, 4), (30, 4)]))
    calls.clear()
    got = EmulatedProgram(dg.trace(lambda x, w, v: ((x @ w) * (x @ v)) @ w.T, x, w, v),
                          backend)(x, w, v)[0]
    np.testing.assert_allclose(got, ((x @ w) * (x @ v)) @ w.T, rtol=1e-11, atol=1e-11)
    assert calls[0] == ("skinny", 2), calls


def test_the_first_call_compiles_its_kernels_as_one_module():
    """Every region kernel of the first call comes from one module compiled before the run
    (the layouts predicted: arguments as given, values the program makes C-contiguous,
    whatever the first call's layout); an argument of another layout at a later call gets
    its regions' own kernels, with the same values."""
    def f(x, y):
        a = np.sin(x) * y
        return np.tanh(a @ y.T) + 1.0, np.sum(a * a, axis=1)

    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((40, 30)), rng.standard_normal((40, 30))
    g = dg.trace(f, x, y)
    want = f(x, y)
    for layouts in ((x, np.asfortranarray(x)), (np.asfortranarray(x), x)):
        LOG.clear()
        program = EmulatedProgram(g, FakeBackend())
        assert len(program.plan.regions) >= 2
        for xs in layouts:
            for a, w in zip(program(xs, y), want):
                np.testing.assert_allclose(a, w, rtol=1e-11, atol=1e-12)
        assert LOG.count("module") == 1 and LOG.index("module") < LOG.index("region")
        assert LOG.count("fused") == 1, LOG   # the region reading x, at the second call
    # a stride of a size-1 axis reads nothing else: the kernel compiled ahead serves it
    x1, y1 = x[:1], y[:1]
    odd = np.lib.stride_tricks.as_strided(x1, x1.shape, (7 * x1.itemsize, x1.itemsize))
    g1 = dg.trace(f, x1, y1)
    LOG.clear()
    program = EmulatedProgram(g1, FakeBackend())
    for xs in (x1, odd):
        for a, w in zip(program(xs, y1), f(x1, y1)):
            np.testing.assert_allclose(a, w, rtol=1e-11, atol=1e-12)
    assert "fused" not in LOG, LOG
    # a module that fails to compile (NVRTC out of memory, say) leaves each kernel to its step
    backend = FakeBackend()

    def refused(code):
        raise RuntimeError("nvrtc: out of memory")

    backend.xp.RawModule = refused
    LOG.clear()
    for a, w in zip(EmulatedProgram(g, backend)(x, y), want):
        np.testing.assert_allclose(a, w, rtol=1e-11, atol=1e-12)
    assert LOG.count("fused") == len([r for r in EmulatedProgram(g, backend).plan.regions])
    # our product kernels too: two skinny products of a region's value, in one launch
    x, w, v = rng.standard_normal((800, 32)), rng.standard_normal((32, 3)), \
        rng.standard_normal((32, 3))
    LOG.clear()
    got = EmulatedProgram(dg.trace(lambda x, w, v: np.tanh(x) @ w * (np.tanh(x) @ v), x, w, v),
                          FakeBackend())(x, w, v)[0]
    np.testing.assert_allclose(got, np.tanh(x) @ w * (np.tanh(x) @ v), rtol=1e-11)
    assert "module:skinny" in LOG and "skinny" not in LOG, LOG


class SourceChecked(EmulatedProgram):
    """An emulated program that checks, at every launch, that the region kernel it runs is
    the one generated for the arrays given (whether compiled ahead or at its step)."""

    def _functions(self, region, arrays):
        fns = super()._functions(region, arrays)
        want = cuda_codegen.region_kernels(
            region, {v.id: array_strides(a) for v, a in zip(region.inputs, arrays)})
        assert fns[0].source == want.source, f"region {region.index}: stale kernel"
        return fns


def _relaid(a, how: int):
    """``a``'s values in another layout: as given, Fortran-ordered, or every other column
    of a larger array."""
    if a.ndim < 2 or how == 0:
        return a
    if how == 1:
        return np.asfortranarray(a)
    wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    wide[..., ::2] = a
    return wide[..., ::2]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(fp.programs(max_nodes=6, sparse=False), st.lists(st.integers(0, 2), min_size=6,
                                                         max_size=6))
def test_call_sequences_of_layouts_run_the_kernels_of_their_arrays(prog, layouts):
    """A program called with its arguments in a fuzzed sequence of layouts: every launch
    runs the kernel generated for the arrays it is given (the first call's kernels,
    compiled ahead for the first layouts, are not reused for others), and every call
    returns the NumPy program's values."""
    f, loss = prog.functions()
    args = tuple(np.asarray(a) for a in prog.args())
    graph = dg.trace(dg.grad(loss, argnums=tuple(range(len(args)))), *args)
    want = compile_python(graph, np)(*args)
    program = SourceChecked(graph, FakeBackend())
    for call in range(3):
        given = [_relaid(a, layouts[(2 * call + i) % 6]) for i, a in enumerate(args)]
        for g, w in zip(program(*given), want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-11, atol=1e-12)


def test_sums_over_the_batch_run_as_products_with_ones():
    x = np.random.default_rng(1).standard_normal((600, 7))
    g = dg.trace(lambda x: np.sum(np.sin(x), axis=0) + np.sum(np.cos(x), axis=1)[:7], x)
    _check(g, (x,))
    assert [lay for lay in FakeGemm.layouts if lay.m == 1 or lay.n == 1], \
        "a long leading-axis sum is a product with ones"


def test_outputs_repeated_inputs_and_literals_get_their_own_destinations():
    def f(x, y):
        s = np.sin(x)
        return s, s, x, y.T, 2.0, s @ y

    x, y = np.ones((3, 4)), np.arange(8.0).reshape(4, 2)
    _check(dg.trace(f, x, y), (x, y))


# ------------------------------------------------------------------ our product kernels' indexing
def _kernel_emulation(monkeypatch):
    """Our small product kernels run by their documented indexing over the operands' flat
    memory: every kernel reads ``a[i*a0 + p*a1]`` and ``b[p*b0 + j*b1]`` with the strides
    the launcher passed to :func:`~dualgpu.codegen.products.product_kernel` and writes ``c``
    row-major."""
    params = {}
    real = cuda_codegen.product_kernel

    def product_kernel(choice, m, n, k, sa, sb, dtype, count=1):
        pk = real(choice, m, n, k, sa, sb, dtype, count)
        params[pk.name] = (m, n, k, sa, sb)
        return pk

    class RawKernel:
        def __init__(self, source, name):
            self.name = name
            LOG.append(name.split("_")[1])

        def __call__(self, grid, block, args):   # (a, b, c) triples, one a block row
            m, n, k, (a0, a1), (b0, b1) = params[self.name]
            assert len(args) == 3 * (grid[1] if len(grid) > 1 else 1)
            for a, b, out in zip(args[::3], args[1::3], args[2::3]):
                (fa, oa), (fb, ob) = _flat(a), _flat(b)
                i, j, p = np.meshgrid(np.arange(m), np.arange(n), np.arange(k), indexing="ij")
                ia, ib = oa + i * a0 + p * a1, ob + p * b0 + j * b1
                assert ia.min() >= 0 and ib.min() >= 0, "a read before the operand's memory"
                assert out.flags.c_contiguous and out.size == m * n
                out.reshape(-1)[...] = (fa[ia] * fb[ib]).sum(axis=-1).reshape(-1)

    monkeypatch.setattr(cuda_codegen, "product_kernel", product_kernel)
    return RawKernel


@pytest.mark.parametrize("case", ["tiny", "thin", "thin_wide", "thin_cols", "thin_tiles",
                                  "skinny", "skinny_rows", "skinny_t", "wide", "vec_a",
                                  "vec_b", "dot"])
@pytest.mark.parametrize("view", ["plain", "reversed", "transposed", "sliced"])
def test_small_products_read_strided_operands(monkeypatch, case, view):
    """x[::-1], .T and column slices as operands of our product kernels: each kernel reads
    the operand's memory through the strides the launcher gave its text."""
    rng = np.random.default_rng(0)
    shapes = {"tiny": ((4, 5), (5, 3)), "thin": ((300, 7), (7, 40)),
              "thin_wide": ((1500, 7), (7, 100)), "thin_cols": ((1100, 5), (5, 300)),
              "thin_tiles": ((300, 5), (5, 4000)),
              "skinny": ((600, 40), (40, 3)), "skinny_rows": ((4099, 20), (20, 3)),
              "skinny_t": ((3, 40), (40, 600)), "wide": ((3, 40), (40, 1100)),
              "vec_a": ((7,), (7, 3)),
              "vec_b": ((4, 7), (7,)), "dot": ((7,), (7,))}[case]

    def make(shape):
        if view == "reversed":
            return rng.standard_normal(shape)[::-1]
        if view == "transposed" and len(shape) == 2:
            return rng.standard_normal(shape[::-1]).T
        if view == "sliced":
            return rng.standard_normal(shape[:-1] + (shape[-1] + 3,))[..., 1:-2]
        return rng.standard_normal(shape)

    a, b = make(shapes[0]), make(shapes[1])
    backend = FakeBackend()
    backend.xp.RawKernel = _kernel_emulation(monkeypatch)
    g = dg.trace(lambda a, b: a @ b, a, b)
    program = EmulatedProgram(g, backend)
    for out in (None, _destinations(g)):
        got = program(a, b, out=out)[0]
        np.testing.assert_allclose(np.asarray(got), a @ b, rtol=1e-12, atol=1e-12)
    transposed = view == "transposed"
    want = {"thin": "gemm" if transposed else "matmul",
            "skinny": "gemm" if transposed else "skinny",
            "skinny_rows": "gemm" if transposed else "skinny",
            "thin_wide": "thin", "thin_cols": "thin", "thin_tiles": "thin",
            # the feature-major products: by their own layout, else the transposed view's
            "skinny_t": "skinny" if transposed else "gemm",
            "wide": "skinny" if transposed else "wide"}.get(case, "matmul")
    assert want in LOG, LOG


# ------------------------------------------------------------------ concatenations in place
def _unflatten(p, shapes):
    """The pieces of the flat vector ``p``: consecutive slices reshaped to ``shapes``."""
    parts, start = [], 0
    for s in shapes:
        n = int(np.prod(s, dtype=np.int64))
        parts.append(p[start:start + n].reshape(s))
        start += n
    return parts


def _flat_mlp(batch=64):
    """An MLP loss of a flat parameter vector (W1, b1, W2, b2), a point and a direction."""
    rng = np.random.default_rng(2)
    X, Y = rng.standard_normal((batch, 20)), rng.standard_normal((batch, 3))
    shapes = [(20, 32), (32,), (32, 3), (3,)]

    def loss(p):
        W1, b1, W2, b2 = _unflatten(p, shapes)
        h = np.tanh(X @ W1 + b1)
        return np.mean((h @ W2 + b2 - Y) ** 2)

    n = sum(int(np.prod(s)) for s in shapes)
    return loss, rng.standard_normal(n) / 5, rng.standard_normal(n)


def _heads(program) -> list:
    """Per in-place concatenation of ``program``, which inputs are computed in place."""
    return [[h is not None for h in cs.heads] for cs in program._concats.values()]


@pytest.mark.parametrize("transform", ["grad", "hvp"])
def test_the_flat_gradient_is_written_in_place(transform):
    """Every piece of the flat gradient (and of the flat HVP) is computed into its range of
    the output -- products, sums, kernel outputs, through reshapes: no concatenation, no
    copy, eager or into the caller's destinations."""
    loss, p, v = _flat_mlp()
    args = (p,) if transform == "grad" else (p, v)
    g = dg.trace(getattr(dg, transform)(loss), *args)
    program = _check(g, args)
    assert _heads(program) == [[True] * 4]
    assert "concatenate" not in LOG and "copyto" not in LOG, LOG


def _pieces(x, w):
    a = np.sin(x)                       # a kernel's output
    m = x @ w                           # a product's
    s = np.sum(np.cos(x) * x, axis=0)   # a sum over the leading axis
    t = np.sum(a * x)                   # a grid reduction
    return x, a, m, s, t


IN_PLACE = {
    # each piece in its own range, in no particular order, of several producers: a wrong
    # offset or size puts values in the wrong place (or leaves the fake's NaNs)
    "flat": (lambda x, a, m, s, t: [np.concatenate([m.ravel(), t.reshape(1), a.ravel(), s])],
             [[True] * 4]),
    "axis 0 of matrices": (lambda x, a, m, s, t: [np.concatenate([m, a, s[None] * 2, a * m])],
                           [[True] * 4]),
    "after unit axes": (lambda x, a, m, s, t: [np.concatenate([m.reshape(1, 1, -1),
                                                            a.reshape(1, 1, -1)], axis=2)],
                        [[True, True]]),
    "along columns: not one range each": (
        lambda x, a, m, s, t: [np.concatenate([m, a], axis=1)], []),
    "a piece also read later": (lambda x, a, m, s, t: [np.concatenate([m.ravel(), s]), s * m],
                                [[True, True]]),
    "a piece returned too": (lambda x, a, m, s, t: [np.concatenate([m.ravel(), s]), s],
                             [[True, False]]),
    "a reshaped piece whose source is returned": (
        lambda x, a, m, s, t: [np.concatenate([m.ravel(), s]), m], [[False, True]]),
    "a piece repeated": (lambda x, a, m, s, t: [np.concatenate([s, s, m.ravel(), s])],
                         [[True, False, True, False]]),
    "a piece in two concatenations": (
        lambda x, a, m, s, t: [np.concatenate([s, m.ravel()]), np.concatenate([m.ravel(), s])],
        [[True, True]]),
    "an input and a constant": (
        lambda x, a, m, s, t: [np.concatenate([C_IN, s, x.ravel(), m.ravel()])],
        [[False, True, False, True]]),
    "a view of an input": (lambda x, a, m, s, t: [np.concatenate([x[::2].ravel(), s])],
                           [[False, True]]),
    "mixed dtypes": (lambda x, a, m, s, t: [np.concatenate([s.astype(np.float32), s])], []),
}
X_IN = np.random.default_rng(3).standard_normal((6, 4))
W_IN = np.random.default_rng(4).standard_normal((4, 4))
C_IN = np.arange(3.0)


@pytest.mark.parametrize("case", sorted(IN_PLACE))
def test_concatenation_inputs_in_place_where_they_may_be(case):
    """Which inputs are computed in place (a program input, a constant, a view of an input,
    a value the program returns, a repeated value are copied in; a value read later is
    not), and the results against NumPy either way."""
    make, heads = IN_PLACE[case]

    def f(x, w):
        return tuple(make(*_pieces(x, w)))

    program = _check(dg.trace(f, X_IN, W_IN), (X_IN, W_IN))
    assert _heads(program) == heads
    # six calls (eager twice and into destinations, with and without recomputation)
    concats = sum(e.prim.name == "concatenate" for e in program.graph.eqns)
    assert LOG.count("concatenate") == 6 * (concats - len(heads)), LOG


def test_a_producer_that_ignores_its_range_is_copied_in():
    """An integer product runs by the library (no destination): its piece is copied into
    the output the kernel's piece was computed in."""
    x, w = np.arange(12).reshape(3, 4), np.arange(8).reshape(4, 2) - 3
    program = _check(dg.trace(lambda x, w: np.concatenate([(x @ w).ravel(), (x * 3).ravel()]),
                              x, w), (x, w))
    assert _heads(program) == [[True, True]]
    assert "concatenate" not in LOG and "copyto" in LOG, LOG


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(fp.programs(max_nodes=7, sparse=False))
def test_fuzzed_losses_of_a_flat_parameter_vector(prog):
    """The fuzzed losses of all their inputs packed into one vector: the gradients and HVPs
    end with the concatenation of the pieces' gradients, computed in place
    (DUALGPU_LAUNCHER_EXAMPLES=1500 for a longer campaign)."""
    _check_flat_loss(prog)


def _check_flat_loss(prog):
    _, loss = prog.functions()
    args = tuple(np.asarray(a) for a in prog.args())
    shapes = [a.shape for a in args]
    p = np.concatenate([a.ravel() for a in args])

    def flat_loss(p):
        return loss(*_unflatten(p, shapes))

    _check(dg.trace(dg.grad(flat_loss), p), (p,))
    _check(dg.trace(dg.hvp(flat_loss), p, p[::-1].copy()), (p, p[::-1].copy()))


# found by DUALGPU_LAUNCHER_EXAMPLES: programs the CI budget does not draw
FLAT_LOSS_FOUND = {
    # the product reads the einsum's output, whose memory is not C-ordered ((72, 8, 24)
    # bytes): the fake cuBLAS could only read memory owned by a C-contiguous array
    "einsum with a diagonal, then a product": fp.Program(inputs=((3, 1, 3),), nodes=(
        ('einsum', (0, 0), (('spec', 'aba,cda->bac'),)),
        ('erf', (1,), (('wrap', False),)),
        ('getitem', (2,), (('kind', 'index'), ('text', '0'))),
        ('matmul', (3, 1), ()),
        ('getitem', (4,), (('kind', 'index'), ('text', '0')))), seed=0),
    # the HVP's outer(u, v̇) + outer(v̇, u): a kernel computes u + v̇ along the columns, its
    # neighbour read its column along the rows; merged, they read it along the columns
    "outer product of a diagonal's einsum": fp.Program(inputs=((3, 4, 3),), nodes=(
        ('einsum', (0, 0), (('spec', 'aba,acd->a'),)),
        ('contract', (1, 1), (('kind', 'outer'),)),
        ('erf', (2,), (('wrap', False),)),
        ('getitem', (3,), (('kind', 'index'), ('text', '0'))),
        ('matmul', (4, 1), ())), seed=0),
    # a slice of the vector's piece: the transpose of [::2] is read by the transpose of
    # the piece's [0:2], and was planned after it (tests/codegen/test_padded_reads.py)
    "a slice of a piece": fp.Program(inputs=((2,), (), ()), nodes=(
        ('reciprocal', (2,), (('wrap', False),)),
        ('getitem', (0,), (('kind', 'index'), ('text', '::2'))),
        ('silu', (3,), (('wrap', False),))), seed=0),
}


@pytest.mark.parametrize("name", sorted(FLAT_LOSS_FOUND))
def test_flat_losses_found_by_the_fuzzer(name):
    _check_flat_loss(FLAT_LOSS_FOUND[name])



class HostProgram(FusedProgram):
    """FusedProgram whose region kernels are their real CUDA text, compiled by g++ and run
    with one host thread per CUDA thread (tests/helpers/product_harness.py): the kernels themselves,
    not the plan emulator, against the NumPy program."""

    def _functions(self, region, arrays):
        rk, _, _ = super()._functions(region, arrays)
        LOG.append("region")

        def launcher(source, name):
            return lambda grid, block, args: product_harness.run_kernel(
                source, name, grid[0], [np.asarray(a) for a in args], block[0])

        return (rk, launcher(rk.source, rk.name),
                launcher(rk.finish_source, rk.finish_name) if rk.finish_source else None)


def _check_host_kernels(graph, args):
    want = compile_python(graph, np)(*args)
    for recompute in (False, True):
        got = HostProgram(graph, FakeBackend(), recompute=recompute)(*args)
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-11, atol=1e-12)


# 2 in CI (each example compiles a program's region kernels with g++: ~12 s on 2 cores)
HOST_EXAMPLES = int(os.environ.get("DUALGPU_HOST_KERNEL_EXAMPLES", 2))


@pytest.mark.skipif(not HOST_KERNELS, reason="no host C++ compiler (g++)")
@settings(max_examples=HOST_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(fp.programs(max_nodes=6, sparse=False))
def test_fuzzed_programs_on_the_real_region_kernels(prog):
    """The generated region kernels (and their grid-reduction finishes) compiled for the
    host and run thread by thread: fuzzed programs, their gradients and HVPs against NumPy
    (DUALGPU_HOST_KERNEL_EXAMPLES=150 for a longer campaign)."""
    f, loss = prog.functions()
    args = tuple(np.asarray(a) for a in prog.args())
    _check_host_kernels(dg.trace(dg.jit(f), *args), args)
    _check_host_kernels(dg.trace(dg.grad(loss, argnums=tuple(range(len(args)))), *args), args)
    _check_host_kernels(dg.trace(dg.hvp(loss), *args, args[0]), args + (args[0],))


def test_a_selu_gradient_found_by_the_fuzzer():
    """Found by DUALGPU_LAUNCHER_EXAMPLES=600: a grid reduction (``sum`` of a scalar
    broadcast over the domain) of a value computed after a loop reduction, in the region's
    second loop. The generated kernel accumulates it once per loop iteration (right); the
    plan emulator summed it once per thread, as if the broadcast did not vary along the
    loop axis (the emulator was wrong, the kernel was not)."""
    prog = fp.Program(inputs=((2, 2), (2, 1)), nodes=(
        ('matmul_const', (1,), (('side', 'left'), ('wshape', (2,)), ('fn', '@'))),
        ('mul_scalar', (2,), (('wrap', False),)),
        ('np_add', (0, 0), ()),
        ('np_add', (3, 0), ()),
        ('method_mean', (5,), (('axis', None), ('keepdims', False))),
        ('divide_safe', (6, 1), ()),
        ('selu', (7,), (('wrap', False),))), seed=0)
    f, loss = prog.functions()
    args = tuple(np.asarray(a) for a in prog.args())
    g = dg.trace(dg.grad(loss, argnums=(0, 1)), *args)
    _check(g, args)
    if HOST_KERNELS:   # the kernel itself, run on the host
        _check_host_kernels(g, args)
