"""Per-point Laplacian of a tanh MLP (issue 16): ``u: R^d -> R``, layers d-768-768-512-512-1,
at 1024 collocation points, float32; the Laplacian of ``u`` at every point.

Implementations:

* ``dualgpu``: ``dg.laplacian(u, batch_axes=0)`` (forward-Laplacian transform, D = d) at
  ``dg.config["matmul_precision"] = "float32"``, and ``dualgpu (tf32)`` / ``dualgpu (tf32x3)``
  at ``"tf32"`` / ``"tf32x3"`` (float32-class accuracy from three TF32 passes);
* ``hand-fused``: the forward Laplacian written by hand in CuPy (value, Jacobian over the
  d coordinates and Laplacian through each layer: one wide GEMM per layer for the Jacobian,
  one for the value and the Laplacian, elementwise for tanh) -- the reference row;
* ``jax nested``: ``jit(vmap(lambda x: trace(jax.hessian(u)(x))))``;
* ``jax forward-Laplacian``: the same hand-written propagation in ``jax.numpy``, jitted;
  both JAX rows at JAX's default matmul precision (TF32-class on an H200) and again under
  ``jax.default_matmul_precision("highest")`` (full float32: like with like); the forward
  Laplacian also under ``"TF32_TF32_F32_X3"``, the algorithm of dualgpu's ``"tf32x3"``;
* ``torch.func``: ``vmap(lambda x: trace(hessian(u)(x)))`` (d = 50 only).

Cases: the sweep d = 10, 50 (the issue's target), 200; and ``k=16 HVPs``: on the MLP
784-512-10 of ``mlp.py`` (batch 4096), ``dg.vmap(dg.hvp(loss), in_axes=(None, None, None,
0))`` with 16 directions against one ``dg.hvp`` (the reference row; the goal is a ratio
≤ 4). Every result is checked against a float64 reference (the forward Laplacian by hand,
itself checked against dense Hessians in tests/test_benchmarks_smoke.py; the MLP's HVP in
closed form): ``rel err`` is ‖out − ref‖/‖ref‖ and ``max_err`` max|out − ref| / max|ref|.
Peak memory per implementation is reported as ``peak_MB``. Each row gets at most
:data:`BUDGET_S` seconds of timed calls, so the workload stays under two minutes on an H200.

Counting (CPU, no GPU needed): :func:`program_costs` reads the traced program of
``dg.laplacian(u, batch_axes=0)`` -- equations, matrix products and their flops, bytes of
the values the fused program materialises and the peak of those alive at once -- and
:func:`ideal_costs` gives the forward Laplacian's own count for the same network;
``python -m benchmarks.laplacian`` prints both for d = 10, 50, 200.
"""
from __future__ import annotations

import contextlib
import dataclasses

import numpy as np

from . import mlp
from .common import (
    Context,
    import_jax,
    import_torch,
    measure,
    normal,
    rel_err,
    to_jax,
    to_torch,
    to_xp,
)
from .mlp import cupy_peak, jax_peak, torch_peak
from .report import Row

NAME = "laplacian"
HIDDEN = (768, 768, 512, 512)
POINTS = 1024
DIMS = (10, 50, 200)
TINY_HIDDEN, TINY_POINTS, TINY_DIMS = (8, 8, 6, 6), 5, (2, 3)
BUDGET_S = 1.0               # timed seconds per row at most (about 30 rows)
K_DIRECTIONS = 16            # the multi-direction HVP row


def make_inputs(xp, d: int, hidden, points: int, seed: int = 0) -> tuple:
    """``(X, W1, b1, ..., W5, b5)`` in float32; weights scaled so tanh is not flat."""
    rng = xp.random.default_rng(seed)
    sizes = (d,) + tuple(hidden) + (1,)
    args = [normal(rng, xp, (points, d))]
    for m, n in zip(sizes[:-1], sizes[1:]):
        args.append(normal(rng, xp, (m, n), 1.0 / np.sqrt(m)))
        args.append(normal(rng, xp, (n,), 0.1))
    return tuple(args)


def u(X, *params):
    """The network at every point: ``(points, d) -> (points,)`` (``np`` is rebound when
    traced by dualgpu)."""
    h = X
    n = len(params) // 2
    for i in range(n - 1):
        h = np.tanh(h @ params[2 * i] + params[2 * i + 1])
    return (h @ params[-2] + params[-1])[:, 0]


