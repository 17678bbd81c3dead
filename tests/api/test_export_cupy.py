"""dg.export(..., backend="cupy") on the CPU: the module text of the design's scenarios
compiles, imports only CuPy and NumPy, embeds each kernel once and launches each region
once; and its launch plan, run with a fake ``cupy`` whose kernels evaluate their regions
with NumPy (:func:`dualgpu.fusion.emulate_region`), matches dualgpu -- so a dropped launch,
reordered arguments or a wrong release fail here, without a GPU (tests/gpu/test_export_gpu.py
runs the same modules on CuPy)."""
from __future__ import annotations

import ast
import re
import sys
import types

import numpy as np
import pytest
from export_scenarios import scenarios

import dualgpu as dg
from dualgpu.codegen.cuda import BLOCK, region_kernels
from dualgpu.core.primitives import REGISTRY
from dualgpu.fusion import Region, emulate_region, plan_graph
from dualgpu.runtime.signature import Signature
from dualgpu.runtime.transformed import Transformed
from dualgpu.transforms.index_bounds import with_index_bounds

SCENARIOS = scenarios()
IDENTITY = {"sum": 0, "prod": 1, "max": -np.inf, "min": np.inf}
LAUNCH = re.compile(r"^    (_dg_\w+)\(\((\d+),\), \((\d+),\), \((.*)\)\)$", re.M)


class FakeKernels:
    """What ``cupy.RawModule(code=...)`` gives the module, for the kernels of ``plan``: each
    launch checks its grid, block and arguments (type, shape, dtype, layout, constants' values)
    and evaluates its region with NumPy; fresh arrays are NaN, so a value no launch wrote
    shows up."""

    def __init__(self, plan):
        self.main, self.finish = {}, {}
        for r in plan.regions:
            rk = region_kernels(r)
            self.main[rk.name] = (r, rk)
            if rk.finish_name:
                self.finish[rk.finish_name] = (r, rk)
        self.launches: list = []
        self.code = None

    def module(self):
        fake = types.ModuleType("cupy")
        fake.__getattr__ = lambda name: getattr(np, name)  # the library calls run on NumPy
        fake.ndarray = np.ndarray

        def empty(shape, dtype=np.float64):
            dt = np.dtype(dtype)
            return np.full(shape, np.nan if dt.kind in "fc" else -12345, dtype=dt)

        kernels = self

        class RawModule:
            def __init__(self, code):
                kernels.code = code

            def get_function(self, name):
                return lambda grid, block, args: kernels.launch(name, grid, block, args)

        fake.empty = empty
        fake.asnumpy = np.asarray
        fake.RawModule = RawModule
        return fake

    @staticmethod
    def _check(a, shape, dtype, what):
        assert isinstance(a, np.ndarray), f"{what}: not an array"
        assert a.shape == tuple(shape) and a.dtype == dtype, \
            f"{what}: {a.dtype}{a.shape}, expected {np.dtype(dtype)}{tuple(shape)}"
        assert a.flags.c_contiguous, f"{what}: not C-contiguous"

    def launch(self, name, grid, block, args):
        self.launches.append(name)
        assert block == (BLOCK,)
        if name in self.finish:
            region, rk = self.finish[name]
            assert rk.finish_source in self.code and grid == (len(region.grid),)
            assert len(args) == 2 * len(region.grid)
            for (part, out), (var, op, _) in zip(zip(args[::2], args[1::2]), rk.grid):
                self._check(part, (rk.blocks,), var.dtype, f"{name}: partials")
                self._check(out, var.shape, var.dtype, f"{name}: output")
                out[...] = {"sum": np.sum, "prod": np.prod, "max": np.max,
                            "min": np.min}[op](part)
            return
        region, rk = self.main[name]
        assert rk.source in self.code and grid == (rk.blocks,)
        grid_ids = [e.outs[0].id for e in region.grid]
        outs = [v for v in region.outputs if v.id not in grid_ids]
        assert len(args) == len(region.inputs) + len(outs) + len(grid_ids)
        env = {}
        for k, (v, a) in enumerate(zip(region.inputs, args)):
            self._check(a, v.shape, v.dtype, f"{name}: input {k}")
            if hasattr(v, "value"):  # a constant: the module's copy of it
                np.testing.assert_array_equal(a, v.value)
            env[v.id] = a
        emulate_region(region, env)
        rest = args[len(region.inputs):]
        for k, (v, a) in enumerate(zip(outs, rest)):
            self._check(a, v.shape, v.dtype, f"{name}: output {k}")
            a[...] = env[v.id]
        for (var, op, _), part in zip(rk.grid, rest[len(outs):]):
            self._check(part, (rk.blocks,), var.dtype, f"{name}: partials")
            # the other partials hold the identity (an integer max's or min's: the value)
            part[...] = env[var.id] if part.dtype.kind in "iu" and op in ("max", "min") \
                else IDENTITY[op]
            part[0] = env[var.id]

    def expected_launches(self, plan) -> list:
        names = []
        for r in plan.regions:
            rk = region_kernels(r)
            if rk.threads:
                names += [rk.name] + ([rk.finish_name] if rk.finish_name else [])
        return names


