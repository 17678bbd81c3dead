"""Dense linear algebra: ``solve``, ``inv``, ``det``, ``slogdet``, ``cholesky``, the eigen-,
singular-value and QR decompositions, ``pinv``, and SciPy's ``solve_triangular`` and
``lu_factor`` (with ``lu_pivots_to_permutation``) over the last two axes (leading axes are
batch axes). Library ops: the implementations call ``xp.linalg`` (NumPy's LAPACK, or
cuSOLVER through CuPy) or the backend's ``linalg`` (``scipy.linalg``, ``cupyx.scipy.linalg``)
on plain arrays; the rules are
written with these same primitives and matmul (:mod:`dualgpu.rules.decompositions`), so they
differentiate to any order.

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

from ..backends import backend_for_xp
from ..core.dtypes import float_dtype, promote
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import defprim, defstandalone
from ..errors import DualgpuError, UnsupportedOpError


def _square(a: Aval, op: str) -> None:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise DualgpuError(f"linalg.{op}: expected square matrices (..., n, n), got "
                           f"{a.str_short()}")


def _broadcast_batch(avals, op: str) -> tuple:
    try:
        return tuple(np.broadcast_shapes(*(tuple(a.shape[:-2]) for a in avals)))
    except ValueError:
        raise DualgpuError(f"linalg.{op}: batch shapes of "
                           f"{' and '.join(a.str_short() for a in avals)} do not broadcast"
                           ) from None


def _per_matrix(xp, fn, out_shapes, out_dtypes, *arrays):
    """``fn`` (2-D arrays to a tuple of arrays) applied to each matrix of the broadcast
    stacks ``arrays``, its results written into arrays of ``out_shapes`` (SciPy's functions
    take batches in some versions only)."""
    batch = tuple(np.broadcast_shapes(*(x.shape[:-2] for x in arrays)))
    if not batch:
        return tuple(r.astype(dt, copy=False) for r, dt in zip(fn(*arrays), out_dtypes))
    arrays = [xp.broadcast_to(x, batch + x.shape[-2:]) for x in arrays]
    outs = tuple(xp.empty(s, dt) for s, dt in zip(out_shapes, out_dtypes))
    for i in np.ndindex(*batch):
        for out, r in zip(outs, fn(*(x[i] for x in arrays))):
            out[i] = r
    return outs


# --------------------------------------------------------------------------- inv
def _inv_shape(avals):
    a = avals[0]
    _square(a, "inv")
    return Aval(tuple(a.shape), float_dtype(a.dtype))


inv = defprim("inv", lambda xp, a: xp.linalg.inv(a), _inv_shape,
              kind=Flag.LIBRARY, py="xp.linalg.inv({0})",
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
    _square(a, "det")
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
    _square(a, "cholesky")
    if a.dtype.kind == "c":  # Hermitian factors need conjugate transposes in the rules
        raise DualgpuError(f"linalg.cholesky of complex matrices ({a.str_short()}) is not "
                           "supported on traced values")
    return Aval(tuple(a.shape), float_dtype(a.dtype))


cholesky = defprim("cholesky", lambda xp, a: xp.linalg.cholesky(a), _chol_shape,
                   kind=Flag.LIBRARY, py="xp.linalg.cholesky({0})",
                   doc="Lower Cholesky factor; reads only the lower triangle of a.")


# --------------------------------------------------------------------------- eigh, svd, qr, pinv
def _real_only(a: Aval, op: str) -> None:
    if a.dtype.kind == "c":
        raise DualgpuError(f"linalg.{op} of complex matrices ({a.str_short()}) is not "
                           "supported on traced values")


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
    _square(a, "eigh")
    _real_only(a, "eigh")
    dt = float_dtype(a.dtype)
    return [Aval(tuple(a.shape[:-1]), dt), Aval(tuple(a.shape), dt)]


def _eigh_impl(xp, a, uplo="L", driver=None):
    scipy_eigh = getattr(backend_for_xp(xp).linalg, "eigh", None)  # cupyx has none
    if driver is None or scipy_eigh is None or not a.size:
        w, v = xp.linalg.eigh(a, UPLO=uplo)  # LAPACK's own call per triangle: NumPy's signs
        return w, v
    w, v = _eigh_shape([Aval(a.shape, a.dtype)], uplo, driver)
    return _per_matrix(xp, lambda m: scipy_eigh(m, lower=uplo == "L", driver=driver,
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
    _square(a, "eig")
    _real_only(a, "eig")
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
    _real_only(a, "svd")
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
    _real_only(a, "qr")
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
    _real_only(a, "pinv")
    return Aval(tuple(a.shape[:-2]) + (a.shape[-1], a.shape[-2]), float_dtype(a.dtype))


pinv = defprim("pinv", lambda xp, a, rcond: xp.linalg.pinv(a, rcond), _pinv_shape,
               kind=Flag.LIBRARY, py="xp.linalg.pinv({0}, {rcond})",
               doc="The Moore-Penrose pseudo-inverse (singular values below rcond * the "
                   "largest are dropped); derivatives hold where the rank is constant.")

# --------------------------------------------------------------------------- solve_triangular, LU
# SciPy's (scipy.linalg, or cupyx.scipy.linalg: the backend's ``linalg``), one matrix at a
# time (:func:`_per_matrix`): the leading axes are batch axes, broadcast.
def _solve_triangular_shape(avals, lower=False, trans=0, unit_diagonal=False):
    a, b = avals
    _square(a, "solve_triangular")
    _real_only(a, "solve_triangular")
    if trans not in (0, 1) or not isinstance(lower, bool) or not isinstance(unit_diagonal,
                                                                            bool):
        raise DualgpuError(f"linalg.solve_triangular: trans must be 0 or 1 and lower, "
                           f"unit_diagonal booleans, got {trans!r}, {lower!r}, "
                           f"{unit_diagonal!r}")
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise DualgpuError(f"linalg.solve_triangular: {a.str_short()} and {b.str_short()} "
                           "differ (b is a stack of matrices (..., n, k))")
    batch = _broadcast_batch(avals, "solve_triangular")
    return Aval(batch + tuple(b.shape[-2:]), float_dtype(promote([a, b])))


def _solve_triangular_impl(xp, a, b, lower=False, trans=0, unit_diagonal=False):
    solver = backend_for_xp(xp).linalg.solve_triangular
    out = _solve_triangular_shape([Aval(a.shape, a.dtype), Aval(b.shape, b.dtype)],
                                  lower, trans, unit_diagonal)
    if not out.size:
        return xp.zeros(out.shape, out.dtype)
    return _per_matrix(xp, lambda a, b: (solver(a, b, trans=trans, lower=lower,
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
    _square(a, "lu_factor")
    _real_only(a, "lu_factor")
    return [Aval(tuple(a.shape), float_dtype(a.dtype)),
            Aval(tuple(a.shape[:-1]), np.dtype(np.int32))]


def _lu_factor_impl(xp, a):
    factor = backend_for_xp(xp).linalg.lu_factor
    lu, piv = _lu_factor_shape([Aval(a.shape, a.dtype)])
    if not a.size:
        return xp.zeros(lu.shape, lu.dtype), xp.zeros(piv.shape, piv.dtype)
    return _per_matrix(xp, lambda a: factor(a, check_finite=False), [lu.shape, piv.shape],
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
defstandalone(eigh, (
        "def eigh(a, uplo='L', driver=None):\n"
        "    if driver is None:\n"
        "        return tuple(xp.linalg.eigh(a, UPLO=uplo))\n"
        "    import scipy.linalg\n"
        "    parts = [scipy.linalg.eigh(m, lower=uplo == 'L', driver=driver)\n"
        "             for m in a.reshape((-1,) + a.shape[-2:])]\n"
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
    '    return xp.stack([one(p, q) for p, q in zip(a, b)]).reshape(batch + b.shape[-2:])\n'))
_scipy_standalone(lu_factor, (
    'def lu_factor(a):\n'
    '    import LINALG\n'
    '    if a.ndim == 2:\n'
    '        return LINALG.lu_factor(a)\n'
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
