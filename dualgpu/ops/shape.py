"""Shape and indexing ops: reshape, transpose, broadcast_to, getitem and its transpose
scatter_add, concatenate, pad. Each op's rules follow its declaration.

>>> from dualgpu.ops.shape import reshape
>>> reshape.has("linear"), reshape.has("view")
(True, True)
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .. import lax
from ..backends import backend_for_xp
from ..core.dtypes import promote
from ..core.flags import Flag
from ..core.indexing import key_to_python, key_to_source
from ..core.ir import Aval, Eqn
from ..core.primitives import deflowering, defprim, defrules, defstandalone
from ..errors import DualgpuError
from ..rules import batching_rules as batching
from ..rules import laplacian_rules
from ..rules import sparsity_rules as sparsity
from ..rules import taylor_rules as taylor_rules
from ..rules.common import deflinear, unbroadcast
from ..rules.separability_rules import At, Coupling


# --------------------------------------------------------------------------- reshape
def _reshape_shape(avals, new_shape):
    a = avals[0]
    if int(np.prod(new_shape, dtype=np.int64)) != a.size:
        raise DualgpuError(f"reshape: cannot reshape {a.str_short()} into shape {new_shape}")
    return Aval(tuple(new_shape), a.dtype, a.weak)


reshape = defprim(
    "reshape", lambda xp, x, new_shape: xp.reshape(x, new_shape), _reshape_shape,
    kind=Flag.SHAPE, flags=(Flag.LINEAR, Flag.VIEW, Flag.SELECTS), arity=1,
    py="xp.reshape({0}, {new_shape})")


# --------------------------------------------------------------------------- transpose
def _transpose_shape(avals, perm):
    a = avals[0]
    if sorted(perm) != list(range(a.ndim)):
        raise DualgpuError(f"transpose: {perm} is not a permutation of the axes of "
                           f"{a.str_short()}")
    return Aval(tuple(a.shape[i] for i in perm), a.dtype, a.weak)


transpose = defprim(
    "transpose", lambda xp, x, perm: xp.transpose(x, perm), _transpose_shape,
    kind=Flag.SHAPE, flags=(Flag.LINEAR, Flag.SELECTS), arity=1, py="xp.transpose({0}, {perm})")
deflowering(transpose, view="permute")


# --------------------------------------------------------------------------- broadcast_to
def _broadcast_shape(avals, shape):
    a = avals[0]
    try:
        np.broadcast_shapes(a.shape, shape)
    except ValueError:
        raise DualgpuError(f"broadcast_to: cannot broadcast {a.str_short()} to {shape}") from None
    if tuple(np.broadcast_shapes(a.shape, shape)) != tuple(shape):
        raise DualgpuError(f"broadcast_to: cannot broadcast {a.str_short()} to {shape}")
    return Aval(tuple(shape), a.dtype, a.weak)


broadcast_to = defprim(
    "broadcast_to", lambda xp, x, shape: xp.broadcast_to(x, shape), _broadcast_shape,
    kind=Flag.ELEMENTWISE, flags=(Flag.LINEAR, Flag.VIEW, Flag.SELECTS), arity=1, c="{0}",
    py="xp.broadcast_to({0}, {shape})")
deflowering(broadcast_to, view="broadcast")


# --------------------------------------------------------------------------- indexing
# keys are normalized (see dualgpu.core.indexing)


def _getitem_shape(avals, key):
    x = avals[0]
    dummy = np.lib.stride_tricks.as_strided(np.zeros(1, dtype=bool), shape=x.shape,
                                            strides=(0,) * len(x.shape))
    arrays = [np.zeros(a.shape, dtype=np.intp) for a in avals[1:]]
    try:
        shape = dummy[key_to_python(key, arrays)].shape
    except IndexError as e:
        raise DualgpuError(f"getitem on {x.str_short()}: {e}") from None
    return Aval(tuple(shape), x.dtype, x.weak)


def _getitem_impl(xp, x, *arrays, key):
    return x[key_to_python(key, arrays)]


def _getitem_py(names, params):
    return f"{names[0]}[{key_to_source(params['key'], names[1:])}]"


getitem = defprim("getitem", _getitem_impl, _getitem_shape, kind=Flag.SHAPE,
                  flags=(Flag.LINEAR, Flag.SELECTS), py=_getitem_py)
deflowering(getitem, view="index")


def _scatter_shape(avals, key, shape):
    return Aval(tuple(shape), avals[0].dtype)


def _scatter_impl(xp, g, *arrays, key, shape):
    out = xp.zeros(shape, dtype=g.dtype)
    if not arrays:
        out[key_to_python(key, arrays)] = g
        return out
    return backend_for_xp(xp).scatter_add(out, key_to_python(key, arrays), g)


def _scatter_py(names, params):
    return f"ops.scatter_add({', '.join(names)}, key={params['key']!r}, shape={params['shape']})"


scatter_add = defprim(
    "scatter_add", _scatter_impl, _scatter_shape, kind=Flag.SHAPE, flags=(Flag.LINEAR,),
    py=_scatter_py,
    doc="zeros(shape) with g added at x[key]; repeated indices accumulate.")
deflowering(scatter_add, kernel="padded_read")


# --------------------------------------------------------------------------- concatenate
def _concat_shape(avals, axis):
    first = avals[0]
    nd = first.ndim
    total = 0
    for a in avals:
        if a.ndim != nd or any(a.shape[i] != first.shape[i] for i in range(nd) if i != axis):
            raise DualgpuError("concatenate: shapes "
                               + ", ".join(str(b.shape) for b in avals)
                               + f" do not match outside axis {axis}")
        total += a.shape[axis]
    shape = list(first.shape)
    shape[axis] = total
    return Aval(tuple(shape), promote(avals))


concatenate = defprim(
    "concatenate", lambda xp, *xs, axis: xp.concatenate(xs, axis=axis), _concat_shape,
    kind=Flag.SHAPE, flags=(Flag.LINEAR,),
    py=lambda names, params: f"xp.concatenate([{', '.join(names)}], axis={params['axis']})")
deflowering(concatenate, tiny="concat", library="concat_in_place")


# --------------------------------------------------------------------------- pad
def _pad_shape(avals, pad_width, value):
    a = avals[0]
    return Aval(tuple(d + lo + hi for d, (lo, hi) in zip(a.shape, pad_width)), a.dtype, a.weak)


pad = defprim(
    "pad", lambda xp, x, pad_width, value: xp.pad(x, pad_width, constant_values=value),
    _pad_shape, kind=Flag.SHAPE,
    py="xp.pad({0}, {pad_width}, constant_values={value})")

# --------------------------------------------------------------------------- exported modules
# the functions a module of dg.export defines for the ops it calls as ops.<name>
defstandalone(scatter_add, (
        'def scatter_add(g, *arrays, key, shape):\n'
        '    out = xp.zeros(shape, dtype=g.dtype)\n'
        "    index = tuple(None if e is None else slice(*e[1:]) if e[0] == 'slice'\n"
        "                  else e[1] if e[0] == 'int' else arrays[e[1]] for e in key)\n"
        '    xp.add.at(out, index, g)\n'
        '    return out\n'),
              cupy=(
                  'def scatter_add(g, *arrays, key, shape):\n'
                  '    import cupyx\n'
                  '\n'
                  '    out = xp.zeros(shape, dtype=g.dtype)\n'
                  "    index = tuple(None if e is None else slice(*e[1:]) if e[0] == 'slice'\n"
                  "                  else e[1] if e[0] == 'int' else arrays[e[1]] for e in key)\n"
                  '    cupyx.scatter_add(out, index, g)\n'
                  '    return out\n'))

deflinear(reshape, lambda g, x, new_shape: reshape.bind(g, new_shape=tuple(x.shape)))
deflinear(transpose, lambda g, x, perm: transpose.bind(
    g, perm=tuple(int(i) for i in np.argsort(perm))))
deflinear(broadcast_to, lambda g, x, shape: unbroadcast(g, x.aval))
deflinear(getitem, lambda g, x, *arrays, key: scatter_add.bind(
    g, *arrays, key=key, shape=tuple(x.shape)))
deflinear(scatter_add, lambda ct, g, *arrays, key, shape: getitem.bind(ct, *arrays, key=key))


def _concat_jvp(primals, tangents, axis):
    ans = concatenate.bind(*primals, axis=axis)
    if all(t is None for t in tangents):
        return ans, None
    ts = [lax.zeros_like(p, dtype=ans.dtype) if t is None else t
          for p, t in zip(primals, tangents)]
    return ans, concatenate.bind(*ts, axis=axis)


def _concat_vjp(g, primals, ans, axis):
    cts, start = [], 0
    for p in primals:
        n = p.shape[axis]
        key = tuple(("slice", None, None, None) for _ in range(axis)) + (
            ("slice", start, start + n, None),)
        cts.append(unbroadcast(getitem.bind(g, key=key), p.aval) if hasattr(p, "aval")
                   else None)
        start += n
    return tuple(cts)


def _pad_jvp(primals, tangents, pad_width, value):
    ans = pad.bind(primals[0], pad_width=pad_width, value=value)
    t = tangents[0]
    return ans, None if t is None else pad.bind(t, pad_width=pad_width, value=0)


def _pad_vjp(g, primals, ans, pad_width, value):
    key = tuple(("slice", lo, lo + d, None) for d, (lo, hi) in zip(primals[0].shape, pad_width))
    return (getitem.bind(g, key=key),)


defrules(concatenate, jvp=_concat_jvp, vjp=_concat_vjp)
defrules(pad, jvp=_pad_jvp, vjp=_pad_vjp)

# --------------------------------------------------------------------------- batching (vmap)
def _broadcast_to_vmap(eqn, args, batched, size):
    shape = tuple(eqn.params["shape"])
    lifted = batching.lift(args[0], len(shape))
    return batching.one(broadcast_to.bind(lifted, shape=(size,) + shape))


def _transpose_vmap(eqn, args, batched, size):
    perm = (0,) + tuple(p + 1 for p in eqn.params["perm"])
    return batching.one(transpose.bind(args[0], perm=perm))


def _reshape_vmap(eqn, args, batched, size):
    return batching.one(reshape.bind(args[0], new_shape=(size,) + tuple(eqn.params["new_shape"])))


def _pad_vmap(eqn, args, batched, size):
    pad_width = ((0, 0),) + tuple(eqn.params["pad_width"])
    return batching.one(pad.bind(args[0], pad_width=pad_width, value=eqn.params["value"]))


def _concatenate_vmap(eqn, args, batched, size):
    xs = [a if b else batching.batched(a, size) for a, b in zip(args, batched)]
    return batching.one(concatenate.bind(*xs, axis=eqn.params["axis"] + 1))


# Indexing. A normalized key (core/indexing.py) has entries ("slice", ...), ("int", i), None
# and ("array", k). With index arrays present, ints are advanced indices too; advanced
# indices separated by a slice or None put their dimensions first (NumPy's rule).
_ALL = ("slice", None, None, None)


def _advanced(key) -> list[int]:
    if not any(e is not None and e[0] == "array" for e in key):
        return []
    return [i for i, e in enumerate(key) if e is not None and e[0] in ("array", "int")]


def _adjacent(positions) -> bool:
    return positions == list(range(positions[0], positions[0] + len(positions)))


def _indexrank(arrays, batched) -> int:
    return max((batching.rank(a, b) for a, b in zip(arrays, batched)), default=0)


def _shared_index_key(key, arrays, batched):
    """(key, perm) for an operand batched along axis 0 and shared index arrays: the key
    gets a leading full slice; ``perm`` brings the batch axis of the result back to 0."""
    adv = _advanced(key)
    if not adv or _adjacent(adv):
        return (_ALL,) + tuple(key), None
    q = _indexrank(arrays, batched)  # the advanced dimensions came first
    return (_ALL,) + tuple(key), q


def _batched_index_key(key, arrays, batched, size):
    """(key, arrays, perm) for batched index arrays: one more index array, the example
    number, selects the example; ``perm`` orders the result as the per-example op would."""
    na = _indexrank(arrays, batched)
    iota = np.arange(size, dtype=np.intp).reshape((size,) + (1,) * na)
    new_arrays = [iota] + [batching.lift(a, na) if b else a for a, b in zip(arrays, batched)]
    new_key = (("array", 0),) + tuple(
        ("array", e[1] + 1) if e is not None and e[0] == "array" else e for e in key)
    adv = _advanced(key)
    # raw result: (B, *advanced, *the others in order); the per-example result has the
    # advanced dimensions in place when they are adjacent
    p = 0
    if _adjacent(adv):
        p = sum(1 for e in key[:adv[0]] if e is None or e[0] == "slice")
    perm = None
    if p:
        perm = ([0] + [1 + na + i for i in range(p)] + [1 + i for i in range(na)])
    return new_key, new_arrays, perm, na, p


def _getitem_vmap(eqn, args, batched, size):
    x, *arrays = args
    key = eqn.params["key"]
    if not any(batched[1:]):
        new_key, q = _shared_index_key(key, arrays, batched[1:])
        out = getitem.bind(x, *arrays, key=new_key)
        return batching.one(lax.moveaxis(out, q, 0) if q else out)
    if not batched[0]:
        x = batching.batched(x, size)
    new_key, new_arrays, perm, _, _ = _batched_index_key(key, arrays, batched[1:], size)
    out = getitem.bind(x, *new_arrays, key=new_key)
    if perm is not None:
        out = lax.transpose(out, perm + list(range(len(perm), len(out.shape))))
    return batching.one(out)


def _scatter_add_vmap(eqn, args, batched, size):
    g, *arrays = args
    key, shape = eqn.params["key"], (size,) + tuple(eqn.params["shape"])
    if not batched[0]:
        g = batching.batched(g, size)
    if not any(batched[1:]):
        new_key, q = _shared_index_key(key, arrays, batched[1:])
        g = lax.moveaxis(g, 0, q) if q else g
        return batching.one(scatter_add.bind(g, *arrays, key=new_key, shape=shape))
    new_key, new_arrays, perm, _, _ = _batched_index_key(key, arrays, batched[1:], size)
    if perm is not None:
        full = perm + list(range(len(perm), len(g.shape)))
        g = lax.transpose(g, [int(i) for i in np.argsort(full)])
    return batching.one(scatter_add.bind(g, *new_arrays, key=new_key, shape=shape))


defrules(broadcast_to, vmap=_broadcast_to_vmap)
defrules(transpose, vmap=_transpose_vmap)
defrules(reshape, vmap=_reshape_vmap)
defrules(pad, vmap=_pad_vmap)
defrules(concatenate, vmap=_concatenate_vmap)
defrules(getitem, vmap=_getitem_vmap)
defrules(scatter_add, vmap=_scatter_add_vmap)

# --------------------------------------------------------------------------- separability
def _transpose_separability(eqn: Eqn, dep, sizes) -> tuple:
    (_, m), = dep
    perm = list(eqn.params["perm"])
    return tuple(at.moved(perm.index(at.pos)) for at in m)


def _reshape_separability(eqn: Eqn, dep, sizes) -> tuple:
    (i, m), = dep
    return tuple(_reshaped(tuple(eqn.inputs[i].shape), tuple(eqn.params["new_shape"]), at, n)
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
    # (an empty value never gets here: check_separable tracks it as a constant)
    S = _strides(old)[at.pos] * at.inner
    found = []
    for q, (stride, length) in enumerate(zip(_strides(new), new)):
        span = stride * int(length)
        if S % stride == 0 and span % (S * n) == 0:
            found.append(At(q, span // (S * n), S // stride))
    if not found:
        raise Coupling("the reshape splits an instance axis across axes")
    # one instance (n == 1) fits any axis of length 1 at that stride: the graph cannot tell
    # which, and the first plain one is taken
    return next((f for f in found if f.plain), found[0])


def _getitem_separability(eqn: Eqn, dep, sizes) -> tuple:
    if any(i != 0 for i, _ in dep):
        raise Coupling("an index array depends on the differentiated input")
    (_, m), = dep
    key = key_to_python(eqn.params["key"], [x.value if hasattr(x, "value") else None
                                            for x in eqn.inputs[1:]])
    return tuple(_indexed(tuple(eqn.inputs[0].shape), key, at, n) for at, n in zip(m, sizes))


def _indexed(shape: tuple, key: tuple, at: At, n: int) -> At:
    """Where the instances of ``at`` go under ``x[key]``, found on labels: the instance of
    every element, indexed like ``x``. One instance gives labels that are all 0, so then
    the key must take the instance axis whole with a slice (one that takes any number of
    instances whole), and the labels of two instances (the axis twice as long) say where
    it goes."""
    if n == 1:
        entry, axis = _entry_of(key, at.pos)
        if entry is not None and not _whole(entry, shape[at.pos]):
            raise Coupling("the indexing selects along an instance axis")
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
        raise Coupling("the indexing selects or reorders along an instance axis")
    q = varying[0]
    line = np.moveaxis(res, q, 0).reshape(res.shape[q], -1)[:, 0]
    inner = int(np.argmax(line != line[0])) if line[0] == 0 else 0
    if inner == 0 or len(line) % (n * inner) or not np.array_equal(
            line, (np.arange(len(line)) // inner) % n):
        raise Coupling("the indexing selects or reorders along an instance axis")
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


def _concatenate_separability(eqn: Eqn, dep, sizes) -> tuple:
    axis = eqn.params["axis"]
    maps = {m for _, m in dep}
    # empty parts add nothing: joined along an instance axis to one array alone, they leave
    # it as it is
    alone = len(dep) == 1 and all(0 in x.shape for j, x in enumerate(eqn.inputs)
                                  if j != dep[0][0])
    if len(maps) != 1 or (any(at.pos == axis for at in next(iter(maps))) and not alone):
        raise Coupling("it joins arrays along an instance axis")
    return next(iter(maps))


def _pad_separability(eqn: Eqn, dep, sizes) -> tuple:
    (_, m), = dep
    if any(eqn.params["pad_width"][at.pos] != (0, 0) for at in m):
        raise Coupling("it pads along an instance axis")
    return m


defrules(transpose, separability=_transpose_separability)
defrules(reshape, separability=_reshape_separability)
defrules(getitem, separability=_getitem_separability)
defrules(concatenate, separability=_concatenate_separability)
defrules(pad, separability=_pad_separability)

# ------------------------------------------------------------------ jets (forward Laplacian)
def _pad_jet(eqn, values, jets, mode):
    J, S = jets[0]
    Jy = mode.batched(eqn, [J], [True], value=0)[0]
    Sy = None
    if S is not None:
        Sy = (mode.batched(eqn, [S], [True], value=0)[0] if mode.diag
              else laplacian_rules.bind_all(eqn, [S], value=0)[0])
    return [(Jy, Sy)]


defrules(pad, laplacian=_pad_jet)  # the other shape ops go by their flag (linear)
# Taylor mode: each coefficient padded with zeros (the padding is a constant)
defrules(pad, taylor=taylor_rules.coefficientwise(
    lambda eqn, c, mode: mode.apply(eqn, [c], [mode.size is not None], value=0)[0]))


# ------------------------------------------------------------------ sparsity patterns
def _pad_sparsity(eqn, deps, ctx):
    # the entries the padding adds are constants: index -1 reads nothing
    x = eqn.inputs[0]
    source = np.arange(1, x.aval.size + 1, dtype=np.int64).reshape(x.shape)
    index = np.pad(source, eqn.params["pad_width"], constant_values=0) - 1
    return sparsity.gather(deps[0], index)


def _concatenate_sparsity(eqn, deps, ctx):
    blocks, parts, start = [], [], 0
    for a, d in zip(eqn.inputs, deps):
        size = int(np.prod(a.shape, dtype=np.int64))
        parts.append(np.arange(start, start + size, dtype=np.int64).reshape(a.shape))
        blocks.append(sparsity.empty(size, ctx.n) if d is None else d)
        start += size
    index = np.concatenate(parts, axis=eqn.params["axis"])
    return sparsity.gather(sp.vstack(blocks, format="csr"), index)


def _scatter_add_sparsity(eqn, deps, ctx):
    g = eqn.inputs[0]
    shape = tuple(eqn.params["shape"])
    out_size = int(np.prod(shape, dtype=np.int64))
    if deps[0] is None:
        return None
    targets = sparsity.scatter_targets(eqn.params["key"], ctx.values[1:], tuple(g.shape), shape)
    if targets is None:   # index arrays computed from the input: any entry may be hit
        return sparsity.dense(deps[:1], out_size, ctx.n)
    return sparsity.combine(sparsity.group_matrix(targets, out_size), deps[0])


defrules(pad, sparsity=_pad_sparsity)
defrules(concatenate, sparsity=_concatenate_sparsity)
defrules(scatter_add, sparsity=_scatter_add_sparsity)
# reshape, transpose, broadcast_to and getitem go by their flag (they select entries)
