"""``scipy.linalg`` (and ``cupyx.scipy.linalg``) on traced values, with SciPy's signatures,
defaults and results, which differ from NumPy's functions of the same names
(:mod:`dualgpu.frontend.numpy.linalg`): ``cholesky`` gives the upper factor unless
``lower=True`` (and reads that triangle of ``a``), ``qr``'s default mode is ``'full'``,
``eig``'s eigenvalues are complex, ``eigh`` reads ``lower`` and its eigenvectors have the
signs of SciPy's LAPACK driver; ``solve_triangular``, ``cho_factor``/``cho_solve``,
``lu_factor``/``lu_solve`` and ``lu`` are SciPy's own. ``overwrite_a``, ``overwrite_b`` and
``check_finite`` are accepted and have no effect (nothing is overwritten; non-finite values
are not checked for). Leading axes are batch axes, as in SciPy 1.15 and later.

    >>> import scipy.linalg
    >>> a = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> dg.jit(lambda a: scipy.linalg.cholesky(a))(a)        # upper, as SciPy's
    array([[2.        , 1.        ],
           [0.        , 1.41421356]])
    >>> b = np.array([1.0, 2.0])      # only the upper triangle is read, as by SciPy
    >>> dg.grad(lambda a: scipy.linalg.cho_solve(scipy.linalg.cho_factor(a), b)[1])(a)
    array([[-0.03125,  0.25   ],
           [ 0.     , -0.375  ]])
"""
from __future__ import annotations

import numpy as np

from ...errors import DualgpuError, TracerControlFlowError, UnsupportedOpError, user_location
from ...lax import (
    absolute,
    add,
    astype,
    broadcast_to,
    ceil,
    concatenate,
    diagonal,
    equal,
    expand_dims,
    getitem,
    greater,
    isfinite,
    log2,
    multiply,
    ones_like,
    put_along_axis_add,
    reciprocal,
    squeeze,
    stack,
    subtract,
    swapaxes,
    take_along_axis,
    true_divide,
    where,
)
from ...lax import dtype_of as _dtype
from ...lax import shape_of as _shape
from ...ops import decompositions as _dec
from ...ops import linalg as _lin
from ...ops import matrix_functions as _mf
from ..numpy import linalg as _np_linalg
from ..numpy.arguments import arraylike
from ..numpy.products import matmul
from ..numpy.reductions import amax, sum_
from ..numpy.sorting import argsort

__all__ = ["cho_factor", "cho_solve", "cholesky", "det", "eig", "eigh", "eigvals", "expm",
           "eigvalsh", "inv", "lstsq", "lu", "lu_factor", "lu_solve", "norm", "pinv", "qr",
           "solve", "solve_banded", "solve_sylvester", "solve_triangular", "sqrtm", "svd",
           "svdvals"]


# --------------------------------------------------------------------------- arguments
def _lapack(*arrays):
    """The arrays in the type LAPACK computes in: their common type, float64 for integers
    and booleans, float32 for float16 (as SciPy's)."""
    arrays = [arraylike(x) for x in arrays]
    dt = np.result_type(*(_dtype(x) for x in arrays))
    if dt.kind in "biu":
        dt = np.dtype(np.float64)
    elif dt == np.float16:
        dt = np.dtype(np.float32)
    arrays = [x if _dtype(x) == dt else astype(x, dt) for x in arrays]
    return arrays[0] if len(arrays) == 1 else arrays


def _error(fn: str, what: str, cls=DualgpuError):
    return cls(f"scipy.linalg.{fn}: {what} (at {user_location()})")


