"""Derivatives of solve, inv, det, slogdet, cholesky, the eigen-, singular-value and QR
decompositions, solve_triangular and lu_factor, written with these same primitives and
matmul, so that they differentiate to any order."""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.primitives import defrules
from ..ops.decompositions import (
    cholesky,
    det,
    eig,
    eigh,
    inv,
    lu_factor,
    lu_pivots_to_permutation,
    pinv,
    qr,
    slogdet,
    solve,
    solve_triangular,
    svd,
)
from ..ops.products import matmul
from . import batching_rules as batching
from . import sparsity_rules as sparsity
from .common import unbroadcast, wants_cotangent


def _mT(x):
    return lax.swapaxes(x, -1, -2)


def _inv_jvp(primals, tangents):
    ans = inv.bind(primals[0])
    t = tangents[0]
    return ans, None if t is None else lax.negative(matmul.bind(matmul.bind(ans, t), ans))


def _inv_vjp(g, primals, ans):
    ans_t = _mT(ans)
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
    b_bar_m = solve.bind(_mT(a), gm)
    ca = cb = None
    if wants_cotangent(a):
        ca = lax.negative(matmul.bind(b_bar_m, _mT(_as_matrix(ans, vector))))
        ca = unbroadcast(ca, a.aval)
    if wants_cotangent(b):
        cb = lax.squeeze(b_bar_m, -1) if vector else b_bar_m
        cb = unbroadcast(cb, b.aval)
    return ca, cb


def _matrix_trace_of_product(m, t):
    """trace(m @ t) over the last two axes, without forming the product."""
    return lax.sum(lax.multiply(_mT(m), t), axis=(-2, -1))


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
        return lax.multiply(scale, _mT(inv.bind(a)))
    held = lax.stop_gradient(a)
    u, s, vh = svd.bind(held)
    sigma = lax.expand_dims(lax.multiply(slogdet.bind(u)[0], slogdet.bind(vh)[0]), (-2, -1))
    eye = np.eye(n, dtype=bool)
    adj_s = lax.prod(lax.where(eye, 1.0, lax.expand_dims(s, -2)), axis=-1)  # exact
    value = matmul.bind(_scale_cols(u, adj_s), vh)
    p = _mm(_mT(u), lax.subtract(a, held), _mT(vh))  # 0, whose tangent is U^T T V
    pairs = _pair_products(s)
    diag_term = matmul.bind(pairs, lax.expand_dims(_diag_part(p), -1))[..., 0]
    second = lax.subtract(_diag_embed(diag_term), lax.multiply(pairs, _mT(p)))
    inner = lax.add(second, _scale_rows(_cofactor_rest(p, s), adj_s))
    return lax.multiply(sigma, lax.add(value, _mm(u, inner, vh)))


def _cofactor_rest(p, s):
    """cof(I + Q) - I - (tr(Q) I - Q^T) with Q = S^-1 P (singular values below n sqrt(eps)
    s_max taken as 1): exactly 0 in value where P is, of degree 2 and more in P."""
    n = lax.shape_of(p)[-1]
    floor = n * float(np.sqrt(np.finfo(lax.dtype_of(s)).eps))
    small = lax.less_equal(s, lax.multiply(lax.max(s, axis=-1, keepdims=True), floor))
    q = _scale_rows(p, lax.true_divide(1.0, lax.where(small, 1.0, s)))
    eye = _eye_like(n, p)
    m = lax.add(q, eye)
    cof_m = lax.multiply(lax.expand_dims(det.bind(m), (-2, -1)), _mT(inv.bind(m)))
    trace = lax.expand_dims(lax.sum(_diag_part(q), axis=-1), (-2, -1))
    first = lax.subtract(lax.multiply(trace, eye), _mT(q))
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
    return (lax.multiply(lax.expand_dims(g, (-2, -1)), _mT(inv.bind(a))),)


