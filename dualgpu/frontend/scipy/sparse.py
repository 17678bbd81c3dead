"""Sparse matrices inside traced functions (``scipy.sparse`` and ``cupyx.scipy.sparse``).

A sparse matrix used by a traced function -- closed over, or passed as an argument -- is
seen as a :class:`SparseValue`: its values ``data`` (a traced or concrete dense 1-D array)
and its :class:`Pattern` (format, shape and index arrays, always concrete). Products with
dense arrays bind the ``spmm`` primitive of :mod:`dualgpu.ops.sparse`; the matrix is never
densified, and the gradient with respect to a sparse argument comes back as a sparse matrix
of the same class, format and pattern.

Supported: ``A @ x``, ``x @ A``, ``A.T``, ``A.dot(x)``, ``A.multiply(dense)`` (keeps the
pattern), ``A * scalar``, ``-A``, ``abs(A)``, ``A.sum(axis)``, ``A.mean(axis)`` (shaped as
SciPy's), ``A.max()``, ``A.min()``, ``A.diagonal(k)``,
``A.toarray()``, ``A.astype(dtype)``, ``A.copy()`` and the conversions ``A.tocsr()``,
``A.tocsc()``, ``A.tocoo()``, ``A.asformat(fmt)`` (the values permuted, the pattern
converted once), for CSR, CSC and COO (both the ``*_matrix`` and ``*_array`` classes of
SciPy, and cupyx's matrices). Any other method is a :class:`~dualgpu.errors.SparseMethodError`
naming it. With concrete values (a closed-over matrix) ``.sum``, ``.mean``, ``.max``, ``.min``,
``.T`` and ``.multiply`` by a constant give SciPy's own answer. NumPy's functions of a sparse
matrix: :mod:`dualgpu.frontend.scipy.sparse_numpy`.

Example::

    >>> import numpy as np, scipy.sparse as sp, dualgpu as dg
    >>> A = sp.random(4, 3, density=0.5, format="csc", random_state=1)
    >>> gA = dg.grad(lambda A, x: np.sum(A @ x))(A, np.ones(3))
    >>> type(gA).__name__, gA.nnz == A.nnz
    ('csc_matrix', True)
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ... import lax
from ...backends import array_backend, backend_of
from ...base.cache import IdentityKey
from ...core.trace import Tracer
from ...errors import (
    ShapeMismatchError,
    SparseMethodError,
    UnsupportedOpError,
    UnsupportedSparseFormatError,
    user_location,
)
from ...lax import shape_of
from ...ops.shape import scatter_add
from ...ops.sparse import coo_indices, make_matrix, spmm
from .. import numpy as dnp
from ..numpy.products import register_matmul_override
from .np_matrix import as_matrix

__all__ = ["is_sparse", "issparse", "SparseValue", "Pattern", "matmul", "as_sparse_value"]


def is_sparse(x) -> bool:
    """True for SciPy and cupyx sparse matrices/arrays (not for :class:`SparseValue`).

    Example::

        >>> import scipy.sparse
        >>> is_sparse(scipy.sparse.eye(3)), is_sparse(np.eye(3))
        (True, False)
    """
    b = array_backend(x)
    return b is not None and b.is_sparse(x)


def is_sparse_like(x) -> bool:
    return isinstance(x, SparseValue) or is_sparse(x)


def issparse(x) -> bool:
    """``scipy.sparse.issparse`` in traced code: True for a sparse matrix the function reads
    (seen there as a :class:`SparseValue`), as outside it.

    >>> import scipy.sparse
    >>> A = scipy.sparse.eye(2, format="csr")
    >>> dg.jit(lambda x: x * scipy.sparse.issparse(A))(np.ones(2))
    array([1., 1.])
    """
    return is_sparse_like(x)


def _is_tracer(x) -> bool:
    return isinstance(x, Tracer)


class Pattern:
    """The structure of a sparse matrix: format, shape and (concrete) index arrays.

    ``ind, ptr`` are ``indices, indptr`` for CSR/CSC and ``row, col`` for COO. ``.T`` is the
    pattern of the transpose (same arrays, CSR <-> CSC), as SciPy's ``A.T`` is.
    """

    def __init__(self, fmt: str, shape: tuple, ind, ptr, container=None):
        if fmt not in ("csr", "csc", "coo"):
            raise UnsupportedSparseFormatError(
                f"sparse format {fmt!r} is not supported; convert with A.tocsr()")
        self.fmt = fmt
        self.shape = (int(shape[0]), int(shape[1]))
        self.ind = ind
        self.ptr = ptr
        self.container = container
        self._coo = None

    @classmethod
    def of(cls, a) -> Pattern:
        fmt = a.format
        if fmt == "coo":
            return cls(fmt, a.shape, a.row, a.col, type(a))
        if fmt in ("csr", "csc"):
            return cls(fmt, a.shape, a.indices, a.indptr, type(a))
        raise UnsupportedSparseFormatError(
            f"sparse format {fmt!r} ({type(a).__name__}) is not supported by dualgpu; "
            "convert with A.tocsr() (CSR, CSC and COO are)")

    @property
    def nnz(self) -> int:
        return int(self.ind.shape[0])

    @property
    def T(self) -> Pattern:
        if self.fmt == "coo":
            return Pattern("coo", self.shape[::-1], self.ptr, self.ind, self.container)
        # the other format, of the same kind (a csr_array's transpose is a csc_array)
        fmt = "csc" if self.fmt == "csr" else "csr"
        return Pattern(fmt, self.shape[::-1], self.ind, self.ptr,
                       _class_in_format(self.container, fmt))

    @property
    def matrix_kind(self) -> bool:
        """True for the ``*_matrix`` classes (SciPy's spmatrix and cupyx's), whose axis sums
        are 2-D (``np.matrix`` on SciPy); False for SciPy's ``*_array`` classes."""
        cls = self.container
        return cls is None or "matrix" in cls.__name__

    def coo(self):
        """Row and column index of every stored entry, in data order."""
        if self._coo is None:
            self._coo = coo_indices(self.ind, self.ptr, self.fmt, self.shape)
        return self._coo

    def params(self) -> dict:
        return {"fmt": self.fmt, "shape": self.shape}

    def key(self) -> tuple:
        """A cache key: the pattern's arrays by identity (graphs keep them alive)."""
        return ("sparse", self.fmt, self.shape, self.nnz, IdentityKey(self.ind),
                IdentityKey(self.ptr), np.dtype(self.ind.dtype).str)

    def rebuild(self, data, like=None, own: bool = True):
        """A sparse matrix of the original class with these values.

        With ``own`` (the default: a result handed to the user) the matrix owns copies of
        the index arrays, so that ``result.eliminate_zeros()`` or ``result.sort_indices()``
        cannot change the user's matrix; ``own=False`` shares them (internal temporaries)."""
        ind, ptr = (self.ind.copy(), self.ptr.copy()) if own else (self.ind, self.ptr)
        cls = type(like) if like is not None else self.container
        if cls is None:
            return make_matrix(backend_of((self.ptr,)).xp, data, ind, ptr, self.fmt,
                               self.shape)
        if self.fmt == "coo":
            return cls((data, (ind, ptr)), shape=self.shape)
        return cls((data, ind, ptr), shape=self.shape)

    def same_as(self, other: Pattern) -> bool:
        """True when ``other`` stores the same entries in the same order (so that their
        ``data`` arrays line up). Compares the index arrays: on CuPy this waits for the
        comparison (pass the ``nnz`` values as a plain vector to skip it)."""
        if (other.fmt != self.fmt or other.shape != self.shape or other.nnz != self.nnz):
            return False
        if other.ind is self.ind and other.ptr is self.ptr:
            return True
        b = backend_of((self.ptr,))
        if array_backend(other.ptr) is not b or array_backend(other.ind) is not b:
            return False
        xp = b.xp
        return bool(xp.array_equal(other.ind, self.ind)) and \
            bool(xp.array_equal(other.ptr, self.ptr))


