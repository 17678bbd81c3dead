"""Scenario 1 scaled: HVP and gradient of an MLP loss with respect to the flat parameters.

784-512-10, sigmoid hidden layer, batch 4096, mean squared error. The parameter vector ``p``
(407,050 floats) is unflattened by slicing and reshaping inside the loss. Reported: the HVP
and the gradient per implementation, HVP/grad for each, and the peak device memory of each.

The hand-fused reference is the HVP written out by hand: five cuBLAS products (the two
large ones, ``X·[W1 | dW1]`` at 6.6 GFLOP and ``Xᵀ·dz̄`` at 3.3 GFLOP, carry nearly all the
work) and four small fused kernels for everything elementwise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .common import (
    Context,
    Skip,
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
from .report import Row

NAME = "mlp"


@dataclass(frozen=True)
class Dims:
    """Layer sizes and batch."""

    d_in: int = 784
    d_hid: int = 512
    d_out: int = 10
    batch: int = 4096

    @property
    def offsets(self) -> tuple[int, int, int, int]:
        o1 = self.d_in * self.d_hid
        o2 = o1 + self.d_hid
        o3 = o2 + self.d_hid * self.d_out
        return o1, o2, o3, o3 + self.d_out

    @property
    def n_params(self) -> int:
        return self.offsets[3]


FULL = Dims()
TINY = Dims(12, 8, 3, 5)


def make_loss(dims: Dims):
    """The loss as a user writes it, for dualgpu (``np`` is rebound when traced)."""
    o1, o2, o3, _ = dims.offsets
    d_in, d_hid, d_out = dims.d_in, dims.d_hid, dims.d_out

    def loss(p, X, Y):
        W1 = p[:o1].reshape(d_in, d_hid)
        b1 = p[o1:o2]
        W2 = p[o2:o3].reshape(d_hid, d_out)
        b2 = p[o3:]
        h = 1.0 / (1.0 + np.exp(-(X @ W1 + b1)))
        out = h @ W2 + b2
        return np.mean((out - Y) ** 2)

    return loss


def unflatten(dims: Dims, p):
    o1, o2, o3, _ = dims.offsets
    return (p[:o1].reshape(dims.d_in, dims.d_hid), p[o1:o2],
            p[o2:o3].reshape(dims.d_hid, dims.d_out), p[o3:])


def make_inputs(xp, dims: Dims, n_sets: int, seed: int = 1) -> list[tuple]:
    """``(p, X, Y, v)`` sets in float32; weights small enough that sigmoid is not flat."""
    rng = xp.random.default_rng(seed)
    sets = []
    for _ in range(n_sets):
        p = normal(rng, xp, dims.n_params, 0.05)
        X = normal(rng, xp, (dims.batch, dims.d_in))
        Y = normal(rng, xp, (dims.batch, dims.d_out))
        v = normal(rng, xp, dims.n_params)
        sets.append((p, X, Y, v))
    return sets


def reference(xp, dims: Dims, p, X, Y, v):
    """(grad, H·v) in float64, by the chain rule written out (forward-over-reverse by hand)."""
    p, X, Y, v = (a.astype(xp.float64) for a in (p, X, Y, v))
    W1, b1, W2, b2 = unflatten(dims, p)
    dW1, db1, dW2, db2 = unflatten(dims, v)
    c = 2.0 / (dims.batch * dims.d_out)
    h = 1.0 / (1.0 + xp.exp(-(X @ W1 + b1)))
    s = h * (1.0 - h)
    dh = s * (X @ dW1 + db1)
    g_out = c * (h @ W2 + b2 - Y)
    dg_out = c * (dh @ W2 + h @ dW2 + db2)
    g_h = g_out @ W2.T
    dg_h = dg_out @ W2.T + g_out @ dW2.T
    g_z = g_h * s
    dg_z = dg_h * s + g_h * (1.0 - 2.0 * h) * dh
    grad = xp.concatenate([(X.T @ g_z).ravel(), g_z.sum(0), (h.T @ g_out).ravel(),
                           g_out.sum(0)])
    hvp = xp.concatenate([(X.T @ dg_z).ravel(), dg_z.sum(0),
                          (dh.T @ g_out + h.T @ dg_out).ravel(), dg_out.sum(0)])
    return grad, hvp


# ------------------------------------------------------------------------------ hand-fused
KERNEL_SOURCE = r"""
// W2cat = [W2 | dW2] (H x 2O);  Wblk = [[W2^T, 0], [dW2^T, W2^T]] (2O x 2H)
extern "C" __global__ void mlp_weights(const float* W2, const float* dW2, float* W2cat,
                                       float* Wblk, int H, int O) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int n1 = H * 2 * O, n2 = 2 * O * 2 * H;
    if (i < n1) {
        int r = i / (2 * O), c = i % (2 * O);
        W2cat[i] = c < O ? W2[r * O + c] : dW2[r * O + c - O];
    } else if (i < n1 + n2) {
        int j = i - n1, r = j / (2 * H), c = j % (2 * H);
        float w;
        if (r < O) w = c < H ? W2[c * O + r] : 0.0f;
        else w = c < H ? dW2[c * O + (r - O)] : W2[(c - H) * O + (r - O)];
        Wblk[j] = w;
    }
}

