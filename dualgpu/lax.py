"""Op constructors: what derivative rules and the NumPy front end are written with.

Each function binds one primitive of :mod:`dualgpu.ops` (or a fixed few) after
normalising its arguments -- axes, shapes, index keys -- the way JAX's rules are written with
``lax`` rather than ``jax.numpy``. Every function also works on concrete arrays, where it
computes at once. The elementwise ops are the primitives themselves, under their names
(``lax.sin``: each declaration row of the op layer, found by :func:`__getattr__`; calling a
primitive binds it); algebraic identities on literals and fills (``x * 1``, ``0.5 * ones``)
are folded where an equation is recorded (each op's ``fold`` rule,
:mod:`dualgpu.rules.folding_rules`).

The NumPy-compatible namespace (:mod:`dualgpu.frontend.numpy`) sits above: it adds NumPy's
keyword arguments, array-likes and the functions built from several ops.

    >>> from dualgpu import lax
    >>> dg.grad(lambda x: lax.sum(lax.multiply(x, x)))(np.array([1.0, 2.0]))
    array([2., 4.])
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .backends import namespace_of
from .core.axes import check_axis as _check_axis
from .core.axes import normalize_axes
from .core.indexing import key_to_python as _key_to_python
from .core.trace import Tracer
from .errors import (
    ArgumentTypeError,
    DualgpuError,
    InvalidArgumentError,
    InvalidIndexError,
    ShapeMismatchError,
    UnsupportedOpError,
    user_location,
)
from .errors import AxisError as _AxisError
from .ops import casts as _casts
from .ops import convolution as _cv
from .ops import elementwise as _ew
from .ops import reductions as _red
from .ops import shape as _sh
from .rules.elementwise_rules import ELEMENTWISE as _ELEMENTWISE


def is_tracer(x) -> bool:
    """Whether ``x`` is a traced value."""
    return isinstance(x, Tracer)


def shape_of(x) -> tuple:
    """The shape of a traced value, an array or a scalar."""
    return tuple(np.shape(x)) if not is_tracer(x) else x.shape


def dtype_of(x) -> np.dtype:
    """The dtype of a traced value, an array or a scalar (NumPy's rule for scalars)."""
    if is_tracer(x) or hasattr(x, "dtype"):
        return x.dtype
    return np.result_type(x)


def namespace_like(*xs):
    """The array library (``numpy`` or ``cupy``) of the first traced value, else of the
    arrays among ``xs``."""
    for x in xs:
        if is_tracer(x):
            return x._builder.xp
    return namespace_of(xs)


def where(condition, x=None, y=None):
    """``np.where(c, x, y)``; the one-argument form (data-dependent shape) is refused."""
    if x is None or y is None:
        raise UnsupportedOpError(
            f"np.where(condition) with one argument has a data-dependent shape "
            f"(at {user_location()}); use the three-argument form")
    return _ew.where.bind(condition, x, y)


def astype(x, dtype, copy=True, strong=False):
    # strong: a weakly typed value (a traced Python scalar) is made an ordinary one of its
    # dtype, even when the dtype is the same (a NumPy function's result)
    dtype = np.dtype(dtype)
    if dtype_of(x) == dtype and not (strong and getattr(getattr(x, "aval", None), "weak", False)):
        return x
    return _casts.convert_element_type.bind(x, dtype=dtype.name)


def stop_gradient(x):
    """The value of ``x``, treated as a constant by every derivative."""
    return _casts.stop_gradient.bind(x)


def _complex_input(x) -> bool:
    return dtype_of(x).kind == "c"


def conj(x):
    """The complex conjugate; the identity on real values."""
    if not _complex_input(x):
        return x
    return _casts.conj.bind(x) if is_tracer(x) else namespace_like(x).conj(x)


def real(x):
    """``np.real``: the identity on real values."""
    if not _complex_input(x):
        return x
    return _casts.real.bind(x) if is_tracer(x) else namespace_like(x).real(x)


def imag(x):
    """``np.imag``: zeros on real values (a constant: no derivative flows)."""
    if not _complex_input(x):
        return zeros_like(x) if is_tracer(x) else namespace_like(x).zeros_like(x)
    return _casts.imag.bind(x) if is_tracer(x) else namespace_like(x).imag(x)


def _reduce(prim, a, axis, keepdims, name=None):
    nd = len(shape_of(a))
    axes = normalize_axes(axis, nd, name or prim.name)
    if not axes:
        r = a
    else:
        r = prim.bind(a, axes=axes)
    if keepdims:
        r = reshape(r, tuple(1 if i in axes else d for i, d in enumerate(shape_of(a))))
    return r


def _accumulated(a, dtype):
    """``a`` in ``dtype``, or in NumPy's accumulator of sums and products when it is None:
    bools and narrower integers in int64 (unsigned ones in uint64), as ``np.sum`` of int8
    values is int64."""
    if dtype is None:
        dt = dtype_of(a)
        if dt.kind == "b" or dt.kind in "iu" and dt.itemsize < 8:
            dtype = np.uint64 if dt.kind == "u" else np.int64
    return a if dtype is None else astype(a, dtype)


def sum(a, axis=None, dtype=None, keepdims=False):  # noqa: A001
    """The sum over ``axis`` (an int, a tuple or None for all)."""
    return _reduce(_red.reduce_sum, _accumulated(a, dtype), axis, keepdims, "sum")


def max(a, axis=None, keepdims=False):  # noqa: A001
    """The maximum over ``axis``."""
    return _reduce(_red.reduce_max, a, axis, keepdims, "max")


def min(a, axis=None, keepdims=False):  # noqa: A001
    """The minimum over ``axis``."""
    return _reduce(_red.reduce_min, a, axis, keepdims, "min")


def prod(a, axis=None, dtype=None, keepdims=False):
    """The product over ``axis``."""
    return _reduce(_red.reduce_prod, _accumulated(a, dtype), axis, keepdims, "prod")


def _scan(prim, a, axis, dtype):
    a = _accumulated(a, dtype)
    if axis is None:
        a, axis = ravel(a), 0
    return prim.bind(a, axis=_check_axis(axis, len(shape_of(a)), prim.name))


def cumsum(a, axis=None, dtype=None):
    """The running sum along ``axis`` (None: of the flattened array)."""
    return _scan(_red.cumsum, a, axis, dtype)


def cumprod(a, axis=None, dtype=None):
    """The running product along ``axis`` (None: of the flattened array)."""
    return _scan(_red.cumprod, a, axis, dtype)


def reshape(a, newshape=None, order="C", shape=None):
    if shape is not None:
        newshape = shape
    if order not in ("C", None):
        raise UnsupportedOpError(f"reshape(order={order!r}) is not supported on traced values")
    newshape = _shape_argument(newshape, "reshape")
    size = int(np.prod(shape_of(a), dtype=np.int64))
    if -1 in newshape:
        known = int(np.prod([d for d in newshape if d != -1], dtype=np.int64))
        newshape[newshape.index(-1)] = size // known if known else 0
    newshape = tuple(newshape)
    if newshape == shape_of(a):
        return a
    return _sh.reshape.bind(a, new_shape=newshape)


def _shape_argument(shape, op: str) -> list:
    """A shape argument as a list of ints, refused as NumPy refuses it (floats, bools,
    ``None``, more than one negative size) with the argument and the fix."""
    dims = (shape,) if isinstance(shape, (int, np.integer)) or np.ndim(shape) == 0 else shape
    if shape is None or isinstance(shape, (str, bytes)):
        dims = (shape,)
    out = []
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
            raise ArgumentTypeError(
                f"{op}: the new shape must be integers, got {shape!r} (an entry of type "
                f"{type(d).__name__}; NumPy refuses it too) at {user_location()}; pass "
                f"e.g. int(n) or n // 2")
        out.append(-1 if d < 0 else int(d))  # NumPy reads any negative size as unknown
    if out.count(-1) > 1:
        raise InvalidArgumentError(f"{op}: can only specify one unknown dimension (-1), got "
                                   f"{shape!r} (at {user_location()})")
    return out


def ravel(a, order="C"):
    return reshape(a, (-1,), order=order)


def transpose(a, axes=None):
    nd = len(shape_of(a))
    if axes is None:
        perm = tuple(range(nd))[::-1]
    else:
        perm = tuple(_check_axis(i, nd, "transpose") for i in axes)
        if sorted(perm) != list(range(nd)):
            raise InvalidArgumentError(f"transpose: axes {tuple(axes)} are not a permutation "
                                       f"of the "
                                       f"{nd} axes of the array (at {user_location()})")
    if perm == tuple(range(nd)):
        return a
    return _sh.transpose.bind(a, perm=perm)


def swapaxes(a, axis1, axis2):
    nd = len(shape_of(a))
    perm = list(range(nd))
    i, j = _check_axis(axis1, nd, "swapaxes"), _check_axis(axis2, nd, "swapaxes")
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


def moveaxis(a, source, destination):
    nd = len(shape_of(a))
    src = [_check_axis(s, nd, "moveaxis")
           for s in (source if isinstance(source, (tuple, list)) else [source])]
    dst = [_check_axis(d, nd, "moveaxis") for d in (
        destination if isinstance(destination, (tuple, list)) else [destination])]
    if len(src) != len(dst):
        raise InvalidArgumentError("moveaxis: source and destination must have the same number of "
                                   f"elements (at {user_location()})")
    for name, axes in (("source", src), ("destination", dst)):
        if len(set(axes)) != len(axes):
            raise _AxisError(f"moveaxis: repeated axis in `{name}` argument "
                             f"(at {user_location()})")
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


def expand_dims(a, axis):
    shape = list(shape_of(a))
    axes = axis if isinstance(axis, (tuple, list)) else [axis]
    nd = len(shape) + len(axes)
    for ax in normalize_axes(axes, nd, "expand_dims"):
        shape.insert(ax, 1)
    return reshape(a, tuple(shape))


def squeeze(a, axis=None):
    shape = shape_of(a)
    if axis is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    else:
        axes = normalize_axes(axis, len(shape), "squeeze")
        for i in axes:
            if shape[i] != 1:
                raise ShapeMismatchError(f"squeeze: axis {i} of shape {shape} is not of size 1")
    return reshape(a, tuple(d for i, d in enumerate(shape) if i not in axes))


def broadcast_to(a, shape):
    shape = tuple(int(d) for d in shape)
    if shape_of(a) == shape:
        return a
    if not is_tracer(a):
        return namespace_like(a).broadcast_to(a, shape)
    return _sh.broadcast_to.bind(a, shape=shape)


def concatenate(arrays, axis=0):
    """Join arrays along ``axis`` (None: their flattened forms)."""
    arrays = list(arrays)
    if axis is None:
        arrays, axis = [ravel(a) for a in arrays], 0
    nd = len(shape_of(arrays[0]))
    if nd == 0:
        raise ShapeMismatchError(f"concatenate: zero-dimensional arrays cannot be concatenated "
                                 f"(at {user_location()})")
    axis = _check_axis(axis, nd, "concatenate")
    return _sh.concatenate.bind(*arrays, axis=axis) if len(arrays) > 1 else arrays[0]


def stack(arrays, axis=0):
    """Join arrays along a new ``axis``."""
    arrays = list(arrays)
    if not arrays:
        raise InvalidArgumentError(f"stack: need at least one array to stack "
                                   f"(at {user_location()})")
    axis = _check_axis(axis, len(shape_of(arrays[0])) + 1, "stack")
    return concatenate([expand_dims(a, axis) for a in arrays], axis=axis)


def flip(a, axis=None):
    nd = len(shape_of(a))
    axes = normalize_axes(axis, nd, "flip")
    return getitem(a, tuple(slice(None, None, -1) if i in axes else slice(None)
                            for i in range(nd)))


def pad(array, pad_width, mode="constant", constant_values=0):
    if mode != "constant":
        raise UnsupportedOpError(f"np.pad(mode={mode!r}) is not supported; use 'constant'")
    nd = len(shape_of(array))
    if nd == 0:  # NumPy pads nothing in a 0-d array
        return array
    try:
        pw = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (nd, 2))
    except ValueError:
        raise ShapeMismatchError(f"pad: pad_width {pad_width!r} does not fit an array of rank {nd} "
                                 f"(at {user_location()})") from None
    pw = tuple((int(lo), int(hi)) for lo, hi in pw)
    return _sh.pad.bind(array, pad_width=pw, value=float(constant_values))


