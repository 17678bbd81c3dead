"""Discrete Fourier transforms along one axis, one block (declaration, rules):

* ``fft`` and ``ifft``: complex to complex along one (non-negative) axis, with NumPy's
  ``norm`` ("backward", "ortho" or "forward"). Library ops: ``numpy.fft`` (pocketfft) on the
  CPU, ``cupy.fft`` (cuFFT) on the GPU.

Both are linear, and each is its own transpose: the DFT matrix ``F[j, k] = w**(j*k)`` is
symmetric, and so is every scaling of it or of its conjugate. So the VJP of ``fft`` is
``fft`` of the cotangent (unconjugated, JAX's convention for complex values), and the
HVP, the forward Laplacian and Taylor mode take the op by its linear flag. The front end
(:mod:`dualgpu.frontend.numpy.fft`) writes every ``numpy.fft`` transform (``rfft``,
``irfft``, ``fftn``, ``hfft``, ...) with these two and ops of :mod:`dualgpu.lax`.

>>> import numpy as np
>>> from dualgpu.ops.fft import fft_p
>>> fft_p(np.array([1.0, 2.0, 0.0, 0.0], dtype=complex), axis=0, norm="backward")
array([ 3.+0.j,  1.-2.j, -1.+0.j,  1.+2.j])
"""
from __future__ import annotations

from ..core.axes import check_axis
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import defprim, defrules
from ..errors import DualgpuError
from ..rules import batching_rules as batching
from ..rules import separability_rules as separability
from ..rules import sparsity_rules as sparsity
from ..rules.common import deflinear

NORMS = ("backward", "ortho", "forward")


def _declare(name: str):
    def impl(xp, x, axis, norm):
        # NumPy 1.x computes complex64 in complex128: the declared dtype is the input's
        return getattr(xp.fft, name)(x, axis=axis, norm=norm).astype(x.dtype, copy=False)

    def shape(avals, axis, norm):
        a = avals[0]
        check_axis(axis, a.ndim, name)
        if a.dtype.kind != "c":
            raise DualgpuError(f"{name}: the operand must be complex, got {a.dtype} (the "
                               "front end casts real values first)")
        if norm not in NORMS:
            raise DualgpuError(f"{name}: norm must be one of {NORMS}, got {norm!r}")
        if a.shape[axis] < 1:
            raise DualgpuError(f"{name}: the transformed axis {axis} is empty")
        return Aval(tuple(a.shape), a.dtype)

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
