"""Values are data, never code: the one encoder of literals and parameters.

Every value that reaches generated source -- a literal operand, an equation parameter, a
fill value, a dtype -- is turned into source text here, and only here, for both generators
(Python in :mod:`dualgpu.codegen.python`, CUDA in :mod:`dualgpu.codegen.cuda` and
:mod:`dualgpu.codegen.products`).

The encoder accepts only known types, checked by *exact* type (a ``float`` subclass could
override ``__repr__``; ``type(v) is float`` cannot be fooled):

* ``None``, ``...``, ``bool``, ``int``, ``float`` (``inf``, ``nan`` and ``-0.0`` included),
  ``complex``, ``str`` (printed with ``repr``: a string is data);
* NumPy scalars of the bool, integer, float and complex types (``np.float32(2.0)``);
* ``np.dtype`` objects of those types, and the scalar types themselves (``np.float32``);
* ``slice`` of ints / ``None``; tuples and lists of known values.

Anything else is refused with a :class:`~dualgpu.errors.CodegenSafetyError` (a
``DualgpuError``) naming the op and the parameter, and no method of the value is called
(neither ``__repr__`` nor ``__str__`` nor ``__float__``). :func:`check_equation` runs the
same check when an equation is recorded, so a bad value is refused at trace time, where the
user's call made it.

Examples::

    >>> py_literal(float("-inf")), py_literal(-0.0), py_literal(np.float32(2.0)), py_literal("x")
    ("(-float('inf'))", '(-0.0)', 'xp.float32(2.0)', "'x'")
    >>> c_literal(float("nan"), np.float32), c_literal(-0.0, np.float64)
    ('__int_as_float(0x7fc00000)', '(-0.0)')
"""
from __future__ import annotations

import keyword
import math
import re
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..backends.kernels import C_TYPES
from ..errors import CodegenSafetyError
from .ir import Literal

# --------------------------------------------------------------------------- known types
_DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                "uint64", "float16", "float32", "float64", "complex64", "complex128")
# the NumPy scalar types, by exact class (np.longlong is not np.int64 in NumPy 2, say)
_NP_SCALARS = frozenset(np.dtype(c).type for c in "?bBhHiIlLqQefdFD")
_DTYPE_TYPES = frozenset(type(np.dtype(n)) for n in _DTYPE_NAMES)
# classes accepted where a dtype is meant: the NumPy scalar types and Python's own
_SCALAR_CLASSES = _NP_SCALARS | {bool, int, float, complex}
_PY_NUMBERS = (bool, int, float, complex)
_MAX_DEPTH = 32
_C_TYPES = C_TYPES
# the tracer class (dualgpu.core.trace registers it): refused with a hint of its own
TRACER_TYPES: list[type] = []
# parameters that hold a number, whatever the op: fill values and pad constants
NUMBER_PARAMS = frozenset({"value"})


def _describe(v: Any) -> str:
    """A description of a refused value that calls none of its methods (nor its class's:
    the names are read from the type slots, past any metaclass)."""
    t = type(v)
    module = type.__dict__["__module__"].__get__(t)
    name = type.__dict__["__qualname__"].__get__(t)
    return f"a value of type {module}.{name}"


def _refuse(what: str, v: Any, hint: str = "") -> CodegenSafetyError:
    if type(v) in TRACER_TYPES:
        hint = ("a traced value cannot be a parameter: parameters are fixed when the program "
                "is built (compute with arrays instead, e.g. x * 0 + v)")
    return CodegenSafetyError(
        f"{what}: {_describe(v)} is not allowed in a generated program; values must be "
        "Python or NumPy numbers, bool, None, str, np.dtype, slices of ints, or tuples/lists "
        "of these" + (f" ({hint})" if hint else ""))


def is_number(v: Any) -> bool:
    """True for a Python or NumPy number (bool included), by exact type."""
    t = type(v)
    return t in _PY_NUMBERS or t in _NP_SCALARS


