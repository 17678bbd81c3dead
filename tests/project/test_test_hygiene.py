"""The test suite's own rules: a shared helper of the tests (a module of tests/, or the
project's own packages) is imported, never ``pytest.importorskip``-ed. importorskip turns an
import error into a skip, so a helper broken by a renamed module would turn the tests that
use it into skips and the run would still pass; optional third-party packages (cupy, dask,
...) are what importorskip is for."""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
OWN_PACKAGES = {"dualgpu", "benchmarks", "tests"}


def own_modules() -> set[str]:
    """Top-level names the tests import from the project: the modules of tests/ and of its
    folders, and our packages."""
    return {p.stem for p in TESTS.rglob("*.py")} | OWN_PACKAGES


def importorskipped(source: str) -> list[tuple[int, str]]:
    """``(line, module)`` of every ``importorskip("module")`` call in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(
                node.func, "id", None)) == "importorskip" and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            found.append((node.lineno, node.args[0].value))
    return found


def test_importorskipped_finds_calls():
    src = 'import pytest\ncp = pytest.importorskip("cupy")\nfp = importorskip("fuzz_calls")\n'
    assert importorskipped(src) == [(2, "cupy"), (3, "fuzz_calls")]


def test_own_helpers_are_imported_not_importorskipped():
    own = own_modules()
    assert {"fuzz_programs", "tiny_harness", "dualgpu"} <= own
    bad = [f"{path.relative_to(TESTS)}:{line}: importorskip({name!r})"
           for path in sorted(TESTS.rglob("*.py"))
           for line, name in importorskipped(path.read_text())
           if name.split(".")[0] in own]
    assert not bad, ("import the project's own test helpers plainly, so that a broken "
                     "helper fails collection instead of skipping its tests:\n"
                     + "\n".join(bad))
