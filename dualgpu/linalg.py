"""Hessians as linear operators, for SciPy and cupyx solvers."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .api import _Hvp
from .backends import backend_of


def _insert(args: tuple, argnums: int, x) -> tuple:
    """The full argument list of ``f``: ``args`` with ``x`` inserted at ``argnums``."""
    return args[:argnums] + (x,) + args[argnums:]


class HessianOperator:
    """The Hessian of ``f`` at ``x`` (with extra arguments ``args``) as a linear operator.

    ``H = HessianOperator(f, x, *args)`` is ``n × n`` with ``n = x.size``; ``H @ v``,
    ``H.matvec(v)`` and ``H.dot(v)`` compute Hessian-vector products on flat vectors (``H @ V``
    with a 2-D ``V`` is one product per column) and count them in ``H.nprod``. ``f`` is called
    as ``f(x, *args)``; with ``argnums=k``, ``x`` is inserted as ``f``'s argument ``k``.

    ``H`` has ``shape``, ``dtype``, ``matvec`` and ``rmatvec``, so SciPy's solvers take it
    directly (``scipy.sparse.linalg.cg(H, b)``, ``minres``, ``gmres``, ``eigsh``);
    ``H.aslinearoperator()`` (also ``H.op``) is a ``scipy.sparse.linalg.LinearOperator`` for
    NumPy inputs and a ``cupyx.scipy.sparse.linalg.LinearOperator`` for CuPy inputs.
    Vectors are cast to ``x``'s dtype; the product is taken at the fixed point ``x``.

    Example::

        >>> H = dg.HessianOperator(lambda x: np.sum(x ** 4), np.ones(3))
        >>> H @ np.ones(3)
        array([12., 12., 12.])
        >>> H.nprod
        1
        >>> from scipy.sparse.linalg import cg
        >>> cg(H, np.ones(3))[0]
        array([0.08333333, 0.08333333, 0.08333333])
    """

    def __init__(self, f: Callable, x, *args, argnums: int = 0):
        self.f = f
        self.x = x
        self.args = args
        self.argnums = int(argnums)
        self.backend = backend_of([x, *args], "HessianOperator arguments")
        self.n = int(np.prod(x.shape))
        self.shape = (self.n, self.n)
        self.dtype = np.dtype(x.dtype)
        self.nprod = 0
        self._hvp = _Hvp(f, argnums=self.argnums, returns="hvp")
        self._op = None

    def matvec(self, v):
        """``H @ v`` for a flat (or ``(n, 1)``) vector ``v``; counts one product."""
        xp = self.backend.xp
        v = xp.asarray(v)
        shape = v.shape
        direction = v.reshape(self.x.shape).astype(self.dtype, copy=False)
        out = self._hvp(*_insert(self.args, self.argnums, self.x), direction)
        self.nprod += 1
        return out.reshape(shape)

    rmatvec = matvec  # the Hessian is symmetric

    def matmat(self, V):
        """``H @ V`` for an ``(n, k)`` matrix: ``k`` products."""
        xp = self.backend.xp
        V = xp.asarray(V)
        if V.shape[1] == 0:
            return xp.zeros((self.n, 0), dtype=self.dtype)
        return xp.stack([self.matvec(V[:, j]) for j in range(V.shape[1])], axis=1)

    rmatmat = matmat

    def dot(self, v):
        """``H @ v`` for a vector or a matrix of column vectors."""
        if getattr(v, "ndim", np.ndim(v)) == 2 and v.shape[1] != 1:
            return self.matmat(v)
        return self.matvec(v)

    __matmul__ = dot

    @property
    def T(self) -> HessianOperator:
        return self

    def aslinearoperator(self):
        """The operator as a SciPy (NumPy inputs) or cupyx (CuPy inputs) LinearOperator."""
        if self._op is None:
            self._op = self.backend.linear_operator(self.shape, self.matvec, self.dtype)
        return self._op

    op = property(aslinearoperator)

    def __repr__(self) -> str:
        return (f"<HessianOperator {self.n}x{self.n} {self.dtype} on {self.backend.name}, "
                f"{self.nprod} products>")


def hessp(f: Callable, argnums: int = 0):
    """``hp(x, p, *args) = H(x) @ p``, the signature of ``scipy.optimize.minimize``'s
    ``hessp``. ``f`` is called as ``f(x, *args)``; with ``argnums=k``, ``x`` is inserted as
    ``f``'s argument ``k``.

    Example::

        >>> from scipy.optimize import minimize, rosen
        >>> f = lambda x: np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
        >>> res = minimize(f, np.zeros(4), jac=dg.grad(f), hessp=dg.hessp(f),
        ...                method="trust-krylov")
        >>> np.round(res.x, 4)
        array([1., 1., 1., 1.])
    """
    argnums = int(argnums)
    h = _Hvp(f, argnums=argnums, returns="hvp")

    def hp(x, p, *args):
        return h(*_insert(tuple(args), argnums, x), p.astype(x.dtype).reshape(x.shape))

    hp.__name__ = f"hessp_{getattr(f, '__name__', 'f')}"
    hp.__doc__ = f"Hessian-vector product of {getattr(f, '__name__', 'f')}: hp(x, p, *args)."
    return hp
