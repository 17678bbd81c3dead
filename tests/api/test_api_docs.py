"""docs/api.md documents every public name of dualgpu (everything in ``dualgpu.__all__``)
with an example."""
import re
from pathlib import Path

import dualgpu as dg

API = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def _sections(text: str) -> dict[str, str]:
    """Heading title -> section body, for every '##'/'###' heading."""
    parts = re.split(r"^#{2,3} +(.+)$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_every_public_name_is_documented():
    text = API.read_text(encoding="utf-8")
    missing = [name for name in dg.__all__ if f"`{name}" not in text and
               f"dg.{name}" not in text]
    assert not missing, f"docs/api.md does not mention: {missing}"


def test_every_public_name_has_a_section_with_an_example():
    sections = _sections(API.read_text(encoding="utf-8"))
    titled = {}
    for title, body in sections.items():
        for name in re.findall(r"`(?:dg\.)?([A-Za-z_][A-Za-z0-9_]*)", title):
            titled[name] = body
    no_section = [n for n in dg.__all__ if n not in titled]
    assert not no_section, f"no '## `name`' heading in docs/api.md for: {no_section}"
    no_example = [n for n in dg.__all__ if "```python" not in titled[n]]
    assert not no_example, f"no ```python example in the section of: {no_example}"


def test_no_stale_names():
    """Headings name only things that exist."""
    sections = _sections(API.read_text(encoding="utf-8"))
    for title in sections:
        m = re.match(r"`dg\.([A-Za-z_][A-Za-z0-9_.]*)", title)
        if m:
            obj = dg
            for part in m.group(1).split("."):
                assert hasattr(obj, part), f"docs/api.md documents dg.{m.group(1)}"
                obj = getattr(obj, part)
