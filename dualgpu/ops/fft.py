"""Discrete Fourier transforms along one axis, one block (declaration, rules):

* ``fft`` and ``ifft``: complex to complex along one (non-negative) axis, with NumPy's
  ``norm`` ("backward", "ortho" or "forward");
* ``rfft`` (real to the ``n // 2 + 1`` non-negative frequencies) and ``irfft`` (those back
  to ``n`` real values, ``n`` a parameter).

Library ops: ``numpy.fft`` (pocketfft) on the CPU, ``cupy.fft`` (cuFFT) on the GPU. All
are linear, so the HVP, the forward Laplacian and Taylor mode take them by their linear
flag. ``fft`` and ``ifft`` are their own transposes: the DFT matrix ``F[j, k] = w**(j*k)``
is symmetric, and so is every scaling of it or of its conjugate; so the VJP of ``fft`` is
``fft`` of the cotangent (unconjugated, JAX's convention for complex values). The real
transforms transpose into each other, with the norm's direction swapped and the weights of
the frequencies that stand for two (every one but the zero and, for even ``n``, the Nyquist
frequency): ``rfft``'s VJP is ``irfft`` of ``conj(c * g)``, ``c`` 1/2 at those, and
``irfft``'s is ``c' * conj(rfft(g))``, ``c'`` 2 at those. ``irfft`` reads only the real
parts of the zero- and Nyquist-frequency coefficients, as NumPy's does (the impl sets their
imaginary parts to 0: cuFFT leaves them undefined). The front end
(:mod:`dualgpu.frontend.numpy.fft`) writes every ``numpy.fft`` transform with these four
and ops of :mod:`dualgpu.lax`.

>>> import numpy as np
>>> from dualgpu.ops.fft import fft_p
>>> fft_p(np.array([1.0, 2.0, 0.0, 0.0], dtype=complex), axis=0, norm="backward")
array([ 3.+0.j,  1.-2.j, -1.+0.j,  1.+2.j])
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.axes import check_axis
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import defprim, defrules, defstandalone
from ..errors import DualgpuError
from ..rules import batching_rules as batching
from ..rules import separability_rules as separability
from ..rules import sparsity_rules as sparsity
from ..rules.common import deflinear

NORMS = ("backward", "ortho", "forward")
SWAPPED = {"backward": "forward", "ortho": "ortho", "forward": "backward"}  # the direction


def _check(name, a, axis, norm, kind):
    """The operand of a transform: ``kind`` "c" (complex) or "f" (real; the front end casts
    first), a non-empty ``axis``, one of NumPy's norms."""
    check_axis(axis, a.ndim, name)
    if a.dtype.kind != kind:
        raise DualgpuError(f"{name}: the operand must be {'complex' if kind == 'c' else 'real'}"
                           f", got {a.dtype} (the front end casts first)")
    if norm not in NORMS:
        raise DualgpuError(f"{name}: norm must be one of {NORMS}, got {norm!r}")
    if a.shape[axis] < 1:
        raise DualgpuError(f"{name}: the transformed axis {axis} is empty")


def _declare(name: str):
    def impl(xp, x, axis, norm):
        # NumPy 1.x computes complex64 in complex128: the declared dtype is the input's
        return getattr(xp.fft, name)(x, axis=axis, norm=norm).astype(x.dtype, copy=False)

    def shape(avals, axis, norm):
        _check(name, avals[0], axis, norm, "c")
        return Aval(tuple(avals[0].shape), avals[0].dtype)

    prim = defprim(name, impl, shape, kind=Flag.LIBRARY, arity=1,
                   py=f"xp.fft.{name}({{0}}, axis={{axis}}, norm={{norm}})"
                      ".astype({0}.dtype, copy=False)",
                   doc=f"np.fft.{name} of complex values along one (non-negative) axis, "
                       "NumPy's norm; linear, its own transpose.")
    # the DFT matrix is symmetric: the op transposes itself, with the same norm
    deflinear(prim, lambda g, x, axis, norm: prim.bind(g, axis=axis, norm=norm))
    defrules(prim, vmap=batching.axis_rule, sparsity=sparsity.along_axis,
             separability=separability.along_axis)
    return prim


fft_p = _declare("fft")
ifft_p = _declare("ifft")


# --------------------------------------------------------------------------- rfft, irfft
def _complex_of(dtype) -> np.dtype:
    return np.result_type(dtype, np.complex64)