def forward_laplacian(xp, X, *params):
    """The forward Laplacian by hand, in ``xp`` (NumPy, CuPy or jax.numpy): ``J`` has shape
    ``(d, points, width)``; ``L_{tanh z} = t' L_z + t'' sum_d J_z[d]^2``."""
    points, d = X.shape
    n = len(params) // 2
    h = X
    J = None                                    # J_x = identity, folded into the first layer
    L = None
    for i in range(n):
        W, b = params[2 * i], params[2 * i + 1]
        z = h @ W + b
        if J is None:
            Jz = xp.broadcast_to(W[:, None, :], (d, points, W.shape[1]))
            Lz = xp.zeros_like(z)
        else:
            Jz = (J.reshape(d * points, -1) @ W).reshape(d, points, W.shape[1])
            Lz = L @ W
        if i == n - 1:
            return Lz[:, 0]
        t = xp.tanh(z)
        t1 = 1 - t * t
        h = t
        J = t1 * Jz
        L = t1 * Lz - 2 * t * t1 * xp.sum(Jz * Jz, axis=0)


# ------------------------------------------------------------------------------ counting
LARGE_BYTES = 1 << 20        # "large" intermediates: at least 1 MiB


def _prod(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _matmul_flops(eqn) -> int:
    a = eqn.inputs[0]
    k = a.shape[-1] if a.ndim else 1
    return 2 * _prod(eqn.outs[0].shape) * k


def program_costs(graph) -> dict:
    """What a program costs, read from its graph and its fusion plan (CPU only).

    ``eqns``, ``matmuls`` and ``gflop`` (matrix products only, 2 flops a multiply-add);
    ``materialised_MB``: the values the fused program writes to memory (kernel outputs and
    library results that are not views), each at least :data:`LARGE_BYTES` -- what a call
    holds when nothing is freed before it returns; ``peak_MB``: the most of those alive at
    once when each is freed after its last read; ``large``: their shapes, in program order.

    Example::

        >>> g = dg.trace(dg.laplacian(u, batch_axes=0), *make_inputs(np, 3, (8, 8), 4))
        >>> c = program_costs(g)
        >>> c["matmuls"], c["materialised_MB"]
        (5, 0.0)
    """
    from dualgpu.fusion import memory_profile, plan_graph

    matmuls = [e for e in graph.eqns if e.prim.name == "matmul"]
    prof = memory_profile(plan_graph(graph), LARGE_BYTES)
    return {"eqns": len(graph.eqns), "matmuls": len(matmuls),
            "gflop": sum(_matmul_flops(e) for e in matmuls) / 1e9,
            "materialised_MB": prof["materialised"] / 2**20, "peak_MB": prof["peak"] / 2**20,
            "large": prof["large"]}


def ideal_costs(d: int, hidden=HIDDEN, points: int = POINTS, itemsize: int = 4) -> dict:
    """The forward Laplacian's own cost for the network ``d-hidden-1`` at ``points``
    points: per layer the value GEMM (``N x in x out``), the Jacobian GEMM
    (``N*d x in x out``) and the Laplacian GEMM (``N x in x out``), except that the first
    layer's Jacobian is ``W1`` itself (a broadcast, no GEMM) and its Laplacian is zero, and
    that the last layer needs only its Laplacian (the value and the Jacobian of ``u`` are
    not returned). ``peak_MB``: two Jacobians of the widest hidden layer (a GEMM's input and
    output), the floor of a layer-by-layer propagation.

    Example::

        >>> c = ideal_costs(50)
        >>> c["matmuls"], round(c["gflop"], 1)
        (11, 132.7)
    """
    sizes = (d,) + tuple(hidden) + (1,)
    layers = list(zip(sizes[:-1], sizes[1:]))
    n = points
    flops = matmuls = 0
    for i, (a, b) in enumerate(layers):
        first, last = i == 0, i == len(layers) - 1
        if not last:
            flops, matmuls = flops + 2 * n * a * b, matmuls + 1          # value
        if not first and not last:
            flops, matmuls = flops + 2 * n * d * a * b, matmuls + 1      # Jacobian
        if not first:
            flops, matmuls = flops + 2 * n * a * b, matmuls + 1          # Laplacian
    widest = max(hidden)
    return {"matmuls": matmuls, "gflop": flops / 1e9,
            "peak_MB": 2 * d * n * widest * itemsize / 2**20}


def count_table(dims=DIMS, hidden=HIDDEN, points: int = POINTS) -> str:
    """The counts of the dualgpu program against the ideal, one line per ``d``."""
    import dualgpu as dg

    lines = [f"{'d':>4} {'eqns':>5} {'matmuls':>7} {'GFLOP':>8} {'ideal':>8} "
             f"{'materialised MB':>16} {'peak MB':>8} {'ideal peak':>10}"]
    for d in dims:
        g = dg.trace(dg.laplacian(u, batch_axes=0), *make_inputs(np, d, hidden, points))
        c, ideal = program_costs(g), ideal_costs(d, hidden, points)
        lines.append(f"{d:>4} {c['eqns']:>5} {c['matmuls']:>4}/{ideal['matmuls']:<2} "
                     f"{c['gflop']:>8.2f} {ideal['gflop']:>8.2f} {c['materialised_MB']:>16.0f} "
                     f"{c['peak_MB']:>8.0f} {ideal['peak_MB']:>10.0f}")
    return "\n".join(lines)


def reference(xp, args):
    return forward_laplacian(xp, *(a.astype(xp.float64) for a in args))


def build_dualgpu(ctx: Context, chunk_size=None):
    import dualgpu as dg

    return dg.laplacian(u, argnums=0, batch_axes=0, chunk_size=chunk_size)


@contextlib.contextmanager
def dualgpu_precision(precision: str):
    """``dg.config["matmul_precision"]`` for the calls inside (restored after)."""
    import dualgpu as dg

    saved = dg.config["matmul_precision"]
    dg.config["matmul_precision"] = precision
    try:
        yield
    finally:
        dg.config["matmul_precision"] = saved


def build_hand(ctx: Context):
    xp = ctx.xp
    return lambda *args: forward_laplacian(xp, *args)


def _jax_u(jnp):
    def ju(x, *params):                          # one point: (d,) -> ()
        h = x
        n = len(params) // 2
        for i in range(n - 1):
            h = jnp.tanh(h @ params[2 * i] + params[2 * i + 1])
        return (h @ params[-2] + params[-1])[0]
    return ju


class _AtPrecision:
    """A jitted JAX function traced and called under ``jax.default_matmul_precision``
    (``lower`` too, for the memory probe)."""

    def __init__(self, jax, fn, precision):
        self.jax, self.fn, self.precision = jax, fn, precision

    def __call__(self, *args):
        with self.jax.default_matmul_precision(self.precision):
            return self.fn(*args)

    def lower(self, *args):
        with self.jax.default_matmul_precision(self.precision):
            return self.fn.lower(*args)


def _at_precision(jax, fn, precision):
    return fn if precision is None else _AtPrecision(jax, fn, precision)


def build_jax_nested(ctx: Context, precision=None):
    jax = import_jax()
    ju = _jax_u(jax.numpy)

    def lap_one(x, *params):
        return jax.numpy.trace(jax.hessian(ju)(x, *params))

    return _at_precision(jax, jax.jit(jax.vmap(lap_one, in_axes=(0,) + (None,) * 10)),
                         precision)


def build_jax_forward(ctx: Context, precision=None):
    jax = import_jax()
    return _at_precision(jax, jax.jit(lambda *args: forward_laplacian(jax.numpy, *args)),
                         precision)


def build_torch(ctx: Context):
    torch = import_torch(ctx)
    from torch.func import hessian, vmap

    def tu(x, *params):
        h = x
        n = len(params) // 2
        for i in range(n - 1):
            h = torch.tanh(h @ params[2 * i] + params[2 * i + 1])
        return (h @ params[-2] + params[-1])[0]

    def lap_one(x, *params):
        return torch.trace(hessian(tu)(x, *params))

    return vmap(lap_one, in_dims=(0,) + (None,) * 10)


def max_err(ctx: Context, out, ref) -> float:
    """``max|out − ref| / max|ref|`` in float64, where the arrays live."""
    xp = ctx.xp
    a = to_xp(ctx, out).astype(xp.float64)
    b = to_xp(ctx, ref).astype(xp.float64)
    den = float(xp.max(xp.abs(b)))
    num = float(xp.max(xp.abs(a - b)))
    return num / den if den > 0 else num


def _checked(ctx: Context, ref, errors: dict):
    """The check of :func:`measure` (relative error), keeping the max error aside."""
    def check(out):
        errors["max_err"] = max_err(ctx, out, ref)
        return rel_err(ctx, out, ref)
    return check


def _measure(ctx: Context, ref, **kw) -> Row:
    errors: dict = {}
    row = measure(ctx, check=_checked(ctx, ref, errors), **kw)
    if "max_err" in errors:
        row.extra["max_err"] = errors["max_err"]
    return row


# dg.config["matmul_precision"] of the dualgpu rows: full float32, TF32, and float32-class
# accuracy from three TF32 passes
DUALGPU_PRECISIONS = ("float32", "tf32", "tf32x3")
# (impl, JAX builder, precision): JAX at its default (TF32-class on an H200), at float32, and
# with the three-pass TF32 algorithm that dualgpu's "tf32x3" is (like with like)
JAX_ROWS = (("jax forward-Laplacian", build_jax_forward, None),
            ("jax forward-Laplacian (precision=highest)", build_jax_forward, "highest"),
            ("jax forward-Laplacian (precision=TF32_TF32_F32_X3)", build_jax_forward,
             "TF32_TF32_F32_X3"),
            ("jax nested", build_jax_nested, None),
            ("jax nested (precision=highest)", build_jax_nested, "highest"))


def run_sweep(ctx: Context) -> list[Row]:
    """Every implementation at d = 10, 50, 200 (torch.func at the middle d only)."""
    hidden = TINY_HIDDEN if ctx.tiny else HIDDEN
    points = TINY_POINTS if ctx.tiny else POINTS
    dims = TINY_DIMS if ctx.tiny else DIMS
    rows: list[Row] = []
    xp = ctx.xp
    for d in dims:
        args = make_inputs(xp, d, hidden, points)
        ref = reference(xp, args)
        common = dict(workload=NAME, case=f"d={d}", tol=1e-3)
        inputs = [args]
        rows.append(_measure(ctx, ref, impl="hand-fused", build=lambda: build_hand(ctx),
                             inputs=inputs, reference=True, extra=cupy_peak(ctx, inputs),
                             **common))
        for precision in DUALGPU_PRECISIONS:
            with dualgpu_precision(precision):
                rows.append(_measure(
                    ctx, ref, impl="dualgpu" if precision == "float32" else
                    f"dualgpu ({precision})", build=lambda: build_dualgpu(ctx), inputs=inputs,
                    extra=cupy_peak(ctx, inputs), **dict(common, tol=2e-2 if precision ==
                                                         "tf32" else 1e-3)))
        if d == dims[1]:   # the coordinates in two chunks: memory for a few narrower GEMMs
            half = -(-d // 2)
            with dualgpu_precision("float32"):
                rows.append(_measure(ctx, ref, impl=f"dualgpu (chunk_size={half})",
                                     build=lambda h=half: build_dualgpu(ctx, h),
                                     inputs=inputs, extra=cupy_peak(ctx, inputs), **common))

        def jax_inputs(args=args):
            return [tuple(to_jax(ctx, a) for a in args)]

        for impl, builder, precision in JAX_ROWS:
            if precision == "TF32_TF32_F32_X3" and not ctx.gpu:
                continue   # XLA has the algorithm on GPUs only
            rows.append(_measure(ctx, ref, impl=impl,
                                 build=lambda b=builder, p=precision: b(ctx, p),
                                 inputs=jax_inputs, extra=jax_peak(lambda: jax_inputs()[0]),
                                 **dict(common, tol=2e-2 if precision is None else 1e-3)))
        if d == dims[1]:
            def torch_inputs(args=args):
                return [tuple(to_torch(ctx, a) for a in args)]

            rows.append(_measure(ctx, ref, impl="torch.func", build=lambda: build_torch(ctx),
                                 inputs=torch_inputs, extra=torch_peak(ctx, torch_inputs),
                                 **common))
    return rows


def run_directions(ctx: Context) -> list[Row]:
    """``dg.vmap(dg.hvp(loss))`` over k directions against one ``dg.hvp`` (the reference)."""
    import dualgpu as dg

    dims = mlp.TINY if ctx.tiny else mlp.Dims()
    k = 3 if ctx.tiny else K_DIRECTIONS
    xp = ctx.xp
    loss = mlp.make_loss(dims)
    p, X, Y, v = mlp.make_inputs(xp, dims, 1)[0]
    V = normal(xp.random.default_rng(5), xp, (k, dims.n_params))
    ref_one = mlp.reference(xp, dims, p, X, Y, v)[1]
    ref_k = xp.stack([mlp.reference(xp, dims, p, X, Y, V[i])[1] for i in range(k)])
    case = f"k={k} HVPs"
    hvp = dg.hvp(loss)
    many = dg.vmap(hvp, in_axes=(None, None, None, 0))
    one_in, k_in = [(p, X, Y, v)], [(p, X, Y, V)]
    with dualgpu_precision("float32"):
        rows = [_measure(ctx, ref_one, workload=NAME, case=case, impl="dualgpu hvp (k=1)",
                         build=lambda: hvp, inputs=one_in, reference=True,
                         extra=cupy_peak(ctx, one_in)),
                _measure(ctx, ref_k, workload=NAME, case=case,
                         impl=f"dualgpu vmap(hvp) (k={k})", build=lambda: many, inputs=k_in,
                         extra=cupy_peak(ctx, k_in))]
    if all(r.status == "ok" for r in rows):
        rows[1].extra["x one direction"] = rows[1].time_us / rows[0].time_us
    return rows


def run(ctx: Context) -> list[Row]:
    """The d sweep with every peer, then the multi-direction HVP row; each row timed for
    at most :data:`BUDGET_S` seconds."""
    ctx = dataclasses.replace(ctx, budget_s=min(ctx.budget_s, BUDGET_S))
    return run_sweep(ctx) + run_directions(ctx)


if __name__ == "__main__":
    print(count_table())
