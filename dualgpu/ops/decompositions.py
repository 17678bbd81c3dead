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

from ..core.dtypes import float_dtype, promote
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import defprim
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


def _eig_impl(xp, a):
    if not hasattr(xp.linalg, "eig"):  # CuPy has no general eigensolver
        raise UnsupportedOpError(f"linalg.eig: {xp.__name__}.linalg has no general "
                                 "eigen-decomposition; call it on NumPy arrays")
    w, v = xp.linalg.eig(a)
    if w.dtype.kind == "c":  # NumPy's result is complex as soon as one eigenvalue is
        if bool(xp.any(w.imag != 0)):
            raise DualgpuError(
                "linalg.eig: the matrix has complex eigenvalues (e.g. "
                f"{complex(w[w.imag != 0].ravel()[0])}); dualgpu supports eig/eigvals only "
                "for real matrices whose eigenvalues are real (use eigh for symmetric ones)")
        w, v = w.real, v.real
    dt = float_dtype(a.dtype)
    return w.astype(dt, copy=False), v.astype(dt, copy=False)


eig = defprim("eig", _eig_impl, _eig_shape, multiple_results=True, kind=Flag.LIBRARY,
              py="ops.eig({0})",
              doc="(eigenvalues in LAPACK's order, unit-norm eigenvectors) of a real matrix "
                  "whose eigenvalues are real; complex eigenvalues raise at run time.")


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
