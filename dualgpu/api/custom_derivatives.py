"""JAX's ``custom_jvp`` and ``custom_vjp`` decorators: a Python function with derivative
rules of its own, registered as a custom op (:func:`dualgpu.custom.custom_op`) per set of
static (``nondiff_argnums``) arguments, each such op an entry of the one cache. A function
that returns a pytree of arrays is one op with an output per leaf, as in JAX: the function
runs once per call, the JVP rule gives every output's tangent at once and ``bwd`` gets the
whole cotangent pytree.

Example::

    >>> @custom_jvp
    ... def f(x):
    ...     return np.sin(x)
    >>> _ = f.defjvp(lambda primals, tangents: (np.sin(primals[0]), 2.0 * tangents[0]))
    >>> dg.grad(lambda x: np.sum(f(x)))(np.zeros(2))
    array([2., 2.])
"""
from __future__ import annotations

import functools
import inspect
import operator
import types
from collections.abc import Callable

import numpy as np

from ..base import tree as pytree
from ..base.cache import PROGRAMS, IdentityKey
from ..core.ir import Aval
from ..core.primitives import bump_registry_version
from ..core.substitution import substitute_tree
from ..core.trace import UNDECIDED, Concretize, Tracer, trace_to_graph
from ..errors import (
    ArgumentTypeError,
    DualgpuError,
    EscapedTracerError,
    MissingRuleError,
    ShapeMismatchError,
    TracerControlFlowError,
)
from ..frontend.namespace import rebind_function
from ..lax import zeros_like
from ..runtime.decisions import ValueTrace
from ..runtime.guards import collect_guards
from ..runtime.signature import static_key
from ..runtime.tracing import name_of
from . import differentiation
from .custom_closures import (
    closed_tracers,
    closure_converted,
    is_array,
    nondiff_closed,
    not_static,
)
from .custom_op import CustomOp, aval_key, aval_of, custom_op, is_float_value, is_value
from .linearization import vjp

__all__ = ["custom_jvp", "custom_vjp"]
CUSTOM_DERIVATIVE_OP = "custom_jvp/custom_vjp op"  # the kind of its entries of the one cache


_COUNTER = iter(range(1, 1 << 62))


