"""``numpy.fft`` on traced values: every transform (``fft``, ``ifft``, ``rfft``, ``irfft``,
``hfft``, ``ihfft`` and their ``2``/``n``-dimensional forms) and the shifts (``fftshift``,
``ifftshift``: rolls), with NumPy's arguments (``n``, ``axis``, ``s``, ``axes``, ``norm``),
dtypes and values.

Each is written with the complex transforms along one axis of :mod:`dualgpu.ops.fft`
(``fft`` and ``ifft``, linear, their own transposes) and traced ops: ``rfft`` is the first
``n // 2 + 1`` coefficients of the complex transform of the real input, ``irfft`` the real
part of the inverse transform of the Hermitian-extended spectrum (which, as NumPy's,
ignores the imaginary parts of the zero- and, for even ``n``, the Nyquist-frequency
coefficients).
Derivatives follow JAX's conventions for complex values: the output of ``dg.grad`` must be
real (``np.abs(F) ** 2``, ``F.real``), the VJP of a complex output is the transpose,
unconjugated.

    >>> x = np.array([1.0, 2.0, 0.5, -1.0])
    >>> dg.grad(lambda x: np.sum(np.abs(np.fft.fft(x)) ** 2))(x)  # Parseval: 4 sum(x**2)
    array([ 8., 16.,  4., -8.])
    >>> dg.grad(lambda x: np.fft.fftshift(x)[0])(np.array([1.0, 2.0, 3.0]))
    array([0., 0., 1.])
"""
from __future__ import annotations

import operator

import numpy as np

from ... import lax
from ...core.axes import check_axis as _check_axis
from ...errors import ArgumentTypeError, InvalidArgumentError, user_location
from ...lax import astype, conj, flip, real
from ...lax import dtype_of as _dtype
from ...lax import shape_of as _shape
from ...ops.fft import NORMS, SWAPPED, fft_p, ifft_p
from .arguments import as_array, unsupported_kwargs
from .indexing import take_range
from .shapes import roll


def _norm(norm) -> str:
    norm = "backward" if norm is None else norm
    if norm not in NORMS:
        raise InvalidArgumentError(f'Invalid norm value {norm}; should be "backward", "ortho" '
                                   f'or "forward" (at {user_location()})')
    return norm


def _resized(a, n: int, axis: int):
    """``a`` cut or zero-padded at the end of ``axis`` to length ``n``, as NumPy's
    transforms take their input."""
    have = _shape(a)[axis]
    if have > n:
        return take_range(a, axis, 0, n)
    if have < n:
        widths = [(0, 0)] * len(_shape(a))
        widths[axis] = (0, n - have)
        return lax.pad(a, widths)
    return a


def _axis_and_length(name: str, a, n, axis, default=None):
    axis = _check_axis(axis, len(_shape(a)), f"np.fft.{name}")
    n = (_shape(a)[axis] if default is None else default(_shape(a)[axis])) if n is None \
        else operator.index(n)
    if n < 1:
        raise InvalidArgumentError(f"np.fft.{name}: Invalid number of FFT data points ({n}) "
                                   f"specified (at {user_location()})")
    return n, axis


def _complex_transform(prim, name, a, n, axis, norm, out):
    unsupported_kwargs(name, {"out": out})
    a = as_array(a)
    n, axis = _axis_and_length(name, a, n, axis)
    a = astype(_resized(a, n, axis), np.result_type(_dtype(a), 1j))
    return prim.bind(a, axis=axis, norm=_norm(norm))


def fft(a, n=None, axis=-1, norm=None, out=None):
    """``np.fft.fft``: the discrete Fourier transform along ``axis``."""
    return _complex_transform(fft_p, "fft", a, n, axis, norm, out)


def ifft(a, n=None, axis=-1, norm=None, out=None):
    """``np.fft.ifft``: the inverse discrete Fourier transform along ``axis``."""
    return _complex_transform(ifft_p, "ifft", a, n, axis, norm, out)


