"""``numpy.linalg`` (and ``cupy.linalg``) on traced values, under NumPy's names.

Decompositions bind the ops of :mod:`dualgpu.ops.decompositions`; norms and powers are
written with the other NumPy functions. Results that NumPy returns as named tuples are named
tuples here (``eigh(a).eigenvalues``).

    >>> dg.grad(lambda x: np.linalg.norm(x))(np.array([3.0, 4.0]))
    array([0.6, 0.8])
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from ...core.axes import check_axis as _check_axis
from ...core.axes import normalize_axes
from ...errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    ShapeMismatchError,
    UnsupportedOpError,
    user_location,
)
from ...errors import AxisError as _AxisError
from ...lax import (
    absolute,
    astype,
    broadcast_to,
    equal,
    expand_dims,
    eye,
    greater,
    moveaxis,
    multiply,
    not_equal,
    reshape,
    subtract,
    swapaxes,
    where,
)
from ...lax import dtype_of as _dtype
from ...lax import is_tracer as _is_tracer
from ...lax import shape_of as _shape
from ...ops import decompositions as _dec
from ...ops import linalg as _lin
from .arguments import arraylike
from .elementwise import abs2, power, safe_sqrt
from .products import matmul
from .reductions import amax, amin, sum_


def vector_norm_of(x, ord, axis, keepdims):
    """NumPy's vector norms of ``x`` along ``axis`` (a tuple; several axes are one vector)."""
    if ord is None or ord == 2:
        return safe_sqrt(sum_(abs2(x), axis=axis, keepdims=keepdims))
    if isinstance(ord, str):
        raise InvalidArgumentError(f"linalg.norm: invalid norm order {ord!r} for vectors "
                                   f"(at {user_location()})")
    ax = absolute(x)
    if ord == math.inf:
        return amax(ax, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return amin(ax, axis=axis, keepdims=keepdims)
    if ord == 0:  # the count of nonzero elements: piecewise constant
        return sum_(astype(not_equal(x, 0), ax.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return sum_(ax, axis=axis, keepdims=keepdims)
    if ord > 1:
        s = sum_(power(ax, float(ord)), axis=axis, keepdims=keepdims)
        if not _is_tracer(s):
            return power(s, 1.0 / ord)
        zero = equal(s, 0)  # the kink at the zero vector: subgradient 0
        return where(zero, 0.0, power(where(zero, 1.0, s), 1.0 / ord))
    # 0 < ord < 1 and negative orders: NumPy's formula (no norm; the derivative is not
    # finite at zero elements, as the value's)
    return power(sum_(power(ax, float(ord)), axis=axis, keepdims=keepdims), 1.0 / ord)


def matrix_norm_of(x, ord, axes, keepdims):
    """NumPy's matrix norms over ``axes`` = (row axis, column axis)."""
    row, col = axes
    if ord in (None, "fro", "f"):
        r = safe_sqrt(sum_(abs2(x), axis=axes))
    elif ord in (1, -1, math.inf, -math.inf):
        inner, outer = (row, col) if ord in (1, -1) else (col, row)
        sums = sum_(absolute(x), axis=inner)
        outer = outer - 1 if outer > inner else outer
        r = (amax if ord > 0 else amin)(sums, axis=outer)
    elif ord in (2, -2, "nuc"):
        s = svdvals(moveaxis(x, (row, col), (-2, -1)))
        r = sum_(s, axis=-1) if ord == "nuc" else (amax if ord == 2 else amin)(s, axis=-1)
    else:
        raise InvalidArgumentError(f"linalg.norm: invalid norm order {ord!r} for matrices "
                                   f"(at {user_location()})")
    if keepdims:
        shape = list(_shape(x))
        shape[row] = shape[col] = 1
        r = reshape(r, tuple(shape))
    return r


def norm(x, ord=None, axis=None, keepdims=False):
    """``np.linalg.norm`` with NumPy's meaning of every (ord, axis) it accepts; the
    spectral (2, -2) and nuclear matrix norms come from the singular values.

    The gradient at the zero vector (matrix) is 0, a subgradient, and so is the HVP there,
    rather than NaN."""
    x = arraylike(x)
    nd = len(_shape(x))
    if _dtype(x).kind in "biu":
        x = astype(x, np.float64)
    if axis is None:
        if ord is None:  # the 2-norm of everything, whatever the rank
            r = safe_sqrt(sum_(abs2(x)))
            return reshape(r, (1,) * nd) if keepdims else r
        if nd not in (1, 2):
            raise ShapeMismatchError(f"linalg.norm: improper number of dimensions to norm: "
                                     f"ord={ord!r} with axis=None needs a 1-D or 2-D array, got "
                                     f"{nd}-D (at {user_location()})")
        axis = tuple(range(nd))
    elif isinstance(axis, (int, np.integer)):
        axis = (int(axis),)
    else:
        axis = tuple(int(a) for a in axis)
    if len(axis) == 1:
        return vector_norm_of(x, ord, normalize_axes(axis, nd, "linalg.norm"), keepdims)
    if len(axis) == 2:
        axes = tuple(_check_axis(a, nd, "linalg.norm") for a in axis)
        if axes[0] == axes[1]:
            raise _AxisError(f"linalg.norm: duplicate axes given: {axis} "
                             f"(at {user_location()})")
        return matrix_norm_of(x, ord, axes, keepdims)
    raise ShapeMismatchError(f"linalg.norm: improper number of dimensions to norm: axis={axis} "
                             f"(at {user_location()})")


def matrix_power(a, n):
    """``np.linalg.matrix_power``: repeated squaring; negative ``n`` inverts first."""
    if not isinstance(n, (int, np.integer)):
        raise ArgumentTypeError(f"linalg.matrix_power: the exponent must be an integer, got "
                                f"{n!r} (at {user_location()})")
    s = _shape(a)
    if len(s) < 2 or s[-1] != s[-2]:
        raise ShapeMismatchError(f"linalg.matrix_power: expected square matrices (..., n, n), got "
                                 f"shape {s} (at {user_location()})")
    n = int(n)
    if n == 0:
        return broadcast_to(eye(s[-1], dtype=_dtype(a), like=a), s)
    if n < 0:
        a, n = inv(a), -n
    result, square = None, a
    while n:
        if n & 1:
            result = square if result is None else matmul(result, square)
        n >>= 1
        if n:
            square = matmul(square, square)
    return result


def solve(a, b):
    """``np.linalg.solve``: ``x`` with ``a @ x = b`` (``b`` a vector when 1-D)."""
    return _lin.solve.bind(a, b)


def inv(a):
    """``np.linalg.inv`` over the last two axes."""
    return _lin.inv.bind(a)


def det(a):
    """``np.linalg.det`` over the last two axes."""
    return _lin.det.bind(a)


def slogdet(a):
    """``np.linalg.slogdet``: ``(sign, log|det|)``; only the second is differentiable."""
    sign, logabsdet = _lin.slogdet.bind(a)
    return sign, logabsdet


def cholesky(a, upper=False):
    """``np.linalg.cholesky``: the lower factor (``upper=True``: its transpose)."""
    low = _lin.cholesky.bind(a)
    return swapaxes(low, -1, -2) if upper else low


EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])


SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])


