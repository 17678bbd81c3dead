"""Normalized index keys: how ``getitem`` and ``scatter_add`` record ``x[key]``.

A normalized key is a tuple of entries: ``("slice", start, stop, step)``, ``("int", i)``,
``None`` (a new axis), or ``("array", k)`` for the k-th index-array operand. No Ellipsis
remains. The printer, the code generators and the shape rules read keys only through here.

>>> from dualgpu.core.indexing import key_to_source
>>> key_to_source((("slice", None, None, None), ("int", 2), None), [])
':, 2, None'
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# one entry of a normalized key: ("slice", start, stop, step), ("int", i), None, ("array", k)
KeyEntry = tuple[Any, ...] | None
Key = Sequence[KeyEntry]


def key_to_python(key: Key, arrays: Sequence[Any]) -> tuple[Any, ...]:
    """Turn a normalized key back into a NumPy indexing tuple."""
    out: list[Any] = []
    for e in key:
        if e is None:
            out.append(None)
        elif e[0] == "slice":
            out.append(slice(e[1], e[2], e[3]))
        elif e[0] == "int":
            out.append(e[1])
        else:
            out.append(arrays[e[1]])
    return tuple(out)


def key_has_arrays(key: Key) -> bool:
    """Whether the key reads index arrays (a gather or scatter), not only slices and ints."""
    return any(e is not None and e[0] == "array" for e in key)


def key_array_axes(key: Key) -> dict[int, int]:
    """Index-array operand ``k`` -> the axis of the indexed array it indexes (slices, ints
    and arrays each take one axis; a new axis none).

    >>> key_array_axes((("slice", None, None, None), None, ("array", 0), ("int", 1)))
    {0: 1}
    """
    axes: dict[int, int] = {}
    axis = 0
    for e in key:
        if e is None:
            continue
        if e[0] == "array":
            axes[e[1]] = axis
        axis += 1
    return axes


def key_to_source(key: Key, array_names: Sequence[str]) -> str:
    """The key as Python source, index arrays by their names."""
    parts = []
    for e in key:
        if e is None:
            parts.append("None")
        elif e[0] == "slice":
            s = "" if e[1] is None else str(e[1])
            s += ":" + ("" if e[2] is None else str(e[2]))
            if e[3] is not None:
                s += ":" + str(e[3])
            parts.append(s)
        elif e[0] == "int":
            parts.append(str(e[1]))
        else:
            parts.append(array_names[e[1]])
    return ", ".join(parts) if parts else "()"
