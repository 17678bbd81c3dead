"""Sparse Hessians and Jacobians (issues 26, 39): cached ``dg.sparse_hessian`` against JAX's
colored floor, dense ``jax.hessian`` and asdex, float64.

Problems: chained Rosenbrock (tridiagonal Hessian, 3 colors) at n = 10^6, and a nonlinear
2-D Poisson energy on a 1000 x 1000 grid (5-point Hessian, 5 colors). Implementations per
problem:

* ``dualgpu hvp (one)``: one ``dg.hvp`` of the same function -- the reference row, so each
  sparse Hessian's ratio reads "costs this many single HVPs";
* ``dualgpu sparse_hessian``: cached (pattern, coloring, program and index map built by the
  first call, outside the timing), decompression into CSR included;
* ``jax colored floor``: ``jit(vmap(lambda s: jvp(grad(f), (x,), (s,))[1]))`` over the seed
  matrix of the coloring, written by hand (``j mod 3``; ``(column + 2 row) mod 5``): the
  compressed products only, no decompression -- what an automatic method can approach;
* ``dualgpu first call``: wall time of a fresh ``dg.sparse_hessian(f)`` called once
  (detection, coloring, index map, trace and compile; metric ``first call (wall)``);
* ``hessian_sparsity``: wall time of the detection alone;
* ``asdex detection + coloring`` and ``asdex`` (issue 39): the peer's first-call fixed cost
  and its jitted cached evaluation, with its colors and ``x dualgpu`` (its time over the
  cached ``dualgpu sparse_hessian``); :mod:`benchmarks.sparse_asdex` installs asdex from the
  carried ``.wheels/`` and skips the rows, saying why, without it.

Also the periodic 2-D Brusselator's Jacobian at n = 131,072 and 2,048 (``dualgpu
sparse_jacobian`` cached, its first call, ``jacobian_sparsity``, and asdex's rows), checked
against its closed form.

At n = 10^4 (Rosenbrock) also dense ``jax.hessian`` against the cached sparse Hessian, and
dense ``jax.hessian`` at 3*10^4 and 10^5 (where it stops fitting: those rows say why; CuPy's
pool is emptied before each, and one whose two n x n arrays exceed the free device memory
is skipped, not attempted).
The case ``cpu n=...`` runs on NumPy whatever the device: one HVP (reference), the cached
sparse Hessian (``x one HVP`` in its extras; issue 26's target <= 8) and detection.

Every result is checked against the closed-form Hessian (a SciPy CSR matrix built here):
``rel err`` is the Frobenius norm of the difference over the reference's; the floor's
compressed products are checked against ``H @ seeds.T``.
"""
from __future__ import annotations

import dataclasses
import time
import traceback

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg

from .common import Context, Skip, import_jax, jax_clock, measure, short
from .report import Row
from .timing import BenchTimeout, time_limit

NAME = "sparse_derivatives"
N_ROSENBROCK = 10**6
SIDE_POISSON = 1000
N_DENSE = (10**4, 3 * 10**4, 10**5)
N_CPU = 10**6
TINY_N, TINY_SIDE, TINY_DENSE, TINY_CPU = 64, 8, (32,), 64
BUDGET_S = 2.0


# ------------------------------------------------------------------------------ problems
def rosenbrock(xp):
    """Chained Rosenbrock in the namespace ``xp`` (NumPy for dualgpu, jax.numpy)."""
    def f(x):
        return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    return f


def poisson(xp, side: int):
    """A nonlinear Poisson energy of ``u`` on a ``side x side`` grid (flattened)."""
    def f(x):
        u = x.reshape(side, side)
        return (xp.sum((u[1:, :] - u[:-1, :]) ** 2) + xp.sum((u[:, 1:] - u[:, :-1]) ** 2)
                + xp.sum(u ** 4) - xp.sum(u))
    return f


def rosenbrock_hessian(x: np.ndarray) -> sp.csr_matrix:
    """The closed-form tridiagonal Hessian of :func:`rosenbrock`."""
    n = len(x)
    diag = np.zeros(n)
    diag[:-1] += 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
    diag[1:] += 200.0
    off = -400.0 * x[:-1]
    return sp.diags([off, diag, off], [-1, 0, 1], format="csr")


def poisson_hessian(x: np.ndarray, side: int) -> sp.csr_matrix:
    """The closed-form Hessian of :func:`poisson`: twice the grid's graph Laplacian plus
    ``diag(12 u^2)``."""
    line = sp.diags([1.0, 1.0], [-1, 1], shape=(side, side))
    eye = sp.identity(side)
    adjacency = sp.kron(line, eye) + sp.kron(eye, line)
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    return (2.0 * (sp.diags(degree) - adjacency) + sp.diags(12.0 * x ** 2)).tocsr()


