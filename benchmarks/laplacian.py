"""Per-point Laplacian of a tanh MLP (issue 16): ``u: R^d -> R``, layers d-768-768-512-512-1,
at 1024 collocation points, float32; the Laplacian of ``u`` at every point.

Implementations:

* ``dualgpu``: ``dg.laplacian(u, batch_axes=0)`` (forward-Laplacian transform, D = d);
* ``hand-fused``: the forward Laplacian written by hand in CuPy (value, Jacobian over the
  d coordinates and Laplacian through each layer: one wide GEMM per layer for the Jacobian,
  one for the value and the Laplacian, elementwise for tanh) -- the reference row;
* ``jax nested``: ``jit(vmap(lambda x: trace(jax.hessian(u)(x))))``;
* ``jax forward-Laplacian``: the same hand-written propagation in ``jax.numpy``, jitted;
* ``torch.func``: ``vmap(lambda x: trace(hessian(u)(x)))``.

Cases: d = 50 (the issue's target), and a sweep d = 10, 50, 200. Every result is checked
against a float64 forward Laplacian by hand (itself checked against dense Hessians in
tests/test_benchmarks_smoke.py). Peak memory per implementation is reported as ``peak_MB``.
"""
from __future__ import annotations

import numpy as np

from .common import (
    Context,
    import_jax,
    import_torch,
    measure,
    normal,
    rel_err,
    to_jax,
    to_torch,
)
from .mlp import cupy_peak, jax_peak, torch_peak
from .report import Row

NAME = "laplacian"
HIDDEN = (768, 768, 512, 512)
POINTS = 1024
DIMS = (10, 50, 200)
TINY_HIDDEN, TINY_POINTS, TINY_DIMS = (8, 8, 6, 6), 5, (2, 3)


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


def reference(xp, args):
    return forward_laplacian(xp, *(a.astype(xp.float64) for a in args))


def build_dualgpu(ctx: Context):
    import dualgpu as dg

    return dg.laplacian(u, argnums=0, batch_axes=0)


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


def build_jax_nested(ctx: Context):
    jax = import_jax()
    ju = _jax_u(jax.numpy)

    def lap_one(x, *params):
        return jax.numpy.trace(jax.hessian(ju)(x, *params))

    return jax.jit(jax.vmap(lap_one, in_axes=(0,) + (None,) * 10))


def build_jax_forward(ctx: Context):
    jax = import_jax()
    return jax.jit(lambda *args: forward_laplacian(jax.numpy, *args))


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


def run(ctx: Context) -> list[Row]:
    """The d = 50 case with every peer, then the sweep over d (dualgpu, hand, JAX)."""
    hidden = TINY_HIDDEN if ctx.tiny else HIDDEN
    points = TINY_POINTS if ctx.tiny else POINTS
    dims = TINY_DIMS if ctx.tiny else DIMS
    main_d = dims[1]
    rows: list[Row] = []
    xp = ctx.xp
    for d in dims:
        args = make_inputs(xp, d, hidden, points)
        ref = reference(xp, args)
        case = f"d={d}"
        common = dict(workload=NAME, case=case, check=lambda out, ref=ref: rel_err(ctx, out, ref),
                      tol=1e-3)
        inputs = [args]
        rows.append(measure(ctx, impl="hand-fused", build=lambda: build_hand(ctx),
                            inputs=inputs, reference=True, extra=cupy_peak(ctx, inputs),
                            **common))
        rows.append(measure(ctx, impl="dualgpu", build=lambda: build_dualgpu(ctx),
                            inputs=inputs, extra=cupy_peak(ctx, inputs), **common))

        def jax_inputs(args=args):
            return [tuple(to_jax(ctx, a) for a in args)]

        rows.append(measure(ctx, impl="jax forward-Laplacian",
                            build=lambda: build_jax_forward(ctx), inputs=jax_inputs,
                            extra=jax_peak(lambda: jax_inputs()[0]), **common))
        rows.append(measure(ctx, impl="jax nested", build=lambda: build_jax_nested(ctx),
                            inputs=jax_inputs, extra=jax_peak(lambda: jax_inputs()[0]),
                            **common))
        if d == main_d:
            def torch_inputs(args=args):
                return [tuple(to_torch(ctx, a) for a in args)]

            rows.append(measure(ctx, impl="torch.func", build=lambda: build_torch(ctx),
                                inputs=torch_inputs, extra=torch_peak(ctx, torch_inputs),
                                **common))
    return rows
