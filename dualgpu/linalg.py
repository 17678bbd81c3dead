"""Hessians as linear operators, for SciPy and cupyx solvers.

``x`` is one flat point: a NumPy or CuPy floating-point array (a Python or NumPy float scalar
is converted). Bad input -- a list, a string, an integer array, a tuple ``argnums``, a vector
of the wrong size -- is one :class:`~dualgpu.DualgpuError` naming the argument. An empty ``x``
(size 0) has an empty Hessian.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .api import hvp
from .backends import NUMPY, array_backend, backend_of
from .errors import BackendMismatchError, DualgpuError, IntegerInputError, ShapeMismatchError
from .vectorize import vmap


def _insert(args: tuple, argnums: int, x) -> tuple:
    """The full argument list of ``f``: ``args`` with ``x`` inserted at ``argnums``."""
    return args[:argnums] + (x,) + args[argnums:]


def _check_fn(f, what: str) -> None:
    if not callable(f):
        raise DualgpuError(f"{what}: f must be a function, got {type(f).__name__}")


def _check_argnums(argnums, what: str) -> int:
    """``argnums`` of the Hessian helpers: the position of the one flat argument ``x``."""
    if isinstance(argnums, (bool, np.bool_)) or not isinstance(argnums, (int, np.integer)) \
            or argnums < 0:
        hint = (" (one argument only: concatenate several into one flat x)"
                if isinstance(argnums, (tuple, list)) else "")
        raise DualgpuError(f"{what}: argnums must be a non-negative int, the position of x, "
                           f"got {argnums!r}{hint}")
    return int(argnums)


def _as_point(x, what: str, name: str = "x"):
    """``x`` as a floating-point array: arrays pass, float scalars are converted."""
    if isinstance(x, (bool, np.bool_)):
        raise IntegerInputError(f"{what}: {name} is a bool; pass a floating-point array")
    if isinstance(x, (int, float)) and not isinstance(x, np.generic):
        return np.asarray(float(x))
    if isinstance(x, np.generic):
        x = np.asarray(x)
    b = array_backend(x)
    if b is None or b.is_sparse(x):
        raise DualgpuError(f"{what}: {name} must be a NumPy or CuPy array (or a float), got "
                           f"{type(x).__name__}" + ("; use np.asarray(x)"
                                                    if isinstance(x, (list, tuple)) else ""))
    kind = np.dtype(x.dtype).kind
    if kind not in "fc":
        raise IntegerInputError(f"{what}: {name} has dtype {np.dtype(x.dtype)}: only "
                                f"floating-point points can be differentiated; convert it "
                                "with .astype(float)")
    return x


def _as_vector(v, xp, backend, n: int, dtype, what: str, name: str):
    """A direction given to a Hessian product: numeric, on ``backend``, of ``n`` entries."""
    b = array_backend(v)
    if b is not None and b is not backend:
        raise BackendMismatchError(f"{what}: {name} is a {b.name} array but x is a "
                                   f"{backend.name} array")
    if b is None and not isinstance(v, (list, tuple, int, float, complex, np.generic)):
        raise DualgpuError(f"{what}: {name} must be an array, got {type(v).__name__}")
    try:
        v = xp.asarray(v)
    except (TypeError, ValueError) as e:
        raise DualgpuError(f"{what}: {name} is not a numeric array "
                           f"({' '.join(str(e).split())})") from None
    kind = np.dtype(v.dtype).kind
    if kind not in "biufc":
        raise DualgpuError(f"{what}: {name} must be numeric, got dtype {v.dtype}")
    if kind == "c" and np.dtype(dtype).kind != "c":
        raise ShapeMismatchError(f"{what}: {name} is complex ({v.dtype}) but x is real "
                                 f"({np.dtype(dtype)})")
    if v.size != n:
        raise ShapeMismatchError(f"{what}: {name} has shape {tuple(v.shape)} ({v.size} "
                                 f"entries), but x has {n} entries")
    return v


class HessianOperator:
    """The Hessian of ``f`` at ``x`` (with extra arguments ``args``) as a linear operator.

    ``H = HessianOperator(f, x, *args)`` is ``n × n`` with ``n = x.size``: a
    ``scipy.sparse.linalg.LinearOperator`` for NumPy inputs and a
    ``cupyx.scipy.sparse.linalg.LinearOperator`` for CuPy inputs, so SciPy's algebra and
    solvers take it as it is: ``H + lam * I`` (with ``I`` an ``aslinearoperator`` of the
    identity), ``alpha * H``, ``H.T``, ``H.H``, ``H @ v``, ``H @ V``, ``cg``, ``minres``,
    ``eigsh``. ``H @ V`` with a 2-D ``V`` is one program for all the columns (``dg.vmap`` of
    the HVP). ``H.nprod`` counts every Hessian-vector product, also those made through a
    sum or a scaled operator. ``f`` is called as ``f(x, *args)``; with ``argnums=k``, ``x`` is
    inserted as ``f``'s argument ``k``.

    Vectors are cast to ``x``'s dtype; the product is taken at the fixed point ``x``. ``x``
    must be a floating-point array (a float scalar is converted); a vector of the wrong size
    raises :class:`~dualgpu.ShapeMismatchError`.

    Example::

        >>> H = dg.HessianOperator(lambda x: np.sum(x ** 4), np.ones(3))
        >>> H @ np.ones(3)
        array([12., 12., 12.])
        >>> from scipy.sparse.linalg import LinearOperator, aslinearoperator, cg
        >>> isinstance(H, LinearOperator), aslinearoperator(H) is H
        (True, True)
        >>> damped = H + 0.5 * aslinearoperator(np.eye(3))      # H + 0.5 I
        >>> damped @ np.ones(3)
        array([12.5, 12.5, 12.5])
        >>> cg(H, np.ones(3))[0]
        array([0.08333333, 0.08333333, 0.08333333])
        >>> H.nprod >= 2
        True
    """

    def __new__(cls, f: Callable = None, x=None, *args, argnums: int = 0):
        if cls is not HessianOperator:
            return object.__new__(cls)
        b = array_backend(x)
        backend = b if b is not None and b.is_cupy else NUMPY
        return object.__new__(_operator_class(backend))

    def __init__(self, f: Callable, x, *args, argnums: int = 0):
        what = "HessianOperator"
        _check_fn(f, what)
        self.argnums = _check_argnums(argnums, what)
        if self.argnums > len(args):
            raise DualgpuError(f"{what}: argnums={self.argnums} but f gets only "
                               f"{len(args) + 1} argument(s) (x and {len(args)} more)")
        x = _as_point(x, what)
        self.f = f
        self.x = x
        self.args = args
        self.backend = backend_of([x, *args], "HessianOperator arguments")
        if self.backend.linear_operator_class() not in type(self).__mro__:
            raise BackendMismatchError(f"{what}: built for {type(self).__name__} but x is a "
                                       f"{self.backend.name} array")
        self.n = int(np.prod(x.shape))
        self._hvp = hvp(f, argnums=self.argnums)
        self._hvp_columns = None
        self.nprod = 0
        self.backend.linear_operator_class().__init__(self, np.dtype(x.dtype),
                                                      (self.n, self.n))

    def matvec(self, v):
        """``H @ v`` for a flat (or ``(n, 1)``) vector ``v``; counts one product."""
        xp = self.backend.xp
        v = _as_vector(v, xp, self.backend, self.n, self.dtype, "HessianOperator", "v")
        if not (v.ndim == 1 or (v.ndim == 2 and v.shape[1] == 1)
                or tuple(v.shape) == tuple(self.x.shape)):
            raise ShapeMismatchError(f"HessianOperator: v has shape {tuple(v.shape)}; give a "
                                     f"flat vector of {self.n} entries (or an ({self.n}, 1) "
                                     "column)")
        shape = v.shape
        direction = v.reshape(self.x.shape).astype(self.dtype, copy=False)
        out = self._hvp(*_insert(self.args, self.argnums, self.x), direction)
        self.nprod += 1
        return out.reshape(shape)

    def rmatvec(self, v):
        """``H^H @ v``: the Hessian is symmetric (Hermitian for real ``x``), so ``H @ v``."""
        return self.matvec(v)

    def matmat(self, V):
        """``H @ V`` for an ``(n, k)`` matrix: ``k`` products, run as one batched program
        (``dg.vmap`` of the HVP)."""
        xp = self.backend.xp
        b = array_backend(V)
        if b is not None and b is not self.backend:
            raise BackendMismatchError(f"HessianOperator: V is a {b.name} array but x is a "
                                       f"{self.backend.name} array")
        V = xp.asarray(V) if b is not None or isinstance(V, (list, tuple)) else V
        if getattr(V, "ndim", None) != 2 or V.shape[0] != self.n:
            raise ShapeMismatchError(
                f"HessianOperator: V has shape {tuple(getattr(V, 'shape', ()))}, expected "
                f"({self.n}, k): one column per vector")
        k = V.shape[1]
        if k == 0:
            return xp.zeros((self.n, 0), dtype=self.dtype)
        if self._hvp_columns is None:  # one program for all the columns: GEMMs k wide
            self._hvp_columns = vmap(self._hvp, out_axes=-1,
                                     in_axes=(None,) * (len(self.args) + 1) + (-1,))
        directions = xp.asarray(V).astype(self.dtype, copy=False).reshape(
            tuple(self.x.shape) + (k,))
        out = self._hvp_columns(*_insert(self.args, self.argnums, self.x), directions)
        self.nprod += k
        return out.reshape(self.n, k)

    def rmatmat(self, V):
        return self.matmat(V)

    # the library's generic entry points (sums, scaled operators, solvers) land here
    def _matvec(self, v):
        return self.matvec(v)

    def _rmatvec(self, v):
        return self.matvec(v)

    def _matmat(self, V):
        return self.matmat(V)

    def _rmatmat(self, V):
        return self.matmat(V)

    def _adjoint(self):
        return self

    def _transpose(self):
        return self

    def dot(self, v):
        """``H @ v`` for a vector, a matrix of column vectors, a scalar (a scaled operator)
        or another linear operator (their product)."""
        if isinstance(v, self.backend.linear_operator_class()) or _is_number(v):
            return self.backend.linear_operator_class().dot(self, v)
        if getattr(v, "ndim", np.ndim(v) if isinstance(v, (list, tuple)) else 1) == 2 \
                and np.shape(v)[1] != 1:
            return self.matmat(v)
        return self.matvec(v)

    def __matmul__(self, v):
        if _is_number(v):
            raise DualgpuError("HessianOperator: H @ a number is not a product; scale the "
                               "operator with * instead")
        return self.dot(v)

    @property
    def T(self):
        return self

    @property
    def H(self):
        return self

    def aslinearoperator(self):
        """The operator itself (it is a SciPy or cupyx ``LinearOperator``); kept for code
        written against ``H.op``."""
        return self

    op = property(aslinearoperator)

    def __repr__(self) -> str:
        return (f"<HessianOperator {self.n}x{self.n} {self.dtype} on {self.backend.name}, "
                f"{self.nprod} products>")


def _is_number(v) -> bool:
    return isinstance(v, (int, float, complex, np.number)) and not isinstance(v, bool)


_OPERATOR_CLASSES: dict = {}


def _operator_class(backend) -> type:
    """HessianOperator joined with the backend's LinearOperator class (made once each)."""
    cls = _OPERATOR_CLASSES.get(backend.name)
    if cls is None:
        base = backend.linear_operator_class()
        cls = type("HessianOperator", (HessianOperator, base),
                   {"__module__": __name__, "__doc__": HessianOperator.__doc__})
        _OPERATOR_CLASSES[backend.name] = cls
    return cls


