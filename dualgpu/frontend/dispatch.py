"""From a library's dotted name to the front end's function, and the handlers NumPy's
protocols call with traced values.

:func:`lookup` finds the function of :mod:`dualgpu.frontend` for a dotted path
(``numpy.linalg.norm``, ``scipy.special.expit``; CuPy's and cupyx's through
:func:`mirror_path`); :func:`call_front_end` calls it as NumPy's would be called (a
misspelled keyword answered in NumPy's words; what a NumPy function computes from a weakly
typed Python number is an ordinary value); :func:`ufunc_handler`, :func:`function_handler`
and :func:`cupy_kernel_handler` are what ``__array_ufunc__``, ``__array_function__`` and
CuPy's kernels reach with traced operands (installed by :mod:`dualgpu.frontend.namespace`).

Example::

    >>> lookup("numpy.linalg.norm").__module__
    'dualgpu.frontend.numpy.linalg'
    >>> lookup("scipy.special.expit") is not None, lookup("numpy.no_such_function")
    (True, None)
"""
from __future__ import annotations

import operator
import sys
import types

from .. import frontend, lax
from ..core.trace import Tracer
from ..errors import UnsupportedOpError, unexpected_keyword, user_location
from . import array_api
from . import numpy as dnp


def special_path(ufunc) -> str | None:
    """``scipy.special.<name>`` for a scipy.special ufunc (their ``__name__`` may differ from
    the name they are imported under: ``digamma`` is ``psi``), else None."""
    special = sys.modules.get("scipy.special")
    name = getattr(ufunc, "__name__", "")
    if special is not None and getattr(special, name, None) is ufunc:
        return "scipy.special." + name
    return None


# the SciPy namespaces whose functions are rebound where they are imported by name
# (``from scipy.linalg import cholesky``; cupyx's too): scipy.special, scipy.linalg,
# scipy.signal, scipy.integrate
SCIPY_BY_NAME = ("special", "linalg", "signal", "integrate")


def scipy_path(obj, name: str) -> str | None:
    """``scipy.<namespace>.<name>`` for a function of one of :data:`SCIPY_BY_NAME` (or of
    its cupyx mirror), whatever private module defines it
    (``scipy.linalg._decomp_cholesky``); None for any other function."""
    parts = (getattr(obj, "__module__", None) or "").split(".")
    if parts[0] == "cupyx":
        parts = parts[1:]
    if parts[:3] == ["scipy", "sparse", "linalg"]:  # from scipy.sparse.linalg import spsolve
        return f"scipy.sparse.linalg.{name}"
    if len(parts) < 2 or parts[0] != "scipy" or parts[1] not in SCIPY_BY_NAME:
        return None
    return f"scipy.{parts[1]}.{name}"


def contains_tracer(args, kwargs) -> bool:
    return any(isinstance(x, Tracer) for x in _leaves(args, kwargs))


def integers_made_concrete(fn, args, kwargs, qualname: str):
    """``fn(*args, **kwargs)`` with each traced value made a Python int (or bool), if every
    traced value among them is an integer scalar (a size, a count: ``np.zeros(np.max(g) +
    1)``), else the refusal of ``qualname``, which has no rule. Each value is read as Python
    reads one (``operator.index``): a decision the program checks at every call where values
    are known (``grad`` on arrays), a clear refusal where they are not (``jit``)."""
    traced = [x for x in _leaves(args, kwargs) if isinstance(x, Tracer)]
    if not traced or any(t.ndim or t.dtype.kind not in "biu" for t in traced):
        raise no_rule(qualname)

    def concrete(x):
        if isinstance(x, Tracer):
            return bool(x) if x.dtype.kind == "b" else operator.index(x)
        if isinstance(x, (list, tuple)):
            return type(x)(concrete(y) for y in x)
        return x

    return fn(*map(concrete, args), **{k: concrete(v) for k, v in kwargs.items()})


def _leaves(args, kwargs):
    stack = [*args, *kwargs.values()]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        else:
            yield x


def mirror_path(module_name: str) -> str:
    """The dotted path, in :mod:`dualgpu.frontend`, of the namespace mirroring a library
    module: CuPy mirrors NumPy (``cupy.linalg`` -> ``numpy.linalg``) and cupyx's SciPy
    mirrors SciPy (``cupyx.scipy.special`` -> ``scipy.special``)."""
    parts = module_name.split(".")
    if parts[0] == "cupy":
        parts[0] = "numpy"
    elif parts[0] == "cupyx":
        parts = parts[1:]
    return ".".join(parts)


def lookup(path: str):
    """The front end's function of a dotted path (``numpy.linalg.norm``,
    ``scipy.special.expit``), found by walking :mod:`dualgpu.frontend`'s public attributes;
    None when there is none."""
    if path.startswith("numpy."):  # the array API's spellings (acos, concat, ...)
        ours = array_api.lookup(path[len("numpy."):])
        if ours is not None:
            return ours
    root, _, rest = path.partition(".")
    if root not in ("numpy", "scipy") or not rest:
        return None
    obj = getattr(frontend, root)
    for name in rest.split("."):
        if name.startswith("_") or not isinstance(obj, types.ModuleType):
            return None
        obj = getattr(obj, name, None)
    if isinstance(obj, (types.ModuleType, type)) or not callable(obj):
        return None
    return obj