def _lower_mask(n, k=0):
    import numpy as np

    return np.tri(n, n, k, dtype=bool)


def _phi(x):
    """Strict lower triangle plus half the diagonal."""
    import numpy as np

    n = lax.shape_of(x)[-1]
    weights = (np.tri(n, n, -1) + 0.5 * np.eye(n)).astype(lax.dtype_of(x))
    return lax.multiply(x, weights)


def _sym_from_lower(t):
    """The symmetric matrix whose lower triangle is that of t (what LAPACK reads)."""
    n = lax.shape_of(t)[-1]
    low = lax.where(_lower_mask(n), t, 0.0)
    strict = lax.where(_lower_mask(n, -1), t, 0.0)
    return lax.add(low, _mT(strict))


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
    n = lax.shape_of(s)[-1]
    both = lax.add(s, _mT(s))
    diagonal = lax.multiply(s, lax.eye(n, dtype=s.dtype, like=s))
    return (lax.where(_lower_mask(n, -1), both, diagonal),)


defrules(inv, jvp=_inv_jvp, vjp=_inv_vjp)
defrules(solve, jvp=_solve_jvp, vjp=_solve_vjp)
defrules(det, jvp=_det_jvp, vjp=_det_vjp)
defrules(slogdet, jvp=_slogdet_jvp, vjp=_slogdet_vjp)
defrules(cholesky, jvp=_chol_jvp, vjp=_chol_vjp)


# --------------------------------------------------------------------------- eigh, svd, qr, pinv
# Conventions (docs/limitations.md): eigh reads the triangle NumPy's UPLO names;
# where eigenvalues (singular values) coincide, the derivatives of the eigenvectors
# (singular vectors) and every second derivative are not finite, as in JAX: the factor
# 1 / (w_j - w_i) below is infinite there. First derivatives of the values stay finite.
def _gap_inverse(w, squared: bool = False):
    """F[i, j] = 1 / (w_j - w_i) off the diagonal, 0 on it (of w**2 when ``squared``)."""
    if squared:
        w = lax.multiply(w, w)
    diff = lax.subtract(lax.expand_dims(w, -2), lax.expand_dims(w, -1))
    n = lax.shape_of(w)[-1]
    off = ~np.eye(n, dtype=bool)
    return lax.where(off, lax.true_divide(1.0, lax.where(off, diff, 1.0)), 0.0)


def _mm(*ms):
    out = ms[0]
    for m in ms[1:]:
        out = matmul.bind(out, m)
    return out


def _diag_embed(d):
    n = lax.shape_of(d)[-1]
    return lax.multiply(lax.expand_dims(d, -1), np.eye(n, dtype=lax.dtype_of(d)))


def _diag_part(m):
    return lax.diagonal(m, 0, -2, -1)


def _lower_adjoint(s_bar):
    """The cotangent of a from that of the symmetric matrix read from its lower triangle."""
    n = lax.shape_of(s_bar)[-1]
    both = lax.add(s_bar, _mT(s_bar))
    return lax.where(_lower_mask(n, -1), both, lax.where(np.eye(n, dtype=bool), s_bar, 0.0))


def _sym_read(t, uplo):
    """The symmetric matrix eigh reads from t's lower ('L') or upper ('U') triangle."""
    return _sym_from_lower(t) if uplo == "L" else _mT(_sym_from_lower(_mT(t)))


def _read_adjoint(s_bar, uplo):
    """The transpose of :func:`_sym_read`."""
    return _lower_adjoint(s_bar) if uplo == "L" else _mT(_lower_adjoint(_mT(s_bar)))


def _eigh_jvp(primals, tangents, uplo="L", **driver):
    a = primals[0]
    w, v = eigh.bind(a, uplo=uplo, **driver)
    t = tangents[0]
    if t is None:
        return (w, v), (None, None)
    vt_dv = _mm(_mT(v), _sym_read(t, uplo), v)
    w_dot = _diag_part(vt_dv)
    v_dot = matmul.bind(v, lax.multiply(_gap_inverse(w), vt_dv))
    return (w, v), (w_dot, v_dot)


