"""What a fresh clone and an install see: the Makefile's quick start, pyproject's package list,
the install commands of the documents. Nothing is built or installed here (`make dist` does)."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _dry_run(target: str, tmp_path) -> str:
    if shutil.which("make") is None:
        pytest.fail("make is not installed: CI runs through the Makefile")
    return subprocess.run(["make", "-n", target, f"VENV={tmp_path / 'venv'}"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout


def test_make_demo_installs_the_package_only(tmp_path):
    demo = _dry_run("demo", tmp_path)
    assert "pip install -q -e ." in demo and "dualgpu demo" in demo
    assert "[test" not in demo and "lint" not in demo
    assert "'.[test,lint]'" in _dry_run("test", tmp_path)


def test_readme_quick_start_is_two_commands():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## Quick start\n+```\n(.*?)```", readme, re.S)
    assert block and block[1].split("\n")[:-1] == ["make demo", "make test"]


def test_import_leaves_the_heavy_optional_modules_unimported():
    """``import dualgpu`` does not import hypothesis (dg.testing.strategies) or networkx (the
    colorings of dg.sparse_jacobian/sparse_hessian): 130 ms of its 0.6 s (benchmarks/NOTES.md,
    "Issue 37: import time"); they are imported at first use."""
    code = "import sys, dualgpu; print([m for m in ('hypothesis', 'networkx') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
    import dualgpu as dg  # and they are there when used

    assert callable(dg.sparse_jacobian) and callable(dg.testing.strategies.arrays)
