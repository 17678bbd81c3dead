"""The deeper MLP of issue 12: 784-1024-1024-1024-10, sigmoid hidden layers, batch 8192, mean
squared error; HVP and gradient with respect to the flat parameters (2.9M floats), float32.

Rows: dualgpu at ``matmul_precision`` float32 and TF32, JAX at its default precision and at
``precision="highest"``, torch.func. The reference is a float64 forward-over-reverse written
out by hand (:func:`reference`), so no implementation checks itself. Each HVP carries its
HVP/grad ratio and peak device memory.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .common import (
    Context,
    converted_sets,
    import_jax,
    import_torch,
    jax_clock,
    measure,
    n_input_sets,
    normal,
    rel_err,
    to_jax,
    to_torch,
    torch_clock,
)
from .mlp import _hvp_over_grad, build_dualgpu, cupy_peak, jax_peak, torch_peak
from .report import Row

NAME = "mlp_deep"


@dataclass(frozen=True)
class DeepDims:
    """Layer widths (input, hidden..., output) and batch."""

    widths: tuple = (784, 1024, 1024, 1024, 10)
    batch: int = 8192

    def shapes(self) -> list[tuple]:
        """``[(W shape, b shape)]`` per layer, in the flat vector's order."""
        return [((a, b), (b,)) for a, b in zip(self.widths[:-1], self.widths[1:])]

    @property
    def n_params(self) -> int:
        return sum(a * b + b for a, b in zip(self.widths[:-1], self.widths[1:]))


FULL = DeepDims()
TINY = DeepDims((6, 5, 4, 3, 2), 7)


def unflatten(dims: DeepDims, p) -> list[tuple]:
    """``[(W, b)]`` per layer, views of the flat vector ``p``."""
    layers, o = [], 0
    for (wa, wb), (bb,) in dims.shapes():
        W = p[o:o + wa * wb].reshape(wa, wb)
        o += wa * wb
        layers.append((W, p[o:o + bb]))
        o += bb
    return layers


def make_loss(dims: DeepDims):
    """The loss as a user writes it (``np`` is rebound when dualgpu traces it)."""

    def loss(p, X, Y):
        layers = unflatten(dims, p)
        h = X
        for W, b in layers[:-1]:
            h = 1.0 / (1.0 + np.exp(-(h @ W + b)))
        W, b = layers[-1]
        return np.mean((h @ W + b - Y) ** 2)

    return loss


def make_inputs(xp, dims: DeepDims, n_sets: int, seed: int = 2) -> list[tuple]:
    """``(p, X, Y, v)`` sets in float32, weights scaled by 1/sqrt(fan-in)."""
    rng = xp.random.default_rng(seed)
    scale = []
    for (wa, wb), (bb,) in dims.shapes():
        scale.append(xp.full(wa * wb, 1.0 / np.sqrt(wa), dtype=xp.float32))
        scale.append(xp.full(bb, 0.1, dtype=xp.float32))
    scale = xp.concatenate(scale)
    sets = []
    for _ in range(n_sets):
        p = normal(rng, xp, dims.n_params) * scale
        X = normal(rng, xp, (dims.batch, dims.widths[0]))
        Y = normal(rng, xp, (dims.batch, dims.widths[-1]))
        v = normal(rng, xp, dims.n_params) * scale
        sets.append((p, X, Y, v))
    return sets


def reference(xp, dims: DeepDims, p, X, Y, v):
    """(grad, H·v) in float64: the forward pass with tangents, then the backward pass of the
    gradient and of its tangent, written out layer by layer.

    Example (against finite differences of the gradient)::

        >>> d = TINY
        >>> p, X, Y, v = (a.astype(np.float64) for a in make_inputs(np, d, 1)[0])
        >>> g, hv = reference(np, d, p, X, Y, v)
        >>> eps = 1e-6
        >>> fd = (reference(np, d, p + eps * v, X, Y, v)[0]
        ...       - reference(np, d, p - eps * v, X, Y, v)[0]) / (2 * eps)
        >>> bool(np.allclose(fd, hv, rtol=1e-5, atol=1e-8))
        True
    """
    p, X, Y, v = (a.astype(xp.float64) for a in (p, X, Y, v))
    layers, tangents = unflatten(dims, p), unflatten(dims, v)
    hs, dhs, ss = [X], [xp.zeros_like(X)], []
    for (W, b), (dW, db) in zip(layers[:-1], tangents[:-1]):
        z = hs[-1] @ W + b
        dz = dhs[-1] @ W + hs[-1] @ dW + db
        h = 1.0 / (1.0 + xp.exp(-z))
        s = h * (1.0 - h)
        hs.append(h)
        dhs.append(s * dz)
        ss.append(s)
    (W, b), (dW, db) = layers[-1], tangents[-1]
    c = 2.0 / (dims.batch * dims.widths[-1])
    g_z = c * (hs[-1] @ W + b - Y)
    dg_z = c * (dhs[-1] @ W + hs[-1] @ dW + db)
    grads, hvps = [], []
    for i in range(len(layers) - 1, -1, -1):
        (W, _), (dW, _) = layers[i], tangents[i]
        h, dh = hs[i], dhs[i]
        grads.append((h.T @ g_z, g_z.sum(0)))
        hvps.append((dh.T @ g_z + h.T @ dg_z, dg_z.sum(0)))
        if i == 0:
            break
        g_h = g_z @ W.T
        dg_h = dg_z @ W.T + g_z @ dW.T
        h_prev, s = hs[i], ss[i - 1]
        g_z, dg_z = g_h * s, dg_h * s + g_h * (1.0 - 2.0 * h_prev) * dhs[i]
    flat = lambda parts: xp.concatenate([a.ravel() for pair in reversed(parts) for a in pair])
    return flat(grads), flat(hvps)