def _class_in_format(cls, fmt: str):
    """The class of ``cls``'s library and kind (matrix or array) in format ``fmt``."""
    if cls is None:
        return None
    package = sys.modules.get(cls.__module__.rpartition("._")[0])
    return getattr(package, f"{fmt}{cls.__name__[3:]}", None)


class SparseValue:
    """A sparse matrix with traced (or concrete) values and a concrete pattern.

    Example::

        >>> import scipy.sparse
        >>> A = SparseValue.constant(scipy.sparse.eye(3, format="csr"))
        >>> A @ np.arange(3.0)                                # computes now on arrays
        array([0., 1., 2.])
        >>> dg.grad(lambda x: np.sum(np.tanh(A @ x)))(np.zeros(3))   # binds spmm when traced
        array([1., 1., 1.])
    """

    __array_priority__ = 2000  # above Tracer's, so that x @ A reaches our reflected op

    def __init__(self, data, pattern: Pattern, original=None):
        self.data = data
        self.pattern = pattern
        self.original = original  # the user's matrix, for a closed-over one

    @classmethod
    def constant(cls, a) -> SparseValue:
        pattern = Pattern.of(a)  # checks the format before .data is read
        return cls(a.data, pattern, a)

    @property
    def concrete(self) -> bool:
        """True when the values are not traced (what SciPy computes on now)."""
        return not _is_tracer(self.data)

    def scipy(self):
        """The SciPy (or cupyx) matrix of concrete values: the user's own when closed over."""
        if self.original is not None:
            return self.original
        return self.pattern.rebuild(self.data)

    # ---------------------------------------------------------------- attributes
    shape = property(lambda self: self.pattern.shape)
    format = property(lambda self: self.pattern.fmt)
    nnz = property(lambda self: self.pattern.nnz)
    dtype = property(lambda self: self.data.dtype)
    ndim = 2

    def __repr__(self) -> str:
        return (f"<dualgpu SparseValue {self.format} {self.shape[0]}x{self.shape[1]}, "
                f"nnz={self.nnz}, data={self.data!r}>")

    @property
    def T(self) -> SparseValue:
        """The transpose (of SciPy's own for concrete values)."""
        if self.concrete:
            return scipys(self.scipy().T)
        return SparseValue(self.data, self.pattern.T)

    def transpose(self, axes=None, copy=False) -> SparseValue:
        if axes is not None and tuple(axes) != (1, 0):
            raise SparseMethodError(f"sparse matrix .transpose(axes={axes!r}): a matrix has "
                                    f"only the permutation (1, 0) (at {user_location()})")
        return self.T

    # ---------------------------------------------------------------- products
    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def dot(self, other):
        return matmul(self, other)

    def multiply(self, other) -> SparseValue:
        """Elementwise product with a scalar or a dense array broadcastable to the shape;
        the result keeps this pattern (``other`` is gathered at the stored entries)."""
        if self.concrete and not _is_tracer(other) and not isinstance(other, SparseValue):
            return scipys(self.scipy().multiply(other))
        if is_sparse_like(other):
            raise UnsupportedOpError("sparse.multiply(sparse) is not supported on traced "
                                     "values; multiply by a dense array")
        shape = shape_of(other)
        if len(shape) == 0:
            return SparseValue(lax.multiply(self.data, other), self.pattern)
        if len(shape) == 1:
            shape, other = (1,) + shape, dnp.reshape(other, (1,) + shape)
        if len(shape) != 2 or any(s not in (1, d) for s, d in zip(shape, self.shape)):
            raise ShapeMismatchError(f"multiply: a dense operand of shape {shape} does not "
                                     f"broadcast to the sparse shape {self.shape}")
        rows, cols = self.pattern.coo()
        xp = np if isinstance(rows, np.ndarray) else None
        key = tuple(_zeros_like_index(idx, xp) if s == 1 else idx
                    for idx, s in zip((rows, cols), shape))
        picked = dnp.getitem(other, key)
        return SparseValue(lax.multiply(self.data, picked), self.pattern)

    def _matrix_semantics(self, other) -> bool:
        """``*`` is a matrix product for the ``*_matrix`` classes, elementwise otherwise."""
        cls = self.pattern.container
        return len(shape_of(other)) > 0 and cls is not None and "matrix" in cls.__name__

    def __mul__(self, other):
        return matmul(self, other) if self._matrix_semantics(other) else self.multiply(other)

    def __rmul__(self, other):
        return matmul(other, self) if self._matrix_semantics(other) else self.multiply(other)

    def __truediv__(self, other):
        if len(shape_of(other)) > 0:  # SciPy's: the product with the reciprocal, broadcast
            return self.multiply(dnp.true_divide(1.0, other))  # (not the stored values'
        return SparseValue(lax.true_divide(self.data, other), self.pattern)  # order)

    def __add__(self, other):
        return self._sum(other, "+", lambda a, b: a + b)

    def __radd__(self, other):
        return self._sum(other, "+", lambda a, b: b + a)

    def __sub__(self, other):
        return self._sum(other, "-", lambda a, b: a - b)

    def __rsub__(self, other):
        return self._sum(other, "-", lambda a, b: b - a)

    def _sum(self, other, sign: str, op):
        """A sum of constant matrices is SciPy's; with traced values, refused by name."""
        if isinstance(other, SparseValue) and other.concrete:
            other = other.scipy()
        if self.concrete and not _is_tracer(other) and not isinstance(other, SparseValue):
            return scipys(op(self.scipy(), other))
        raise SparseMethodError(f"sparse matrix {sign} is not supported on traced values (at "
                                f"{user_location()}); add the products (A @ x + B @ x) or "
                                "densify a small matrix (A.toarray())")

    def __neg__(self):
        return SparseValue(lax.negative(self.data), self.pattern)

    def __pos__(self):
        return self

    def __abs__(self):
        return SparseValue(dnp.abs(self.data), self.pattern)

    # ---------------------------------------------------------------- reductions, dense
    def sum(self, axis=None, dtype=None, out=None):
        """Sum of the entries (``axis=None``), or along an axis as a dense array: 2-D for the
        ``*_matrix`` classes (``(1, n)`` or ``(m, 1)``, SciPy's ``np.matrix``), 1-D for
        ``*_array``; SciPy's own answer for concrete values."""
        _no_out("sum", out)
        if self.concrete:
            return self.scipy().sum(axis=axis, dtype=dtype)
        values = self if dtype is None else self.astype(_sum_dtype(dtype, self.dtype))
        if axis is None:
            return dnp.sum(values.data)
        axis = _matrix_axis(axis, "sum")
        ones = _xp(self).ones(self.shape[axis], dtype=np.dtype(values.dtype))
        total = matmul(ones, values) if axis == 0 else matmul(values, ones)
        if self.pattern.matrix_kind:  # SciPy's np.matrix: its * is a product
            return as_matrix(dnp.reshape(total, (1, -1) if axis == 0 else (-1, 1)))
        return total

    def toarray(self):
        """The dense matrix (this *does* densify: only for small matrices)."""
        rows, cols = self.pattern.coo()
        if not _is_tracer(self.data):
            return self.pattern.rebuild(self.data, own=False).toarray()
        return scatter_add.bind(self.data, rows, cols, key=(("array", 0), ("array", 1)),
                                shape=self.shape)

    todense = toarray

    def mean(self, axis=None, dtype=None, out=None):
        """Mean of all entries, stored or not (``axis=None``), or along an axis (shaped as
        :meth:`sum`'s)."""
        _no_out("mean", out)
        if self.concrete:
            return self.scipy().mean(axis=axis, dtype=dtype)
        if dtype is None and np.dtype(self.dtype).kind in "biu":
            dtype = np.float64  # as SciPy's
        total = self.sum(axis, dtype=dtype)
        count = self.shape[0] * self.shape[1] if axis is None else \
            self.shape[_matrix_axis(axis, "mean")]
        return total / count  # an np.matrix's division keeps it one

    def max(self, axis=None, out=None):
        """The largest entry, stored or not (``axis=None``): 0 counts where an entry is not
        stored; SciPy's answer for concrete values."""
        return self._extreme("max", lax.max, lax.maximum, axis, out)

    def min(self, axis=None, out=None):
        """The smallest entry, stored or not (``axis=None``)."""
        return self._extreme("min", lax.min, lax.minimum, axis, out)

    def _extreme(self, name, reduce, pairwise, axis, out):
        _no_out(name, out)
        if self.concrete:
            return getattr(self.scipy(), name)(axis=axis)
        if axis is not None:
            raise SparseMethodError(
                f"sparse matrix .{name}(axis={axis!r}) of traced values is not supported (at "
                f"{user_location()}): SciPy returns a sparse matrix; take "
                f"np.{name}(A.toarray(), axis={axis!r}) of a small matrix, or .{name}() of all")
        if self.nnz == 0:
            return np.zeros((), dtype=self.dtype)
        ans = reduce(self.data)
        if self.nnz < self.shape[0] * self.shape[1]:  # an entry not stored is 0
            ans = pairwise(ans, np.zeros((), dtype=self.dtype))
        return ans

    def diagonal(self, k: int = 0):
        """The ``k``-th diagonal as a dense 1-D array (zeros where nothing is stored)."""
        m, n = self.shape
        k = int(k)
        length = max(0, min(m + min(k, 0), n - max(k, 0)))
        rows, cols = self.pattern.coo()
        xp = backend_of((rows,)).xp
        on = xp.flatnonzero(cols - rows == k)
        where = (rows if k >= 0 else cols)[on]
        return scatter_add.bind(dnp.getitem(self.data, on), where, key=(("array", 0),),
                                shape=(length,))

    # ---------------------------------------------------------------- conversions
    def astype(self, dtype, copy=True) -> SparseValue:
        return SparseValue(dnp.astype(self.data, dtype), self.pattern)

    def copy(self) -> SparseValue:
        return SparseValue(self.data, self.pattern)

    def asformat(self, format, copy=False) -> SparseValue:
        """The matrix in ``format`` (``"csr"``, ``"csc"``, ``"coo"``): the pattern converted
        once (on the index arrays), the values gathered in the new order."""
        if format is None or format == self.format:
            return self
        xp = _xp(self)
        positions = xp.arange(1, self.nnz + 1, dtype=np.float64)
        converted = self.pattern.rebuild(positions, own=False).asformat(format)
        if converted.nnz != self.nnz:  # a COO matrix with repeated entries (summed)
            raise UnsupportedOpError(
                f"sparse .to{format}() of a {self.format} matrix with repeated entries is not "
                f"supported in traced code (at {user_location()}); call A.sum_duplicates() "
                "on the matrix first")
        order = (converted.data - 1).astype(np.intp)
        return SparseValue(dnp.getitem(self.data, order), Pattern.of(converted))

    def tocsr(self, copy=False) -> SparseValue:
        return self.asformat("csr")

    def tocsc(self, copy=False) -> SparseValue:
        return self.asformat("csc")

    def tocoo(self, copy=False) -> SparseValue:
        return self.asformat("coo")

    def __getattr__(self, name: str):
        if name.startswith("__") or name in ("data", "pattern", "original"):
            raise AttributeError(name)
        if self.concrete:  # a constant's attributes (A.indices, A.has_sorted_indices): SciPy's
            value = getattr(self.scipy(), name, None)
            if value is not None and not callable(value):
                return value
        raise SparseMethodError(
            f"sparse matrix .{name} is not supported in traced code (at {user_location()}); "
            "supported: @, .T, .dot, .multiply, * and / by a scalar, .sum, .mean, .max, .min, "
            ".diagonal, .toarray, .astype, .copy, .tocsr, .tocsc, .tocoo, .asformat; or "
            "compute it outside the traced function")


