"""What the executor needs from an array library (the NumPy and CuPy backends subclass it)."""
from __future__ import annotations

from typing import Any


class Backend:
    """What the executor needs from an array library."""

    name = "abstract"
    is_cupy = False
    xp: Any = None

    def is_array(self, x) -> bool:  # dense array of this backend
        raise NotImplementedError

    def is_sparse(self, x) -> bool:
        raise NotImplementedError