def _eigh_vjp(cts, primals, ans, uplo="L", driver=None):
    w_bar, v_bar = cts
    w, v = ans
    inner = None
    if w_bar is not None:
        inner = _diag_embed(w_bar)
    if v_bar is not None:
        term = lax.multiply(_gap_inverse(w), matmul.bind(_mT(v), v_bar))
        inner = term if inner is None else lax.add(inner, term)
    if inner is None:
        return (None,)
    return (_read_adjoint(_mm(v, inner, _mT(v)), uplo),)


# eig of a real matrix with real, distinct eigenvalues: A V = V diag(w), V's columns of unit
# 2-norm (NumPy's normalisation). With C = V^-1 dA V: dw = diag(C); an eigenvector moves by
# V (F * C) (no component along itself), then loses its component along itself again so that
# its norm stays 1: dv_i = u_i - v_i (v_i . u_i). The VJP is the transpose of that map.
def _eig_jvp(primals, tangents):
    a = primals[0]
    w, v = eig.bind(a)
    t = tangents[0]
    if t is None:
        return (w, v), (None, None)
    c = solve.bind(v, matmul.bind(t, v))
    w_dot = _diag_part(c)
    u = matmul.bind(v, lax.multiply(_gap_inverse(w), c))
    along = lax.sum(lax.multiply(v, u), axis=-2, keepdims=True)
    return (w, v), (w_dot, lax.subtract(u, lax.multiply(v, along)))


def _eig_vjp(cts, primals, ans):
    w_bar, v_bar = cts
    w, v = ans
    inner = None if w_bar is None else _diag_embed(w_bar)
    if v_bar is not None:
        vt_vbar = matmul.bind(_mT(v), v_bar)
        # the normalisation's transpose: v_bar - V diag(V^T v_bar), seen through V^T
        vt_vbar = lax.subtract(vt_vbar, _scale_cols(matmul.bind(_mT(v), v),
                                                    _diag_part(vt_vbar)))
        term = lax.multiply(_gap_inverse(w), vt_vbar)
        inner = term if inner is None else lax.add(inner, term)
    if inner is None:
        return (None,)
    return (solve.bind(_mT(v), matmul.bind(inner, _mT(v))),)  # V^-T inner V^T


def _scale_cols(m, s):
    return lax.multiply(m, lax.expand_dims(s, -2))


def _scale_rows(m, s):
    return lax.multiply(m, lax.expand_dims(s, -1))


def _svd_jvp(primals, tangents):
    a = primals[0]
    u, s, vh = svd.bind(a)
    t = tangents[0]
    if t is None:
        return (u, s, vh), (None, None, None)
    v = _mT(vh)
    dp = _mm(_mT(u), t, v)
    s_dot = _diag_part(dp)
    f = _gap_inverse(s, squared=True)
    omega_u = lax.multiply(f, lax.add(_scale_cols(dp, s), _scale_rows(_mT(dp), s)))
    omega_v = lax.multiply(f, lax.add(_scale_rows(dp, s), _scale_cols(_mT(dp), s)))
    t_v = _scale_cols(matmul.bind(t, v), lax.true_divide(1.0, s))     # dA V S^-1
    t_u = _scale_cols(matmul.bind(_mT(t), u), lax.true_divide(1.0, s))  # dA^T U S^-1
    u_dot = lax.add(matmul.bind(u, omega_u), lax.subtract(t_v, _mm(u, _mT(u), t_v)))
    v_dot = lax.add(matmul.bind(v, omega_v), lax.subtract(t_u, _mm(v, _mT(v), t_u)))
    return (u, s, vh), (u_dot, s_dot, _mT(v_dot))


