"""``python -m dualgpu demo``: the three user scenarios (docs/faq.md), each checked against
finite differences, on CuPy when a GPU is present and on NumPy otherwise.

1. HVP of a Dense(10→1, sigmoid) loss as a :class:`dualgpu.HessianOperator` inside conjugate
   gradients, and one cubic-regularised Newton step, counting Hessian-vector products.
2. Per-particle gradient and HVP of ``exp(-sum((x - mu)**2, axis=0))`` with
   ``batch_axes=(1, 2, 3)``; a function that couples particles is refused.
3. Gradient of ``sum(tanh(x @ A))`` with ``A`` a sparse CSR matrix.

Example::

    >>> from dualgpu.tools.demo import run
    >>> status = run(show_source=False)            # prints the report
    dualgpu ... demo on ...
    ...
    >>> status                                     # 0 when every check passes
    0
"""
from __future__ import annotations

import os
import re
import shutil
import sys
import time
from collections.abc import Callable

import numpy as np

import dualgpu as dg
from dualgpu.backends import backend_for_xp
from dualgpu.backends.cupy import cupy_available


class Report:
    """Prints check results and remembers whether any failed."""

    def __init__(self, out: Callable[[str], None] = print):
        self.out = out
        self.failed = 0
        self.passed = 0

    def check(self, what: str, got, want, rtol: float) -> None:
        got, want = _host(got).astype(np.float64), _host(want).astype(np.float64)
        err = float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300))
        ok = err <= rtol
        self.failed += not ok
        self.passed += ok
        self.out(f"  {what}: relative error {err:.1e} (tolerance {rtol:.0e}) "
                 f"{'ok' if ok else 'FAILED'}")

    def expect(self, what: str, ok: bool) -> None:
        self.failed += not ok
        self.passed += ok
        self.out(f"  {what}: {'ok' if ok else 'FAILED'}")


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


# ----------------------------------------------------------------------------- scenario 1
def dense_loss(p, X, y):
    """Mean squared error of Dense(10→1, sigmoid) on the columns of ``X`` (10×4); the 11
    parameters (10 weights, 1 bias) are flattened into ``p``."""
    W = p[:10].reshape(1, 10)
    b = p[10]
    pred = dg.nn.sigmoid(W @ X + b)[0]
    return ((pred - y) ** 2).mean()


def cubic_step(hvp: Callable, g, sigma: float, k: int):
    """One cubic-regularised Newton step: ``s ≈ argmin g·s + s·Hs/2 + sigma/3 |s|³``.

    The model is minimised over the Krylov space ``span{g, Hg, ..., H^(k-1) g}`` (Lanczos
    with full reorthogonalisation, ``k`` products), where it is a small tridiagonal problem
    solved exactly by a secular equation (Cartis, Gould & Toint's ARC subproblem).
    """
    xp = dg.backends.backend_of([g]).xp
    n = g.size
    k = min(k, n)
    Q = xp.zeros((n, k), dtype=g.dtype)
    alpha, beta = np.zeros(k), np.zeros(k)
    q = g / xp.linalg.norm(g)
    m = k
    for j in range(k):
        Q[:, j] = q
        w = hvp(q)
        alpha[j] = float(q @ w)
        scale = float(xp.linalg.norm(w))
        for _ in range(2):  # full reorthogonalisation, twice
            w = w - Q[:, :j + 1] @ (Q[:, :j + 1].T @ w)
        beta[j] = float(xp.linalg.norm(w))
        if beta[j] <= 1e-8 * scale:  # invariant subspace: stop early
            m = j + 1
            break
        q = w / beta[j]
    T = np.diag(alpha[:m]) + np.diag(beta[:m - 1], 1) + np.diag(beta[:m - 1], -1)
    y = cubic_model_min(T, float(xp.linalg.norm(g)), sigma)
    return Q[:, :m] @ xp.asarray(y, dtype=g.dtype)


