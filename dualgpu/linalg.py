"""Hessians as linear operators, for SciPy and cupyx solvers."""
from __future__ import annotations

from typing import Callable

import numpy as np

from .api import _Hvp
from .backends import backend_of


class HessianOperator:
    """The Hessian of ``f`` at ``x`` (with extra arguments ``args``) as a linear operator.

    ``H = HessianOperator(f, x, *args)`` is ``n × n`` with ``n = x.size``; ``H @ v``,
    ``H.matvec(v)`` and ``H.dot(v)`` compute Hessian-vector products on flat vectors and
    count them in ``H.nprod``. ``H.aslinearoperator()`` (also ``H.op``) is a
    ``scipy.sparse.linalg.LinearOperator`` for NumPy inputs and a cupyx one for CuPy inputs,
    so ``scipy.sparse.linalg.cg(H.op, b)`` works.

    Example::

        >>> H = dg.HessianOperator(lambda x: np.sum(x ** 4), np.ones(3))
        >>> H @ np.ones(3)
        array([12., 12., 12.])
        >>> H.nprod
        1
    """

    def __init__(self, f: Callable, x, *args, argnums: int = 0):
        self.f = f
        self.x = x
        self.args = args
        self.backend = backend_of([x, *args], "HessianOperator arguments")
        self.n = int(np.prod(x.shape))
        self.shape = (self.n, self.n)
        self.dtype = np.dtype(x.dtype)
        self.nprod = 0
        self._hvp = _Hvp(f, argnums=0, returns="hvp")
        self._op = None

    def matvec(self, v):
        """``H @ v`` for a flat (or ``(n, 1)``) vector ``v``."""
        xp = self.backend.xp
        v = xp.asarray(v)
        shape = v.shape
        out = self._hvp(self.x, *self.args, v.reshape(self.x.shape).astype(self.dtype))
        self.nprod += 1
        return out.reshape(shape)

    rmatvec = matvec
    dot = matvec
    __matmul__ = matvec

    def matmat(self, V):
        xp = self.backend.xp
        return xp.stack([self.matvec(V[:, j]) for j in range(V.shape[1])], axis=1)

    def aslinearoperator(self):
        if self._op is None:
            self._op = self.backend.linear_operator(self.shape, self.matvec, self.dtype)
        return self._op

    op = property(aslinearoperator)

    def __repr__(self) -> str:
        return (f"<HessianOperator {self.n}x{self.n} {self.dtype} on {self.backend.name}, "
                f"{self.nprod} products>")


def hessp(f: Callable, argnums: int = 0):
    """``hp(x, p, *args) = H(x) @ p``, the signature of ``scipy.optimize.minimize``'s
    ``hessp``.

    Example::

        >>> from scipy.optimize import minimize
        >>> minimize(f, x0, jac=dg.grad(f), hessp=dg.hessp(f), method="trust-krylov")
    """
    h = _Hvp(f, argnums=0, returns="hvp")

    def hp(x, p, *args):
        return h(x, *args, p.astype(x.dtype).reshape(x.shape))

    hp.__name__ = f"hessp_{getattr(f, '__name__', 'f')}"
    return hp