def _svd_vjp(cts, primals, ans):
    u_bar, s_bar, vh_bar = cts
    u, s, vh = ans
    v = _mT(vh)
    inv_s = lax.true_divide(1.0, s)
    inner, outer = None, None
    if s_bar is not None:
        inner = _diag_embed(s_bar)
    if u_bar is not None:
        j = lax.multiply(_gap_inverse(s, squared=True), matmul.bind(_mT(u), u_bar))
        term = _scale_cols(lax.add(j, _mT(j)), s)
        inner = term if inner is None else lax.add(inner, term)
        proj = lax.subtract(u_bar, _mm(u, _mT(u), u_bar))           # (I - U U^T) U_bar
        outer = _mm(_scale_cols(proj, inv_s), vh)
    if vh_bar is not None:
        v_bar = _mT(vh_bar)
        k = lax.multiply(_gap_inverse(s, squared=True), matmul.bind(vh, v_bar))
        term = _scale_rows(lax.add(k, _mT(k)), s)
        inner = term if inner is None else lax.add(inner, term)
        proj = lax.subtract(v_bar, _mm(v, vh, v_bar))                # (I - V V^T) V_bar
        side = matmul.bind(_scale_cols(u, inv_s), _mT(proj))
        outer = side if outer is None else lax.add(outer, side)
    if inner is None:
        return (None,)
    a_bar = _mm(u, inner, vh)
    return (a_bar if outer is None else lax.add(a_bar, outer),)


def _right_solve_r(m, r):
    """m @ inv(r)."""
    return _mT(solve.bind(_mT(r), _mT(m)))


def _qr_jvp(primals, tangents):
    a = primals[0]
    q, r = qr.bind(a)
    t = tangents[0]
    if t is None:
        return (q, r), (None, None)
    t_rinv = _right_solve_r(t, r)
    c = matmul.bind(_mT(q), t_rinv)
    n = lax.shape_of(c)[-1]
    low = lax.where(_lower_mask(n, -1), c, 0.0)
    omega = lax.subtract(low, _mT(low))
    r_dot = matmul.bind(lax.subtract(c, omega), r)
    q_dot = lax.add(matmul.bind(q, omega), lax.subtract(t_rinv, matmul.bind(q, c)))
    return (q, r), (q_dot, r_dot)


def _copy_lower_to_upper(m):
    n = lax.shape_of(m)[-1]
    low = lax.where(_lower_mask(n, -1), m, 0.0)
    return lax.add(lax.add(low, _mT(low)), lax.where(np.eye(n, dtype=bool), m, 0.0))


def _qr_vjp(cts, primals, ans):
    q_bar, r_bar = cts
    q, r = ans
    m = None
    if r_bar is not None:
        m = matmul.bind(r, _mT(r_bar))
    if q_bar is not None:
        qtq = matmul.bind(_mT(q_bar), q)
        m = lax.negative(qtq) if m is None else lax.subtract(m, qtq)
    if m is None:
        return (None,)
    b = matmul.bind(q, _copy_lower_to_upper(m))
    if q_bar is not None:
        b = lax.add(q_bar, b)
    return (_mT(solve.bind(r, _mT(b))),)  # b @ inv(r).T


def _eye_like(n, x):
    return np.eye(n, dtype=lax.dtype_of(x))


def _pinv_linear(x, a, t):
    """The derivative of pinv at a (x = pinv(a)) in direction t, at constant rank."""
    m, n = lax.shape_of(a)[-2:]
    range_a = lax.subtract(_eye_like(m, a), matmul.bind(a, x))  # I - A X
    range_x = lax.subtract(_eye_like(n, a), matmul.bind(x, a))  # I - X A
    t_t = _mT(t)
    out = lax.negative(_mm(x, t, x))
    out = lax.add(out, _mm(x, _mT(x), t_t, range_a))
    return lax.add(out, _mm(range_x, t_t, _mT(x), x))


