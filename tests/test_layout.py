"""The package's layout as docs/architecture.md describes it: every module and folder of the
package is in its listing, and no module is longer than 700 lines."""
import pathlib
import re

import dualgpu as dg

PACKAGE = pathlib.Path(dg.__file__).parent
ARCHITECTURE = (PACKAGE.parent / "docs" / "architecture.md").read_text()
LISTING = ARCHITECTURE[ARCHITECTURE.index("```\ndualgpu/"):]
LISTING = LISTING[:LISTING.index("```", 4)]
MAX_LINES = 700


def test_no_module_is_longer_than_700_lines():
    long = {p.relative_to(PACKAGE).as_posix(): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_the_listing_names_every_top_level_module_and_folder():
    names = {p.name for p in PACKAGE.iterdir()
             if (p.suffix == ".py" and p.name != "__init__.py")
             or (p.is_dir() and (p / "__init__.py").exists())}
    missing = sorted(n for n in names
                     if not re.search(r"(?<![\w/])" + re.escape(n.removesuffix(".py"))
                                      + (r"\.py" if n.endswith(".py") else "/"), LISTING))
    assert not missing, f"docs/architecture.md's listing lacks {missing}"


def test_the_listing_names_every_module_of_the_runtime_and_the_interpreters():
    for folder in ("runtime", "transforms", "fusion", "codegen", "coloring", "core"):
        for p in (PACKAGE / folder).glob("*.py"):
            if p.name == "__init__.py":
                continue
            stem = p.stem
            assert re.search(r"\b" + re.escape(stem) + r"(\.py)?\b", LISTING), \
                f"docs/architecture.md's listing lacks {folder}/{p.name}"
