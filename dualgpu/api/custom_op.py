"""User-defined ops: :func:`custom_op` registers a new primitive from its implementation and
its derivative rules, and returns a function usable inside traced code.

Give a ``vjp``, a ``jvp``, or both. With only a VJP, dualgpu derives the JVP -- and so
forward mode and HVPs -- by transposing the (linear) pullback: it traces
``g -> vjp(g, primals, ans)`` into a graph, applies reverse mode to that graph with respect
to ``g``, and evaluates the result on the tangents. With only a JVP, the VJP is the
transpose of the pushforward in the same way. (JAX cannot forward-differentiate its
``custom_vjp`` functions, jax issue 16049; here both directions work.)

Rule signatures (``primals`` is the tuple of inputs, ``ans`` the op's output)::

    impl(xp, *args)                  -> ans        # xp is numpy or cupy
    jvp(primals, tangents, ans)      -> ans_dot    # tangents: arrays (zeros if unperturbed)
    vjp(g, primals, ans)             -> cotangents # a tuple, one per input (None: none)

Rules are written with NumPy functions (they run on traced values); they must be linear in
the tangents / in ``g``.

Example::

    >>> import numpy as np, dualgpu as dg
    >>> softsign = dg.custom_op(
    ...     "softsign", lambda xp, x: x / (1 + xp.abs(x)),
    ...     vjp=lambda g, primals, ans: (g / (1 + np.abs(primals[0])) ** 2,),
    ...     c="({0} / (1 + fabs({0})))")
    >>> f = lambda x: np.sum(softsign(x) ** 2)
    >>> hv = dg.hvp(f)(np.array([0.5, -2.0]), np.array([1.0, 0.0]))   # JVP derived
"""
from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import lax
from ..backends import namespace_of
from ..base.cache import PROGRAMS, IdentityKey
from ..base.names import check_c_expression, check_identifier
from ..core.axes import broadcast_shapes
from ..core.dtypes import float_dtype, promote
from ..core.interpret import eval_graph
from ..core.ir import Aval
from ..core.primitives import NON_DIFFERENTIABLE, REGISTRY, Primitive, bump_registry_version
from ..core.trace import Tracer, trace_to_graph
from ..errors import DualgpuError, ShapeMismatchError
from ..frontend.namespace import rebind_function
from ..lax import zeros_like
from ..rules.common import unbroadcast
from ..runtime.guards import cached_guarded
from ..transforms.vjp import vjp_graph
from . import differentiation
from .custom_decisions import decide, replaying
from .missing_cotangent import MissingCotangent, closed_refusal

__all__ = ["custom_op", "CustomOp", "CustomPrimitive", "clear_derived_rules",
           "derived_rules_info"]

# The graphs of derived rules (the JVP transposed from a VJP-only op, and vice versa), per
# (rules, input signature): entries of the one cache, emptied by dg.clear_cache(), by
# re-registration, and rebuilt when what the user's rules read changes (guards).
DERIVED = "custom op derived rule"  # the kinds of these entries of the one cache
_BUILDING = threading.local()
_REGISTER_LOCK = threading.RLock()


def clear_derived_rules() -> None:
    """Drop every cached derived-rule graph (``dg.clear_cache()`` drops them too)."""
    PROGRAMS.discard_kind(DERIVED)


def derived_rules_info() -> dict:
    """How many derived-rule graphs the cache holds (``size``), and the cache's bound."""
    return {"size": PROGRAMS.count_kind(DERIVED), "maxsize": PROGRAMS.maxsize}


class _Spec:
    """One definition of a custom op: implementation, shape rule and derivative rules."""

    __slots__ = ("impl", "abstract_eval", "jvp", "vjp", "kind", "c", "arity", "rules",
                 "multiple_results")
    impl: Callable
    abstract_eval: Callable
    jvp: Callable | None
    vjp: Callable | None
    kind: str
    c: str | None
    arity: int | None
    rules: _Rules
    multiple_results: bool


