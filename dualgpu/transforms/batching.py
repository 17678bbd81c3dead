"""Separability of per-instance functions, checked on the graph.

``hvp(f, batch_axes=...)`` is exact when ``f`` is separable over instances: then the HVP of
``sum(f)`` *is* the per-instance HVP (the Hessian of ``sum(f)`` is block-diagonal). This
module proves separability by tracking, for every value that depends on the differentiated
inputs, where each instance axis sits; an op that mixes instances (a reduction or a
contraction over an instance axis, a reshape that merges it, indexing that selects along it)
raises :class:`SeparabilityError` naming the op and the source line.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.flags import Flag
from ..core.indexing import key_to_python
from ..core.ir import Aval, Eqn, Graph, Var
from ..errors import SeparabilityError
from ..ops.linalg import einsum, matmul
from ..ops.reductions import reduce_sum
from ..ops.shape import concatenate, getitem, pad, reshape, transpose


class _Coupling(Exception):
    pass


def check_separable(graph: Graph, argnums: Sequence[int], batch_axes: Sequence[int]) -> None:
    """Raise :class:`SeparabilityError` unless the graph is separable over ``batch_axes``.

    Example::

        >>> x = np.ones((3, 5))                               # 5 instances of 3 coordinates
        >>> f = lambda x: np.exp(-np.sum(x ** 2, axis=0))     # (3, 5) -> (5,)
        >>> check_separable(dg.trace(f, x), [0], (1,))        # separable: returns None
        >>> g = lambda x: np.sum(x ** 2, axis=1)              # sums over instances
        >>> check_separable(dg.trace(g, x), [0], (1,))
        Traceback (most recent call last):
        ...
        dualgpu.errors.SeparabilityError: hvp(batch_axes=(1,)): reduce_sum at ... couples ...
    """
    maps: dict[int, tuple] = {}
    for i in argnums:
        v = graph.inputs[i]
        in_range = all(-v.ndim <= a < v.ndim for a in batch_axes)
        axes = tuple(a % v.ndim for a in batch_axes) if v.ndim and in_range else ()
        if len(set(axes)) != len(batch_axes) or not batch_axes:
            raise SeparabilityError(f"batch_axes={tuple(batch_axes)} do not fit input {i} "
                                    f"of shape {v.shape}")
        maps[v.id] = axes
    sizes = [graph.inputs[argnums[0]].shape[a] for a in maps[graph.inputs[argnums[0]].id]]
    for eqn in graph.eqns:
        dep = [(a, maps[a.id]) for a in eqn.inputs if isinstance(a, Var) and a.id in maps]
        if not dep:
            continue
        try:
            out_maps = _propagate(eqn, dep)
        except _Coupling as e:
            where = f" at {eqn.source}" if eqn.source else ""
            raise SeparabilityError(
                f"hvp(batch_axes={tuple(batch_axes)}): {eqn.prim.name}{where} couples "
                f"different instances: {e}. The per-instance HVP would not equal the HVP "
                "of the sum; restructure f so that each output depends on its own "
                "instance only, or drop batch_axes.") from None
        for v, m in zip(eqn.outs, out_maps):
            maps[v.id] = m
    out = graph.outputs[0] if len(graph.outputs) == 1 else None
    if out is None or not isinstance(out, Var) or out.id not in maps:
        raise SeparabilityError("hvp(batch_axes=...): f must return one array that depends "
                                "on the differentiated input")
    want = tuple(range(len(batch_axes)))
    if maps[out.id] != want or out.ndim != len(batch_axes):
        raise SeparabilityError(
            f"hvp(batch_axes={tuple(batch_axes)}): f must return one value per instance, an "
            f"array of shape {tuple(sizes)} (the batch axes in order), but returns shape "
            f"{tuple(out.shape)}")


def _propagate(eqn: Eqn, dep) -> list[tuple]:
    """Where the instance axes of ``eqn``'s outputs sit, given those of its inputs."""
    prim = eqn.prim
    if prim.batch is not None:  # a custom op's own separability rule
        return prim.batch(eqn, dep)
    if prim.has(Flag.ELEMENTWISE):
        return [_aligned(eqn, dep, eqn.outs[0].ndim)]
    if prim.has(Flag.REDUCTION):
        return [_reduction_map(eqn, dep)]
    if prim.has(Flag.SCAN):
        return [_scan_map(eqn, dep)]
    rule = _RULES.get(prim)
    if rule is None:
        raise _Coupling("dualgpu cannot prove that this op keeps instances apart "
                        "(it has no separability rule)")
    return [rule(eqn, dep)]


def _reduction_map(eqn: Eqn, dep) -> tuple:
    axes = eqn.params["axes"]
    (_, m), = dep
    if any(p in axes for p in m):
        raise _Coupling("it reduces over an instance axis")
    return tuple(p - sum(1 for a in axes if a < p) for p in m)


def _scan_map(eqn: Eqn, dep) -> tuple:
    (_, m), = dep
    if eqn.params["axis"] in m:
        raise _Coupling("it accumulates along an instance axis")
    return m


def _transpose_map(eqn: Eqn, dep) -> tuple:
    (_, m), = dep
    perm = list(eqn.params["perm"])
    return tuple(perm.index(p) for p in m)


def _reshape_rule(eqn: Eqn, dep) -> tuple:
    (a, m), = dep
    return _reshape_map(a.shape, eqn.params["new_shape"], m)


