"""The batching transforms: ``vmap`` and the Jacobians ``jacfwd``, ``jacrev``, ``jacobian``.

``vmap(fn)`` traces ``fn`` on one example and batches that graph
(:func:`dualgpu.transforms.vmap.batch_graph`); the batched graph is inlined into the trace
of the vmapped function, so ``vmap`` composes with every transform in both directions
(``vmap(grad(f))``, ``grad(... vmap(f) ...)``, ``jit(vmap(f))``, ``vmap(vmap(f))``) and the
result is one program, cached like any other.

The Jacobians are ``vmap`` at the graph level: ``jacrev`` batches the pullback of ``f``
over the rows of an identity matrix (one reverse pass, as wide as the output), ``jacfwd``
batches its pushforward over the columns (one forward pass, as wide as the input).
"""
from __future__ import annotations

import collections
import inspect
from collections.abc import Callable

import numpy as np

from .. import lax
from ..base import tree as pytree
from ..core.interpret import eval_graph
from ..core.ir import Aval, Graph
from ..core.trace import Tracer, trace_to_graph
from ..errors import ArgumentTypeError, InvalidArgumentError, ShapeMismatchError
from ..frontend.namespace import rebind_function
from ..frontend.scipy.sparse import SparseValue
from ..runtime.checks import check_bool, check_complex, check_holomorphic, diff_flags
from ..runtime.decisions import within
from ..runtime.program_cache import function_key
from ..runtime.tracing import check_call, name_of, rebindable, with_aux
from ..runtime.transformed import Transformed
from ..transforms.jvp import jvp_graph
from ..transforms.simplify import dce, simplify
from ..transforms.vjp import vjp_graph
from ..transforms.vmap import batch_graph
from . import differentiation

__all__ = ["vmap", "jacfwd", "jacrev", "jacobian"]


# ------------------------------------------------------------------------------ axes specs
def _is_axis(a) -> bool:
    return a is None or (isinstance(a, (int, np.integer)) and not isinstance(a, bool))


def _check_axes_spec(spec, what: str) -> None:
    """An axes spec is an int, None, or a pytree (tuple, list, dict, registered class...) of
    them."""
    if _is_axis(spec):
        return
    parts = pytree.node_parts(spec)
    if parts is None:
        raise ArgumentTypeError(f"vmap: {what} must be an int, None, or a tuple/list/dict of "
                                f"them (matching the arguments), got {spec!r}")
    for s in parts[2]:
        _check_axes_spec(s, what)


def _axes_key(spec):
    """A hashable, exact form of an axes spec (part of the cache key)."""
    if _is_axis(spec):
        return None if spec is None else int(spec)
    if isinstance(spec, dict):
        return ("dict", tuple(sorted((repr(k), _axes_key(v)) for k, v in spec.items())))
    kind, meta, children = pytree.node_parts(spec)
    return (kind, meta, tuple(_axes_key(s) for s in children))


def _axes_for_leaves(spec, value, where: str) -> list:
    """The axis of every leaf of ``value`` (in :func:`dualgpu.base.tree.flatten` order), from a
    spec that is a prefix of ``value``'s structure, as in JAX (a list may stand for a
    tuple)."""
    if _is_axis(spec):
        return [spec] * len(pytree.leaves(value))
    if type(spec) is dict:
        if not isinstance(value, dict) or set(value) != set(spec):
            raise InvalidArgumentError(
                f"vmap: {where} is a dict with keys {sorted(map(repr, spec))}, which does not "
                f"match the value ({pytree.structure(value)})")
        out = []
        parts = pytree.node_parts(value)
        assert parts is not None  # a dict is a node
        for k in parts[1]:
            out += _axes_for_leaves(spec[k], value[k], f"{where}[{k!r}]")
        return out
    s_parts = pytree.node_parts(spec)
    assert s_parts is not None  # _check_axes_spec admits only axes and containers of them
    s_kind, s_meta, s_children = s_parts
    v_parts = pytree.node_parts(value)
    sequences = ("tuple", "list")
    if v_parts is None or len(v_parts[2]) != len(s_children) or not (
            (s_kind in sequences and v_parts[0] in sequences)
            or (s_kind == v_parts[0] and s_meta == v_parts[1])):
        raise InvalidArgumentError(f"vmap: {where} is {spec!r}, which does not match the "
                                   f"structure of the value ({pytree.structure(value)})")
    out = []
    leaf_children = (pytree.LEAF,) * len(s_children)
    paths = pytree.leaf_paths(pytree.TreeDef(v_parts[0], v_parts[1], leaf_children))
    for p, s, v in zip(paths, s_children, v_parts[2]):
        out += _axes_for_leaves(s, v, f"{where}{p}")
    return out


