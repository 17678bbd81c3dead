"""What a fresh clone and an install see: the Makefile's quick start, pyproject's package list,
the install commands of the documents. Nothing is built or installed here (`make dist` does)."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _dry_run(target: str, tmp_path) -> str:
    if shutil.which("make") is None:
        pytest.fail("make is not installed: CI runs through the Makefile")
    return subprocess.run(["make", "-n", target, f"VENV={tmp_path / 'venv'}"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout


def test_make_demo_installs_the_package_only(tmp_path):
    demo = _dry_run("demo", tmp_path)
    assert re.search(r"pip install -q (--no-compile )?-e \.", demo) and "dualgpu demo" in demo
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


def test_pyproject_packages_every_subpackage_and_its_data():
    """A non-editable install and the wheel hold every folder of dualgpu/ with Python in it,
    and every file that is not Python (py.typed): pyproject's discovery, checked without a
    build (`make dist` builds, installs and imports the wheel)."""
    import tomllib
    from setuptools import find_packages

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = set(find_packages(str(ROOT), **config["packages"]["find"]))
    folders = {".".join(p.relative_to(ROOT).parts[:-1]) for p in (ROOT / "dualgpu").rglob("*.py")}
    assert folders <= found, f"not packaged: {sorted(folders - found)} (an __init__.py missing?)"
    data = [p for p in (ROOT / "dualgpu").rglob("*") if p.is_file()
            and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts]
    patterns = config["package-data"]["dualgpu"]
    assert data and all(any(p.match(pat) for pat in patterns) for p in data), data


def test_no_document_installs_dualgpu_from_an_index():
    """dualgpu is not published on an index: documents, messages and examples install it from
    a clone (`pip install .`, `pip install '.[dask]'`), never `pip install dualgpu[...]`."""
    files = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").rglob("*.md"),
             *(ROOT / "dualgpu").rglob("*.py"), *(ROOT / "examples").rglob("*.py")]
    said = [f"{p.relative_to(ROOT)}: {line.strip()}" for p in files
            for line in p.read_text().splitlines()
            if re.search(r"pip3? install\s+(-U\s+)?['\"]?dualgpu\b", line)]
    assert not said, said
