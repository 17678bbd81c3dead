"""A function's linear maps at a point: ``jvp`` (forward), ``linearize`` (its JVP with the
point fixed), ``vjp`` (the pullback) and ``linear_transpose`` (the transpose of a linear
function), as JAX's. Each is a transform of :mod:`dualgpu.runtime` (traced once per call
signature, cached, inlined when called on traced values).

Example::

    >>> y, pullback = dg.vjp(lambda x: x ** 2, np.array([1.0, 3.0]))
    >>> pullback(np.ones(2))
    (array([2., 6.]),)
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from ..backends import array_backend
from ..base import tree as pytree
from ..core.flags import Flag
from ..core.interpret import eval_graph
from ..core.ir import Aval, Graph
from ..core.trace import Tracer, current_builder
from ..errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    ShapeMismatchError,
    TracerControlFlowError,
)
from ..frontend.numpy.random import SameDraws, redraw_in_trace
from ..runtime.checks import check_alive, diff_flags, is_integer_like
from ..runtime.program_cache import LinearizedCompiled, VjpCompiled
from ..runtime.signature import FLOAT0, Signature, check_plain_values
from ..runtime.tracing import Traced, name_of, with_aux
from ..runtime.transformed import Transformed
from ..transforms import jvp_graph, simplify, vjp_graph
from ..tree_util import Partial
from .differentiation import eval_shape, jit

__all__ = ["jvp", "linear_transpose", "linearize", "vjp"]


class _Jvp(Transformed):
    """``(f(*primals), J·tangents)``: every leaf of every primal is differentiated."""

    kind = "jvp"
    allow_int = True  # an integer primal takes a float0 tangent (JAX's rule)

    def split(self, args):
        return args[0], args[1]

    def extra_inputs(self, sig, tangents):
        return self._directions(sig, tuple(tangents), "tangent")

    def build(self, traced, sig):
        main, aux, tree, aux_tree = traced.split_aux(self.has_aux, self.__name__)
        return with_aux(jvp_graph(main, diff_flags(sig, main)), aux), (tree, aux_tree)

    def finish(self, compiled, sig, outs):
        tree, aux_tree = compiled.trees
        n = tree.num_leaves
        out = pytree.unflatten(tree, outs[:n])
        # an integer or bool output has a float0 tangent, as in JAX
        tangents = [np.zeros(np.shape(t), dtype=FLOAT0) if is_integer_like(o) else t
                    for o, t in zip(outs[:n], outs[n:2 * n])]
        tangent = pytree.unflatten(tree, tangents)
        if self.has_aux:
            return out, tangent, pytree.unflatten(aux_tree, outs[2 * n:])
        return out, tangent


class _Linearize(_Jvp):
    """``linearize``'s ``f_jvp`` program: the jvp's tangents only (the outputs' and aux's
    part left out, and what only they read: their closed-over arrays are not copied),
    compiled by :class:`~dualgpu.runtime.program_cache.LinearizedCompiled`, whose inputs
    take copies of the arrays the function closed over; made once, at ``linearize``, and
    run by :class:`_Linearized` (never called as a transform)."""

    kind = "linearize"
    program_type = LinearizedCompiled

    def build(self, traced, sig):
        main, _, tree, _ = traced.split_aux(self.has_aux, self.__name__)
        jvp = jvp_graph(main, diff_flags(sig, main))
        n = tree.num_leaves
        tangents = Graph(jvp.inputs, jvp.outputs[n:2 * n], jvp.eqns, name=jvp.name,
                         input_names=jvp.input_names, xp=jvp.xp)
        # an integer or bool output has a float0 tangent, as in JAX
        integer = tuple(is_integer_like(o) for o in main.outputs)
        return simplify(tangents), (tree, integer, len(jvp.inputs) - len(main.inputs))

    def tangents(self, trees, outs: list):
        """The tangent of the output, shaped: the program's outputs, float0 zeros for an
        integer output."""
        tree, integer, _ = trees
        return pytree.unflatten(tree, [np.zeros(np.shape(t), dtype=FLOAT0) if i else t
                                       for t, i in zip(outs, integer)])


class _Vjp(Transformed):
    """The forward program and the pullback program ``(primals, output cotangents) -> input
    cotangents``; :meth:`pair` runs the forward one and returns a pullback."""

    kind = "vjp"
    program_type = VjpCompiled
    allow_int = True  # an integer primal gets a float0 cotangent (JAX's rule)

    def build(self, traced, sig):
        main, aux, tree, aux_tree = traced.split_aux(self.has_aux, self.__name__)
        # an integer or bool output takes a float0 cotangent, as in JAX: it carries nothing,
        # so the pullback is that of the floating-point outputs
        inexact = [o for o in main.outputs if o.dtype.kind in "fc"]
        differentiated = Graph(main.inputs, inexact, main.eqns, name=main.name,
                               input_names=main.input_names, xp=main.xp)
        pullback = vjp_graph(differentiated, diff_flags(sig, main))
        pullback.outputs = pullback.outputs[len(inexact):]  # the cotangents only
        forward = with_aux(main, aux)
        return (forward, simplify(pullback)), (tree, aux_tree)

    def pair(self, sig: Signature) -> tuple:
        """``(out, pullback)`` (``(out, pullback, aux)`` with ``has_aux``) for the primals of
        ``sig``: compiled and cached, or inlined into the enclosing trace."""
        graphs, trees, inputs, program = deferred(self, sig)
        if program is None:
            fwd, pullback_graph, pullback_exe = eval_graph(graphs[0], inputs), graphs[1], None
        else:
            program = cast(VjpCompiled, program)
            fwd, pullback_graph, pullback_exe = (program.exe(*inputs), program.pullback.graph,
                                                 program.pullback)
            # the pullback is the derivative here: it holds the values of now, not arrays
            # the caller (or a global the function reads) may change in place before it runs
            inputs = held_residuals(sig, inputs, program)
        tree, aux_tree = trees
        outs = fwd[:tree.num_leaves]
        pullback = _pullback(sig, tree, outs, inputs, pullback_graph, pullback_exe,
                             f"pullback of {name_of(self.fn)}")
        out = pytree.unflatten(tree, outs)
        if self.has_aux:
            return out, pullback, pytree.unflatten(aux_tree, fwd[tree.num_leaves:])
        return out, pullback


def deferred(t: Transformed, sig: Signature) -> tuple[Any, Any, list, Any]:
    """``(graphs, trees, inputs, program)`` of a derivative made now to run later (a
    pullback, an ``f_jvp``): inside a trace, ``t``'s graphs built for it and their inputs
    there (the arguments, the values of the enclosing trace the function read, its draws),
    ``program`` None; else ``t``'s cached program for ``sig`` and its inputs (the arguments
    and the draws of now)."""
    if sig.traced or current_builder() is not None:
        check_alive(sig.inputs, t.__name__)
        captured: list = []
        traced = Traced(t.fn, sig, captured)
        graphs, trees = t.build(traced, sig)
        return graphs, trees, (list(sig.inputs) + captured
                               + redraw_in_trace(traced.draws, sig.leaves)), None
    program = t.compiled(sig)
    return program.graph, program.trees, list(sig.inputs) + program.drawn(sig), program


def held_residuals(sig: Signature, inputs: list, program) -> list:
    """The residuals of a derivative made now to run later from ``program``'s inputs
    (:func:`deferred`): copies of the arguments (:func:`held`; the random draws after them
    are the call's own arrays) and of the arrays the function closed over
    (:meth:`~dualgpu.runtime.program_cache.Compiled.captured_now`), the values of now, not
    arrays the caller (or a global the function reads) may change in place before it runs."""
    n = len(sig.inputs)
    return [held(x) for x in inputs[:n]] + inputs[n:] + program.captured_now()


def _pullback(sig: Signature, tree, outs: list, inputs: list, graph: Graph, exe,
              name: str = "pullback") -> Partial:
    """``pullback(cotangent)``: the pullback program on ``inputs`` and the cotangent leaves,
    run by ``exe``, or evaluated (into the enclosing trace) when there is no ``exe`` or a
    value is traced. A :class:`~dualgpu.tree_util.Partial`, as in JAX: its leaves are
    ``inputs`` (the residuals), so it can be passed to and returned from ``dg.jit``."""
    return Partial(_Pullback(sig, tree, outs, graph, exe, name), list(inputs))


class _Deferred:
    """The static part of a derivative made to run later (a pullback, an ``f_jvp``): its
    program, run by ``exe`` on the residuals (the leaves of the :class:`Partial` that calls
    it) and the directions of the call, or evaluated (into the enclosing trace) when there
    is no ``exe`` or a value is traced. Holds no array of the call and no tracer."""

    __slots__ = ("graph", "exe", "__name__")

    def __init__(self, graph: Graph, exe, name: str):
        self.graph, self.exe, self.__name__ = graph, exe, name

    def run(self, residuals: list, directions: list) -> tuple[list, bool]:
        """The program's outputs, and whether ``exe`` ran it."""
        if self.exe is None or any(isinstance(c, Tracer) for c in (*residuals, *directions)):
            return eval_graph(self.graph, list(residuals) + directions), False
        return self.exe(*residuals, *directions), True


def _kept(sig: Signature) -> Signature:
    """What a derivative made to run later keeps of its call's signature to read its
    directions and shape its results: the layout, with the inputs' avals for the inputs
    (a sparse argument's signature as it is)."""
    if sig.sparse:
        return sig
    layout = sig.layout()
    layout.inputs = list(sig.avals)  # the shapes and dtypes the directions are checked by
    return layout


class _Pullback(_Deferred):
    """The static part of a pullback: its program and how to read a cotangent and shape the
    cotangents it returns."""

    __slots__ = ("sig", "tree", "out_avals")

    def __init__(self, sig: Signature, tree, outs: list, graph: Graph, exe, name: str):
        super().__init__(graph, exe, name)
        self.sig = sig if sig.sparse else sig.layout()  # a layout keeps no values
        self.tree = tree
        self.out_avals = [Aval(tuple(o.shape), np.dtype(o.dtype)) for o in outs]

    def __call__(self, residuals: list, *cotangent):
        if len(cotangent) != 1:
            raise ArgumentTypeError(f"{self.__name__} takes one cotangent (shaped like the "
                                    f"output, a tuple for several outputs), got "
                                    f"{len(cotangent)} arguments")
        sig = self.sig
        cts = _cotangents(cotangent[0], self.tree, self.out_avals, sig)
        res, repackage = self.run(residuals, cts)
        return tuple(sig.per_argument(res, a, repackage) for a in range(len(sig.arg_trees)))


class _Linearized(_Deferred):
    """The static part of ``linearize``'s ``f_jvp``: its program (the jvp's tangents, made
    at ``linearize``: a function that reads another value later does not change it) and
    how to read the tangents (``lin``) and shape the output's tangent (``trees``)."""

    __slots__ = ("lin", "sig", "trees")

    def __init__(self, lin: _Linearize, sig: Signature, trees, graph: Graph, exe, name: str):
        super().__init__(graph, exe, name)
        self.lin, self.sig, self.trees = lin, _kept(sig), trees

    def __call__(self, residuals: list, *tangents):
        n = len(self.sig.arg_trees)
        if len(tangents) != n:
            raise ShapeMismatchError(f"the {self.__name__} takes one tangent per primal: "
                                     f"{n}, got {len(tangents)}")
        outs, _ = self.run(residuals, self.lin.extra_inputs(self.sig, tangents))
        return self.lin.tangents(self.trees, outs)


def _zero_tangent(leaf):
    """A zero tangent for a primal's leaf: float0 for an integer or bool one (JAX's)."""
    if np.result_type(leaf).kind in "fc":
        return leaf * 0 if isinstance(leaf, (float, complex)) else np.zeros_like(leaf)
    return np.zeros(np.shape(leaf), FLOAT0)


def held(x):
    """``x`` as a deferred derivative holds it: a copy of a NumPy or CuPy array or a sparse
    matrix (the caller may change theirs in place before the pullback or ``f_jvp`` runs:
    JAX's arrays cannot change), anything else as it is (numbers, tracers).

    Example::

        >>> x = np.ones(2)
        >>> _, pullback = dg.vjp(lambda x: np.sum(x ** 2), x)
        >>> x[:] = 5.0
        >>> pullback(1.0)
        (array([2., 2.]),)
    """
    return x.copy() if array_backend(x) is not None else x


def jvp(fn: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False):
    """Forward mode: ``(f(*primals), J·tangents)``; each tangent has its primal's structure.
    With ``has_aux=True``, ``f`` returns ``(out, aux)`` and the result is
    ``(out, out_tangent, aux)``.

    Example::

        >>> dg.jvp(np.sin, (np.zeros(2),), (np.ones(2),))
        (array([0., 0.]), array([1., 1.]))
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise ShapeMismatchError(
            "jvp takes the primals and the tangents as tuples: jvp(f, (x,), (t,)), got "
            f"{type(primals).__name__} and {type(tangents).__name__}")
    if len(primals) != len(tangents) or type(primals) is not type(tangents):
        raise ShapeMismatchError(  # JAX: the same tree structure, both tuples or both lists
            f"jvp got {len(primals)} primals but {len(tangents)} tangents, in a "
            f"{type(primals).__name__} and a {type(tangents).__name__}; they must have the "
            "same tree structure: give both as tuples "
            "(or both as lists), one tangent per primal")
    t = _Jvp(fn, argnums=tuple(range(len(primals))), has_aux=has_aux)
    return t(tuple(primals), tuple(tangents))


def linearize(fn: Callable, *primals, has_aux: bool = False):
    """JAX's ``linearize``: ``(f(*primals), f_jvp)``, where ``f_jvp(*tangents)`` is the
    Jacobian of ``f`` at ``primals`` applied to ``tangents`` (one per primal, each with its
    primal's structure): the ``jvp`` of ``f`` with the point fixed. ``f_jvp`` runs one
    program, the jvp's tangents, made at this call on copies of the point and of the
    arrays ``f`` closed over (the derivative here, as JAX's: changing them later, or what
    ``f`` reads, does not change it), so it is cheap to call again.
    With ``has_aux=True``, ``f`` returns ``(out, aux)`` and the result is
    ``(out, f_jvp, aux)``.

    Example::

        >>> y, f_jvp = dg.linearize(np.sin, np.zeros(2))
        >>> y, f_jvp(np.array([1.0, 2.0]))
        (array([0., 0.]), array([1., 2.]))
    """
    argnums = tuple(range(len(primals)))
    drawn = SameDraws()  # random draws: f_jvp's are those of the value
    with drawn:
        try:
            out = jit(fn)(*primals)
        except TracerControlFlowError:  # a branch on the values: the jvp traces on them
            t = _Jvp(fn, argnums=argnums, has_aux=has_aux)
            value = t(tuple(primals), pytree.tree_map(_zero_tangent, tuple(primals)))
            out = (value[0], value[2]) if has_aux else value[0]
        if has_aux and not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise ArgumentTypeError(f"linearize of {name_of(fn)} has has_aux=True, so the "
                                    "function must return a pair (a two-element tuple "
                                    "(output, aux))")
        lin = _Linearize(fn, argnums=argnums, has_aux=has_aux)
        f_jvp = _f_jvp(lin, tuple(primals))
    if has_aux:
        out, aux = out
        return out, f_jvp, aux
    return out, f_jvp


def _f_jvp(lin: _Linearize, primals: tuple) -> Partial:
    """``linearize``'s ``f_jvp``: its program (:class:`_Linearize`), made now, on the
    residuals of now (copies of the point and of the arrays the function closed over, the
    random draws of the value: called in its :class:`SameDraws`), or built into the
    enclosing trace."""
    sig = lin._signature(primals, {})  # (Dask arrays: refused by dg.jit, for the value)
    graph, trees, inputs, program = deferred(lin, sig)
    if program is not None:  # (a number of the point is an input as a 0-d array)
        inputs = held_residuals(sig, inputs, program)
    return Partial(_Linearized(lin, sig, trees, graph, program and program.exe,
                               f"linearization of {name_of(lin.fn)}"), inputs)


def vjp(fn: Callable, *primals, has_aux: bool = False):
    """Reverse mode: ``(f(*primals), pullback)``; ``pullback(cotangent)`` returns a tuple of
    cotangents, one per primal, each with its primal's structure. With ``has_aux=True``:
    ``(out, pullback, aux)``.

    As in JAX (and with no ``holomorphic`` switch), a complex output takes a complex
    cotangent ``ȳ``, and the pullback is the transpose, unconjugated: ``ȳ · f'(z)`` for a
    complex input, its real part ``Re(ȳ · f'(x))`` for a real one.

    Example::

        >>> out, pullback = dg.vjp(np.sin, np.zeros(2))
        >>> pullback(np.ones(2))
        (array([1., 1.]),)
        >>> dg.vjp(lambda x: x * (1 + 2j), np.ones(2))[1](np.array([1.0, 1j]))
        (array([ 1., -2.]),)
    """
    t = _Vjp(fn, argnums=tuple(range(len(primals))), has_aux=has_aux)
    return t.pair(t._signature(primals, {}))


def linear_transpose(fn: Callable, *primals):
    """JAX's ``linear_transpose``: the transpose of a linear function. ``primals`` give only
    the shapes and dtypes of ``fn``'s arguments (arrays, pytrees of them, or any objects with
    ``shape`` and ``dtype`` such as ``jax.ShapeDtypeStruct``); ``f_t(cotangent)``, with a
    cotangent shaped like ``fn``'s output, returns a tuple with one cotangent per argument,
    each with its primal's structure and dtype (the real part for a real primal).

    ``fn`` is checked to be linear: its pullback must not read the point and ``fn(0)`` must be
    ``0``; anything else (``x * x``, ``np.sin(x)``, ``x + 1``) is an
    :class:`InvalidArgumentError` naming the argument. A map of integers to integers is
    transposed exactly (in float64), as in JAX; integer and floating values mixed are refused. The
    transpose is one cached program (the pullback at zero), cheap to call again.

    Example::

        >>> f_t = dg.linear_transpose(lambda x, y: 0.5 * x - 0.5 * y, 1.0, 1.0)
        >>> f_t(1.0)
        (array(0.5), array(-0.5))
        >>> A = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        >>> dg.linear_transpose(lambda v: A @ v, np.zeros(2))(np.ones(3))
        (array([ 9., 12.]),)
    """
    if not callable(fn):
        raise ArgumentTypeError(f"linear_transpose expects a function, got "
                                f"{type(fn).__name__}")
    zeros = tuple(pytree.tree_map(_zeros_like_spec, p) for p in primals)
    leaves = pytree.leaves(zeros)
    integer = [np.dtype(leaf.dtype).kind not in "fc" for leaf in leaves]
    if any(integer):  # JAX: integer -> integer maps transpose too (exactly, in float64)
        return _integer_transpose(fn, zeros, all(integer))
    t = _Vjp(fn, argnums=tuple(range(len(zeros))))
    sig = t._signature(zeros, {})
    graphs, trees, inputs, program = deferred(t, sig)
    if program is None:
        (forward, pullback_graph), exe = graphs, None
        outs = eval_graph(forward, inputs)
    else:
        program = cast(VjpCompiled, program)
        outs, pullback_graph, exe = program.exe(*inputs), program.pullback.graph, program.pullback
        inputs += program.captured_now()  # (the point is zeros of its own: not copied)
    tree = trees[0]
    _check_kinds(fn, outs[:tree.num_leaves], "fc", "floating-point or complex")
    _check_linear(fn, sig, pullback_graph, outs)
    return _pullback(sig, tree, outs[:tree.num_leaves], inputs, pullback_graph, exe,
                     f"linear_transpose_{name_of(fn)}")


def _check_kinds(fn: Callable, outs, kinds: str, what: str) -> None:
    for o in outs:
        if np.dtype(o.dtype).kind not in kinds:
            raise ArgumentTypeError(
                f"linear_transpose of {name_of(fn)}: an output has dtype {o.dtype}, but the "
                f"arguments are {what}: linear_transpose only supports [float or complex] -> "
                "[float or complex], and integer -> integer functions (as JAX)")


def _integer_transpose(fn: Callable, zeros: tuple, all_integer: bool) -> Partial:
    """The transpose of a linear map of integer arrays to integer arrays: that of the same
    map on float64 arrays, its results rounded to the primals' dtypes (exact for integer
    coefficients: values up to 2**53)."""
    if not all_integer:
        raise ArgumentTypeError(
            f"linear_transpose of {name_of(fn)}: the arguments mix integer and floating-point "
            "dtypes: linear_transpose only supports [float or complex] -> [float or complex], "
            "and integer -> integer functions (as JAX)")
    outs = pytree.leaves(eval_shape(fn, *zeros))
    _check_kinds(fn, outs, "iub", "integers")
    as_float = pytree.tree_map(lambda z: np.zeros(z.shape, np.float64), zeros)
    return Partial(_IntegerTranspose(linear_transpose(fn, *as_float),
                                     pytree.tree_map(lambda z: z.dtype, zeros)))


class _IntegerTranspose:
    """``f_t`` of an integer map: the float64 transpose, its results cast back."""

    __slots__ = ("float_transpose", "dtypes", "__name__")

    def __init__(self, float_transpose, dtypes):
        self.float_transpose, self.dtypes = float_transpose, dtypes
        self.__name__ = "integer linear_transpose"

    def __call__(self, cotangent):
        def check(c):
            if np.dtype(getattr(c, "dtype", np.result_type(c))).kind not in "iub":
                raise ShapeMismatchError(
                    f"the cotangent of an integer linear map has dtype {np.result_type(c)}; "
                    "give an integer cotangent")
            return np.asarray(c, np.float64)
        res = self.float_transpose(pytree.tree_map(check, cotangent))
        return pytree.tree_map(lambda r, dt: np.asarray(np.rint(r)).astype(dt), res, self.dtypes)


def _zeros_like_spec(leaf):
    """Zeros with a primal's shape and dtype (an array, a number, or any object with
    ``shape`` and ``dtype``), on the primal's backend."""
    if isinstance(leaf, Tracer):
        return np.zeros(tuple(leaf.shape), dtype=leaf.dtype)
    b = array_backend(leaf)
    if b is not None:
        return b.xp.zeros(tuple(leaf.shape), dtype=leaf.dtype)
    if isinstance(leaf, (bool, int, float, complex, np.generic)):
        return np.zeros((), dtype=np.result_type(leaf))
    shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
    if shape is None or dtype is None:
        raise ArgumentTypeError(f"linear_transpose: a primal is a {type(leaf).__name__}; pass "
                                "arrays, numbers or objects with shape and dtype (their values "
                                "are not read)")
    return np.zeros(tuple(shape), dtype=np.dtype(dtype))