def _normalize_axis(axis, ndim: int, where: str) -> int:
    if not -ndim <= axis < ndim:
        raise InvalidArgumentError(f"vmap: {where} is {axis}, out of range for a mapped value of "
                                   f"rank {ndim} (axes -{ndim} to {ndim - 1})")
    return int(axis) % ndim


# ------------------------------------------------------------------------------ vmap
class _PerExample:
    """``fn`` on one example: the traced inputs are the array leaves, in order."""

    def __init__(self, fn, trees, leaves, positions):
        self.fn = rebindable(fn)
        self.trees, self.leaves, self.positions = trees, leaves, positions
        self.out_tree = None
        self.__name__ = name_of(fn)

    def __call__(self, *values):
        leaves = list(self.leaves)
        for j, v in zip(self.positions, values):
            leaves[j] = v
        it = iter(leaves)
        args = [pytree._build(t, it) for t in self.trees[:-1]]
        kwargs = pytree._build(self.trees[-1], it) if self.trees[-1] is not None else {}
        out = rebind_function(self.fn)(*args, **kwargs)
        flat, self.out_tree = pytree.flatten(out)
        if any(isinstance(leaf, SparseValue) for leaf in flat):
            raise ArgumentTypeError(
                f"vmap of {self.__name__}: the function returns a sparse matrix, and a batch "
                "of them is no array: return its values (H.data, in the order of its "
                "pattern, one row per example), H.toarray() or a product (H @ v)")
        return flat


class _Batched:
    """The vmapped function as a function of batched arrays (what :class:`_Vmap` traces).
    Called on the tracers of that trace, it traces ``fn`` on one example, batches the graph
    and evaluates the batched graph on its arguments (recording it)."""

    _dualgpu_transform = True  # guards and names look through to fn

    def __init__(self, fn, in_axes, out_axes, axis_size=None):
        if isinstance(in_axes, dict):  # refused when vmap is called, as JAX does
            raise ArgumentTypeError(
                "vmap: in_axes must be an int, None or a tuple with one entry per positional "
                f"argument, not a dict ({in_axes!r}; a dict entry of that tuple can match a "
                "dict argument)")
        self.fn, self.in_axes, self.out_axes = fn, in_axes, out_axes
        self.axis_size = axis_size
        self.__name__ = name_of(fn)
        if not isinstance(fn, Transformed):  # readable input names in the graph
            try:
                self.__signature__ = inspect.signature(fn)
            except (TypeError, ValueError):
                pass

    def __call__(self, *args, **kwargs):
        return _batched_call(self, args, kwargs)


