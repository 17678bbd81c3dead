"""The MLP HVP written two ways, with two losses: does the layout of the source matter?

784-512-10, sigmoid hidden layer, batch 4096, flat float32 parameters, as :mod:`.mlp`, in
four programs that differ only in how the user wrote them:

- **batch-major**: ``X`` is ``(batch, d_in)``, ``h = σ(X @ W1 + b1)``, ``out = h @ W2 + b2``;
- **feature-major**: ``X`` is ``(d_in, batch)``, ``h = σ(W1 @ X + b1[:, None])``,
  ``out = W2 @ h + b2[:, None]`` (the weights stored transposed);

each with the mean squared error against ``Y`` or ``mean_batch Σ σ(out)`` (a sum of
sigmoids, so both layers end in a sigmoid). The math is the same, so the planner should pick
the same products and kernels: the feature-major rows should cost what the batch-major ones
do. Peers: JAX at its default matmul precision and at ``highest``, and torch.func.
"""
from __future__ import annotations

import numpy as np

from .common import (
    Context,
    converted_sets,
    import_jax,
    import_torch,
    jax_clock,
    measure,
    n_input_sets,
    rel_err,
    to_jax,
    to_torch,
    torch_clock,
)
from .mlp import FULL, TINY, Dims, build_dualgpu, make_inputs
from .report import Row

NAME = "mlp_layouts"
LAYOUTS = ("batch-major", "feature-major")
LOSSES = ("mse", "sigmoid-sum")


def case_name(layout: str, loss: str) -> str:
    return f"{layout} {loss}"


def make_loss(dims: Dims, layout: str, loss: str, lib=None, mm=None):
    """The loss as a user writes it. ``lib`` is the array namespace (``np`` for dualgpu,
    rebound when traced; ``jax.numpy`` or ``torch`` for the peers); ``mm`` the matrix
    product (default ``@``; JAX's rows pass one with their precision)."""
    o1, o2, o3, _ = dims.offsets
    D, H, O, B = dims.d_in, dims.d_hid, dims.d_out, dims.batch
    xp = lib if lib is not None else np
    sigmoid = (lambda z: 1.0 / (1.0 + xp.exp(-z)))
    mm = mm or (lambda a, b: a @ b)

    def head(out, Y):
        if loss == "mse":
            return ((out - Y) ** 2).mean()
        return sigmoid(out).sum() / B

    if layout == "batch-major":
        def fn(p, X, Y):
            h = sigmoid(mm(X, p[:o1].reshape(D, H)) + p[o1:o2])
            return head(mm(h, p[o2:o3].reshape(H, O)) + p[o3:], Y)
    else:
        def fn(p, X, Y):
            h = sigmoid(mm(p[:o1].reshape(H, D), X) + p[o1:o2].reshape(H, 1))
            return head(mm(p[o2:o3].reshape(O, H), h) + p[o3:].reshape(O, 1), Y)
    return fn


def to_feature_major(xp, dims: Dims, flat):
    """A batch-major flat parameter vector with its two weight blocks transposed."""
    o1, o2, o3, _ = dims.offsets
    D, H, O = dims.d_in, dims.d_hid, dims.d_out
    return xp.concatenate([flat[:o1].reshape(D, H).T.ravel(), flat[o1:o2],
                           flat[o2:o3].reshape(H, O).T.ravel(), flat[o3:]])


def layout_inputs(xp, dims: Dims, layout: str, sets):
    """``(p, X, Y, v)`` sets of :func:`.mlp.make_inputs` in ``layout`` (contiguous)."""
    if layout == "batch-major":
        return sets
    return [(to_feature_major(xp, dims, p), xp.ascontiguousarray(X.T),
             xp.ascontiguousarray(Y.T), to_feature_major(xp, dims, v))
            for p, X, Y, v in sets]