def _check_linear(fn, sig: Signature, pullback: Graph, outs: list) -> None:
    """Refuse a function that is not linear: its pullback reads the point (``x * x``,
    ``np.sin(x)``), or it is not zero at zero (``x + 1``)."""
    n = len(sig.inputs)
    reads: dict[int | None, set[int]] = {v.id: {k} for k, v in enumerate(pullback.inputs[:n])}
    for eqn in pullback.eqns:
        if eqn.prim.has(Flag.IGNORES_VALUES):  # zeros shaped like an argument
            continue
        found = set().union(*(reads.get(getattr(a, "id", None), set()) for a in eqn.inputs))
        if found:
            for v in eqn.outs:
                reads[v.id] = found
    on_point = sorted(set().union(*(reads.get(getattr(o, "id", None), set())
                                    for o in pullback.outputs)))
    if on_point:
        arg = sig.arg_of_input[on_point[0]]
        raise InvalidArgumentError(
            f"linear_transpose: {name_of(fn)} is not linear in argument {arg}: its derivative "
            "depends on the point (a product of two arguments, a nonlinear function such as "
            "np.sin, or a branch on the values), so it has no transpose. Transpose its "
            "linearization instead: dg.vjp(f, x)[1] is the transpose of the Jacobian at x")
    for j, o in enumerate(outs):
        if not isinstance(o, Tracer) and bool(np.any(o != 0)):
            raise InvalidArgumentError(
                f"linear_transpose: {name_of(fn)} is affine, not linear: output {j} is not 0 "
                "at 0 (a constant is added). Transpose the linear part, lambda *a: f(*a) - "
                "f(*zeros), or use dg.vjp(f, x)[1]")