# rfft and irfft are written with the complex transforms, which have run on the GPU;
# dualgpu.ops.fft's rfft_p and irfft_p (cuFFT's real transforms, half the work) take their
# place once they have too (benchmarks/NOTES.md, "numpy.fft, first figures")
def rfft(a, n=None, axis=-1, norm=None, out=None):
    """``np.fft.rfft``: the non-negative frequencies of the transform of real values (the
    first ``n // 2 + 1`` coefficients of the complex transform)."""
    unsupported_kwargs("rfft", {"out": out})
    a = as_array(a)
    if _dtype(a).kind == "c":
        raise ArgumentTypeError(f"np.fft.rfft: the input must be real, got {_dtype(a)} "
                                f"(at {user_location()})")
    n, axis = _axis_and_length("rfft", a, n, axis)
    whole = fft(_resized(a, n, axis), n, axis, norm)
    return take_range(whole, axis, 0, n // 2 + 1)


def irfft(a, n=None, axis=-1, norm=None, out=None):
    """``np.fft.irfft``: the real signal of ``n`` points (``2 * (m - 1)`` by default) whose
    ``rfft`` is ``a`` (cut or zero-padded to ``n // 2 + 1`` coefficients): the real part of
    the inverse transform of the spectrum extended by its conjugate."""
    unsupported_kwargs("irfft", {"out": out})
    a = as_array(a)
    n, axis = _axis_and_length("irfft", a, n, axis, default=lambda m: 2 * (m - 1))
    # NumPy's output dtype is the input's real dtype made inexact: float16 stays float16
    out_dtype = np.result_type(np.zeros(0, _dtype(a)).real.dtype, 1.0)
    a = astype(_resized(a, n // 2 + 1, axis), np.result_type(_dtype(a), 1j))
    mirror = conj(flip(take_range(a, axis, 1, n - n // 2), axis=axis))
    whole = lax.concatenate([a, mirror], axis)
    out = real(ifft_p.bind(whole, axis=axis, norm=_norm(norm)))
    return out if _dtype(out) == out_dtype else astype(out, out_dtype)


def hfft(a, n=None, axis=-1, norm=None, out=None):
    """``np.fft.hfft``: the real transform of a Hermitian-symmetric signal given by its
    first half (``irfft`` of the conjugate, the norm's direction swapped)."""
    unsupported_kwargs("hfft", {"out": out})
    a = as_array(a)
    n, axis = _axis_and_length("hfft", a, n, axis, default=lambda m: 2 * (m - 1))
    return irfft(conj(a), n, axis, SWAPPED[_norm(norm)])


def ihfft(a, n=None, axis=-1, norm=None, out=None):
    """``np.fft.ihfft``: the inverse of ``hfft`` (the conjugate of ``rfft``, the norm's
    direction swapped)."""
    unsupported_kwargs("ihfft", {"out": out})
    return conj(rfft(a, n, axis, SWAPPED[_norm(norm)]))


def _lengths_and_axes(name, a, s, axes, inverse_real=False):
    """NumPy's ``_cook_nd_args``: the lengths ``s`` and the axes of an n-dimensional
    transform (every axis, or the last ``len(s)``, by default)."""
    nd = len(_shape(a))
    if axes is not None:
        axes = [_check_axis(ax, nd, f"np.fft.{name}") for ax in axes]
    if s is None:
        axes = list(range(nd)) if axes is None else axes
        s = [_shape(a)[ax] for ax in axes]
        if inverse_real and axes:
            s[-1] = 2 * (_shape(a)[axes[-1]] - 1)
    else:
        s = list(s)
        if axes is None:
            if len(s) > nd:
                raise InvalidArgumentError(f"np.fft.{name}: s={s} has more entries than the "
                                           f"input has axes ({nd}) (at {user_location()})")
            axes = list(range(nd - len(s), nd))
        if len(s) != len(axes):
            raise InvalidArgumentError(f"np.fft.{name}: Shape and axes have different "
                                       f"lengths (at {user_location()})")
        # -1: the input's length; None (deprecated in NumPy 2.0): the 1-D transform's
        # default, taken when the transform along that axis runs (irfft's 2 (m - 1); the
        # length left by the transforms before it along a repeated axis)
        s = [_shape(a)[ax] if m is not None and m == -1 else
             None if m is None else operator.index(m) for m, ax in zip(s, axes)]
    return s, axes


def _nd(one, name, a, s, axes, norm, out):
    unsupported_kwargs(name, {"out": out})
    a = as_array(a)
    s, axes = _lengths_and_axes(name, a, s, axes)
    for n, axis in reversed(list(zip(s, axes))):
        a = one(a, n, axis, norm)
    return a


def fftn(a, s=None, axes=None, norm=None, out=None):
    """``np.fft.fftn``: the transform over ``axes`` (every axis by default)."""
    return _nd(fft, "fftn", a, s, axes, norm, out)


def ifftn(a, s=None, axes=None, norm=None, out=None):
    """``np.fft.ifftn``: the inverse transform over ``axes``."""
    return _nd(ifft, "ifftn", a, s, axes, norm, out)


def fft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """``np.fft.fft2``: ``fftn`` over the last two axes."""
    return _nd(fft, "fft2", a, s, axes, norm, out)


def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """``np.fft.ifft2``: ``ifftn`` over the last two axes."""
    return _nd(ifft, "ifft2", a, s, axes, norm, out)


def _rfftn(name, a, s, axes, norm, out):
    unsupported_kwargs(name, {"out": out})
    a = as_array(a)
    s, axes = _lengths_and_axes(name, a, s, axes)
    a = rfft(a, s[-1], axes[-1], norm)
    for n, axis in reversed(list(zip(s[:-1], axes[:-1]))):
        a = fft(a, n, axis, norm)
    return a


def _irfftn(name, a, s, axes, norm, out):
    unsupported_kwargs(name, {"out": out})
    a = as_array(a)
    s, axes = _lengths_and_axes(name, a, s, axes, inverse_real=True)
    for n, axis in zip(s[:-1], axes[:-1]):
        a = ifft(a, n, axis, norm)
    return irfft(a, s[-1], axes[-1], norm)


def rfftn(a, s=None, axes=None, norm=None, out=None):
    """``np.fft.rfftn``: ``rfft`` over the last of ``axes``, ``fft`` over the others."""
    return _rfftn("rfftn", a, s, axes, norm, out)


def irfftn(a, s=None, axes=None, norm=None, out=None):
    """``np.fft.irfftn``: the inverse of ``rfftn``."""
    return _irfftn("irfftn", a, s, axes, norm, out)


def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """``np.fft.rfft2``: ``rfftn`` over the last two axes."""
    return _rfftn("rfft2", a, s, axes, norm, out)


def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """``np.fft.irfft2``: ``irfftn`` over the last two axes."""
    return _irfftn("irfft2", a, s, axes, norm, out)


def _shift_axes(name: str, x, axes) -> list[int]:
    """The axes of a shift: every axis by default; a repeated one shifts again, as NumPy's
    (its roll adds the shifts)."""
    nd = len(_shape(x))
    if axes is None:
        return list(range(nd))
    axes = axes if isinstance(axes, (tuple, list)) else (axes,)
    return [_check_axis(a, nd, f"np.fft.{name}") for a in axes]


def fftshift(x, axes=None):
    axes = _shift_axes("fftshift", x, axes)
    return roll(x, [_shape(x)[a] // 2 for a in axes], axes)


def ifftshift(x, axes=None):
    axes = _shift_axes("ifftshift", x, axes)
    return roll(x, [-(_shape(x)[a] // 2) for a in axes], axes)
