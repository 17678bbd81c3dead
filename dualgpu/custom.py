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
from collections.abc import Callable
from typing import Any

import numpy as np

from .codegen.names import check_c_expression, check_identifier
from .errors import DualgpuError
from .ir import Aval
from .primitives import NON_DIFFERENTIABLE, REGISTRY, Primitive
from .rules._util import broadcast_shapes, float_dtype, promote, unbroadcast

__all__ = ["custom_op", "CustomOp"]


class CustomOp:
    """The callable returned by :func:`custom_op`; ``op.prim`` is its registry entry.

    Example::

        cube = dg.custom_op("cube", lambda xp, x: x ** 3,
                            jvp=lambda p, t, ans: 3 * p[0] ** 2 * t[0])
        cube(np.arange(3.0))    # array([0., 1., 8.])
    """

    def __init__(self, prim: Primitive):
        self.prim = prim
        self.__name__ = prim.name
        self.__doc__ = prim.__doc__

    def __call__(self, *args: Any):
        return self.prim.bind(*args)

    def __repr__(self) -> str:
        return f"<dualgpu custom op {self.prim.name}>"


def custom_op(name: str, impl: Callable, *, shape: Callable | None = None,
              jvp: Callable | None = None, vjp: Callable | None = None,
              c: str | None = None, doc: str = "") -> CustomOp:
    """Register a primitive ``name`` and return a function that applies it.

    ``impl(xp, *args)`` computes the value with the array module ``xp``. ``shape`` gives the
    output's abstract value from the inputs' (``shape(*avals)`` returning an ``Aval``, a
    ``(shape, dtype)`` pair or a shape); by default the op is elementwise: inputs broadcast
    and the result is floating point. ``jvp`` and ``vjp`` are the derivative rules (module
    docstring); either one is enough (with neither, differentiating through the op
    raises). ``c`` is a C expression for fused GPU kernels (elementwise ops only), ``{0}``,
    ``{1}``... standing for the operands; it is checked against a whitelist of tokens and
    math functions.

    Re-registering a name that a previous ``custom_op`` call registered replaces it (handy in
    notebooks); names of built-in primitives are refused.

    Example::

        >>> import numpy as np, dualgpu as dg
        >>> sq = dg.custom_op("my_square", lambda xp, x: x * x,
        ...                   vjp=lambda g, p, ans: (2 * p[0] * g,), c="({0} * {0})")
        >>> dg.jvp(lambda x: sq(x), (np.array([3.0]),), (np.array([1.0]),))
        (array([9.]), array([6.]))
    """
    check_identifier(name, what="custom op name")
    if not callable(impl):
        raise DualgpuError(f"custom_op {name!r}: impl must be callable")
    arity = _arity(impl)
    if c is not None:
        if shape is not None:
            raise DualgpuError(f"custom_op {name!r}: a C expression is only for elementwise "
                               "ops (leave shape=None)")
        if arity is None:
            raise DualgpuError(f"custom_op {name!r}: a C expression needs a fixed number of "
                               "operands (impl(xp, x, y), not impl(xp, *args))")
        check_c_expression(c, arity)
    existing = REGISTRY.get(name)
    if existing is not None and not getattr(existing, "custom", False):
        raise DualgpuError(f"custom_op {name!r}: a built-in primitive has this name")

    prim = Primitive(name, lambda xp, *args: impl(xp, *args), _shape_rule(name, shape),
                     kind="elementwise" if c is not None else "generic", c=c,
                     py=None, doc=doc or getattr(impl, "__doc__", None) or "")
    prim.custom = True
    prim.arity = arity
    rules = _Rules(prim, jvp, vjp)
    if jvp is not None or vjp is not None:
        prim.jvp = rules.jvp
        prim.vjp = rules.vjp
    # without rules, differentiating through the op raises (it is not silently constant)
    REGISTRY[name] = prim
    NON_DIFFERENTIABLE.discard(name)
    return CustomOp(prim)


