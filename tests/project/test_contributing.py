"""CONTRIBUTING's walk-throughs are executed on a scratch copy of the package, so that the
document cannot go stale while the code changes: a new transform's module is written in,
imported, its docstring example run and its value checked against the dense Hessian; an
elementwise op's declaration row replaces the package's own, and the op's NumPy function,
lax constructor and derivatives follow from it."""
import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "CONTRIBUTING.md").read_text()


def _run_in_a_scratch_copy(tmp_path, edit, check: str) -> None:
    """Copy the package, let ``edit(package_folder)`` change it, run ``check`` against it."""
    shutil.copytree(ROOT / "dualgpu", tmp_path / "dualgpu",
                    ignore=shutil.ignore_patterns("__pycache__"))
    edit(tmp_path / "dualgpu")
    run = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, capture_output=True,
                         text=True, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stderr[-3000:]


def _transform_module() -> str:
    section = TEXT[TEXT.index("## Adding a transform: one module"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


CHECK = """
import numpy as np
import dualgpu as dg
from dualgpu.vhv import vhv

f = lambda x: np.sum(np.sin(x) * x ** 2)
x, v = np.linspace(0.1, 1.0, 4), np.array([1.0, -2.0, 0.5, 3.0])
t = vhv(f)
want = v @ dg.hessian(f)(x) @ v
assert np.allclose(t(x, v), want) and np.allclose(t(x, v), want), (t(x, v), want)
assert np.allclose(dg.jit(lambda x: vhv(f)(x, v))(x), want)   # inlined in a trace
import doctest, dualgpu.vhv as m
assert doctest.testmod(m, extraglobs={"np": np}).failed == 0
print("ok")
"""


def test_the_new_transform_walkthrough_runs_in_a_scratch_copy(tmp_path):
    _run_in_a_scratch_copy(
        tmp_path, lambda package: (package / "vhv.py").write_text(_transform_module()), CHECK)


def _elementwise_row() -> str:
    section = TEXT[TEXT.index("### An elementwise op: one declaration row"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


ROW_CHECK = """
import numpy as np
import dualgpu as dg
from dualgpu.ops import elementwise

x, y = np.array([5.3, -5.3, 2.5]), np.array([2.0, 2.0, -0.7])
assert elementwise.fmod.c_int == "(({1}) == 0 ? 0 : ({0}) % ({1}))"   # the document's row
assert dg.lax.fmod is elementwise.fmod
assert np.array_equal(dg.jit(lambda x, y: np.fmod(x, y))(x, y), np.fmod(x, y))
assert np.allclose(dg.grad(lambda x: np.sum(np.fmod(x, y) ** 2))(x), 2 * np.fmod(x, y))
assert np.allclose(dg.grad(lambda y: np.sum(np.fmod(x, y)))(y), -np.trunc(x / y))
print("ok")
"""


def _replace_the_fmod_row(package):
    module = package / "ops" / "elementwise.py"
    lines = module.read_text().splitlines()
    row, = [n for n in ast.parse("\n".join(lines)).body if isinstance(n, ast.Assign)
            and [getattr(t, "id", None) for t in n.targets] == ["fmod"]]
    lines[row.lineno - 1:row.end_lineno] = _elementwise_row().splitlines()
    module.write_text("\n".join(lines) + "\n")


def test_the_elementwise_op_walkthrough_runs_in_a_scratch_copy(tmp_path):
    _run_in_a_scratch_copy(tmp_path, _replace_the_fmod_row, ROW_CHECK)


def _structured_block() -> str:
    section = TEXT[TEXT.index("### A structured op: one block"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


BLOCK_CHECK = """
import numpy as np
import dualgpu as dg

knots = np.array([0.0, 1.0, 1.0, 2.0, np.nan])
v = np.array([-0.5, 1.0, 1.5, 7.0, np.nan])
for side in ("left", "right"):
    f = dg.jit(lambda v: np.searchsorted(knots, v, side=side))
    assert np.array_equal(f(v), np.searchsorted(knots, v, side=side)), side
sorted_rows = np.sort(np.random.default_rng(0).normal(size=(3, 6)), axis=1)
values = np.random.default_rng(1).normal(size=(3, 4))
batched = dg.vmap(lambda a, x: np.searchsorted(a, x, side="right"))(sorted_rows, values)
assert np.array_equal(batched, [np.searchsorted(a, x, side="right")
                                for a, x in zip(sorted_rows, values)])
g = dg.grad(lambda x: np.sum(x ** 2 * np.searchsorted(knots[:4], x)))(np.array([0.5, 1.5]))
assert np.allclose(g, 2 * np.array([0.5, 1.5]) * np.array([1, 3]))
print("ok")
"""


def _replace_the_searchsorted_block(package):
    module = package / "ops" / "sorting.py"
    text = module.read_text()
    start = text.index("# " + "-" * 75 + " searchsorted")
    module.write_text(text[:start] + _structured_block())


def test_the_structured_op_walkthrough_runs_in_a_scratch_copy(tmp_path):
    _run_in_a_scratch_copy(tmp_path, _replace_the_searchsorted_block, BLOCK_CHECK)