def hand_seeds(name: str, n: int, side: int = 0) -> np.ndarray:
    """The seed matrix ``(colors, n)`` of the known colorings, written by hand."""
    j = np.arange(n)
    colors = j % 3 if name == "rosenbrock" else (j % side + 2 * (j // side)) % 5
    seeds = np.zeros((int(colors.max()) + 1, n))
    seeds[colors, j] = 1.0
    return seeds


def make_point(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.0, 1.0, n)


# ------------------------------------------------------------------------------ checks
def _host(a):
    if hasattr(a, "get"):
        return a.get()
    if sp.issparse(a):
        return a
    return np.asarray(a)


def sparse_err(out, ref: sp.csr_matrix) -> float:
    """``‖out − ref‖_F / ‖ref‖_F`` for a sparse (SciPy or cupyx) or dense result."""
    out = _host(out)
    diff = (sp.csr_matrix(out) - ref) if sp.issparse(out) else (out.reshape(ref.shape)
                                                                 - ref.toarray())
    num = scipy.sparse.linalg.norm(diff) if sp.issparse(diff) else np.linalg.norm(diff)
    return float(num / scipy.sparse.linalg.norm(ref))


def dense_err(out, ref) -> float:
    out = np.asarray(_host(out), dtype=np.float64).reshape(np.shape(ref))
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


# ------------------------------------------------------------------------------ rows
def _jax64():
    jax = import_jax()
    jax.config.update("jax_enable_x64", True)
    return jax


def _jax_put(ctx: Context, a: np.ndarray):
    jax = _jax64()
    device = jax.devices("gpu" if ctx.gpu else "cpu")[0]
    return jax.device_put(np.asarray(a), device)


def timed_once(ctx: Context, case: str, impl: str, metric: str, body,
                tol: float = 1e-8) -> Row:
    """A row of one wall-clock measurement: ``body()`` returns ``(seconds, rel_err)``."""
    row = Row(workload=NAME, case=case, impl=impl, metric=metric)
    try:
        with time_limit(ctx.limit_for(impl)):
            seconds, err = body()
        row.time_us, row.rel_err, row.status = seconds * 1e6, err, "ok"
        if not (err <= tol):
            row.note = f"WRONG: rel err {err:.2e} > tol {tol:.0e}"
    except (Skip, BenchTimeout) as exc:
        row.note = str(exc)
    except Exception as exc:  # noqa: BLE001  (a failing implementation is a row, not a crash)
        row.note = f"error: {short(exc)}"
        ctx.debug(f"[{NAME}/{case}/{impl}]\n{traceback.format_exc()}")
    ctx.log(f"  {NAME:<10} {case:<12} {impl:<22} {row.describe()}")
    return row


def _ratio(rows: list[Row], reference: Row, key: str = "x one HVP") -> None:
    for r in rows:
        if r is not reference and r.status == "ok" and reference.status == "ok" \
                and r.metric == "per call":
            r.extra[key] = r.time_us / reference.time_us


def problem_rows(ctx: Context, name: str, f_np, make_f_jax, x_host: np.ndarray,
                 ref: sp.csr_matrix, seeds: np.ndarray, case: str, xp=None,
                 dense: bool = False) -> list[Row]:
    """The rows of one problem at one size on ``xp`` (the run's library unless given)."""
    import dualgpu as dg

    xp = xp or ctx.xp
    on_gpu = xp is not np
    sync = (lambda: xp.cuda.get_current_stream().synchronize()) if on_gpu else (lambda: None)
    x = xp.asarray(x_host)
    v = xp.asarray(seeds[0])
    ctx_here = dataclasses.replace(ctx, gpu=on_gpu)
    hvp_ref = ref @ seeds[0]
    rows = [measure(ctx_here, workload=NAME, case=case, impl="dualgpu hvp (one)",
                    build=lambda: dg.hvp(f_np), inputs=[(x, v)], reference=True,
                    check=lambda out: dense_err(out, hvp_ref), tol=1e-8)]
    cached = dg.sparse_hessian(f_np)
    rows.append(measure(ctx_here, workload=NAME, case=case, impl="dualgpu sparse_hessian",
                        build=lambda: cached, inputs=[(x,)],
                        check=lambda out: sparse_err(out, ref), tol=1e-8))
    if rows[-1].status == "ok":
        rows[-1].extra["colors"] = int(cached.coloring(x).max()) + 1

    def first_call():
        dg.clear_cache()   # the cached row above built this signature's entry
        t0 = time.perf_counter()
        out = dg.sparse_hessian(f_np)(x)
        sync()
        return time.perf_counter() - t0, sparse_err(out, ref)

    rows.append(timed_once(ctx, case, "dualgpu first call", "first call (wall)",
                            first_call))

    def detection():
        t0 = time.perf_counter()
        pattern = dg.hessian_sparsity(f_np)(x)
        seconds = time.perf_counter() - t0
        missed = (ref != 0).astype(bool) > sp.csr_matrix(_host(pattern))
        return seconds, float(missed.nnz)   # entries the pattern misses: 0

    rows.append(timed_once(ctx, case, "hessian_sparsity", "first call (wall)", detection))
    if not on_gpu and ctx.gpu:
        _ratio(rows, rows[0])
        return rows   # the NumPy case of a GPU run: no JAX rows (they run on the GPU)
    compressed_ref = (ref @ seeds.T).T

    def build_floor():
        jax = _jax64()
        f = make_f_jax(jax.numpy)
        return jax.jit(lambda x, s: jax.vmap(
            lambda d: jax.jvp(jax.grad(f), (x,), (d,))[1])(s))

    rows.append(measure(ctx, workload=NAME, case=case, impl="jax colored floor",
                        build=build_floor, clock=jax_clock,
                        inputs=lambda: [(_jax_put(ctx, x_host), _jax_put(ctx, seeds))],
                        check=lambda out: dense_err(out, compressed_ref), tol=1e-8))
    if dense:
        def build_dense():
            _room_for_dense(ctx, len(x_host))
            jax = _jax64()
            return jax.jit(jax.hessian(make_f_jax(jax.numpy)))

        rows.append(measure(ctx, workload=NAME, case=case, impl="jax hessian (dense)",
                            build=build_dense, clock=jax_clock,
                            inputs=lambda: [(_jax_put(ctx, x_host),)],
                            check=lambda out: sparse_err(out, ref), tol=1e-8))
    from .sparse_asdex import asdex_rows

    rows += asdex_rows(ctx, name, case, make_f_jax, x_host, ref, hessian=True,
                       dualgpu_row=rows[1])
    _ratio(rows, rows[0])
    return rows


def _room_for_dense(ctx: Context, m: int) -> None:
    """Before a dense ``jax.hessian`` of ``m`` variables on the GPU: CuPy's pool gives its
    cached blocks back (the sparse rows leave gigabytes there), and a Hessian whose two
    ``m x m`` float64 copies (the result and ``jacfwd``'s intermediate) exceed the free
    device memory is a skipped row saying so, not an attempt (JAX's allocator retries a
    failed allocation for minutes)."""
    if not ctx.gpu:
        return
    import cupy as cp

    cp.get_default_memory_pool().free_all_blocks()
    free = cp.cuda.runtime.memGetInfo()[0]
    need = 2 * m * m * 8
    if need > free:
        raise Skip(f"does not fit: the dense Hessian needs about {need / 2**30:.1f} GiB "
                   f"(two {m} x {m} float64 arrays), {free / 2**30:.1f} GiB free")


def run(ctx: Context) -> list[Row]:
    ctx = dataclasses.replace(ctx, budget_s=min(ctx.budget_s, BUDGET_S))
    n = TINY_N if ctx.tiny else N_ROSENBROCK
    side = TINY_SIDE if ctx.tiny else SIDE_POISSON
    rows: list[Row] = []
    x = make_point(n)
    rows += problem_rows(ctx, "rosenbrock", rosenbrock(np), rosenbrock, x,
                         rosenbrock_hessian(x), hand_seeds("rosenbrock", n),
                         case=f"rosenbrock n={n}")
    u = make_point(side * side, 1)
    rows += problem_rows(ctx, "poisson", poisson(np, side), lambda xp: poisson(xp, side), u,
                         poisson_hessian(u, side), hand_seeds("poisson", side * side, side),
                         case=f"poisson {side}x{side}")
    # dense jax.hessian against the sparse one where it fits, then where it stops fitting
    for i, m in enumerate(TINY_DENSE if ctx.tiny else N_DENSE):
        x = make_point(m, 2)
        ref = rosenbrock_hessian(x)
        if i == 0:
            rows += problem_rows(ctx, "rosenbrock", rosenbrock(np), rosenbrock, x, ref,
                                 hand_seeds("rosenbrock", m), case=f"rosenbrock n={m}",
                                 dense=True)
            continue

        def build_dense(m=m):
            _room_for_dense(ctx, m)
            jax = _jax64()
            return jax.jit(jax.hessian(rosenbrock(jax.numpy)))

        rows.append(measure(ctx, workload=NAME, case=f"rosenbrock n={m}",
                            impl="jax hessian (dense)", build=build_dense, clock=jax_clock,
                            inputs=lambda x=x: [(_jax_put(ctx, x),)],
                            check=lambda out, ref=ref: sparse_err(out, ref), tol=1e-8))
    from .sparse_asdex import SIDES_BRUSSELATOR, TINY_SIDES_BRUSSELATOR, brusselator_rows

    for side in TINY_SIDES_BRUSSELATOR if ctx.tiny else SIDES_BRUSSELATOR:
        rows += brusselator_rows(ctx, side)
    if not (ctx.gpu or ctx.tiny):
        return rows   # a CPU run measured NumPy above already
    # NumPy whatever the device: the cached sparse Hessian in single HVPs, and detection
    m = TINY_CPU if ctx.tiny else N_CPU
    x = make_point(m, 3)
    rows += problem_rows(ctx, "rosenbrock", rosenbrock(np), rosenbrock, x,
                         rosenbrock_hessian(x), hand_seeds("rosenbrock", m),
                         case=f"cpu rosenbrock n={m}", xp=np)
    s = TINY_SIDE if ctx.tiny else SIDE_POISSON
    u = make_point(s * s, 4)
    rows += problem_rows(ctx, "poisson", poisson(np, s), lambda xp: poisson(xp, s), u,
                         poisson_hessian(u, s), hand_seeds("poisson", s * s, s),
                         case=f"cpu poisson {s}x{s}", xp=np)
    return rows
