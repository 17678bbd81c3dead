"""Shape and indexing ops: reshape, transpose, broadcast_to, getitem and its transpose
scatter_add, concatenate, pad. Their derivatives are in :mod:`dualgpu.rules.shape`.

>>> from dualgpu.ops.shape import reshape
>>> reshape.has("linear"), reshape.has("view")
(True, True)
"""
from __future__ import annotations

import numpy as np

from ..backends import backend_for_xp
from ..core.dtypes import promote
from ..core.flags import Flag
from ..core.indexing import key_to_python, key_to_source
from ..core.ir import Aval
from ..core.primitives import deflowering, defprim, defstandalone
from ..errors import DualgpuError


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
