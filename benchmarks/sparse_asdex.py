"""The asdex columns of the sparse benchmark (issue 39) and its Brusselator Jacobian.

asdex (automatic sparse differentiation for JAX: detection from the jaxpr, coloring,
compressed JVPs/VJPs/HVPs) is the peer. It needs Python >= 3.12, JAX and numba; the GPU
machine has no network, so its wheels travel in the git-ignored ``.wheels/`` of the checkout
(downloaded on a machine with one; ``numba`` and ``llvmlite`` are binary, for CPython 3.12
on manylinux x86_64)::

    pip download --no-deps --python-version 3.12 --only-binary=:all: asdex -d .wheels/
    pip download --no-deps --python-version 3.12 --implementation cp --only-binary=:all: \\
        --platform manylinux_2_28_x86_64 "numba>=0.63" llvmlite -d .wheels/

and are installed from there at the first asdex row (``pip install --no-deps --target``
into ``benchmarks/peer/asdex``, also git-ignored). Without asdex, its Python or its wheels
the asdex rows are skipped rows that say why.

Rows per problem: ``asdex detection + coloring`` (wall time of ``asdex.hessian_coloring`` /
``jacobian_coloring``: the first call's fixed cost, against dualgpu's ``first call``; asdex
warmed once per process on a tiny problem, so that numba's compilation is not in it) and
``asdex`` (``jax.jit`` of ``hessian_from_coloring`` / ``jacobian_from_coloring``, BCOO out,
per call), each with its colors; ``x dualgpu`` is the ratio to dualgpu's cached call.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np
import scipy.sparse as sp

from .common import Context, Skip, import_from_wheels, import_jax, jax_clock, measure
from .report import Row
from .sparse_derivatives import NAME, sparse_err, timed_once

ASDEX_WHEELS = ("asdex-", "numba-", "llvmlite-")   # asdex first: the one that must be there
SIDES_BRUSSELATOR = (256, 32)          # n = 2 side^2: 131,072 and 2,048
TINY_SIDES_BRUSSELATOR = (4,)


# ------------------------------------------------------------------------------ asdex
_WARM: list = []


def import_asdex():
    """asdex, installed from ``.wheels/`` on first use when it is not importable, and warmed
    once per process (its numba kernels compile at their first use: seconds, which dualgpu's
    first call does not pay either, its modules being imported)."""
    asdex = _import_asdex()
    if not _WARM:
        import jax.numpy as jnp

        asdex.jacobian_coloring(lambda x: x[1:] * x[:-1], jnp.ones(6))
        asdex.hessian_coloring(lambda x: jnp.sum(x[1:] * x[:-1]), jnp.ones(6))
        _WARM.append(True)
    return asdex


def _import_asdex():
    jax = import_jax()
    jax.config.update("jax_enable_x64", True)
    return import_from_wheels("asdex", ASDEX_WHEELS, site="asdex", python=(3, 12),
                              how="benchmarks/sparse_asdex.py says how to download it")


def _jax_put(ctx: Context, a):
    jax = import_jax()
    return jax.device_put(np.asarray(a), jax.devices("gpu" if ctx.gpu else "cpu")[0])


def bcoo_as_scipy(m) -> sp.csr_matrix:
    """A JAX BCOO matrix (asdex's output) as SciPy CSR, on the host."""
    indices = np.asarray(m.indices)
    return sp.csr_matrix((np.asarray(m.data), (indices[:, 0], indices[:, 1])), shape=m.shape)


def asdex_rows(ctx: Context, name: str, case: str, make_f, x_host: np.ndarray,
               ref: sp.csr_matrix, hessian: bool, dualgpu_row: Row | None) -> list[Row]:
    """asdex's detection + coloring (wall) and its jitted cached evaluation on one problem."""
    rows = []
    state: dict = {}

    def detect_and_color():
        asdex = import_asdex()
        jax = import_jax()
        f = make_f(jax.numpy)
        x = _jax_put(ctx, x_host)
        color = asdex.hessian_coloring if hessian else asdex.jacobian_coloring
        t0 = time.perf_counter()
        coloring = color(f, x)
        seconds = time.perf_counter() - t0
        state.update(f=f, coloring=coloring)
        pattern = coloring.sparsity
        got = sp.csr_matrix((np.ones(len(pattern.rows), dtype=bool),
                             (np.asarray(pattern.rows), np.asarray(pattern.cols))),
                            shape=pattern.shape)
        missed = (ref != 0).astype(bool) > got
        return seconds, float(missed.nnz)   # entries the pattern misses: 0

    rows.append(timed_once(ctx, case, "asdex detection + coloring",
                           "first call (wall)", detect_and_color))
    if "coloring" in state:
        rows[-1].extra["colors"] = int(state["coloring"].num_colors)

    def build():
        if "coloring" not in state:
            raise Skip("no asdex coloring (the row above says why)")
        asdex = import_asdex()
        jax = import_jax()
        evaluate = asdex.hessian_from_coloring if hessian else asdex.jacobian_from_coloring
        return jax.jit(evaluate(state["f"], state["coloring"]))

    rows.append(measure(ctx, workload=NAME, case=case, impl="asdex", build=build,
                        clock=jax_clock, inputs=lambda: [(_jax_put(ctx, x_host),)],
                        check=lambda out: sparse_err(bcoo_as_scipy(out), ref), tol=1e-8))
    if rows[-1].status == "ok":
        rows[-1].extra["colors"] = int(state["coloring"].num_colors)
        if dualgpu_row is not None and dualgpu_row.status == "ok":
            rows[-1].extra["x dualgpu"] = rows[-1].time_us / dualgpu_row.time_us
    return rows


# ------------------------------------------------------------------------------ Brusselator
def brusselator(xp, side: int, a: float = 3.4, b: float = 1.0, alpha: float = 10.0):
    """The right-hand side of the 2-D Brusselator on a periodic ``side x side`` grid, the two
    species interleaved (``x`` of length ``2 side^2``): six entries a Jacobian row, and the
    wrap-around fits no lattice coloring (asdex's and SparseDiffTools' benchmark)."""
    def f(x):
        y = x.reshape(side, side, 2)
        u, v = y[..., 0], y[..., 1]

        def lap(w):
            return (xp.roll(w, 1, 0) + xp.roll(w, -1, 0) + xp.roll(w, 1, 1)
                    + xp.roll(w, -1, 1) - 4.0 * w)

        du = alpha * lap(u) + b + u * u * v - (a + 1.0) * u
        dv = alpha * lap(v) + a * u - u * u * v
        return xp.stack([du, dv], axis=-1).reshape(-1)
    return f


def brusselator_jacobian(x: np.ndarray, side: int, a: float = 3.4,
                         alpha: float = 10.0) -> sp.csr_matrix:
    """The closed-form Jacobian of :func:`brusselator` (SciPy CSR)."""
    y = x.reshape(side * side, 2)
    u, v = y[:, 0], y[:, 1]
    j = np.arange(side)
    shift = sp.csr_matrix((np.ones(side), (j, (j + 1) % side)), shape=(side, side))
    ring = shift + shift.T                       # np.roll by 1 and by -1 along one axis
    eye = sp.identity(side)
    lap = alpha * (sp.kron(ring, eye) + sp.kron(eye, ring) - 4.0 * sp.identity(side * side))
    blocks = [[lap + sp.diags(2 * u * v - (a + 1.0)), sp.diags(u * u)],
              [sp.diags(a - 2 * u * v), lap - sp.diags(u * u)]]
    species_major = sp.bmat(blocks).tocsr()      # [u..., v...]
    i = np.arange(2 * side * side)
    order = (i % 2) * side * side + i // 2       # entry 2k + s is species s at point k
    return species_major[order][:, order].tocsr()


def brusselator_rows(ctx: Context, side: int, xp=None) -> list[Row]:
    """dualgpu's sparse Jacobian of the Brusselator (cached, first call, detection) and
    asdex's, checked against the closed form."""
    import dualgpu as dg

    xp = xp or ctx.xp
    on_gpu = xp is not np
    sync = (lambda: xp.cuda.get_current_stream().synchronize()) if on_gpu else (lambda: None)
    n = 2 * side * side
    case = f"brusselator n={n}"
    x_host = np.random.default_rng(side).uniform(0.5, 1.5, n)
    ref = brusselator_jacobian(x_host, side)
    x = xp.asarray(x_host)
    f = brusselator(np, side)
    ctx_here = dataclasses.replace(ctx, gpu=on_gpu)
    cached = dg.sparse_jacobian(f)
    rows = [measure(ctx_here, workload=NAME, case=case, impl="dualgpu sparse_jacobian",
                    build=lambda: cached, inputs=[(x,)], reference=True,
                    check=lambda out: sparse_err(out, ref), tol=1e-8)]
    if rows[-1].status == "ok":
        rows[-1].extra["colors"] = int(cached.coloring(x).max()) + 1

    def first_call():
        dg.clear_cache()   # the cached row above built this signature's entry
        t0 = time.perf_counter()
        out = dg.sparse_jacobian(f)(x)
        sync()
        return time.perf_counter() - t0, sparse_err(out, ref)

    rows.append(timed_once(ctx, case, "dualgpu first call", "first call (wall)",
                           first_call))

    def detection():
        t0 = time.perf_counter()
        pattern = dg.jacobian_sparsity(f)(x)
        seconds = time.perf_counter() - t0
        return seconds, float(((ref != 0).astype(bool) > sp.csr_matrix(pattern)).nnz)

    rows.append(timed_once(ctx, case, "jacobian_sparsity", "first call (wall)",
                           detection))
    rows += asdex_rows(ctx, "brusselator", case, lambda xp_: brusselator(xp_, side), x_host,
                       ref, hessian=False, dualgpu_row=rows[0])
    return rows