def _xp(sv):
    return backend_of((sv.pattern.ptr,)).xp


def _no_out(name: str, out) -> None:
    if out is not None:
        raise UnsupportedOpError(f"sparse matrix .{name}(out=...) is not supported in traced "
                                 f"code (at {user_location()}); use its result")


def _matrix_axis(axis, name: str) -> int:
    if not isinstance(axis, (int, np.integer)) or not -2 <= int(axis) < 2:
        raise SparseMethodError(f"sparse matrix .{name}: axis={axis!r} is not an axis of a "
                                f"matrix (0, 1, -1, -2 or None) (at {user_location()})")
    return int(axis) % 2


def _sum_dtype(dtype, own):
    """The type SciPy sums in for ``dtype=``: ``dtype`` itself."""
    return np.dtype(dtype) if dtype is not None else np.dtype(own)


def _zeros_like_index(idx, xp):
    if xp is None:
        xp = backend_of((idx,)).xp
    return xp.zeros_like(idx)


def scipys(ans):
    """SciPy's answer for a concrete matrix, seen by traced code as a closed-over matrix is:
    a sparse result as a :class:`SparseValue` of it (so that products and methods with
    traced values still trace)."""
    if is_sparse(ans) and ans.format in ("csr", "csc", "coo"):
        return SparseValue.constant(ans)
    return ans