def canonical_dtype(v: Any) -> np.dtype[Any] | None:
    """The dtype meant by ``v`` (an ``np.dtype``, a scalar type or a dtype name), if it is
    one of the plain numeric dtypes; else None. Calls no method of an unknown object."""
    t = type(v)
    dt: np.dtype[Any]
    try:
        if t in _DTYPE_TYPES:
            dt = v
        elif t is type and v in _SCALAR_CLASSES:
            dt = np.dtype(v)
        elif t is str and len(v) <= 32:
            dt = np.dtype(v)
        else:
            return None
    except (TypeError, ValueError):
        return None
    name: str = dt.name
    if name not in _DTYPE_NAMES or dt != np.dtype(name):
        return None  # structured, byte-swapped, datetime, object... dtypes
    return np.dtype(name)


def check_value(v: Any, what: str = "value", depth: int = 0) -> None:
    """Accept ``v`` if the encoder can write it (see the module docstring), else raise."""
    t = type(v)
    if v is None or v is Ellipsis or t in _PY_NUMBERS or t is str or t in _NP_SCALARS:
        return
    if t in _DTYPE_TYPES or (t is type and v in _SCALAR_CLASSES):
        if canonical_dtype(v) is None:
            raise _refuse(what, v, f"dtype {v} is not supported")
        return
    if t is slice:
        for part in (v.start, v.stop, v.step):
            if not (part is None or type(part) is int
                    or (type(part) in _NP_SCALARS and np.dtype(type(part)).kind in "iu")):
                raise _refuse(what + " (a slice bound)", part, "slices hold ints or None")
        return
    if t is tuple or t is list:
        if depth >= _MAX_DEPTH:
            raise CodegenSafetyError(f"{what}: nested more than {_MAX_DEPTH} levels deep")
        for item in v:
            check_value(item, what, depth + 1)
        return
    raise _refuse(what, v)


def check_params(op: str, params: dict) -> None:
    """Check every parameter of an equation of ``op`` (trace time and code generation)."""
    for k, v in params.items():
        what = f"{op}: parameter {k!r}"
        if k in NUMBER_PARAMS and not is_number(v):
            if type(v) is str:
                raise CodegenSafetyError(
                    f"{what} must be a number, got the string {v[:40]!r} (a fill with a "
                    "string is not supported)")
            raise _refuse(what, v, "it must be a number")
        check_value(v, what)


def check_param_name(op: str, name: Any) -> str:
    """A parameter name printed as a keyword argument (``ops.f(x, name=...)``)."""
    if not (type(name) is str and name.isascii() and name.isidentifier()
            and not keyword.iskeyword(name) and len(name) <= 64):
        raise CodegenSafetyError(f"{op}: parameter name {str(name)[:40]!r} is not a plain "
                                 "identifier")
    return name


def check_literal(op: str, position: int, v: Any) -> None:
    """A literal operand must be a plain Python number (a subclass could rewrite itself)."""
    if type(v) not in _PY_NUMBERS:
        raise _refuse(f"{op}: operand {position}", v,
                      "pass a plain int or float, e.g. float(v)")


def check_equation(op: str, atoms: Iterable[Any], params: dict) -> None:
    """The trace-time hook: called when an equation is recorded, before anything is built
    from it. ``atoms`` are the equation's inputs (Literals are checked)."""
    for i, a in enumerate(atoms):
        if type(a) is Literal:
            check_literal(op, i, a.value)
    check_params(op, params)


# --------------------------------------------------------------------------- Python source
def _py_float(f: float) -> str:
    neg = math.copysign(1.0, f) < 0
    if math.isnan(f):
        return "(-float('nan'))" if neg else "float('nan')"
    if math.isinf(f):
        return "(-float('inf'))" if neg else "float('inf')"
    text = repr(f)
    return f"({text})" if neg else text


