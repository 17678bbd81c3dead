"""Batching (vmap) of custom ops: the custom op under ``vmap`` is again one custom op, as in
JAX -- its body batched, and its rules batched.

A custom op (``dg.custom_op``, ``dg.custom_jvp``/``dg.custom_vjp`` functions, autograd
primitives) has no batching rule of its own. Applied to a batch, its body is traced once at
one example's operands and batched (:func:`dualgpu.transforms.vmap.batch_graph`, the batch
axis at 0, unbatched operands kept unbatched), and a new custom op is registered whose
implementation is that batched graph. Its JVP rule is the original op's JVP rule batched
the same way, its VJP rule the original's VJP rule batched (an unbatched operand's cotangent
is summed over the examples); each is built when first needed, so a rule that calls the
function itself (``transform_jvp`` calling ``transform``) batches to the same op. Only the
rules the user gave are batched: the other is derived by custom_op's transposition, as for
the original op.

Where the body cannot be traced at one example's shapes (it branches on its operands'
values, writes them into a NumPy array, calls C: the bodies that run on values), or the
call's rules branched on the values (its ``decided`` parameter), the op is applied example
by example (:func:`dualgpu.rules.batching_rules.loop_rule`): correct for every op, ``size``
equations instead of one.

Example::

    >>> @dg.custom_jvp
    ... def f(x):
    ...     return np.sin(x)
    >>> _ = f.defjvp(lambda p, t: (f(p[0]), np.cos(p[0]) * t[0]))
    >>> g = dg.trace(dg.vmap(dg.vmap(f)), np.ones((3, 4)))   # one custom op, not 12
"""
from __future__ import annotations

import threading

import numpy as np

from .. import lax
from ..base.cache import PROGRAMS, IdentityKey
from ..core.flags import Flag
from ..core.interpret import eval_graph
from ..core.ir import Aval
from ..core.trace import Tracer, trace_to_graph
from ..frontend.namespace import array_namespace, rebind_function
from ..rules import batching_rules as batching
from ..runtime.guards import cached_guarded
from ..transforms.vmap import batch_graph, elementwise_rule
from .custom_op import CustomOp, CustomPrimitive, aval_key, aval_of, custom_op, is_float_value
from .linearization import vjp
from .missing_cotangent import MissingCotangent

__all__ = ["custom_batching_rule"]

BATCHED = "custom op batched"  # the kind of its entries of the one cache
_COUNTER = iter(range(1, 1 << 62))
_BUILDING = threading.local()  # the keys of the batched ops being built in this thread


def custom_batching_rule(eqn, args, batched, size):
    """The batching rule of a (non-elementwise) custom op: one batched custom op, or the
    per-example loop where its body or rules cannot be batched."""
    prim = eqn.prim
    if prim.has(Flag.ELEMENTWISE):  # (a C expression): NumPy broadcasting batches it
        return elementwise_rule(eqn, args, batched, size)
    if eqn.params.get("decided"):  # its rules branched on values: per example
        return batching.loop_rule(eqn, args, batched, size)
    in_dims = tuple(0 if b else None for b in batched)
    avals = []
    for a, b in zip(args, batched):
        x = aval_of(a)
        avals.append(Aval(tuple(x.shape[1:]), x.dtype, x.weak) if b else x)
    xp = next(a._builder.xp for a in args if isinstance(a, Tracer)) if any(
        isinstance(a, Tracer) for a in args) else np
    key = (BATCHED, IdentityKey(prim._spec), in_dims, aval_key(avals), size,
           getattr(xp, "__name__", ""))
    spec = prim._spec
    building = _BUILDING.__dict__.setdefault("keys", set())
    if key in building:  # a body that applies the op itself (recursion): per example
        return batching.loop_rule(eqn, args, batched, size)
    building.add(key)
    try:
        op = cached_guarded(PROGRAMS, key, CustomOp(prim),  # (guards: what it reads)
                            lambda: _batched_op(prim, spec, in_dims, avals, size, xp))
    finally:
        building.discard(key)
    if op is None:  # a body that runs on values
        return batching.loop_rule(eqn, args, batched, size)
    out = op.prim.bind(*args)
    outs = list(out) if prim.multiple_results else [out]
    return outs, [True] * len(outs)


def _batched_op(prim, spec, in_dims, avals, size, xp):
    """The custom op of ``prim`` applied to ``size`` examples, or None if its body cannot
    be traced at one example's shapes."""
    ns = array_namespace(xp)
    impl = rebind_function(spec.impl)

    def body(*leaves):
        out = impl(ns, *leaves)
        return list(out) if spec.multiple_results else out

    try:
        graph, _ = trace_to_graph(body, avals, xp, name=f"{prim.name}_body")
    except Exception:  # it branches on values, writes them into an array, calls C...
        return None
    m = len(graph.outputs)
    batched, _ = batch_graph(graph, list(in_dims), size, out_dims=[0] * m)
    out_avals = [Aval(tuple(o.aval.shape), o.aval.dtype) for o in batched.outputs]
    multiple = spec.multiple_results

    def run(xp_, *args):
        outs = eval_graph(batched, args)
        return tuple(outs) if multiple else outs[0]

    rules = spec.rules
    shared = _Shared(prim, in_dims, avals, [Aval(tuple(a.shape[1:]), a.dtype)
                                            for a in out_avals], size, xp, multiple)
    shared.body = lambda *leaves: shared.one(eval_graph(batched, leaves))
    return custom_op(
        f"{prim.name}_vmap{next(_COUNTER)}", run, multiple_results=multiple,
        shape=lambda *a: list(out_avals) if multiple else out_avals[0],
        jvp=None if rules.user_jvp is None else _BatchedJvp(shared),
        vjp=None if rules.user_vjp is None else _BatchedVjp(shared),
        doc=f"{prim.name} batched over {size} examples (vmap)")