QRResult = namedtuple("QRResult", ["Q", "R"])


LstsqResult = namedtuple("LstsqResult", ["x", "residuals", "rank", "s"])


def eigh(a, UPLO="L"):
    """``np.linalg.eigh``: eigenvalues ascending and eigenvectors of the symmetric matrix
    read from one triangle. Where eigenvalues repeat, the eigenvector derivatives (and
    second derivatives) are not finite, as JAX's (docs/limitations.md).

    >>> a = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> dg.grad(lambda a: np.linalg.eigh(a)[0][1])(a)     # v v^T, read from the lower half
    array([[0.5, 0. ],
           [1. , 0.5]])
    """
    if UPLO not in ("L", "U"):
        raise InvalidArgumentError(f"linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r} "
                                   f"(at {user_location()})")
    a = arraylike(a)
    w, v = _dec.eigh.bind(a, uplo=UPLO)
    return EighResult(w, v)


def eigvalsh(a, UPLO="L"):
    """``np.linalg.eigvalsh``: first derivatives are finite also at repeated eigenvalues."""
    return eigh(a, UPLO)[0]


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """``np.linalg.svd``. Traced: the thin SVD (``full_matrices`` matters only for
    non-square matrices, where the extra columns have no derivative: refused). Where
    singular values repeat, the singular-vector derivatives are not finite, as JAX's."""
    a = arraylike(a)
    m, n = _shape(a)[-2:]
    u, s, vh = _dec.svd.bind(a)
    if not compute_uv:
        return s
    if full_matrices and m != n:
        raise UnsupportedOpError(
            f"linalg.svd(full_matrices=True) of a non-square traced matrix {_shape(a)} "
            f"(at {user_location()}): the completing singular vectors are not unique and "
            "have no derivative; pass full_matrices=False")
    return SVDResult(u, s, vh)


