"""Products: ``matmul``, ``dot``, ``einsum`` and the products written with them (``tensordot``,
``inner``, ``outer``, ``kron``, ``cross``, ``trace``); operands that are not arrays (sparse
matrices) reach their own ``matmul`` through :func:`register_matmul_override`."""
from __future__ import annotations

import string

import numpy as np

from ...core.axes import check_axis as _check_axis
from ...errors import AxisError as _AxisError
from ...errors import InvalidArgumentError, ShapeMismatchError, user_location
from ...lax import diagonal, moveaxis, multiply, ravel, reshape, subtract
from ...lax import shape_of as _shape
from ...ops import products as _products
from .arguments import arraylike, unsupported_kwargs
from .elementwise import conj
from .joining import stack
from .reductions import sum_
from .shapes import broadcast_arrays

# (is_operand, matmul) pairs for operands that are not arrays: dualgpu.frontend.scipy.sparse
# registers the sparse matrices here at import (it sits above this module)
_MATMUL_OVERRIDES: list = []


def register_matmul_override(is_operand, matmul_fn) -> None:
    """``matmul(a, b)`` calls ``matmul_fn(a, b)`` when ``is_operand`` holds for a or b."""
    _MATMUL_OVERRIDES.append((is_operand, matmul_fn))


def _override(a, b):
    for is_operand, fn in _MATMUL_OVERRIDES:
        if is_operand(a) or is_operand(b):
            return fn
    return None


def matmul(a, b, out=None, **kw):
    unsupported_kwargs("matmul", {"out": out, **kw})
    fn = _override(a, b)
    if fn is not None:
        return fn(a, b)
    return _products.matmul.bind(a, b)


def dot(a, b, out=None):
    unsupported_kwargs("dot", {"out": out})
    if _override(a, b) is not None:
        return matmul(a, b)
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        return multiply(a, b)
    if nb <= 2:
        return matmul(a, b)
    return tensordot(a, b, axes=([na - 1], [nb - 2]))


def vdot(a, b):
    """``np.vdot``: conjugates its first argument (complex values)."""
    return sum_(multiply(conj(ravel(a)), ravel(b)))


def inner(a, b):
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        return multiply(a, b)
    return tensordot(a, b, axes=([na - 1], [nb - 1]))


def outer(a, b, out=None):
    return multiply(reshape(ravel(a), (-1, 1)), ravel(b))


def tensordot(a, b, axes=2):
    na, nb = len(_shape(a)), len(_shape(b))
    if isinstance(axes, (int, np.integer)):
        if not 0 <= axes <= min(na, nb):
            raise _AxisError(f"tensordot: axes={int(axes)} is out of bounds for arrays of "
                             f"dimension {na} and {nb} (at {user_location()})")
        ax_a, ax_b = list(range(na - axes, na)), list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, int) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, int) else list(ax_b)
    if len(ax_a) != len(ax_b):
        raise ShapeMismatchError(f"tensordot: axes {ax_a} and {ax_b} differ in length "
                                 f"(at {user_location()})")
    ax_a = [_check_axis(i, na, "tensordot") for i in ax_a]
    ax_b = [_check_axis(j, nb, "tensordot") for j in ax_b]
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    sa = [next(letters) for _ in range(na)]
    sb = [next(letters) for _ in range(nb)]
    for i, j in zip(ax_a, ax_b):
        sb[j] = sa[i]
    contracted = {sa[i] for i in ax_a}
    out = [c for c in sa if c not in contracted] + [c for c in sb if c not in contracted]
    return einsum("".join(sa) + "," + "".join(sb) + "->" + "".join(out), a, b)


def _sublist_subscripts(args):
    """NumPy's sublist form ``einsum(x, [0, 1], y, [1, 2], [0, 2])`` as (subscripts,
    operands): integers name axes, ``Ellipsis`` is ``...``."""
    def letters(sub):
        out = []
        for i in sub:
            if i is Ellipsis:
                out.append("...")
            elif isinstance(i, (int, np.integer)) and 0 <= int(i) < 52:
                out.append(string.ascii_letters[int(i)])
            else:
                raise InvalidArgumentError(f"einsum: sublist subscripts must be integers in "
                                           f"[0, 52) "
                                           f"or Ellipsis, got {i!r} (at {user_location()})")
        return "".join(out)

    operands = list(args[0::2][: len(args) // 2])
    ins = [letters(s) for s in args[1::2][: len(args) // 2]]
    spec = ",".join(ins)
    if len(args) % 2:
        spec += "->" + letters(args[-1])
    return spec, operands


def einsum(subscripts, *operands, optimize=None, **kw):
    """``np.einsum``, in the subscripts-string form or NumPy's sublist form."""
    unsupported_kwargs("einsum", kw)
    if not isinstance(subscripts, str):
        subscripts, operands = _sublist_subscripts((subscripts,) + operands)
    operands = [arraylike(o) for o in operands]
    spec = _products.normalize_einsum(subscripts, [_shape(o) for o in operands])
    return _products.einsum.bind(*operands, spec=spec)


def kron(a, b):
    """``np.kron``: the outer product with the axes of ``a`` and ``b`` interleaved."""
    sa, sb = _shape(a), _shape(b)
    nd = max(len(sa), len(sb))
    sa, sb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
    a2 = reshape(a, tuple(x for d in sa for x in (d, 1)))
    b2 = reshape(b, tuple(x for d in sb for x in (1, d)))
    return reshape(multiply(a2, b2), tuple(p * q for p, q in zip(sa, sb)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """``np.cross`` of 3-vectors (2-vectors are padded with a zero z component; two
    2-vectors give the scalar z component, as NumPy)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a = moveaxis(arraylike(a), axisa, -1)
    b = moveaxis(arraylike(b), axisb, -1)
    na, nb = _shape(a)[-1], _shape(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ShapeMismatchError(f"cross: incompatible dimensions for cross product (dimension "
                                 f"must be 2 or 3), got {na} and {nb} (at {user_location()})")
    ax, ay = a[..., 0], a[..., 1]
    bx, by = b[..., 0], b[..., 1]
    z = subtract(multiply(ax, by), multiply(ay, bx))
    if na == 2 and nb == 2:
        return z
    az = a[..., 2] if na == 3 else 0.0
    bz = b[..., 2] if nb == 3 else 0.0
    x = subtract(multiply(ay, bz), multiply(az, by))
    y = subtract(multiply(az, bx), multiply(ax, bz))
    x, y, z = broadcast_arrays(x, y, z)
    return moveaxis(stack([x, y, z], axis=-1), -1, axisc)


def trace(a, offset=0, axis1=0, axis2=1):
    return sum_(diagonal(a, offset, axis1, axis2), axis=-1)