def _real_of(dtype) -> np.dtype:
    return np.finfo(dtype).dtype


def _rfft_impl(xp, x, axis, norm):
    return xp.fft.rfft(x, axis=axis, norm=norm).astype(_complex_of(x.dtype), copy=False)


def _rfft_shape(avals, axis, norm):
    a = avals[0]
    _check("rfft", a, axis, norm, "f")
    shape = list(a.shape)
    shape[axis] = shape[axis] // 2 + 1
    return Aval(tuple(shape), _complex_of(a.dtype))


def _irfft_impl(xp, x, axis, norm, n):
    # the imaginary parts at these frequencies are ignored by pocketfft, undefined in cuFFT
    x = x.copy()
    for k in [0] + ([n // 2] if n % 2 == 0 and n > 1 else []):
        at = (slice(None),) * axis + (k,)
        x[at] = x[at].real
    return xp.fft.irfft(x, n=n, axis=axis, norm=norm).astype(_real_of(x.dtype), copy=False)


def _irfft_shape(avals, axis, norm, n):
    a = avals[0]
    _check("irfft", a, axis, norm, "c")
    if n < 1 or a.shape[axis] != n // 2 + 1:
        raise DualgpuError(f"irfft: n={n} needs {n // 2 + 1} coefficients along axis {axis}, "
                           f"got {a.shape[axis]}")
    shape = list(a.shape)
    shape[axis] = n
    return Aval(tuple(shape), _real_of(a.dtype))


rfft_p = defprim("rfft", _rfft_impl, _rfft_shape, kind=Flag.LIBRARY, arity=1,
                 py="ops.rfft({0}, axis={axis}, norm={norm})",
                 doc="np.fft.rfft of real values along one (non-negative) axis: the n // 2 + 1 "
                     "non-negative frequencies; linear, transposed by irfft.")
irfft_p = defprim("irfft", _irfft_impl, _irfft_shape, kind=Flag.LIBRARY, arity=1,
                  py="ops.irfft({0}, axis={axis}, norm={norm}, n={n})",
                  doc="np.fft.irfft along one (non-negative) axis: n real values from their "
                      "n // 2 + 1 non-negative frequencies; linear, transposed by rfft.")


def _pair_weights(n: int, axis: int, ndim: int, pair: float) -> np.ndarray:
    """``pair`` at the frequencies of ``rfft(x, n)`` that stand for two (all but the zero
    and, for even ``n``, the Nyquist one), 1 at the others; shaped to broadcast along
    ``axis``."""
    w = np.full(n // 2 + 1, pair)
    w[0] = 1.0
    if n % 2 == 0 and n > 1:
        w[-1] = 1.0
    return w.reshape((-1,) + (1,) * (ndim - axis - 1))


def _rfft_transpose(g, x, axis, norm):
    n = x.shape[axis]
    c = _pair_weights(n, axis, g.ndim, 0.5).astype(_real_of(g.dtype))
    return irfft_p.bind(lax.conj(lax.multiply(g, c)), axis=axis, norm=SWAPPED[norm], n=n)


def _irfft_transpose(g, x, axis, norm, n):
    c = _pair_weights(n, axis, g.ndim, 2.0).astype(g.dtype)
    return lax.multiply(lax.conj(rfft_p.bind(g, axis=axis, norm=SWAPPED[norm])), c)


deflinear(rfft_p, _rfft_transpose)
deflinear(irfft_p, _irfft_transpose)
for _prim in (rfft_p, irfft_p):
    defrules(_prim, vmap=batching.axis_rule, sparsity=sparsity.along_axis,
             separability=separability.along_axis)
defstandalone(rfft_p, (
    'def rfft(x, axis, norm):\n'
    '    return xp.fft.rfft(x, axis=axis, norm=norm).astype(\n'
    '        np.result_type(x.dtype, np.complex64), copy=False)\n'))
defstandalone(irfft_p, (
    'def irfft(x, axis, norm, n):\n'
    '    x = x.copy()\n'
    '    for k in [0] + ([n // 2] if n % 2 == 0 and n > 1 else []):\n'
    '        at = (slice(None),) * axis + (k,)\n'
    '        x[at] = x[at].real\n'
    '    return xp.fft.irfft(x, n=n, axis=axis, norm=norm).astype(\n'
    '        np.finfo(x.dtype).dtype, copy=False)\n'))