def cubic_model_min(T: np.ndarray, gnorm: float, sigma: float) -> np.ndarray:
    """Exact minimiser of ``gnorm·y[0] + y·Ty/2 + sigma/3 |y|³`` for a small symmetric T.

    ``y = -(T + lam I)⁻¹ gnorm e1`` with ``lam = sigma |y|`` and ``T + lam I ⪰ 0``: a
    decreasing scalar equation in ``lam``, solved by bisection in T's eigenbasis; in the
    "hard case" (no gradient weight on the lowest mode) the step moves along that mode.
    """
    theta, U = np.linalg.eigh(T)
    b = U[0] * gnorm  # U^T (gnorm e1)
    lo = max(0.0, -theta[0]) + 1e-12 * max(1.0, abs(theta[0]))
    with np.errstate(divide="ignore"):
        def gap(lam):  # |y(lam)| - lam / sigma
            return np.linalg.norm(b / (theta + lam)) - lam / sigma

        if gap(lo) <= 0:  # hard case
            lam = max(0.0, -theta[0])
            z = b[1:] / (theta[1:] + lam)
            tau = np.sqrt(max((lam / sigma) ** 2 - z @ z, 0.0))
            return -(U[:, 1:] @ z) + tau * U[:, 0]
        hi = lo + 1.0
        while gap(hi) > 0:
            hi = 2 * hi
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if gap(mid) > 0 else (lo, mid)
        return -(U @ (b / (theta + hi)))


def scenario_dense(xp, report: Report, show_source: bool = True) -> None:
    out = report.out
    out("Scenario 1: HVP of a Dense(10->1, sigmoid) loss inside Krylov solvers")
    rng = np.random.default_rng(0)
    X = xp.asarray(rng.standard_normal((10, 4)))
    y = xp.asarray(rng.random(4))
    p = xp.asarray(rng.standard_normal(11))
    g = dg.grad(dense_loss)(p, X, y)
    H = dg.HessianOperator(dense_loss, p, X, y)
    v = xp.asarray(rng.standard_normal(11))
    eps = 1e-5
    fd = (dg.grad(dense_loss)(p + eps * v, X, y) - dg.grad(dense_loss)(p - eps * v, X, y))
    report.check("H·v against finite differences of the gradient", H @ v, fd / (2 * eps), 1e-6)
    fdg = (dense_loss(p + eps * v, X, y) - dense_loss(p - eps * v, X, y)) / (2 * eps)
    report.check("g·v against finite differences of the loss", g @ v, fdg, 1e-6)

    # Newton system with a shift (the Hessian of this loss is indefinite in general)
    shift = 0.1
    solvers = backend_for_xp(xp).sparse_linalg  # scipy.sparse.linalg, or cupyx's
    LinearOperator, cg = solvers.LinearOperator, solvers.cg
    shifted = LinearOperator(H.shape, matvec=lambda u: H @ u + shift * u, dtype=H.dtype)
    H.nprod = 0
    s, info = cg(shifted, -g, maxiter=200)
    res = H @ s + shift * s + g
    report.expect(f"CG on (H + {shift} I) s = -g converged in {H.nprod - 1} products "
                  f"(residual {float(xp.linalg.norm(res)):.1e})",
                  info == 0 and float(xp.linalg.norm(res)) < 1e-4 * float(xp.linalg.norm(g)))

    H.nprod = 0
    sigma = 1.0
    step = cubic_step(H.matvec, g, sigma, k=11)
    f0, f1 = float(dense_loss(p, X, y)), float(dense_loss(p + step, X, y))
    model = float(g @ step + 0.5 * step @ (H @ step)
                  + sigma / 3 * float(xp.linalg.norm(step)) ** 3)
    out(f"  cubic-regularised Newton step (sigma={sigma}): loss {f0:.6f} -> {f1:.6f}, "
        f"model decrease {-model:.2e}, {H.nprod} Hessian-vector products")
    report.expect("the step decreases the loss and the cubic model", f1 < f0 and model < 0)
    if show_source:
        out("\n  The traced loss (dg.trace(dense_loss, p, X, y)):")
        out(_indent(str(dg.trace(dense_loss, p, X, y)), 4))
        out("\n  Generated source of its HVP (dg.source(dg.hvp(dense_loss), p, X, y, v)):")
        out(_indent(dg.source(dg.hvp(dense_loss), p, X, y, v), 4))