def _plan(fn, args, kwargs=None):
    if isinstance(fn, Transformed):  # the program dg.export writes (its scalars static)
        sig = Signature(fn.split(tuple(args))[0], dict(kwargs or {}), fn.argnums,
                        fn.__name__)
        graph = fn.compiled(sig).graph
    else:
        graph = dg.trace(fn, *args, **(kwargs or {}))
    checked = with_index_bounds(graph)   # index arrays given at run time: their bounds too
    return plan_graph(graph if checked is None else checked.graph)


def _run_fake(monkeypatch, text, plan, fname, args, kwargs=None):
    kernels = FakeKernels(plan)
    monkeypatch.setitem(sys.modules, "cupy", kernels.module())
    cupyx = types.ModuleType("cupyx")
    cupyx.scatter_add = np.add.at  # cupyx.scatter_add(a, slices, value)
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    ns: dict = {}
    exec(compile(text, "<exported>", "exec"), ns)
    return ns[fname](*args, **(kwargs or {})), kernels


def _assert_close(got, want):
    got_leaves, want_leaves = dg.tree.leaves(got), dg.tree.leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        scale = max(1.0, float(np.max(np.abs(w))))
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12 * scale)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_text_compiles_and_imports_only_cupy_numpy(scenario):
    fn, args = SCENARIOS[scenario]
    text = dg.export(fn, *args, backend="cupy", name="exported")
    tree = ast.parse(compile(text, "<exported>", "exec", ast.PyCF_ONLY_AST))
    top = set()
    anywhere = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) \
                else [node.module]
            anywhere.update(mods)
            if node in tree.body:
                top.update(mods)
    assert top == {"base64", "cupy", "numpy"}
    assert anywhere <= {"base64", "cupy", "numpy", "cupyx", "cupyx.scipy.special"}
    assert "import dualgpu" not in text and "from dualgpu" not in text
    plan = _plan(fn, args)
    launches = LAUNCH.findall(text)
    for r in plan.regions:
        rk = region_kernels(r)
        assert text.count(rk.source) == 1
        mains = [line for line in launches if line[0] == "_" + rk.name]
        assert len(mains) == 1 and mains[0][1:3] == (str(rk.blocks), str(BLOCK))
        if rk.finish_name:
            assert text.count(rk.finish_source) == 1
            assert [line[1] for line in launches if line[0] == "_" + rk.finish_name] \
                == [str(len(r.grid))]
    assert len(launches) == sum(1 + bool(region_kernels(r).finish_name)
                                for r in plan.regions)
    assert "cupy.RawModule(code=_CUDA)" in text
    assert "export_scenarios.py:" in text  # each block says where it came from


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_launch_plan_matches_dualgpu(monkeypatch, scenario):
    fn, args = SCENARIOS[scenario]
    text = dg.export(fn, *args, backend="cupy", name="exported")
    plan = _plan(fn, args)
    got, kernels = _run_fake(monkeypatch, text, plan, "exported", args)
    _assert_close(got, fn(*args))
    assert kernels.launches == kernels.expected_launches(plan)


def _mutants(text):
    """The text with one launch dropped, and with one launch's arguments reversed, for each
    launch."""
    for m in LAUNCH.finditer(text):
        yield "dropped " + m.group(1), text[:m.start()] + "    pass" + text[m.end():]
        parts = m.group(4).split(", ")
        if len(set(parts)) > 1:
            call = f"    {m.group(1)}(({m.group(2)},), ({m.group(3)},), " \
                   f"({', '.join(reversed(parts))}))"
            yield "reordered " + m.group(1), text[:m.start()] + call + text[m.end():]


@pytest.mark.parametrize("scenario", ["particles", "mlp"])
def test_a_dropped_launch_or_reordered_arguments_fail(monkeypatch, scenario):
    fn, args = SCENARIOS[scenario]
    text = dg.export(fn, *args, backend="cupy", name="exported")
    plan = _plan(fn, args)
    want = fn(*args)
    mutants = list(_mutants(text))
    assert len(mutants) >= 2 * len(plan.regions)
    for label, mutant in mutants:
        try:
            got, _ = _run_fake(monkeypatch, mutant, plan, "exported", args)
            _assert_close(got, want)
        except (AssertionError, ValueError, TypeError, KeyError):
            continue
        pytest.fail(f"the module still matched with a launch {label}")


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_values_are_released_after_their_last_use(scenario):
    """``del`` follows the plan's releases: every value made and not returned is deleted
    exactly once, after its last use, and every input once it is no longer read."""
    fn, args = SCENARIOS[scenario]
    text = dg.export(fn, *args, backend="cupy", name="exported")
    body = text[text.index("def program("):].split("\n\n")[0].splitlines()
    params = re.match(r"def program\((.*)\):", body[0]).group(1).split(", ")
    returned = set(re.findall(r"\w+", body[-1].replace("return", "")))
    code = [line for line in body[1:] if not line.strip().startswith("#")]
    deleted: dict = {}
    for i, line in enumerate(code):
        if line.strip().startswith("del "):
            for name in line.strip()[4:].split(", "):
                assert name not in deleted, f"{name} deleted twice"
                deleted[name] = i
                later = "\n".join(code[i + 1:])
                assert not re.search(rf"\b{name}\b", later), f"{name} used after its del"
    made = {m for line in code for m in re.findall(r"^    ((?:t|_part)\d+) = ", line)}
    assert (made | set(params)) - returned == set(deleted)


