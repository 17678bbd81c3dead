"""``scipy.linalg`` (and ``cupyx.scipy.linalg``) on traced values: NumPy's functions of
the same names (:mod:`dualgpu.frontend.numpy.linalg`), with NumPy's arguments."""
from ..numpy.linalg import (
    cholesky,
    det,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    inv,
    lstsq,
    matrix_power,
    norm,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
)

__all__ = ["cholesky", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq",
           "matrix_power", "norm", "pinv", "qr", "slogdet", "solve", "svd", "svdvals"]
