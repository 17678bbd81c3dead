"""Dense linear algebra: ``solve``, ``inv``, ``det``, ``slogdet`` and ``cholesky`` over the
last two axes (leading axes are batch axes). Library ops: the implementations call
``xp.linalg`` (NumPy's LAPACK, or cuSOLVER through CuPy) on plain arrays; the rules are
written with these same primitives and matmul, so they differentiate to any order.

Conventions follow NumPy: ``solve(a, b)`` treats ``b`` as a vector when ``b.ndim == 1``,
else as a stack of matrices; ``cholesky`` returns the lower factor and, like LAPACK,
reads only the lower triangle of its argument.

Example::

    >>> import numpy as np, dualgpu as dg
    >>> a = np.array([[2.0, 1.0], [1.0, 3.0]])
    >>> dg.grad(lambda a: np.linalg.slogdet(a)[1])(a)      # inv(a).T
    array([[ 0.6, -0.2],
           [-0.2,  0.4]])
"""
from __future__ import annotations

from .. import numpy_api as dnp
from ..core.ir import Aval
from ..core.primitives import defprim
from ..errors import DualgpuError
from ._util import float_dtype, promote, unbroadcast, wants_cotangent
from .linalg import matmul


def _mT(x):
    return dnp.swapaxes(x, -1, -2)


def _square(a: Aval, op: str) -> None:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise DualgpuError(f"linalg.{op}: expected square matrices (..., n, n), got "
                           f"{a.str_short()}")




# --------------------------------------------------------------------------- inv
def _inv_shape(avals):
    a = avals[0]
    _square(a, "inv")
    return Aval(tuple(a.shape), float_dtype(a.dtype))


def _inv_jvp(primals, tangents):
    ans = inv.bind(primals[0])
    t = tangents[0]
    return ans, None if t is None else dnp.negative(matmul.bind(matmul.bind(ans, t), ans))


def _inv_vjp(g, primals, ans):
    ans_t = _mT(ans)
    return (dnp.negative(matmul.bind(matmul.bind(ans_t, g), ans_t)),)


inv = defprim("inv", lambda xp, a: xp.linalg.inv(a), _inv_shape, jvp=_inv_jvp,
              vjp=_inv_vjp, kind="library", py="xp.linalg.inv({0})",
              doc="Matrix inverse over the last two axes.")


# --------------------------------------------------------------------------- solve
def _solve_shape(avals):
    a, b = avals
    _square(a, "solve")
    n = a.shape[-1]
    if b.ndim == 1:
        if b.shape[0] != n:
            raise DualgpuError(f"linalg.solve: {a.str_short()} and {b.str_short()} differ")
        return Aval(tuple(a.shape[:-1]), float_dtype(promote([a, b])))
    if b.shape[-2] != n:
        raise DualgpuError(f"linalg.solve: {a.str_short()} and {b.str_short()} differ")
    try:
        import numpy as np

        batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    except ValueError:
        raise DualgpuError(f"linalg.solve: batch shapes of {a.str_short()} and "
                           f"{b.str_short()} do not broadcast") from None
    return Aval(batch + tuple(b.shape[-2:]), float_dtype(promote([a, b])))


def _as_matrix(v, vector: bool):
    return dnp.expand_dims(v, -1) if vector else v


def _solve_jvp(primals, tangents):
    a, b = primals
    ta, tb = tangents
    ans = solve.bind(a, b)
    vector = len(dnp._shape(b)) == 1
    rhs = tb
    if ta is not None:
        ta_x = matmul.bind(ta, _as_matrix(ans, vector))
        ta_x = dnp.squeeze(ta_x, -1) if vector else ta_x
        rhs = dnp.negative(ta_x) if rhs is None else dnp.subtract(rhs, ta_x)
    if rhs is None:
        return ans, None
    if vector and len(dnp._shape(rhs)) > 1:  # a batched a with a vector b
        return ans, dnp.squeeze(solve.bind(a, dnp.expand_dims(rhs, -1)), -1)
    return ans, solve.bind(a, rhs)


def _solve_vjp(g, primals, ans):
    a, b = primals
    vector = len(dnp._shape(b)) == 1
    gm = _as_matrix(g, vector)
    b_bar_m = solve.bind(_mT(a), gm)
    ca = cb = None
    if wants_cotangent(a):
        ca = dnp.negative(matmul.bind(b_bar_m, _mT(_as_matrix(ans, vector))))
        ca = unbroadcast(ca, a.aval)
    if wants_cotangent(b):
        cb = dnp.squeeze(b_bar_m, -1) if vector else b_bar_m
        cb = unbroadcast(cb, b.aval)
    return ca, cb


def _solve_impl(xp, a, b):
    if b.ndim == 1 and a.ndim > 2:
        return xp.linalg.solve(a, b[:, None])[..., 0]
    return xp.linalg.solve(a, b)


