"""Every error dualgpu raises on purpose derives from :class:`DualgpuError`.

Messages name the op, the user's source line, or the argument at fault, and say what to do.
"""
from __future__ import annotations

import os
import sys
import sysconfig
import types

import numpy as np

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class DualgpuError(Exception):
    """Base class of every error dualgpu raises on purpose. dualgpu raises one of its
    subclasses, each also the built-in exception NumPy or JAX raises in that case (see the
    table in docs/api.md, "Errors"), so ``except TypeError`` works as it does with JAX."""


class ArgumentTypeError(DualgpuError, TypeError):
    """An argument or option of the wrong type or kind: a function expected, a bool option
    given something else, a call that does not fit the function, a complex or integer value
    where the transform needs another (JAX's ``TypeError``)."""


class InvalidArgumentError(DualgpuError, ValueError):
    """An argument or option of the right type whose value the call cannot take: an
    ``in_axes`` that does not match its argument, an axis out of range, leaves that do not
    fit a structure (JAX's and NumPy's ``ValueError``)."""


class UnsupportedOpError(DualgpuError, TypeError):
    """A traced program called a function that has no dualgpu rule."""


class TracerControlFlowError(DualgpuError, TypeError):
    """Python control flow (``if``, ``bool()``, ``float()``) was applied to a traced value."""


class EscapedTracerError(DualgpuError, RuntimeError):
    """A traced value was used after the trace that created it had finished."""


class NonScalarOutputError(DualgpuError, TypeError, ValueError):
    """``grad``/``hvp`` was given a function whose output is not a real scalar. A
    ``TypeError``, as JAX's, and a ``ValueError`` (what it derived from before)."""


class IntegerInputError(DualgpuError, TypeError):
    """A differentiated argument has an integer or boolean dtype."""


class ShapeMismatchError(DualgpuError, ValueError):
    """A tangent, cotangent or direction does not match its primal's shape or dtype."""


class BackendMismatchError(DualgpuError, TypeError):
    """NumPy and CuPy arrays were mixed in one call."""


class SeparabilityError(DualgpuError, ValueError):
    """``hvp(batch_axes=...)`` found an op that couples different instances."""


class GraphValidationError(DualgpuError, ValueError):
    """A graph's recorded shapes or dtypes disagree with its primitives' shape rules."""


class UnsupportedSparseFormatError(DualgpuError, TypeError):
    """A sparse matrix format that dualgpu does not handle."""


class SparseMethodError(DualgpuError, AttributeError):
    """A method of ``scipy.sparse``/``cupyx`` matrices that traced code cannot call on a
    sparse matrix it reads (an ``AttributeError``, as for any missing attribute)."""


class AxisError(DualgpuError, np.exceptions.AxisError):
    """An axis argument out of bounds (or repeated). NumPy raises its ``AxisError`` where
    dualgpu raises this, which is both a :class:`DualgpuError` and a NumPy ``AxisError``
    (so a ``ValueError`` and an ``IndexError``)."""

    def __init__(self, message: str):
        np.exceptions.AxisError.__init__(self, message)


class IndexOutOfBoundsError(DualgpuError, IndexError):
    """An index array reaching a gather or scatter at run time (an argument of the program, or
    computed from one) holds an index outside ``[-n, n)`` for its axis of size ``n``: NumPy's
    ``IndexError``. Raised by programs on NumPy and on CuPy (after the call, from the
    bounds the program computes: ``dg.config["check_indices"]``, docs/gpu.md)."""


class RandomInTraceError(DualgpuError, RuntimeError):
    """``np.random``/``cupy.random`` (or a random Generator) was called inside a traced
    function, whose draws would become constants of the compiled program."""


class CodegenSafetyError(DualgpuError, ValueError):
    """A user-supplied name or C expression failed validation before code generation."""


_INSIDE: dict[str, bool] = {}  # co_filename -> inside the package (called per equation)


def _inside_package(filename: str) -> bool:
    inside = _INSIDE.get(filename)
    if inside is None:
        inside = _INSIDE[filename] = os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)
    return inside


# the standard library's folders (what is installed beside it, in site-packages, is not it)
_STDLIB_DIRS = tuple({os.path.abspath(sysconfig.get_paths()[k]) for k in ("stdlib",
                                                                          "platstdlib")})


def in_stdlib(filename: str) -> bool:
    """Whether ``filename`` is a file of the standard library (a contextlib frame, say)."""
    path = os.path.abspath(filename)
    return any(path.startswith(d + os.sep) for d in _STDLIB_DIRS) and not any(
        part in path.split(os.sep) for part in ("site-packages", "dist-packages"))


def not_users(filename: str) -> bool:
    """Whether ``filename`` is dualgpu's or the standard library's, not the user's."""
    return _inside_package(filename) or in_stdlib(filename)


def library_location(location: str) -> bool:
    """Whether a ``file:line`` location (an equation's ``source``) lies in dualgpu's own
    package, by the package's folder: a user's file under a folder named ``dualgpu`` (a
    clone of this repository) or ``mydualgpu_project`` is the user's. The examples of the
    package's docstrings are its own too (doctest names their file by the module:
    ``<doctest dualgpu.export.export[2]>``).

    >>> library_location(f"{_PACKAGE_DIR}/api.py:12"), library_location("/home/u/dualgpu/f.py:3")
    (True, False)
    """
    return (location.startswith(f"<doctest {__package__}.")
            or _inside_package(location.rpartition(":")[0] or location))


def user_location(skip_stdlib: bool = False) -> str:
    """Return ``file:line`` of the innermost stack frame outside the dualgpu package (and
    outside the standard library with ``skip_stdlib``)."""
    outside = not_users if skip_stdlib else _inside_package
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        if not outside(frame.f_code.co_filename):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown location>"