class _Shared:
    """What the batched rules of one batched op share: the original op and the batching."""

    def __init__(self, prim, in_dims, avals, out_avals, size, xp, multiple):
        self.prim, self.in_dims, self.avals = prim, in_dims, avals
        self.out_avals, self.size, self.xp, self.multiple = out_avals, size, xp, multiple
        self.graphs: dict = {}

    def outs(self, ans) -> list:
        return list(ans) if self.multiple else [ans]

    def one(self, outs: list):
        return tuple(outs) if self.multiple else outs[0]


class _BatchedJvp:
    """The JVP rule of a batched op: the original op's JVP rule, batched."""

    def __init__(self, shared: _Shared):
        self.s = shared
        self._dualgpu_functions = (shared.prim._spec.rules,)
        user = shared.prim._spec.rules.user_jvp
        # told which tangents are zero (None) where the original is (a converted closure)
        self.symbolic_zeros = getattr(user, "symbolic_zeros", False)
        # which operands are closed-over values (taking no tangent in reverse mode)
        self.closed_message = getattr(user, "closed_message", None)
        if hasattr(user, "body_vjp"):  # (a custom_jvp function)
            self.body_vjp = self._body_vjp

    def _body_vjp(self, g, primals):
        """The cotangents of the operands by differentiating the batched body: what serves
        a use of the op inside its own JVP rule (on the tangents, a linear use)."""
        _, pullback = vjp(self.s.body, *primals)
        return [c if is_float_value(p) else None for c, p in zip(pullback(g), primals)]

    def _graph(self, diff: tuple):
        s = self.s
        n, m = len(s.avals), len(s.out_avals)

        def pushforward(*args):
            primals, ts = args[:n], iter(args[n:])
            tangents = [next(ts) if i in diff else None for i in range(n)]
            _, t_out = s.prim.jvp(list(primals), tangents)
            return [np.zeros(a.shape, a.dtype) if t is None else t
                    for t, a in zip(s.outs(t_out), s.out_avals)]

        t_avals = [Aval(tuple(s.avals[i].shape), s.avals[i].dtype) for i in diff]
        graph, _ = trace_to_graph(pushforward, [*s.avals, *t_avals], s.xp,
                                  name=f"{s.prim.name}_jvp")
        dims = [*s.in_dims, *[s.in_dims[i] for i in diff]]
        return batch_graph(graph, dims, s.size, out_dims=[0] * m)[0]

    def __call__(self, primals, tangents, ans):
        s = self.s
        diff = tuple(i for i, (p, t) in enumerate(zip(primals, tangents))
                     if t is not None and is_float_value(p))
        graph = s.graphs.get(("jvp", diff))
        if graph is None:
            graph = s.graphs[("jvp", diff)] = self._graph(diff)
        outs = eval_graph(graph, [*primals, *[tangents[i] for i in diff]])
        return s.one([t if is_float_value(a) else None for t, a in zip(outs, s.outs(ans))])


class _BatchedVjp:
    """The VJP rule of a batched op: the original op's VJP rule, batched; the cotangent of
    an unbatched operand is summed over the examples."""

    def __init__(self, shared: _Shared):
        self.s = shared
        self._dualgpu_functions = (shared.prim._spec.rules,)
        # why a closed-over operand has no cotangent (a converted closure's)
        self.closed_message = getattr(shared.prim._spec.rules.user_vjp, "closed_message", None)

    def _graph(self):
        s = self.s
        n, m = len(s.avals), len(s.out_avals)
        missing: list = []

        def pullback(*args):
            g, primals, ans = args[:m], args[m:m + n], args[m + n:]
            cts = s.prim.vjp(s.one(list(g)), list(primals), s.one(list(ans)))
            out = []
            for i, ct in enumerate(cts):
                if ct is None or isinstance(ct, MissingCotangent):
                    missing.append(i)
                else:
                    out.append(ct)
            return out

        graph, _ = trace_to_graph(pullback, [*s.out_avals, *s.avals, *s.out_avals], s.xp,
                                  name=f"{s.prim.name}_vjp")
        dims = [0] * m + list(s.in_dims) + [0] * m
        return batch_graph(graph, dims, s.size, out_dims=[0] * len(graph.outputs))[0], missing

    def __call__(self, g, primals, ans):
        s = self.s
        hit = s.graphs.get("vjp")
        if hit is None:
            hit = s.graphs["vjp"] = self._graph()
        graph, missing = hit
        outs = iter(eval_graph(graph, [*s.outs(g), *primals, *s.outs(ans)]))
        cts = []
        for i, d in enumerate(s.in_dims):
            if i in missing:
                cts.append(None)
                continue
            ct = next(outs)
            cts.append(ct if d == 0 else lax.sum(ct, axis=0))
        return tuple(cts)


def install() -> None:
    """Make this module's rule the batching rule of every custom op."""
    CustomPrimitive.batching_rule = staticmethod(custom_batching_rule)


install()