def as_sparse_value(a) -> SparseValue:
    return a if isinstance(a, SparseValue) else SparseValue.constant(a)


# --------------------------------------------------------------------------- products
def matmul(a, b):
    """``a @ b`` where one operand is sparse (a SciPy/cupyx matrix or a SparseValue).

    Dense operands may have any rank NumPy's matmul allows; the sparse one is 2-D. Every
    case is expressed as ``sparse @ dense`` (what cuSPARSE provides) with transposes.

    Example (``x @ A`` is ``spmm(A, x.T, transpose=True).T``)::

        >>> import scipy.sparse
        >>> A = scipy.sparse.eye(3, format="csr")
        >>> print(dg.trace(lambda x: np.sum(matmul(x, A)), np.ones((2, 3))))
        { lambda x:float64[2,3] .
          consts c0:float64[3] c1:int32[3] c2:int32[4]
          t0:float64[3,2] = transpose x perm=(1, 0)
          t1:float64[3,2] = spmm c0 t0 c1 c2 fmt=csr shape=(3, 3) transpose=True
          t2:float64[2,3] = transpose t1 perm=(1, 0)
          t3:float64[] = reduce_sum t2 axes=(0, 1)
          in ( t3 ) }
    """

    if is_sparse_like(a) and is_sparse_like(b):
        a, b = (v.scipy() if isinstance(v, SparseValue) and v.concrete else v for v in (a, b))
        if not isinstance(a, SparseValue) and not isinstance(b, SparseValue):
            return scipys(a @ b)  # constants: SciPy's product
        raise UnsupportedOpError("sparse @ sparse is not supported on traced values")
    if is_sparse_like(a):
        A, x = as_sparse_value(a), b
        if not _is_tracer(x) and not _is_tracer(A.data):
            return a @ x if not isinstance(a, SparseValue) else _eager(A, x)
        p = A.pattern
        shape = shape_of(x)
        if len(shape) <= 2:
            return spmm.bind(A.data, x, p.ind, p.ptr, **p.params(), transpose=False)
        # batched: (..., n, k) -> (n, ...*k) -> spmm -> (m, ...*k) -> (..., m, k)
        xm = dnp.reshape(dnp.moveaxis(x, -2, 0), (shape[-2], -1))
        y = spmm.bind(A.data, xm, p.ind, p.ptr, **p.params(), transpose=False)
        y = dnp.reshape(y, (p.shape[0],) + shape[:-2] + shape[-1:])
        return dnp.moveaxis(y, 0, -2)
    A, x = as_sparse_value(b), a
    if not _is_tracer(x) and not _is_tracer(A.data):
        return x @ b if not isinstance(b, SparseValue) else \
            _eager(SparseValue(A.data, A.pattern.T), dnp.transpose(x)).T
    p = A.pattern
    shape = shape_of(x)
    if len(shape) == 1:
        return spmm.bind(A.data, x, p.ind, p.ptr, **p.params(), transpose=True)
    # x @ A = (A.T @ x.T).T, with the leading axes of x flattened
    xm = dnp.transpose(dnp.reshape(x, (-1, shape[-1])))
    y = spmm.bind(A.data, xm, p.ind, p.ptr, **p.params(), transpose=True)
    return dnp.reshape(dnp.transpose(y), shape[:-1] + (p.shape[1],))