def _batched_call(b: _Batched, args: tuple, kwargs: dict):
    if not isinstance(b.fn, Transformed):
        check_call(b.fn, args, kwargs)
    in_axes = b.in_axes
    if isinstance(in_axes, (tuple, list)):
        if len(in_axes) != len(args):
            kw = (f". Note that the function was called with keyword arguments "
                  f"{sorted(kwargs)}, which the entries of a tuple in_axes never correspond "
                  "to: keyword arguments are always mapped along their axis 0" if kwargs else "")
            raise InvalidArgumentError(f"vmap of {name_of(b.fn)}: in_axes is a tuple of entries "
                                       "for the positional arguments, but got "
                                       f"len(in_axes)={len(in_axes)}, len(args)={len(args)}{kw}")
        per_arg = list(in_axes)
    else:
        per_arg = [in_axes] * len(args)
    leaves: list = []
    trees: list[pytree.TreeDef | None] = []
    axes: list[int | None] = []
    owner: list[str] = []
    tree: pytree.TreeDef | None
    for i, (a, spec) in enumerate(zip(args, per_arg)):
        flat, tree = pytree.flatten(a)
        leaves += flat
        trees.append(tree)
        axes += _axes_for_leaves(spec, a, f"in_axes[{i}]" if isinstance(
            in_axes, (tuple, list)) else "in_axes")
        owner += [f"{_arg_word(b.fn, i)}{p}" for p in pytree.leaf_paths(tree)]
    flat, tree = pytree.flatten(kwargs) if kwargs else ([], None)
    leaves += flat
    trees.append(tree)
    axes += [0 if isinstance(x, Tracer) else None for x in flat]  # keywords: axis 0, as JAX
    owner += [f"kwargs{p}" for p in pytree.leaf_paths(tree)] if tree is not None else []

    size = b.axis_size
    mapped: list[tuple[int, int, str]] = []  # (size, axis, which leaf) of each mapped leaf
    positions: list[int] = []
    inputs: list = []
    in_dims: list[int | None] = []
    avals: list[Aval] = []
    for j, (leaf, axis) in enumerate(zip(leaves, axes)):
        if isinstance(leaf, SparseValue) or not isinstance(leaf, Tracer):
            if axis is not None:
                what = "a sparse matrix" if isinstance(leaf, SparseValue) else \
                    f"a {type(leaf).__name__}"
                raise InvalidArgumentError(f"vmap: {owner[j]} is mapped (axis {axis}) but holds "
                                           f"{what}, not an array; give it the axis None")
            continue
        positions.append(j)
        inputs.append(leaf)
        if axis is None:  # (a weakly typed number stays one: np.sin(c) is not, c * x32 is)
            in_dims.append(None)
            avals.append(Aval(tuple(leaf.shape), leaf.dtype, weak=leaf.aval.weak))
            continue
        if leaf.ndim == 0:
            raise InvalidArgumentError(
                f"vmap: {owner[j]} is mapped along axis {axis}, but a leaf of it is 0-d "
                "(nothing to map over); give it the axis None")
        d = _normalize_axis(axis, leaf.ndim, f"the axis of {owner[j]}")
        mapped.append((leaf.shape[d], d, f"{owner[j]} of type {_type_word(leaf)}"))
        in_dims.append(d)
        shape = list(leaf.shape)
        del shape[d]
        avals.append(Aval(tuple(shape), leaf.dtype))
    _check_sizes(mapped, size)
    if mapped and size is None:
        size = mapped[0][0]
    if size is None:
        raise InvalidArgumentError(
            f"vmap of {name_of(b.fn)}: no argument is mapped (every in_axes is None or the "
            "arguments hold no arrays); vmap must have at least one non-None value in in_axes, "
            "or an axis_size")
    if not inputs:
        raise InvalidArgumentError(f"vmap of {name_of(b.fn)}: the arguments hold no arrays; "
                                   "pass at least one array (axis_size alone maps nothing)")

    call = _PerExample(b.fn, trees, leaves, positions)
    captured: list = []
    xp = inputs[0]._builder.xp
    graph, _ = trace_to_graph(call, avals, xp, name=name_of(b.fn), captured=captured,
                              concretize=within(inputs))
    out_tree = call.out_tree
    out_dims = _out_dims(b.out_axes, out_tree, graph)
    batched, _ = batch_graph(graph, in_dims + [None] * len(captured), size, out_dims)
    outs = eval_graph(batched, inputs + captured)
    return pytree.unflatten(out_tree, outs)


def _arg_word(fn, i: int) -> str:
    """``argument x1`` (the parameter's name) or ``args[3]`` (a ``*args`` entry), as JAX."""
    try:
        names = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    return f"argument {names[i]}" if i < len(names) else f"args[{i}]"


def _type_word(leaf) -> str:
    return f"{np.dtype(leaf.dtype).name}[{','.join(str(n) for n in leaf.shape)}]"


def _check_sizes(mapped: list, axis_size: int | None) -> None:
    """JAX's message for mapped axes of different sizes: each size, how many axes have it
    and one of them (``vmap got inconsistent sizes for array axes to be mapped: ...``)."""
    sizes = {n for n, _, _ in mapped} | ({axis_size} if axis_size is not None else set())
    if len(sizes) <= 1:
        return
    counts = collections.Counter(n for n, _, _ in mapped)
    lines = ["vmap got inconsistent sizes for array axes to be mapped:"]
    if axis_size is not None:
        lines.append(f"  * the `axis_size` argument was {axis_size};")
    for k, (n, ct) in enumerate(counts.most_common()):
        _, d, where = next(m for m in mapped if m[0] == n)
        lines.append(f"  * one axis had size {n}: axis {d} of {where};" if ct == 1 else
                     f"  * {'most' if k == 0 else 'some'} axes ({ct} of them) had size {n}, "
                     f"e.g. axis {d} of {where};")
    raise ShapeMismatchError("\n".join(lines)[:-1])