def svdvals(x):
    return _dec.svd.bind(arraylike(x))[1]


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """``np.linalg.matrix_rank``: the number of singular values above ``tol`` (by default
    ``rtol`` times the largest, ``rtol`` ``max(M, N) * eps``), as NumPy counts them; int64,
    no derivative. Of a vector or a scalar: 1 unless every entry is 0.

    >>> dg.jit(np.linalg.matrix_rank)(np.array([[1.0, 2.0], [2.0, 4.0]]))
    array(1)
    """
    if tol is not None and rtol is not None:
        raise InvalidArgumentError(f"np.linalg.matrix_rank: `tol` and `rtol` can't be both "
                                   f"set (at {user_location()})")
    A = arraylike(A)
    if len(_shape(A)) < 2:
        return astype(greater(sum_(astype(not_equal(A, 0), np.int64)), 0), np.int64)
    s = svdvals(A)

    def per_matrix(v):  # a tolerance per matrix of the stack, against its singular values
        return expand_dims(arraylike(v), -1) if _is_tracer(v) else np.asarray(v)[..., None]

    if tol is not None:
        tol = per_matrix(tol)
    elif _shape(s)[-1] == 0:  # an empty matrix: rank 0 (NumPy's largest is initial=0)
        tol = 0
    else:
        rtol = max(_shape(A)[-2:]) * np.finfo(_dtype(s)).eps if rtol is None \
            else per_matrix(rtol)
        tol = multiply(amax(s, axis=-1, keepdims=True), rtol)
    return sum_(astype(greater(s, tol), np.int64), axis=-1)


def qr(a, mode="reduced"):
    """``np.linalg.qr`` of tall (m >= n) matrices: ``mode`` 'reduced', 'r', or 'complete'
    for square matrices."""
    a = arraylike(a)
    m, n = _shape(a)[-2:]
    if mode not in ("reduced", "r", "complete") or (mode == "complete" and m != n):
        raise UnsupportedOpError(f"linalg.qr(mode={mode!r}) is not supported on traced "
                                 f"values of shape {_shape(a)} (at {user_location()}); use "
                                 "mode='reduced'")
    q, r = _dec.qr.bind(a)
    return r if mode == "r" else QRResult(q, r)


def pinv(a, rcond=None, hermitian=False, *, rtol=None):
    """``np.linalg.pinv``; derivatives hold where the rank is locally constant."""
    a = arraylike(a)
    if rcond is None:
        rcond = 1e-15 if rtol is None else rtol
    return _dec.pinv.bind(a, rcond=float(rcond))


def lstsq(a, b, rcond=None):
    """``np.linalg.lstsq``: ``x = pinv(a) @ b``; ``residuals`` assume full column rank
    (the rank is data: it is returned, traced, with the singular values)."""
    a, b = arraylike(a), arraylike(b)
    # NumPy solves in the common type of a and b (a float32 matrix with a float64
    # right-hand side in float64; integers in float64)
    dt = np.promote_types(_dtype(a), _dtype(b))
    if dt.kind in "biu" or dt == np.float16:
        dt = np.dtype(np.float64)
    a, b = astype(a, dt), astype(b, dt)
    m, n = _shape(a)[-2:]
    if rcond is None:
        rcond = max(m, n) * np.finfo(_dtype(a)).eps
    x = matmul(pinv(a, rcond=rcond), b)
    s = svdvals(a)
    # NumPy's rank is LAPACK's integer: int32
    rank = astype(sum_(astype(greater(s, multiply(amax(s), rcond)), np.int64)), np.int32)
    if m > n:
        r = subtract(matmul(a, x), b)
        residuals = sum_(multiply(r, r), axis=0)
        residuals = reshape(residuals, (1,)) if len(_shape(b)) == 1 else residuals
    else:
        residuals = np.zeros((0,), dtype=_dtype(a))
    return LstsqResult(x, residuals, rank, s)


EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])


def eig(a):
    """``np.linalg.eig`` of a real matrix whose eigenvalues are real (and, for the
    eigenvector derivatives, distinct): eigenvalues in LAPACK's order, eigenvectors as
    columns of unit 2-norm, as NumPy's. Complex eigenvalues (an imaginary part above
    sqrt(eps) times the largest eigenvalue modulus) raise a ``DualgpuError`` when the
    program runs (their real-valued result would be wrong). On CuPy (``cupy.linalg.eig``,
    CuPy 14 and later; refused where it is missing) the eigenpairs come in ascending order
    of eigenvalue, which may differ from NumPy's order, and the eigenvectors' signs are
    cuSOLVER's.

    >>> a = np.array([[2.0, 1.0], [0.0, 3.0]])
    >>> dg.grad(lambda a: np.linalg.eig(a)[0][1])(a)  # u v^T / (u . v), u, v left, right
    array([[0., 0.],
           [1., 1.]])
    """
    a = arraylike(a)
    why = _dec.eig_unavailable(a._builder.xp) if _is_tracer(a) else None
    if why is not None:
        raise UnsupportedOpError(
            f"linalg.eig / eigvals of a traced CuPy matrix (at {user_location()}): {why}; "
            "use linalg.eigh for symmetric matrices, or NumPy arrays")
    if len(_shape(a)) >= 2 and _dtype(a).kind == "c":
        raise UnsupportedOpError(
            f"linalg.eig of a complex traced matrix {_shape(a)} (at {user_location()}) is "
            "not supported: real matrices with real eigenvalues only")
    w, v = _dec.eig.bind(a)
    return EigResult(w, v)


def eigvals(a):
    """``np.linalg.eigvals``: the eigenvalues of ``np.linalg.eig`` (real ones only)."""
    return eig(a)[0]
