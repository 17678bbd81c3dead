"""Dense linear algebra: ``solve``, ``inv``, ``det``, ``slogdet`` and ``cholesky`` over the
last two axes (leading axes are batch axes). Library ops: the implementations call
``xp.linalg`` (NumPy's LAPACK, or cuSOLVER through CuPy) on plain arrays; the rules are
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


def _eigh_shape(avals, uplo="L"):
    a = avals[0]
    if uplo not in ("L", "U"):
        raise DualgpuError(f"linalg.eigh: UPLO must be 'L' or 'U', got {uplo!r}")
    _square(a, "eigh")
    _real_only(a, "eigh")
    dt = float_dtype(a.dtype)
    return [Aval(tuple(a.shape[:-1]), dt), Aval(tuple(a.shape), dt)]


def _eigh_impl(xp, a, uplo="L"):
    w, v = xp.linalg.eigh(a, UPLO=uplo)  # LAPACK's own call for each triangle: NumPy's signs
    return w, v


eigh = defprim("eigh", _eigh_impl, _eigh_shape, multiple_results=True, kind=Flag.LIBRARY,
               py="ops.eigh({0}, {uplo})",
               doc="(eigenvalues ascending, eigenvectors) of the symmetric matrix whose lower "
                   "(uplo 'L') or upper ('U') triangle is a's.")


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

# --------------------------------------------------------------------------- exported modules
# the functions a module of dg.export defines for the ops it calls as ops.<name>
defstandalone(solve, (
        'def solve(a, b):\n'
        '    if b.ndim == 1 and a.ndim > 2:\n'
        '        return xp.linalg.solve(a, b[:, None])[..., 0]\n'
        '    return xp.linalg.solve(a, b)\n'))
defstandalone(slogdet, 'def slogdet(a):\n    return tuple(xp.linalg.slogdet(a))\n')
defstandalone(eigh, "def eigh(a, uplo='L'):\n    return tuple(xp.linalg.eigh(a, UPLO=uplo))\n")
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
