"""Sparse x dense products: ``spmm`` (sparse @ dense) and its transpose partner ``sddmm``
(the dense-dense product sampled at the sparse pattern).

A sparse matrix enters a graph as its values ``data`` (an ordinary dense 1-D array, which
can be differentiated) and its structure: two constant index arrays ``ind``/``ptr`` plus the
static params ``fmt`` ("csr", "csc" or "coo") and ``shape``. For CSR ``ind, ptr`` are
``indices, indptr``; for CSC the same of the column-compressed form; for COO they are
``row, col``. The matrix is never densified: the kernels are the backend's own sparse
products (``scipy.sparse`` on the CPU, cuSPARSE through ``cupyx.scipy.sparse`` on the GPU).

* ``spmm(data, x, ind, ptr; fmt, shape, transpose)`` is ``A @ x`` (or ``A.T @ x``) for ``x``
  of shape ``(k,)`` or ``(k, p)``. It is linear in ``data`` and in ``x``.
* ``sddmm(g, x, ind, ptr, rows, cols; fmt, shape, transpose)`` is, for each stored entry
  ``i`` at ``(rows[i], cols[i])``, ``sum_k g[rows[i], k] * x[cols[i], k]`` (rows and cols
  swapped when ``transpose``): the cotangent of ``data`` in ``spmm``. Rows are gathered;
  the dense product ``g @ x.T`` is never formed.

The two are each other's transposes, so every derivative of any order stays sparse (the
rules follow each declaration below; the GPU kernels in :mod:`dualgpu.backends.kernels`).

Example::

    >>> import numpy as np, scipy.sparse as sp, dualgpu as dg
    >>> A = sp.random(5, 4, density=0.5, format="csr", random_state=0)
    >>> dg.grad(lambda x: np.sum(np.tanh(x @ A.T) ** 2))(np.ones((3, 4))).shape
    (3, 4)
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from .. import lax
from ..backends import array_backend, backend_for_xp, backend_of, kernels
from ..base.cache import register_clear_hook
from ..core.dtypes import promote
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import defprim, defrules, refuse_export
from ..core.trace import Tracer
from ..errors import DualgpuError, UnsupportedSparseFormatError
from ..rules import batching_rules as batching
from ..rules import laplacian_rules
from ..rules import sparsity_rules as sparsity
from ..rules import taylor_rules as taylor_rules
from ..rules.common import defmultilinear, wants_cotangent

FORMATS = ("csr", "csc", "coo")
_csr_cache: dict = {}  # pattern -> its CSR form (GPU kernels), bounded


def make_matrix(xp, data, ind, ptr, fmt: str, shape: tuple):
    """The backend sparse matrix (scipy.sparse or cupyx.scipy.sparse) for a structure."""
    sparse = backend_for_xp(xp).sparse
    if fmt == "csr":
        return sparse.csr_matrix((data, ind, ptr), shape=shape)
    if fmt == "csc":
        return sparse.csc_matrix((data, ind, ptr), shape=shape)
    if fmt == "coo":
        return sparse.coo_matrix((data, (ind, ptr)), shape=shape)
    raise UnsupportedSparseFormatError(
        f"sparse format {fmt!r} is not supported; use one of {', '.join(FORMATS)} "
        "(convert with A.tocsr())")


def _out_rows(shape, transpose):
    return shape[1] if transpose else shape[0]


def _in_rows(shape, transpose):
    return shape[0] if transpose else shape[1]


# --------------------------------------------------------------------------- spmm
def _spmm_shape(avals, fmt, shape, transpose):
    data, x = avals[0], avals[1]
    if x.ndim not in (1, 2):
        raise DualgpuError(f"spmm: the dense operand must be 1-D or 2-D, got {x.str_short()}")
    if x.shape[0] != _in_rows(shape, transpose):
        op = "A.T" if transpose else "A"
        raise DualgpuError(f"spmm: {op} has shape {shape[::-1] if transpose else shape} but "
                           f"the dense operand has shape {x.shape}")
    out = (_out_rows(shape, transpose),) + tuple(x.shape[1:])
    return Aval(out, promote([data, x]))


def _spmm_impl(xp, data, x, ind, ptr, fmt, shape, transpose):
    if backend_for_xp(xp).runs_fused_kernels and x.ndim == 2 and \
            _kernel_dtype(data, x) is not None:  # our CUDA kernels
        return _spmm_gpu(xp, data, x, ind, ptr, fmt, shape, transpose)
    a = make_matrix(xp, data, ind, ptr, fmt, shape)
    if transpose:
        a = a.T
    return xp.asarray(a @ x)


def _kernel_dtype(data, x):
    dt = np.result_type(data.dtype, x.dtype)
    return dt if dt in (np.float32, np.float64) else None


def csr_structure(xp, ind, ptr, fmt, shape, transpose):
    """(perm, indices, indptr) of op(A) in CSR form; ``data[perm]`` are its values (perm is
    None when op(A) is already CSR). Computed once per pattern and cached."""
    if (fmt, transpose) in (("csr", False), ("csc", True)):
        return None, ind, ptr
    key = (id(ind), id(ptr), fmt, tuple(shape), transpose)
    hit = _csr_cache.get(key)
    if hit is not None:
        return hit[2:]
    rows, cols = coo_indices(ind, ptr, fmt, shape)
    nrows = shape[1] if transpose else shape[0]
    ncols = shape[0] if transpose else shape[1]
    if transpose:
        rows, cols = cols, rows
    order = xp.argsort(rows.astype(xp.int64) * ncols + cols, kind="stable")
    indices = cols[order].astype(ind.dtype)
    indptr = xp.searchsorted(rows[order], xp.arange(nrows + 1), side="left").astype(ind.dtype)
    if len(_csr_cache) > 32:
        _csr_cache.pop(next(iter(_csr_cache)))
    _csr_cache[key] = (ind, ptr, order, indices, indptr)  # keeps ind/ptr alive: ids stay valid
    return order, indices, indptr


def _spmm_gpu(xp, data, x, ind, ptr, fmt, shape, transpose):
    dtype = _kernel_dtype(data, x)
    perm, indices, indptr = csr_structure(xp, ind, ptr, fmt, shape, transpose)
    values = (data if perm is None else data[perm]).astype(dtype, copy=False)
    xc = xp.ascontiguousarray(x, dtype=dtype)
    nrows, k = (shape[1] if transpose else shape[0]), int(x.shape[1])
    out = xp.empty((nrows, k), dtype=dtype)
    if nrows == 0 or k == 0:
        return out
    threads = 256
    blocks = (nrows * 32 + threads - 1) // threads
    kernels.sparse_kernel(xp, "spmm", dtype, indices.dtype)(
        (blocks,), (threads,), (values, indices, indptr, xc, out, np.int64(nrows), np.int32(k)))
    return out


def _sparse_py(name):
    """The generated-source template shared by the sparse primitives."""
    def py(names, params):
        return (f"ops.{name}({', '.join(names)}, fmt={params['fmt']!r}, "
                f"shape={params['shape']}, transpose={params['transpose']})")

    return py


spmm = defprim("spmm", _spmm_impl, _spmm_shape, kind=Flag.LIBRARY, py=_sparse_py("spmm"),
               doc="A @ x (or A.T @ x) for a sparse A given by (data, ind, ptr, fmt, shape).")


# --------------------------------------------------------------------------- sddmm
def coo_indices(ind, ptr, fmt, shape):
    """Row and column of every stored entry, in data order (concrete arrays)."""
    if fmt == "coo":
        return ind, ptr
    xp = array_backend(ptr).xp
    nnz = int(ind.shape[0])
    # the compressed index of entry i is the last j with ptr[j] <= i
    expanded = (xp.searchsorted(ptr, xp.arange(nnz, dtype=ptr.dtype), side="right") - 1)
    expanded = expanded.astype(ind.dtype)
    return (expanded, ind) if fmt == "csr" else (ind, expanded)


def _sddmm_shape(avals, fmt, shape, transpose):
    g, x, ind = avals[0], avals[1], avals[2]
    if g.ndim != x.ndim or g.shape[1:] != x.shape[1:]:
        raise DualgpuError(f"sddmm: operands {g.str_short()} and {x.str_short()} differ")
    return Aval((ind.shape[0],), promote([g, x]))


def _sddmm_gpu(xp, g, x, gi, xi):
    dtype = _kernel_dtype(g, x)
    kern = kernels.sparse_kernel(xp, "sddmm", dtype, gi.dtype)
    nnz, k = int(gi.shape[0]), int(g.shape[1])
    out = xp.empty((nnz,), dtype=dtype)
    if nnz == 0:
        return out
    threads = 256
    kern(((nnz * 32 + threads - 1) // threads,), (threads,),
         (xp.ascontiguousarray(g, dtype=dtype), xp.ascontiguousarray(x, dtype=dtype), gi,
          xi.astype(gi.dtype, copy=False), out, np.int64(nnz), np.int32(k)))
    return out


def _sddmm_impl(xp, g, x, ind, ptr, rows, cols, fmt, shape, transpose):
    gi, xi = (cols, rows) if transpose else (rows, cols)
    if g.ndim == 1:
        return g[gi] * x[xi]
    if backend_for_xp(xp).runs_fused_kernels and _kernel_dtype(g, x) is not None:
        return _sddmm_gpu(xp, g, x, gi, xi)
    out = xp.empty((gi.shape[0],), dtype=xp.result_type(g, x))
    step = 1 << 16  # bound the gathered temporaries: nnz x p in blocks of rows
    for lo in range(0, gi.shape[0], step):
        hi = lo + step
        out[lo:hi] = (g[gi[lo:hi]] * x[xi[lo:hi]]).sum(axis=1)
    return out


sddmm = defprim("sddmm", _sddmm_impl, _sddmm_shape, kind=Flag.LIBRARY, py=_sparse_py("sddmm"),
                doc="(g @ x.T) sampled at the stored entries of a sparse pattern.")
for _prim in (spmm, sddmm):
    refuse_export(_prim, "sparse products cannot be exported yet")


def _spmm_vjp(g, primals, ans, fmt, shape, transpose):
    data, x, ind, ptr = primals
    d_bar = x_bar = None
    if wants_cotangent(x):
        x_bar = spmm.bind(data, g, ind, ptr, fmt=fmt, shape=shape, transpose=not transpose)
    if wants_cotangent(data):
        rows, cols = coo_indices(ind, ptr, fmt, shape)
        d_bar = sddmm.bind(g, x, ind, ptr, rows, cols, fmt=fmt, shape=shape,
                           transpose=transpose)
    return d_bar, x_bar, None, None


def _sddmm_vjp(d_bar, primals, ans, fmt, shape, transpose):
    g, x, ind, ptr, rows, cols = primals
    g_bar = x_bar = None
    if wants_cotangent(g):
        g_bar = spmm.bind(d_bar, x, ind, ptr, fmt=fmt, shape=shape, transpose=transpose)
    if wants_cotangent(x):
        x_bar = spmm.bind(d_bar, g, ind, ptr, fmt=fmt, shape=shape, transpose=not transpose)
    return g_bar, x_bar, None, None, None, None


defmultilinear(spmm, _spmm_vjp)
defmultilinear(sddmm, _sddmm_vjp)

# --------------------------------------------------------------------------- batching (vmap)
def _concrete(*xs) -> bool:
    return not any(isinstance(x, Tracer) for x in xs)


def _block_pattern(rows, cols, shape, size, stack_rows: bool, stack_cols: bool):
    """COO indices of ``size`` copies of a pattern: stacked down (rows offset), across
    (cols offset) or on the diagonal (both)."""
    xp = backend_of((rows,)).xp
    k = xp.arange(size, dtype=np.int64)[:, None]
    r = rows.astype(np.int64)[None, :] + (k * shape[0] if stack_rows else 0)
    c = cols.astype(np.int64)[None, :] + (k * shape[1] if stack_cols else 0)
    r = xp.broadcast_to(r, (size, rows.shape[0])).reshape(-1)
    c = xp.broadcast_to(c, (size, cols.shape[0])).reshape(-1)
    return xp.ascontiguousarray(r), xp.ascontiguousarray(c)


def _spmm_vmap(eqn, args, batched, size):
    data, x, ind, ptr = args
    p = eqn.params
    if any(batched[2:]) or not _concrete(ind, ptr):
        return batching.loop_rule(eqn, args, batched, size)
    if not batched[0]:  # one matrix, many dense operands: one product with B*p columns
        xt = lax.moveaxis(x, 0, -1) if len(x.shape) == 2 else lax.transpose(x, (1, 0, 2))
        k = xt.shape[0]
        out = spmm.bind(data, lax.reshape(xt, (k, -1)), ind, ptr, **p)
        out = lax.reshape(out, (out.shape[0],) + tuple(xt.shape[1:]))
        return batching.one(lax.moveaxis(out, -1, 0) if len(x.shape) == 2
                    else lax.transpose(out, (1, 0, 2)))
    # many matrices of one pattern: one sparse matrix of size blocks (COO)
    rows, cols = coo_indices(ind, ptr, p["fmt"], p["shape"])
    R, C = p["shape"]
    flat = lax.reshape(data, (-1,))
    if not batched[1]:
        # op(A_i) stacked down: A_i stacked down, or A_i side by side when transposed
        down = not p["transpose"]
        r, c = _block_pattern(rows, cols, (R, C), size, down, not down)
        shape = (size * R, C) if down else (R, size * C)
        out = spmm.bind(flat, x, r, c, fmt="coo", shape=shape, transpose=p["transpose"])
    else:
        r, c = _block_pattern(rows, cols, (R, C), size, True, True)
        xs = lax.reshape(x, (-1,) + tuple(x.shape[2:]))
        out = spmm.bind(flat, xs, r, c, fmt="coo", shape=(size * R, size * C),
                            transpose=p["transpose"])
    return batching.one(batching.drop_to(out, size, eqn))


def _sddmm_vmap(eqn, args, batched, size):
    g, x, ind, ptr, rows, cols = args
    p = eqn.params
    if any(batched[2:]) or not _concrete(ind, ptr, rows, cols):
        return batching.loop_rule(eqn, args, batched, size)
    R, C = p["shape"]
    r, c = _block_pattern(rows, cols, (R, C), size, True, True)
    gs, xs = (a if b else batching.batched(a, size) for a, b in zip((g, x), batched))
    gs = lax.reshape(gs, (-1,) + tuple(gs.shape[2:]))
    xs = lax.reshape(xs, (-1,) + tuple(xs.shape[2:]))
    out = sddmm.bind(gs, xs, r, c, r, c, fmt="coo", shape=(size * R, size * C),
                         transpose=p["transpose"])
    return batching.one(lax.reshape(out, (size, -1)))


defrules(spmm, vmap=_spmm_vmap)
defrules(sddmm, vmap=_sddmm_vmap)

# ------------------------------------------------------------------ jets (forward Laplacian)
for _prim in (spmm, sddmm):  # bilinear
    defrules(_prim, laplacian=laplacian_rules.multilinear_rule)
    defrules(_prim, taylor=taylor_rules.multilinear_rule)  # Taylor mode: Leibniz sums


# ------------------------------------------------------------------ sparsity patterns
def _terms(first, second, width):
    """Flat indices of the terms ``(entry, k)``: ``first * width + k`` and likewise."""
    k = np.arange(width, dtype=np.int64)
    return ((first.astype(np.int64)[:, None] * width + k).ravel(),
            (second.astype(np.int64)[:, None] * width + k).ravel())


def _spmm_sparsity(eqn, deps, ctx):
    # out[r_e, q] += data[e] * x[c_e, q] over the stored entries e: by the sparse pattern
    data, x, ind, ptr = ctx.values[:4]
    if ind is None or ptr is None:
        return sparsity.dense_block(eqn, deps, ctx)
    p = eqn.params
    rows, cols = (np.asarray(i) for i in coo_indices(ind, ptr, p["fmt"], p["shape"]))
    if p["transpose"]:
        rows, cols = cols, rows
    width = int(eqn.inputs[1].shape[1]) if eqn.inputs[1].ndim == 2 else 1
    out_index, x_index = _terms(rows, cols, width)
    data_index = np.repeat(np.arange(len(rows), dtype=np.int64), width)
    out_size = int(np.prod(eqn.outs[0].shape, dtype=np.int64))
    return sparsity.multilinear(ctx, out_size, deps[:2], [data, x], out_index,
                                [data_index, x_index])


def _sddmm_sparsity(eqn, deps, ctx):
    # out[e] = sum_k g[gi_e, k] * x[xi_e, k] at the stored entries e
    g, x, ind, ptr, rows, cols = ctx.values
    if rows is None or cols is None:
        return sparsity.dense_block(eqn, deps, ctx)
    gi, xi = (cols, rows) if eqn.params["transpose"] else (rows, cols)
    width = int(eqn.inputs[0].shape[1]) if eqn.inputs[0].ndim == 2 else 1
    g_index, x_index = _terms(np.asarray(gi), np.asarray(xi), width)
    out_index = np.repeat(np.arange(len(gi), dtype=np.int64), width)
    return sparsity.multilinear(ctx, len(gi), deps[:2], [g, x], out_index, [g_index, x_index])


defrules(spmm, sparsity=_spmm_sparsity)
defrules(sddmm, sparsity=_sddmm_sparsity)


# --------------------------------------------------------------------------- spsolve
# x = op(A)^-1 b for a square sparse A (op(A) = A, or A.T when ``transpose``): linear in b.
# dx = op(A)^-1 (db - op(dA) x); the cotangent of b is op(A)^-T g, that of A's values the
# sampled outer product -b_bar x^T at the stored entries (an sddmm).
def _solve_dtype(dt) -> np.dtype:
    """The type the solve computes in (SuperLU's and cuSOLVER's) for the operands' common
    type ``dt``: float64 for integers and booleans, float32 for float16 (as SciPy's)."""
    dt = np.dtype(dt)
    if dt.kind in "biu":
        return np.dtype(np.float64)
    return np.dtype(np.float32) if dt == np.float16 else dt


def _spsolve_shape(avals, fmt, shape, transpose):
    data, b = avals[0], avals[1]
    if shape[0] != shape[1]:
        raise DualgpuError(f"spsolve: the matrix A must be square, got shape {shape}")
    if b.ndim not in (1, 2) or b.shape[0] != shape[0]:
        raise DualgpuError(f"spsolve: the right-hand side b must have shape ({shape[0]},) or "
                           f"({shape[0]}, k) for A of shape {shape}, got {b.str_short()}")
    return Aval(tuple(b.shape), _solve_dtype(promote([data, b])))


def _spsolve_impl(xp, data, b, ind, ptr, fmt, shape, transpose):
    dtype = _solve_dtype(np.result_type(data.dtype, b.dtype))
    a = make_matrix(xp, data.astype(dtype, copy=False), ind, ptr, fmt, shape)
    b = b.astype(dtype, copy=False)
    if shape[0] == 0 or (b.ndim == 2 and b.shape[1] == 0):
        return xp.zeros(b.shape, dtype=dtype)
    backend = backend_for_xp(xp)
    if backend.on_device:  # cupyx's spsolve (cuSOLVER), one right-hand side at a time
        a = (a.T if transpose else a).tocsr()
        solve = backend.sparse_linalg.spsolve
        x = solve(a, b) if b.ndim == 1 else \
            xp.stack([solve(a, b[:, j]) for j in range(b.shape[1])], axis=1)
        _check_solution(xp, x, a.data, b, transpose)
        return x
    lu = _factorization(backend, a, ind, ptr, fmt, shape, transpose)
    return lu.solve(np.ascontiguousarray(b), trans="T" if transpose else "N")


def _check_solution(xp, x, values, b, transpose):
    """cupyx's solve does not report a singular matrix (SuperLU's factorization does): its
    solution is then not finite. Blamed on A only when A's values and b are finite (NaN in,
    NaN out, as SciPy's). Reads one flag back from the device."""
    if not bool(xp.isfinite(x).all()) and bool(xp.isfinite(b).all()) and \
            bool(xp.isfinite(values).all()):
        raise DualgpuError(f"spsolve: the matrix A{'.T' if transpose else ''} is singular "
                           "(the solve gave non-finite values for a finite right-hand side)")


# the last SuperLU factorization: a program's solves with one matrix (the value's, the VJP's
# transposed one, an HVP's) factor it once. Kept while the values and the index arrays equal
# copies of the factored ones (compared: O(nnz), far below the factorization), so a matrix
# changed in place -- its values, or its pattern under the same values -- is factored
# again; dg.clear_cache() drops it
_last_lu: list = []
register_clear_hook(_last_lu.clear)


def _factorization(backend, a, ind, ptr, fmt, shape, transpose):
    for key, arrays, lu in _last_lu:
        if key == (fmt, shape, a.dtype) and all(
                known.dtype == now.dtype and np.array_equal(known, now)
                for known, now in zip(arrays, (a.data, ind, ptr))):
            return lu
    arrays = (a.data.copy(), np.array(ind, copy=True), np.array(ptr, copy=True))
    try:
        lu = backend.sparse_linalg.splu(a.tocsc())
    except RuntimeError as e:  # SuperLU: "Factor is exactly singular"
        raise DualgpuError(f"spsolve: the matrix A{'.T' if transpose else ''} is singular "
                           f"({e})") from None
    _last_lu[:] = [((fmt, shape, a.dtype), arrays, lu)]
    return lu


spsolve = defprim("spsolve", _spsolve_impl, _spsolve_shape, kind=Flag.LIBRARY,
                  py=_sparse_py("spsolve"),
                  doc="op(A)^-1 b for a square sparse A given by (data, ind, ptr, fmt, shape); "
                      "op(A) = A.T when transpose.")
refuse_export(spsolve, "sparse solves cannot be exported yet")


def _spsolve_jvp(primals, tangents, fmt, shape, transpose):
    data, b, ind, ptr = primals
    d_dot, b_dot = tangents[:2]
    params = dict(fmt=fmt, shape=shape, transpose=transpose)
    ans = spsolve.bind(data, b, ind, ptr, **params)
    rhs = b_dot
    if d_dot is not None:
        term = spmm.bind(d_dot, ans, ind, ptr, **params)
        rhs = lax.negative(term) if rhs is None else lax.subtract(rhs, term)
    return ans, None if rhs is None else spsolve.bind(data, rhs, ind, ptr, **params)


def _spsolve_vjp(g, primals, ans, fmt, shape, transpose):
    data, b, ind, ptr = primals
    b_bar = spsolve.bind(data, g, ind, ptr, fmt=fmt, shape=shape, transpose=not transpose)
    d_bar = None
    if wants_cotangent(data):
        rows, cols = coo_indices(ind, ptr, fmt, shape)
        d_bar = lax.negative(sddmm.bind(b_bar, ans, ind, ptr, rows, cols, fmt=fmt,
                                        shape=shape, transpose=transpose))
    return d_bar, b_bar if wants_cotangent(b) else None, None, None


def _as_columns(x):
    """A batched ``(B, n)`` or ``(B, n, k)`` operand as ``n`` rows of ``B`` (``B * k``)
    columns, and the function that puts a result of that form back."""
    if len(x.shape) == 2:
        return lax.moveaxis(x, 0, -1), lambda out: lax.moveaxis(out, -1, 0)
    size, n, k = x.shape
    wide = lax.reshape(lax.transpose(x, (1, 0, 2)), (n, size * k))
    return wide, lambda out: lax.transpose(lax.reshape(out, (out.shape[0], size, k)), (1, 0, 2))


def _spsolve_vmap(eqn, args, batched, size):
    data, b, ind, ptr = args
    p = eqn.params
    if any(batched[2:]) or not _concrete(ind, ptr):
        return batching.loop_rule(eqn, args, batched, size)
    if not batched[0]:  # one matrix, many right-hand sides: one solve with B * k columns
        wide, back = _as_columns(b)
        return batching.one(back(spsolve.bind(data, wide, ind, ptr, **p)))
    # a matrix per example, one pattern: one block-diagonal solve (COO)
    n = p["shape"][0]
    rows, cols = coo_indices(ind, ptr, p["fmt"], p["shape"])
    r, c = _block_pattern(rows, cols, (n, n), size, True, True)
    bs = b if batched[1] else batching.batched(b, size)
    bs = lax.reshape(bs, (size * n,) + tuple(bs.shape[2:]))
    out = spsolve.bind(lax.reshape(data, (-1,)), bs, r, c, fmt="coo",
                       shape=(size * n, size * n), transpose=p["transpose"])
    return batching.one(batching.drop_to(out, size, eqn))


def _spsolve_sparsity(eqn, deps, ctx):
    """Each entry of x reads b and A's values in its connected block of A (rows and columns
    joined by the stored entries: A is block diagonal after permuting its rows and columns,
    and so is its inverse), densely; A's values interact with themselves and with b."""
    ind, ptr = ctx.values[2:4]
    if ind is None or ptr is None:
        return sparsity.dense_block(eqn, deps, ctx)
    p = eqn.params
    n = p["shape"][0]
    rows, cols = (np.asarray(i, dtype=np.int64) for i in coo_indices(ind, ptr, p["fmt"],
                                                                     p["shape"]))
    joined = sp.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols + n)),
                           shape=(2 * n, 2 * n))
    count, label = csgraph.connected_components(joined, directed=False)
    b_block, x_block = (label[n:], label[:n]) if p["transpose"] else (label[:n], label[n:])
    width = int(eqn.inputs[1].shape[1]) if eqn.inputs[1].ndim == 2 else 1
    k = np.arange(width, dtype=np.int64)

    def groups(block):  # (block, column) of each entry of an (n, width) array
        return (block.astype(np.int64)[:, None] * width + k).ravel()

    data_dep = None
    if deps[0] is not None:  # entry e reaches every column of its block
        reads = sp.csr_matrix((np.ones(len(rows) * width, dtype=np.float32),
                               (groups(label[rows]), np.repeat(np.arange(len(rows)), width))),
                              shape=(count * width, len(rows)))
        data_dep = sparsity.combine(reads, deps[0])
    b_dep = None if deps[1] is None else \
        sparsity.combine(sparsity.group_matrix(groups(b_block), count * width), deps[1])
    per_block = sparsity.union([data_dep, b_dep], ctx.n)
    if per_block is None:
        return None
    ctx.interact(data_dep, per_block)  # nonlinear in A's values, linear in b
    x_groups = groups(x_block)
    sparsity.check_count(int(np.diff(per_block.indptr)[x_groups].sum()),
                         "the pattern of spsolve's solution (dense within each block of A)")
    return sparsity.gather(per_block, x_groups)


defrules(spsolve, jvp=_spsolve_jvp, vjp=_spsolve_vjp, vmap=_spsolve_vmap,
         sparsity=_spsolve_sparsity)
