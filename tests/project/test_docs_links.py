"""The documents' links and file paths resolve, and docs/sparse_ad.md covers what issue 26
asks of it: detection, coloring and reuse, with a picture."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARKDOWN = sorted((ROOT / "docs").glob("*.md")) + [
    ROOT / name for name in ("README.md", "CHANGELOG.md", "CONTRIBUTING.md")]
_FENCE = re.compile(r"^[ \t]*```.*?^[ \t]*```[ \t]*$", re.S | re.M)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\]\(([^()\s]+)\)")
_PATH = re.compile(r"(?<![\w./-])(?:docs|examples)/[\w./-]+\.(?:md|py|png|svg)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*$", re.M)


def _prose(text: str) -> str:
    """``text`` without its code blocks and code spans (their brackets are not links)."""
    return _INLINE_CODE.sub("", _FENCE.sub("", text))


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of the headings of ``path``."""
    headings = _HEADING.findall(_FENCE.sub("", path.read_text(encoding="utf-8")))
    return {re.sub(r"[^\w\- ]", "", h.strip().lower().replace("`", "")).replace(" ", "-")
            for h in headings}


@pytest.mark.parametrize("path", MARKDOWN, ids=[p.name for p in MARKDOWN])
def test_relative_links_resolve(path):
    broken = []
    for target in _LINK.findall(_prose(path.read_text(encoding="utf-8"))):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target} (no such heading)")
    assert not broken, f"{path.name} links to {broken}"


@pytest.mark.parametrize("path", MARKDOWN, ids=[p.name for p in MARKDOWN])
def test_paths_mentioned_exist(path):
    missing = [p for p in _PATH.findall(path.read_text(encoding="utf-8"))
               if not (ROOT / p).exists()]
    assert not missing, f"{path.name} names {missing}, which do not exist"


def test_sparse_ad_page_explains_detection_coloring_and_reuse_with_a_picture():
    page = ROOT / "docs" / "sparse_ad.md"
    assert page.exists(), "docs/sparse_ad.md is the page of issue 26"
    text = page.read_text(encoding="utf-8")
    assert {"detection", "coloring", "reuse", "pictures"} <= _anchors(page)
    images = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", text)
    assert images and all((page.parent / image).exists() for image in images)
    assert "**one entry of dualgpu's program cache**" in text
    assert "](sparse_ad.md)" in (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
