"""Shape and indexing ops: reshape, transpose, broadcast_to, getitem and its transpose
scatter_add, concatenate, pad."""
from __future__ import annotations

import numpy as np

from .. import numpy_api as dnp
from ..core.ir import Aval
from ..core.primitives import defprim
from ..errors import DualgpuError
from ._util import unbroadcast


# --------------------------------------------------------------------------- reshape
def _reshape_shape(avals, new_shape):
    a = avals[0]
    if int(np.prod(new_shape, dtype=np.int64)) != a.size:
        raise DualgpuError(f"reshape: cannot reshape {a.str_short()} into shape {new_shape}")
    return Aval(tuple(new_shape), a.dtype, a.weak)


reshape = defprim(
    "reshape", lambda xp, x, new_shape: xp.reshape(x, new_shape), _reshape_shape,
    jvp=lambda p, t, new_shape: (reshape.bind(p[0], new_shape=new_shape),
                                 None if t[0] is None else reshape.bind(t[0],
                                                                        new_shape=new_shape)),
    vjp=lambda g, p, ans, new_shape: (reshape.bind(g, new_shape=tuple(p[0].shape)),),
    kind="shape", py="xp.reshape({0}, {new_shape})")


# --------------------------------------------------------------------------- transpose
def _transpose_shape(avals, perm):
    a = avals[0]
    if sorted(perm) != list(range(a.ndim)):
        raise DualgpuError(f"transpose: {perm} is not a permutation of the axes of "
                           f"{a.str_short()}")
    return Aval(tuple(a.shape[i] for i in perm), a.dtype, a.weak)


transpose = defprim(
    "transpose", lambda xp, x, perm: xp.transpose(x, perm), _transpose_shape,
    jvp=lambda p, t, perm: (transpose.bind(p[0], perm=perm),
                            None if t[0] is None else transpose.bind(t[0], perm=perm)),
    vjp=lambda g, p, ans, perm: (transpose.bind(g, perm=tuple(int(i) for i in
                                                              np.argsort(perm))),),
    kind="shape", py="xp.transpose({0}, {perm})")


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
    jvp=lambda p, t, shape: (broadcast_to.bind(p[0], shape=shape),
                             None if t[0] is None else broadcast_to.bind(t[0], shape=shape)),
    vjp=lambda g, p, ans, shape: (unbroadcast(g, p[0].aval),),
    kind="elementwise", c="{0}", py="xp.broadcast_to({0}, {shape})")
broadcast_to.arity = 1


# --------------------------------------------------------------------------- indexing
# A normalized key is a tuple of entries: ("slice", start, stop, step), ("int", i), None
# (new axis), or ("array", k) for the k-th index-array operand. No Ellipsis remains.


def key_to_python(key, arrays):
    """Turn a normalized key back into a NumPy indexing tuple."""
    out = []
    for e in key:
        if e is None:
            out.append(None)
        elif e[0] == "slice":
            out.append(slice(e[1], e[2], e[3]))
        elif e[0] == "int":
            out.append(e[1])
        else:
            out.append(arrays[e[1]])
    return tuple(out)


def key_to_source(key, array_names) -> str:
    parts = []
    for e in key:
        if e is None:
            parts.append("None")
        elif e[0] == "slice":
            s = "" if e[1] is None else str(e[1])
            s += ":" + ("" if e[2] is None else str(e[2]))
            if e[3] is not None:
                s += ":" + str(e[3])
            parts.append(s)
        elif e[0] == "int":
            parts.append(str(e[1]))
        else:
            parts.append(array_names[e[1]])
    return ", ".join(parts) if parts else "()"


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


def _getitem_jvp(primals, tangents, key):
    x, *arrays = primals
    ans = getitem.bind(x, *arrays, key=key)
    t = tangents[0]
    return ans, None if t is None else getitem.bind(t, *arrays, key=key)


def _getitem_vjp(g, primals, ans, key):
    x, *arrays = primals
    ct = scatter_add.bind(g, *arrays, key=key, shape=tuple(x.shape))
    return (ct,) + (None,) * len(arrays)


def _getitem_py(names, params):
    return f"{names[0]}[{key_to_source(params['key'], names[1:])}]"


getitem = defprim("getitem", _getitem_impl, _getitem_shape, jvp=_getitem_jvp,
                  vjp=_getitem_vjp, kind="shape", py=_getitem_py)


def _scatter_shape(avals, key, shape):
    return Aval(tuple(shape), avals[0].dtype)


def _scatter_impl(xp, g, *arrays, key, shape):
    from ..backends import backend_for_xp

    out = xp.zeros(shape, dtype=g.dtype)
    if not arrays:
        out[key_to_python(key, arrays)] = g
        return out
    return backend_for_xp(xp).scatter_add(out, key_to_python(key, arrays), g)


def _scatter_jvp(primals, tangents, key, shape):
    g, *arrays = primals
    ans = scatter_add.bind(g, *arrays, key=key, shape=shape)
    t = tangents[0]
    return ans, None if t is None else scatter_add.bind(t, *arrays, key=key, shape=shape)


def _scatter_vjp(ct, primals, ans, key, shape):
    g, *arrays = primals
    return (getitem.bind(ct, *arrays, key=key),) + (None,) * len(arrays)


def _scatter_py(names, params):
    return f"ops.scatter_add({', '.join(names)}, key={params['key']!r}, shape={params['shape']})"


scatter_add = defprim(
    "scatter_add", _scatter_impl, _scatter_shape, jvp=_scatter_jvp, vjp=_scatter_vjp,
    kind="shape", py=_scatter_py,
    doc="zeros(shape) with g added at x[key]; repeated indices accumulate.")


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
    from ._util import promote

    shape = list(first.shape)
    shape[axis] = total
    return Aval(tuple(shape), promote(avals))


def _concat_jvp(primals, tangents, axis):
    ans = concatenate.bind(*primals, axis=axis)
    if all(t is None for t in tangents):
        return ans, None
    ts = [dnp.zeros_like(p, dtype=ans.dtype) if t is None else t
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


concatenate = defprim(
    "concatenate", lambda xp, *xs, axis: xp.concatenate(xs, axis=axis), _concat_shape,
    jvp=_concat_jvp, vjp=_concat_vjp, kind="shape",
    py=lambda names, params: f"xp.concatenate([{', '.join(names)}], axis={params['axis']})")


# --------------------------------------------------------------------------- pad
def _pad_shape(avals, pad_width, value):
    a = avals[0]
    return Aval(tuple(d + lo + hi for d, (lo, hi) in zip(a.shape, pad_width)), a.dtype, a.weak)


def _pad_jvp(primals, tangents, pad_width, value):
    ans = pad.bind(primals[0], pad_width=pad_width, value=value)
    t = tangents[0]
    return ans, None if t is None else pad.bind(t, pad_width=pad_width, value=0)


def _pad_vjp(g, primals, ans, pad_width, value):
    key = tuple(("slice", lo, lo + d, None) for d, (lo, hi) in zip(primals[0].shape, pad_width))
    return (getitem.bind(g, key=key),)


pad = defprim(
    "pad", lambda xp, x, pad_width, value: xp.pad(x, pad_width, constant_values=value),
    _pad_shape, jvp=_pad_jvp, vjp=_pad_vjp, kind="shape",
    py="xp.pad({0}, {pad_width}, constant_values={value})")