def _indent(text: str, n: int) -> str:
    return "\n".join(" " * n + line for line in text.rstrip().splitlines())


# ----------------------------------------------------------------------------- scenario 2
def f_batch(x, mu):
    """One value per particle: ``x`` is ``(3, na, nb, ng)``, ``mu`` is ``(3, ng)``."""
    return np.exp(-np.sum((x - mu[:, None, None, :]) ** 2, axis=0))


def f_coupled(x, mu):
    """Normalised over all particles: every value depends on every particle."""
    f = f_batch(x, mu)
    return f / np.sum(f)


def scenario_particles(xp, report: Report, n: int) -> None:
    out = report.out
    out(f"Scenario 2: per-particle gradient and HVP, x of shape (3, {n}, {n}, {n})")
    rng = np.random.default_rng(1)
    x = xp.asarray(rng.standard_normal((3, n, n, n)))
    mu = xp.asarray(rng.standard_normal((3, n)))
    v = xp.asarray(rng.standard_normal((3, n, n, n)))
    hvp = dg.hvp(f_batch, batch_axes=(1, 2, 3))
    hv = hvp(x, mu, v)
    value, g, hv2 = dg.grad_and_hvp(f_batch, batch_axes=(1, 2, 3), return_value=True)(x, mu, v)
    t0 = time.perf_counter()
    reps = 5
    for _ in range(reps):
        dg.grad_and_hvp(f_batch, batch_axes=(1, 2, 3), return_value=True)(x, mu, v)
    backend_for_xp(xp).synchronize()
    dt = (time.perf_counter() - t0) / reps
    out(f"  {n ** 3} particles: value + per-particle gradient + per-particle H·v in one "
        f"program, {dt * 1e3:.2f} ms per call (cached, no re-trace)")
    # Separability makes finite differences per particle cheap: shifting every particle at
    # once along coordinate d moves each f_i by its own partial derivative.
    eps = 1e-6
    fd_g = xp.stack([(f_batch(x + eps * _unit(xp, x, d), mu)
                      - f_batch(x - eps * _unit(xp, x, d), mu)) / (2 * eps) for d in range(3)])
    report.check("per-particle gradient against finite differences", g, fd_g, 1e-6)
    grad_sum = dg.grad(lambda x, mu: np.sum(f_batch(x, mu)))
    fd_hv = (grad_sum(x + eps * v, mu) - grad_sum(x - eps * v, mu)) / (2 * eps)
    report.check("per-particle H·v against finite differences", hv, fd_hv, 1e-6)
    report.check("grad_and_hvp gives the same H·v", hv2, hv, 1e-14)
    report.check("value is the sum over particles", value, xp.sum(f_batch(x, mu)), 1e-12)
    try:
        dg.hvp(f_coupled, batch_axes=(1, 2, 3))(x, mu, v)
        report.expect("a coupling function is refused", False)
    except dg.SeparabilityError as e:
        reason = re.sub(r" at (<[^>]*>|\S+):\d+", "", str(e).split(": ", 1)[-1]).split(". ")[0]
        out(f"  coupled f refused: SeparabilityError: {reason}")
        report.expect("a coupling function is refused", True)


def _unit(xp, x, d):
    e = xp.zeros_like(x)
    e[d] = 1
    return e


# ----------------------------------------------------------------------------- scenario 3
def sparse_loss(x, A):
    return np.sum(np.tanh(x @ A))


