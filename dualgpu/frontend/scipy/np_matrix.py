"""``np.matrix`` of traced values: what SciPy's ``*_matrix`` classes return from their axis
sums and means (``A.sum(axis=0)`` is a ``(1, n)`` matrix), when the values are traced.

An ``np.matrix`` differs from an ndarray where it matters for values: ``m * x`` is a matrix
product, ``m ** k`` a matrix power, and every result stays a 2-D matrix (``m[0]`` is a row,
``m.ravel()`` is ``(1, n)``, ``m.sum(axis=0)`` keeps its axis). A :class:`MatrixTracer`
does the same for the operators, indexing and methods; ``m * x`` with a traced ``x`` that is
not a scalar is refused (a :class:`~dualgpu.errors.UnsupportedOpError` naming the line,
where an ndarray's elementwise product would silently differ from NumPy's), as is a concrete
``np.matrix`` times a traced array (:func:`dualgpu.errors.no_matrix`).
``m.A``, ``m.A1``, ``np.asarray(m)`` give the plain array. NumPy's functions of one
(``np.sin(m)``) compute the same values as ndarrays, no longer matrices.

    >>> import scipy.sparse
    >>> A = scipy.sparse.csr_matrix(np.array([[1.0, 0.0], [2.0, 3.0]]))
    >>> dg.jit(lambda A, x: A.sum(axis=1).A1 * x)(A, np.ones(2))
    array([1., 5.])
"""
from __future__ import annotations

import numpy as np

from ...core.trace import Tracer
from ...errors import ShapeMismatchError, np_matrix_product_error, user_location
from .. import numpy as dnp

__all__ = ["MatrixTracer", "as_matrix"]


def as_matrix(x):
    """``x`` as NumPy's matrix results are: a 0-d value itself, a vector a ``(1, n)`` row,
    a 2-D traced array a :class:`MatrixTracer`; more dimensions raise, as NumPy does."""
    ndim = len(np.shape(x))
    if ndim == 0:
        return x
    if ndim == 1:
        x = dnp.reshape(x, (1, -1))
    elif ndim > 2:
        raise ShapeMismatchError(f"np.matrix: a result of shape {tuple(np.shape(x))} is too "
                                 f"large to be a matrix (at {user_location()})")
    if isinstance(x, Tracer) and not isinstance(x, MatrixTracer):
        return MatrixTracer(x._var, x._builder)  # the same traced value, seen as a matrix
    return x


def _plain(x):
    return x.A if isinstance(x, MatrixTracer) else x


def _product(a, b):
    """np.matrix's ``a * b``: a scaling by a scalar, else a matrix product (refused)."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return as_matrix(dnp.multiply(_plain(a), _plain(b)))
    raise np_matrix_product_error()


def _elementwise(name: str, reflected: bool = False):
    def op(self, other):
        a, b = (_plain(other), self.A) if reflected else (self.A, _plain(other))
        return as_matrix(getattr(dnp, name)(a, b))
    return op


def _reduction(name: str):
    def method(self, axis=None, *args, **kwargs):
        if axis is None:  # np.matrix's: a scalar
            return getattr(dnp, name)(self.A, None, *args, **kwargs)
        return as_matrix(getattr(dnp, name)(self.A, axis, *args, keepdims=True, **kwargs))
    method.__name__ = name
    return method


class MatrixTracer(Tracer):
    """A traced 2-D value with ``np.matrix``'s semantics (see the module's docstring)."""

    __slots__ = ()
    # an ndarray operand defers to the reflected operators here (NumPy's protocol)
    __array_ufunc__ = None  # type: ignore[assignment]

    A = property(lambda self: Tracer(self._var, self._builder))
    A1 = property(lambda self: dnp.ravel(self.A))
    T = property(lambda self: as_matrix(dnp.transpose(self.A)))
    H = property(lambda self: as_matrix(dnp.conj(dnp.transpose(self.A))))

    def getA(self):  # noqa: N802 (np.matrix's names)
        return self.A

    def getA1(self):  # noqa: N802
        return self.A1

    def __mul__(self, other): return _product(self, other)
    def __rmul__(self, other): return _product(other, self)
    def __matmul__(self, other): return as_matrix(dnp.matmul(self.A, _plain(other)))
    def __rmatmul__(self, other): return as_matrix(dnp.matmul(_plain(other), self.A))

    def __pow__(self, other):
        if self.shape == (1, 1) and np.ndim(other) == 0:  # a 1x1 matrix power: a power
            return as_matrix(dnp.power(self.A, other))
        raise np_matrix_product_error("**")

    __add__, __radd__ = _elementwise("add"), _elementwise("add", True)
    __sub__, __rsub__ = _elementwise("subtract"), _elementwise("subtract", True)
    __truediv__, __rtruediv__ = _elementwise("true_divide"), _elementwise("true_divide", True)
    __floordiv__ = _elementwise("floor_divide")
    __rfloordiv__ = _elementwise("floor_divide", True)
    __mod__, __rmod__ = _elementwise("remainder"), _elementwise("remainder", True)
    __rpow__ = _elementwise("power", True)
    __lt__, __le__ = _elementwise("less"), _elementwise("less_equal")
    __gt__, __ge__ = _elementwise("greater"), _elementwise("greater_equal")
    __eq__, __ne__ = _elementwise("equal"), _elementwise("not_equal")  # type: ignore[assignment]
    __hash__ = Tracer.__hash__

    def __neg__(self): return as_matrix(dnp.negative(self.A))
    def __pos__(self): return self
    def __abs__(self): return as_matrix(dnp.absolute(self.A))

    def __getitem__(self, key):
        """NumPy's matrix indexing: a scalar, or 2-D (``m[0]`` a row, ``m[:, 0]`` a column)."""
        out = self.A[key]
        if np.ndim(out) != 1:
            return as_matrix(out)
        column = type(key) is tuple and len(key) > 1 and np.ndim(key[1]) == 0 \
            and not isinstance(key[1], slice)
        return as_matrix(dnp.reshape(out, (-1, 1) if column else (1, -1)))

    sum, mean, max, min = (_reduction(n) for n in ("sum", "mean", "max", "min"))
    prod, std, var = (_reduction(n) for n in ("prod", "std", "var"))
    any, all = _reduction("any"), _reduction("all")

    def ravel(self, *args, **kwargs): return as_matrix(dnp.ravel(self.A, *args, **kwargs))
    flatten = ravel

    def squeeze(self, *args, **kwargs): return self
    def reshape(self, *shape, **kwargs): return as_matrix(self.A.reshape(*shape, **kwargs))
    def transpose(self, *axes): return as_matrix(self.A.transpose(*axes))
    def astype(self, *args, **kwargs): return as_matrix(self.A.astype(*args, **kwargs))
    def copy(self, *args, **kwargs): return self
    def dot(self, other): return as_matrix(dnp.dot(self.A, _plain(other)))