class CustomPrimitive(Primitive):
    """The registry entry of a custom op. Its whole definition lives in one ``_Spec`` that
    re-registration swaps in a single assignment, so the implementation and the rules are
    always those of the same ``custom_op`` call (old handles included)."""

    custom = True
    batching_rule: Callable | None = None  # api/custom_batching.py's (installs it)

    def rule(self, kind: str) -> Callable | None:
        return super().rule(kind) or (self.batching_rule if kind == "vmap" else None)

    def __init__(self, name: str, spec: _Spec, doc: str = ""):
        self._spec = spec
        # Primitive's own defaults for everything else (the setters below write into spec)
        super().__init__(name, spec.impl, spec.abstract_eval, jvp=spec.jvp, vjp=spec.vjp,
                         kind=spec.kind, c=spec.c, arity=spec.arity,
                         multiple_results=spec.multiple_results, doc=doc)

    def _field(attr: str):  # type: ignore[misc]  # a property factory of the class body
        def get(self):
            return getattr(self._spec, attr)

        def set_(self, value):
            setattr(self._spec, attr, value)

        return property(get, set_)

    impl = _field("impl")
    abstract_eval = _field("abstract_eval")
    jvp = _field("jvp")
    vjp = _field("vjp")
    kind = _field("kind")
    c = _field("c")
    arity = _field("arity")
    multiple_results = _field("multiple_results")
    del _field

    def _replace(self, spec: _Spec, doc: str) -> None:
        self._spec = spec
        self.__doc__ = doc


class CustomOp:
    """The callable returned by :func:`custom_op`; ``op.prim`` is its registry entry.

    Example::

        >>> cube = dg.custom_op("cube", lambda xp, x: x ** 3,
        ...                     jvp=lambda p, t, ans: 3 * p[0] ** 2 * t[0])
        >>> cube(np.arange(3.0))
        array([0., 1., 8.])
        >>> dg.grad(lambda x: np.sum(cube(x)))(np.arange(3.0))     # VJP derived from the JVP
        array([ 0.,  3., 12.])
    """

    def __init__(self, prim: CustomPrimitive):
        self.prim = prim
        self.__name__ = prim.name
        self.__doc__ = prim.__doc__

    def __call__(self, *args: Any):
        arity = self.prim.arity
        if arity is not None and len(args) != arity:
            raise DualgpuError(f"custom op {self.prim.name!r} takes {arity} operand(s), got "
                               f"{len(args)}")
        # the branches its rules take on the values, where the trace knows them
        decided = self.prim._spec.rules.decisions(args)
        return self.prim.bind(*args, **({"decided": decided} if decided else {}))

    _dualgpu_functions = property(lambda self: (self.prim._spec.impl, self.prim._spec.rules))

    def __repr__(self) -> str:
        return f"<dualgpu custom op {self.prim.name}>"


