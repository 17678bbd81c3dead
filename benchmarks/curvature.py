"""Gauss-Newton products and K-FAC factors (issue 38) on the MLP of ``mlp.py``: 784-512-10,
sigmoid hidden layer, batch 4096, mean squared error, float32.

Cases and implementations:

* ``ggn``: the GGN-vector product ``Jᵀ H_l J v``. ``dualgpu``: the product program of
  ``dg.ggn`` (``dg.jit(ggn_product(model, loss))``: the model's JVP, the loss's HVP in the
  outputs, the model's VJP, one program) at ``matmul_precision`` float32 (and tf32 on the
  GPU); ``dualgpu (operator)``: ``G @ v`` through the SciPy/cupyx operator, the operator built
  once per input set; ``jax``: the same three steps written by hand (``jvp`` of the model,
  ``jvp(grad)`` of the loss in the outputs, ``vjp``), jitted, at JAX's default matmul
  precision and at ``"highest"``; ``curvlinops``: its ``GGNLinearOperator`` on the same
  network in PyTorch (skipped when torch or curvlinops is not importable);
* ``grad``: one gradient of the loss (``dg.grad``; JAX's at both precisions): the ratio
  ``ggn/grad`` of each implementation is in its ``extra``;
* ``kfac``: the Kronecker factors, what issue 38's goal "K-FAC factors ≤ 1.2× one
  gradient" names: ``dg.kfac(model, "mse", ...)`` built afresh per call (one program per
  batch: the forward, the loss Hessian's closed-form roots, the 10 VJPs as one ``vmap``;
  then the Grams of every layer; no eigendecomposition, those wait for a first inverse or
  spectrum, and no product), against curvlinops' ``KFACLinearOperator``
  (``type-2``) built afresh per call with one product (which forces its factors, computed
  in the constructor or at the first product depending on its version; the product itself
  is two GEMMs per layer, small next to the factors).

Every result is checked against a float64 reference written out by hand
(:func:`ggn_reference`). ``python -m benchmarks.curvature --small`` runs the tiny CPU sizes
(no GPU needed) and prints the rows, each dualgpu row's ratios to the gradient and to its
peers, and issue 38's table (:func:`issue_table`). The float64 agreement of every operator with
curvlinops' (to ~1e-15) is ``benchmarks/curvlinops_check.py``'s.
"""
from __future__ import annotations

import numpy as np