def _pinv_jvp(primals, tangents, rcond):
    a = primals[0]
    x = pinv.bind(a, rcond=rcond)
    t = tangents[0]
    return x, None if t is None else _pinv_linear(x, a, t)


def _pinv_vjp(g, primals, ans, rcond):
    a, x = primals[0], ans
    m, n = lax.shape_of(a)[-2:]
    range_a = lax.subtract(_eye_like(m, a), matmul.bind(a, x))
    range_x = lax.subtract(_eye_like(n, a), matmul.bind(x, a))
    out = lax.negative(_mm(_mT(x), g, _mT(x)))
    out = lax.add(out, _mm(range_a, _mT(g), x, _mT(x)))
    return (lax.add(out, _mm(_mT(x), x, _mT(g), range_x)),)


defrules(eigh, jvp=_eigh_jvp, vjp=_eigh_vjp)
defrules(eig, jvp=_eig_jvp, vjp=_eig_vjp)
defrules(svd, jvp=_svd_jvp, vjp=_svd_vjp)
defrules(qr, jvp=_qr_jvp, vjp=_qr_vjp)
defrules(pinv, jvp=_pinv_jvp, vjp=_pinv_vjp)

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
        term = matmul.bind(_mT(t) if trans else t, ans)
        rhs = lax.negative(term) if rhs is None else lax.subtract(rhs, term)
    return ans, None if rhs is None else solve_triangular.bind(a, rhs, **params)


def _solve_triangular_vjp(g, primals, ans, lower=False, trans=0, unit_diagonal=False):
    a, b = primals
    b_bar = solve_triangular.bind(a, g, lower=lower, trans=1 - trans,
                                  unit_diagonal=unit_diagonal)
    ca = None
    if wants_cotangent(a):
        outer = matmul.bind(ans, _mT(b_bar)) if trans else matmul.bind(b_bar, _mT(ans))
        ca = unbroadcast(lax.negative(_triangle(outer, lower, strict=unit_diagonal)), a.aval)
    return ca, unbroadcast(b_bar, b.aval) if wants_cotangent(b) else None


def _lu_parts(lu):
    """(L, U) of a factorisation ``lu``: L unit lower, U upper."""
    n = lax.shape_of(lu)[-1]
    return lax.add(_triangle(lu, True, strict=True), _eye_like(n, lu)), _triangle(lu, False)


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
    x = _mT(solve_triangular.bind(lu, _mT(y), lower=False, trans=1, unit_diagonal=False))
    lu_dot = lax.add(matmul.bind(low, _triangle(x, True, strict=True)),
                     matmul.bind(_triangle(x, False), up))
    return (lu, piv), (lu_dot, None)


def _lu_factor_vjp(cts, primals, ans):
    g = cts[0]
    if g is None:
        return (None,)
    lu, piv = ans
    low, up = _lu_parts(lu)
    x_bar = lax.add(_triangle(matmul.bind(_mT(low), g), True, strict=True),
                    _triangle(matmul.bind(g, _mT(up)), False))
    z = solve_triangular.bind(lu, x_bar, lower=True, trans=1, unit_diagonal=True)
    z = _mT(solve_triangular.bind(lu, _mT(z), lower=False, trans=0, unit_diagonal=False))
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


for _prim in (inv, det, slogdet, cholesky, eigh, eig, svd, qr, pinv, lu_factor,
              lu_pivots_to_permutation):
    defrules(_prim, vmap=batching.leading_axes_rule)  # leading axes are batch axes already
defrules(solve, vmap=_solve_vmap)
defrules(solve_triangular, vmap=_solve_triangular_vmap)


# sparsity patterns: every entry of a decomposition may depend on every entry of its operands
for _prim in (inv, solve, det, slogdet, cholesky, eigh, eig, svd, qr, pinv, solve_triangular,
              lu_factor):
    defrules(_prim, sparsity=sparsity.dense_block)