# ------------------------------------------------------------------------------ peers
def build_jax(ctx: Context, dims: DeepDims, which: str, precision=None):
    jax = import_jax()
    jnp = jax.numpy

    def loss(p, X, Y):
        layers = unflatten(dims, p)
        h = X
        for W, b in layers[:-1]:
            h = jax.nn.sigmoid(jnp.matmul(h, W, precision=precision) + b)
        W, b = layers[-1]
        return jnp.mean((jnp.matmul(h, W, precision=precision) + b - Y) ** 2)

    grad = jax.grad(loss)
    if which == "hvp":
        return jax.jit(lambda p, X, Y, v: jax.jvp(lambda q: grad(q, X, Y), (p,), (v,))[1])
    return jax.jit(lambda p, X, Y, v: grad(p, X, Y))


def torch_fn(ctx: Context, dims: DeepDims, which: str):
    torch = import_torch(ctx)
    from torch.func import grad, jvp

    def loss(p, X, Y):
        layers = unflatten(dims, p)
        h = X
        for W, b in layers[:-1]:
            h = torch.sigmoid(h @ W + b)
        W, b = layers[-1]
        return ((h @ W + b - Y) ** 2).mean()

    g = grad(loss)
    if which == "hvp":
        return lambda p, X, Y, v: jvp(lambda q: g(q, X, Y), (p,), (v,))[1]
    return lambda p, X, Y, v: g(p, X, Y)


# ------------------------------------------------------------------------------ workload
def run(ctx: Context) -> list[Row]:
    """HVP and gradient per implementation (the float64 reference checks every row)."""
    dims = TINY if ctx.tiny else FULL
    loss = make_loss(dims)
    set_bytes = 4 * (2 * dims.n_params + dims.batch * (dims.widths[0] + dims.widths[-1]))
    inputs = make_inputs(ctx.xp, dims, n_input_sets(set_bytes))
    grad_ref, hvp_ref = reference(ctx.xp, dims, *inputs[0])
    checks = {"hvp": lambda out: rel_err(ctx, out, hvp_ref),
              "grad": lambda out: rel_err(ctx, out, grad_ref)}
    jax_inputs = converted_sets(ctx, inputs, to_jax)
    torch_inputs = converted_sets(ctx, inputs, to_torch)

    rows: list[Row] = []
    for which in ("hvp", "grad"):
        common = dict(workload=NAME, case=which, check=checks[which], tol=1e-3)
        rows.append(measure(ctx, impl="dualgpu", reference=True,
                            build=lambda w=which: build_dualgpu(ctx, loss, w),
                            inputs=inputs, extra=cupy_peak(ctx, inputs), **common))
        if ctx.gpu:
            rows.append(measure(ctx, impl="dualgpu (tf32)",
                                build=lambda w=which: build_dualgpu(ctx, loss, w, "tf32"),
                                inputs=inputs, **dict(common, tol=2e-2)))
        for impl, precision in (("jax", None), ("jax (precision=highest)", "highest")):
            rows.append(measure(ctx, impl=impl,
                                build=lambda w=which, pr=precision: build_jax(ctx, dims, w, pr),
                                inputs=jax_inputs, clock=jax_clock(),
                                extra=jax_peak(lambda: jax_inputs()[0]),
                                **dict(common, tol=2e-2 if precision is None else 1e-3)))
        rows.append(measure(ctx, impl="torch.func",
                            build=lambda w=which: torch_fn(ctx, dims, w),
                            inputs=torch_inputs, clock=lambda: torch_clock(ctx),
                            extra=torch_peak(ctx, torch_inputs), **common))
    _hvp_over_grad(rows)
    return rows