def full_like(a, fill_value, dtype=None, **kw):
    if is_tracer(a):
        if dtype is not None and np.dtype(dtype) != a.dtype:
            a = astype(a, dtype)
        return _casts.fill_like.bind(a, value=fill_value)
    return namespace_like(a).full(shape_of(a), fill_value, dtype=dtype or dtype_of(a))


def zeros_like(a, dtype=None, **kw):
    return full_like(a, 0.0 if np.dtype(dtype or dtype_of(a)).kind in "fc" else 0, dtype)


def ones_like(a, dtype=None, **kw):
    return full_like(a, 1.0 if np.dtype(dtype or dtype_of(a)).kind in "fc" else 1, dtype)


def eye(n, m=None, k=0, dtype=float, like=None):
    xp = namespace_like(like) if like is not None else np
    return xp.eye(n, m, k, dtype=dtype)


def _is_bool_mask(k) -> bool:
    """A concrete boolean index array (NumPy or CuPy: no host conversion of CuPy arrays)."""
    if is_tracer(k) or isinstance(k, (slice, type(None), type(Ellipsis))) or np.ndim(k) == 0:
        return False
    dtype = k.dtype if hasattr(k, "dtype") else np.asarray(k).dtype
    return dtype.kind == "b"


def _normalize_key(x, key):
    if not isinstance(key, tuple):
        key = (key,)
    if builtins.any(isinstance(k, (bool, np.bool_)) for k in key):
        # a Python/NumPy bool scalar is a 0-d mask, not the integer 0 or 1: True adds an
        # axis (like None); False selects nothing
        if not builtins.all(bool(k) for k in key if isinstance(k, (bool, np.bool_))):
            raise UnsupportedOpError(
                f"indexing with a False scalar (an empty selection) at {user_location()} is "
                "not supported on traced values")
        key = tuple(None if isinstance(k, (bool, np.bool_)) else k for k in key)
    shape = shape_of(x)
    n_consumed = builtins.sum(
        1 if k is not None and k is not Ellipsis else 0 for k in key)
    # boolean masks consume as many dims as they have
    n_consumed += builtins.sum(len(np.shape(k)) - 1 for k in key if _is_bool_mask(k))
    if builtins.sum(1 for k in key if k is Ellipsis) > 1:
        raise InvalidIndexError(f"an index can only have a single ellipsis ('...') "
                                f"(at {user_location()})")
    out, arrays = [], []
    for k in key:
        if k is Ellipsis:
            out.extend([("slice", None, None, None)] * (len(shape) - n_consumed))
        elif k is None:
            out.append(None)
        elif isinstance(k, slice):
            out.append(("slice", k.start, k.stop, k.step))
        elif isinstance(k, (int, np.integer)):
            out.append(("int", int(k)))
        elif is_tracer(k):
            if k.dtype == bool:
                raise UnsupportedOpError(
                    f"indexing with a traced boolean mask at {user_location()} has a "
                    "data-dependent shape; use np.where(mask, x, 0) instead")
            if k.dtype.kind not in "iu":
                raise InvalidIndexError(f"index arrays must be integers, got {k.dtype} "
                                        f"(at {user_location()})")
            out.append(("array", len(arrays)))
            arrays.append(k)
        else:
            arr = k if hasattr(k, "dtype") else np.asarray(k)
            if arr.dtype == bool:
                for nz in arr.nonzero():
                    out.append(("array", len(arrays)))
                    arrays.append(nz)
            else:
                if arr.dtype.kind not in "iu":
                    raise InvalidIndexError(f"index arrays must be integers, got {arr.dtype} "
                                            f"(at {user_location()})")
                out.append(("array", len(arrays)))
                arrays.append(arr)
    return tuple(out), arrays