def py_literal(v: Any, what: str = "value", depth: int = 0) -> str:
    """Python source text that evaluates to ``v`` (bit-exactly for numbers; NaN keeps its
    sign, not its payload). Negative numbers come in parentheses, so that the text is one
    operand wherever it is placed. The generated namespace provides ``xp``."""
    t = type(v)
    if v is Ellipsis:
        return "..."
    if v is None or t is bool:
        return repr(v)
    if t is int:
        try:
            text = repr(v)
        except ValueError:  # more digits than int->str allows
            raise CodegenSafetyError(f"{what}: an integer with too many digits") from None
        return f"({text})" if v < 0 else text
    if t is float:
        return _py_float(v)
    if t is complex:
        return f"complex({_py_float(v.real)}, {_py_float(v.imag)})"
    if t is str:
        return repr(v)
    if t in _NP_SCALARS:
        dt = np.dtype(t)
        py = {"b": bool, "i": int, "u": int, "f": float, "c": complex}[dt.kind](v)
        return f"xp.{py_dtype_attr(dt, what)}({py_literal(py, what)})"
    if t in _DTYPE_TYPES:
        return f"xp.dtype({py_dtype_attr(v, what)!r})"
    if t is type and v in _SCALAR_CLASSES:
        return f"xp.{py_dtype_attr(v, what)}"
    if t is slice:
        check_value(v, what)
        parts = ", ".join(py_literal(p, what) for p in (v.start, v.stop, v.step))
        return f"slice({parts})"
    if t is tuple or t is list:
        if depth >= _MAX_DEPTH:
            raise CodegenSafetyError(f"{what}: nested more than {_MAX_DEPTH} levels deep")
        items = [py_literal(item, what, depth + 1) for item in v]
        if t is list:
            return "[" + ", ".join(items) + "]"
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    raise _refuse(what, v)


def py_text_block(text: Any, what: str = "text") -> str:
    r'''A Python string literal of a block of generated text (the CUDA source an exported
    module embeds): triple-quoted, one source line per line, when the text is printable
    ASCII without backslashes or quotes that could end the literal; ``repr`` otherwise.

    Example::

        >>> print(py_text_block('extern "C" f() {\n}\n'))
        """\
        extern "C" f() {
        }
        """
        >>> py_text_block('a\\b')
        "'a\\\\b'"
    '''
    if type(text) is not str:
        raise _refuse(what, text, "it must be a str")
    lines = text.split("\n")
    plain = (text.isascii() and "\\" not in text and '"""' not in text
             and not text.endswith('"') and all(line.isprintable() for line in lines))
    return '"""\\\n' + text + '"""' if plain else repr(text)


def py_dtype_attr(v: Any, what: str = "dtype") -> str:
    """The attribute of ``xp`` naming dtype ``v`` (``float32``, ``bool_``): a template's
    ``xp.{dtype}`` is filled only with one of these fixed names, never with the value."""
    dt = canonical_dtype(v)
    if dt is None:
        if type(v) is str:
            raise CodegenSafetyError(f"{what}: {v[:40]!r} is not a supported dtype name")
        raise _refuse(what, v, "it must be a dtype")
    return "bool_" if dt.name == "bool" else dt.name