def custom_op(name: str, impl: Callable, *, shape: Callable | None = None,
              jvp: Callable | None = None, vjp: Callable | None = None,
              c: str | None = None, doc: str = "",
              multiple_results: bool = False) -> CustomOp:
    """Register a primitive ``name`` and return a function that applies it.

    ``impl(xp, *args)`` computes the value with the array module ``xp``. ``shape`` gives the
    output's abstract value from the inputs' (``shape(*avals)`` returning an ``Aval``, a
    ``(shape, dtype)`` pair or a shape); by default the op is elementwise: inputs broadcast
    and the result is floating point. ``jvp`` and ``vjp`` are the derivative rules (module
    docstring); either one is enough (with neither, differentiating through the op
    raises). ``c`` is a C expression for fused GPU kernels (elementwise ops only), ``{0}``,
    ``{1}``... standing for the operands; it is checked against a whitelist of tokens and
    math functions.

    ``multiple_results=True``: several outputs, ``shape`` (required) returns a list of them
    and ``impl``, ``ans``, the tangents and ``g`` are tuples (docs/custom_rules.md).

    Re-registering a name that a previous ``custom_op`` call registered replaces the whole
    op at once -- implementation, shape rule and derivative rules, for every handle to it --
    and clears the program cache (``dg.clear_cache()``), so that no program built with the
    old definition runs again; names of built-in primitives are refused.

    Example::

        >>> import numpy as np, dualgpu as dg
        >>> sq = dg.custom_op("my_square", lambda xp, x: x * x,
        ...                   vjp=lambda g, p, ans: (2 * p[0] * g,), c="({0} * {0})")
        >>> dg.jvp(lambda x: sq(x), (np.array([3.0]),), (np.array([1.0]),))
        (array([9.]), array([6.]))
    """
    check_identifier(name, what="custom op name")
    if not callable(impl):
        raise DualgpuError(f"custom_op {name!r}: impl must be callable, got "
                           f"{type(impl).__name__}")
    for what, rule in (("shape", shape), ("jvp", jvp), ("vjp", vjp)):
        if rule is not None and not callable(rule):
            raise DualgpuError(f"custom_op {name!r}: {what}= must be a function or None, got "
                               f"{type(rule).__name__}")
    if not isinstance(doc, str):
        raise DualgpuError(f"custom_op {name!r}: doc= must be a string, got "
                           f"{type(doc).__name__}")
    arity = _arity(name, impl)
    if multiple_results and (shape is None or c is not None):
        raise DualgpuError(f"custom_op {name!r}: an op with multiple_results needs shape= "
                           "(a list of its outputs' abstract values) and no C expression")
    if c is not None:
        if shape is not None:
            raise DualgpuError(f"custom_op {name!r}: a C expression is only for elementwise "
                               "ops (leave shape=None)")
        if arity is None:
            raise DualgpuError(f"custom_op {name!r}: a C expression needs a fixed number of "
                               "operands (impl(xp, x, y), not impl(xp, *args))")
        check_c_expression(c, arity)

    spec = _Spec()
    spec.multiple_results = bool(multiple_results)
    spec.abstract_eval = _shape_rule(name, shape, spec.multiple_results)
    spec.impl = _checked_impl(name, impl, spec)
    spec.kind = "elementwise" if c is not None else "generic"
    spec.c = c
    spec.arity = arity
    spec.rules = _Rules(name, jvp, vjp, spec.multiple_results)
    has_rules = jvp is not None or vjp is not None
    # without rules, differentiating through the op raises (it is not silently constant)
    spec.jvp = spec.rules.jvp if has_rules else None
    spec.vjp = spec.rules.vjp if has_rules else None
    doc = doc or getattr(impl, "__doc__", None) or ""

    with _REGISTER_LOCK:
        existing = REGISTRY.get(name)
        if existing is not None and not isinstance(existing, CustomPrimitive):
            raise DualgpuError(f"custom_op {name!r}: a built-in primitive has this name")
        if existing is None:
            prim = CustomPrimitive(name, spec, doc)
            spec.rules.prim = prim
            REGISTRY[name] = prim
        else:
            # replace the whole definition in one assignment, then drop everything built
            # with the old one: compiled programs and derived-rule graphs
            prim = existing
            spec.rules.prim = prim
            prim._replace(spec, doc)
            bump_registry_version()
            _clear_dependent_caches()
        NON_DIFFERENTIABLE.discard(name)
    return CustomOp(prim)


def _clear_dependent_caches() -> None:
    clear_derived_rules()
    differentiation.clear_cache()