def getitem(x, key):
    """``x[key]``: slices (negative steps too), ints, None, ``...``, integer and constant
    boolean arrays."""
    nkey, arrays = _normalize_key(x, key)
    if builtins.all(e is not None and e[0] == "slice" and e[1:] == (None, None, None)
                    for e in nkey) and len(nkey) <= len(shape_of(x)):
        return x
    traced_index = builtins.any(is_tracer(i) for i in arrays)
    if not is_tracer(x) and not traced_index:
        return x[_key_to_python(nkey, arrays)]
    if arrays and not traced_index:
        _check_constant_indices(x, nkey, arrays)
    return _sh.getitem.bind(x, *arrays, key=nkey)


def _check_constant_indices(x, nkey, arrays):
    """Constant index arrays are known while tracing: check their bounds now (as NumPy
    would) rather than fail inside the generated program."""
    if builtins.any(not isinstance(i, np.ndarray) for i in arrays):
        return  # device (CuPy) index arrays: checking would copy them to the host
    dummy = np.lib.stride_tricks.as_strided(np.zeros(1, dtype=bool), shape=x.shape,
                                            strides=(0,) * len(x.shape))
    try:
        dummy[_key_to_python(nkey, [np.asarray(i) for i in arrays])]
    except IndexError as e:
        raise DualgpuError(f"getitem on {x.aval.str_short()}: {e} (at {user_location()})"
                           ) from None


