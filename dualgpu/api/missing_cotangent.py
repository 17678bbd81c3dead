"""What a custom op's VJP rule's ``None`` becomes for a floating-point input (a stand-in
that refuses every use with one clear message)."""
from __future__ import annotations

from ..errors import DualgpuError, EscapedTracerError

__all__ = ["MissingCotangent", "closed_refusal"]


def closed_refusal(rules: tuple, i: int) -> DualgpuError | None:
    """The refusal of a derivative for input ``i`` of a custom op, if it is a converted
    closure's closed-over value (as one of its ``rules`` says): JAX's error type."""
    for rule in rules:
        closed = getattr(rule, "closed_message", None)
        if closed is not None and closed(i) is not None:
            return EscapedTracerError(closed(i))
    return None


class MissingCotangent:
    """What a VJP's ``None`` becomes for a floating-point input: harmless while that input
    is not differentiated (reverse mode skips it), one clear error as soon as it is used."""

    __slots__ = ("_error",)

    def __init__(self, error: DualgpuError):
        object.__setattr__(self, "_error", error)

    def _refuse(self, *args, **kwargs):
        error = object.__getattribute__(self, "_error")
        raise type(error)(*error.args)

    def __getattr__(self, name):
        self._refuse()

    __array__ = __array_ufunc__ = __array_function__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __rtruediv__ = __neg__ = __bool__ = __len__ = __iter__ = _refuse
    __float__ = __index__ = __getitem__ = _refuse

    def __repr__(self) -> str:
        return "<missing cotangent>"
