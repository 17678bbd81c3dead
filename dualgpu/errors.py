"""Every error dualgpu raises on purpose derives from :class:`DualgpuError`.

Messages name the op, the user's source line, or the argument at fault, and say what to do.
"""
from __future__ import annotations

import functools
import os
import re
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


class ShapeMismatchError(DualgpuError, ValueError, TypeError):
    """Shapes that do not fit together: operands in a traced function, or a tangent,
    cotangent or direction that does not match its primal (its structure, shape or dtype).
    A ``ValueError``, as NumPy's, and a ``TypeError``, as JAX's (``add got incompatible
    shapes``, ``cotangent tree does not match``)."""


class StaticArgumentError(ArgumentTypeError, ValueError):
    """A static argument of ``dg.jit`` (``static_argnums`` / ``static_argnames``) that is
    not hashable (an array, a set): it cannot key the program. JAX's ``ValueError``, and a
    ``TypeError`` (:class:`ArgumentTypeError`) as dualgpu raised before."""


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


class MissingRuleError(DualgpuError, AttributeError):
    """A ``custom_jvp``/``custom_vjp`` function called (or differentiated) before its rules
    were given with ``defjvp``/``defvjp``: JAX's ``AttributeError``."""


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


class InvalidIndexError(DualgpuError, IndexError):
    """An index NumPy refuses with ``IndexError`` when the program is traced: two ellipses,
    an index array of floats (an index out of range at run time is
    :class:`IndexOutOfBoundsError`)."""


class CupyImportError(DualgpuError, ImportError):
    """CuPy is missing, or installed without one of its own dependencies (a half-installed
    wheel): the message names the module that is missing and the ``pip`` command that
    fixes the installation."""

    def __init__(self, message: str, name: str | None = None):
        ImportError.__init__(self, message, name=name)


class RandomInTraceError(DualgpuError, RuntimeError):
    """A random draw inside a traced function that its compiled program cannot make again at
    every call (inside ``dg.vmap``, with a traced size, from a generator reached through an
    attribute...): its numbers would be constants of the program. Other draws are inputs of
    the program, drawn at every call (``dualgpu/frontend/numpy/random.py``)."""


class CodegenSafetyError(DualgpuError, ValueError):
    """A user-supplied name or C expression failed validation before code generation."""


def like_numpy_error(e: BaseException) -> type[DualgpuError]:
    """The class of DualgpuError that is also the built-in exception ``e`` is (NumPy's
    ``ValueError`` about operands becomes a :class:`ShapeMismatchError`, its ``TypeError`` an
    :class:`ArgumentTypeError`...), so that ``except ValueError`` still catches it.

    >>> like_numpy_error(ValueError("operands could not be broadcast")).__name__
    'ShapeMismatchError'
    """
    for builtin, cls in ((np.exceptions.AxisError, AxisError), (IndexError, InvalidIndexError),
                         (TypeError, ArgumentTypeError), (ValueError, ShapeMismatchError)):
        if isinstance(e, builtin):
            return cls
    return DualgpuError


def np_matrix_product_error(op: str = "*") -> UnsupportedOpError:
    """The refusal of ``m * x`` (``m ** k``) for an ``np.matrix`` ``m`` and a traced array
    ``x``: NumPy's is a matrix product (power), a traced value's would be elementwise."""
    return UnsupportedOpError(
        f"np.matrix {op} a traced array (at {user_location()}): np.matrix's {op} is a matrix "
        f"{'product' if op == '*' else 'power'}, which traced code does not compute (SciPy's "
        "*_matrix classes return np.matrix from .sum(axis) and .mean(axis)); write m @ x for "
        "the product, or np.asarray(m) (m.A, m.A1) for NumPy's elementwise operators")


def no_matrix(other, traced):
    """``other``, the operand of a traced array's ``*``: refused when it is an ``np.matrix``
    (whose ``*`` is a matrix product) and the traced array is not a scalar."""
    if isinstance(other, np.matrix) and np.ndim(traced):
        raise np_matrix_product_error()
    return other