def scenario_sparse(xp, report: Report) -> None:
    out = report.out
    out("Scenario 3: gradient of sum(tanh(x @ A)), A sparse CSR")
    rng = np.random.default_rng(2)
    A_host = _random_csr(rng, 200, 150, 0.02)
    A = backend_for_xp(xp).sparse.csr_matrix(A_host)  # SciPy's, or on the device cupyx's
    x = xp.asarray(rng.standard_normal((8, 200)))
    try:
        g = dg.grad(sparse_loss)(x, A)
    except dg.DualgpuError as e:
        out(f"scenario 3: skipped ({type(e).__name__}: {_one_line(e)})")
        return
    want = (1 - xp.tanh(x @ A) ** 2) @ A.T
    report.check("gradient against the closed form (1 - tanh²(xA)) Aᵀ", g, want, 1e-12)
    v = xp.asarray(rng.standard_normal(x.shape))
    eps = 1e-6
    fd = (sparse_loss(x + eps * v, A) - sparse_loss(x - eps * v, A)) / (2 * eps)
    report.check("g·v against finite differences", xp.sum(g * v), fd, 1e-6)


def _random_csr(rng, m, n, density):
    import scipy.sparse as sp

    return sp.random(m, n, density=density, format="csr", random_state=rng,
                     data_rvs=rng.standard_normal)


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())


# ----------------------------------------------------------------------------- driver
def cli_hint() -> str:
    """Where the ``dualgpu`` command is, for the demo's closing lines: on PATH, or the
    script beside this Python (``make demo`` installs it as ``.venv/bin/dualgpu``, and
    does not put it on PATH).

    Example::

        >>> "dualgpu" in cli_hint()
        True
    """
    on_path = shutil.which("dualgpu")
    if on_path:
        return f"the dualgpu command (inspect, export, bench): {on_path}"
    script = os.path.join(os.path.dirname(sys.executable), "dualgpu")
    if os.path.isfile(script):
        shown = os.path.relpath(script) if script.startswith(os.getcwd() + os.sep) else script
        return (f"the dualgpu command (inspect, export, bench) is {shown}, not on PATH: "
                f"run it by that path, or first 'source {os.path.dirname(shown)}/activate'")
    return (f"the dualgpu command (inspect, export, bench): '{os.path.basename(sys.executable)}"
            " -m dualgpu' (pip install of the checkout puts a 'dualgpu' script on PATH)")


def seconds(t: float) -> str:
    """A duration as people read it: ``"45 ms"``, ``"1.3 s"``.

    >>> seconds(0.0451), seconds(1.27)
    ('45 ms', '1.3 s')
    """
    return f"{t * 1e3:.0f} ms" if t < 1 else f"{t:.1f} s"


def run(use_gpu: bool | None = None, out: Callable[[str], None] = print,
        show_source: bool = True) -> int:
    """Run the three scenarios; return 0 when every check passes, 1 otherwise.

    ``use_gpu=None`` picks CuPy when :func:`dualgpu.backends.cupy.cupy_available`.

    Example::

        >>> run(use_gpu=False, show_source=False)
        dualgpu ... demo on NumPy (CPU)
        ...
        0
    """
    gpu = cupy_available() if use_gpu is None else use_gpu
    if gpu:
        import cupy as xp
    else:
        xp = np
    out(f"dualgpu {dg.__version__} demo on {'CuPy (GPU)' if gpu else 'NumPy (CPU)'}\n")
    report = Report(out)
    t0 = time.perf_counter()
    scenario_dense(xp, report, show_source=show_source)
    out("")
    scenario_particles(xp, report, n=100 if gpu else 20)
    out("")
    scenario_sparse(xp, report)
    out("")
    took = seconds(time.perf_counter() - t0)
    where = "CuPy (GPU)" if gpu else "NumPy (CPU)"
    if report.failed:
        out(f"{report.failed} of {report.failed + report.passed} checks FAILED on {where} "
            f"({took})")
        return 1
    out(f"all {report.passed} checks passed on {where}: the gradients and HVPs of the three "
        "scenarios against finite differences and closed forms, the CG and cubic-Newton "
        f"steps, the refused coupling; {took} to trace, compile and run them")
    out(cli_hint())
    return 0


if __name__ == "__main__":
    raise SystemExit(run())
