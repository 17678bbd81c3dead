"""Closure conversion of custom_jvp / custom_vjp functions (JAX's behaviour): a function or
rule that closes over a traced value (``x`` of an enclosing ``vmap``, ``jit`` or ``grad``,
read but not passed) is applied as a custom op whose extra operands are those values; the
function and its rules, run later (the op's implementation, its derivative rules in a
transform), read the operands in their place (:func:`dualgpu.core.trace.substituted`).

A closed-over value that is differentiated (its tangent or cotangent is needed) is refused,
as JAX refuses it: the rules say nothing about it. A custom_jvp function's traced
``nondiff_argnums`` argument is closed over the same way, its derivative stopped (JAX's
``custom_jvp``: :func:`nondiff_closed`).
"""
from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base import tree as pytree
from ..core.substitution import substituted
from ..core.trace import Tracer, current_builder
from ..frontend.methods import is_user_class
from ..lax import stop_gradient

__all__ = ["closed_tracers", "closure_converted", "is_array", "nondiff_closed", "not_static"]

_CONTAINERS = (tuple, list, frozenset, set)


def closed_tracers(fns: tuple, skip: type) -> list[Tracer]:
    """The traced values that the functions ``fns`` close over (their closure cells and
    defaults, those of the functions and ``functools.partial``\\ s found there, the
    containers among them and the attributes of the user's objects), first seen first;
    other custom functions (``skip``) are not entered: their own calls convert their
    closures."""
    found: dict[int, Tracer] = {}
    seen: set[int] = set()
    stack = list(reversed(fns))
    while stack:
        x = stack.pop()
        if id(x) in seen or isinstance(x, skip):
            continue
        seen.add(id(x))
        if isinstance(x, Tracer):
            found.setdefault(id(x), x)
        elif isinstance(x, types.FunctionType):
            inner = [c.cell_contents for c in x.__closure__ or () if _filled(c)]
            inner += list(x.__defaults__ or ()) + list((x.__kwdefaults__ or {}).values())
            stack.extend(reversed(inner))
        elif isinstance(x, functools.partial):
            stack.extend(reversed([x.func, *x.args, *x.keywords.values()]))
        elif isinstance(x, _CONTAINERS):
            stack.extend(reversed(list(x)))
        elif isinstance(x, dict):
            stack.extend(reversed(list(x.values())))
        elif not isinstance(x, (type, types.ModuleType)) and is_user_class(type(x)):
            # an object of the user's (o.c read in the body): its own attributes
            attrs = object.__getattribute__(x, "__dict__") if hasattr(x, "__dict__") else {}
            stack.extend(reversed(list(attrs.values())))
    return list(found.values())


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018  (an empty cell raises)
    except ValueError:
        return False
    return True


def _swapped(value, originals: list, extra) -> Any:
    """``value`` (a function's result) with each closed-over value returned as it is
    replaced by its operand."""
    subs = {id(t): v for t, v in zip(originals, extra)}
    return pytree.tree_map(lambda x: subs.get(id(x), x) if isinstance(x, Tracer) else x, value)


def _split(values, k: int) -> tuple:
    values = tuple(values)
    return values[:len(values) - k], values[len(values) - k:]


class _Reads:
    """``fn`` reading ``originals`` as the last ``k`` of its positional arguments."""

    def __init__(self, fn: Callable, originals: list):
        self.fn, self.originals = fn, originals
        self.__name__ = getattr(fn, "__name__", "f")

    def __call__(self, *args):
        own, extra = _split(args, len(self.originals))
        with substituted(list(zip(self.originals, extra))):
            return _swapped(self.fn(*own), self.originals, extra)


class _JvpReads:
    """A custom_jvp rule ``jvp(*nondiff, primals, tangents)`` whose primals and tangents end
    with the closed-over values' (their tangents: None, checked by the op's rule)."""

    def __init__(self, fn: Callable, originals: list):
        self.fn, self.originals = fn, originals
        self.__name__ = getattr(fn, "__name__", "jvp")

    def __call__(self, *args):
        *nondiff, primals, tangents = args
        k = len(self.originals)
        own, extra = _split(primals, k)
        with substituted(list(zip(self.originals, extra))):
            return _swapped(self.fn(*nondiff, own, _split(tangents, k)[0]), self.originals,
                            extra)


class _FwdReads(_Reads):
    """A custom_vjp ``fwd``: its residuals carry the closed-over values' to ``bwd``."""

    def __call__(self, *args):
        out, res = super().__call__(*args)
        return out, (res, _split(args, len(self.originals))[1])


