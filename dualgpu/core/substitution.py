"""Closure conversion's substitution: while :func:`substituted` runs, given traced values
(ones a function closes over, of a trace that may have finished) stand for their partners in
every operation (:func:`dualgpu.core.trace.bind`), output and call of a transformed
function. How a custom_jvp / custom_vjp function and its rules, run again later, read the
values they closed over, passed to the op as extra operands (JAX's closure conversion).
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from ..base.tree import tree_map

__all__ = ["SUBSTITUTIONS", "substituted", "substitute", "substitute_tree"]

SUBSTITUTIONS = threading.local()  # ``pairs``: id(value) -> (value, its stand-in)


@contextlib.contextmanager
def substituted(pairs: Sequence[tuple[Any, Any]]) -> Iterator[None]:
    """While it runs, each value of ``pairs`` stands for its partner."""
    old = getattr(SUBSTITUTIONS, "pairs", None)
    SUBSTITUTIONS.pairs = {**(old or {}), **{id(t): (t, v) for t, v in pairs}}
    try:
        yield
    finally:
        SUBSTITUTIONS.pairs = old


def substitute(value: Any) -> Any:
    """``value``'s stand-in, or ``value``."""
    pairs = getattr(SUBSTITUTIONS, "pairs", None)
    hit = pairs.get(id(value)) if pairs else None
    return hit[1] if hit is not None and hit[0] is value else value


def substitute_tree(tree: Any) -> Any:
    """``tree`` with each value that has a stand-in replaced (for the calls that take traced
    values other than through ``bind``: a jit function's, a custom function's)."""
    if not getattr(SUBSTITUTIONS, "pairs", None):
        return tree
    return tree_map(substitute, tree)
