"""Every ```python block of docs/*.md and README.md runs.

The blocks of one file run in order in one shared namespace (so a page can build on its
earlier blocks), in a temporary working directory; the namespace starts with ``np`` (NumPy)
and ``dg`` (dualgpu) so that a page whose import block is skipped still runs. A block whose
first line is ``# doctest: skip`` is not run (GPU-only code, or code that needs a user's
data). ``dg.config`` and the program cache are restored after each page.
"""
import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
FILES = [f for f in FILES if f.exists()]
_BLOCK = re.compile(r"^[ \t]*```python[ \t]*\n(.*?)^[ \t]*```[ \t]*$", re.S | re.M)
SKIP = "# doctest: skip"


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, code) of every ```python block."""
    return [(text[:m.start()].count("\n") + 2, textwrap.dedent(m.group(1)))
            for m in _BLOCK.finditer(text)]


def test_block_extraction():
    text = "intro\n```python\nx = 1\n```\ntext\n```python\n# doctest: skip\ny\n```\n"
    assert python_blocks(text) == [(3, "x = 1\n"), (7, "# doctest: skip\ny\n")]
    indented = "- item\n\n  ```python\n  if True:\n      z = 2\n  ```\n"
    assert python_blocks(indented) == [(4, "if True:\n    z = 2\n")]


def test_docs_exist():
    names = {f.name for f in FILES}
    for want in ("README.md", "index.md", "getting_started.md", "concepts.md", "api.md",
                 "limitations.md", "faq.md"):
        assert want in names


@pytest.fixture
def restore_dualgpu_state():
    import dualgpu as dg
    from dualgpu.core.primitives import NON_DIFFERENTIABLE

    config = dict(dg.config)
    registered = set(dg.REGISTRY)
    nondiff = set(NON_DIFFERENTIABLE)
    yield
    dg.config.clear()
    dg.config.update(config)
    dg.set_cache_size(config["cache_size"])
    dg.clear_cache()
    for name in set(dg.REGISTRY) - registered:  # primitives a page registered for its example
        del dg.REGISTRY[name]
    NON_DIFFERENTIABLE.intersection_update(nondiff | set(dg.REGISTRY))


@pytest.mark.parametrize("path", FILES, ids=[f.name for f in FILES])
def test_python_blocks_run(path, tmp_path, monkeypatch, restore_dualgpu_state):
    import numpy as np

    import dualgpu as dg

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    text = path.read_text(encoding="utf-8")
    namespace = {"__name__": f"docs_{path.stem}", "np": np, "dg": dg}
    ran = 0
    for line, code in python_blocks(text):
        if code.lstrip().startswith(SKIP):
            continue
        try:
            exec(compile(code, f"{path.name}:{line}", "exec"), namespace)
        except Exception as e:
            pytest.fail(f"{path.relative_to(ROOT)} block at line {line} raised "
                        f"{type(e).__name__}: {e}\n{code}")
        ran += 1
    del ran


@pytest.mark.parametrize("path", FILES, ids=[f.name for f in FILES])
def test_a_page_imports_np_and_dg_before_using_them(path):
    """A reader copies a page's first block: it must import what it uses (the test
    namespace pre-seeds np and dg, so running the blocks alone would not notice)."""
    blocks = [(line, code) for line, code in python_blocks(path.read_text(encoding="utf-8"))
              if not code.startswith(SKIP)]
    for name, statement in (("dg", "import dualgpu as dg"), ("np", "import numpy as np")):
        users = [line for line, code in blocks if re.search(rf"\b{name}\.", code)]
        if users:
            imported = [line for line, code in blocks if statement in code]
            assert imported and imported[0] <= users[0], (
                f"{path.name}: the block at line {users[0]} uses {name} before any block "
                f"has '{statement}'")