def diagonal(a, offset=0, axis1=0, axis2=1):
    a = moveaxis(a, (axis1, axis2), (-2, -1))
    n, m = shape_of(a)[-2:]
    i = np.arange(builtins.max(0, -offset), builtins.min(n, m - offset))
    return getitem(a, (Ellipsis, i, i + offset))


def _along_axis_key(shape, indices, axis):
    """The getitem key of ``take_along_axis``: ``indices`` on ``axis``, aranges of the
    array's lengths on the other axes; the index arrays broadcast together, so indices of
    length 1 along another axis are used for every position there (NumPy's rule)."""
    nd = len(shape)
    key = []
    for i in range(nd):
        if i == axis:
            key.append(indices)
        else:
            key.append(np.arange(shape[i]).reshape((-1,) + (1,) * (nd - i - 1)))
    return tuple(key)


def take_along_axis(arr, indices, axis):
    """``np.take_along_axis``; traced indices (a sorting permutation, say) are allowed."""
    if axis is None:
        arr, axis = ravel(arr), 0
    nd = len(shape_of(arr))
    axis = _check_axis(axis, nd, "take_along_axis")
    if len(shape_of(indices)) != nd:
        raise ShapeMismatchError(f"take_along_axis: indices of rank {len(shape_of(indices))} "
                                 f"for an "
                                 f"array of rank {nd} (at {user_location()})")
    return getitem(arr, _along_axis_key(shape_of(arr), indices, axis))