def _out_dims(out_axes, out_tree, graph: Graph) -> list:
    shaped = pytree.unflatten(out_tree, list(range(out_tree.num_leaves)))
    if isinstance(out_axes, (tuple, list, dict)) and out_tree.is_leaf:
        raise InvalidArgumentError(f"vmap: out_axes is {out_axes!r}, but the function returns a "
                                   "single array")
    dims = _axes_for_leaves(out_axes, shaped, "out_axes")
    out = []
    for k, (d, o) in enumerate(zip(dims, graph.outputs)):
        out.append(None if d is None else _normalize_axis(d, len(o.shape) + 1,
                                                           f"out_axes (output {k})"))
    return out


class _Vmap(Transformed):
    kind = "vmap"
    sees_values = False  # a batch of values: a branch on one is an error, as in JAX
    finish_places_outputs = True

    def __init__(self, fn: Callable, in_axes=0, out_axes=0, axis_size=None):
        if not callable(fn):
            raise ArgumentTypeError(f"dg.vmap expects a function, got {type(fn).__name__}")
        _check_axes_spec(in_axes, "in_axes")
        _check_axes_spec(out_axes, "out_axes")
        if axis_size is not None:
            if not isinstance(axis_size, (int, np.integer)) or isinstance(axis_size, bool):
                raise ArgumentTypeError(f"vmap: axis_size must be an int or None, got "
                                        f"{axis_size!r}")
            if axis_size < 0:
                raise InvalidArgumentError(f"vmap: axis_size must be >= 0, got {axis_size}")
            axis_size = int(axis_size)
        super().__init__(_Batched(fn, in_axes, out_axes, axis_size), argnums=())
        self._weak = []
        self._fn_key = function_key(fn, self._weak)  # rebuilding vmap(f) hits the cache
        self._axes = (_axes_key(in_axes), _axes_key(out_axes), axis_size)
        self.__name__ = self.__qualname__ = f"vmap_{name_of(fn)}"
        self.__wrapped__ = fn
        self.__doc__ = getattr(fn, "__doc__", None)

    def options(self) -> dict:
        return {"axes": self._axes}

    def __repr__(self) -> str:
        return f"<dualgpu.vmap of {name_of(self.fn.fn)}>"

    def build(self, traced, sig):
        return simplify(traced.graph), traced.out_tree

    def finish(self, compiled, sig, outs):
        return pytree.unflatten(compiled.trees, outs)


def vmap(fn: Callable | None = None, in_axes=0, out_axes=0, axis_size: int | None = None):
    """Map ``fn`` over an axis of its arguments: ``vmap(f)(X)[i] == f(X[i])``, as one program.

    ``in_axes`` is an int, ``None`` (the argument is shared by every example) or a tuple with
    one entry per positional argument, each a pytree prefix of its argument (JAX's rules;
    negative axes count from the end). Keyword arguments are mapped along axis 0.
    ``out_axes`` places the examples in the results in the same way (``None``: a result
    that does not depend on the mapped arguments, returned once). ``axis_size`` gives the
    number of examples when no argument is mapped (and must agree with the mapped sizes
    otherwise). The function is traced
    on one example and its graph batched: every built-in op has a batching rule (``W @ V``
    with a shared ``W`` is one GEMM over all the examples); a custom op is one batched custom
    op, or, where its body runs on values, runs once per example. Composes with every transform:
    ``vmap(dg.hvp(f), in_axes=(None, 0))(x, V)`` is ``H @ v`` for each row of ``V`` in one
    program.

    Example::

        >>> import numpy as np, dualgpu as dg
        >>> dg.vmap(lambda x, w: x @ w, in_axes=(0, None))(np.ones((3, 2)), np.arange(2.0))
        array([1., 1., 1.])
        >>> dg.vmap(lambda w: 2 * w, in_axes=None, axis_size=2)(np.arange(2.0))
        array([[0., 2.],
               [0., 2.]])
    """
    if fn is None:
        return lambda f: vmap(f, in_axes, out_axes, axis_size)
    return _Vmap(fn, in_axes, out_axes, axis_size)


# ------------------------------------------------------------------------------ Jacobians
def _basis(avals, xp) -> list:
    """The rows of an identity matrix of the total size, split and shaped per value:
    ``basis[k]`` has shape ``(total, *avals[k].shape)``."""
    sizes = [int(np.prod(a.shape, dtype=np.int64)) for a in avals]
    total = sum(sizes)
    out, start = [], 0
    for a, n in zip(avals, sizes):
        block = xp.zeros((total, n), dtype=a.dtype)
        block[start:start + n] = xp.eye(n, dtype=a.dtype)
        out.append(block.reshape((total,) + tuple(a.shape)))
        start += n
    return out