def did_you_mean(word: str, options) -> str:
    """``" (did you mean 'x'?)"`` for the closest of ``options`` to a misspelled ``word``
    (difflib's ratio, as Python's own suggestions), or ``""``.

    >>> did_you_mean("cuda_graph", ["fuse", "cuda_graphs", "cuda_graph_outputs"])
    " (did you mean 'cuda_graphs'?)"
    """
    import difflib  # the error path only

    close = difflib.get_close_matches(word, [o for o in options if isinstance(o, str)], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


_UNEXPECTED = re.compile(r"([\w.<>]+)\(\) got an unexpected keyword argument '(\w+)'")


def keyword_parameters(fn) -> list[str] | None:
    """The names ``fn`` takes as keywords, or None when it takes any (``**kwargs``) or its
    signature is unknown."""
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def unexpected_keyword(e: TypeError, fn, kwargs: dict, label: str | None = None):
    """When ``e`` is Python's "fn() got an unexpected keyword argument 'k'" for this very
    call of ``fn`` (not one deeper inside), the :class:`ArgumentTypeError` that also
    suggests the closest keyword ``fn`` takes; otherwise None (re-raise ``e``)."""
    m = _UNEXPECTED.search(str(e))
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", None))
    if not m or m.group(2) not in kwargs or m.group(1) not in (name, str(name).rpartition(".")[2]):
        return None
    params = keyword_parameters(fn)
    if params is None or m.group(2) in params:
        return None
    return ArgumentTypeError(f"{label or m.group(1)}() got an unexpected keyword argument "
                             f"{m.group(2)!r}{did_you_mean(m.group(2), params)}")


def suggests_keywords(fn):
    """``fn`` that answers a misspelled keyword with the one it meant (``dg.grad(f,
    argnm=0)``: "did you mean 'argnums'?"); nothing changes on calls that succeed."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            better = unexpected_keyword(e, fn, kwargs, label=f"dg.{fn.__name__}")
            if better is None:
                raise
            raise better from None

    return call


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


# --------------------------------------------------------------------------- tracebacks
TRACEBACK_ENV = "DUALGPU_TRACEBACK"
"""``DUALGPU_TRACEBACK=full`` shows every frame of dualgpu in tracebacks (default: hidden)."""

_HIDDEN_NOTE = ("dualgpu hid {n} of its own frames from this traceback; set the environment "
                f"variable {TRACEBACK_ENV}=full to see them")


def _library_entries(entries: list) -> list[bool]:
    """Per traceback entry (outermost first): whether it is dualgpu's. A standard-library
    frame (contextlib, functools) entered from one of dualgpu's frames counts as dualgpu's."""
    hidden, caller_is_library = [], False
    for tb in entries:
        filename = tb.tb_frame.f_code.co_filename
        if _inside_package(filename):
            caller_is_library = True
        elif not in_stdlib(filename):
            caller_is_library = False
        hidden.append(caller_is_library)
    # Where dualgpu raised it: its innermost frame stays when no frame of the user's runs
    # below it (the error came from dualgpu, or from a library it called, NumPy's say)
    inner = max((i for i, tb in enumerate(entries)
                 if _inside_package(tb.tb_frame.f_code.co_filename)), default=None)
    if inner is not None and all(hidden[i] or _third_party(entries[i].tb_frame.f_code.co_filename)
                                 for i in range(inner + 1, len(entries))):
        hidden[inner] = False
    return hidden


def _third_party(filename: str) -> bool:
    return any(part in filename.split(os.sep) for part in ("site-packages", "dist-packages"))


def hide_library_frames(exc: BaseException) -> BaseException:
    """Drop dualgpu's own frames from ``exc.__traceback__`` and from the tracebacks of the
    exceptions it was raised from (``__cause__``, ``__context__``), as JAX does: the user's
    frames stay, and the innermost frame when the error was raised inside dualgpu (where it
    was raised). Returns ``exc`` itself, with a note saying how many frames were hidden;
    ``DUALGPU_TRACEBACK=full`` leaves every frame. Called on the error path only (by the
    exception hooks dualgpu installs, :func:`install_traceback_filter`).

    >>> def f():
    ...     in_stdlib(None)                         # a TypeError inside dualgpu's frames
    >>> try:
    ...     f()
    ... except TypeError as e:
    ...     hide_library_frames(e).__traceback__.tb_frame.f_code.co_name
    '<module>'
    """
    if os.environ.get(TRACEBACK_ENV, "").strip().lower() == "full":
        return exc
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        _filter_one(e)
        todo += [e.__cause__, e.__context__]
    return exc


def _filter_one(exc: BaseException) -> None:
    entries, tb = [], exc.__traceback__
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    hidden = _library_entries(entries)
    n = sum(hidden)
    if not n:
        return
    new = None
    for entry, hide in zip(reversed(entries), reversed(hidden)):
        if not hide:
            new = types.TracebackType(new, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    exc.__traceback__ = new
    if hasattr(exc, "add_note"):  # Python 3.11
        exc.add_note(_HIDDEN_NOTE.format(n=n))


def _ipython_handler(shell, exc_type, exc, tb, tb_offset=None):
    exc.__traceback__ = tb
    shell.showtraceback((exc_type, exc, hide_library_frames(exc).__traceback__),
                        tb_offset=tb_offset)


def install_traceback_filter() -> None:
    """Hide dualgpu's frames from the tracebacks of errors that reach the top level: in
    ``sys.excepthook`` (the previous hook is called with the shorter traceback) and in
    IPython/Jupyter when dualgpu is imported there. Costs nothing until an error is printed.
    (A user's own ``traceback.print_exc()`` shows every frame; :func:`hide_library_frames`
    shortens a caught error's.)"""
    if not getattr(sys.excepthook, "hides_dualgpu_frames", False):
        previous = sys.excepthook

        def excepthook(exc_type, exc, tb):
            if isinstance(exc, BaseException) and tb is not None:
                exc.__traceback__ = tb
                tb = hide_library_frames(exc).__traceback__
            previous(exc_type, exc, tb)

        setattr(excepthook, "hides_dualgpu_frames", True)  # noqa: B010  (a marker on a function)
        sys.excepthook = excepthook
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if get_ipython is not None else None
    if shell is not None and not getattr(shell, "custom_exceptions", ()):
        shell.set_custom_exc((Exception,), _ipython_handler)
