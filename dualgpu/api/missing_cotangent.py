"""What a custom op's VJP rule's ``None`` becomes for a floating-point input (a stand-in
that refuses every use with one clear message)."""
from __future__ import annotations

from ..errors import DualgpuError

__all__ = ["MissingCotangent"]


class MissingCotangent:
    """What a VJP's ``None`` becomes for a floating-point input: harmless while that input
    is not differentiated (reverse mode skips it), one clear error as soon as it is used."""

    __slots__ = ("_message",)

    def __init__(self, message: str):
        object.__setattr__(self, "_message", message)

    def _refuse(self, *args, **kwargs):
        raise DualgpuError(object.__getattribute__(self, "_message"))

    def __getattr__(self, name):
        self._refuse()

    __array__ = __array_ufunc__ = __array_function__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __rtruediv__ = __neg__ = __bool__ = __len__ = __iter__ = _refuse
    __float__ = __index__ = __getitem__ = _refuse

    def __repr__(self) -> str:
        return "<missing cotangent>"
