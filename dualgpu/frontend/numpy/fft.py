"""``numpy.fft`` on traced values: the shifts (``fftshift``, ``ifftshift``: rolls) trace;
the transforms themselves are refused with an error that says what to do instead (complex
FFTs have no rule yet, issue 13).

    >>> dg.grad(lambda x: np.fft.fftshift(x)[0])(np.array([1.0, 2.0, 3.0]))
    array([0., 0., 1.])
"""
from __future__ import annotations

from ...core.axes import normalize_axes
from ...errors import UnsupportedOpError, user_location
from ...lax import shape_of as _shape
from .shapes import roll


def fftshift(x, axes=None):
    nd = len(_shape(x))
    axes = tuple(range(nd)) if axes is None else normalize_axes(axes, nd, "fftshift")
    return roll(x, [_shape(x)[a] // 2 for a in axes], axes)


def ifftshift(x, axes=None):
    nd = len(_shape(x))
    axes = tuple(range(nd)) if axes is None else normalize_axes(axes, nd, "ifftshift")
    return roll(x, [-(_shape(x)[a] // 2) for a in axes], axes)


def _refusal(name: str):
    """``np.fft.<name>``: raises :class:`UnsupportedOpError` on traced values, saying what
    to write instead; marked ``refused`` (docs/op_table.py lists it so)."""
    def refused(a, *args, **kwargs):
        raise UnsupportedOpError(
            f"np.fft.{name} of a traced value (at {user_location()}) is not supported yet: "
            "complex FFTs have no dualgpu rule (issue 13). Multiply by a constant DFT "
            "matrix instead (np.exp(-2j * np.pi * np.outer(k, n) / N) @ x); complex "
            "intermediates then follow JAX's conventions (np.abs, np.real, np.imag); or "
            "register a primitive for it with dg.defprim (docs/custom_rules.md).")

    refused.__name__ = refused.__qualname__ = name
    refused.refused = True  # type: ignore[attr-defined]  # a marker the front end reads
    return refused


fft = _refusal("fft")
ifft = _refusal("ifft")
rfft = _refusal("rfft")
irfft = _refusal("irfft")
fft2 = _refusal("fft2")
ifft2 = _refusal("ifft2")
rfft2 = _refusal("rfft2")
irfft2 = _refusal("irfft2")
fftn = _refusal("fftn")
ifftn = _refusal("ifftn")
rfftn = _refusal("rfftn")
irfftn = _refusal("irfftn")
hfft = _refusal("hfft")
ihfft = _refusal("ihfft")