// Zcat = X @ [W1 | dW1] (B x 2H).  HD2 = [h ; dh] (2B x H):
// h = sigmoid(z + b1), dh = h (1 - h) (dz + db1)
extern "C" __global__ void mlp_hidden(const float* Zcat, const float* b1, const float* db1,
                                      float* HD2, int B, int H) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= B * H) return;
    int r = i / H, c = i % H;
    float z = Zcat[r * 2 * H + c] + b1[c];
    float dz = Zcat[r * 2 * H + H + c] + db1[c];
    float h = 1.0f / (1.0f + expf(-z));
    HD2[i] = h;
    HD2[B * H + i] = h * (1.0f - h) * dz;
}

// OUT4 = HD2 @ W2cat (2B x 2O).  Gcat = [dg_out | g_out] (B x 2O), GG2 = [dg_out ; g_out]
extern "C" __global__ void mlp_output(const float* OUT4, const float* b2, const float* db2,
                                      const float* Y, float* Gcat, float* GG2, int B, int O,
                                      float c) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= B * O) return;
    int r = i / O, k = i % O;
    const float* top = OUT4 + r * 2 * O;
    const float* bottom = OUT4 + (B + r) * 2 * O;
    float g = c * (top[k] + b2[k] - Y[i]);
    float dg = c * (top[O + k] + bottom[k] + db2[k]);
    Gcat[r * 2 * O + k] = dg;
    Gcat[r * 2 * O + O + k] = g;
    GG2[i] = dg;
    GG2[B * O + i] = g;
}

