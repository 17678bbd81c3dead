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

import os
import sys
import sysconfig
from collections.abc import Sequence
from typing import NamedTuple

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


class At(NamedTuple):
    """Where one instance axis of ``n`` instances sits in a value: axis ``pos``, of length
    ``outer * n * inner``, whose element ``j`` belongs to instance ``(j // inner) % n``
    (a plain instance axis has ``outer == inner == 1``)."""

    pos: int
    outer: int = 1
    inner: int = 1

    def moved(self, pos: int) -> At:
        return At(pos, self.outer, self.inner)

    @property
    def plain(self) -> bool:
        return self.outer == 1 and self.inner == 1


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
    for eqn in graph.eqns:
        dep = [(a, maps[a.id]) for a in eqn.inputs if isinstance(a, Var) and a.id in maps]
        if not dep or not any(v.id in live for v in eqn.outs) or \
                eqn.prim.has(Flag.IGNORES_VALUES):   # fill_like: a constant
            continue
        try:
            out_maps = _propagate(eqn, dep, sizes)
            for v, m in zip(eqn.outs, out_maps):
                _check_extents(v, m, sizes)
        except _Coupling as e:
            raise SeparabilityError(
                f"{name}: {eqn.prim.name} at {_user_line(eqn.source)} couples different "
                f"instances: {e}. The per-instance result would not equal that of f on "
                "each instance alone; restructure f so that each output depends on its own "
                "instance only, or drop batch_axes.") from None
        for v, m in zip(eqn.outs, out_maps):
            maps[v.id] = m
    out = graph.outputs[0] if len(graph.outputs) == 1 else None
    if out is None or not isinstance(out, Var) or out.id not in maps:
        raise SeparabilityError(f"{name}: f must return one array that depends on the "
                                f"differentiated input (at {_user_line(None)})")
    want = tuple(At(k) for k in range(len(batch_axes)))
    if maps[out.id] != want or tuple(out.shape) != sizes:
        raise SeparabilityError(
            f"{name}: f must return one value per instance, an array of shape {sizes} "
            f"(the batch axes in order), but returns shape {tuple(out.shape)} (at "
            f"{_user_line(None)})")


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
            raise _Coupling(
                f"it broadcasts batch axis {k} ({sizes[k]} instance"
                f"{'s' if sizes[k] != 1 else ''}) to length {got} against other data, so "
                f"one instance would get {got // max(want, 1)} values; give every array "
                "that follows the instances the same length along that axis")


# the files that are not the user's: this package and the standard library (a
# contextlib.contextmanager frame, say), but not what is installed next to it
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_STDLIB_DIRS = tuple({os.path.abspath(sysconfig.get_paths()[k]) for k in ("stdlib",
                                                                          "platstdlib")})


def _library_file(filename: str) -> bool:
    path = os.path.abspath(filename)
    if path.startswith(_PACKAGE_DIR + os.sep):
        return True
    return any(path.startswith(d + os.sep) for d in _STDLIB_DIRS) and not any(
        part in path.split(os.sep) for part in ("site-packages", "dist-packages"))


def _user_line(source: str | None) -> str:
    """``source`` when it is a line of the user's, else the user's line that called the
    transform (the innermost frame of the stack outside dualgpu and the standard
    library): an equation a transform generated inside a composed transform (the inner
    ``laplacian`` of ``laplacian(laplacian(u))``) has no line of the user's own."""
    if source and not _library_file(source.rsplit(":", 1)[0]):
        return source
    frame = sys._getframe(1)
    while frame is not None:
        if not _library_file(frame.f_code.co_filename):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return source or "<unknown location>"


def _propagate(eqn: Eqn, dep, sizes: tuple) -> list[tuple]:
    """Where the instance axes of ``eqn``'s outputs sit, given those of its inputs."""
    prim = eqn.prim
    own = prim.rule("separability")
    if own is not None:  # a custom op's own separability rule, on plain positions
        if any(not at.plain for _, m in dep for at in m):
            raise _Coupling("its operand holds instances on an axis merged with others")
        plain = [(a, tuple(at.pos for at in m)) for a, m in dep]
        return [tuple(At(p) for p in m) for m in own(eqn, plain)]
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
    return [rule(eqn, dep, sizes)]