def reference(xp, dims: Dims, loss: str, p, X, Y, v):
    """H·v of the batch-major program in float64, forward-over-reverse written out; the
    loss enters through its first and second derivative in ``out``."""
    o1, o2, o3, _ = dims.offsets
    D, H, O, B = dims.d_in, dims.d_hid, dims.d_out, dims.batch
    p, X, Y, v = (a.astype(xp.float64) for a in (p, X, Y, v))
    W1, b1, W2, b2 = p[:o1].reshape(D, H), p[o1:o2], p[o2:o3].reshape(H, O), p[o3:]
    dW1, db1, dW2, db2 = v[:o1].reshape(D, H), v[o1:o2], v[o2:o3].reshape(H, O), v[o3:]
    h = 1.0 / (1.0 + xp.exp(-(X @ W1 + b1)))
    s = h * (1.0 - h)
    dh = s * (X @ dW1 + db1)
    out = h @ W2 + b2
    dout = dh @ W2 + h @ dW2 + db2
    if loss == "mse":
        c = 2.0 / (B * O)
        f1, f2 = c * (out - Y), c * xp.ones_like(out)
    else:
        y = 1.0 / (1.0 + xp.exp(-out))
        f1 = y * (1.0 - y) / B
        f2 = f1 * (1.0 - 2.0 * y)
    g_out, dg_out = f1, f2 * dout
    g_h = g_out @ W2.T
    dg_h = dg_out @ W2.T + g_out @ dW2.T
    dg_z = dg_h * s + g_h * (1.0 - 2.0 * h) * dh
    return xp.concatenate([(X.T @ dg_z).ravel(), dg_z.sum(0),
                           (dh.T @ g_out + h.T @ dg_out).ravel(), dg_out.sum(0)])


def build_jax(dims: Dims, layout: str, loss: str, precision=None):
    jax = import_jax()
    jnp = jax.numpy

    grad = jax.grad(make_loss(dims, layout, loss, jnp,
                              lambda a, b: jnp.matmul(a, b, precision=precision)))
    return jax.jit(lambda p, X, Y, v: jax.jvp(lambda q: grad(q, X, Y), (p,), (v,))[1])


def build_torch(ctx: Context, dims: Dims, layout: str, loss: str):
    torch = import_torch(ctx)
    from torch.func import grad, jvp

    g = grad(make_loss(dims, layout, loss, torch))
    return lambda p, X, Y, v: jvp(lambda q: g(q, X, Y), (p,), (v,))[1]


def run(ctx: Context) -> list[Row]:
    """The HVP in each layout and loss: dualgpu at float32 and TF32, JAX at both
    precisions, torch.func. The reference is the batch-major float64 HVP, transposed into
    the feature-major parameter order for those rows."""
    dims = TINY if ctx.tiny else FULL
    set_bytes = 4 * (2 * dims.n_params + dims.batch * (dims.d_in + dims.d_out))
    base = make_inputs(ctx.xp, dims, n_input_sets(set_bytes))
    rows: list[Row] = []
    for loss in LOSSES:
        ref = reference(ctx.xp, dims, loss, *base[0])
        for layout in LAYOUTS:
            rows += case_rows(ctx, dims, layout, loss, base, ref)
    return rows


def case_rows(ctx: Context, dims: Dims, layout: str, loss: str, base, ref) -> list[Row]:
    xp = ctx.xp
    want = ref if layout == "batch-major" else to_feature_major(xp, dims, ref)
    inputs = layout_inputs(xp, dims, layout, base)
    user_loss = make_loss(dims, layout, loss)
    common = dict(workload=NAME, case=case_name(layout, loss), tol=1e-3,
                  check=lambda out: rel_err(ctx, out, want))
    jax_inputs = converted_sets(ctx, inputs, to_jax)
    rows = []
    for precision in ("float32", "tf32") if ctx.gpu else ("float32",):
        impl = "dualgpu" if precision == "float32" else f"dualgpu ({precision})"
        rows.append(measure(ctx, impl=impl, inputs=inputs, build=lambda p=precision:
                            build_dualgpu(ctx, user_loss, "hvp", p), **common))
    for precision, impl in ((None, "jax"), ("highest", "jax (precision=highest)")):
        rows.append(measure(ctx, impl=impl, inputs=jax_inputs, clock=jax_clock(),
                            build=lambda p=precision: build_jax(dims, layout, loss, p),
                            **common))
    rows.append(measure(ctx, impl="torch.func", inputs=converted_sets(ctx, inputs, to_torch),
                        build=lambda: build_torch(ctx, dims, layout, loss),
                        clock=lambda: torch_clock(ctx), **common))
    return rows
