"""CONTRIBUTING's walk-through of a new transform is executed: its module is written into a
scratch copy of the package, imported, its docstring example run and its value checked
against the dense Hessian (so the document cannot go stale while the seam changes)."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "CONTRIBUTING.md").read_text()


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
    shutil.copytree(ROOT / "dualgpu", tmp_path / "dualgpu",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "dualgpu" / "vhv.py").write_text(_transform_module())
    run = subprocess.run([sys.executable, "-c", CHECK], cwd=tmp_path, capture_output=True,
                         text=True, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stderr[-3000:]