def check_float0_cotangent(c, o, what: str) -> None:
    """JAX's rule for the cotangent of an integer or bool output ``o``: a ``float0`` array of
    its shape (NumPy's zeros of that dtype)."""
    dtype, shape = getattr(c, "dtype", None), tuple(np.shape(c))
    if dtype is None or np.dtype(dtype) != FLOAT0 or shape != tuple(o.shape):
        got = type(c).__name__ if dtype is None else f"{np.dtype(dtype)}{list(shape)}"
        raise ShapeMismatchError(
            f"{what} goes with an output of dtype {o.dtype}, which has no derivative: give "
            f"np.zeros({tuple(o.shape)}, dtype=dg.float0) (JAX's float0), got {got}")


def _cotangents(cotangent, tree, outs, sig: Signature) -> list:
    leaves, ct_tree = pytree.flatten(cotangent)
    if ct_tree != tree:
        raise ShapeMismatchError(f"the cotangent has structure {ct_tree}, but the output has "
                                 f"{tree}")
    cts = []
    for i, (c, o) in enumerate(zip(leaves, outs)):
        if np.dtype(o.dtype).kind not in "fc":  # JAX: an integer output's cotangent: float0
            check_float0_cotangent(c, o, "the cotangent" if len(outs) == 1
                                   else f"cotangent leaf {i}")
            continue
        if not isinstance(c, Tracer):
            check_plain_values(c, "cotangent" if len(outs) == 1 else f"cotangent leaf {i}")
            c = sig.backend.xp.asarray(c)
        if tuple(c.shape) != tuple(o.shape):
            raise ShapeMismatchError(
                f"the cotangent has shape {tuple(c.shape)}, but the output has "
                f"{tuple(o.shape)}")
        if np.dtype(c.dtype).kind == "c" and np.dtype(o.dtype).kind != "c":
            raise ShapeMismatchError(f"the cotangent is complex ({c.dtype}), but the output is "
                                     f"real ({o.dtype})")
        if (np.dtype(c.dtype).kind in "fc" and np.dtype(o.dtype).kind in "fc"
                and not np.can_cast(o.dtype, c.dtype)):  # JAX: the output's type, no less
            leaf = "the cotangent" if len(outs) == 1 else f"cotangent leaf {i}"
            raise ShapeMismatchError(  # a ValueError, as JAX's "unexpected JAX type"
                f"{leaf} has dtype {c.dtype}, less precise than the output's {o.dtype}: its "
                f"values would already be rounded. Pass it as {o.dtype} "
                f"(ct.astype(np.{o.dtype}))")
        cts.append(c.astype(o.dtype) if c.dtype != o.dtype else c)
    return cts
