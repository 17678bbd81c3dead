"""NumPy's functions given a sparse matrix read by traced code (a :class:`SparseValue`).

NumPy does not know sparse matrices: ``np.sum(A)`` calls ``A.sum(axis=..., dtype=...,
out=...)``, ``np.transpose(A)`` calls ``A.transpose()``, a ufunc such as ``np.sin(A)`` calls
``A.sin()`` (``abs(A)`` for ``np.abs``), and most other functions wrap the matrix in a 0-d
object array. Traced code does what NumPy does with SciPy's matrices, function by function:

- the functions NumPy hands to a method (:data:`METHODS`): the method, with SciPy's result
  (for concrete values SciPy's own answer: ``np.sum(A, axis=0)`` of a ``csr_matrix`` is an
  ``np.matrix``), on traced values the same values and shape;
- the ufuncs SciPy applies to the stored values (:data:`STORED_VALUE_UFUNCS`: those with
  ``f(0) == 0``): a sparse matrix of the same pattern;
- ``np.dot`` and ``np.matmul``: the product (NumPy's would be an object array);
- ``np.shape``, ``np.ndim``, ``np.size`` (SciPy's ``A.size``: the number stored);
- any other: one :class:`~dualgpu.errors.SparseMethodError` naming the function.

Example::

    >>> import scipy.sparse
    >>> A = scipy.sparse.csr_matrix(np.eye(2))
    >>> dg.jit(lambda x: x * np.sum(A))(np.ones(2))
    array([2., 2.])
"""
from __future__ import annotations

from ...core.trace import Tracer
from ...errors import SparseMethodError, UnsupportedOpError, user_location
from .. import numpy as dnp
from .sparse import SparseValue, matmul, scipys

__all__ = ["call", "METHODS", "STORED_VALUE_UFUNCS"]

# NumPy's name (and its aliases) -> the method NumPy calls, with the keywords it passes
METHODS = {"sum": ("sum", ("axis", "dtype", "out")), "mean": ("mean", ("axis", "dtype", "out")),
           "max": ("max", ("axis", "out")), "amax": ("max", ("axis", "out")),
           "min": ("min", ("axis", "out")), "amin": ("min", ("axis", "out")),
           "transpose": ("transpose", ("axes",))}

# ufuncs with f(0) == 0, which SciPy's matrices apply to their stored values (``A.sin()``)
STORED_VALUE_UFUNCS = ("absolute", "negative", "positive", "conjugate", "sin", "tan", "arcsin",
                       "arctan", "sinh", "tanh", "arcsinh", "arctanh", "sqrt", "expm1",
                       "log1p", "deg2rad", "rad2deg", "floor", "ceil", "trunc", "rint", "sign")
_UFUNC_ALIASES = {"abs": "absolute", "conj": "conjugate"}

_PRODUCTS = ("dot", "matmul")
_CONVERSIONS = ("asarray", "array", "asanyarray", "ascontiguousarray", "asfortranarray",
                "asmatrix", "copy", "ravel", "atleast_2d")


def _traced(x) -> bool:
    if isinstance(x, SparseValue):
        return not x.concrete
    if isinstance(x, (list, tuple)):
        return any(_traced(y) for y in x)
    return isinstance(x, Tracer)


def _refuse(label: str, why: str):
    return SparseMethodError(
        f"{label} of a sparse matrix is not supported in traced code (at {user_location()}): "
        f"{why}; supported: np.sum, np.mean, np.max, np.min, np.transpose, np.dot, np.matmul, "
        "np.shape, np.ndim, np.size and the ufuncs with f(0) = 0 "
        f"({', '.join(STORED_VALUE_UFUNCS)}), or the matrix's own methods (A @ x, A.multiply, "
        "A.toarray()...)")


def call(real, label: str, args: tuple, kwargs: dict):
    """NumPy's function ``real`` (called ``label``, ``numpy.sum``) of arguments among which
    is a :class:`SparseValue`."""
    name = getattr(real, "__name__", label.rpartition(".")[2]).removeprefix("cupy_")
    name = _UFUNC_ALIASES.get(name, name)
    concrete = not _traced(args) and not _traced(tuple(kwargs.values()))
    if name in _PRODUCTS:
        if kwargs:
            raise UnsupportedOpError(f"{label} of a sparse matrix: keywords "
                                     f"{sorted(kwargs)} are not supported (at {user_location()})")
        return matmul(*args)
    if name in ("shape", "ndim", "size") and len(args) == 1 and not kwargs:
        a = args[0]
        return {"shape": a.shape, "ndim": 2, "size": a.nnz}[name]
    if name in _CONVERSIONS:
        raise _refuse(label, "NumPy makes it a 0-d array of dtype object, not the matrix; "
                             "use A.toarray() (dense: only for small matrices)")
    sparse = args[0] if args else None
    if not isinstance(sparse, SparseValue):
        raise _refuse(label, "only as its first argument")
    if name in METHODS:
        method, accepted = METHODS[name]
        extra = sorted(set(kwargs) - set(accepted))
        if extra or len(args) > 1 + len(accepted):
            raise _refuse(label, f"SciPy's .{method} takes no {', '.join(extra) or 'more'} "
                                 "arguments")
        if concrete:  # SciPy's own answer (cupyx's coo_matrix has no max, min: its CSR's)
            matrix = sparse.scipy()
            matrix = matrix if hasattr(matrix, method) else matrix.tocsr()
            return scipys(getattr(matrix, method)(*args[1:], **kwargs))
        return getattr(sparse, method)(*args[1:], **kwargs)
    if name in STORED_VALUE_UFUNCS:
        if len(args) != 1 or kwargs:
            raise _refuse(label, "SciPy applies it to the stored values, with no other "
                                 "argument")
        ans = SparseValue(getattr(dnp, name)(sparse.data), sparse.pattern)
        return scipys(ans.scipy()) if concrete else ans  # SciPy's: the same class
    raise _refuse(label, "NumPy does not know sparse matrices")