def _offsets(avals) -> list[tuple[int, int]]:
    out, start = [], 0
    for a in avals:
        n = int(np.prod(a.shape, dtype=np.int64))
        out.append((start, start + n))
        start += n
    return out


def _rows(x, lo, hi):
    return lax.getitem(x, (slice(lo, hi),))


def jacobian_graph(graph: Graph, wrt, mode: str) -> Graph:
    """``(*inputs) -> J[out][in]`` for every output and every differentiated input (output
    major), each of shape ``out.shape + in.shape``; ``mode`` is ``"fwd"`` or ``"rev"``."""
    outs = graph.outputs
    ins = [v for v, w in zip(graph.inputs, wrt) if w]
    out_avals = [Aval(tuple(o.shape), o.dtype) for o in outs]
    in_avals = [v.aval for v in ins]
    n_in = len(graph.inputs)
    if mode == "rev":
        for o in outs:
            if o.dtype.kind not in "fc":
                raise ArgumentTypeError(f"jacrev of {graph.name}: an output of dtype {o.dtype} "
                                        "cannot be differentiated (only floating-point and "
                                        "complex outputs)")
        lin = vjp_graph(graph, wrt)  # (primals, out cotangents) -> (outs, input cotangents)
        basis_avals = out_avals
    else:
        lin = jvp_graph(graph, wrt)  # (primals, in tangents) -> (outs, out tangents)
        basis_avals = in_avals
    lin.outputs = lin.outputs[len(outs):]
    lin = dce(lin)
    width = sum(int(np.prod(a.shape, dtype=np.int64)) for a in basis_avals)
    batched = None
    if width:
        batched, _ = batch_graph(lin, [None] * n_in + [0] * len(basis_avals), width,
                                 [0] * len(lin.outputs))

    def run(*inputs):
        xp = graph.xp or np
        jac = []
        if batched is None:  # nothing to map over: every block is empty
            for o in out_avals:
                for a in in_avals:
                    jac.append(xp.zeros(tuple(o.shape) + tuple(a.shape), dtype=np.result_type(
                        o.dtype, a.dtype)))
            return jac
        rows = eval_graph(batched, list(inputs) + _basis(basis_avals, xp))
        if mode == "rev":  # rows[i]: (width, *in_i.shape), width over the outputs
            for (lo, hi), o in zip(_offsets(out_avals), out_avals):
                for r, a in zip(rows, in_avals):
                    jac.append(lax.reshape(_rows(r, lo, hi), tuple(o.shape) + tuple(a.shape)))
            return jac
        offsets = _offsets(in_avals)  # rows[j]: (width, *out_j.shape), width over the inputs
        for r, o in zip(rows, out_avals):
            for (lo, hi), a in zip(offsets, in_avals):
                block = lax.reshape(_rows(r, lo, hi), tuple(a.shape) + tuple(o.shape))
                na, no = len(a.shape), len(o.shape)
                jac.append(lax.transpose(block, list(range(na, na + no)) + list(range(na))))
        return jac

    new, _ = trace_to_graph(run, [v.aval for v in graph.inputs], graph.xp,
                            name=f"jac{mode}_{graph.name}", input_names=graph.input_names)
    return simplify(new)


class _Jacobian(Transformed):
    finish_places_outputs = True

    def __init__(self, fn: Callable, argnums=0, mode: str = "rev", holomorphic: bool = False,
                 has_aux: bool = False, allow_int: bool = False):
        self.mode = mode
        self.kind = "jacfwd" if mode == "fwd" else "jacrev"
        self.holomorphic = check_holomorphic(holomorphic, f"dg.{self.kind}")
        self.allow_int = check_bool(allow_int, "allow_int", f"dg.{self.kind}")
        super().__init__(fn, argnums, has_aux=has_aux)

    def options(self) -> dict:
        return {"holomorphic": self.holomorphic, "allow_int": self.allow_int}

    def build(self, traced, sig):
        main, aux, tree, aux_tree = traced.split_aux(self.has_aux, self.__name__)
        check_complex(main, sig, self.__name__, self.holomorphic, self.mode)
        program = jacobian_graph(main, diff_flags(sig, main), self.mode)
        out_shapes = tuple(tuple(o.shape) for o in main.outputs)
        return with_aux(program, aux), (tree, aux_tree, out_shapes)

    def finish(self, compiled, sig, outs):
        tree, aux_tree, out_shapes = compiled.trees
        k = sum(sig.diff)
        per_out = []
        for j in range(tree.num_leaves):
            values = outs[j * k:(j + 1) * k]
            per = [sig.per_argument(values, a, repackage=False, int_prefix=out_shapes[j])
                   for a in self.argnums]
            per_out.append(tuple(per) if self.argnums_tuple else per[0])
        jac = pytree.unflatten(tree, per_out)
        if self.has_aux:
            return jac, pytree.unflatten(aux_tree, outs[tree.num_leaves * k:])
        return jac


