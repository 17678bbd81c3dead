"""Matrix decompositions: the eigen- (``eigh``, ``eig``), singular-value (``svd``) and QR
(``qr``) decompositions and ``pinv``, over the last two axes (leading axes are batch axes),
one block each. Library ops on plain arrays (NumPy's LAPACK, or cuSOLVER through CuPy); the
rules are written with registry ops, so they differentiate again, and hold where the
spectrum is simple (the eigenvalue gaps enter as ``1 / (w_j - w_i)``) or the rank constant.

    >>> import numpy as np, dualgpu as dg
    >>> a = np.array([[2.0, 1.0], [1.0, 3.0]])
    >>> g = dg.grad(lambda a: np.sum(np.linalg.eigh(a)[0]))(a)   # d trace / da
    >>> np.allclose(g, np.eye(2))
    True
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..backends import backend_for_xp
from ..core.dtypes import float_dtype
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import defprim, defrules, defstandalone
from ..errors import DualgpuError, UnsupportedOpError
from ..rules import batching_rules as batching
from ..rules import sparsity_rules as sparsity
from ..rules.linalg_rules import (
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
from . import linalg
from .products import matmul

# --------------------------------------------------------------------------- eigh, svd, qr, pinv


EIGH_DRIVERS = ("ev", "evd", "evr", "evx")
"""SciPy's drivers of ``scipy.linalg.eigh`` (``evr`` its default): the eigenvalues agree,
the signs of the eigenvectors may not (NumPy's ``eigh`` is ``evd``)."""


def _eigh_shape(avals, uplo="L", driver=None):
    a = avals[0]
    if uplo not in ("L", "U"):
        raise DualgpuError(f"linalg.eigh: UPLO must be 'L' or 'U', got {uplo!r}")
    if driver is not None and driver not in EIGH_DRIVERS:
        raise DualgpuError(f"linalg.eigh: driver must be one of {EIGH_DRIVERS} or None, got "
                           f"{driver!r}")
    check_square(a, "eigh")
    real_only(a, "eigh")
    dt = float_dtype(a.dtype)
    return [Aval(tuple(a.shape[:-1]), dt), Aval(tuple(a.shape), dt)]


def _eigh_impl(xp, a, uplo="L", driver=None):
    scipy_eigh = getattr(backend_for_xp(xp).linalg, "eigh", None)  # cupyx has none
    if driver is None or scipy_eigh is None or not a.size:
        w, v = xp.linalg.eigh(a, UPLO=uplo)  # LAPACK's own call per triangle: NumPy's signs
        return w, v
    w, v = _eigh_shape([Aval(a.shape, a.dtype)], uplo, driver)
    return per_matrix(xp, lambda m: scipy_eigh(m, lower=uplo == "L", driver=driver,
                                                check_finite=False),
                       [w.shape, v.shape], [w.dtype, v.dtype], a)


def _eigh_py(names, params):
    driver = f", driver={params['driver']}" if "driver" in params else ""
    return f"ops.eigh({names[0]}, {params['uplo']}{driver})"


eigh = defprim("eigh", _eigh_impl, _eigh_shape, multiple_results=True, kind=Flag.LIBRARY,
               py=_eigh_py,
               doc="(eigenvalues ascending, eigenvectors) of the symmetric matrix whose lower "
                   "(uplo 'L') or upper ('U') triangle is a's; the eigenvectors' signs are "
                   "NumPy's, or those of SciPy's LAPACK driver (scipy.linalg.eigh's; on "
                   "CuPy, cuSOLVER's).")


def _eig_shape(avals):
    a = avals[0]
    check_square(a, "eig")
    real_only(a, "eig")
    dt = float_dtype(a.dtype)
    return [Aval(tuple(a.shape[:-1]), dt), Aval(tuple(a.shape), dt)]


def eig_unavailable(xp) -> str | None:
    """Why ``xp`` cannot compute a general eigen-decomposition, or None when it can
    (``cupy.linalg.eig``, cuSOLVER's ``Xgeev``, is in CuPy 14 and later)."""
    if hasattr(xp.linalg, "eig"):
        return None
    return (f"{xp.__name__} {getattr(xp, '__version__', '(unknown version)')} has no "
            f"{xp.__name__}.linalg.eig (no general eigen-decomposition; CuPy 14 has one)")


def eig_imag_tolerance(dtype) -> float:
    """An eigenvalue counts as real when its imaginary part is at most this times the
    largest eigenvalue modulus of its matrix: sqrt(eps), the spread that rounding alone gives
    a double eigenvalue (a perturbation of eps ||A|| splits one by ~sqrt(eps) ||A||). Real
    LAPACK (NumPy) and cuSOLVER's Xgeev on real input give real eigenvalues an imaginary part
    of exactly 0; a solver working in complex arithmetic leaves rounding noise."""
    return float(np.sqrt(np.finfo(dtype).eps))


def _real_eigenpairs(xp, w, v, dt):
    """Real (w, v) from complex ones whose eigenvalues are real up to
    :func:`eig_imag_tolerance`; a non-negligible imaginary part raises."""
    scale = xp.max(xp.abs(w), axis=-1, keepdims=True)
    bad = xp.abs(w.imag) > eig_imag_tolerance(dt) * scale
    complex_vectors = xp.any(v.imag != 0, axis=-2, keepdims=True)
    # On CuPy this reads device memory on the host (one synchronisation): the call cannot be
    # captured as a CUDA graph, and dualgpu's graph runner then runs the program eagerly.
    any_bad, any_complex_vector = (bool(f) for f in
                                   xp.stack([xp.any(bad), xp.any(complex_vectors)]).tolist())
    if any_bad:
        raise DualgpuError(
            "linalg.eig: the matrix has complex eigenvalues (e.g. "
            f"{complex(w[bad].ravel()[0])}); dualgpu supports eig/eigvals only "
            "for real matrices whose eigenvalues are real (use eigh for symmetric ones)")
    if not any_complex_vector:  # real solvers: real eigenvectors of real eigenvalues
        return w.real, v.real
    # An eigenvector known up to a complex phase: turn its largest entry real and positive,
    # then take the real part and give it unit norm again (the real part of an
    # almost-real conjugate pair's vector is not of unit norm).
    top = xp.take_along_axis(v, xp.argmax(xp.abs(v), axis=-2)[..., None, :], axis=-2)
    aligned = (v * xp.conj(top / xp.where(top == 0, 1, xp.abs(top)))).real
    aligned = aligned / xp.sqrt(xp.sum(aligned * aligned, axis=-2, keepdims=True))
    return w.real, xp.where(complex_vectors, aligned, v.real)


def _eig_impl(xp, a):
    why = eig_unavailable(xp)
    if why is not None:
        raise UnsupportedOpError(f"linalg.eig: {why}; call it on NumPy arrays")
    try:
        w, v = xp.linalg.eig(a)
    except RuntimeError as e:  # CuPy's eig where this cuSOLVER has no Xgeev
        if "geev" not in str(e):
            raise
        raise UnsupportedOpError(f"linalg.eig: {xp.__name__} "
                                 f"{getattr(xp, '__version__', '')} cannot run it here: {e}; "
                                 "call it on NumPy arrays") from e
    dt = float_dtype(a.dtype)
    if w.dtype.kind == "c" and w.size:  # NumPy's result is complex as soon as one eigenvalue is
        w, v = _real_eigenpairs(xp, w, v, dt)
    w, v = w.astype(dt, copy=False), v.astype(dt, copy=False)
    if backend_for_xp(xp).on_device:
        # LAPACK's order is NumPy's; another solver's (cuSOLVER's) is not, and CuPy does not
        # promise one: eigenpairs in ascending order of eigenvalue, a deterministic order
        # (which may differ from NumPy's). The signs of the eigenvectors are the solver's.
        order = xp.argsort(w, axis=-1)
        w = xp.take_along_axis(w, order, axis=-1)
        v = xp.take_along_axis(v, order[..., None, :], axis=-1)
    return w, v


eig = defprim("eig", _eig_impl, _eig_shape, multiple_results=True, kind=Flag.LIBRARY,
              py="ops.eig({0})",
              doc="(eigenvalues in LAPACK's order on NumPy, ascending on CuPy; unit-norm "
                  "eigenvectors) of a real matrix whose eigenvalues are real; complex "
                  "eigenvalues raise at run time.")


def _svd_shape(avals):
    a = avals[0]
    if a.ndim < 2:
        raise DualgpuError(f"linalg.svd: expected matrices (..., m, n), got {a.str_short()}")
    real_only(a, "svd")
    m, n = a.shape[-2:]
    k = min(m, n)
    lead, dt = tuple(a.shape[:-2]), float_dtype(a.dtype)
    return [Aval(lead + (m, k), dt), Aval(lead + (k,), dt), Aval(lead + (k, n), dt)]


def _svd_impl(xp, a):
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    return u, s, vh


svd = defprim("svd", _svd_impl, _svd_shape, multiple_results=True, kind=Flag.LIBRARY,
              py="ops.svd({0})",
              doc="The thin SVD (u, s, vh): singular values descending.")


def _qr_shape(avals):
    a = avals[0]
    if a.ndim < 2 or a.shape[-2] < a.shape[-1]:
        raise DualgpuError(f"linalg.qr: traced matrices must have at least as many rows as "
                           f"columns (..., m, n) with m >= n, got {a.str_short()}")
    real_only(a, "qr")
    dt = float_dtype(a.dtype)
    n = a.shape[-1]
    return [Aval(tuple(a.shape), dt), Aval(tuple(a.shape[:-2]) + (n, n), dt)]


def _qr_impl(xp, a):
    q, r = xp.linalg.qr(a, mode="reduced")
    return q, r


qr = defprim("qr", _qr_impl, _qr_shape, multiple_results=True, kind=Flag.LIBRARY,
             py="ops.qr({0})", doc="The reduced QR factorisation (q, r) of a tall matrix.")


def _pinv_shape(avals, rcond):
    a = avals[0]
    if a.ndim < 2:
        raise DualgpuError(f"linalg.pinv: expected matrices (..., m, n), got {a.str_short()}")
    real_only(a, "pinv")
    return Aval(tuple(a.shape[:-2]) + (a.shape[-1], a.shape[-2]), float_dtype(a.dtype))


pinv = defprim("pinv", lambda xp, a, rcond: xp.linalg.pinv(a, rcond), _pinv_shape,
               kind=Flag.LIBRARY, py="xp.linalg.pinv({0}, {rcond})",
               doc="The Moore-Penrose pseudo-inverse (singular values below rcond * the "
                   "largest are dropped); derivatives hold where the rank is constant.")


# --------------------------------------------------------------------------- exported modules
defstandalone(eigh, (
        "def eigh(a, uplo='L', driver=None):\n"
        "    if driver is None:\n"
        "        return tuple(xp.linalg.eigh(a, UPLO=uplo))\n"
        "    import scipy.linalg\n"
        "    parts = [scipy.linalg.eigh(m, lower=uplo == 'L', driver=driver)\n"
        "             for m in a.reshape((-1,) + a.shape[-2:])]\n"
        "    if not parts:  # an empty stack\n"
        "        return tuple(xp.linalg.eigh(a, UPLO=uplo))\n"
        "    return (xp.stack([p[0] for p in parts]).reshape(a.shape[:-1]),\n"
        "            xp.stack([p[1] for p in parts]).reshape(a.shape))\n"),
              cupy=("def eigh(a, uplo='L', driver=None):  # cuSOLVER's signs\n"
                    "    return tuple(xp.linalg.eigh(a, UPLO=uplo))\n"))
defstandalone(eig, (
        'def eig(a):\n'
        '    w, v = xp.linalg.eig(a)\n'
        '    dt = xp.result_type(a.dtype, xp.float16)\n'
        "    if w.dtype.kind == 'c' and w.size:\n"
        '        tol = xp.sqrt(xp.finfo(dt).eps) * xp.max(abs(w), axis=-1, keepdims=True)\n'
        '        if xp.any(abs(w.imag) > tol):\n'
        "            raise ValueError('linalg.eig: the matrix has complex eigenvalues')\n"
        '        if xp.any(v.imag != 0):  # a phase: the largest entry real and positive\n'
        '            top = xp.take_along_axis(v, xp.argmax(abs(v), axis=-2)[..., None, :], -2)\n'
        '            r = (v * xp.conj(top / xp.where(top == 0, 1, abs(top)))).real\n'
        '            r = r / xp.sqrt(xp.sum(r * r, axis=-2, keepdims=True))\n'
        '            v = xp.where(xp.any(v.imag != 0, axis=-2, keepdims=True), r, v.real)\n'
        '        w, v = w.real, v.real\n'
        '    return w.astype(dt, copy=False), v.astype(dt, copy=False)\n'),
              cupy_refused='CuPy has no general eigensolver')
defstandalone(svd, 'def svd(a):\n    return tuple(xp.linalg.svd(a, full_matrices=False))\n')
defstandalone(qr, "def qr(a):\n    return tuple(xp.linalg.qr(a, mode='reduced'))\n")

# --------------------------------------------------------------------------- rules
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


def _lower_adjoint(s_bar):
    """The cotangent of a from that of the symmetric matrix read from its lower triangle."""
    n = lax.shape_of(s_bar)[-1]
    both = lax.add(s_bar, mT(s_bar))
    return lax.where(lower_mask(n, -1), both, lax.where(np.eye(n, dtype=bool), s_bar, 0.0))


def _sym_read(t, uplo):
    """The symmetric matrix eigh reads from t's lower ('L') or upper ('U') triangle."""
    return sym_from_lower(t) if uplo == "L" else mT(sym_from_lower(mT(t)))


def _read_adjoint(s_bar, uplo):
    """The transpose of :func:`_sym_read`."""
    return _lower_adjoint(s_bar) if uplo == "L" else mT(_lower_adjoint(mT(s_bar)))


def _eigh_jvp(primals, tangents, uplo="L", **driver):
    a = primals[0]
    w, v = eigh.bind(a, uplo=uplo, **driver)
    t = tangents[0]
    if t is None:
        return (w, v), (None, None)
    vt_dv = mm(mT(v), _sym_read(t, uplo), v)
    w_dot = diag_part(vt_dv)
    v_dot = matmul.bind(v, lax.multiply(_gap_inverse(w), vt_dv))
    return (w, v), (w_dot, v_dot)


def _eigh_vjp(cts, primals, ans, uplo="L", driver=None):
    w_bar, v_bar = cts
    w, v = ans
    inner = None
    if w_bar is not None:
        inner = diag_embed(w_bar)
    if v_bar is not None:
        term = lax.multiply(_gap_inverse(w), matmul.bind(mT(v), v_bar))
        inner = term if inner is None else lax.add(inner, term)
    if inner is None:
        return (None,)
    return (_read_adjoint(mm(v, inner, mT(v)), uplo),)


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
    c = linalg.solve.bind(v, matmul.bind(t, v))
    w_dot = diag_part(c)
    u = matmul.bind(v, lax.multiply(_gap_inverse(w), c))
    along = lax.sum(lax.multiply(v, u), axis=-2, keepdims=True)
    return (w, v), (w_dot, lax.subtract(u, lax.multiply(v, along)))


def _eig_vjp(cts, primals, ans):
    w_bar, v_bar = cts
    w, v = ans
    inner = None if w_bar is None else diag_embed(w_bar)
    if v_bar is not None:
        vt_vbar = matmul.bind(mT(v), v_bar)
        # the normalisation's transpose: v_bar - V diag(V^T v_bar), seen through V^T
        vt_vbar = lax.subtract(vt_vbar, scale_cols(matmul.bind(mT(v), v),
                                                    diag_part(vt_vbar)))
        term = lax.multiply(_gap_inverse(w), vt_vbar)
        inner = term if inner is None else lax.add(inner, term)
    if inner is None:
        return (None,)
    return (linalg.solve.bind(mT(v), matmul.bind(inner, mT(v))),)  # V^-T inner V^T


def _svd_jvp(primals, tangents):
    a = primals[0]
    u, s, vh = svd.bind(a)
    t = tangents[0]
    if t is None:
        return (u, s, vh), (None, None, None)
    v = mT(vh)
    dp = mm(mT(u), t, v)
    s_dot = diag_part(dp)
    f = _gap_inverse(s, squared=True)
    omega_u = lax.multiply(f, lax.add(scale_cols(dp, s), scale_rows(mT(dp), s)))
    omega_v = lax.multiply(f, lax.add(scale_rows(dp, s), scale_cols(mT(dp), s)))
    t_v = scale_cols(matmul.bind(t, v), lax.true_divide(1.0, s))     # dA V S^-1
    t_u = scale_cols(matmul.bind(mT(t), u), lax.true_divide(1.0, s))  # dA^T U S^-1
    u_dot = lax.add(matmul.bind(u, omega_u), lax.subtract(t_v, mm(u, mT(u), t_v)))
    v_dot = lax.add(matmul.bind(v, omega_v), lax.subtract(t_u, mm(v, mT(v), t_u)))
    return (u, s, vh), (u_dot, s_dot, mT(v_dot))


def _svd_vjp(cts, primals, ans):
    u_bar, s_bar, vh_bar = cts
    u, s, vh = ans
    v = mT(vh)
    inv_s = lax.true_divide(1.0, s)
    inner, outer = None, None
    if s_bar is not None:
        inner = diag_embed(s_bar)
    if u_bar is not None:
        j = lax.multiply(_gap_inverse(s, squared=True), matmul.bind(mT(u), u_bar))
        term = scale_cols(lax.add(j, mT(j)), s)
        inner = term if inner is None else lax.add(inner, term)
        proj = lax.subtract(u_bar, mm(u, mT(u), u_bar))           # (I - U U^T) U_bar
        outer = mm(scale_cols(proj, inv_s), vh)
    if vh_bar is not None:
        v_bar = mT(vh_bar)
        k = lax.multiply(_gap_inverse(s, squared=True), matmul.bind(vh, v_bar))
        term = scale_rows(lax.add(k, mT(k)), s)
        inner = term if inner is None else lax.add(inner, term)
        proj = lax.subtract(v_bar, mm(v, vh, v_bar))                # (I - V V^T) V_bar
        side = matmul.bind(scale_cols(u, inv_s), mT(proj))
        outer = side if outer is None else lax.add(outer, side)
    if inner is None:
        return (None,)
    a_bar = mm(u, inner, vh)
    return (a_bar if outer is None else lax.add(a_bar, outer),)


def _right_solve_r(m, r):
    """m @ inv(r)."""
    return mT(linalg.solve.bind(mT(r), mT(m)))


def _qr_jvp(primals, tangents):
    a = primals[0]
    q, r = qr.bind(a)
    t = tangents[0]
    if t is None:
        return (q, r), (None, None)
    t_rinv = _right_solve_r(t, r)
    c = matmul.bind(mT(q), t_rinv)
    n = lax.shape_of(c)[-1]
    low = lax.where(lower_mask(n, -1), c, 0.0)
    omega = lax.subtract(low, mT(low))
    r_dot = matmul.bind(lax.subtract(c, omega), r)
    q_dot = lax.add(matmul.bind(q, omega), lax.subtract(t_rinv, matmul.bind(q, c)))
    return (q, r), (q_dot, r_dot)


def _copy_lower_to_upper(m):
    n = lax.shape_of(m)[-1]
    low = lax.where(lower_mask(n, -1), m, 0.0)
    return lax.add(lax.add(low, mT(low)), lax.where(np.eye(n, dtype=bool), m, 0.0))


def _qr_vjp(cts, primals, ans):
    q_bar, r_bar = cts
    q, r = ans
    m = None
    if r_bar is not None:
        m = matmul.bind(r, mT(r_bar))
    if q_bar is not None:
        qtq = matmul.bind(mT(q_bar), q)
        m = lax.negative(qtq) if m is None else lax.subtract(m, qtq)
    if m is None:
        return (None,)
    b = matmul.bind(q, _copy_lower_to_upper(m))
    if q_bar is not None:
        b = lax.add(q_bar, b)
    return (mT(linalg.solve.bind(r, mT(b))),)  # b @ inv(r).T


def _pinv_linear(x, a, t):
    """The derivative of pinv at a (x = pinv(a)) in direction t, at constant rank."""
    m, n = lax.shape_of(a)[-2:]
    range_a = lax.subtract(eye_like(m, a), matmul.bind(a, x))  # I - A X
    range_x = lax.subtract(eye_like(n, a), matmul.bind(x, a))  # I - X A
    t_t = mT(t)
    out = lax.negative(mm(x, t, x))
    out = lax.add(out, mm(x, mT(x), t_t, range_a))
    return lax.add(out, mm(range_x, t_t, mT(x), x))


def _pinv_jvp(primals, tangents, rcond):
    a = primals[0]
    x = pinv.bind(a, rcond=rcond)
    t = tangents[0]
    return x, None if t is None else _pinv_linear(x, a, t)


def _pinv_vjp(g, primals, ans, rcond):
    a, x = primals[0], ans
    m, n = lax.shape_of(a)[-2:]
    range_a = lax.subtract(eye_like(m, a), matmul.bind(a, x))
    range_x = lax.subtract(eye_like(n, a), matmul.bind(x, a))
    out = lax.negative(mm(mT(x), g, mT(x)))
    out = lax.add(out, mm(range_a, mT(g), x, mT(x)))
    return (lax.add(out, mm(mT(x), x, mT(g), range_x)),)


defrules(eigh, jvp=_eigh_jvp, vjp=_eigh_vjp)
defrules(eig, jvp=_eig_jvp, vjp=_eig_vjp)
defrules(svd, jvp=_svd_jvp, vjp=_svd_vjp)
defrules(qr, jvp=_qr_jvp, vjp=_qr_vjp)
defrules(pinv, jvp=_pinv_jvp, vjp=_pinv_vjp)


for _prim in (eigh, eig, svd, qr, pinv):
    defrules(_prim, vmap=batching.leading_axes_rule,  # leading axes are batch axes already
             sparsity=sparsity.dense_block)  # every entry may depend on every entry
