"""``scipy.sparse.linalg`` (and ``cupyx.scipy.sparse.linalg``) on traced values: ``spsolve``.

``spsolve(A, b)`` solves ``A x = b`` for a square sparse ``A`` (CSR, CSC or COO; closed over,
or an argument, whose values may be traced) and a dense ``b`` of shape ``(n,)`` or
``(n, k)``, with SciPy's conventions (a ``b`` of shape ``(n, 1)`` gives ``x`` of shape
``(n,)``). It binds the ``spsolve`` op of :mod:`dualgpu.ops.sparse`: SuperLU on the CPU,
cuSOLVER through cupyx on the GPU; the matrix is never densified, derivatives of any order
stay sparse solves and sparse products, and its Jacobian pattern is dense only within the
connected blocks of ``A``. ``permc_spec`` and ``use_umfpack`` are accepted and have no effect.

    >>> import scipy.sparse, scipy.sparse.linalg
    >>> A = scipy.sparse.csr_matrix(np.array([[4.0, 1.0], [0.0, 2.0]]))
    >>> dg.jit(lambda b: scipy.sparse.linalg.spsolve(A, b))(np.array([6.0, 4.0]))
    array([1., 2.])
    >>> dg.grad(lambda b: scipy.sparse.linalg.spsolve(A, b)[0])(np.array([6.0, 4.0]))
    array([ 0.25 , -0.125])
"""
from __future__ import annotations

from ...errors import ShapeMismatchError, UnsupportedOpError, user_location
from ...lax import reshape, shape_of
from ...ops.sparse import spsolve as _spsolve
from ..numpy.arguments import arraylike
from .sparse import as_sparse_value, is_sparse_like

__all__ = ["spsolve"]


def spsolve(A, b, permc_spec=None, use_umfpack=True):
    """``scipy.sparse.linalg.spsolve(A, b)``: ``x`` with ``A x = b`` for a square sparse ``A``
    (CSR, CSC or COO; its values may be traced) and ``b`` of shape (n,) or (n, k), never
    densified; derivatives are sparse solves and products, and the pattern is dense only
    within the connected blocks of ``A``."""
    where = f"(at {user_location()})"
    if not is_sparse_like(A):
        raise UnsupportedOpError(f"scipy.sparse.linalg.spsolve: A must be a sparse matrix "
                                 f"(scipy.sparse or cupyx), got {type(A).__name__} {where}; "
                                 "for a dense A use scipy.linalg.solve")
    if is_sparse_like(b):
        raise UnsupportedOpError(f"scipy.sparse.linalg.spsolve: a sparse right-hand side b is "
                                 f"not supported on traced values {where}; pass b.toarray()")
    A = as_sparse_value(A)
    n, m = A.shape
    if n != m:
        raise ShapeMismatchError(f"scipy.sparse.linalg.spsolve: the matrix A must be square, "
                                 f"got shape {A.shape} {where}")
    b = arraylike(b)
    shape = tuple(shape_of(b))
    if len(shape) not in (1, 2) or shape[0] != n:
        raise ShapeMismatchError(f"scipy.sparse.linalg.spsolve: the right-hand side b must "
                                 f"have shape ({n},) or ({n}, k) for A of shape {A.shape}, got "
                                 f"shape {shape} {where}")
    p = A.pattern
    x = _spsolve(A.data, b, p.ind, p.ptr, **p.params(), transpose=False)
    if len(shape) == 2 and shape[1] == 1:  # SciPy returns a vector for one column
        return reshape(x, (n,))
    return x