def _arity(impl) -> int | None:
    try:
        params = list(inspect.signature(impl).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not positional:
        raise DualgpuError("custom_op: impl must take the array module first: impl(xp, *args)")
    return len(positional) - 1


def _shape_rule(name: str, shape):
    def elementwise_rule(avals, **params):
        out = broadcast_shapes(*[a.shape for a in avals], op=name)
        return Aval(out, float_dtype(promote(avals)), all(a.weak for a in avals))

    if shape is None:
        return elementwise_rule

    def rule(avals, **params):
        res = shape(*avals)
        if isinstance(res, Aval):
            return res
        if (isinstance(res, tuple) and len(res) == 2 and isinstance(res[0], tuple)
                and not isinstance(res[1], (int, np.integer))):
            return Aval(tuple(int(d) for d in res[0]), np.dtype(res[1]))
        return Aval(tuple(int(d) for d in res), float_dtype(promote(avals)))

    return rule


def _aval(x) -> Aval:
    if hasattr(x, "aval"):
        return Aval(tuple(x.aval.shape), x.aval.dtype, x.aval.weak)
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return Aval((), np.result_type(x), True)
    return Aval(tuple(np.shape(x)), np.dtype(x.dtype))


def _aval_key(avals) -> tuple:
    return tuple((tuple(a.shape), np.dtype(a.dtype).str, a.weak) for a in avals)


def _float(x) -> bool:
    return np.dtype(_aval(x).dtype).kind in "fc"


class _Rules:
    """The JVP and VJP of a custom op, each given or derived from the other."""

    def __init__(self, prim: Primitive, jvp, vjp):
        self.prim = prim
        self.user_jvp = jvp
        self.user_vjp = vjp
        self._transposed: dict = {}

    # ------------------------------------------------------------------ user rules
    def _call_jvp(self, primals, tangents, ans):
        from .namespace import rebind_function
        from .numpy_api import zeros_like

        ts = [zeros_like(p) if t is None and _float(p) else t for p, t in zip(primals, tangents)]
        return rebind_function(self.user_jvp)(tuple(primals), tuple(ts), ans)

    def _call_vjp(self, g, primals, ans):
        from .namespace import rebind_function

        cts = rebind_function(self.user_vjp)(g, tuple(primals), ans)
        if not isinstance(cts, (tuple, list)):
            cts = (cts,)
        if len(cts) != len(primals):
            raise DualgpuError(f"the vjp of custom op {self.prim.name} returned {len(cts)} "
                               f"cotangents for {len(primals)} inputs")
        return cts

    # ------------------------------------------------------------------ registry rules
    def jvp(self, primals, tangents, **params):
        ans = self.prim.bind(*primals)
        if all(t is None for t in tangents):
            return ans, None
        if self.user_jvp is not None:
            return ans, _fit(self._call_jvp(primals, tangents, ans), ans)
        return ans, self._derived_jvp(primals, tangents, ans)

    def vjp(self, g, primals, ans, **params):
        if self.user_vjp is not None:
            cts = self._call_vjp(g, primals, ans)
        else:
            cts = self._derived_vjp(g, primals, ans)
        out = []
        for x, ct in zip(primals, cts):
            if ct is None or not hasattr(x, "aval") or not _float(x):
                out.append(None)
            else:
                out.append(unbroadcast(_fit(ct, x, broadcast=False), x.aval))
        return tuple(out)

    # ------------------------------------------------------------------ transposition
    def _diff_positions(self, primals):
        return [i for i, p in enumerate(primals) if _float(p)]

    def _derived_jvp(self, primals, tangents, ans):
        """Transpose the pullback: J t = (g -> J^T g)^T t."""
        from .interpret import eval_graph
        from .numpy_api import zeros_like

        diff = self._diff_positions(primals)
        avals = [_aval(p) for p in primals]
        ans_aval = _aval(ans)
        key = ("jvp", _aval_key(avals), _aval_key([ans_aval]))
        graph = self._transposed.get(key)
        if graph is None:
            graph = self._transpose_pullback(avals, ans_aval, diff, _xp_of(primals, ans))
            self._transposed[key] = graph
        ts = [tangents[i] if tangents[i] is not None else zeros_like(primals[i]) for i in diff]
        outs = eval_graph(graph, [zeros_like(ans), *primals, ans, *ts])
        return _fit(outs[-1], ans)

    def _transpose_pullback(self, avals, ans_aval, diff, xp):
        from .trace import trace_to_graph
        from .transforms.vjp import vjp_graph

        n = len(avals)

        def pullback(g, *rest):
            primals, ans = rest[:n], rest[n]
            cts = self._call_vjp(g, primals, ans)
            return tuple(_ct_or_zeros(cts[i], primals[i]) for i in diff)

        g_aval = Aval(tuple(ans_aval.shape), ans_aval.dtype)
        graph, _ = trace_to_graph(pullback, [g_aval, *avals, ans_aval], xp,
                                  name=f"{self.prim.name}_pullback")
        return vjp_graph(graph, [True] + [False] * (n + 1))

    def _derived_vjp(self, g, primals, ans):
        """Transpose the pushforward: J^T g = (t -> J t)^T g."""
        from .interpret import eval_graph
        from .numpy_api import zeros_like

        diff = self._diff_positions(primals)
        avals = [_aval(p) for p in primals]
        ans_aval = _aval(ans)
        key = ("vjp", _aval_key(avals), _aval_key([ans_aval]))
        graph = self._transposed.get(key)
        if graph is None:
            graph = self._transpose_pushforward(avals, ans_aval, diff, _xp_of(primals, ans))
            self._transposed[key] = graph
        ts = [zeros_like(primals[i]) for i in diff]
        outs = eval_graph(graph, [*ts, *primals, ans, g])
        cts: list = [None] * len(primals)
        for i, ct in zip(diff, outs[1:]):
            cts[i] = ct
        return cts

    def _transpose_pushforward(self, avals, ans_aval, diff, xp):
        from .trace import trace_to_graph
        from .transforms.vjp import vjp_graph

        n, k = len(avals), len(diff)

        def pushforward(*args):
            ts, primals, ans = args[:k], args[k:k + n], args[k + n]
            full: list = [None] * n
            for i, t in zip(diff, ts):
                full[i] = t
            return _fit(self._call_jvp(primals, full, ans), ans)

        t_avals = [Aval(tuple(avals[i].shape), avals[i].dtype) for i in diff]
        graph, _ = trace_to_graph(pushforward, [*t_avals, *avals, ans_aval], xp,
                                  name=f"{self.prim.name}_pushforward")
        return vjp_graph(graph, [True] * k + [False] * (n + 1))


def _xp_of(primals, ans):
    from .trace import Tracer

    for x in (*primals, ans):
        if isinstance(x, Tracer):
            return x._builder.xp
    from .backends import namespace_of

    return namespace_of(list(primals))


def _ct_or_zeros(ct, x):
    from .numpy_api import zeros_like

    if ct is None:
        return zeros_like(x)
    return _fit(ct, x, broadcast=False) if tuple(np.shape(ct)) == tuple(np.shape(x)) else \
        unbroadcast(ct, _aval(x))


def _fit(t, like, broadcast: bool = True):
    """Give a rule's result the shape (broadcasting) and dtype of ``like``."""
    from . import numpy_api as dnp

    shape = tuple(dnp._shape(like))
    if broadcast and tuple(dnp._shape(t)) != shape:
        t = dnp.broadcast_to(t, shape)
    dt = dnp._dtype(like)
    if dnp._dtype(t) != dt and np.dtype(dt).kind in "fc":
        t = dnp.astype(t, dt)
    return t
