"""The ``math`` and ``cmath`` modules inside a traced function: stand-ins whose functions
pass Python numbers through and refuse traced values, naming the NumPy function that traces
(``math.sin(x)`` -> ``np.sin``).

>>> import math
>>> stand_in = math_replacement(math)
>>> stand_in.sqrt(4.0), stand_in.pi == math.pi
(2.0, True)
"""
from __future__ import annotations

import functools
import types
from typing import Any

from ..errors import UnsupportedOpError, user_location
from .dispatch import contains_tracer, lookup

_MATH_MODULES = ("math", "cmath")


class MathRefusal(types.ModuleType):
    """Stands in for ``math``/``cmath`` inside a traced function: a function called on a
    traced value raises :class:`UnsupportedOpError` naming its NumPy counterpart; calls on
    Python numbers and the constants (``math.pi``) pass through."""

    def __init__(self, real):
        super().__init__(real.__name__)
        self._real = real

    def __getattr__(self, name: str) -> Any:
        real_attr = getattr(self._real, name)
        if callable(real_attr):
            wrapper = _math_refusing(real_attr)
            object.__setattr__(self, name, wrapper)
            return wrapper
        return real_attr

    def __repr__(self) -> str:
        return f"<dualgpu stand-in for {self._real.__name__} inside a traced function>"


_MATH_TO_NUMPY = {"fabs": "abs", "pow": "power", "atan2": "arctan2", "asin": "arcsin",
                  "acos": "arccos", "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh",
                  "atanh": "arctanh", "fsum": "sum", "prod": "prod", "dist": "linalg.norm"}


def _math_refusing(real):
    name = f"{real.__module__ or 'math'}.{real.__name__}"
    counterpart = _MATH_TO_NUMPY.get(real.__name__, real.__name__)
    if lookup("numpy." + counterpart) is None:
        counterpart = None

    @functools.wraps(real)
    def call(*args, **kwargs):
        if not contains_tracer(args, kwargs):
            return real(*args, **kwargs)
        hint = (f"use np.{counterpart}, which traces" if counterpart else
                "rewrite it with NumPy functions, which trace")
        raise UnsupportedOpError(
            f"{name} was called on a traced value (at {user_location()}): the math module "
            f"works on Python floats only; {hint}.")

    return call


def math_replacement(obj):
    """A stand-in for the math/cmath module or one of its functions, else None."""
    if isinstance(obj, types.ModuleType):
        return MathRefusal(obj) if obj.__name__ in _MATH_MODULES else None
    if (isinstance(obj, types.BuiltinFunctionType)
            and getattr(obj, "__module__", None) in _MATH_MODULES):
        return _math_refusing(obj)
    return None
