"""Separability of per-instance functions, checked on the graph.

``hvp(f, batch_axes=...)`` is exact when ``f`` is separable over instances: then the HVP of
``sum(f)`` *is* the per-instance HVP (the Hessian of ``sum(f)`` is block-diagonal). This
module proves separability by tracking, for every value that depends on the differentiated
inputs, which instance each of its elements belongs to; an op that mixes instances (a
reduction or a contraction over an instance axis, a reshape that splits it, indexing that
selects along it) raises :class:`SeparabilityError` naming the user's transform, the op and
the user's source line.

The proof reasons about shapes, not only axis positions. An instance axis sits on one axis
of a value, possibly merged with other axes by a reshape (:class:`At`: the vmap rules fold
the coordinates of a Jacobian into the rows of a product and unfold them after); every
value must hold exactly ``outer * n * inner`` elements along that axis (an instance axis of
length 1 broadcast against other data would give one instance many values), and the
output must have exactly the instance shape: one value per instance.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.flags import Flag
from ..core.interpret import walk
from ..core.ir import Aval, Eqn, Graph, Var
from ..errors import SeparabilityError, not_users, user_location
from ..ops.reductions import reduce_sum
from ..rules.separability_rules import At, Coupling, aligned, along_axis


def check_separable(graph: Graph, argnums: Sequence[int], batch_axes: Sequence[int],
                    what: str = "hvp") -> None:
    """Raise :class:`SeparabilityError` unless the graph is separable over ``batch_axes``
    and returns one value per instance (``what``: the user's transform, for the message).

    Example::

        >>> x = np.ones((3, 5))                               # 5 instances of 3 coordinates
        >>> f = lambda x: np.exp(-np.sum(x ** 2, axis=0))     # (3, 5) -> (5,)
        >>> check_separable(dg.trace(f, x), [0], (1,))        # separable: returns None
        >>> g = lambda x: np.sum(x ** 2, axis=1)              # sums over instances
        >>> check_separable(dg.trace(g, x), [0], (1,), what="laplacian")
        Traceback (most recent call last):
        ...
        dualgpu.errors.SeparabilityError: laplacian(batch_axes=(1,)): reduce_sum at ... couples ...
    """
    name = f"{what}(batch_axes={tuple(batch_axes)})"
    maps: dict[int, tuple] = {}
    sizes = None
    for i in argnums:
        v = graph.inputs[i]
        in_range = all(-v.ndim <= a < v.ndim for a in batch_axes)
        axes = tuple(a % v.ndim for a in batch_axes) if v.ndim and in_range else ()
        if len(set(axes)) != len(batch_axes) or not batch_axes:
            raise SeparabilityError(f"{name}: batch_axes={tuple(batch_axes)} do not fit "
                                    f"input {i} of shape {v.shape} (at {_user_line(None)})")
        lengths = tuple(v.shape[a] for a in axes)
        if sizes is not None and lengths != sizes:
            raise SeparabilityError(
                f"{name}: the differentiated inputs have {sizes} and {lengths} instances "
                f"along their batch axes (input {i} has shape {v.shape}); give every "
                f"differentiated argument the same instances (at {_user_line(None)})")
        sizes = lengths
        maps[v.id] = tuple(At(a) for a in axes)
    live = _live(graph)

    def rule(eqn, _, states):   # a value's state: where its instance axes are
        # an empty value holds no element of any instance: it couples nothing, a constant
        dep = [(i, m) for i, m in enumerate(states)
               if m is not None and _size(eqn.inputs[i]) != 0]
        if not dep or sizes is None or not any(v.id in live for v in eqn.outs) or \
                eqn.prim.has(Flag.IGNORES_VALUES) or \
                all(_size(v) == 0 for v in eqn.outs):   # fill_like, x[:, 1:0]: constants
            return None, [None] * len(eqn.outs)
        try:
            out_maps = _propagate(eqn, dep, sizes)
            for v, m in zip(eqn.outs, out_maps):
                _check_extents(v, m, sizes)
        except Coupling as e:
            raise SeparabilityError(
                f"{name}: {eqn.prim.name} at {_user_line(eqn.source)} couples different "
                f"instances: {e}. The per-instance result would not equal that of f on "
                "each instance alone; restructure f so that each output depends on its own "
                "instance only, or drop batch_axes.") from None
        return None, [None if _size(v) == 0 else m for v, m in zip(eqn.outs, out_maps)]

    _, maps = walk(graph, None, maps, rule)  # the states alone: no values
    out = graph.outputs[0] if len(graph.outputs) == 1 else None
    if out is None or not isinstance(out, Var) or \
            (out.id not in maps and not _reaches(graph, argnums, out)):
        raise SeparabilityError(f"{name}: f must return one array that depends on the "
                                f"differentiated input (at {_user_line(None)})")
    want = tuple(At(k) for k in range(len(batch_axes)))
    if maps.get(out.id, want) != want or tuple(out.shape) != sizes:
        raise SeparabilityError(
            f"{name}: f must return one value per instance, an array of shape {sizes} "
            f"(the batch axes in order), but returns shape {tuple(out.shape)} (at "
            f"{_user_line(None)})")


def _size(v) -> int:
    return int(np.prod(v.shape, dtype=np.int64))


def _reaches(graph: Graph, argnums: Sequence[int], out: Var) -> bool:
    """Whether ``out`` is computed from the differentiated inputs, through empty values or
    not (``sum(x[:, 1:], axis=1)`` of one coordinate: zeros that the check tracks as a
    constant, since an empty value holds no instance's element)."""
    def rule(eqn, _, states):
        return None, [True if any(states) else None] * len(eqn.outs)

    _, reached = walk(graph, None, {graph.inputs[i].id: True for i in argnums}, rule)
    return out.id in reached


def _live(graph: Graph) -> set[int]:
    """The ids of the variables whose values the outputs depend on: an equation whose
    results are not used, or used only for their shape (the value of ``sum(u)`` that
    ``grad`` of it computes and seeds with ``fill_like``), couples nothing."""
    live = {a.id for a in graph.outputs if isinstance(a, Var)}
    for eqn in reversed(graph.eqns):
        if any(v.id in live for v in eqn.outs) and not eqn.prim.has(Flag.IGNORES_VALUES):
            live.update(a.id for a in eqn.inputs if isinstance(a, Var))
    return live


def _check_extents(v, m: tuple, sizes: tuple) -> None:
    """Every instance axis of ``v`` holds ``outer * n * inner`` elements: an instance axis
    broadcast against other data (possible only when it has length 1) is refused."""
    for k, at in enumerate(m):
        want = at.outer * sizes[k] * at.inner
        got = v.shape[at.pos]
        if got != want:
            raise Coupling(
                f"it broadcasts batch axis {k} ({sizes[k]} instance"
                f"{'s' if sizes[k] != 1 else ''}) to length {got} against other data, so "
                f"one instance would get {got // max(want, 1)} values; give every array "
                "that follows the instances the same length along that axis")


def _user_line(source: str | None) -> str:
    """``source`` when it is a line of the user's, else the user's line that called the
    transform (the innermost frame of the stack outside dualgpu and the standard
    library): an equation a transform generated inside a composed transform (the inner
    ``laplacian`` of ``laplacian(laplacian(u))``) has no line of the user's own."""
    if source and not not_users(source.rsplit(":", 1)[0]):
        return source
    where = user_location(skip_stdlib=True)
    return source if where == "<unknown location>" and source else where


def _propagate(eqn: Eqn, dep, sizes: tuple) -> list[tuple]:
    """Where the instance axes of ``eqn``'s outputs sit, given those of its inputs: the
    op's own rule (``defrules(prim, separability=rule)``), else the rule of its kind."""
    prim = eqn.prim
    own = prim.rule("separability")
    if own is not None:
        maps = own(eqn, dep, sizes)
        return list(maps) if prim.multiple_results else [maps]
    if prim.has(Flag.ELEMENTWISE):
        return [aligned(eqn, dep)]
    if prim.has(Flag.REDUCTION):
        return [_reduction_map(eqn, dep)]
    if prim.has(Flag.SCAN):
        return [along_axis(eqn, dep, sizes, "it accumulates")]
    raise Coupling("dualgpu cannot prove that this op keeps instances apart "
                   "(it has no separability rule)")


def _reduction_map(eqn: Eqn, dep) -> tuple:
    axes = eqn.params["axes"]
    (_, m), = dep
    if any(at.pos in axes for at in m):
        raise Coupling("it reduces over an instance axis")
    return tuple(at.moved(at.pos - sum(1 for a in axes if a < at.pos)) for at in m)


def sum_output(graph: Graph) -> Graph:
    """The same graph with its single output summed to a scalar."""
    out = graph.outputs[0]
    if out.ndim == 0:
        return graph
    total = Var(Aval((), out.dtype))
    eqn = Eqn(reduce_sum, [out], {"axes": tuple(range(out.ndim))}, [total])
    return Graph(graph.inputs, [total], graph.eqns + [eqn], name=graph.name,
                 input_names=graph.input_names, xp=graph.xp)