class _BwdReads:
    """A custom_vjp ``bwd(*nondiff, residuals, g)``: no cotangent for a closed-over value."""

    def __init__(self, fn: Callable, originals: list):
        self.fn, self.originals = fn, originals
        self.__name__ = getattr(fn, "__name__", "bwd")

    def __call__(self, *args):
        *nondiff, (res, extra), g = args
        with substituted(list(zip(self.originals, extra))):
            cts = _swapped(self.fn(*nondiff, res, g), self.originals, extra)
        if isinstance(cts, (tuple, list)):
            cts = (*cts, *[None] * len(extra))
        return cts


def closure_converted(f: Any, n: int, originals: list) -> Any:
    """A copy of the custom function ``f`` taking ``originals`` (the traced values it closes
    over) as ``len(originals)`` extra differentiable arguments after its ``n`` own: its
    function and rules read them in the place of the values they close over."""
    conv = object.__new__(type(f))
    conv.__dict__.update(f.__dict__)
    conv.nondiff_argnums = tuple(i % n for i in f.nondiff_argnums if -n <= i < n)
    conv.closed = len(originals)
    conv.fun = _Reads(f.fun, originals)
    if getattr(f, "jvp", None) is not None:
        conv.jvp = _JvpReads(f.jvp, originals)
    if getattr(f, "fwd", None) is not None:
        conv.fwd, conv.bwd = _FwdReads(f.fwd, originals), _BwdReads(f.bwd, originals)
    return conv


def nondiff_closed(f: Any, args: tuple, nums: tuple) -> Any:
    """``f(*args)`` for a custom_jvp function ``f`` whose nondiff arguments (positions
    ``nums``) hold traced values (a ``vmap``'s batched array, a ``jit``'s argument), as JAX
    applies it: each such value with its derivative stopped, closed over by a custom_jvp
    function of the other arguments whose rule passes it to ``f``'s rule in its place
    (that function's call then converts the closure)."""
    if current_builder() is None and not any(
            isinstance(x, Tracer) for x in pytree.leaves(args)):  # eager: nothing to derive
        return f.fun(*args)
    fixed = {i: pytree.tree_map(lambda x: stop_gradient(x) if isinstance(x, Tracer) else x,
                                args[i]) for i in nums}
    fun, rule, n = f.fun, f.jvp, len(args)

    def merged(diff: tuple) -> tuple:  # (closes over ``fixed`` alone: its tracers are closed)
        rest = iter(diff)
        return tuple(fixed[i] if i in fixed else next(rest) for i in range(n))

    def body(*diff):
        return fun(*merged(diff))

    def jvp(primals, tangents):
        return rule(*(fixed[i] for i in nums), primals, tangents)

    body.__name__ = f.__name__
    jvp.__name__ = getattr(rule, "__name__", "jvp")
    closed = type(f)(body)
    closed.defjvp(jvp)
    return closed(*(a for i, a in enumerate(args) if i not in fixed))


def is_array(a) -> bool:
    """Whether ``a`` is an array (a NumPy scalar is a hashable value, not an array)."""
    return not isinstance(a, np.generic) and (
        hasattr(a, "__array_namespace__") or (hasattr(a, "shape") and hasattr(a, "dtype")))


def not_static(a) -> str:
    """What a nondiff argument that is not a static value is, and what to do (as JAX says
    of a traced nondiff argument): under ``dg.jit`` a Python number is traced as a weak
    scalar, an array as an array; a concrete array is an array."""
    static = ("a custom_vjp function's nondiff arguments are static, hashable values "
              "(functions, numbers, strings) known when the function is traced, as JAX's "
              "custom_vjp asks")
    if isinstance(a, Tracer) and a.aval.weak and not a.aval.shape:
        return (f"traced: a Python number ({a.dtype} weak scalar), which dg.jit traces like "
                f"its other arguments; {static}. Make it static in the jit "
                "(dg.jit(..., static_argnums=...) or static_argnames) or pass it as a "
                "hashable value closed over outside the jit, or make it an ordinary "
                "argument of the custom function (dg.stop_gradient stops its derivative)")
    if isinstance(a, Tracer):
        return (f"traced: an array of shape {tuple(a.shape)} ({a.dtype}) under dg.jit or a "
                f"transform; {static}. Pass it as an ordinary argument (dg.stop_gradient "
                "stops its derivative), or, if it is a hashable value, make it static in "
                "the jit (static_argnums/static_argnames of dg.jit)")
    return (f"an array; {static}. Pass arrays as ordinary arguments (stop their derivative "
            "with dg.stop_gradient)")