// GH = Gcat @ Wblk = [dg_h | g_h] (B x 2H);  dg_z = dg_h s + g_h (1 - 2h) dh
extern "C" __global__ void mlp_backward(const float* GH, const float* HD2, float* dGZ,
                                        int B, int H) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= B * H) return;
    int r = i / H, c = i % H;
    float h = HD2[i], dh = HD2[B * H + i];
    float dgh = GH[r * 2 * H + c], gh = GH[r * 2 * H + H + c];
    dGZ[i] = dgh * h * (1.0f - h) + gh * (1.0f - 2.0f * h) * dh;
}
"""


class NumpyKernels:
    """The four kernels in NumPy, with the same layouts: the CPU stand-in, and the check
    (in the smoke test) that the block-matrix bookkeeping is right."""

    def __init__(self, dims: Dims):
        self.B, self.H, self.O = dims.batch, dims.d_hid, dims.d_out
        self.c = np.float32(2.0 / (dims.batch * dims.d_out))

    def weights(self, W2, dW2):
        zeros = np.zeros((self.O, self.H), dtype=np.float32)
        return (np.concatenate([W2, dW2], axis=1),
                np.block([[W2.T, zeros], [dW2.T, W2.T]]))

    def hidden(self, Zcat, b1, db1):
        H = self.H
        h = 1.0 / (1.0 + np.exp(-(Zcat[:, :H] + b1)))
        return np.concatenate([h, h * (1.0 - h) * (Zcat[:, H:] + db1)], axis=0)

    def output(self, OUT4, b2, db2, Y):
        B, O = self.B, self.O
        top, bottom = OUT4[:B], OUT4[B:]
        g = self.c * (top[:, :O] + b2 - Y)
        dg = self.c * (top[:, O:] + bottom[:, :O] + db2)
        return np.concatenate([dg, g], axis=1), np.concatenate([dg, g], axis=0)

    def backward(self, GH, HD2):
        B, H = self.B, self.H
        h, dh = HD2[:B], HD2[B:]
        return GH[:, :H] * h * (1.0 - h) + GH[:, H:] * (1.0 - 2.0 * h) * dh


class CupyKernels(NumpyKernels):
    """The same four steps as CUDA kernels (one launch each)."""

    def __init__(self, dims: Dims):
        super().__init__(dims)
        import cupy as cp

        self.cp = cp
        module = cp.RawModule(code=KERNEL_SOURCE)
        self.k = {name: module.get_function(name) for name in
                  ("mlp_weights", "mlp_hidden", "mlp_output", "mlp_backward")}

    def _launch(self, name, count, args):
        self.k[name](((count + 255) // 256,), (256,), args)

    def weights(self, W2, dW2):
        cp, H, O = self.cp, self.H, self.O
        W2cat = cp.empty((H, 2 * O), dtype=cp.float32)
        Wblk = cp.empty((2 * O, 2 * H), dtype=cp.float32)
        self._launch("mlp_weights", H * 2 * O * 3, (W2, dW2, W2cat, Wblk, np.int32(H),
                                                    np.int32(O)))
        return W2cat, Wblk

    def hidden(self, Zcat, b1, db1):
        cp, B, H = self.cp, self.B, self.H
        HD2 = cp.empty((2 * B, H), dtype=cp.float32)
        self._launch("mlp_hidden", B * H, (Zcat, b1, db1, HD2, np.int32(B), np.int32(H)))
        return HD2

    def output(self, OUT4, b2, db2, Y):
        cp, B, O = self.cp, self.B, self.O
        Gcat = cp.empty((B, 2 * O), dtype=cp.float32)
        GG2 = cp.empty((2 * B, O), dtype=cp.float32)
        self._launch("mlp_output", B * O, (OUT4, b2, db2, Y, Gcat, GG2, np.int32(B),
                                           np.int32(O), self.c))
        return Gcat, GG2

    def backward(self, GH, HD2):
        cp, B, H = self.cp, self.B, self.H
        dGZ = cp.empty((B, H), dtype=cp.float32)
        self._launch("mlp_backward", B * H, (GH, HD2, dGZ, np.int32(B), np.int32(H)))
        return dGZ


def hand_fused(ctx: Context, dims: Dims):
    """The HVP by hand: five GEMMs (``X·[W1 | dW1]`` as one), four small kernels, two
    bias sums, written straight into the flat output."""
    o1, o2, o3, n = dims.offsets
    B, D, H, O = dims.batch, dims.d_in, dims.d_hid, dims.d_out
    xp = ctx.xp
    k = CupyKernels(dims) if ctx.gpu else NumpyKernels(dims)

    def run(p, X, Y, v):
        W1, b1, W2, b2 = unflatten(dims, p)
        dW1, db1, dW2, db2 = unflatten(dims, v)
        hv = xp.empty(n, dtype=xp.float32)
        W2cat, Wblk = k.weights(W2, dW2)
        HD2 = k.hidden(X @ xp.concatenate([W1, dW1], axis=1), b1, db1)     # [h ; dh]
        Gcat, GG2 = k.output(HD2 @ W2cat, b2, db2, Y)
        dGZ = k.backward(Gcat @ Wblk, HD2)
        _matmul_into(xp, X.T, dGZ, hv[:o1].reshape(D, H))
        hv[o1:o2] = dGZ.sum(axis=0)
        _matmul_into(xp, HD2.T, GG2, hv[o2:o3].reshape(H, O))
        hv[o3:] = GG2[:B].sum(axis=0)
        return hv

    return run


def _matmul_into(xp, a, b, dst) -> None:
    """``dst[...] = a @ b``, written in place by cuBLAS where the array library allows."""
    try:
        xp.matmul(a, b, out=dst)
    except (TypeError, ValueError, NotImplementedError):
        dst[...] = a @ b


# ------------------------------------------------------------------------------ peers
def build_dualgpu(ctx: Context, loss, which: str, precision: str = "float32"):
    """dualgpu's HVP or gradient under ``matmul_precision`` ``precision``. The switch is
    part of a program's key and changing it starts new programs, so a call sets it only
    when another row left it different (never inside a timed loop)."""
    import dualgpu as dg

    fn = dg.hvp(loss) if which == "hvp" else dg.grad(loss)

    def call(p, X, Y, v):
        if dg.config["matmul_precision"] != precision:
            dg.config["matmul_precision"] = precision
        return fn(p, X, Y, v) if which == "hvp" else fn(p, X, Y)

    return call


def build_jax(ctx: Context, dims: Dims, which: str, precision=None):
    jax = import_jax()
    jnp = jax.numpy
    o1, o2, o3, _ = dims.offsets

    def loss(p, X, Y):
        W1 = p[:o1].reshape(dims.d_in, dims.d_hid)
        W2 = p[o2:o3].reshape(dims.d_hid, dims.d_out)
        h = jax.nn.sigmoid(jnp.matmul(X, W1, precision=precision) + p[o1:o2])
        out = jnp.matmul(h, W2, precision=precision) + p[o3:]
        return jnp.mean((out - Y) ** 2)

    grad = jax.grad(loss)
    if which == "hvp":
        fn = jax.jit(lambda p, X, Y, v: jax.jvp(lambda q: grad(q, X, Y), (p,), (v,))[1])
    else:
        fn = jax.jit(lambda p, X, Y, v: grad(p, X, Y))
    return fn


def torch_fn(ctx: Context, dims: Dims, which: str):
    torch = import_torch(ctx)
    from torch.func import grad, jvp

    o1, o2, o3, _ = dims.offsets

    def loss(p, X, Y):
        W1 = p[:o1].reshape(dims.d_in, dims.d_hid)
        W2 = p[o2:o3].reshape(dims.d_hid, dims.d_out)
        h = torch.sigmoid(X @ W1 + p[o1:o2])
        out = h @ W2 + p[o3:]
        return ((out - Y) ** 2).mean()

    g = grad(loss)
    if which == "hvp":
        return lambda p, X, Y, v: jvp(lambda q: g(q, X, Y), (p,), (v,))[1]
    return lambda p, X, Y, v: g(p, X, Y)


def build_torch_compile(ctx: Context, dims: Dims, which: str):
    torch = import_torch(ctx)
    if not ctx.compile:
        raise Skip("torch.compile not requested (--no-compile)")
    return torch.compile(torch_fn(ctx, dims, which), dynamic=False)


# ------------------------------------------------------------------------------ memory
def eager_peak_bytes(fn, args) -> int:
    """Bytes CuPy's pool grows by during one call ``fn(*args)`` (the pool keeps freed blocks).

    The call runs with dualgpu's CUDA graphs off: a replayed graph takes its scratch memory
    from a private pool, captured once, that the default pool does not see -- an eager call
    allocates the same values from the default pool, so its peak is the program's."""
    import cupy as cp

    import dualgpu as dg

    stream = cp.cuda.get_current_stream()
    pool = cp.get_default_memory_pool()
    stream.synchronize()
    pool.free_all_blocks()
    before = pool.used_bytes()
    graphs = dg.config["cuda_graphs"]
    dg.config["cuda_graphs"] = False
    try:
        out = fn(*args)
        stream.synchronize()
    finally:
        dg.config["cuda_graphs"] = graphs
    peak = pool.total_bytes() - before
    del out
    return peak