def _reduction_map(eqn: Eqn, dep) -> tuple:
    axes = eqn.params["axes"]
    (_, m), = dep
    if any(at.pos in axes for at in m):
        raise _Coupling("it reduces over an instance axis")
    return tuple(at.moved(at.pos - sum(1 for a in axes if a < at.pos)) for at in m)


def _scan_map(eqn: Eqn, dep) -> tuple:
    (_, m), = dep
    if any(eqn.params["axis"] == at.pos for at in m):
        raise _Coupling("it accumulates along an instance axis")
    return m


def _aligned(eqn: Eqn, dep, out_ndim: int) -> tuple:
    """Broadcasting: every operand that depends on the input holds its instances on the
    same axes of the output (the lengths are checked by :func:`_check_extents`)."""
    result = None
    for a, m in dep:
        shift = out_ndim - a.ndim
        mapped = tuple(at.moved(at.pos + shift) for at in m)
        if result is not None and mapped != result:
            raise _Coupling("its operands hold instances along different axes")
        result = mapped
    return result


def _transpose_map(eqn: Eqn, dep, sizes) -> tuple:
    (_, m), = dep
    perm = list(eqn.params["perm"])
    return tuple(at.moved(perm.index(at.pos)) for at in m)


def _reshape_rule(eqn: Eqn, dep, sizes) -> tuple:
    (a, m), = dep
    return tuple(_reshaped(tuple(a.shape), tuple(eqn.params["new_shape"]), at, n)
                 for at, n in zip(m, sizes))


def _strides(shape: tuple) -> list[int]:
    """Row-major element strides."""
    out, step = [], 1
    for s in reversed(shape):
        out.append(step)
        step *= int(s)
    return out[::-1]


