"""SciPy's sparse matrix classes called in traced code: ``csr_matrix((data, indices, indptr),
shape=...)``, ``csc_*`` alike and ``coo_matrix((data, (row, col)), shape=...)`` (and the
``*_array`` classes, and cupyx's) with traced values ``data`` and concrete index arrays make
a :class:`~dualgpu.frontend.scipy.sparse.SparseValue` of that pattern, whose values are
differentiated as any traced array. Without a traced argument the class is SciPy's own; any
other form with traced values (a dense traced matrix, traced indices) is one
:class:`~dualgpu.errors.UnsupportedOpError` naming it (SciPy's was a ValueError about
1-D arrays).

    >>> import scipy.sparse
    >>> rows, cols = np.array([0, 1, 1]), np.array([0, 0, 1])
    >>> def f(d):
    ...     A = scipy.sparse.coo_matrix((d, (rows, cols)), shape=(2, 2))
    ...     return np.sum(A @ np.array([1.0, 2.0]))
    >>> dg.grad(f)(np.array([1.0, 2.0, 3.0]))
    array([1., 1., 2.])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.trace import Tracer
from ...errors import ShapeMismatchError, UnsupportedOpError, user_location
from .. import numpy as dnp
from .sparse import Pattern, SparseValue

__all__ = ["SparseClass", "is_sparse_class"]


def is_sparse_class(obj) -> bool:
    """Whether ``obj`` is a CSR, CSC or COO class of SciPy's or cupyx's."""
    return isinstance(obj, type) and obj.__name__[:3] in ("csr", "csc", "coo") and \
        obj.__name__[3:] in ("_matrix", "_array") and \
        obj.__module__.startswith(("scipy.sparse", "cupyx.scipy.sparse"))


def _traced(x) -> bool:
    if isinstance(x, (tuple, list)):
        return any(_traced(y) for y in x)
    return isinstance(x, Tracer) or (isinstance(x, SparseValue) and not x.concrete)


def _index(x, name: str, label: str):
    if _traced(x) or getattr(x, "ndim", 1) != 1:
        raise UnsupportedOpError(f"{label}: {name} must be a concrete 1-D index array in traced "
                                 f"code (the pattern is static), got {type(x).__name__} "
                                 f"(at {user_location()})")
    return x if hasattr(x, "dtype") else np.asarray(x)


class SparseClass:
    """A sparse matrix class as traced code sees it: SciPy's own, unless its arguments hold
    traced values (``isinstance`` and the class's attributes are the class's)."""

    def __init__(self, cls: type):
        self.cls = cls

    def __call__(self, arg1: Any, shape=None, dtype=None, copy=False, **kwargs):
        if not _traced(arg1):
            return self.cls(arg1, shape=shape, dtype=dtype, copy=copy, **kwargs)
        label = f"scipy.sparse.{self.cls.__name__}"
        if not isinstance(arg1, tuple) or len(arg1) not in (2, 3) or kwargs:
            raise UnsupportedOpError(
                f"{label} of traced values (at {user_location()}): only (data, indices, indptr) "
                "and (data, (row, col)) with concrete index arrays make a sparse matrix in "
                "traced code (its pattern is static); a dense traced matrix has no pattern")
        data = dnp.ravel(arg1[0]) if isinstance(arg1[0], Tracer) else np.ravel(arg1[0])
        fmt = self.cls.__name__[:3]
        if len(arg1) == 3:
            if fmt not in ("csr", "csc"):
                raise UnsupportedOpError(f"{label}: (data, indices, indptr) is CSR's and CSC's "
                                         f"form (at {user_location()})")
            ind, ptr = (_index(a, n, label) for a, n in zip(arg1[1:], ("indices", "indptr")))
            given = fmt
        else:
            if not isinstance(arg1[1], (tuple, list)) or len(arg1[1]) != 2:
                raise UnsupportedOpError(f"{label}: the second item must be (row, col) "
                                         f"(at {user_location()})")
            ind, ptr = (_index(a, n, label) for a, n in zip(arg1[1], ("row", "col")))
            given = "coo"
        if shape is None:
            raise ShapeMismatchError(f"{label} of traced values: give shape= (at "
                                     f"{user_location()})")
        nnz = int(ind.shape[0])
        if tuple(np.shape(data)) != (nnz,):
            raise ShapeMismatchError(f"{label}: data has {int(np.size(data))} values for "
                                     f"{nnz} stored entries (at {user_location()})")
        value = SparseValue(data, Pattern(given, tuple(shape), ind, ptr)).asformat(fmt)
        value.pattern.container = self.cls  # its kind: a *_matrix's axis sums are np.matrix
        return value if dtype is None else value.astype(dtype)

    def __instancecheck__(self, obj) -> bool:  # a SparseValue: as its matrix's class
        if isinstance(obj, SparseValue):
            return obj.pattern.container is not None and \
                issubclass(obj.pattern.container, self.cls)
        return isinstance(obj, self.cls)

    def __subclasscheck__(self, cls) -> bool:
        return issubclass(cls, self.cls)

    def __getattr__(self, name: str):
        return getattr(self.cls, name)

    def __repr__(self) -> str:
        return f"<dualgpu view of {self.cls!r} inside a traced function>"