def _flag(fn: str, name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise _error(fn, f"{name} must be a Python bool, got {value!r}")
    return bool(value)


def _trans(fn: str, trans) -> int:
    """SciPy's ``trans`` (0/'N', 1/'T', 2/'C') as 0 or 1 (real matrices: 'C' is 'T')."""
    codes = {0: 0, 1: 1, 2: 1, "N": 0, "T": 1, "C": 1}
    if isinstance(trans, (bool, np.bool_)) or trans not in codes:
        raise _error(fn, f"trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    return codes[trans]


def _matrices(fn: str, a, square: bool = True) -> None:
    s = _shape(a)
    if len(s) < 2 or (square and s[-1] != s[-2]):
        kind = "square matrices (..., n, n)" if square else "matrices (..., m, n)"
        raise _error(fn, f"expected {kind}, got shape {s}")


def _pair(fn: str, name: str, value):
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise _error(fn, f"{name} must be the pair that scipy.linalg."
                         f"{fn.replace('solve', 'factor')} returns, got {type(value).__name__}")
    return value


# --------------------------------------------------------------------------- triangles
def _mask(n: int, lower: bool, k: int = 0):
    """The entries of the lower (upper) triangle, from diagonal ``k`` on (k < 0: below)."""
    low = np.tri(n, n, k, dtype=bool)
    return low if lower else low.T


def _symmetric(a, lower: bool):
    """The symmetric matrix LAPACK reads from one triangle of ``a``."""
    n = _shape(a)[-1]
    return where(_mask(n, lower), a, swapaxes(a, -1, -2))


def _factor(a, lower: bool):
    """The Cholesky factor read from the lower (upper) triangle of ``a``."""
    if lower:
        return _lin.cholesky.bind(a)
    return swapaxes(_lin.cholesky.bind(swapaxes(a, -1, -2)), -1, -2)


def _tri_solve(a, b, lower: bool, trans: int = 0, unit_diagonal: bool = False):
    """``solve_triangular``'s op, with a vector ``b`` (1-D) as one column."""
    vector = len(_shape(b)) == 1
    x = _lin.solve_triangular.bind(a, expand_dims(b, -1) if vector else b, lower=lower,
                                   trans=trans, unit_diagonal=unit_diagonal)
    return squeeze(x, -1) if vector else x


def _rhs(fn: str, a, b) -> None:
    n, s = _shape(a)[-1], _shape(b)
    if len(s) == 0 or (s[0] if len(s) == 1 else s[-2]) != n:
        raise _error(fn, f"b of shape {s} does not fit a of shape {_shape(a)} (b is a vector "
                         "(n,) or a stack of matrices (..., n, k))")


# --------------------------------------------------------------------------- Cholesky
def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """``scipy.linalg.cholesky``: the upper factor ``U`` with ``a = U.T @ U``, read from the
    upper triangle of ``a`` (``lower=True``: the lower factor, from the lower triangle).

    >>> import scipy.linalg
    >>> a = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> dg.grad(lambda a: scipy.linalg.cholesky(a)[0, 1])(a)  # U[0, 1] = a[0, 1] / sqrt(a[0, 0])
    array([[-0.125,  0.5  ],
           [ 0.   ,  0.   ]])
    """
    a = _lapack(a)
    _matrices("cholesky", a)
    return _factor(a, _flag("cholesky", "lower", lower))


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """``scipy.linalg.cho_factor``: ``(c, lower)``, ``c`` the factor in one triangle and
    ``a``'s entries in the other (as SciPy's, which leaves them untouched)."""
    a = _lapack(a)
    _matrices("cho_factor", a)
    lower = _flag("cho_factor", "lower", lower)
    return where(_mask(_shape(a)[-1], lower), _factor(a, lower), a), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """``scipy.linalg.cho_solve``: ``x`` with ``a @ x = b`` from ``cho_factor(a)``; two
    triangular solves that read only the factor's triangle of ``c``."""
    c, lower = _pair("cho_solve", "c_and_lower", c_and_lower)
    lower = _flag("cho_solve", "lower", lower)
    c, b = _lapack(c, b)
    _matrices("cho_solve", c)
    _rhs("cho_solve", c, b)
    if lower:  # L L^T x = b
        return _tri_solve(c, _tri_solve(c, b, True), True, trans=1)
    return _tri_solve(c, _tri_solve(c, b, False, trans=1), False)  # U^T U x = b


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    """``scipy.linalg.solve_triangular``: ``x`` with ``t @ x = b`` (``trans=1``: ``t.T @ x =
    b``), ``t`` the upper (``lower=True``: lower) triangle of ``a``, its diagonal taken as
    ones with ``unit_diagonal``; ``b`` a vector (n,) or a stack of matrices (..., n, k)."""
    trans = _trans("solve_triangular", trans)
    lower = _flag("solve_triangular", "lower", lower)
    unit_diagonal = _flag("solve_triangular", "unit_diagonal", unit_diagonal)
    a, b = _lapack(a, b)
    _matrices("solve_triangular", a)
    _rhs("solve_triangular", a, b)
    return _tri_solve(a, b, lower, trans, unit_diagonal)


# --------------------------------------------------------------------------- LU
def lu_factor(a, overwrite_a=False, check_finite=True):
    """``scipy.linalg.lu_factor`` of square matrices: ``(lu, piv)``, LAPACK's partial
    pivoting (``piv`` int32: row ``i`` was interchanged with row ``piv[i]``). Where two
    candidate pivots tie, the pivots jump and ``lu`` has no derivative."""
    a = _lapack(a)
    _matrices("lu_factor", a, square=False)
    m, n = _shape(a)[-2:]
    if m != n:
        raise _error("lu_factor", f"the LU factorisation of a non-square traced matrix "
                                  f"{_shape(a)} is not supported", UnsupportedOpError)
    lu_, piv = _lin.lu_factor.bind(a)
    return lu_, piv


def _permutation(piv):
    if _dtype(piv).kind not in "iu":
        raise _error("lu_solve", f"piv must hold integers, got {_dtype(piv)}")
    return _lin.lu_pivots_to_permutation.bind(piv)


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """``scipy.linalg.lu_solve``: ``x`` with ``a @ x = b`` (``trans=1``: ``a.T @ x = b``)
    from ``lu_factor(a)``."""
    lu_, piv = _pair("lu_solve", "lu_and_piv", lu_and_piv)
    trans = _trans("lu_solve", trans)
    lu_, b = _lapack(lu_, b)
    _matrices("lu_solve", lu_)
    _rhs("lu_solve", lu_, b)
    perm = _permutation(arraylike(piv))
    vector = len(_shape(b)) == 1
    b = expand_dims(b, -1) if vector else b
    n, k = _shape(b)[-2:]
    batch = np.broadcast_shapes(_shape(lu_)[:-2], _shape(perm)[:-1], _shape(b)[:-2])
    b = broadcast_to(b, batch + (n, k))
    rows = broadcast_to(expand_dims(perm, -1), batch + (n, 1))
    if trans == 0:  # P a = L U: x = U^-1 L^-1 (P b)
        y = _tri_solve(lu_, take_along_axis(b, rows, len(batch)), True, unit_diagonal=True)
        x = _tri_solve(lu_, y, False)
    else:  # a^T = U^T L^T P: x = P^T L^-T U^-T b
        y = _tri_solve(lu_, _tri_solve(lu_, b, False, trans=1), True, 1, unit_diagonal=True)
        x = put_along_axis_add(y, rows, len(batch), _shape(y))
    return squeeze(x, -1) if vector else x


def lu(a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False):
    """``scipy.linalg.lu`` of square matrices: ``(p, l, u)`` with ``a = p @ l @ u``
    (``p_indices=True``: ``p`` the row indices, ``a = l[p] @ u``; ``permute_l=True``:
    ``(p @ l, u)``)."""
    lu_, piv = lu_factor(a)
    n = _shape(lu_)[-1]
    low = where(_mask(n, True, -1), lu_, 0.0) + np.eye(n, dtype=_dtype(lu_))
    up = where(_mask(n, False), lu_, 0.0)
    perm = _permutation(piv)  # a[perm] = l @ u
    # p[r, c] = 1 where r == perm[c]: a = p @ l @ u
    p = astype(equal(expand_dims(perm, -2), np.arange(n)[:, None]), _dtype(lu_))
    if _flag("lu", "permute_l", permute_l):
        return matmul(p, low), up
    if _flag("lu", "p_indices", p_indices):
        return astype(argsort(perm, axis=-1), np.int32), low, up
    return p, low, up


# --------------------------------------------------------------------------- solve, inv, det
_STRUCTURES = {None: "general", "general": "general", "gen": "general",
               "banded": "general", "tridiagonal": "tridiagonal", "diagonal": "diagonal",
               "upper triangular": "upper", "lower triangular": "lower",
               "pos": "symmetric", "positive definite": "symmetric",
               "sym": "symmetric", "symmetric": "symmetric",
               "her": "symmetric", "hermitian": "symmetric"}


_INV_STRUCTURES = (None, "general", "gen", "diagonal", "upper triangular", "lower triangular",
                   "pos", "sym", "her")  # scipy.linalg.inv's


def _structure(fn: str, a, assume_a, lower):
    """(kind, the matrix SciPy reads): ``assume_a='pos'``/``'sym'``/``'her'`` read the
    triangle ``lower`` names, ``'diagonal'`` and ``'tridiagonal'`` their diagonals; None,
    ``'general'`` and ``'banded'`` every entry (SciPy finds the structure in the values, which
    changes the algorithm, not the solution)."""
    known = _INV_STRUCTURES if fn == "inv" else _STRUCTURES
    if not isinstance(assume_a, (str, type(None))) or assume_a not in known:
        raise _error(fn, f"{assume_a!r} is not a recognized matrix structure")
    kind = _STRUCTURES[assume_a]
    n = _shape(a)[-1]
    if kind == "symmetric":
        return kind, _symmetric(a, _flag(fn, "lower", lower))
    if kind in ("diagonal", "tridiagonal"):
        band = np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= (kind == "tridiagonal")
        return kind, where(band, a, 0.0)
    return kind, a


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
          assume_a=None, transposed=False):
    """``scipy.linalg.solve``: ``x`` with ``a @ x = b`` (``transposed``: ``a.T @ x = b``);
    ``b`` a vector (n,) or a stack of matrices (..., n, k); ``assume_a`` names the part of
    ``a`` that is read (``'pos'``, ``'sym'``: the triangle ``lower`` names; ``'upper
    triangular'``...)."""
    a, b = _lapack(a, b)
    _matrices("solve", a)
    _rhs("solve", a, b)
    kind, a = _structure("solve", a, assume_a, lower)
    transposed = _flag("solve", "transposed", transposed)
    if kind in ("upper", "lower"):
        return _tri_solve(a, b, kind == "lower", int(transposed))
    if kind == "diagonal":
        d = diagonal(a, 0, -2, -1)
        return multiply(b, reciprocal(d) if len(_shape(b)) == 1 else
                        expand_dims(reciprocal(d), -1))
    return _lin.solve.bind(swapaxes(a, -1, -2) if transposed else a, b)


def inv(a, overwrite_a=False, check_finite=True, *, assume_a=None, lower=False):
    """``scipy.linalg.inv``, reading the part of ``a`` that ``assume_a`` names (as
    :func:`solve`; ``'diagonal'`` inverts the diagonal and keeps ``a``'s other entries, as
    SciPy 1.17's)."""
    a = _lapack(a)
    _matrices("inv", a)
    n = _shape(a)[-1]
    kind, a = _structure("inv", a, assume_a, lower) if assume_a != "diagonal" else ("diagonal",
                                                                                   a)
    if kind in ("upper", "lower"):
        return _tri_solve(a, broadcast_to(np.eye(n, dtype=_dtype(a)), _shape(a)),
                          kind == "lower")
    if kind == "diagonal":  # SciPy inverts the diagonal in place: a's other entries stay
        return where(np.eye(n, dtype=bool), reciprocal(a), a)
    return _lin.inv.bind(a)


def det(a, overwrite_a=False, check_finite=True):
    """``scipy.linalg.det`` over the last two axes."""
    a = _lapack(a)
    _matrices("det", a)
    return _np_linalg.det(a)


def norm(a, ord=None, axis=None, keepdims=False, check_finite=True):
    """``scipy.linalg.norm``: ``np.linalg.norm``'s meaning of every (ord, axis)."""
    return _np_linalg.norm(a, ord=ord, axis=axis, keepdims=keepdims)


# ------------------------------------------------------------------- the matrix exponential
# the [13/13] Pade approximant's coefficients, and the largest 1-norm it serves unscaled to
# float64's rounding (Higham, "The scaling and squaring method for the matrix exponential
# revisited", 2005)
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
           1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
           33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _squarings(A):
    """The squarings the largest finite 1-norm of the stack asks for: none for a norm of 0
    (the identity), and a matrix's NaN or inf columns (NaN as SciPy's) are left out, so its
    neighbours keep theirs (their logarithm is no integer; a NaN maximum took none)."""
    norms = sum_(absolute(A), axis=-2)
    ratio = true_divide(amax(where(isfinite(norms), norms, 0.0)), _THETA13)
    return int(ceil(log2(where(greater(ratio, 1.0), ratio, 1.0))))


def expm(A):
    """``scipy.linalg.expm`` over the last two axes: scaling and squaring of the [13/13]
    Pade approximant (Higham 2005), so its derivatives of every order are those of its
    products and one solve. The number of squarings comes from the 1-norm's value: a
    decision the derivative transforms record (a call whose norm needs another count traces
    again); under ``dg.jit`` or ``dg.vmap`` a traced ``A`` is refused for it.

    >>> import scipy.linalg
    >>> a = np.array([[0.0, 1.0], [-1.0, 0.0]])
    >>> bool(np.allclose(dg.jit(lambda: scipy.linalg.expm(a))(), scipy.linalg.expm(a)))
    True
    """
    A = _lapack(A)
    _matrices("expm", A)
    n = _shape(A)[-1]
    try:
        squarings = 0 if 0 in _shape(A) else _squarings(A)  # (a decision)
    except TracerControlFlowError:
        raise TracerControlFlowError(
            "scipy.linalg.expm: its number of squarings comes from the 1-norm of A's values, "
            f"which dg.jit and dg.vmap do not know (at {user_location()}); call it under a "
            "derivative transform (dg.grad, dg.jvp, dg.jacobian...: they trace on values), "
            "on a stack of matrices (..., n, n) instead of under vmap, or with A a "
            "constant") from None
    A = multiply(A, 2.0 ** -squarings)
    b = _PADE13
    eye = np.eye(n, dtype=_dtype(A))
    A2 = matmul(A, A)
    A4 = matmul(A2, A2)
    A6 = matmul(A4, A2)

    def terms(*pairs):
        out = multiply(b[pairs[0][0]], pairs[0][1])
        for k, m in pairs[1:]:
            out = add(out, multiply(b[k], m))
        return out

    U = matmul(A, add(matmul(A6, terms((13, A6), (11, A4), (9, A2))),
                      terms((7, A6), (5, A4), (3, A2), (1, eye))))
    V = add(matmul(A6, terms((12, A6), (10, A4), (8, A2))),
            terms((6, A6), (4, A4), (2, A2), (0, eye)))
    R = _lin.solve.bind(subtract(V, U), add(V, U))
    for _ in range(squarings):
        R = matmul(R, R)
    return R


# --------------------------------------------------------------------------- QR
def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """``scipy.linalg.qr`` (Householder, as LAPACK's): ``mode`` ``'full'`` (q square),
    ``'economic'``, ``'r'`` (a tuple ``(r,)``, ``r`` of a's shape). A tall matrix's complete
    ``q`` (``'full'`` with more rows than columns) is refused: its extra columns are not
    unique and have no derivative. A wide matrix is ``q, r1 = qr(a1)``, ``r2 = q.T @ a2``.
    Column pivoting is refused (the permutation is chosen by the values)."""
    if pivoting is not False:
        raise _error("qr", "pivoting=True (QR with column pivoting) is not supported on "
                           "traced values: the column order is chosen by the values",
                     UnsupportedOpError)
    if mode not in ("full", "economic", "r"):
        raise _error("qr", f"mode={mode!r} is not supported on traced values; use 'full', "
                           "'economic' or 'r'", UnsupportedOpError)
    a = _lapack(a)
    _matrices("qr", a, square=False)
    m, n = _shape(a)[-2:]
    if m >= n:
        q, r = _dec.qr.bind(a)
        if mode == "r":
            if m > n:
                lead = tuple(_shape(a)[:-2])
                r = concatenate([r, broadcast_to(np.zeros((), _dtype(a)),
                                                 lead + (m - n, n))], axis=-2)
            return (r,)
        if mode == "full" and m > n:
            raise _error("qr", f"mode='full' of a tall traced matrix {_shape(a)}: the "
                               f"{m - n} completing columns of q are not unique and have no "
                               "derivative; pass mode='economic' (q of shape (m, n)) or "
                               "mode='r'", UnsupportedOpError)
        return q, r
    q, r1 = _dec.qr.bind(getitem(a, (Ellipsis, slice(None), slice(0, m))))
    r = concatenate([r1, matmul(swapaxes(q, -1, -2),
                                getitem(a, (Ellipsis, slice(None), slice(m, None))))], axis=-1)
    return (r,) if mode == "r" else (q, r)


# --------------------------------------------------------------------------- eigenvalues
def _no_generalized(fn: str, b) -> None:
    if b is not None:
        raise _error(fn, "the generalized eigenvalue problem (b given) is not supported on "
                         "traced values", UnsupportedOpError)


def _complex(w):
    return astype(w, np.result_type(_dtype(w), np.complex64))


def eig(a, b=None, left=False, right=True, overwrite_a=False, overwrite_b=False,
        check_finite=True, homogeneous_eigvals=False):
    """``scipy.linalg.eig`` of a real matrix whose eigenvalues are real: ``(w, v)`` with
    ``w`` complex (as SciPy's; its imaginary parts 0) and ``v`` real, LAPACK's order and
    normalisation (``np.linalg.eig``'s, whose conditions apply). ``right=False``: ``w``
    alone; ``homogeneous_eigvals``: ``w`` as the pairs ``(w, 1)`` of shape (2, n). Left
    eigenvectors and the generalized problem are refused."""
    _no_generalized("eig", b)
    if left:
        raise _error("eig", "left=True (left eigenvectors) is not supported on traced "
                            "values", UnsupportedOpError)
    a = _lapack(a)
    _matrices("eig", a)
    w, v = _np_linalg.eig(a)
    w = _complex(w)
    if _flag("eig", "homogeneous_eigvals", homogeneous_eigvals):
        w = stack([w, ones_like(w)], axis=-2)
    return (w, v) if right else w


def eigvals(a, b=None, overwrite_a=False, check_finite=True, homogeneous_eigvals=False):
    """``scipy.linalg.eigvals``: :func:`eig`'s complex eigenvalues."""
    return eig(a, b, right=False, homogeneous_eigvals=homogeneous_eigvals)


def eigh(a, b=None, *, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         type=1, check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):  # noqa: A002
    """``scipy.linalg.eigh`` of a symmetric matrix read from its lower (``lower=False``:
    upper) triangle: eigenvalues ascending and eigenvectors with the signs SciPy's LAPACK
    ``driver`` gives (``'evr'`` by default; on CuPy, cuSOLVER's). ``subset_by_index=(lo,
    hi)`` keeps those pairs of the whole decomposition (SciPy's call for a subset may give an
    eigenvector the other sign). The generalized problem and ``subset_by_value`` (a number
    of pairs chosen by the values) are refused."""
    _no_generalized("eigh", b)
    if subset_by_value is not None:
        raise _error("eigh", "subset_by_value is not supported on traced values (the number "
                             "of eigenpairs would depend on the values); use "
                             "subset_by_index", UnsupportedOpError)
    if driver is None:
        driver = "evr"
    if driver not in _dec.EIGH_DRIVERS:
        raise _error("eigh", f"driver={driver!r} is not a driver of the standard problem "
                             f"(one of {_dec.EIGH_DRIVERS})")
    a = _lapack(a)
    _matrices("eigh", a)
    uplo = "L" if _flag("eigh", "lower", lower) else "U"
    w, v = _dec.eigh.bind(a, uplo=uplo, driver=driver)
    if subset_by_index is not None:
        n = _shape(a)[-1]
        lo, hi = (int(i) for i in subset_by_index)
        if not 0 <= lo <= hi < n:
            raise _error("eigh", f"subset_by_index={tuple(subset_by_index)} is not within "
                                 f"[0, {n - 1}]")
        w = getitem(w, (Ellipsis, slice(lo, hi + 1)))
        v = getitem(v, (Ellipsis, slice(None), slice(lo, hi + 1)))
    return w if _flag("eigh", "eigvals_only", eigvals_only) else (w, v)


def eigvalsh(a, b=None, *, lower=True, overwrite_a=False, overwrite_b=False, type=1,  # noqa: A002
             check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
    """``scipy.linalg.eigvalsh``: :func:`eigh`'s eigenvalues."""
    return eigh(a, b, lower=lower, eigvals_only=True, subset_by_index=subset_by_index,
                subset_by_value=subset_by_value, driver=driver)


# --------------------------------------------------------------------------- SVD, least squares
def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
    """``scipy.linalg.svd``: ``(u, s, vh)`` as ``np.linalg.svd`` (``full_matrices=True`` of
    a non-square matrix refused: the completing vectors have no derivative). The singular
    vectors are ``gesdd``'s; ``lapack_driver='gesvd'`` is refused unless
    ``compute_uv=False`` (its vectors' signs may differ)."""
    if lapack_driver not in ("gesdd", "gesvd"):
        raise _error("svd", f"lapack_driver must be 'gesdd' or 'gesvd', got "
                            f"{lapack_driver!r}")
    if lapack_driver == "gesvd" and compute_uv:
        raise _error("svd", "lapack_driver='gesvd' is not supported on traced values with "
                            "compute_uv=True (the singular vectors are gesdd's, whose signs "
                            "may differ); use the default 'gesdd'", UnsupportedOpError)
    a = _lapack(a)
    _matrices("svd", a, square=False)
    result = _np_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(result) if compute_uv else result


def svdvals(a, overwrite_a=False, check_finite=True):
    """``scipy.linalg.svdvals``: the singular values, descending."""
    a = _lapack(a)
    _matrices("svdvals", a, square=False)
    return _np_linalg.svdvals(a)


def _rank(s, cutoff):
    return sum_(astype(greater(s, cutoff), np.int64), axis=-1)


def pinv(a, *, atol=None, rtol=None, return_rank=False, check_finite=True):
    """``scipy.linalg.pinv``: singular values up to ``rtol`` times the largest (default
    ``max(m, n) * eps``) dropped; derivatives hold where the rank is locally constant. An
    absolute tolerance ``atol`` > 0 is refused."""
    if atol not in (None, 0, 0.0):
        raise _error("pinv", f"atol={atol!r} is not supported on traced values (an absolute "
                             "cutoff); use rtol", UnsupportedOpError)
    a = _lapack(a)
    _matrices("pinv", a, square=False)
    if rtol is None:
        rtol = max(_shape(a)[-2:]) * np.finfo(_dtype(a)).eps
    if rtol < 0:
        raise _error("pinv", f"rtol must be positive, got {rtol!r}")
    x = _dec.pinv.bind(a, rcond=float(rtol))
    if not return_rank:
        return x
    s = _np_linalg.svdvals(a)
    return x, _rank(s, multiply(amax(s, axis=-1), rtol))


def lstsq(a, b, cond=None, overwrite_a=False, overwrite_b=False, check_finite=True,
          lapack_driver=None):
    """``scipy.linalg.lstsq`` of one matrix: ``(x, residues, rank, s)`` with ``x = pinv(a)
    @ b`` (singular values up to ``cond`` times the largest dropped; default eps);
    ``residues`` (a number for a vector ``b``) where ``m > n``, assuming full column rank
    (the rank is data: it is returned, traced); ``s`` None with ``'gelsy'``, as SciPy's."""
    if lapack_driver not in (None, "gelsd", "gelsy", "gelss"):
        raise _error("lstsq", f'LAPACK driver "{lapack_driver}" is not found')
    a, b = _lapack(a, b)
    if len(_shape(a)) != 2:
        raise _error("lstsq", f"a must be 2-D, got shape {_shape(a)}")
    m, n = _shape(a)
    if len(_shape(b)) not in (1, 2) or _shape(b)[0] != m:
        raise _error("lstsq", f"a of shape {_shape(a)} and b of shape {_shape(b)} differ")
    if cond is None:
        cond = np.finfo(_dtype(a)).eps
    x = matmul(_dec.pinv.bind(a, rcond=float(cond)), b)
    s = _np_linalg.svdvals(a)
    rank = _rank(s, multiply(amax(s), cond))
    if m > n and lapack_driver != "gelsy":
        r = subtract(matmul(a, x), b)
        residues = sum_(multiply(r, r), axis=0)
    else:
        residues = np.zeros((0,), _dtype(a))
    return x, residues, rank, None if lapack_driver == "gelsy" else s


# --------------------------------------------------------------------------- matrix equations
def solve_sylvester(a, b, q):
    """``scipy.linalg.solve_sylvester``: ``x`` with ``a @ x + x @ b = q`` (``a`` (..., n, n),
    ``b`` (..., m, m), ``q`` (..., n, m)), differentiable in all three: ``dx`` solves the
    same equation with ``dq - da @ x - x @ db`` on the right.

    >>> import scipy.linalg
    >>> a, b = np.array([[2.0, 0.0], [0.0, 3.0]]), np.array([[1.0]])
    >>> dg.grad(lambda q: scipy.linalg.solve_sylvester(a, b, q)[1, 0])(np.ones((2, 1)))
    array([[0.  ],
           [0.25]])
    """
    a, b, q = _lapack(a, b, q)
    for name, x in (("a", a), ("b", b)):
        if len(_shape(x)) < 2 or _shape(x)[-1] != _shape(x)[-2]:
            raise _error("solve_sylvester", f"{name} must be square matrices (..., k, k), got "
                                            f"shape {_shape(x)}")
    return _mf.solve_sylvester.bind(a, b, q)


def sqrtm(A, disp=True, blocksize=64):
    """``scipy.linalg.sqrtm``: the principal square root ``s`` (``s @ s = A``), real: a
    matrix with a negative eigenvalue, whose root SciPy gives complex, raises. ``ds`` solves
    ``s @ ds + ds @ s = dA``. ``blocksize`` has no effect; ``disp=False`` (SciPy's error
    estimate) is refused.

    >>> import scipy.linalg
    >>> dg.grad(lambda a: np.trace(scipy.linalg.sqrtm(a)))(np.array([[4.0, 0.0], [0.0, 9.0]]))
    array([[0.25      , 0.        ],
           [0.        , 0.16666667]])
    """
    if disp is not True:
        raise _error("sqrtm", "disp=False (the error estimate) is not supported on traced "
                              "values", UnsupportedOpError)
    a = _lapack(A)
    _matrices("sqrtm", a)
    return _mf.sqrtm.bind(a)


def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    """``scipy.linalg.solve_banded``: ``x`` with ``A @ x = b`` for the band matrix ``A``
    stored in ``ab`` (``(l + u + 1, n)``, LAPACK's layout: ``A[i, j] = ab[u + i - j, j]``;
    the corners of ``ab`` outside the band are not read, as by SciPy), differentiable in
    ``ab`` and ``b``. ``A`` is formed densely and solved by ``solve``: O(n^3) work, not the
    banded solver's O(n (l + u)^2).

    >>> import scipy.linalg
    >>> ab = np.array([[0.0, 1.0, 1.0], [4.0, 4.0, 4.0], [1.0, 1.0, 0.0]])  # (l, u) = (1, 1)
    >>> dg.jit(lambda b: scipy.linalg.solve_banded((1, 1), ab, b))(np.array([5.0, 6.0, 5.0]))
    array([1., 1., 1.])
    """
    lower, upper = _bandwidths(l_and_u)
    ab, b = _lapack(ab, b)
    if len(_shape(ab)) != 2 or _shape(ab)[0] != lower + upper + 1:
        raise _error("solve_banded", f"ab must be of shape (l + u + 1, n) = ({lower + upper + 1},"
                                     f" n) for (l, u) = ({lower}, {upper}), got {_shape(ab)}")
    n = _shape(ab)[1]
    if len(_shape(b)) not in (1, 2) or _shape(b)[0] != n:
        raise _error("solve_banded", f"b must be of shape ({n},) or ({n}, k), got {_shape(b)}")
    i, j = np.indices((n, n))
    row = upper + i - j
    inside = (row >= 0) & (row <= lower + upper)
    dense = where(inside, getitem(ab, (np.clip(row, 0, lower + upper), j)), 0.0)
    return _lin.solve.bind(dense, b)


def _bandwidths(l_and_u) -> tuple[int, int]:
    ok = (isinstance(l_and_u, (tuple, list)) and len(l_and_u) == 2
          and all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 0
                  for k in l_and_u))
    if not ok:
        raise _error("solve_banded", f"l_and_u must be a pair of non-negative ints (the "
                                     f"numbers of lower and upper diagonals), got {l_and_u!r}")
    return int(l_and_u[0]), int(l_and_u[1])
