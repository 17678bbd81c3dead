"""``scipy.signal`` (and ``cupyx.scipy.signal``) on traced values: the N-d ``convolve`` and
``correlate`` (modes ``"full"``, ``"same"``, ``"valid"``; every ``method`` gives the same
values), ``fftconvolve`` over all axes, and the 2-D ``convolve2d`` and ``correlate2d`` with
the ``"fill"`` boundary. Each is one ``conv`` (:mod:`dualgpu.ops.convolution`) whose padding
selects the mode's part of the full result, so derivatives in both inputs, of every order,
are convolutions. Results follow SciPy: ``"same"`` is centred on ``in1``, ``"valid"``
swaps the inputs when ``in2`` is the larger one, ``correlate`` conjugates ``in2``.

    >>> import scipy.signal
    >>> kernel = np.array([1.0, 2.0, 1.0])
    >>> dg.jit(lambda x: scipy.signal.convolve(x, kernel, mode="same"))(np.arange(4.0))
    array([1., 4., 8., 8.])
    >>> dg.grad(lambda k: scipy.signal.correlate(np.arange(4.0), k, "valid").sum())(kernel)
    array([1., 3., 5.])
"""
from __future__ import annotations

import numpy as np

from ...errors import DualgpuError, UnsupportedOpError, user_location
from ...lax import add, conj, conv_general_dilated, flip, is_tracer, reshape, subtract
from ...lax import shape_of as _shape
from ...lax import sum as _sum
from ...ops.elementwise import multiply
from ..numpy.arguments import arraylike

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "fftconvolve"]

MODES = ("full", "same", "valid")
METHODS = ("auto", "direct", "fft")


# --------------------------------------------------------------------------- arguments
def _array(x):
    x = arraylike(x)
    return x if is_tracer(x) or hasattr(x, "shape") else np.asarray(x)


def _inputs(name: str, in1, in2, mode: str, ndim: int | None = None) -> tuple:
    """The two inputs as arrays of one rank (``ndim`` where the function fixes it),
    non-empty, ``mode`` one of SciPy's."""
    in1, in2 = _array(in1), _array(in2)
    if mode not in MODES:
        raise DualgpuError(f"scipy.signal.{name}: mode must be 'full', 'same' or 'valid', got "
                           f"{mode!r} (at {user_location()})")
    s1, s2 = _shape(in1), _shape(in2)
    if len(s1) != len(s2) or (ndim is not None and len(s1) != ndim):
        want = f"{ndim}-D arrays" if ndim is not None else "arrays of the same rank"
        raise DualgpuError(f"scipy.signal.{name}: in1 and in2 must be {want}, got shapes "
                           f"{s1} and {s2} (at {user_location()})")
    if 0 in s1 or 0 in s2:
        raise DualgpuError(f"scipy.signal.{name}: empty inputs (shapes {s1} and {s2}) are not "
                           f"supported (at {user_location()})")
    return in1, in2


def _swap_needed(name: str, mode: str, s1: tuple, s2: tuple) -> bool:
    """SciPy's rule for ``"valid"``: ``in2`` larger in every axis swaps the inputs; neither
    larger in every axis is an error."""
    if mode != "valid" or all(a >= b for a, b in zip(s1, s2)):
        return False
    if all(b >= a for a, b in zip(s1, s2)):
        return True
    raise DualgpuError(f"scipy.signal.{name}: for 'valid' mode one input must be at least as "
                       f"large as the other in every dimension, got shapes {s1} and {s2} "
                       f"(at {user_location()})")


def _check_method(name: str, method: str) -> None:
    if method not in METHODS:
        raise DualgpuError(f"scipy.signal.{name}: method must be 'auto', 'direct' or 'fft', "
                           f"got {method!r} (at {user_location()})")


# --------------------------------------------------------------------------- the one conv
def _correlation(a, b, mode: str, late: bool = False):
    """``sum_l a[j + l] b[l]`` (``a`` zero outside) over the positions of ``mode``: all
    overlaps (``"full"``), those centred on ``a`` (``"same"``) or those where ``b`` lies
    inside ``a`` (``"valid"``), as SciPy's ``_centered`` crops the full result; ``late``:
    ``"same"`` rounds the centre the other way, as ``correlate2d`` does for even windows."""
    padding = []
    for n, m in zip(_shape(a), _shape(b)):
        length = {"full": n + m - 1, "same": n, "valid": n - m + 1}[mode]
        start = (n + m - 1 - length) // 2
        if late and mode == "same":
            start = m - 1 - start
        low = m - 1 - start
        padding.append((low, length + m - 1 - n - low))
    d = len(padding)
    out = conv_general_dilated(reshape(a, (1, 1) + _shape(a)), reshape(b, (1, 1) + _shape(b)),
                               (1,) * d, tuple(padding))
    return reshape(out, _shape(out)[2:])