solve = defprim("solve", _solve_impl, _solve_shape, jvp=_solve_jvp, vjp=_solve_vjp,
                kind="library", py="ops.solve({0}, {1})",
                doc="x with a @ x = b (b a vector when 1-D, else a stack of matrices).")


# --------------------------------------------------------------------------- det, slogdet
def _det_shape(avals):
    a = avals[0]
    _square(a, "det")
    return Aval(tuple(a.shape[:-2]), float_dtype(a.dtype))


def _trace_product(m, t):
    """trace(m @ t) over the last two axes, without forming the product."""
    return dnp.sum(dnp.multiply(_mT(m), t), axis=(-2, -1))


def _det_jvp(primals, tangents):
    a = primals[0]
    ans = det.bind(a)
    t = tangents[0]
    if t is None:
        return ans, None
    return ans, dnp.multiply(ans, _trace_product(inv.bind(a), t))


def _det_vjp(g, primals, ans):
    a = primals[0]
    scale = dnp.expand_dims(dnp.multiply(g, ans), (-2, -1))
    return (dnp.multiply(scale, _mT(inv.bind(a))),)


det = defprim("det", lambda xp, a: xp.linalg.det(a), _det_shape, jvp=_det_jvp,
              vjp=_det_vjp, kind="library", py="xp.linalg.det({0})",
              doc="Determinant over the last two axes.")


def _slogdet_shape(avals):
    a = _det_shape(avals)
    return [a, a]


def _slogdet_impl(xp, a):
    sign, logabsdet = xp.linalg.slogdet(a)
    return sign, logabsdet


def _slogdet_jvp(primals, tangents):
    a = primals[0]
    sign, logabsdet = slogdet.bind(a)
    t = tangents[0]
    if t is None:
        return (sign, logabsdet), (None, None)
    return (sign, logabsdet), (None, _trace_product(inv.bind(a), t))


def _slogdet_vjp(cts, primals, ans):
    a = primals[0]
    g = cts[1]
    if g is None:
        return (None,)
    return (dnp.multiply(dnp.expand_dims(g, (-2, -1)), _mT(inv.bind(a))),)


slogdet = defprim("slogdet", _slogdet_impl, _slogdet_shape, jvp=_slogdet_jvp,
                  vjp=_slogdet_vjp, multiple_results=True, kind="library",
                  py="ops.slogdet({0})",
                  doc="(sign, log|det|) over the last two axes; the sign has no derivative.")


# --------------------------------------------------------------------------- cholesky
def _chol_shape(avals):
    a = avals[0]
    _square(a, "cholesky")
    if a.dtype.kind == "c":  # Hermitian factors need conjugate transposes in the rules
        raise DualgpuError(f"linalg.cholesky of complex matrices ({a.str_short()}) is not "
                           "supported on traced values")
    return Aval(tuple(a.shape), float_dtype(a.dtype))


def _lower_mask(n, k=0):
    import numpy as np

    return np.tri(n, n, k, dtype=bool)


def _phi(x):
    """Strict lower triangle plus half the diagonal."""
    import numpy as np

    n = dnp._shape(x)[-1]
    weights = (np.tri(n, n, -1) + 0.5 * np.eye(n)).astype(dnp._dtype(x))
    return dnp.multiply(x, weights)


def _sym_from_lower(t):
    """The symmetric matrix whose lower triangle is that of t (what LAPACK reads)."""
    n = dnp._shape(t)[-1]
    low = dnp.where(_lower_mask(n), t, 0.0)
    strict = dnp.where(_lower_mask(n, -1), t, 0.0)
    return dnp.add(low, _mT(strict))


def _chol_jvp(primals, tangents):
    a = primals[0]
    ans = cholesky.bind(a)
    t = tangents[0]
    if t is None:
        return ans, None
    # dL = L phi(L^-1 dA L^-T), dA the symmetric matrix read from t's lower triangle
    left = solve.bind(ans, _sym_from_lower(t))
    inner = _mT(solve.bind(ans, _mT(left)))
    return ans, matmul.bind(ans, _phi(inner))


def _chol_vjp(g, primals, ans):
    p = _phi(matmul.bind(_mT(ans), g))
    # S = L^-T P L^-1
    s = solve.bind(_mT(ans), _mT(solve.bind(_mT(ans), _mT(p))))
    n = dnp._shape(s)[-1]
    both = dnp.add(s, _mT(s))
    diagonal = dnp.multiply(s, dnp.eye(n, dtype=s.dtype, like=s))
    return (dnp.where(_lower_mask(n, -1), both, diagonal),)


cholesky = defprim("cholesky", lambda xp, a: xp.linalg.cholesky(a), _chol_shape,
                   jvp=_chol_jvp, vjp=_chol_vjp, kind="library", py="xp.linalg.cholesky({0})",
                   doc="Lower Cholesky factor; reads only the lower triangle of a.")