def test_argument_checks(monkeypatch):
    fn, args = SCENARIOS["dense"]
    text = dg.export(fn, *args, backend="cupy", name="exported")
    plan = _plan(fn, args)
    p, X, y, v = args
    with pytest.raises(ValueError, match=r"argument 1 \(X\) is float64\[4, 10\].*exported "
                                         r"for float64\[10, 4\]"):
        _run_fake(monkeypatch, text, plan, "exported", (p, X.T.copy(), y, v))
    with pytest.raises(ValueError, match=r"argument 1 \(X\) is not C-contiguous"):
        _run_fake(monkeypatch, text, plan, "exported", (p, np.asfortranarray(X), y, v))
    with pytest.raises(ValueError, match=r"argument 0 \(p\) is float32"):
        _run_fake(monkeypatch, text, plan, "exported", (p.astype(np.float32), X, y, v))
    with pytest.raises(TypeError, match=r"argument 2 \(y\): expected a cupy.ndarray, got "
                                        r"numpy.float64"):
        _run_fake(monkeypatch, text, plan, "exported", (p, X, y[0], v))
    with pytest.raises(TypeError, match="expected 4 leaves in the arguments"):
        _run_fake(monkeypatch, text, plan, "exported", (p, X, list(y), v))


def test_library_views_reach_kernels_contiguous(monkeypatch):
    """A transposed view made by a library call and read by a kernel is copied to the layout
    the kernel was generated for (``_c``); the result is right."""
    def f(a, b):
        return np.sum(np.tanh(a.T * b) ** 2)

    a, b = np.random.default_rng(1).standard_normal((2, 5, 3))
    a = a.reshape(5, 3)
    b = b.reshape(5, 3).T.copy()
    g = dg.grad(f)
    text = dg.export(g, a, b, backend="cupy", name="g")
    assert "_c(" in text
    got, _ = _run_fake(monkeypatch, text, _plan(g, (a, b)), "g", (a, b))
    _assert_close(got, g(a, b))


def test_static_values_keywords_and_cupy_ops(monkeypatch):
    def f(x, k, *, scale=1.0):
        return scale * np.sum(np.sort(x, axis=0) ** k)

    x = np.random.default_rng(2).standard_normal((4, 3))
    g = dg.grad(f)
    text = dg.export(g, x, 3, scale=2.0, backend="cupy", name="g")
    assert "def sort(x, axis):\n        return xp.sort(x, axis=axis)" in text
    plan = _plan(g, (x, 3), {"scale": 2.0})
    got, _ = _run_fake(monkeypatch, text, plan, "g", (x, 3), {"scale": 2.0})
    _assert_close(got, g(x, 3, scale=2.0))
    with pytest.raises(ValueError, match="exported for 3"):
        _run_fake(monkeypatch, text, plan, "g", (x, 2), {"scale": 2.0})
    with pytest.raises(ValueError, match="exported for 2.0"):
        _run_fake(monkeypatch, text, plan, "g", (x, 3), {"scale": 1.5})


def test_cupy_forms_and_refusals():
    # every op with a standalone form has a CuPy one, or a reason it has none
    for prim in REGISTRY.values():
        if prim.standalone:
            assert ("cupy" in prim.standalone) != ("cupy" in prim.standalone_refused), prim
    with pytest.raises(dg.DualgpuError, match="backend must be"):
        dg.export(np.sin, np.ones(3), backend="torch")
    with pytest.raises(dg.DualgpuError, match="'eig' cannot be exported for CuPy"):
        dg.export(lambda a: np.linalg.eig(a)[0], np.diag([1.0, 2.0]), backend="cupy")


def test_regions_without_threads_run_as_library_calls(monkeypatch):
    """An empty domain launches nothing (as dualgpu's launcher): its equations run on xp."""
    x = np.ones((0, 3))
    g = dg.jit(lambda x: np.tanh(x) * 2)
    text = dg.export(g, x, backend="cupy", name="g")
    plan = _plan(g, (x,))
    assert any(isinstance(s, Region) for s in plan.steps) and not LAUNCH.findall(text)
    got, _ = _run_fake(monkeypatch, text, plan, "g", (x,))
    assert got.shape == (0, 3)


def test_cli_export_cupy(tmp_path):
    from dualgpu.tools.cli import main

    model = tmp_path / "model.py"
    model.write_text("import numpy as np\ndef loss(x):\n    return np.sum(np.exp(x) ** 2)\n")
    out = tmp_path / "loss_hvp.py"
    assert main(["export", f"{model}:loss", "--arg", "float64[4]", "--hvp", "--backend",
                 "cupy", "-o", str(out), "--name", "loss_hvp"]) == 0
    text = out.read_text()
    assert "import cupy" in text and "_kernels.get_function(" in text
    assert "model.py:3" in text