def call_front_end(f, label: str, args, kwargs):
    """``f(*args, **kwargs)`` (the front end's function for NumPy's ``label``); a misspelled
    keyword is answered with the one it meant, in NumPy's words (``numpy.sum() got an
    unexpected keyword argument 'axsi' (did you mean 'axis'?)``)."""
    module, _, name = label.rpartition(".")
    if name in _ARRAY_OPERANDS and not module.endswith("polynomial"):
        args = tuple(strong_results(a) if isinstance(a, Tracer) else a for a in args)
    try:
        out = f(*args, **kwargs)
    except TypeError as e:
        better = unexpected_keyword(e, f, kwargs, label=label)
        if better is None:
            raise
        raise better.with_traceback(None) from None
    return strong_results(out)


# NumPy functions that make arrays of their operands (np.asarray) before computing, so that
# a Python number among them is an array of its dtype (np.dot(x32, 2.0) is float64), unlike
# the ufuncs' operands (weakly typed) and those of numpy.polynomial's functions
# (polynomial.polyval(x, c) computes with x as given)
_ARRAY_OPERANDS = frozenset({"dot", "vdot", "inner", "outer", "einsum", "tensordot", "kron",
                             "append", "cross", "convolve", "correlate", "polyval", "vander",
                             "trapezoid", "unwrap", "average", "ptp", "cov", "corrcoef",
                             "geomspace", "meshgrid", "polyfit"})


def strong_results(out):
    """``out`` with its weakly typed values made ordinary ones: a NumPy function returns
    NumPy values, never Python scalars, so what it computes from a weakly typed traced scalar
    (a Python float or int argument) promotes as an array of its dtype, as eager NumPy's does
    (``x32 * np.sin(dt)`` is float64, ``x8 * np.asarray(n)`` int64: with the weak type kept
    they stayed float32 and int8, and int8 wrapped)."""
    if isinstance(out, Tracer):
        return lax.astype(out, out.dtype, strong=True) if out.aval.weak else out
    if type(out) is tuple and any(isinstance(o, Tracer) for o in out):
        return tuple(strong_results(o) for o in out)
    return out


# ------------------------------------------------------------------- NumPy protocol handlers
def ufunc_handler(ufunc, method, inputs, kwargs):
    if method == "__call__":
        f = lookup(special_path(ufunc) or "numpy." + ufunc.__name__)
        if f is None:
            raise UnsupportedOpError(
                f"numpy.{ufunc.__name__} has no dualgpu rule (called on a traced value at "
                f"{user_location()}); register one with dg.defprim (docs/custom_rules.md)")
        return call_front_end(f, f"numpy.{ufunc.__name__}", inputs, kwargs)
    if method == "reduce" and ufunc.__name__ in ("add", "multiply", "maximum", "minimum"):
        red = {"add": dnp.sum, "multiply": dnp.prod, "maximum": dnp.max,
               "minimum": dnp.min}[ufunc.__name__]
        x, *rest = inputs  # positional (axis, dtype, out, keepdims), as NumPy takes them
        kwargs = {**dict(zip(("axis", "dtype", "out", "keepdims"), rest)), **kwargs}
        axis = kwargs.pop("axis", 0)
        if dnp.ndim(x) == 0 and axis in (0, -1, (), (0,), (-1,)):
            axis = None  # NumPy reduces a 0-d array over "axis 0" to itself
        for k in ("dtype", "out"):
            if kwargs.get(k) is None:
                kwargs.pop(k, None)
        return red(x, axis=axis, **kwargs)
    raise UnsupportedOpError(
        f"numpy.{ufunc.__name__}.{method} is not supported on traced values "
        f"(at {user_location()})")


def function_handler(func, args, kwargs):
    mod = getattr(func, "__module__", "") or ""
    name = func.__name__
    # np.linalg.solve, np.fft.rfft held as functions (from numpy.fft import rfft)
    sub = next((s for s in ("linalg", "fft") if s in mod.split(".")[1:2]), None)
    path = f"{sub}.{name}" if sub else name
    f = lookup("numpy." + path)
    if f is None:
        raise UnsupportedOpError(
            f"numpy.{path} has no dualgpu rule (called on a traced value at "
            f"{user_location()}); register one with dg.defprim (docs/custom_rules.md)")
    return call_front_end(f, f"numpy.{path}", args, kwargs)


def cupy_kernel_handler(kernel, args, kwargs):
    """A CuPy ufunc (``cp.tanh``, held anywhere: a default argument, an attribute) called on
    a traced value: its counterpart in the numpy namespace of :mod:`dualgpu.frontend`."""
    name = str(getattr(kernel, "__name__", None) or getattr(kernel, "name", "?"))
    name = name.removeprefix("cupy_")
    ours = lookup("numpy." + name) if hasattr(kernel, "nin") else None
    if ours is None:
        raise no_rule(f"cupy.{name}")
    return ours(*args, **kwargs)


def no_rule(qualname: str) -> UnsupportedOpError:
    return UnsupportedOpError(
        f"{qualname} has no dualgpu rule (called on a traced value at {user_location()}). "
        "Rewrite it with supported functions, or register a primitive for it with "
        "dg.defprim (docs/custom_rules.md).")