class _Source:
    """Source text standing for a value inside a callable template's parameters: ``str``,
    ``repr`` and ``format`` give the encoded text."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__

    def __format__(self, spec: str) -> str:
        return format(self.text, spec)


class _QuotedStr(str):
    """A string parameter given to a callable template: compares as the string, but
    prints (``str``, ``format``, ``repr``) as its quoted literal."""

    __slots__ = ()

    def __str__(self) -> str:
        return str.__repr__(self)

    def __format__(self, spec: str) -> str:
        return format(str.__repr__(self), spec)


def _for_template(v: Any, what: str, depth: int = 0) -> Any:
    t = type(v)
    if v is None or t is bool or t is int:
        return v  # repr and str are the literal already
    if t is str:
        return _QuotedStr(v)
    if t is tuple or t is list:
        if depth >= _MAX_DEPTH:
            raise CodegenSafetyError(f"{what}: nested more than {_MAX_DEPTH} levels deep")
        return t(_for_template(item, what, depth + 1) for item in v)
    if t is slice:
        check_value(v, what)
        return _Source(py_literal(v, what))
    if t in _NP_SCALARS and np.dtype(t).kind in "iu":
        return int(v)  # an index or a size: the value is what matters
    return _Source(py_literal(v, what))


def template_params(op: str, params: dict) -> dict:
    """Parameters as a callable ``py`` template sees them: the same structure, but every
    value prints as its encoded source (strings quoted, ``inf`` as ``float('inf')``)."""
    return {k: _for_template(v, f"{op}: parameter {k!r}") for k, v in params.items()}


# --------------------------------------------------------------------------- C source
def c_type(dtype: Any, what: str = "dtype") -> str:
    """The C type of a kernel dtype."""
    if type(dtype) in _DTYPE_TYPES:   # an np.dtype: looked up once (a dtype's name is slow)
        c = _C_TYPE_OF_DTYPE.get(dtype)
        if c is None:
            c = _C_TYPE_OF_DTYPE[dtype] = _C_TYPES[_kernel_dtype(dtype, what).name]
        return c
    return _C_TYPES[_kernel_dtype(dtype, what).name]


_C_TYPE_OF_DTYPE: dict = {}


def _kernel_dtype(dtype: Any, what: str) -> np.dtype[Any]:
    """``dtype`` as an ``np.dtype`` that has a C type, else a CodegenSafetyError."""
    dt = canonical_dtype(dtype)
    if dt is None or dt.name not in _C_TYPES:
        raise CodegenSafetyError(f"{what}: no C type for {dtype!s:.40}"
                                 if type(dtype) in _DTYPE_TYPES or type(dtype) is str
                                 else f"{what}: {_describe(dtype)} is not a dtype")
    return dt


def c_literal(value: Any, dtype: Any, what: str = "value") -> str:
    """A C literal of ``value`` typed as ``dtype``: ``2.0f`` for float32, ``2.0`` for
    float64, ``3LL`` for int64; negative values in parentheses (``(-0.0f)`` keeps its
    sign); inf as a constant expression NVRTC folds, ``(1.0f / 0.0f)``; NaN by its bits,
    ``__int_as_float(0x7fc00000)`` (``0.0f / 0.0f`` folds to a NaN whose sign bit differs
    between compilers)."""
    t = type(value)
    if not (t in (bool, int, float) or (t in _NP_SCALARS and np.dtype(t).kind in "biuf")):
        raise _refuse(what, value, "a kernel literal must be a real number")
    dt = _kernel_dtype(dtype, what)
    if dt.kind == "b":
        return "true" if value else "false"
    if dt.kind in "iu":
        if t is float or (t in _NP_SCALARS and np.dtype(t).kind == "f"):
            f = float(value)
            if not (math.isfinite(f) and f == int(f)):
                raise CodegenSafetyError(f"{what}: {f!r} is not a value of {dt.name}")
        v = int(value)
        info = np.iinfo(dt)
        if not info.min <= v <= info.max:
            raise CodegenSafetyError(f"{what}: {v} is out of the range of {dt.name}")
        if dt.kind == "i" and dt.itemsize == 8 and v == -2 ** 63:
            return "(-9223372036854775807LL - 1)"
        if dt.kind == "i" and dt.itemsize == 4 and v == -2 ** 31:
            return "(-2147483647 - 1)"
        suffix = {("i", 8): "LL", ("u", 8): "ULL", ("u", 4): "U"}.get((dt.kind, dt.itemsize), "")
        return f"({v}{suffix})" if v < 0 else f"{v}{suffix}"
    single = dt.itemsize == 4
    try:
        f = float(value)
    except OverflowError:  # an int beyond every float
        f = math.inf if value > 0 else -math.inf
    if single:
        with np.errstate(over="ignore"):
            f = float(np.float32(f))  # round (or overflow) to float32 first
    neg = math.copysign(1.0, f) < 0
    if math.isnan(f):  # the quiet NaN of NumPy, with the value's sign
        if single:
            return "__int_as_float(-0x400000)" if neg else "__int_as_float(0x7fc00000)"
        return ("__longlong_as_double(-0x8000000000000LL)" if neg
                else "__longlong_as_double(0x7ff8000000000000LL)")
    if math.isinf(f):
        text = "(1.0f / 0.0f)" if single else "(1.0 / 0.0)"
        return f"(-{text})" if neg else text
    text = str(np.float32(f)) if single else repr(f)
    if "e" not in text and "." not in text:
        text += ".0"
    if single:
        text += "f"
    return f"({text})" if neg else text


_C_NUMBER = re.compile(r"^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$")


def c_param(op: str, name: str, value: Any, dtype: Any) -> str:
    """A parameter printed into a fused kernel's C expression, as a literal of ``dtype``.

    Numbers only; a string is accepted when it is a plain decimal number (``"2.0"``: such
    parameters were once printed as C text) and written as that number, never as text."""
    what = f"{op}: parameter {name!r}"
    if type(value) is str:
        if len(value) > 64 or not _C_NUMBER.match(value):
            raise CodegenSafetyError(
                f"{what}: the string {value[:40]!r} cannot be printed into a CUDA kernel "
                "(a kernel parameter must be a number)")
        value = float(value)
    return c_literal(value, dtype, what)