def _arity(name: str, impl) -> int | None:
    try:
        params = list(inspect.signature(impl).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not positional:
        raise DualgpuError(f"custom_op {name!r}: impl must take the array module first: "
                           "impl(xp, *args)")
    return len(positional) - 1


_RAISED_TYPES: dict[type, type] = {}  # the user's exception type -> ours, of both types


def _rule_error(name: str, what: str, e: Exception) -> DualgpuError:
    """A DualgpuError naming the op, of the type of the user's exception ``e`` too (a body
    that raises ValueError raises a ValueError: ``except ValueError`` still catches it)."""
    msg = " ".join(str(e).split()) or type(e).__name__
    text = f"the {what} of custom op {name!r} raised {type(e).__name__}: {msg}"
    try:
        cls = _RAISED_TYPES.get(type(e))
        if cls is None:
            cls = type(type(e).__name__, (DualgpuError, type(e)), {"__module__": "dualgpu"})
            _RAISED_TYPES[type(e)] = cls
        return cls(text)
    except TypeError:  # a type that takes other arguments or cannot be combined
        return DualgpuError(text)


def _user_call(name: str, what: str, fn, *args):
    """Call a user-supplied function; its mistakes become one DualgpuError naming the op."""
    try:
        return fn(*args)
    except (DualgpuError, FloatingPointError, MemoryError):
        raise  # ours, and NumPy's errstate(raise) semantics
    except Exception as e:
        raise _rule_error(name, what, e) from e


def _checked_impl(name: str, impl, spec: _Spec):
    """The user's implementation, with its output's shape checked against the shape rule
    (the expected shape is remembered per input signature: about a microsecond a call)."""
    expected: dict = {}

    def run(xp, *args, **params):
        try:
            res = impl(xp, *args)
        except (DualgpuError, FloatingPointError, MemoryError):
            raise
        except Exception as e:
            raise _rule_error(name, "impl", e) from e
        try:
            key = tuple([(a.shape, a.dtype) for a in args])
        except AttributeError:  # Python scalars among the operands
            key = tuple([(np.shape(a), type(a)) for a in args])
        outs = res if spec.multiple_results else [res]
        got = [tuple(np.shape(o)) for o in outs] if isinstance(outs, (tuple, list)) else None
        want = expected.get(key)  # (asked again on a mismatch: it may read a changed global)
        if want is None or got != want:
            avals = spec.abstract_eval([_aval(a) for a in args])
            want = [tuple(a.shape) for a in (avals if spec.multiple_results else [avals])]
            expected.clear() if len(expected) > 256 else None
            expected[key] = want
        if not isinstance(outs, (tuple, list)) or len(outs) != len(want):
            raise ShapeMismatchError(
                f"the impl of custom op {name!r} returned {_count(res, 'value')}, but its "
                f"shape rule gives {len(want)} outputs")
        for out, shape in zip(outs, want):
            got = out.shape if hasattr(out, "shape") else np.shape(out)
            if got != shape and tuple(got) != shape:
                raise ShapeMismatchError(
                    f"the impl of custom op {name!r} returned shape {tuple(got)}, but its "
                    f"shape rule gives {shape} for inputs of shapes "
                    f"{', '.join(str(tuple(np.shape(a))) for a in args)}; give custom_op a "
                    "shape= that matches impl")
        return res

    return run


def _shape_rule(name: str, shape, multiple: bool = False):
    def elementwise_rule(avals, **params):
        out = broadcast_shapes(*[a.shape for a in avals], op=name)
        return Aval(out, float_dtype(promote(avals)), all(a.weak for a in avals))

    if shape is None:
        return elementwise_rule

    def rule(avals, **params):
        res = _user_call(name, "shape rule", shape, *avals)
        if not multiple:
            return _as_aval(name, res, avals)
        if not isinstance(res, (tuple, list)):
            raise DualgpuError(f"the shape rule of custom op {name!r} (multiple_results) "
                               f"returned {res!r}: expected a list, one entry per output")
        return [_as_aval(name, r, avals) for r in res]

    return rule


def _dims(res) -> tuple | None:
    if not isinstance(res, (tuple, list)):
        return None
    if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0
               for d in res):
        return None
    return tuple(int(d) for d in res)