def put_along_axis_add(values, indices, axis, shape):
    """zeros(shape) with ``values`` added at ``take_along_axis``'s positions (its
    transpose)."""
    axis = _check_axis(axis, len(shape), "put_along_axis_add")
    nkey, arrays = _normalize_key(values, _along_axis_key(shape, indices, axis))
    return _sh.scatter_add.bind(values, *arrays, key=nkey, shape=tuple(shape))


# --------------------------------------------------------------------------- convolution
def _conv_permutations(dimension_numbers, ndim: int) -> tuple:
    """JAX's ``conv_general_permutations``: for ``lhs``, ``rhs`` and the output, the axes
    that hold (batch or out features, features or in features, *spatial), the spatial axes
    in ``lhs``'s order. ``dimension_numbers``: None (``NC...``, ``OI...``, ``NC...``),
    three strings (``("NHWC", "HWIO", "NHWC")``) or three tuples of axes (JAX's
    ``ConvDimensionNumbers``)."""
    if dimension_numbers is None:
        return (tuple(range(ndim)),) * 3
    if not isinstance(dimension_numbers, (tuple, list)) or len(dimension_numbers) != 3:
        raise DualgpuError(f"conv_general_dilated: dimension_numbers must be None or three "
                           f"specs (lhs, rhs, out), got {dimension_numbers!r} "
                           f"(at {user_location()})")
    if all(isinstance(s, (tuple, list)) for s in dimension_numbers):
        specs = tuple(tuple(int(a) for a in s) for s in dimension_numbers)
        if any(sorted(s) != list(range(ndim)) for s in specs):
            raise DualgpuError(f"conv_general_dilated: dimension_numbers {specs!r} must each "
                               f"be a permutation of the {ndim} axes (at {user_location()})")
        return specs
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    if not all(isinstance(s, str) and len(s) == ndim and len(set(s)) == ndim
               for s in dimension_numbers) or not (
            {"N", "C"} <= set(lhs_spec) and {"O", "I"} <= set(rhs_spec)
            and {"N", "C"} <= set(out_spec)
            and set(lhs_spec) - {"N", "C"} == set(rhs_spec) - {"O", "I"}
            == set(out_spec) - {"N", "C"}):
        raise DualgpuError(f"conv_general_dilated: dimension_numbers {dimension_numbers!r} "
                           f"must be three strings of {ndim} distinct letters, lhs and out "
                           f"with 'N' and 'C', rhs with 'O' and 'I', and the same spatial "
                           f"letters (at {user_location()})")
    spatial = [c for c in lhs_spec if c not in "NC"]

    def perm(spec, first, second):
        return (spec.index(first), spec.index(second)) + tuple(spec.index(c) for c in spatial)

    return perm(lhs_spec, "N", "C"), perm(rhs_spec, "O", "I"), perm(out_spec, "N", "C")


