"""A user-defined op with only a VJP: forward mode and HVPs still work.

``log_cosh(x) = log(cosh(x))`` is registered with ``dg.custom_op`` from its implementation,
its VJP and a C expression for the fused GPU kernels. dualgpu derives the JVP by
transposing the pullback, so ``dg.jvp`` and ``dg.hvp`` go through it (JAX cannot
forward-differentiate a ``custom_vjp`` function). Every result is checked against finite
differences.

Run: ``python examples/custom_op.py``
"""
import sys

import numpy as np

import dualgpu as dg


def _log_cosh(xp, x):
    """log(cosh(x)) without overflow: |x| + log1p(exp(-2|x|)) - log(2)."""
    a = xp.abs(x)
    return a + xp.log1p(xp.exp(-2 * a)) - np.log(2.0)


log_cosh = dg.custom_op(
    "example_log_cosh", _log_cosh,
    vjp=lambda g, primals, ans: (g * np.tanh(primals[0]),),
    c="(fabs({0}) + log1p(exp(-2 * fabs({0}))) - 0.6931471805599453)")


def loss(w, X, y):
    """A robust regression loss: mean log-cosh of the residuals."""
    return np.mean(log_cosh(X @ w - y))


def check(what, got, want, tol):
    err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300)
    print(f"{what}: relative error {err:.1e} {'ok' if err <= tol else 'FAILED'}")
    if err > tol:
        sys.exit(1)


def main():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((50, 4)), rng.standard_normal(50)
    w, v = rng.standard_normal(4), rng.standard_normal(4)
    eps = 1e-6

    _, jv = dg.jvp(lambda w: loss(w, X, y), (w,), (v,))
    check("jvp (derived from the VJP)", jv,
          (loss(w + eps * v, X, y) - loss(w - eps * v, X, y)) / (2 * eps), 1e-7)

    g = dg.grad(loss)(w, X, y)
    hv = dg.hvp(loss)(w, X, y, v)
    grad = dg.grad(loss)
    check("hvp", hv, (grad(w + 1e-5 * v, X, y) - grad(w - 1e-5 * v, X, y)) / 2e-5, 1e-6)

    # a loss whose HVP needs the op's JVP (its gradient uses log_cosh's value)
    def log_loss(w, X, y):
        return np.log(np.mean(log_cosh(X @ w - y)))

    hv = dg.hvp(log_loss)(w, X, y, v)
    grad = dg.grad(log_loss)
    check("hvp through the derived JVP", hv,
          (grad(w + 1e-5 * v, X, y) - grad(w - 1e-5 * v, X, y)) / 2e-5, 1e-6)

    # a trust-region Newton-Krylov fit with exact Hessian-vector products
    from scipy.optimize import minimize

    res = minimize(loss, np.zeros(4), args=(X, y), jac=dg.grad(loss), hessp=dg.hessp(loss),
                   method="trust-krylov")
    print(f"trust-krylov: loss {res.fun:.6f} after {res.nit} iterations, |grad| "
          f"{np.linalg.norm(res.jac):.1e} ({'ok' if res.success else 'FAILED'})")
    print(f"gradient at the start {np.round(g, 4)}")
    print(dg.source(dg.hvp(loss), w, X, y, v))


if __name__ == "__main__":
    main()