def _as_aval(name: str, res, avals) -> Aval:
    """A shape rule's result as an Aval, or one DualgpuError naming the op."""
    if isinstance(res, Aval):
        return res
    if (isinstance(res, tuple) and len(res) == 2 and isinstance(res[0], (tuple, list))
            and not isinstance(res[1], (int, np.integer))):
        dims = _dims(res[0])
        try:
            dtype = np.dtype(res[1])
        except TypeError:
            dtype = None
        if dims is not None and dtype is not None:
            return Aval(dims, dtype)
    else:
        dims = _dims(res)
        if dims is not None:
            return Aval(dims, float_dtype(promote(avals)))
    raise DualgpuError(f"the shape rule of custom op {name!r} returned {res!r}: expected an "
                       "Aval, a (shape, dtype) pair or a shape (a tuple of non-negative ints)")


def _aval(x) -> Aval:
    if hasattr(x, "aval"):
        return Aval(tuple(x.aval.shape), x.aval.dtype, x.aval.weak)
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return Aval((), np.result_type(x), True)
    return Aval(tuple(np.shape(x)), np.dtype(x.dtype))


def aval_of(x) -> Aval:
    """The abstract value of an operand (an array, a tracer or a Python number)."""
    return _aval(x)


def aval_key(avals) -> tuple:
    return tuple((tuple(a.shape), np.dtype(a.dtype).str, a.weak) for a in avals)


def is_float_value(x) -> bool:
    return np.dtype(_aval(x).dtype).kind in "fc"


def _wants(x) -> bool:
    """A traced floating-point input: the only kind that takes a cotangent."""
    return hasattr(x, "aval") and is_float_value(x)


def is_value(x) -> bool:
    if hasattr(x, "aval"):
        return True
    if isinstance(x, (bool, int, float, complex)):
        return True
    return hasattr(x, "shape") and hasattr(x, "dtype") and \
        np.dtype(x.dtype).kind in "biufc"


def _count(res, what: str) -> str:
    """How many ``what`` a rule returned (a tuple), or what it returned instead."""
    return (f"{len(res)} {what}(s)" if isinstance(res, (tuple, list))
            else f"a {type(res).__name__}")


def _broadcasts_to(src: tuple, dst: tuple) -> bool:
    """Whether an array of shape ``src`` broadcasts to shape ``dst``."""
    return len(src) <= len(dst) and all(
        s == d or s == 1 for s, d in zip(reversed(src), reversed(dst)))


def _describe(x) -> str:
    a = _aval(x)
    return f"{np.dtype(a.dtype).name}{list(a.shape)}"


