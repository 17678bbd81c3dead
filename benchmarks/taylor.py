"""Taylor mode and collapsed differential operators (issue 28), on the per-point network of
``laplacian.py`` (``u: R^D -> R``, layers D-768-768-512-512-1, tanh, 1024 points, float32).

Cases and implementations:

* ``biharmonic D=5`` and ``D=10``: ``dg.biharmonic(u, batch_axes=0)`` (the forward Laplacian
  of the forward-Laplacian program, both collapsed) at float32 and TF32, and with a
  ``memory_budget``; ``dg.differential_operator`` at order 4 over the D² directions
  ``e_i`` and ``e_i ± e_j`` (collapsed Taylor mode, the route of Dangel et al. 2025); JAX's
  nested ``trace(hessian(trace(hessian(u))))`` under ``vmap`` and ``jit``, at full float32
  (``"highest"``, the reference of the goal) and at JAX's default (TF32-class). The
  reference value is ``dg.biharmonic`` in float64.
* ``weighted Laplacian D=50``: ``dg.laplacian(u, batch_axes=0, sigma=S)`` with a rank-50
  ``S`` against our own ``dg.laplacian(u, batch_axes=0)`` at the same D (the goal is a
  ratio); the float64 reference is the plain Laplacian of ``y -> u(x + S y)`` at ``y = 0``
  (``tr(S Sᵀ ∇²u)``, independent of the ``sigma`` code).
* ``jet order 4, D=10``: ``dg.jet`` of the network along one curve per point (four series
  terms shaped like the points) against ``jax.experimental.jet.jet`` at both precisions;
  the reference is ``dg.jet`` in float64 (JAX's rows are checked against it too, so a wrong
  reference shows as two WRONG peers).

Peak memory is reported as ``peak_MB`` (CuPy: one eager call; JAX: XLA's memory analysis).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .common import Context, Skip, import_jax, normal, to_jax, to_xp
from .laplacian import (
    HIDDEN,
    POINTS,
    _at_precision,
    _jax_u,
    _measure,
    dualgpu_precision,
    make_inputs,
    u,
)
from .mlp import cupy_peak, jax_peak
from .report import Row

NAME = "taylor"
BIHARMONIC_DIMS = (5, 10)
SIGMA_DIM, SIGMA_RANK = 50, 50
JET_DIM, JET_ORDER = 10, 4
TINY_HIDDEN, TINY_POINTS = (8, 8, 6, 6), 5
TINY_BIHARMONIC_DIMS, TINY_SIGMA, TINY_JET_DIM = (2,), (3, 2), 3
BUDGET_S = 1.0                 # timed seconds per row at most
BIHARMONIC_BUDGET = 1 << 30    # bytes: the memory_budget row
JAX_COMPILE_S = 300.0          # seconds allowed per row (build, check and timing)


def _f64(args):
    return tuple(a.astype(np.float64) for a in args)


def _sizes(ctx: Context):
    if ctx.tiny:
        return TINY_HIDDEN, TINY_POINTS
    return HIDDEN, POINTS


def _jax_inputs(ctx, args):
    def make():
        return [tuple(to_jax(ctx, a) for a in args)]
    return make


# ------------------------------------------------------------------------------ biharmonic
def build_biharmonic(memory_budget=None):
    import dualgpu as dg

    return dg.biharmonic(u, batch_axes=0, memory_budget=memory_budget)


def build_collapsed_taylor(xp, D: int):
    import dualgpu as dg

    V, w = dg.biharmonic_directions(D, np.float32)       # D² directions
    op = dg.differential_operator(u, xp.asarray(V), 4, weights=xp.asarray(w), batch_axes=0)
    op.bench_note = f"order 4, {len(w)} directions"
    return op


def build_jax_biharmonic(ctx: Context, precision=None):
    jax = import_jax()
    jnp = jax.numpy
    ju = _jax_u(jnp)

    def bih_one(x, *params):
        def lap(y):
            return jnp.trace(jax.hessian(ju)(y, *params))
        return jnp.trace(jax.hessian(lap)(x))

    fn = jax.jit(jax.vmap(bih_one, in_axes=(0,) + (None,) * 10))
    return _at_precision(jax, fn, precision)


def run_biharmonic(ctx: Context) -> list[Row]:
    import dualgpu as dg

    hidden, points = _sizes(ctx)
    dims = TINY_BIHARMONIC_DIMS if ctx.tiny else BIHARMONIC_DIMS
    xp, rows = ctx.xp, []
    for D in dims:
        args = make_inputs(xp, D, hidden, points)
        ref = dg.biharmonic(u, batch_axes=0)(*_f64(args))
        common = dict(workload=NAME, case=f"biharmonic D={D}", tol=1e-3)
        inputs = [args]
        for precision in ("float32", "tf32"):
            with dualgpu_precision(precision):
                rows.append(_measure(ctx, ref, impl="dualgpu" if precision == "float32" else
                                     f"dualgpu ({precision})", build=build_biharmonic,
                                     inputs=inputs, extra=cupy_peak(ctx, inputs),
                                     **dict(common, tol=5e-2 if precision == "tf32" else 1e-3)))
        with dualgpu_precision("float32"):
            budget = 1 << 16 if ctx.tiny else BIHARMONIC_BUDGET
            rows.append(_measure(ctx, ref, impl="dualgpu (memory_budget=1 GiB)",
                                 build=lambda b=budget: build_biharmonic(b), inputs=inputs,
                                 extra=cupy_peak(ctx, inputs), **common))
            rows.append(_measure(ctx, ref, impl="dualgpu collapsed Taylor (order 4)",
                                 build=lambda D=D: build_collapsed_taylor(xp, D),
                                 inputs=inputs, extra=cupy_peak(ctx, inputs), **common))
        for impl, precision in (("jax nested (precision=highest)", "highest"),
                                ("jax nested", None)):
            jin = _jax_inputs(ctx, args)
            rows.append(_measure(ctx, ref, impl=impl,
                                 build=lambda p=precision: build_jax_biharmonic(ctx, p),
                                 inputs=jin, extra=jax_peak(lambda j=jin: j()[0]),
                                 reference=precision == "highest",
                                 **dict(common, tol=5e-2 if precision is None else 1e-3)))
    return rows


# ------------------------------------------------------------------------------ weighted
def run_weighted(ctx: Context) -> list[Row]:
    import dualgpu as dg

    hidden, points = _sizes(ctx)
    D, R = TINY_SIGMA if ctx.tiny else (SIGMA_DIM, SIGMA_RANK)
    xp = ctx.xp
    args = make_inputs(xp, D, hidden, points)
    S = normal(xp.random.default_rng(7), xp, (D, R), 1.0 / np.sqrt(R))
    X64, S64 = args[0].astype(np.float64), S.astype(np.float64)
    p64 = _f64(args[1:])

    def along(Y, X, *params):           # y -> u(x + S y): its Laplacian is tr(S Sᵀ ∇²u)
        return u(X + Y @ S64.T, *params)

    ref = dg.laplacian(along, batch_axes=0)(xp.zeros((points, R)), X64, *p64)
    plain_ref = dg.laplacian(u, batch_axes=0)(X64, *p64)
    case = f"weighted Laplacian D={D}"
    inputs = [args]
    rows = []
    with dualgpu_precision("float32"):
        rows.append(_measure(ctx, plain_ref, workload=NAME, case=case,
                             impl="dualgpu laplacian (no sigma)",
                             build=lambda: dg.laplacian(u, batch_axes=0), inputs=inputs,
                             reference=True, extra=cupy_peak(ctx, inputs)))

        rows.append(_measure(ctx, ref, workload=NAME, case=case,
                             impl=f"dualgpu laplacian(sigma, rank {R})",
                             build=lambda: dg.laplacian(u, batch_axes=0, sigma=S),
                             inputs=inputs,
                             extra=cupy_peak(ctx, inputs)))
    return rows


# ------------------------------------------------------------------------------ jet
def _series(xp, args, order: int):
    rng = xp.random.default_rng(11)
    return tuple(normal(rng, xp, args[0].shape, 0.5) for _ in range(order))


def _jet_error(ctx: Context, out, ref) -> float:
    """The largest relative error over the primal output and the series terms."""
    from .common import rel_err

    (p, s), (rp, rs) = out, ref
    return max([rel_err(ctx, p, rp)] + [rel_err(ctx, a, b) for a, b in zip(s, rs)])


def run_jet(ctx: Context) -> list[Row]:
    import dualgpu as dg

    hidden, points = _sizes(ctx)
    D = TINY_JET_DIM if ctx.tiny else JET_DIM
    xp = ctx.xp
    args = make_inputs(xp, D, hidden, points)
    series = _series(xp, args, JET_ORDER)
    X, params = args[0], args[1:]
    p64 = _f64(params)
    ref = dg.jet(lambda x: u(x, *p64), (X.astype(np.float64),),
                 ([s.astype(np.float64) for s in series],))
    ref = (to_xp(ctx, ref[0]), [to_xp(ctx, s) for s in ref[1]])
    case = f"jet order {JET_ORDER}, D={D}"
    rows = []

    def network(x):                      # one function object: its program is cached
        return u(x, *params)

    def dg_jet(X, *_params):
        return dg.jet(network, (X,), (list(series),))

    for precision in ("float32", "tf32"):
        tol = 5e-2 if precision == "tf32" else 1e-3
        with dualgpu_precision(precision):
            rows.append(measure_jet(ctx, ref, case, "dualgpu" if precision == "float32" else
                                    f"dualgpu ({precision})", lambda: dg_jet, [args], tol))

    def build_jax(precision):
        jax = import_jax()
        from jax.experimental.jet import jet

        ju = _jax_u(jax.numpy)
        batched = jax.vmap(ju, in_axes=(0,) + (None,) * (len(params)))
        js = [to_jax(ctx, s) for s in series]

        def f(X, *params):
            primal, terms = jet(lambda x: batched(x, *params), (X,), (js,))
            return primal, list(terms)

        return _at_precision(jax, jax.jit(f), precision)

    for impl, precision in (("jax jet (precision=highest)", "highest"), ("jax jet", None)):
        jin = _jax_inputs(ctx, args)
        rows.append(measure_jet(ctx, ref, case, impl, lambda p=precision: build_jax(p), jin,
                                5e-2 if precision is None else 1e-3,
                                reference=precision == "highest",
                                extra=jax_peak(lambda j=jin: j()[0])))
    return rows


def measure_jet(ctx, ref, case, impl, build, inputs, tol, reference=False, extra=None):
    from .common import measure

    return measure(ctx, workload=NAME, case=case, impl=impl, build=build, inputs=inputs,
                   check=lambda out: _jet_error(ctx, out, ref), tol=tol, reference=reference,
                   extra=extra)


def run(ctx: Context) -> list[Row]:
    """The biharmonic, the weighted Laplacian and the jet, each row timed for at most
    :data:`BUDGET_S` seconds."""
    # JAX's nested biharmonic at full float32 takes 70-95 s to compile on the H200
    ctx = dataclasses.replace(ctx, budget_s=min(ctx.budget_s, BUDGET_S),
                              impl_timeout_s=max(ctx.impl_timeout_s, JAX_COMPILE_S))
    rows = []
    for part in (run_biharmonic, run_weighted, run_jet):
        try:
            rows += part(ctx)
        except Skip as exc:     # pragma: no cover - a part with no peer at all
            ctx.log(f"  {NAME}: {part.__name__} skipped ({exc})")
    return rows