def _eager(A: SparseValue, x):
    return A.pattern.rebuild(A.data, own=False) @ x


# --------------------------------------------------------------------------- arguments
class SparseArgs:
    """Sparse arguments of a transformed function (used by the runtime's signature).

    Each sparse argument enters the graph as its ``data`` array (an ordinary input, which
    may be differentiated); its pattern is static and part of the cache key. Gradients,
    HVPs and tangents come back as sparse matrices of the argument's class and pattern.
    """

    def __init__(self):
        self.patterns: dict[int, Pattern] = {}
        self.originals: dict[int, Any] = {}

    def add(self, i: int, a) -> tuple:
        """Register argument ``i``; returns (its data array, its cache key)."""
        p = Pattern.of(a)
        self.patterns[i] = p
        self.originals[i] = a
        return a.data, p.key() + (type(a).__name__,)

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def direction(self, i: int, v):
        """The data array of a direction/tangent for sparse argument ``i``."""
        if i not in self.patterns:
            return v
        p = self.patterns[i]
        if is_sparse(v):
            q = Pattern.of(v)
            if q.fmt != p.fmt or q.shape != p.shape or q.nnz != p.nnz:
                raise ShapeMismatchError(
                    f"the direction for sparse argument {i} must have the argument's format "
                    f"and pattern ({p.fmt}, shape {p.shape}, nnz {p.nnz}); got {q.fmt}, "
                    f"shape {q.shape}, nnz {q.nnz}")
            if not p.same_as(q):
                raise ShapeMismatchError(
                    f"the direction for sparse argument {i} has another sparsity pattern than "
                    f"the argument (same format, shape and nnz {p.nnz}, but other "
                    f"{'row/col' if p.fmt == 'coo' else 'indices/indptr'}): its values would "
                    "not line up with the argument's. Build it on the argument's pattern, "
                    "e.g. A.copy() with new .data, or pass the vector of its nnz values")
            return v.data
        if tuple(np.shape(v)) == (p.nnz,):
            return v  # the values of a matrix with the argument's pattern
        raise ShapeMismatchError(f"the direction for sparse argument {i} must be a sparse matrix "
                                 f"with its pattern, or a vector of its {p.nnz} values")

    def repackage(self, i: int, values):
        """Values for sparse argument ``i`` as a sparse matrix like the argument."""
        if i not in self.patterns:
            return values
        return self.patterns[i].rebuild(values, like=self.originals[i])


register_matmul_override(is_sparse_like, matmul)


# ``scipy.sparse.linalg`` as the namespace finds it (``sparse.linalg.spsolve``); its module
# imports this one's names, so it is bound once they are defined
from . import sparse_linalg as linalg  # noqa: E402, F401