class _Rules:
    """The JVP and VJP of a custom op, each given or derived from the other; every result
    of a user rule is checked (None, shape, dtype) before it enters a graph."""

    _dualgpu_functions = property(lambda self: (self.user_jvp, self.user_vjp))  # (guards)

    def __init__(self, name: str, jvp, vjp, multiple: bool = False):
        self.name = name
        self.prim: CustomPrimitive | None = None
        self.user_jvp = jvp
        self.user_vjp = vjp
        self.multiple = multiple  # several outputs: ans, g and the tangents are sequences
        self.branch_free: set = set()  # operand signatures its rules take no branch on

    def _outs(self, ans) -> list:  # the op's outputs (or their cotangents) as a list
        return list(ans) if self.multiple else [ans]

    def _one(self, outs: list):  # the rules' form of a list per output: tuple or one value
        return tuple(outs) if self.multiple else outs[0]

    # ------------------------------------------------------------------ user rules
    def decisions(self, args) -> tuple:
        """The ``decided`` parameter of a call (:mod:`dualgpu.api.custom_decisions`)."""
        def rules_for(primals):
            ans, rules = self.prim.bind(*primals), []
            if self.user_jvp is not None:
                rules.append(("jvp", f"the jvp rule of custom op {self.name!r}", lambda s:
                              self._call_jvp(primals, [s(p) if is_float_value(p) else None
                                                       for p in primals], ans)))
            if self.user_vjp is not None:
                rules.append(("vjp", f"the vjp rule of custom op {self.name!r}", lambda s:
                              self._call_vjp(self._one([s(a) for a in self._outs(ans)]),
                                             primals, ans)))
            return rules

        return decide(args, rules_for, self.branch_free)

    def _call_jvp(self, primals, tangents, ans, decided=()):
        ts = list(tangents) if getattr(self.user_jvp, "symbolic_zeros", False) else [
            zeros_like(p) if t is None and is_float_value(p) else t
            for p, t in zip(primals, tangents)]
        with replaying(decided, "jvp", primals):
            t = _user_call(self.name, "jvp rule", rebind_function(self.user_jvp),
                           tuple(primals), tuple(ts), ans)
        if not self.multiple:
            return self._check_tangent(t, ans)
        if not isinstance(t, (tuple, list)) or len(t) != len(ans):
            raise DualgpuError(f"the jvp rule of custom op {self.name!r} returned "
                               f"{_count(t, 'tangent')} for {len(ans)} outputs: return a "
                               "tuple, one tangent per output (None for zero)")
        return [None if ti is None or not is_float_value(a) else self._check_tangent(ti, a)
                for ti, a in zip(t, ans)]

    def _check_tangent(self, t, ans):
        where = f"the jvp rule of custom op {self.name!r}"
        shape = tuple(_aval(ans).shape)
        if t is None:
            raise DualgpuError(f"{where} returned None: it must return the output's tangent, "
                               f"an array of the output's shape {shape}")
        if isinstance(t, (tuple, list)):
            raise DualgpuError(f"{where} returned a {type(t).__name__}: return one array, the "
                               f"output's tangent (shape {shape})")
        if not is_value(t):
            raise DualgpuError(f"{where} returned a {type(t).__name__}: return an array, the "
                               f"output's tangent (shape {shape})")
        tshape = tuple(_aval(t).shape)
        if not _broadcasts_to(tshape, shape):
            raise ShapeMismatchError(f"{where} returned a tangent of shape {tshape}, but the "
                                     f"output has shape {shape}")
        self._check_dtype(t, ans, f"{where} returned a tangent", "the output")
        return _fit(t, ans)

    def _check_dtype(self, t, like, what, of):
        tk, lk = np.dtype(_aval(t).dtype).kind, np.dtype(_aval(like).dtype).kind
        if tk == "c" and lk != "c":
            raise ShapeMismatchError(f"{what} of dtype {np.dtype(_aval(t).dtype).name}, but "
                                     f"{of} is real ({_describe(like)})")

    def _call_vjp(self, g, primals, ans, decided=()):
        with replaying(decided, "vjp", primals):
            cts = _user_call(self.name, "vjp rule", rebind_function(self.user_vjp),
                             g, tuple(primals), ans)
        n = len(primals)
        if not isinstance(cts, (tuple, list)):
            if n != 1:
                raise DualgpuError(f"the vjp rule of custom op {self.name!r} returned a "
                                   f"{type(cts).__name__}: return a tuple of {n} cotangents, "
                                   "one per input")
            cts = (cts,)
        if len(cts) != n:
            raise DualgpuError(f"the vjp rule of custom op {self.name!r} returned {len(cts)} "
                               f"cotangents for {n} inputs: return one per input (None for "
                               "an input without one)")
        return list(cts)

    def _check_cotangent(self, ct, x, i):
        """A cotangent for input ``i``, summed down to its shape and cast to its dtype."""
        where = f"the vjp rule of custom op {self.name!r}"
        shape = tuple(_aval(x).shape)
        if not is_value(ct) or isinstance(ct, (tuple, list)):
            raise DualgpuError(f"{where} returned a {type(ct).__name__} for input {i}: return "
                               f"an array shaped like the input ({_describe(x)})")
        cshape = tuple(_aval(ct).shape)
        if not _broadcasts_to(shape, cshape):
            raise ShapeMismatchError(f"{where} returned a cotangent of shape {cshape} for "
                                     f"input {i}, which has shape {shape}")
        self._check_dtype(ct, x, f"{where} returned a cotangent for input {i}", f"input {i}")
        return unbroadcast(ct, _aval(x))

    def _missing(self, x, i, why: str) -> DualgpuError:
        return closed_refusal((self.user_vjp, self.user_jvp), i) or DualgpuError(  # (closure)
            f"the vjp rule of custom op {self.name!r} returned None for input {i} "
            f"({_describe(x)}), {why}: return its cotangent (np.zeros_like(primals[{i}]) "
            "if it is truly zero)")

    # ------------------------------------------------------------------ registry rules
    def jvp(self, primals, tangents, decided=()):
        ans = self.prim.bind(*primals, **({"decided": decided} if decided else {}))
        if all(t is None for t in tangents):
            return ans, ([None] * len(ans) if self.multiple else None)
        if self.user_jvp is not None:
            return ans, self._call_jvp(primals, tangents, ans, decided)
        return ans, self._derived_jvp(primals, tangents, ans, decided)

    def vjp(self, g, primals, ans, decided=()):
        if self.multiple:  # a zero cotangent of an output reaches the rules as zeros
            g = tuple(zeros_like(a) if c is None else c for c, a in zip(g, ans))
        if self.user_vjp is not None:
            cts = self._call_vjp(g, primals, ans, decided)
        else:
            cts = self._derived_vjp(g, primals, ans, decided)
        out: list = []
        for i, (x, ct) in enumerate(zip(primals, cts)):
            if not _wants(x):
                out.append(None)
            elif ct is None:
                # an error only if reverse mode needs this input's cotangent
                out.append(MissingCotangent(self._missing(x, i, "which is differentiated")))
            else:
                out.append(self._check_cotangent(ct, x, i))
        return tuple(out)

    # ------------------------------------------------------------------ transposition
    def _derived(self, key, build):
        """A derived-rule graph from the bounded cache; refuses to derive a rule from itself."""
        full_key = (IdentityKey(self), *key)
        if full_key in (building := _BUILDING.__dict__.setdefault("keys", set())):
            which = "jvp from its vjp" if key[0] == "jvp" else "vjp from its jvp"
            raise DualgpuError(f"custom op {self.name!r}: deriving its {which} needs the rule "
                               "being derived (the given rule applies the op to the "
                               "tangents or cotangents); give both jvp= and vjp=")
        building.add(full_key)
        try:
            return cached_guarded(PROGRAMS, (DERIVED,) + tuple(full_key), self, build)
        finally:
            building.discard(full_key)

    def _derived_jvp(self, primals, tangents, ans, decided):
        """Transpose the pullback: J t = (g -> J^T g)^T t."""
        need = [i for i, p in enumerate(primals) if is_float_value(p) and tangents[i] is not None]
        avals, anss = [_aval(p) for p in primals], self._outs(ans)
        if not need:
            return self._one([None] * len(anss))
        ans_avals = [_aval(a) for a in anss]
        xp = _xp_of(primals, anss)
        key = ("jvp", tuple(need), aval_key(avals), aval_key(ans_avals),
               getattr(xp, "__name__", ""), decided)
        graph = self._derived(key, lambda: self._transpose_pullback(avals, ans_avals, need,
                                                                    xp, decided))
        outs = iter(eval_graph(graph, [*[zeros_like(a) for a in anss], *primals, *anss,
                                       *[tangents[i] for i in need]])[len(need):])
        # the cotangents of the float outputs' g: their tangents
        return self._one([_fit(next(outs), a) if is_float_value(a) else None for a in anss])

    def _transpose_pullback(self, avals, ans_avals, need, xp, decided):
        n, m = len(avals), len(ans_avals)

        def pullback(*args):
            g, primals = self._one(list(args[:m])), args[m:m + n]
            cts = self._call_vjp(g, primals, self._one(list(args[m + n:])), decided)
            out = []
            for i in need:
                if cts[i] is None:
                    raise self._missing(
                        primals[i], i, "but forward mode (jvp, hvp) perturbs that input and "
                        "its JVP is derived from this rule")
                out.append(self._check_cotangent(cts[i], primals[i], i))
            return tuple(out)

        g_avals = [Aval(tuple(a.shape), a.dtype) for a in ans_avals]
        graph, _ = trace_to_graph(pullback, [*g_avals, *avals, *ans_avals], xp,
                                  name=f"{self.name}_pullback")
        return vjp_graph(graph, [np.dtype(a.dtype).kind in "fc" for a in ans_avals]
                         + [False] * (n + m))

    def _derived_vjp(self, g, primals, ans, decided):
        """Transpose the pushforward: J^T g = (t -> J t)^T g."""
        body_vjp = getattr(self.user_jvp, "body_vjp", None)  # (the JVP rule applies the op
        if body_vjp is not None and any(k[:2] == (IdentityKey(self), "vjp")  # to tangents)
                                        for k in getattr(_BUILDING, "keys", ())):
            return body_vjp(g, primals)
        # not a closed-over value: its cotangent is missing (an error where it is needed)
        diff = [i for i, p in enumerate(primals) if is_float_value(p)
                and closed_refusal((self.user_vjp, self.user_jvp), i) is None]
        avals, anss = [_aval(p) for p in primals], self._outs(ans)
        ans_avals = [_aval(a) for a in anss]
        xp = _xp_of(primals, anss)
        key = ("vjp", tuple(diff), aval_key(avals), aval_key(ans_avals),
               getattr(xp, "__name__", ""), decided)
        graph = self._derived(key, lambda: self._transpose_pushforward(avals, ans_avals, diff,
                                                                       xp, decided))
        ts = [zeros_like(primals[i]) for i in diff]
        outs = eval_graph(graph, [*ts, *primals, *anss, *self._outs(g)])
        cts: list = [None] * len(primals)
        for i, ct in zip(diff, outs[len(anss):]):
            cts[i] = ct
        return cts

    def _transpose_pushforward(self, avals, ans_avals, diff, xp, decided):
        n, k = len(avals), len(diff)

        def pushforward(*args):
            ts, primals, anss = args[:k], args[k:k + n], list(args[k + n:])
            full: list = [None] * n
            for i, t in zip(diff, ts):
                full[i] = t
            t_out = self._outs(self._call_jvp(primals, full, self._one(anss), decided))
            return [zeros_like(a) if t is None else t for t, a in zip(t_out, anss)]

        t_avals = [Aval(tuple(avals[i].shape), avals[i].dtype) for i in diff]
        graph, _ = trace_to_graph(pushforward, [*t_avals, *avals, *ans_avals], xp,
                                  name=f"{self.name}_pushforward")
        return vjp_graph(graph, [True] * k + [False] * (n + len(ans_avals)))


def _xp_of(primals, anss):
    for x in (*primals, *anss):
        if isinstance(x, Tracer):
            return x._builder.xp
    return namespace_of(list(primals))


def _fit(t, like):
    """Give a tangent the shape (broadcasting) and dtype of ``like``."""
    shape = tuple(lax.shape_of(like))
    if tuple(lax.shape_of(t)) != shape:
        t = lax.broadcast_to(t, shape)
    dt = lax.dtype_of(like)
    if lax.dtype_of(t) != dt and np.dtype(dt).kind in "fc":
        t = lax.astype(t, dt)
    return t