def _conv_padding(padding, in_shape, window, strides) -> tuple:
    """``"SAME"``, ``"SAME_LOWER"``, ``"VALID"`` or (low, high) pairs, as (low, high) pairs
    (JAX's ``padtype_to_pads``: SAME keeps ``ceil(size / stride)`` outputs)."""
    d = len(in_shape)
    if isinstance(padding, str):
        kind = padding.upper()
        if kind == "VALID":
            return ((0, 0),) * d
        if kind in ("SAME", "SAME_LOWER"):
            pads = []
            for size, k, s in zip(in_shape, window, strides):
                total = builtins.max((-(-size // s) - 1) * s + k - size, 0)
                low = total // 2 if kind == "SAME" else total - total // 2
                pads.append((low, total - low))
            return tuple(pads)
    elif isinstance(padding, (tuple, list)) and len(padding) == d and all(
            isinstance(p, (tuple, list)) and len(p) == 2
            and all(isinstance(v, (int, np.integer)) for v in p) for p in padding):
        return tuple((int(lo), int(hi)) for lo, hi in padding)
    raise DualgpuError(f"conv_general_dilated: padding must be 'SAME', 'SAME_LOWER', 'VALID' "
                       f"or {d} (low, high) pairs of integers, got {padding!r} "
                       f"(at {user_location()})")


def _conv_ints(values, d: int, what: str) -> tuple:
    if values is None:
        return (1,) * d
    values = tuple(values) if isinstance(values, (tuple, list)) else (values,)
    if len(values) != d or not all(isinstance(v, (int, np.integer)) and v >= 1
                                   for v in values):
        raise DualgpuError(f"conv_general_dilated: {what} must be {d} positive integers (one "
                           f"per spatial axis), got {values!r} (at {user_location()})")
    return tuple(int(v) for v in values)


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None):
    """JAX's ``lax.conv_general_dilated``: the N-d correlation (no flip) of ``lhs`` with the
    windows ``rhs``, in the layouts of ``dimension_numbers`` (default ``NC...``, ``OI...``,
    ``NC...``; strings such as ``("NHWC", "HWIO", "NHWC")``), with window strides, padding
    (``"SAME"``, ``"VALID"`` or (low, high) pairs), input (``lhs_dilation``: a transposed
    convolution) and window (``rhs_dilation``: atrous) dilations and feature groups.
    Derivatives in both operands, of every order, are convolutions. ``batch_group_count``
    other than 1 is refused; ``precision`` has no effect.

        >>> from dualgpu import lax
        >>> x = np.arange(6.0).reshape(1, 1, 6)
        >>> lax.conv_general_dilated(x, np.array([[[1.0, -1.0]]]), (2,), "VALID")
        array([[[-1., -1., -1.]]])
        >>> dg.grad(lambda w: lax.conv_general_dilated(x, w, (1,), "SAME").sum())(
        ...     np.ones((1, 1, 3)))
        array([[[10., 15., 15.]]])
    """
    lhs = lhs if is_tracer(lhs) or hasattr(lhs, "shape") else np.asarray(lhs)
    rhs = rhs if is_tracer(rhs) or hasattr(rhs, "shape") else np.asarray(rhs)
    ndim = len(shape_of(lhs))
    if ndim < 2 or len(shape_of(rhs)) != ndim:
        raise DualgpuError(f"conv_general_dilated: lhs and rhs must have the same rank, 2 or "
                           f"more, got shapes {shape_of(lhs)} and {shape_of(rhs)} "
                           f"(at {user_location()})")
    if batch_group_count != 1:
        raise UnsupportedOpError(f"conv_general_dilated: batch_group_count={batch_group_count!r}"
                                 f" is not supported (only 1; at {user_location()})")
    if not isinstance(feature_group_count, (int, np.integer)) or feature_group_count < 1:
        raise DualgpuError(f"conv_general_dilated: feature_group_count must be a positive "
                           f"integer, got {feature_group_count!r} (at {user_location()})")
    d = ndim - 2
    lhs_perm, rhs_perm, out_perm = _conv_permutations(dimension_numbers, ndim)
    lhs, rhs = transpose(lhs, lhs_perm), transpose(rhs, rhs_perm)
    strides = _conv_ints(window_strides, d, "window_strides")
    lhs_dilation = _conv_ints(lhs_dilation, d, "lhs_dilation")
    rhs_dilation = _conv_ints(rhs_dilation, d, "rhs_dilation")
    window = [_cv.dilated(k, r) for k, r in zip(shape_of(rhs)[2:], rhs_dilation)]
    padding = _conv_padding(padding, shape_of(lhs)[2:], window, strides)
    ans = _cv.conv.bind(lhs, rhs, window_strides=strides, padding=padding,
                    lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                    feature_group_count=int(feature_group_count))
    ans = transpose(ans, tuple(int(a) for a in np.argsort(out_perm)))
    return ans if preferred_element_type is None else astype(ans, preferred_element_type)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """JAX's ``lax.conv``: :func:`conv_general_dilated` in the layouts ``NC...`` and
    ``OI...``, without dilations or groups.

        >>> from dualgpu import lax
        >>> lax.conv(np.ones((1, 1, 3, 3)), np.ones((1, 1, 2, 2)), (1, 1), "VALID")
        array([[[[4., 4.],
                 [4., 4.]]]])
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def __getattr__(name: str) -> Any:
    """An elementwise op by its name (``lax.sin``, ``lax.fmod``): the primitive of its
    declaration row, so that a new row is a constructor here at once."""
    prim = _ELEMENTWISE.get(name)
    if prim is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return prim