from . import mlp
from .common import (
    Context,
    converted_sets,
    import_from_wheels,
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
from .mlp import Dims, unflatten
from .report import Row

# curvlinops first (the one that must be there), then its pure-Python dependencies
CURVLINOPS_WHEELS = ("curvlinops_for_pytorch-", "backpack_for_pytorch-", "einconv-", "einops-",
                     "linear_operator-", "opt_einsum-", "unfoldNd-", "tqdm-")

NAME = "curvature"


def model(params, X):
    """The network as a user writes it (``np`` is rebound when traced)."""
    W1, b1, W2, b2 = params
    h = 1.0 / (1.0 + np.exp(-(X @ W1 + b1)))
    return h @ W2 + b2


def ggn_reference(xp, dims: Dims, p, X, Y, v):
    """``Jᵀ H_l J v`` in float64, by the chain rule written out; H_l = 2 / (N C) I."""
    p, X, v = (a.astype(xp.float64) for a in (p, X, v))
    W1, b1, W2, b2 = unflatten(dims, p)
    dW1, db1, dW2, db2 = unflatten(dims, v)
    h = 1.0 / (1.0 + xp.exp(-(X @ W1 + b1)))
    s = h * (1.0 - h)
    dh = s * (X @ dW1 + db1)
    u = 2.0 / (dims.batch * dims.d_out) * (dh @ W2 + h @ dW2 + db2)
    gz = (u @ W2.T) * s
    return xp.concatenate([(X.T @ gz).ravel(), gz.sum(0), (h.T @ u).ravel(), u.sum(0)])


def build_dualgpu(ctx: Context, dims: Dims, which: str, precision: str = "float32"):
    import dualgpu as dg
    from dualgpu.api.gauss_newton import ggn_product

    product = dg.jit(ggn_product(model, dg.nn.mse))
    grad = dg.grad(mlp.make_loss(dims))

    def call(p, X, Y, v):
        if dg.config["matmul_precision"] != precision:
            dg.config["matmul_precision"] = precision
        if which == "grad":
            return grad(p, X, Y)
        return product(unflatten(dims, p), X, Y, v)

    return call


def build_operator(ctx: Context, dims: Dims, inputs):
    """``G @ v`` through ``dg.ggn``'s operator, one built per input set (not timed)."""
    import dualgpu as dg

    ops = {id(p): dg.ggn(model, "mse", unflatten(dims, p), X, Y) for p, X, Y, _ in inputs}
    return lambda p, X, Y, v: ops[id(p)] @ v


def build_kfac(ctx: Context, dims: Dims):
    """The K-FAC factors (``dg.kfac`` built afresh; its eigendecompositions are lazy)."""
    import dualgpu as dg

    def call(p, X, Y, v):
        return [f for pair in dg.kfac(model, "mse", unflatten(dims, p), X, Y).factors.values()
                for f in pair]

    return call


def build_jax(ctx: Context, dims: Dims, which: str, precision=None):
    jax = import_jax()
    jnp = jax.numpy

    def net(p, X):
        W1, b1, W2, b2 = unflatten(dims, p)
        h = jax.nn.sigmoid(jnp.matmul(X, W1, precision=precision) + b1)
        return jnp.matmul(h, W2, precision=precision) + b2

    def loss(out, Y):
        return jnp.mean((out - Y) ** 2)

    if which == "grad":
        return jax.jit(lambda p, X, Y, v: jax.grad(lambda q: loss(net(q, X), Y))(p))

    def ggn(p, X, Y, v):
        out, jv = jax.jvp(lambda q: net(q, X), (p,), (v,))
        hjv = jax.jvp(lambda o: jax.grad(loss)(o, Y), (out,), (jv,))[1]
        return jax.vjp(lambda q: net(q, X), p)[1](hjv)[0]

    return jax.jit(ggn)


def _torch_net(ctx: Context, dims: Dims, p):
    """The network in torch with the weights of the torch tensor ``p`` (``Linear`` holds
    ``Wᵀ``)."""
    torch = import_torch(ctx)
    W1, b1, W2, b2 = unflatten(dims, p)
    net = torch.nn.Sequential(torch.nn.Linear(dims.d_in, dims.d_hid), torch.nn.Sigmoid(),
                              torch.nn.Linear(dims.d_hid, dims.d_out)).to(W1.device)
    with torch.no_grad():
        for layer, W, b in ((net[0], W1, b1), (net[2], W2, b2)):
            layer.weight.copy_(W.T)
            layer.bias.copy_(b)
    return torch, net


def _to_torch_order(torch, dims: Dims, v):
    W1, b1, W2, b2 = unflatten(dims, v)
    return torch.cat([W1.T.reshape(-1), b1, W2.T.reshape(-1), b2])


def _from_torch_order(torch, dims: Dims, out):
    o1 = dims.d_in * dims.d_hid
    o2, o3 = o1 + dims.d_hid, o1 + dims.d_hid + dims.d_hid * dims.d_out
    return torch.cat([out[:o1].reshape(dims.d_hid, dims.d_in).T.reshape(-1), out[o1:o2],
                      out[o2:o3].reshape(dims.d_out, dims.d_hid).T.reshape(-1), out[o3:]])


def build_curvlinops(ctx: Context, dims: Dims, inputs, which: str):
    """curvlinops' GGN product (one operator per input set, built untimed) or its K-FAC
    (built and its factors computed per call), in the flat order of the other rows."""
    torch = import_torch(ctx)
    curvlinops = import_from_wheels("curvlinops", CURVLINOPS_WHEELS, site="curvlinops",
                                    how="benchmarks/gpu_wheels.txt lists them")
    ops = {}
    for p, X, Y, _ in inputs:
        _, net = _torch_net(ctx, dims, p)
        params = [q for q in net.parameters()]
        data = [(X, Y)]
        ops[id(p)] = (net, params, data)

    def call(p, X, Y, v):
        net, params, data = ops[id(p)]
        if which == "ggn":
            key = ("ggn", id(p))
            if key not in ops:
                ops[key] = curvlinops.GGNLinearOperator(net, torch.nn.MSELoss(), params, data,
                                                        check_deterministic=False)
            op = ops[key]
        else:
            op = curvlinops.KFACLinearOperator(net, torch.nn.MSELoss(), params, data,
                                               fisher_type="type-2",
                                               check_deterministic=False)
        return _from_torch_order(torch, dims, op @ _to_torch_order(torch, dims, v))

    return call


def run(ctx: Context) -> list[Row]:
    dims = mlp.TINY if ctx.tiny else mlp.FULL
    set_bytes = 4 * (2 * dims.n_params + dims.batch * (dims.d_in + dims.d_out))
    inputs = mlp.make_inputs(ctx.xp, dims, n_input_sets(set_bytes))
    ggn_ref = ggn_reference(ctx.xp, dims, *inputs[0])
    grad_ref = mlp.reference(ctx.xp, dims, *inputs[0])[0]
    jax_inputs = converted_sets(ctx, inputs, to_jax)
    torch_inputs = converted_sets(ctx, inputs, to_torch)
    checks = {"ggn": lambda out: rel_err(ctx, out, ggn_ref),
              "grad": lambda out: rel_err(ctx, out, grad_ref)}
    rows: list[Row] = []
    for which in ("ggn", "grad"):
        common = dict(workload=NAME, case=which, check=checks[which], tol=1e-3)
        rows.append(measure(ctx, impl="dualgpu", reference=which == "grad",
                            build=lambda w=which: build_dualgpu(ctx, dims, w),
                            inputs=inputs, **common))
        if ctx.gpu:
            rows.append(measure(ctx, impl="dualgpu (tf32)",
                                build=lambda w=which: build_dualgpu(ctx, dims, w, "tf32"),
                                inputs=inputs, **common))
        if which == "ggn":
            rows.append(measure(ctx, impl="dualgpu (operator)",
                                build=lambda: build_operator(ctx, dims, inputs),
                                inputs=inputs, **common))
        for impl, precision in (("jax", None), ("jax (precision=highest)", "highest")):
            rows.append(measure(ctx, impl=impl,
                                build=lambda w=which, pr=precision: build_jax(ctx, dims, w, pr),
                                inputs=jax_inputs, clock=jax_clock(), **common))
        if which == "ggn":
            rows.append(measure(ctx, impl="curvlinops",
                                build=lambda: build_curvlinops(ctx, dims, torch_inputs(), "ggn"),
                                inputs=torch_inputs, clock=lambda: torch_clock(ctx),
                                **common))
    kfac_common = dict(workload=NAME, case="kfac")
    rows.append(measure(ctx, impl="dualgpu", build=lambda: build_kfac(ctx, dims),
                        inputs=inputs, **kfac_common))
    rows.append(measure(ctx, impl="curvlinops",
                        build=lambda: build_curvlinops(ctx, dims, torch_inputs(), "kfac"),
                        inputs=torch_inputs, clock=lambda: torch_clock(ctx), **kfac_common))
    _over_grad(rows)
    return rows


def _over_grad(rows: list[Row]) -> None:
    """The ratios of issue 38's table in each row's ``extra``: ``ggn/grad`` and
    ``kfac/grad`` against dualgpu's gradient (and ``ggn/own grad``, each peer's own), and
    each dualgpu row of a case against the peers measured on it (``vs jax``, ``vs jax
    (precision=highest)``, ``vs curvlinops``)."""
    by = {(r.case, r.impl): r for r in rows if r.status == "ok"}
    base = by.get(("grad", "dualgpu"))
    for (case, impl), r in by.items():
        if case in ("ggn", "kfac") and base is not None:
            r.extra[f"{case}/grad"] = r.time_us / base.time_us
        own = by.get(("grad", impl))
        if case == "ggn" and own is not None:
            r.extra["ggn/own grad"] = r.time_us / own.time_us
        if impl.startswith("dualgpu") and case in ("ggn", "kfac"):
            for peer in ("jax", "jax (precision=highest)", "curvlinops"):
                other = by.get((case, peer))
                if other is not None:
                    r.extra[f"vs {peer}"] = r.time_us / other.time_us


def issue_table(rows: list[Row]) -> list[str]:
    """Issue 38's performance table, one line per goal (``benchmarks.report``'s targets of
    this workload), evaluated on these rows whatever the device (a CPU run's figures are
    not the goal's, which is the H200's)."""
    from .report import TARGETS

    lines = []
    for t in TARGETS:
        if t.workload == NAME:
            measured, met = t.evaluate(rows)
            verdict = "-" if met is None else ("met" if met else "NOT met")
            lines.append(f"{t.what:<40} {t.goal:<32} {measured:<40} {verdict}")
    return lines


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="the tiny CPU sizes")
    args = parser.parse_args()
    gpu = False
    if not args.small:
        from .run import gpu_available

        gpu = gpu_available()
    ctx = Context(gpu=gpu, tiny=args.small, quick=args.small, budget_s=0.2 if args.small
                  else 4.0)
    rows = run(ctx)
    for row in rows:
        extra = ", ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}"
                          for k, v in row.extra.items())
        print(f"{row.case:<6} {row.impl:<26} {row.status:<8} "
              f"{'' if row.time_us is None else f'{row.time_us:10.1f} us'} {extra} {row.note}")
    print(f"\nissue 38's table ({'H200' if gpu else 'CPU'}, "
          f"{'tiny sizes' if args.small else '784-512-10, batch 4096'}):")
    print("\n".join(issue_table(rows)))