def hessp(f: Callable, argnums: int = 0):
    """``hp(x, p, *args) = H(x) @ p``, the signature of ``scipy.optimize.minimize``'s
    ``hessp``. ``f`` is called as ``f(x, *args)``; with ``argnums=k``, ``x`` is inserted as
    ``f``'s argument ``k``. ``p`` has ``x.size`` entries (any shape); the result has ``x``'s
    shape.

    Example::

        >>> from scipy.optimize import minimize, rosen
        >>> f = lambda x: np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
        >>> res = minimize(f, np.zeros(4), jac=dg.grad(f), hessp=dg.hessp(f),
        ...                method="trust-krylov")
        >>> np.round(res.x, 4)
        array([1., 1., 1., 1.])
    """
    _check_fn(f, "hessp")
    argnums = _check_argnums(argnums, "hessp")
    h = hvp(f, argnums=argnums)

    def hp(x, p, *args):
        if argnums > len(args):
            raise DualgpuError(f"hessp: argnums={argnums} but hp got only {len(args)} extra "
                               "argument(s) after x and p")
        x = _as_point(x, "hessp")
        backend = backend_of([x], "hessp arguments")
        p = _as_vector(p, backend.xp, backend, int(np.prod(x.shape)), x.dtype, "hessp", "p")
        return h(*_insert(tuple(args), argnums, x), p.astype(x.dtype).reshape(x.shape))

    hp.__name__ = f"hessp_{getattr(f, '__name__', 'f')}"
    hp.__doc__ = f"Hessian-vector product of {getattr(f, '__name__', 'f')}: hp(x, p, *args)."
    return hp