def jacfwd(fn: Callable | None = None, argnums=0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False):
    """The Jacobian of ``fn`` by forward mode (one pass, batched over the input's size):
    best when the inputs are smaller than the outputs.

    For an output of shape ``S`` and an argument of shape ``A`` the Jacobian has shape
    ``S + A``. With pytrees, JAX's layout: the output's structure, each leaf replaced by
    the argument's structure (a tuple of them when ``argnums`` is a tuple).

    JAX's rules for complex values: real inputs may have complex outputs (the Jacobian is
    complex); complex inputs need ``holomorphic=True`` (and complex outputs; a
    ``TypeError`` otherwise), and the Jacobian is then the complex derivative. With
    ``has_aux=True``, ``fn`` returns ``(output, aux)`` and the result is ``(jacobian, aux)``;
    negative ``argnums`` count from the end. An integer argument is refused unless
    ``allow_int=True``, which gives its blocks as ``float0`` zeros of shape
    ``out.shape + in.shape`` (JAX's rule).

    Example::

        >>> dg.jacfwd(lambda x: x ** 2)(np.array([1.0, 2.0]))
        array([[2., 0.],
               [0., 4.]])
        >>> dg.jacfwd(lambda x: x * (1 + 2j))(np.array([1.0]))
        array([[1.+2.j]])
        >>> dg.jacfwd(lambda x: (x ** 2, np.sum(x)), has_aux=True)(np.array([3.0]))
        (array([[6.]]), array(3.))
        >>> j_x, j_n = dg.jacfwd(lambda x, n: x * n, (0, 1), allow_int=True)(
        ...     np.ones(2), np.arange(3, 5))
        >>> j_x, j_n.shape, j_n.dtype == dg.float0
        (array([[3., 0.],
               [0., 4.]]), (2, 2), True)
    """
    if fn is None:
        return lambda f: jacfwd(f, argnums, has_aux, holomorphic, allow_int)
    return _Jacobian(fn, argnums, "fwd", holomorphic, has_aux, allow_int)


def jacrev(fn: Callable | None = None, argnums=0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False):
    """The Jacobian of ``fn`` by reverse mode (one pass, batched over the output's size):
    best when the outputs are smaller than the inputs. Shapes and structure as
    :func:`jacfwd`.

    As in JAX, complex outputs are refused unless ``holomorphic=True``; then the inputs
    must be complex too and the Jacobian is the complex derivative (of a holomorphic
    ``fn``: dualgpu does not check that it is). Real outputs of complex inputs follow
    :func:`dualgpu.grad`'s convention. ``has_aux``, ``argnums`` and ``allow_int`` as
    :func:`jacfwd`.

    Example::

        >>> dg.jacrev(lambda x: np.sin(x) * x[0])(np.array([0.0, 1.0]))
        array([[0.        , 0.        ],
               [0.84147098, 0.        ]])
        >>> dg.jacrev(lambda z: z ** 2, holomorphic=True)(np.array([1j]))
        array([[0.+2.j]])
    """
    if fn is None:
        return lambda f: jacrev(f, argnums, has_aux, holomorphic, allow_int)
    return _Jacobian(fn, argnums, "rev", holomorphic, has_aux, allow_int)


def jacobian(fn: Callable | None = None, argnums=0, has_aux: bool = False,
             holomorphic: bool = False, allow_int: bool = False):
    """``jacrev`` (as in JAX). ``dg.jacfwd(dg.jacrev(f))`` is the Hessian.

    Example::

        >>> dg.jacobian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
        array([ 3., 12.])
    """
    return jacrev(fn, argnums, has_aux, holomorphic, allow_int)


def _nested_hessian(fn: Callable, argnums, has_aux: bool, holomorphic: bool):
    """JAX's ``hessian``: ``jacfwd(jacrev(fn))``, for what dg.hessian's one program does not
    take (a non-scalar output, ``holomorphic=True``)."""
    return jacfwd(jacrev(fn, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)


differentiation.NESTED_HESSIAN[:] = [_nested_hessian]
