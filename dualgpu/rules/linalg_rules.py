"""What the dense linear-algebra blocks (:mod:`dualgpu.ops.linalg`,
:mod:`dualgpu.ops.decompositions`) write their declarations and rules with: shape checks,
one-matrix-at-a-time evaluation of SciPy's functions, and the matrix algebra of their
derivatives (transposes, products, diagonals, triangles) in registry ops."""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.ir import Aval
from ..errors import DualgpuError

# the ops this module's helpers equip belong to the block that calls them (op.sites)
RULE_KIT = True


def check_square(a: Aval, op: str) -> None:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise DualgpuError(f"linalg.{op}: expected square matrices (..., n, n), got "
                           f"{a.str_short()}")


def broadcast_batch(avals, op: str) -> tuple:
    try:
        return tuple(np.broadcast_shapes(*(tuple(a.shape[:-2]) for a in avals)))
    except ValueError:
        raise DualgpuError(f"linalg.{op}: batch shapes of "
                           f"{' and '.join(a.str_short() for a in avals)} do not broadcast"
                           ) from None


def per_matrix(xp, fn, out_shapes, out_dtypes, *arrays):
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


def real_only(a: Aval, op: str) -> None:
    if a.dtype.kind == "c":
        raise DualgpuError(f"linalg.{op} of complex matrices ({a.str_short()}) is not "
                           "supported on traced values")


def mT(x):
    return lax.swapaxes(x, -1, -2)


def lower_mask(n, k=0):
    import numpy as np

    return np.tri(n, n, k, dtype=bool)


def sym_from_lower(t):
    """The symmetric matrix whose lower triangle is that of t (what LAPACK reads)."""
    n = lax.shape_of(t)[-1]
    low = lax.where(lower_mask(n), t, 0.0)
    strict = lax.where(lower_mask(n, -1), t, 0.0)
    return lax.add(low, mT(strict))


def mm(*ms):
    """The product of matrices ``ms``, left to right."""
    from ..ops.products import matmul  # (the kits import no op family when loading)
    out = ms[0]
    for m in ms[1:]:
        out = matmul.bind(out, m)
    return out


def diag_embed(d):
    n = lax.shape_of(d)[-1]
    return lax.multiply(lax.expand_dims(d, -1), np.eye(n, dtype=lax.dtype_of(d)))


def diag_part(m):
    return lax.diagonal(m, 0, -2, -1)


def scale_cols(m, s):
    return lax.multiply(m, lax.expand_dims(s, -2))


def scale_rows(m, s):
    return lax.multiply(m, lax.expand_dims(s, -1))


def eye_like(n, x):
    return np.eye(n, dtype=lax.dtype_of(x))
