"""Derivatives of solve, inv, det, slogdet and cholesky, written with these same
primitives and matmul, so that they differentiate to any order."""
from __future__ import annotations

from .. import numpy_api as dnp
from ..core.primitives import defrules
from ..ops.decompositions import cholesky, det, inv, slogdet, solve
from ..ops.linalg import matmul
from ._util import unbroadcast, wants_cotangent


def _mT(x):
    return dnp.swapaxes(x, -1, -2)


def _inv_jvp(primals, tangents):
    ans = inv.bind(primals[0])
    t = tangents[0]
    return ans, None if t is None else dnp.negative(matmul.bind(matmul.bind(ans, t), ans))


def _inv_vjp(g, primals, ans):
    ans_t = _mT(ans)
    return (dnp.negative(matmul.bind(matmul.bind(ans_t, g), ans_t)),)


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


defrules(inv, jvp=_inv_jvp, vjp=_inv_vjp)
defrules(solve, jvp=_solve_jvp, vjp=_solve_vjp)
defrules(det, jvp=_det_jvp, vjp=_det_vjp)
defrules(slogdet, jvp=_slogdet_jvp, vjp=_slogdet_vjp)
defrules(cholesky, jvp=_chol_jvp, vjp=_chol_vjp)