def _reverse(x):
    return flip(x, tuple(range(len(_shape(x)))))


def _convolution(in1, in2, mode: str, name: str, late: bool = False):
    if not _shape(in1):  # two 0-d arrays: their product, as SciPy's
        return multiply(in1, in2)
    if _swap_needed(name, mode, _shape(in1), _shape(in2)):
        in1, in2 = in2, in1
    return _correlation(in1, _reverse(in2), mode, late)


# --------------------------------------------------------------------------- SciPy's functions
def convolve(in1, in2, mode="full", method="auto"):
    """``scipy.signal.convolve``: the N-d convolution of two arrays of the same rank;
    ``method`` (``"auto"``, ``"direct"``, ``"fft"``) does not change the values."""
    _check_method("convolve", method)
    in1, in2 = _inputs("convolve", in1, in2, mode)
    return _convolution(in1, in2, mode, "convolve")


def correlate(in1, in2, mode="full", method="auto"):
    """``scipy.signal.correlate``: the N-d cross-correlation, the convolution of ``in1``
    with ``conj(in2)`` reversed, as SciPy computes it."""
    _check_method("correlate", method)
    in1, in2 = _inputs("correlate", in1, in2, mode)
    if not _shape(in1):
        return multiply(in1, conj(in2))
    return _convolution(in1, _reverse(conj(in2)), mode, "correlate")


def fftconvolve(in1, in2, mode="full", axes=None):
    """``scipy.signal.fftconvolve`` over all axes: :func:`convolve`'s values."""
    if axes is not None:
        raise UnsupportedOpError(f"scipy.signal.fftconvolve: axes={axes!r} is not supported "
                                 f"(only the convolution over every axis; at {user_location()})")
    in1, in2 = _inputs("fftconvolve", in1, in2, mode)
    return _convolution(in1, in2, mode, "fftconvolve")


def _fill(name: str, boundary: str, fillvalue):
    if boundary not in ("fill", "pad"):
        raise UnsupportedOpError(f"scipy.signal.{name}: boundary={boundary!r} is not supported "
                                 f"(only 'fill', the input extended by fillvalue; at "
                                 f"{user_location()})")
    if len(_shape(fillvalue)) != 0:
        raise DualgpuError(f"scipy.signal.{name}: fillvalue must be a single value, got shape "
                           f"{_shape(fillvalue)} (at {user_location()})")


def _filled(in1, in2, mode, fillvalue, name, late=False):
    """The 2-D convolution of ``in1`` extended by ``fillvalue``: that of ``in1 - fillvalue``
    (zero outside) plus ``fillvalue`` times the sum of ``in2``."""
    constant = not is_tracer(fillvalue) and np.all(np.asarray(fillvalue) == 0)
    if mode == "valid" or constant:
        return _convolution(in1, in2, mode, name, late)
    return add(_convolution(subtract(in1, fillvalue), in2, mode, name, late),
               multiply(fillvalue, _sum(in2)))


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """``scipy.signal.convolve2d`` with the ``"fill"`` boundary (``in1`` extended by
    ``fillvalue``); ``"wrap"`` and ``"symm"`` are refused."""
    _fill("convolve2d", boundary, fillvalue)
    in1, in2 = _inputs("convolve2d", in1, in2, mode, ndim=2)
    return _filled(in1, in2, mode, fillvalue, "convolve2d")


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """``scipy.signal.correlate2d`` with the ``"fill"`` boundary: the correlation with
    ``conj(in2)``; ``"same"`` centres an even window one entry later than ``correlate``
    does, and when ``"valid"`` swaps the inputs the result is reversed (not conjugated), as
    SciPy's."""
    _fill("correlate2d", boundary, fillvalue)
    in1, in2 = _inputs("correlate2d", in1, in2, mode, ndim=2)
    if _swap_needed("correlate2d", mode, _shape(in1), _shape(in2)):
        return _reverse(_correlation(in2, conj(in1), mode))
    return _filled(in1, _reverse(conj(in2)), mode, fillvalue, "correlate2d", late=True)

