"""CPU benchmark of issue 12 (``make bench-cpu``): dualgpu on NumPy against NumPy written by
hand, JAX (jit, CPU) and autograd where they are installed, as ratios measured in one run.

Workloads (float32) and the goals of issue 12:

* tiny Dense(10→1, sigmoid), batch 4: one HVP call — goal ≤ 10 µs per call; also timed as
  ``dualgpu (host_kernel)``: ``dg.config["host_kernel"] = True``, the program's tiny kernel
  compiled for the host CPU (skipped with one line where no C++ compiler is found);
* MLP 784-256-10 sigmoid, batch 256: HVP w.r.t. the flat parameters — goal ≤ JAX on CPU;
* per-particle grad + HVP, 100k particles (``f`` of scenario 2) — goal ≤ 1.25× NumPy by hand;
  also at 300k particles (issue 27's table). Both run their fusion plan with regions compiled
  for the host (``dg.config["host_fused"]``, the default at these sizes); each is also timed
  as ``dualgpu (Python program)`` with the switch off.

Each figure is the median over repeats of the mean time of a group of calls (the group is
sized to ~50 ms). ``--quick`` shortens the run. BLAS threads are the environment's
(``OPENBLAS_NUM_THREADS=1 make bench-cpu`` on a shared machine). JAX and autograd are
skipped with one line each when they do not import.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np


# ------------------------------------------------------------------------------ timing
def per_call(fn, args, repeats: int = 7, group_s: float = 0.05) -> float:
    """Median seconds per call of ``fn(*args)`` (results are not synchronised: CPU)."""
    fn(*args)
    t0 = time.perf_counter()
    fn(*args)
    one = max(time.perf_counter() - t0, 1e-7)
    n = max(1, int(group_s / one))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn(*args)
        times.append((time.perf_counter() - t0) / n)
    return float(np.median(times))


# ------------------------------------------------------------------------------ workloads
def tiny_case():
    from .dense_tiny import loss, make_inputs

    p, X, Y, v = make_inputs(np, 1)[0]

    def by_hand(p, X, Y, v):
        """H·v of the Dense loss, written out (the formula of dense_tiny.reference)."""
        n = X.shape[1]
        z = X @ p[:n] + p[n]
        s = 1.0 / (1.0 + np.exp(-z))
        s1 = s * (1.0 - s)
        r = s - Y[:, 0]
        c = np.float32(2.0 / X.shape[0])
        w = c * (s1 * s1 + r * s1 * (1.0 - 2.0 * s)) * (X @ v[:n] + v[n])
        return np.concatenate([X.T @ w, w.sum(keepdims=True)])

    return "tiny Dense HVP", loss, (p, X, Y, v), by_hand, "hvp"


def mlp_case():
    from .mlp import Dims, make_inputs, make_loss, unflatten

    dims = Dims(784, 256, 10, 256)
    p, X, Y, v = make_inputs(np, dims, 1)[0]

    def by_hand(p, X, Y, v):
        """Forward-over-reverse by hand (mlp.reference in float32, without the gradient)."""
        W1, b1, W2, b2 = unflatten(dims, p)
        dW1, db1, dW2, db2 = unflatten(dims, v)
        c = np.float32(2.0 / (dims.batch * dims.d_out))
        h = 1.0 / (1.0 + np.exp(-(X @ W1 + b1)))
        s = h * (1.0 - h)
        dh = s * (X @ dW1 + db1)
        g_out = c * (h @ W2 + b2 - Y)
        dg_out = c * (dh @ W2 + h @ dW2 + db2)
        dg_z = (dg_out @ W2.T + g_out @ dW2.T) * s + (g_out @ W2.T) * (1.0 - 2.0 * h) * dh
        return np.concatenate([(X.T @ dg_z).ravel(), dg_z.sum(0),
                               (dh.T @ g_out + h.T @ dg_out).ravel(), dg_out.sum(0)])

    return "MLP 784-256-10 b256 HVP", make_loss(dims), (p, X, Y, v), by_hand, "hvp"


def particles_case(n: int = 100_000):
    from .scenario2 import f, make_inputs, shape_for

    x, mu, v = make_inputs(np, shape_for(n), 1)[0]

    def by_hand(x, mu, v):
        d = x - mu[:, None, None, :]
        e = np.exp(-np.sum(d * d, axis=0))
        dv = np.sum(d * v, axis=0)
        return -2.0 * d * e, e * (4.0 * d * dv - 2.0 * v)

    return f"per-particle grad+HVP, {n // 1000}k", f, (x, mu, v), by_hand, "grad_and_hvp"


# ------------------------------------------------------------------------------ peers
def dualgpu_fn(loss, kind):
    import dualgpu as dg

    if kind == "hvp":
        return dg.hvp(loss)
    return dg.grad_and_hvp(loss, batch_axes=(1, 2, 3))


def jax_fn(loss_np, kind, case_name):
    import jax
    import jax.numpy as jnp

    loss = _rebind(loss_np, jnp)
    if kind == "hvp":
        def hvp(p, X, Y, v):
            return jax.jvp(jax.grad(loss), (p, X, Y), (v, jnp.zeros_like(X),
                                                       jnp.zeros_like(Y)))[1]
        step = jax.jit(hvp)
    else:
        def total(x, mu):
            return jnp.sum(loss(x, mu))

        def gh(x, mu, v):
            return jax.jvp(lambda x: jax.grad(total)(x, mu), (x,), (v,))
        step = jax.jit(gh)

    def run(*args):
        out = step(*args)
        jax.block_until_ready(out)
        return out

    return run, lambda args: tuple(jnp.asarray(a) for a in args)


def autograd_fn(loss_np, kind):
    import autograd
    import autograd.numpy as anp

    loss = _rebind(loss_np, anp)
    if kind == "hvp":
        return lambda p, X, Y, v: _ag_hvp(loss, p, X, Y, v)

    def gh(x, mu, v):
        def total(x):
            return anp.sum(loss(x, mu))
        g = autograd.grad(total)
        return g(x), autograd.grad(lambda x: anp.sum(g(x) * v))(x)

    return gh


def _ag_hvp(loss, p, X, Y, v):
    import autograd
    import autograd.numpy as anp

    g = autograd.grad(lambda p: loss(p, X, Y))
    return autograd.grad(lambda p: anp.sum(g(p) * v))(p)


def _rebind(fn, module):
    """``fn`` with its global ``np`` replaced by ``module`` (jax.numpy, autograd.numpy)."""
    import types

    globs = dict(fn.__globals__)
    globs["np"] = module
    return types.FunctionType(fn.__code__, globs, fn.__name__, fn.__defaults__,
                              fn.__closure__)


# ------------------------------------------------------------------------------ run
GOALS = {"tiny Dense HVP": ("dualgpu ≤ 10 µs", lambda r: r["dualgpu"] <= 10e-6),
         "MLP": ("dualgpu ≤ JAX", lambda r: r["dualgpu"] <= r["jax"] if "jax" in r else None),
         "per-particle": ("dualgpu ≤ 1.25× by hand",
                          lambda r: r["dualgpu"] <= 1.25 * r["numpy by hand"])}


def _goal(name):
    for prefix, goal in GOALS.items():
        if name.startswith(prefix):
            return goal
    return ("", lambda r: True)


def _check(got, want, name, who):
    got = [np.asarray(g) for g in (got if isinstance(got, (tuple, list)) else [got])]
    want = [np.asarray(w) for w in (want if isinstance(want, (tuple, list)) else [want])]
    for g, w in zip(got, want):
        err = float(np.max(np.abs(g - w)) / max(float(np.max(np.abs(w))), 1e-30))
        if err > 1e-3:
            print(f"  ! {who} disagrees with NumPy by hand on {name}: rel err {err:.1e}")


def run_case(case, peers: dict, repeats: int) -> dict:
    name, loss, args, by_hand, kind = case
    res = {"numpy by hand": per_call(by_hand, args, repeats)}
    dg_fn = dualgpu_fn(loss, kind)
    _check(dg_fn(*args), by_hand(*args), name, "dualgpu")
    res["dualgpu"] = per_call(dg_fn, args, repeats)
    if name.startswith("tiny"):
        res.update(host_kernel_time(loss, kind, args, by_hand, name, repeats))
    if name.startswith("per-particle"):
        res.update(python_program_time(loss, kind, args, repeats))
    if peers.get("jax"):
        run, convert = jax_fn(loss, kind, name)
        jargs = convert(args)
        _check(run(*jargs), by_hand(*args), name, "JAX")
        res["jax"] = per_call(run, jargs, repeats)
    if peers.get("autograd"):
        ag = autograd_fn(loss, kind)
        _check(ag(*args), by_hand(*args), name, "autograd")
        res["autograd"] = per_call(ag, args, max(3, repeats // 2))
    return res


def host_kernel_time(loss, kind, args, by_hand, name, repeats) -> dict:
    """``{"dualgpu (host_kernel)": seconds}`` and its first call (the build: the compile,
    unless the library is on disk) where the program runs as its host kernel; ``{}`` where it
    does not (no C++ compiler)."""
    import dualgpu as dg
    from dualgpu.runtime.executor import config

    fn = dualgpu_fn(loss, kind)
    config["host_kernel"] = True
    try:
        t0 = time.perf_counter()
        got = fn(*args)
        first = time.perf_counter() - t0
        if not dg.source(fn, *args).startswith("// host kernel"):
            print("dualgpu (host_kernel): no C++ compiler or not a tiny program, skipped")
            return {}
        _check(got, by_hand(*args), name, "dualgpu (host_kernel)")
        return {"dualgpu (host_kernel)": per_call(fn, args, repeats),
                "host_kernel first call": first}
    finally:
        config["host_kernel"] = False


def python_program_time(loss, kind, args, repeats) -> dict:
    """``{"dualgpu (Python program)": seconds}``: the generated Python, with
    ``dg.config["host_fused"]`` off (the time before fused host plans)."""
    from dualgpu.runtime.executor import config

    fn = dualgpu_fn(loss, kind)
    config["host_fused"] = False
    try:
        return {"dualgpu (Python program)": per_call(fn, args, repeats)}
    finally:
        config["host_fused"] = True


def _peers() -> dict:
    peers = {}
    for mod in ("jax", "autograd"):
        try:
            __import__(mod)
            peers[mod] = True
        except ImportError:
            print(f"{mod}: not installed, skipped")
            peers[mod] = False
    if peers["jax"]:
        import jax

        jax.config.update("jax_platforms", "cpu")
    return peers


def _verdict(met) -> str:
    return "n/a (peer not installed)" if met is None else ("met" if met else "NOT met")


def fmt(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    opts = ap.parse_args(argv)
    peers = _peers()
    repeats = 3 if opts.quick else 7
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
          f"BLAS threads {os.environ.get('OPENBLAS_NUM_THREADS', 'default')}")
    print(f"{'workload':32} {'dualgpu':>10} {'by hand':>10} {'dg/hand':>8} {'JAX':>10} "
          f"{'dg/JAX':>7} {'autograd':>10}  goal")
    for case in (tiny_case(), mlp_case(), particles_case(), particles_case(300_000)):
        res = run_case(case, peers, repeats)
        name = case[0]
        goal, met = _goal(name)
        jax_t = res.get("jax")
        ag_t = res.get("autograd")
        print(f"{name:32} {fmt(res['dualgpu']):>10} {fmt(res['numpy by hand']):>10} "
              f"{res['dualgpu'] / res['numpy by hand']:>7.2f}x "
              f"{fmt(jax_t) if jax_t else '-':>10} "
              f"{(res['dualgpu'] / jax_t) if jax_t else float('nan'):>6.2f}x "
              f"{fmt(ag_t) if ag_t else '-':>10}  {goal}: {_verdict(met(res))}")
        python_t = res.get("dualgpu (Python program)")
        if python_t:
            print(f"{'  dualgpu (Python program)':32} {fmt(python_t):>10} {'':>10} "
                  f"{python_t / res['numpy by hand']:>7.2f}x")
        host_t = res.get("dualgpu (host_kernel)")
        if host_t:
            print(f"{'  dualgpu (host_kernel)':32} {fmt(host_t):>10} {'':>10} "
                  f"{host_t / res['numpy by hand']:>7.2f}x "
                  f"{'':>10} {(host_t / jax_t) if jax_t else float('nan'):>6.2f}x "
                  f"{'':>10}  {goal}: {_verdict(host_t <= 10e-6)} "
                  f"(first call: {fmt(res['host_kernel first call'])})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