class _CustomFunction:
    """What :class:`custom_jvp` and :class:`custom_vjp` share: the call, resolved to
    positional arguments, split into static ``nondiff_argnums`` and array operands, and
    applied as one custom op per (static values, operand structure)."""

    kind = "custom"
    closed = 0  # a closure-converted copy: its last ``closed`` arguments are closed over

    def __init__(self, fun: Callable, nondiff_argnums=(), nondiff_argnames=()):
        if not callable(fun):
            raise DualgpuError(f"{self.kind} expects a function, got {type(fun).__name__}")
        nums = (nondiff_argnums,) if isinstance(nondiff_argnums, int) else nondiff_argnums
        if not isinstance(nums, (tuple, list)) or not all(
                isinstance(i, int) and not isinstance(i, bool) for i in nums):
            raise DualgpuError(f"{self.kind}: nondiff_argnums must be an int or a tuple of "
                               f"ints, got {nondiff_argnums!r}")
        self.fun = fun
        self.nondiff_argnums = tuple(sorted(set(nums) | set(
            self._positions_of(nondiff_argnames))))
        self.__name__ = getattr(fun, "__name__", type(fun).__name__)
        self.__doc__ = getattr(fun, "__doc__", None)
        self.__wrapped__ = fun
        self._rules_version = 0  # bumped when rules are given: older ops are not reused

    @property
    def _dualgpu_functions(self) -> tuple:
        """The user's function and rules (what a cached program's guards follow)."""
        return tuple(getattr(self, a, None) for a in ("fun", "jvp", "fwd", "bwd"))

    def _positions_of(self, names) -> list[int]:
        """The positions of the parameters ``names`` (JAX's ``nondiff_argnames``)."""
        names = (names,) if isinstance(names, str) else tuple(names)
        if not names:
            return []
        params = [p.name for p in inspect.signature(self.fun).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        unknown = [n for n in names if n not in params]
        if unknown:
            raise ArgumentTypeError(f"{self.kind}: nondiff_argnames {tuple(unknown)} are not "
                                    f"positional parameters of {name_of(self.fun)} "
                                    f"({', '.join(params) or 'none'})")
        return [params.index(n) for n in names]

    def _rules_given(self) -> bool:
        raise NotImplementedError

    def _new_rules(self) -> None:
        """Rules given (again): no op or program built with earlier ones runs again (as a
        re-registered custom op, the cache is cleared)."""
        self._rules_version += 1
        if self._rules_version > 1:
            bump_registry_version()
            differentiation.clear_cache()

    def _rules(self, nondiff: tuple, tree) -> dict:
        raise NotImplementedError

    def __call__(self, *args, **kwargs):
        args, kwargs = substitute_tree((args, kwargs))  # a call inside a converted closure
        args = self._resolve(args, kwargs)
        if not self._rules_given():
            raise MissingRuleError(self._missing_rules())
        if not self.closed:  # traced values it closes over: extra operands (JAX's closures)
            closed = closed_tracers(self._closure_fns(), _CustomFunction)
            extra = substitute_tree(closed)  # (in a converted closure: the values it reads)
            if closed and all(not isinstance(v, Tracer) or v._builder.alive for v in extra):
                return self._converted(len(args), closed)(*args, *extra)
        nums = self._nondiff_positions(args)
        nondiff = tuple(args[i] for i in nums)
        for i, a in zip(nums, nondiff):
            if isinstance(a, np.generic):  # a NumPy scalar: hashable, keyed by value and dtype
                continue
            traced = [x for x in pytree.leaves(a) if isinstance(x, Tracer)]
            if self.kind == "custom_jvp" and (traced or any(map(is_array, pytree.leaves(a)))):
                return nondiff_closed(self, args, nums)  # JAX: closed over, gradient stopped
            if traced:  # JAX: an UnexpectedTracerError naming the custom function
                raise EscapedTracerError(f"{self.kind} function {self.__name__}: argument {i} "
                                         f"is in nondiff_argnums but is "
                                         f"{not_static(traced[0])}")
            if is_array(a):
                raise DualgpuError(f"{self.kind} function {self.__name__}: argument {i} is "
                                   f"in nondiff_argnums but is {not_static(a)}")
        diff_args = tuple(a for i, a in enumerate(args) if i not in nums)
        leaves, tree = pytree.flatten(diff_args)
        # the op registered for these static arguments: an entry of the one cache
        key = (CUSTOM_DERIVATIVE_OP, IdentityKey(self), self._rules_version, nums,
               tuple(static_key(a, []) for a in nondiff), tree)
        op, shape = PROGRAMS.get_or_build(key, lambda: self._register(nums, nondiff, tree))
        outer, shape.operands = shape.operands, leaves  # (a call inside its own body)
        try:
            out_tree, _ = shape.structure(*[aval_of(x) for x in leaves])
            if out_tree.is_leaf:
                return op(*leaves)
            if not out_tree.num_leaves:  # only None or empty containers: nothing to compute
                return pytree.unflatten(out_tree, [])
            # a pytree output: one op with an output per leaf, the pytree rebuilt here
            multi = PROGRAMS.get_or_build(
                (*key, out_tree), lambda: self._register_tree(op, shape, out_tree))
            return pytree.unflatten(out_tree, list(multi(*leaves)))
        finally:
            shape.operands = outer

    def _closure_fns(self) -> tuple:
        raise NotImplementedError

    def _converted(self, n: int, extra: list) -> _CustomFunction:
        """The closure-converted copy of this function for ``n`` arguments and the traced
        values ``extra`` (kept per function: repeated calls reuse its op)."""
        convs = self.__dict__.setdefault("_convs", {})
        key = (n, self._rules_version, tuple(id(t) for t in extra))
        conv = convs.get(key)
        if conv is None:
            if len(convs) > 16:
                convs.clear()
            conv = convs[key] = closure_converted(self, n, extra)
            conv.__dict__.pop("_convs", None)
        return conv

    def _resolve(self, args: tuple, kwargs: dict) -> tuple:
        """The call's arguments as positions, by the function's signature (defaults filled
        in), as JAX: a missing argument or a keyword-only one passed is a ``TypeError``."""
        try:
            sig = inspect.signature(self.fun)
        except (TypeError, ValueError):  # no signature (a builtin): positions as given
            if kwargs:
                raise ArgumentTypeError(f"{self.kind} function {self.__name__}: keyword "
                                        f"arguments {sorted(kwargs)} need a function with a "
                                        "signature") from None
            return args
        try:
            bound = sig.bind(*args, **kwargs)
            if kwargs:  # the positions before a keyword's: their defaults (not a ufunc's out)
                bound.apply_defaults()
            passed = [k for k in bound.kwargs if k in kwargs]
            if passed:
                raise TypeError("The following keyword arguments could not be resolved to "
                                f"positions: {', '.join(passed)}")
        except TypeError as e:
            raise ArgumentTypeError(
                f"The input arguments to the {self.kind}-decorated function {self.__name__} "
                "could not be resolved to positional-only arguments. Binding failed with the "
                f"error:\n{e}") from None
        return bound.args

    def _nondiff_positions(self, args: tuple) -> tuple:
        """The positions of the static arguments of this call."""
        n = len(args)
        nums = tuple(i % n for i in self.nondiff_argnums if -n <= i < n)
        if len(nums) != len(self.nondiff_argnums):
            raise DualgpuError(f"{self.kind} function {self.__name__}: nondiff_argnums "
                               f"{self.nondiff_argnums} out of range for {n} arguments")
        return nums

    def _register(self, nums: tuple, nondiff: tuple, tree) -> tuple[CustomOp, _TracedShape]:
        base = "".join(c if c.isalnum() else "_" for c in self.__name__)[:32] or "f"
        name = f"{self.kind}_{base}_{next(_COUNTER)}"
        merge = _Merge(nums, nondiff, tree)
        fun = self.fun

        def impl(xp, *leaves):
            return fun(*merge.args(leaves))

        shape = _TracedShape(fun, merge, self.kind, self.__name__)
        return custom_op(name, impl, shape=shape, **self._rules(nondiff, merge)), shape

    def _register_tree(self, op: CustomOp, shape: _TracedShape, out_tree) -> CustomOp:
        """The op of a function that returns a pytree ``out_tree``: one output per leaf;
        its rules see the whole pytree (the JVP rule's tangent pytree, ``bwd``'s cotangent
        pytree, as in JAX)."""
        fun, merge = self.fun, shape.merge

        def impl(xp, *leaves):
            return tuple(pytree.leaves(fun(*merge.args(leaves))))

        jvp, vjp = (self._rules(merge.nondiff, merge).get(k) for k in ("jvp", "vjp"))
        return custom_op(f"{op.prim.name}_tree", impl, multiple_results=True,
                         shape=lambda *avals: shape.structure(*avals)[1],
                         jvp=None if jvp is None else _TreeRule(jvp, out_tree),
                         vjp=None if vjp is None else _TreeRule(vjp, out_tree))

    def __repr__(self) -> str:
        return f"<dualgpu.{self.kind} of {self.__name__}>"

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        return types.MethodType(self, instance)


class _Merge:
    """The function's positional arguments from the op's operand leaves and the static
    nondiff values; ``split`` gives the differentiable arguments only (JAX's rule
    signatures)."""

    def __init__(self, nums: tuple, nondiff: tuple, tree):
        self.nums, self.nondiff, self.tree = nums, nondiff, tree

    def diff_args(self, leaves) -> tuple:
        return pytree.unflatten(self.tree, list(leaves))

    def args(self, leaves) -> tuple:
        diff = iter(self.diff_args(leaves))
        static = dict(zip(self.nums, self.nondiff))
        n = len(self.nums) + len(self.tree.children)
        return tuple(static[i] if i in static else next(diff) for i in range(n))


class _TracedShape:
    """The output's abstract value, from tracing the function on the operands' (cached per
    operand signature), and its pytree structure: the function returns an array or a pytree
    (tuple, list, dict, None) of arrays.

    A body that branches on its operands' values (``while err > tol:``), writes them into a
    NumPy array (``out[i] = x[j]``) or hands them to a C function (SuperLU's ``solve``), as
    autograd's primitives may, cannot be traced abstractly; it
    needs no guard either: the op runs the body on the values at every call (and checks its
    output's shape against this one). Its output's structure is that of a run on the values
    of the call being bound (``operands``: known when the call is eager or inside a trace
    that knows values, the derivative transforms'), else of its trace taking the branches of
    :class:`_Exits` (a call inside a derivative rule)."""

    def __init__(self, fun, merge: _Merge, kind: str, name: str):
        self.fun, self.merge, self.kind, self.name = fun, merge, kind, name
        self._seen: dict = {}
        self.operands: list | None = None  # the leaves of the call being bound

    def __call__(self, *avals) -> Aval:
        """The output's abstract value (the op of a function that returns one array)."""
        return self.structure(*avals)[1][0]

    def structure(self, *avals) -> tuple:
        """The output's pytree structure and its leaves' abstract values."""
        key = aval_key(avals)
        hit = self._seen.get(key)
        if hit is not None and hit[1].hold():  # (guarded: a global the body reads, changed,
            return hit[0]                       # may change the shape: K = 3 in x[:K])
        before = collect_guards(self.fun)
        holder: list = []

        def run(*leaves):
            out = rebind_function(self.fun)(*self.merge.args(leaves))
            holder.append(out)
            outs, tree = self._leaves_of(out)
            holder.append(tree)
            return outs

        plain = [Aval(tuple(a.shape), a.dtype, a.weak) for a in avals]  # a Python number: weak
        try:
            graph, _ = trace_to_graph(run, plain, np, name=self.name)
        except Exception as e:  # it branches on values, writes them into an array, calls C...
            holder.clear()
            values = _values(self.operands) if self.operands is not None else None
            if values is not None:  # run it on them, as the op runs it
                outs, tree = self._leaves_of(self.fun(*self.merge.args(values)))
                res = (tree, [Aval(tuple(np.shape(o)), np.result_type(o)) for o in outs])
                self._seen[key] = res, collect_guards(self.fun, before)
                return res
            if not isinstance(e, TracerControlFlowError):
                raise
            try:
                graph, _ = trace_to_graph(run, plain, np, name=self.name, concretize=_Exits())
            except Exception as e:
                if isinstance(e, DualgpuError):
                    raise
                raise TracerControlFlowError(
                    f"{self.kind} function {self.name} branches on its operands' values, "
                    "which are not known where it is called (under jit, or in a derivative "
                    "rule): the trace for its output's shape took every loop's exit and "
                    f"raised {type(e).__name__}: {e}") from e
        res = (holder[-1], [Aval(tuple(o.aval.shape), o.aval.dtype) for o in graph.outputs])
        self._seen[key] = res, collect_guards(self.fun, before)
        return res

    def _leaves_of(self, out) -> tuple:
        """The leaves and structure of the function's output ``out``, checked."""
        outs, tree = pytree.flatten(out)
        bad = [x for x in outs if not is_value(x)]
        if bad:
            raise DualgpuError(
                f"{self.kind} function {self.name} returns a {type(out).__name__} with "
                f"a {type(bad[0]).__name__} leaf: its output is an array or a pytree "
                "(tuple, list, dict, None) of arrays")
        return outs, tree


def _values(leaves: list) -> list | None:
    """The values of ``leaves`` (arrays, numbers, tracers of a trace that knows values), or
    None if one is not known."""
    out = []
    for leaf in leaves:
        if isinstance(leaf, Tracer):
            hook = leaf._builder.concretize
            leaf = hook.value_of(leaf) if isinstance(hook, ValueTrace) else None
            if leaf is None:
                return None
        out.append(leaf)
    return out


class _Exits(Concretize):
    """The branches of a body traced for its output's shape where its operands' values are
    not known: every ``bool()`` is False (a ``while`` loop's exit), at most
    :attr:`LIMIT` of them; any other conversion is refused as in every abstract trace."""

    LIMIT = 10_000

    def begin(self, builder, inputs) -> None:
        self.answered = 0

    def __call__(self, tracer: Tracer, kind: str):
        if kind != "bool" or self.answered >= self.LIMIT:
            return UNDECIDED
        self.answered += 1
        return False


class _JvpRule:
    """custom_op's ``jvp(primals, tangents, ans)`` from JAX's ``jvp(*nondiff, primals,
    tangents) -> (primal_out, tangent_out)``."""

    @property
    def _dualgpu_functions(self) -> tuple:  # the user's (followed by guards)
        return (self.owner,)

    def __init__(self, owner, nondiff: tuple, merge: _Merge):
        self.owner, self.nondiff, self.merge = owner, nondiff, merge

    def body(self, *leaves):
        """The function on the op's operands: its VJP serves a use of the op inside this
        rule (on the tangents, a linear use), as JAX inlines the function there."""
        return rebind_function(self.owner.fun)(*self.merge.args(leaves))

    def body_vjp(self, g, primals):
        return _body_vjp(self.body, g, primals)

    @property
    def symbolic_zeros(self) -> bool:
        """A closure-converted function's rule is told which tangents are zero (None)."""
        return bool(self.owner.closed)

    def closed_message(self, i: int) -> str | None:
        """Why input ``i`` of the op takes no tangent, if it is a closed-over value (reverse
        mode, transposing this rule, perturbs the others only)."""
        if not self.owner.closed or i < self.merge.tree.num_leaves - self.owner.closed:
            return None
        return _DIFFERENTIATED.format(self.owner.kind, self.owner.__name__)

    def __call__(self, primals, tangents, ans, out_tree=None):
        k = self.owner.closed
        if k:
            if any(t is not None for t in tangents[len(tangents) - k:]):
                raise EscapedTracerError(_DIFFERENTIATED.format(self.owner.kind,
                                                               self.owner.__name__))
            tangents = [zeros_like(p) if t is None and is_float_value(p) else t
                        for p, t in zip(primals, tangents)]
        rule = rebind_function(self.owner.jvp)
        res = rule(*self.nondiff, self.merge.diff_args(primals), self.merge.diff_args(tangents))
        if not isinstance(res, (tuple, list)) or len(res) != 2:
            raise ArgumentTypeError(
                f"the jvp rule {name_of(self.owner.jvp)} of custom_jvp function "
                f"{self.owner.__name__} returned a "
                f"{type(res).__name__}: it returns a pair (primal_out, tangent_out)")
        if out_tree is None:
            _check_tangent_shape(res[1], ans, "", self.owner)
            return res[1]
        p_tree, (t_leaves, t_tree) = pytree.structure(res[0]), pytree.flatten(res[1])
        if p_tree != out_tree or t_tree != out_tree:  # as JAX says it
            raise ArgumentTypeError(
                f"Custom JVP rule {name_of(self.owner.jvp)} for function "
                f"{self.owner.__name__} must produce primal and tangent outputs with equal "
                f"container (pytree) structures, but got {p_tree} and {t_tree} respectively"
                + ("" if p_tree == out_tree else f" (the function's output is {out_tree})"))
        for t, a, path in zip(t_leaves, ans, pytree.leaf_paths(out_tree)):
            _check_tangent_shape(t, a, path, self.owner)
        # an integer output's tangent is a float0 zero in JAX: none here
        return tuple(t if is_float_value(a) else None for t, a in zip(t_leaves, ans))


def _check_tangent_shape(t, ans, path: str, owner) -> None:
    """JAX's error for a tangent array of another shape than its output (it was broadcast)."""
    number = isinstance(t, (int, float, complex)) and not isinstance(t, np.generic)
    if is_value(t) and not number and aval_of(t).shape != aval_of(ans).shape:
        raise ShapeMismatchError(
            f"Custom JVP rule {name_of(owner.jvp)} for function {owner.__name__} must produce "
            f"primal and tangent outputs with corresponding shapes and dtypes. Expected "
            f"{_type_word(ans)} (the primal output{path and ' ' + path}, shape "
            f"{tuple(aval_of(ans).shape)}) but got {_type_word(t)} (shape "
            f"{tuple(aval_of(t).shape)}) for the tangent output")


_DIFFERENTIATED = (
    "{0} function {1} closes over a traced value (read from an enclosing function, not "
    "passed to it) that is differentiated: its rule says nothing about that value's "
    "derivative, as JAX refuses it (UnexpectedTracerError). Pass the value as an argument.")


class _TreeRule:
    """The rule of the op of a function returning a pytree ``out_tree``: the function's
    rule told the output's structure."""

    @property
    def _dualgpu_functions(self) -> tuple:  # the user's (followed by guards)
        return (self.rule,)

    def __init__(self, rule, out_tree):
        self.rule, self.out_tree = rule, out_tree
        self.symbolic_zeros = getattr(rule, "symbolic_zeros", False)
        self.closed_message = getattr(rule, "closed_message", None)
        if hasattr(rule, "body"):
            body = lambda *leaves: tuple(pytree.leaves(rule.body(*leaves)))  # noqa: E731
            self.body_vjp = lambda g, primals: _body_vjp(body, g, tuple(primals))

    def __call__(self, *args):
        return self.rule(*args, out_tree=self.out_tree)


def _body_vjp(body, g, primals) -> list:
    """The cotangents of a function's operands, by differentiating its body."""
    _, pullback = vjp(body, *primals)
    return [c if is_float_value(p) else None for c, p in zip(pullback(g), primals)]


class _VjpRule:
    """custom_op's ``vjp(g, primals, ans)`` from JAX's ``fwd(*args) -> (out, residuals)``
    and ``bwd(*nondiff, residuals, g) -> cotangents`` (one per differentiable argument,
    each a pytree like it or None for zero)."""

    @property
    def _dualgpu_functions(self) -> tuple:  # the user's (followed by guards)
        return (self.owner,)

    def __init__(self, owner, nondiff: tuple, merge: _Merge):
        self.owner, self.nondiff, self.merge = owner, nondiff, merge

    def closed_message(self, i: int) -> str | None:
        """Why input ``i`` of the op has no cotangent, if it is a closed-over value."""
        if not self.owner.closed or i < self.merge.tree.num_leaves - self.owner.closed:
            return None
        return _DIFFERENTIATED.format(self.owner.kind, self.owner.__name__)

    def __call__(self, g, primals, ans, out_tree=None):
        name = self.owner.__name__
        res = rebind_function(self.owner.fwd)(*self.merge.args(primals))
        if not isinstance(res, (tuple, list)) or len(res) != 2:
            raise ArgumentTypeError(f"the fwd rule of custom_vjp function {name} returned a "
                               f"{type(res).__name__}: it returns a pair (out, residuals)")
        if out_tree is not None:  # g: the cotangent of every output leaf
            tree = pytree.structure(res[0])
            if tree != out_tree:
                raise ShapeMismatchError(
                    f"the fwd rule of custom_vjp function {name} returned an output of "
                    f"structure {tree}, but the function's output has structure {out_tree}")
            g = pytree.unflatten(out_tree, list(g))
        cts = rebind_function(self.owner.bwd)(*self.nondiff, res[1], g)
        diff_args = self.merge.diff_args(primals)
        if not isinstance(cts, (tuple, list)) or len(cts) != len(diff_args):
            raise ArgumentTypeError(
                f"the bwd rule of custom_vjp function {name} returned {cts!r:.60}: it returns "
                f"a tuple of {len(diff_args)} cotangent(s), one per differentiable argument")
        out: list = []
        for i, (ct, arg) in enumerate(zip(cts, diff_args)):
            ct_leaves = _cotangent_leaves(ct, arg)
            if ct_leaves is None:
                raise ShapeMismatchError(
                    f"the bwd rule of custom_vjp function {name} returned a cotangent of "
                    f"structure {pytree.structure(ct)} for differentiable argument {i}, "
                    f"which has structure {pytree.structure(arg)}")
            paths = pytree.leaf_paths(pytree.structure(arg))
            for c, a, path in zip(ct_leaves, pytree.leaves(arg), paths):
                _check_cotangent_shape(c, a, f"output[{i}]{path}", name)
            out += ct_leaves
        if self.owner.closed:  # no cotangent for a closed-over value: needing one raises
            out[len(out) - self.owner.closed:] = [None] * self.owner.closed
        return tuple(out)


def _type_word(x) -> str:
    a = aval_of(x)
    return f"{np.dtype(a.dtype).name}[{','.join(str(n) for n in a.shape)}]"


def _check_cotangent_shape(ct, arg, where: str, name: str) -> None:
    """JAX's error for a cotangent whose shape is not its argument's (one that broadcasts to
    it is summed down by the custom op)."""
    if ct is None or not is_value(ct):
        return
    src, dst = tuple(aval_of(ct).shape), tuple(aval_of(arg).shape)
    if len(src) <= len(dst) and all(s in (d, 1) for s, d in zip(reversed(src), reversed(dst))):
        return
    raise ShapeMismatchError(
        "Custom VJP bwd rule must produce an output with the same shape/dtypes as the args "
        f"tuple of the primal function. At {where} the bwd rule attached to {name} produced "
        f"an output of type {_type_word(ct)} corresponding to an input of type "
        f"{_type_word(arg)}")


def _cotangent_leaves(ct, arg) -> list | None:
    """The leaves of the cotangent ``ct`` of ``arg``, a None anywhere in ``ct`` standing for
    the zeros of that whole subtree of ``arg`` (as JAX); None where the structures differ."""
    if ct is None:
        return [zeros_like(a) if is_float_value(a) else None for a in pytree.leaves(arg)]
    a_parts, c_parts = pytree.node_parts(arg), pytree.node_parts(ct)
    if a_parts is None:
        return [ct] if c_parts is None else None
    if c_parts is None or c_parts[:2] != a_parts[:2] or len(c_parts[2]) != len(a_parts[2]):
        return None
    out: list = []
    for c, a in zip(c_parts[2], a_parts[2]):
        leaves = _cotangent_leaves(c, a)
        if leaves is None:
            return None
        out += leaves
    return out


class custom_jvp(_CustomFunction):
    """JAX's ``custom_jvp``: a function with its own JVP rule, built on :func:`custom_op`.

    Decorate the function, then give the rule with ``f.defjvp(rule)``: ``rule(primals,
    tangents)`` returns ``(f(*primals), tangent_out)`` (with ``nondiff_argnums``, the
    static arguments come first: ``rule(*nondiff, primals, tangents)``). The rule must be
    linear in the tangents: reverse mode (``grad``, ``vjp``) transposes it, and ``hvp``
    (forward over reverse) differentiates that transpose, so it is exact when the rule is
    written with differentiable functions of the primals. The function returns an array or
    a pytree of arrays (the rule's tangent output then has the same structure);
    its arguments may be pytrees of arrays.

    Example::

        >>> @dg.custom_jvp
        ... def log1pexp(x):
        ...     return np.log1p(np.exp(x))
        >>> @log1pexp.defjvp
        ... def log1pexp_jvp(primals, tangents):
        ...     (x,), (x_dot,) = primals, tangents
        ...     return log1pexp(x), x_dot / (1 + np.exp(-x))   # stable at large x
        >>> dg.grad(lambda x: np.sum(log1pexp(x)))(np.array([0.0, 100.0]))
        array([0.5, 1. ])
    """

    kind = "custom_jvp"

    def __init__(self, fun: Callable, nondiff_argnums=(), nondiff_argnames=()):
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.jvp: Callable | None = None

    def defjvp(self, jvp: Callable) -> Callable:
        """Set the JVP rule (usable as a decorator); returns the rule."""
        if not callable(jvp):
            raise DualgpuError(f"{self.__name__}.defjvp expects a function, got "
                               f"{type(jvp).__name__}")
        self.jvp = jvp
        self._new_rules()
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """JAX's ``defjvps``: one rule per argument, ``jvp_i(tangent_i, primal_out,
        *primals)`` its part of the output tangent, a pytree like the output (None: the
        output does not depend on it); the output tangent is their sum, leaf by leaf."""
        def jvp(primals, tangents):
            out = self(*primals)
            parts = [rule(t, out, *primals) for rule, t in zip(jvps, tangents)
                     if rule is not None]
            if not parts:
                return out, pytree.tree_map(zeros_like, out)
            return out, pytree.tree_map(lambda *ts: functools.reduce(operator.add, ts),
                                        *parts)
        jvp.__name__ = f"{self.__name__}_jvps"
        self.defjvp(jvp)

    def _rules_given(self) -> bool:
        return self.jvp is not None

    def _closure_fns(self) -> tuple:
        return (self.fun, self.jvp)

    def _missing_rules(self) -> str:
        return (f"custom_jvp function {self.__name__} has no JVP rule yet: give it with "
                f"@{self.__name__}.defjvp before calling it")

    def _rules(self, nondiff, merge) -> dict:
        return {"jvp": _JvpRule(self, nondiff, merge)}


class custom_vjp(_CustomFunction):
    """JAX's ``custom_vjp``: a function with its own reverse rule, built on
    :func:`custom_op`.

    Decorate the function, then ``f.defvjp(fwd, bwd)``: ``fwd(*args)`` returns ``(f(*args),
    residuals)`` and ``bwd(residuals, g)`` a tuple of cotangents, one per differentiable
    argument (a pytree like it, or None for zero); with ``nondiff_argnums`` the static
    arguments come first: ``bwd(*nondiff, residuals, g)``. Unlike JAX, forward mode works
    too: ``jvp`` transposes the (linear) ``bwd``, and ``hvp`` differentiates ``fwd`` and
    ``bwd``, so it is exact when they are written with differentiable functions of the
    primals. The function returns an array or a pytree of arrays (``bwd``'s ``g`` then has
    the same structure).

    Example::

        >>> @dg.custom_vjp
        ... def clip_gradient(x):
        ...     return x
        >>> clip_gradient.defvjp(lambda x: (x, None),
        ...                      lambda res, g: (np.clip(g, -1.0, 1.0),))
        >>> dg.grad(lambda x: np.sum(3.0 * clip_gradient(x)))(np.array([1.0, 2.0]))
        array([1., 1.])
    """

    kind = "custom_vjp"

    def __init__(self, fun: Callable, nondiff_argnums=(), nondiff_argnames=()):
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        """Set the forward and backward rules."""
        for what, rule in (("fwd", fwd), ("bwd", bwd)):
            if not callable(rule):
                raise DualgpuError(f"{self.__name__}.defvjp: {what} must be a function, got "
                                   f"{type(rule).__name__}")
        self.fwd, self.bwd = fwd, bwd
        self._new_rules()

    def _rules_given(self) -> bool:
        return self.fwd is not None

    def _closure_fns(self) -> tuple:
        return (self.fun, self.fwd, self.bwd)

    def _missing_rules(self) -> str:
        return (f"custom_vjp function {self.__name__} has no rules yet: give them with "
                f"{self.__name__}.defvjp(fwd, bwd) before calling it")

    def _rules(self, nondiff, merge) -> dict:
        return {"vjp": _VjpRule(self, nondiff, merge)}
