"""Dense linear systems and triangular factorizations: ``solve``, ``inv``, ``det``,
``slogdet``, ``cholesky``, and SciPy's ``solve_triangular`` and ``lu_factor`` (with
``lu_pivots_to_permutation``) over the last two axes (leading axes are batch axes), one
block each. Library ops: the implementations call ``xp.linalg`` (NumPy's LAPACK, or cuSOLVER
through CuPy) or the backend's ``linalg`` (``scipy.linalg``, ``cupyx.scipy.linalg``) on plain
arrays; the rules are written with these same primitives and matmul, so they differentiate to
any order. The eigen-, singular-value and QR decompositions are in
:mod:`dualgpu.ops.decompositions`.

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

import numpy as np

from .. import lax
from ..backends import backend_for_xp
from ..core.dtypes import float_dtype, promote
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import defprim, defrules, defstandalone
from ..errors import DualgpuError
from ..rules import batching_rules as batching
from ..rules import sparsity_rules as sparsity
from ..rules.common import unbroadcast, wants_cotangent
from ..rules.linalg_rules import (
    broadcast_batch,
    check_square,
    diag_embed,
    diag_part,
    eye_like,
    lower_mask,
    mm,
    mT,
    per_matrix,
    real_only,
    scale_cols,
    scale_rows,
    sym_from_lower,
)
from . import decompositions
from .products import matmul


# --------------------------------------------------------------------------- inv
def _inv_shape(avals):
    a = avals[0]
    check_square(a, "inv")
    return Aval(tuple(a.shape), float_dtype(a.dtype))


inv = defprim("inv", lambda xp, a: xp.linalg.inv(a), _inv_shape,
              kind=Flag.LIBRARY, py="xp.linalg.inv({0})",
              doc="Matrix inverse over the last two axes.")


# --------------------------------------------------------------------------- solve
def _solve_shape(avals):
    a, b = avals
    check_square(a, "solve")
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


def _solve_impl(xp, a, b):
    if b.ndim == 1 and a.ndim > 2:
        return xp.linalg.solve(a, b[:, None])[..., 0]
    return xp.linalg.solve(a, b)


solve = defprim("solve", _solve_impl, _solve_shape,
                kind=Flag.LIBRARY, py="ops.solve({0}, {1})",
                doc="x with a @ x = b (b a vector when 1-D, else a stack of matrices).")


# --------------------------------------------------------------------------- det, slogdet
def _det_shape(avals):
    a = avals[0]
    check_square(a, "det")
    return Aval(tuple(a.shape[:-2]), float_dtype(a.dtype))


det = defprim("det", lambda xp, a: xp.linalg.det(a), _det_shape,
              kind=Flag.LIBRARY, py="xp.linalg.det({0})",
              doc="Determinant over the last two axes.")


def _slogdet_shape(avals):
    a = _det_shape(avals)
    return [a, a]


def _slogdet_impl(xp, a):
    sign, logabsdet = xp.linalg.slogdet(a)
    return sign, logabsdet


slogdet = defprim("slogdet", _slogdet_impl, _slogdet_shape,
                  multiple_results=True, kind=Flag.LIBRARY,
                  py="ops.slogdet({0})",
                  doc="(sign, log|det|) over the last two axes; the sign has no derivative.")


# --------------------------------------------------------------------------- cholesky
def _chol_shape(avals):
    a = avals[0]
    check_square(a, "cholesky")
    if a.dtype.kind == "c":  # Hermitian factors need conjugate transposes in the rules
        raise DualgpuError(f"linalg.cholesky of complex matrices ({a.str_short()}) is not "
                           "supported on traced values")
    return Aval(tuple(a.shape), float_dtype(a.dtype))


cholesky = defprim("cholesky", lambda xp, a: xp.linalg.cholesky(a), _chol_shape,
                   kind=Flag.LIBRARY, py="xp.linalg.cholesky({0})",
                   doc="Lower Cholesky factor; reads only the lower triangle of a.")


# --------------------------------------------------------------------------- solve_triangular, LU
# SciPy's (scipy.linalg, or cupyx.scipy.linalg: the backend's ``linalg``), one matrix at a
# time (:func:`~dualgpu.rules.linalg_rules.per_matrix`): the leading axes are batch axes, broadcast.
def _solve_triangular_shape(avals, lower=False, trans=0, unit_diagonal=False):
    a, b = avals
    check_square(a, "solve_triangular")
    real_only(a, "solve_triangular")
    if trans not in (0, 1) or not isinstance(lower, bool) or not isinstance(unit_diagonal,
                                                                            bool):
        raise DualgpuError(f"linalg.solve_triangular: trans must be 0 or 1 and lower, "
                           f"unit_diagonal booleans, got {trans!r}, {lower!r}, "
                           f"{unit_diagonal!r}")
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise DualgpuError(f"linalg.solve_triangular: {a.str_short()} and {b.str_short()} "
                           "differ (b is a stack of matrices (..., n, k))")
    batch = broadcast_batch(avals, "solve_triangular")
    return Aval(batch + tuple(b.shape[-2:]), float_dtype(promote([a, b])))


def _solve_triangular_impl(xp, a, b, lower=False, trans=0, unit_diagonal=False):
    solver = backend_for_xp(xp).linalg.solve_triangular
    out = _solve_triangular_shape([Aval(a.shape, a.dtype), Aval(b.shape, b.dtype)],
                                  lower, trans, unit_diagonal)
    if not out.size:
        return xp.zeros(out.shape, out.dtype)
    return per_matrix(xp, lambda a, b: (solver(a, b, trans=trans, lower=lower,
                                                unit_diagonal=unit_diagonal,
                                                check_finite=False),),
                       [out.shape], [out.dtype], a, b)[0]


solve_triangular = defprim(
    "solve_triangular", _solve_triangular_impl, _solve_triangular_shape, kind=Flag.LIBRARY,
    arity=2, py="ops.solve_triangular({0}, {1}, {lower}, {trans}, {unit_diagonal})",
    doc="x with t @ x = b (trans 0) or t.T @ x = b (trans 1), t the lower (lower) or upper "
        "triangle of a, its diagonal taken as ones with unit_diagonal; b a stack of matrices.")


def _lu_factor_shape(avals):
    a = avals[0]
    check_square(a, "lu_factor")
    real_only(a, "lu_factor")
    return [Aval(tuple(a.shape), float_dtype(a.dtype)),
            Aval(tuple(a.shape[:-1]), np.dtype(np.int32))]


def _lu_factor_impl(xp, a):
    factor = backend_for_xp(xp).linalg.lu_factor
    lu, piv = _lu_factor_shape([Aval(a.shape, a.dtype)])
    if not a.size:
        return xp.zeros(lu.shape, lu.dtype), xp.zeros(piv.shape, piv.dtype)
    return per_matrix(xp, lambda a: factor(a, check_finite=False), [lu.shape, piv.shape],
                       [lu.dtype, piv.dtype], a)


lu_factor = defprim(
    "lu_factor", _lu_factor_impl, _lu_factor_shape, multiple_results=True, kind=Flag.LIBRARY,
    py="ops.lu_factor({0})",
    doc="LAPACK's LU factorisation with partial pivoting (lu, piv): P a = L U with L's strict "
        "lower triangle and U in lu; row i was interchanged with row piv[i] (int32), in turn.")


def _pivots_shape(avals):
    piv = avals[0]
    if piv.ndim < 1 or piv.dtype.kind not in "iu":
        raise DualgpuError(f"lu_pivots_to_permutation: expected integer pivots (..., n), got "
                           f"{piv.str_short()}")
    return Aval(tuple(piv.shape), np.dtype(np.int32))


def _pivots_impl(xp, piv):
    """The permutation ``perm`` with ``(P a) = a[perm]``: LAPACK's row interchanges applied
    in turn to ``arange(n)``."""
    n = piv.shape[-1]
    rows = piv.reshape(-1, n).astype(np.int64)
    perm = xp.tile(xp.arange(n, dtype=np.int32), (rows.shape[0], 1))
    batch = xp.arange(rows.shape[0])
    for i in range(n):
        j = rows[:, i]
        here, there = perm[:, i].copy(), perm[batch, j]
        perm[:, i] = there
        perm[batch, j] = here
    return perm.reshape(piv.shape)


lu_pivots_to_permutation = defprim(
    "lu_pivots_to_permutation", _pivots_impl, _pivots_shape, kind=Flag.LIBRARY,
    differentiable=False, py="ops.lu_pivots_to_permutation({0})",
    doc="The row permutation (int32) of LAPACK's pivots: (P a) = a[perm]; no derivative.")


# --------------------------------------------------------------------------- exported modules
# the functions a module of dg.export defines for the ops it calls as ops.<name>
defstandalone(solve, (
        'def solve(a, b):\n'
        '    if b.ndim == 1 and a.ndim > 2:\n'
        '        return xp.linalg.solve(a, b[:, None])[..., 0]\n'
        '    return xp.linalg.solve(a, b)\n'))
defstandalone(slogdet, 'def slogdet(a):\n    return tuple(xp.linalg.slogdet(a))\n')
def _scipy_standalone(prim, body: str) -> None:
    """``prim``'s exported function: ``body`` (which calls ``one``, the SciPy function of one
    matrix) with ``one`` from scipy.linalg, or cupyx.scipy.linalg for CuPy."""
    for library, module in (("numpy", "scipy.linalg"), ("cupy", "cupyx.scipy.linalg")):
        prim.standalone[library] = body.replace("LINALG", module)


_scipy_standalone(solve_triangular, (
    'def solve_triangular(a, b, lower, trans, unit_diagonal):\n'
    '    import LINALG\n'
    '    def one(a, b):\n'
    '        return LINALG.solve_triangular(a, b, trans=trans, lower=lower,\n'
    '                                       unit_diagonal=unit_diagonal)\n'
    '    if a.ndim == 2 and b.ndim == 2:\n'
    '        return one(a, b)\n'
    '    nd = max(a.ndim, b.ndim)\n'
    '    a, b = (x.reshape((1,) * (nd - x.ndim) + x.shape) for x in (a, b))\n'
    '    batch = tuple(max(i, j) for i, j in zip(a.shape[:-2], b.shape[:-2]))\n'
    '    a, b = (xp.broadcast_to(x, batch + x.shape[-2:]).reshape((-1,) + x.shape[-2:])\n'
    '            for x in (a, b))\n'
    '    if not len(a):  # an empty stack\n'
    '        return xp.zeros(batch + b.shape[-2:], xp.result_type(a.dtype, b.dtype))\n'
    '    return xp.stack([one(p, q) for p, q in zip(a, b)]).reshape(batch + b.shape[-2:])\n'))
_scipy_standalone(lu_factor, (
    'def lu_factor(a):\n'
    '    import LINALG\n'
    '    if a.ndim == 2:\n'
    '        return LINALG.lu_factor(a)\n'
    '    if not a.size:  # an empty stack\n'
    '        return a.copy(), xp.zeros(a.shape[:-1], xp.int32)\n'
    '    parts = [LINALG.lu_factor(m) for m in a.reshape((-1,) + a.shape[-2:])]\n'
    '    return (xp.stack([p[0] for p in parts]).reshape(a.shape),\n'
    '            xp.stack([p[1] for p in parts]).reshape(a.shape[:-1]))\n'))
defstandalone(lu_pivots_to_permutation, (
        'def lu_pivots_to_permutation(piv):\n'
        '    n = piv.shape[-1]\n'
        '    rows = piv.reshape(-1, n).astype(xp.int64)\n'
        '    perm = xp.tile(xp.arange(n, dtype=xp.int32), (rows.shape[0], 1))\n'
        '    batch = xp.arange(rows.shape[0])\n'
        '    for i in range(n):\n'
        '        j = rows[:, i]\n'
        '        here, there = perm[:, i].copy(), perm[batch, j]\n'
        '        perm[:, i] = there\n'
        '        perm[batch, j] = here\n'
        '    return perm.reshape(piv.shape)\n'))


# --------------------------------------------------------------------------- rules


def _inv_jvp(primals, tangents):
    ans = inv.bind(primals[0])
    t = tangents[0]
    return ans, None if t is None else lax.negative(matmul.bind(matmul.bind(ans, t), ans))


def _inv_vjp(g, primals, ans):
    ans_t = mT(ans)
    return (lax.negative(matmul.bind(matmul.bind(ans_t, g), ans_t)),)


def _as_matrix(v, vector: bool):
    return lax.expand_dims(v, -1) if vector else v


def _solve_jvp(primals, tangents):
    a, b = primals
    ta, tb = tangents
    ans = solve.bind(a, b)
    vector = len(lax.shape_of(b)) == 1
    rhs = tb
    if ta is not None:
        ta_x = matmul.bind(ta, _as_matrix(ans, vector))
        ta_x = lax.squeeze(ta_x, -1) if vector else ta_x
        rhs = lax.negative(ta_x) if rhs is None else lax.subtract(rhs, ta_x)
    if rhs is None:
        return ans, None
    if vector and len(lax.shape_of(rhs)) > 1:  # a batched a with a vector b
        return ans, lax.squeeze(solve.bind(a, lax.expand_dims(rhs, -1)), -1)
    return ans, solve.bind(a, rhs)


def _solve_vjp(g, primals, ans):
    a, b = primals
    vector = len(lax.shape_of(b)) == 1
    gm = _as_matrix(g, vector)
    b_bar_m = solve.bind(mT(a), gm)
    ca = cb = None
    if wants_cotangent(a):
        ca = lax.negative(matmul.bind(b_bar_m, mT(_as_matrix(ans, vector))))
        ca = unbroadcast(ca, a.aval)
    if wants_cotangent(b):
        cb = lax.squeeze(b_bar_m, -1) if vector else b_bar_m
        cb = unbroadcast(cb, b.aval)
    return ca, cb


def _matrix_trace_of_product(m, t):
    """trace(m @ t) over the last two axes, without forming the product."""
    return lax.sum(lax.multiply(mT(m), t), axis=(-2, -1))


# The derivative of det is the cofactor matrix cof(a) = adj(a)^T, also where a is singular
# (det * inv(a)^T is not defined there; NumPy's inv raises). With the SVD a = U S V^T and
# sigma = det(U) det(V) (a sign): det(a + T) = sigma det(S + P), P = U^T T V, so
#   cof(a)        = sigma U adj(S) V^T,            adj(S)_i = prod_{k != i} s_k
#   d cof(a)[T]   = sigma U D(P) V^T,              D(P) = diag(C diag P) - C * P^T,
# C_ij = prod_{k != i, j} s_k off the diagonal (the second derivative of det, exact at every
# a, repeated or zero singular values included). The factors are held constant
# (stop_gradient) and D enters through T = a - stop_gradient(a), which is 0 in value and
# the tangent in derivative. The terms of degree 2 and more in P come from
#   cof(S + P) = cof(S) cof(I + Q),   Q = S^-1 P,   cof(I + Q) = det(I + Q) inv(I + Q)^T,
# less its first two terms I + (tr(Q) I - Q^T) (those are adj(S) and D(P)): 0 in value, and
# made of det and inv, so differentiable again to any order. Their terms cancel to about
# eps cond(a)^2, so a singular value below n sqrt(eps) s_max (0 included: a zero matrix, a
# diagonal one with a 0) is taken as 1 in Q: the first and second derivatives of det stay
# exact at every a, the third and higher miss the terms along those directions
# (docs/limitations.md).
def _cofactor(a):
    n = lax.shape_of(a)[-1]
    if n <= 1:
        return lax.ones_like(a)
    if np.dtype(lax.dtype_of(a)).kind == "c":  # the SVD rules are real: det * inv(a)^T
        scale = lax.expand_dims(det.bind(a), (-2, -1))
        return lax.multiply(scale, mT(inv.bind(a)))
    held = lax.stop_gradient(a)
    u, s, vh = decompositions.svd.bind(held)
    sigma = lax.expand_dims(lax.multiply(slogdet.bind(u)[0], slogdet.bind(vh)[0]), (-2, -1))
    eye = np.eye(n, dtype=bool)
    adj_s = lax.prod(lax.where(eye, 1.0, lax.expand_dims(s, -2)), axis=-1)  # exact
    value = matmul.bind(scale_cols(u, adj_s), vh)
    p = mm(mT(u), lax.subtract(a, held), mT(vh))  # 0, whose tangent is U^T T V
    pairs = _pair_products(s)
    diag_term = matmul.bind(pairs, lax.expand_dims(diag_part(p), -1))[..., 0]
    second = lax.subtract(diag_embed(diag_term), lax.multiply(pairs, mT(p)))
    inner = lax.add(second, scale_rows(_cofactor_rest(p, s), adj_s))
    return lax.multiply(sigma, lax.add(value, mm(u, inner, vh)))


def _cofactor_rest(p, s):
    """cof(I + Q) - I - (tr(Q) I - Q^T) with Q = S^-1 P (singular values below n sqrt(eps)
    s_max taken as 1): exactly 0 in value where P is, of degree 2 and more in P."""
    n = lax.shape_of(p)[-1]
    floor = n * float(np.sqrt(np.finfo(lax.dtype_of(s)).eps))
    small = lax.less_equal(s, lax.multiply(lax.max(s, axis=-1, keepdims=True), floor))
    q = scale_rows(p, lax.true_divide(1.0, lax.where(small, 1.0, s)))
    eye = eye_like(n, p)
    m = lax.add(q, eye)
    cof_m = lax.multiply(lax.expand_dims(det.bind(m), (-2, -1)), mT(inv.bind(m)))
    trace = lax.expand_dims(lax.sum(diag_part(q), axis=-1), (-2, -1))
    first = lax.subtract(lax.multiply(trace, eye), mT(q))
    return lax.subtract(lax.subtract(cof_m, eye), first)


def _pair_products(s):
    """C_ij = prod of the s_k with k not i or j (0 on the diagonal), in logarithms so that
    it takes n^2 memory; exact zeros counted apart (the SVD of a singular matrix may give
    them)."""
    n = lax.shape_of(s)[-1]
    zero = lax.equal(s, 0.0)
    zeros = zero.astype(np.int64)
    logs = lax.log(lax.where(zero, 1.0, s))
    row, col = lax.expand_dims(logs, -1), lax.expand_dims(logs, -2)
    rest = lax.subtract(lax.subtract(lax.sum(logs, axis=-1, keepdims=True)[..., None], row),
                        col)
    zeros_left = lax.subtract(lax.subtract(lax.sum(zeros, axis=-1, keepdims=True)[..., None],
                                           lax.expand_dims(zeros, -1)),
                              lax.expand_dims(zeros, -2))
    keep = lax.logical_and(lax.equal(zeros_left, 0), ~np.eye(n, dtype=bool))
    return lax.where(keep, lax.exp(lax.where(keep, rest, 0.0)), 0.0)


def _det_jvp(primals, tangents):
    a = primals[0]
    ans = det.bind(a)
    t = tangents[0]
    if t is None:
        return ans, None
    return ans, lax.sum(lax.multiply(_cofactor(a), t), axis=(-2, -1))


def _det_vjp(g, primals, ans):
    return (lax.multiply(lax.expand_dims(g, (-2, -1)), _cofactor(primals[0])),)


def _slogdet_jvp(primals, tangents):
    a = primals[0]
    sign, logabsdet = slogdet.bind(a)
    t = tangents[0]
    if t is None:
        return (sign, logabsdet), (None, None)
    return (sign, logabsdet), (None, _matrix_trace_of_product(inv.bind(a), t))


def _slogdet_vjp(cts, primals, ans):
    a = primals[0]
    g = cts[1]
    if g is None:
        return (None,)
    return (lax.multiply(lax.expand_dims(g, (-2, -1)), mT(inv.bind(a))),)


def _phi(x):
    """Strict lower triangle plus half the diagonal."""
    import numpy as np

    n = lax.shape_of(x)[-1]
    weights = (np.tri(n, n, -1) + 0.5 * np.eye(n)).astype(lax.dtype_of(x))
    return lax.multiply(x, weights)


def _chol_jvp(primals, tangents):
    a = primals[0]
    ans = cholesky.bind(a)
    t = tangents[0]
    if t is None:
        return ans, None
    # dL = L phi(L^-1 dA L^-T), dA the symmetric matrix read from t's lower triangle
    left = solve.bind(ans, sym_from_lower(t))
    inner = mT(solve.bind(ans, mT(left)))
    return ans, matmul.bind(ans, _phi(inner))


def _chol_vjp(g, primals, ans):
    p = _phi(matmul.bind(mT(ans), g))
    # S = L^-T P L^-1
    s = solve.bind(mT(ans), mT(solve.bind(mT(ans), mT(p))))
    n = lax.shape_of(s)[-1]
    both = lax.add(s, mT(s))
    diagonal = lax.multiply(s, lax.eye(n, dtype=s.dtype, like=s))
    return (lax.where(lower_mask(n, -1), both, diagonal),)


defrules(inv, jvp=_inv_jvp, vjp=_inv_vjp)
defrules(solve, jvp=_solve_jvp, vjp=_solve_vjp)
defrules(det, jvp=_det_jvp, vjp=_det_vjp)
defrules(slogdet, jvp=_slogdet_jvp, vjp=_slogdet_vjp)
defrules(cholesky, jvp=_chol_jvp, vjp=_chol_vjp)


# --------------------------------------------------------------------------- solve_triangular, LU
def _triangle_mask(n, lower, strict=False):
    low = np.tri(n, n, -1 if strict else 0, dtype=bool)
    return low if lower else low.T


def _triangle(t, lower, strict=False):
    """The lower (upper) triangle of t, zero elsewhere; without the diagonal when strict."""
    return lax.where(_triangle_mask(lax.shape_of(t)[-1], lower, strict), t, 0.0)


# x = op(T)^-1 b with T the triangle solve_triangular reads (its diagonal ones when
# unit_diagonal) and op(T) = T or T^T: dx = op(T)^-1 (db - op(dT) x); the cotangent of b is
# op(T)^-T g and that of a the triangle of -b_bar x^T (of -x b_bar^T when transposed).
def _solve_triangular_jvp(primals, tangents, lower=False, trans=0, unit_diagonal=False):
    a, b = primals
    ta, tb = tangents
    params = dict(lower=lower, trans=trans, unit_diagonal=unit_diagonal)
    ans = solve_triangular.bind(a, b, **params)
    rhs = tb
    if ta is not None:
        t = _triangle(ta, lower, strict=unit_diagonal)
        term = matmul.bind(mT(t) if trans else t, ans)
        rhs = lax.negative(term) if rhs is None else lax.subtract(rhs, term)
    return ans, None if rhs is None else solve_triangular.bind(a, rhs, **params)


def _solve_triangular_vjp(g, primals, ans, lower=False, trans=0, unit_diagonal=False):
    a, b = primals
    b_bar = solve_triangular.bind(a, g, lower=lower, trans=1 - trans,
                                  unit_diagonal=unit_diagonal)
    ca = None
    if wants_cotangent(a):
        outer = matmul.bind(ans, mT(b_bar)) if trans else matmul.bind(b_bar, mT(ans))
        ca = unbroadcast(lax.negative(_triangle(outer, lower, strict=unit_diagonal)), a.aval)
    return ca, unbroadcast(b_bar, b.aval) if wants_cotangent(b) else None


def _lu_parts(lu):
    """(L, U) of a factorisation ``lu``: L unit lower, U upper."""
    n = lax.shape_of(lu)[-1]
    return lax.add(_triangle(lu, True, strict=True), eye_like(n, lu)), _triangle(lu, False)


def _rows_permuted(t, perm):
    """P t: the rows of t in the order of ``perm``."""
    return lax.take_along_axis(t, lax.expand_dims(perm, -1), axis=-2)


# P A = L U. With X = L^-1 P dA U^-1: dL = L sl(X), dU = u(X) U (sl the strict lower
# triangle, u the upper one), and lu holds both: d lu = L sl(X) + u(X) U. The VJP is the
# transpose: X_bar = sl(L^T G) + u(G U^T), A_bar = P^T L^-T X_bar U^-T.
def _lu_factor_jvp(primals, tangents):
    a = primals[0]
    lu, piv = lu_factor.bind(a)
    t = tangents[0]
    if t is None:
        return (lu, piv), (None, None)
    low, up = _lu_parts(lu)
    pt = _rows_permuted(t, lu_pivots_to_permutation.bind(piv))
    y = solve_triangular.bind(lu, pt, lower=True, trans=0, unit_diagonal=True)
    x = mT(solve_triangular.bind(lu, mT(y), lower=False, trans=1, unit_diagonal=False))
    lu_dot = lax.add(matmul.bind(low, _triangle(x, True, strict=True)),
                     matmul.bind(_triangle(x, False), up))
    return (lu, piv), (lu_dot, None)


def _lu_factor_vjp(cts, primals, ans):
    g = cts[0]
    if g is None:
        return (None,)
    lu, piv = ans
    low, up = _lu_parts(lu)
    x_bar = lax.add(_triangle(matmul.bind(mT(low), g), True, strict=True),
                    _triangle(matmul.bind(g, mT(up)), False))
    z = solve_triangular.bind(lu, x_bar, lower=True, trans=1, unit_diagonal=True)
    z = mT(solve_triangular.bind(lu, mT(z), lower=False, trans=0, unit_diagonal=False))
    perm = lax.expand_dims(lu_pivots_to_permutation.bind(piv), -1)
    return (lax.put_along_axis_add(z, perm, -2, lax.shape_of(z)),)  # P^T z


defrules(solve_triangular, jvp=_solve_triangular_jvp, vjp=_solve_triangular_vjp)
defrules(lu_factor, jvp=_lu_factor_jvp, vjp=_lu_factor_vjp)


# --------------------------------------------------------------------------- batching (vmap)
def _solve_vmap(eqn, args, batched, size):
    a, b = args
    ra, rb = batching.rank(a, batched[0]), batching.rank(b, batched[1])
    if not batched[1]:  # batched a, shared b
        if rb == 1:
            return batching.one(solve.bind(a, b))
        a2, _ = batching.pad_batch(a, lax.reshape(b, (1,) + tuple(np.shape(b))))
        return batching.one(batching.drop_to(solve.bind(a2, b), size, eqn))
    if not batched[0]:  # shared a, batched b: the examples become columns
        if rb == 1:
            out = solve.bind(a, lax.transpose(b))  # (..., n, B)
            return batching.one(lax.moveaxis(out, -1, 0))
        if ra == 2 and rb == 2:
            n, m = b.shape[1:]
            wide = lax.reshape(lax.transpose(b, (1, 0, 2)), (n, size * m))
            out = lax.reshape(solve.bind(a, wide), (n, size, m))
            return batching.one(lax.transpose(out, (1, 0, 2)))
        _, b2 = batching.pad_batch(lax.reshape(a, (1,) + tuple(np.shape(a))), b)
        return batching.one(solve.bind(a, b2))
    b2 = b if rb >= 2 else lax.reshape(b, (size, b.shape[-1], 1))
    a2, b2 = batching.pad_batch(a, b2)
    return batching.one(batching.drop_to(solve.bind(a2, b2), size, eqn))


def _solve_triangular_vmap(eqn, args, batched, size):
    """Both operands given the batch axis (length 1 where unbatched): batch axes broadcast."""
    a, b = (x if bt else lax.expand_dims(x, 0) for x, bt in zip(args, batched))
    return batching.one(solve_triangular.bind(*batching.pad_batch(a, b), **eqn.params))


for _prim in (inv, det, slogdet, cholesky, lu_factor, lu_pivots_to_permutation):
    defrules(_prim, vmap=batching.leading_axes_rule)  # leading axes are batch axes already
defrules(solve, vmap=_solve_vmap)
defrules(solve_triangular, vmap=_solve_triangular_vmap)


# sparsity patterns: every entry of a factor may depend on every entry of its operands
for _prim in (inv, solve, det, slogdet, cholesky, solve_triangular, lu_factor):
    defrules(_prim, sparsity=sparsity.dense_block)