def _reshaped(old: tuple, new: tuple, at: At, n: int) -> At:
    """Where the instances of ``at`` sit after a reshape from ``old`` to ``new``. In the
    row-major order the instance is the digit ``(flat // S) % n`` with ``S`` its stride:
    an axis of ``new`` whose stride divides ``S`` and whose span (stride times length) is
    a multiple of ``S * n`` holds that digit whole (merged with the axes around it when the
    quotients are not 1); no such axis means the reshape splits the instance axis."""
    if 0 in old:  # no elements: only the axis itself, unchanged, is recognised
        pre_old, pre_new = np.cumprod((1,) + old), np.cumprod((1,) + new)
        for q in range(len(new)):
            if pre_new[q] == pre_old[at.pos] and new[q] == old[at.pos] and at.plain:
                return At(q)
        raise _Coupling("the reshape merges or splits an instance axis")
    S = _strides(old)[at.pos] * at.inner
    found = []
    for q, (stride, length) in enumerate(zip(_strides(new), new)):
        span = stride * int(length)
        if S % stride == 0 and span % (S * n) == 0:
            found.append(At(q, span // (S * n), S // stride))
    if not found:
        raise _Coupling("the reshape splits an instance axis across axes")
    # one instance (n == 1) fits any axis of length 1 at that stride: the graph cannot tell
    # which, and the first plain one is taken
    return next((f for f in found if f.plain), found[0])


def _getitem_map(eqn: Eqn, dep, sizes) -> tuple:
    if any(x is not eqn.inputs[0] for x, _ in dep):
        raise _Coupling("an index array depends on the differentiated input")
    (a, m), = dep
    key = key_to_python(eqn.params["key"], [x.value if hasattr(x, "value") else None
                                            for x in eqn.inputs[1:]])
    return tuple(_indexed(tuple(a.shape), key, at, n) for at, n in zip(m, sizes))


def _indexed(shape: tuple, key: tuple, at: At, n: int) -> At:
    """Where the instances of ``at`` go under ``x[key]``, found on labels: the instance of
    every element, indexed like ``x``. One instance gives labels that are all 0, so then
    the key must take the instance axis whole with a slice (one that takes any number of
    instances whole), and the labels of two instances (the axis twice as long) say where
    it goes."""
    if n == 1:
        entry, axis = _entry_of(key, at.pos)
        if entry is not None and not _whole(entry, shape[at.pos]):
            raise _Coupling("the indexing selects along an instance axis")
        key = key[:axis] + (slice(None),) + key[axis + 1:] if entry is not None else key
        shape = shape[:at.pos] + (at.outer * 2 * at.inner,) + shape[at.pos + 1:]
        n = 2
    labels = (np.arange(shape[at.pos], dtype=np.int64) // at.inner) % n
    lab = np.lib.stride_tricks.as_strided(
        labels, shape=shape, strides=tuple(8 if i == at.pos else 0 for i in range(len(shape))))
    res = np.asarray(lab[key])
    varying = [q for q in range(res.ndim) if res.shape[q] > 1 and
               not np.all(np.diff(res, axis=q) == 0)]
    if len(varying) != 1:
        raise _Coupling("the indexing selects or reorders along an instance axis")
    q = varying[0]
    line = np.moveaxis(res, q, 0).reshape(res.shape[q], -1)[:, 0]
    inner = int(np.argmax(line != line[0])) if line[0] == 0 else 0
    if inner == 0 or len(line) % (n * inner) or not np.array_equal(
            line, (np.arange(len(line)) // inner) % n):
        raise _Coupling("the indexing selects or reorders along an instance axis")
    return At(q, len(line) // (n * inner), inner)


def _whole(entry, length: int) -> bool:
    """Whether the key entry takes an axis of ``length`` whole, in order, whatever its
    length: ``p[:1]`` or ``p[::-1]`` take one instance whole, but not two."""
    return (isinstance(entry, slice) and entry.start in (None, 0) and entry.step in (None, 1)
            and (entry.stop is None or entry.stop >= length))


def _entry_of(key: tuple, axis: int):
    """``(the entry of key that indexes input axis axis, its position in key)``; entry
    None when the key leaves that axis whole (it has fewer entries)."""
    seen = 0
    for i, e in enumerate(key):
        if e is None:
            continue
        if seen == axis:
            return e, i
        seen += 1
    return None, len(key)


def _concatenate_map(eqn: Eqn, dep, sizes) -> tuple:
    axis = eqn.params["axis"]
    maps = {m for _, m in dep}
    if len(maps) != 1 or any(at.pos == axis for at in next(iter(maps))):
        raise _Coupling("it joins arrays along an instance axis")
    return next(iter(maps))


def _pad_map(eqn: Eqn, dep, sizes) -> tuple:
    (_, m), = dep
    if any(eqn.params["pad_width"][at.pos] != (0, 0) for at in m):
        raise _Coupling("it pads along an instance axis")
    return m


def _matmul_map(eqn, dep, sizes) -> tuple:
    a_atom, b_atom = eqn.inputs
    out_nd = eqn.outs[0].ndim
    result = None
    for x, m in dep:
        nd = x.ndim
        mapped = []
        for at in m:
            p = at.pos
            if x is a_atom:
                if p == nd - 1:
                    raise _Coupling("it contracts over an instance axis")
                if nd >= 2 and p == nd - 2:
                    mapped.append(at.moved(out_nd - 2 if b_atom.ndim > 1 else out_nd - 1))
                else:
                    mapped.append(at.moved(p + (out_nd - nd)))
            else:
                if nd == 1 or p == nd - 2:
                    raise _Coupling("it contracts over an instance axis")
                if p == nd - 1:
                    mapped.append(at.moved(out_nd - 1))
                else:
                    mapped.append(at.moved(p + (out_nd - nd) + (1 if a_atom.ndim == 1 else 0)))
        mapped = tuple(mapped)
        if result is not None and result != mapped:
            raise _Coupling("its operands hold instances along different axes")
        result = mapped
    return result


def _einsum_map(eqn, dep, sizes) -> tuple:
    ins, out = eqn.params["spec"].split("->")
    specs = ins.split(",")
    result = None
    for x, m in dep:
        s = specs[eqn.inputs.index(x)]
        labels = [s[at.pos] for at in m]
        if any(lab not in out for lab in labels):
            raise _Coupling("it sums over an instance axis")
        mapped = tuple(at.moved(out.index(lab)) for at, lab in zip(m, labels))
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