def _getitem_map(eqn: Eqn, dep) -> tuple:
    if any(x is not eqn.inputs[0] for x, _ in dep):
        raise _Coupling("an index array depends on the differentiated input")
    (a, m), = dep
    return _label_map(a.shape, m, lambda lab: lab[_key(eqn, lab)])


def _concatenate_map(eqn: Eqn, dep) -> tuple:
    axis = eqn.params["axis"]
    maps = {m for _, m in dep}
    if len(maps) != 1 or axis in next(iter(maps)):
        raise _Coupling("it joins arrays along an instance axis")
    return next(iter(maps))


def _pad_map(eqn: Eqn, dep) -> tuple:
    (_, m), = dep
    if any(eqn.params["pad_width"][p] != (0, 0) for p in m):
        raise _Coupling("it pads along an instance axis")
    return m


def _aligned(eqn: Eqn, dep, out_ndim: int) -> tuple:
    result = None
    for a, m in dep:
        shift = out_ndim - a.ndim
        mapped = tuple(p + shift for p in m)
        if result is not None and mapped != result:
            raise _Coupling("its operands hold instances along different axes")
        result = mapped
    for a, m in dep:
        shift = out_ndim - a.ndim
        for q, size in enumerate(a.shape):
            if size != 1 and (q + shift) in result and q not in m:
                raise _Coupling("an operand varies along an instance axis with other data")
    return result


def _reshape_map(old, new, m) -> tuple:
    pre_old = np.concatenate([[1], np.cumprod(old)]).astype(np.int64)
    pre_new = np.concatenate([[1], np.cumprod(new)]).astype(np.int64)
    out = []
    for p in m:
        match = [q for q in range(len(new))
                 if pre_new[q] == pre_old[p] and new[q] == old[p]]
        if not match:
            raise _Coupling("the reshape merges or splits an instance axis")
        out.append(match[0])
    return tuple(out)


def _key(eqn, lab):
    arrays = [x.value if hasattr(x, "value") else None for x in eqn.inputs[1:]]
    return key_to_python(eqn.params["key"], arrays)


def _label_map(shape, m, apply) -> tuple:
    """Where each instance axis goes under an indexing function, checked on labels."""
    out = []
    for p in m:
        n = shape[p]
        lab = np.lib.stride_tricks.as_strided(
            np.arange(n, dtype=np.int64), shape=shape,
            strides=tuple(8 if i == p else 0 for i in range(len(shape))))
        res = np.asarray(apply(lab))
        varying = [q for q in range(res.ndim) if res.shape[q] > 1 and
                   not np.all(np.diff(res, axis=q) == 0)]
        if len(varying) != 1 or res.shape[varying[0]] != n:
            raise _Coupling("the indexing selects or reorders along an instance axis")
        q = varying[0]
        line = np.moveaxis(res, q, 0).reshape(n, -1)[:, 0]
        if not np.array_equal(line, np.arange(n)):
            raise _Coupling("the indexing selects or reorders along an instance axis")
        out.append(q)
    return tuple(out)


def _matmul_map(eqn, dep) -> tuple:
    a_atom, b_atom = eqn.inputs
    out_nd = eqn.outs[0].ndim
    result = None
    for x, m in dep:
        nd = x.ndim
        mapped = []
        for p in m:
            if x is a_atom:
                if p == nd - 1:
                    raise _Coupling("it contracts over an instance axis")
                if nd >= 2 and p == nd - 2:
                    mapped.append(out_nd - 2 if b_atom.ndim > 1 else out_nd - 1)
                else:
                    mapped.append(p + (out_nd - nd))
            else:
                if nd == 1 or p == nd - 2:
                    raise _Coupling("it contracts over an instance axis")
                if p == nd - 1:
                    mapped.append(out_nd - 1)
                else:
                    mapped.append(p + (out_nd - nd) + (1 if a_atom.ndim == 1 else 0))
        mapped = tuple(mapped)
        if result is not None and result != mapped:
            raise _Coupling("its operands hold instances along different axes")
        result = mapped
    return result


def _einsum_map(eqn, dep) -> tuple:
    ins, out = eqn.params["spec"].split("->")
    specs = ins.split(",")
    result = None
    for x, m in dep:
        s = specs[eqn.inputs.index(x)]
        labels = [s[p] for p in m]
        if any(lab not in out for lab in labels):
            raise _Coupling("it sums over an instance axis")
        mapped = tuple(out.index(lab) for lab in labels)
        if result is not None and result != mapped:
            raise _Coupling("its operands hold instances along different axes")
        result = mapped
    return result


def sum_output(graph: Graph) -> Graph:
    """The same graph with its single output summed to a scalar."""
    out = graph.outputs[0]
    if out.ndim == 0:
        return graph
    total = Var(Aval((), out.dtype))
    eqn = Eqn(reduce_sum, [out], {"axes": tuple(range(out.ndim))}, [total])
    return Graph(graph.inputs, [total], graph.eqns + [eqn], name=graph.name,
                 input_names=graph.input_names, xp=graph.xp)


# the separability rules of the ops that are neither elementwise, reductions nor scans
_RULES = {transpose: _transpose_map, reshape: _reshape_rule, getitem: _getitem_map,
          matmul: _matmul_map, einsum: _einsum_map, concatenate: _concatenate_map,
          pad: _pad_map}