def cupy_peak(ctx: Context, inputs):
    """``probe(fn)``: ``{"peak_MB": ...}`` of one eager call on the first input set
    (:func:`eager_peak_bytes`); nothing without a GPU."""
    def probe(fn):
        if not ctx.gpu:
            return {}
        return {"peak_MB": eager_peak_bytes(fn, inputs[0]) / 2**20}
    return probe


def torch_peak(ctx: Context, inputs):
    def probe(fn):
        if not ctx.gpu:
            return {}
        import torch

        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        sets = inputs() if callable(inputs) else inputs
        out = fn(*sets[0])
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - base
        del out
        return {"peak_MB": peak / 2**20}
    return probe


def jax_peak(args_of):
    """XLA's own account of the compiled program: temporaries plus outputs."""
    def probe(fn):
        try:
            stats = fn.lower(*args_of()).compile().memory_analysis()
            return {"peak_MB": (stats.temp_size_in_bytes + stats.output_size_in_bytes) / 2**20}
        except Exception as exc:  # noqa: BLE001
            return {"peak_MB": f"n/a ({type(exc).__name__})"}
    return probe


# ------------------------------------------------------------------------------ workload
def run(ctx: Context) -> list[Row]:
    """HVP and grad per implementation; JAX's grad is the reference of the grad case."""
    dims = TINY if ctx.tiny else FULL
    xp = ctx.xp
    loss = make_loss(dims)
    set_bytes = 4 * (2 * dims.n_params + dims.batch * (dims.d_in + dims.d_out))
    inputs = make_inputs(xp, dims, n_input_sets(set_bytes))
    grad_ref, hvp_ref = reference(xp, dims, *inputs[0])
    checks = {"hvp": lambda out: rel_err(ctx, out, hvp_ref),
              "grad": lambda out: rel_err(ctx, out, grad_ref)}
    tol = 1e-3
    jax_inputs = converted_sets(ctx, inputs, to_jax)
    torch_inputs = converted_sets(ctx, inputs, to_torch)

    rows: list[Row] = []
    for which in ("hvp", "grad"):
        common = dict(workload=NAME, case=which, check=checks[which], tol=tol)
        if which == "hvp":
            rows.append(measure(ctx, impl="hand-fused", build=lambda: hand_fused(ctx, dims),
                                inputs=inputs, reference=True,
                                extra=cupy_peak(ctx, inputs), **common))
        rows.append(measure(ctx, impl="dualgpu",
                            build=lambda w=which: build_dualgpu(ctx, loss, w),
                            inputs=inputs, extra=cupy_peak(ctx, inputs), **common))
        if ctx.gpu:
            for precision in ("tf32", "tf32x3"):
                rows.append(measure(ctx, impl=f"dualgpu ({precision})",
                                    build=lambda w=which, p=precision: build_dualgpu(
                                        ctx, loss, w, p), inputs=inputs, **common))
        rows.append(measure(ctx, impl="jax", reference=which == "grad",
                            build=lambda w=which: build_jax(ctx, dims, w),
                            inputs=jax_inputs, clock=jax_clock(),
                            extra=jax_peak(lambda: jax_inputs()[0]), **common))
        rows.append(measure(ctx, impl="jax (precision=highest)",
                            build=lambda w=which: build_jax(ctx, dims, w, "highest"),
                            inputs=jax_inputs, clock=jax_clock(),
                            extra=jax_peak(lambda: jax_inputs()[0]), **common))
        if ctx.gpu:   # the algorithm of dualgpu's "tf32x3" (XLA has it on GPUs only)
            rows.append(measure(ctx, impl="jax (precision=TF32_TF32_F32_X3)",
                                build=lambda w=which: build_jax(ctx, dims, w,
                                                                "TF32_TF32_F32_X3"),
                                inputs=jax_inputs, clock=jax_clock(),
                                extra=jax_peak(lambda: jax_inputs()[0]), **common))
        rows.append(measure(ctx, impl="torch.func",
                            build=lambda w=which: torch_fn(ctx, dims, w),
                            inputs=torch_inputs, clock=lambda: torch_clock(ctx),
                            extra=torch_peak(ctx, torch_inputs), **common))
        if ctx.compile and not ctx.tiny and not ctx.quick:
            rows.append(measure(ctx, impl="torch.compile",
                                build=lambda w=which: build_torch_compile(ctx, dims, w),
                                inputs=torch_inputs, clock=lambda: torch_clock(ctx),
                                extra=torch_peak(ctx, torch_inputs), **common))
    _hvp_over_grad(rows)
    for r in rows:
        if r.impl == "jax" and r.status == "ok":
            r.note = "; ".join(x for x in (r.note, "JAX default matmul precision") if x)
    return rows


def _hvp_over_grad(rows: list[Row]) -> None:
    by = {(r.case, r.impl): r for r in rows if r.status == "ok"}
    for (case, impl), r in by.items():
        g = by.get(("grad", impl))
        if case == "hvp" and g is not None:
            r.extra["hvp/grad"] = r.time_us / g.time_us
