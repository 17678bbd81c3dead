"""The GPU registry sweep (tests/gpu/test_gpu_backend.py) on the CPU: it skips an op only
for a reason written as data in tests/helpers/gpu_sweep.py, it catches no exception, and the NumPy
reference it computes for every op runs today (so the sweep's references fail on the GPU
machine only for a reason this file would show here)."""
from __future__ import annotations

import ast
from pathlib import Path

import gpu_sweep
import numpy as np
import pytest

import dualgpu as dg
from dualgpu.tools.op_matrix import builtin_ops

GPU_MODULE = Path(__file__).resolve().parents[1] / "gpu" / "test_gpu_backend.py"
SWEEP_TESTS = ("test_registry_op_matches_numpy", "test_registry_op_curvature_matches_numpy")


def test_no_gpu_case_names_registry_ops():
    assert set(gpu_sweep.NO_GPU_CASE) <= set(dg.REGISTRY)


def test_an_op_without_a_case_is_an_error_not_a_skip(monkeypatch):
    monkeypatch.delitem(gpu_sweep.NO_GPU_CASE, "sort")
    with pytest.raises(LookupError, match="'sort' has no case in the GPU sweep"):
        gpu_sweep.registry_case("sort", np.float64, np.random.default_rng(0))


def test_differentiated_follows_the_registry_flags():
    rng = np.random.default_rng(0)
    _, args = gpu_sweep.registry_case("floor", np.float64, rng)
    assert gpu_sweep.differentiated("floor", args) == []
    _, args = gpu_sweep.registry_case("where", np.float64, rng)
    assert gpu_sweep.differentiated("where", args) == [1, 2]


def test_the_sweep_catches_no_exception():
    """Its tests skip through gpu_sweep's data only: no try/except, no skip of their own."""
    tree = ast.parse(GPU_MODULE.read_text())
    funcs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    for name in SWEEP_TESTS:
        nodes = list(ast.walk(funcs[name]))
        assert not [n for n in nodes if isinstance(n, ast.Try)], name
        skips = [n for n in nodes if isinstance(n, ast.Attribute) and n.attr == "skip"]
        allowed = 1 if name == "test_registry_op_curvature_matches_numpy" else 0  # no derivative
        assert len(skips) == allowed, name


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", sorted(builtin_ops()))
def test_the_sweeps_numpy_reference_runs(name, dtype):
    """What the sweep computes on NumPy before it compares CuPy's: the value, the gradient
    and HVP, and (float64) the curvature transforms, for every op with a case."""
    rng = np.random.default_rng(1)
    case = gpu_sweep.registry_case(name, dtype, rng)
    if case is None:
        assert gpu_sweep.NO_GPU_CASE[name]
        return
    fn, args = case
    dg.jit(fn)(*args)
    diff = gpu_sweep.differentiated(name, args)
    if not diff:
        return
    v = rng.uniform(-1, 1, np.shape(args[diff[0]])).astype(dtype)
    dg.grad_and_hvp(lambda *a: np.sum(fn(*a) ** 2), argnums=diff[0])(*args, v)
    if dtype == np.float64:
        for transform in (dg.laplacian, dg.hessian_diag, dg.jacfwd, dg.jacrev):
            transform(fn, argnums=diff[0])(*args)


def test_the_sweep_runs_over_the_builtin_ops_only():
    """Ops a test registers (the GPU module's own test_host_roundtrip, say) are not the
    registry's coverage: the sweep is parametrized by dualgpu.tools.op_matrix.builtin_ops()."""
    tree = ast.parse(GPU_MODULE.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in SWEEP_TESTS:
            decorators = [ast.unparse(d) for d in node.decorator_list]
            assert any("sorted(builtin_ops())" in d for d in decorators), (node.name, decorators)
