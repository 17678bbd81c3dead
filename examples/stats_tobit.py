"""Maximum likelihood with scipy.stats, unchanged: a censored (Tobit) regression and a robust
Student-t regression, fitted by scipy.optimize.minimize with dualgpu's exact gradient and
Hessian-vector products.

The negative log-likelihoods are written as a SciPy user writes them -- ``norm.logpdf`` for
the observed responses, ``norm.logcdf`` for those censored at zero (far in the tail for
some starting points: SciPy's ``log_ndtr`` keeps it finite), ``scipy.stats.t.logpdf`` with
its degrees of freedom a parameter -- and dualgpu differentiates them in every parameter.
Each fit is checked against SciPy's own fit of the same function (finite differences of
SciPy's code) and against the truth, and the gradient against central differences.

Run: ``python examples/stats_tobit.py``
"""
import numpy as np
import scipy.stats
from scipy.optimize import minimize
from scipy.stats import norm

import dualgpu as dg


def tobit_nll(params, X, y, censored):
    """-log L of y = max(0, X w + sigma e), e ~ N(0, 1): w, then log sigma."""
    w, sigma = params[:-1], np.exp(params[-1])
    mean = X @ w
    observed = norm.logpdf(y, mean, sigma)
    below = norm(mean, sigma).logcdf(0.0)      # P(X w + sigma e <= 0), frozen spelling
    return -np.sum(np.where(censored, below, observed))


def student_nll(params, X, y):
    """-log L of y = X w + sigma t_df: w, then log sigma, then log df."""
    w, sigma, df = params[:-2], np.exp(params[-2]), np.exp(params[-1])
    return -np.sum(scipy.stats.t.logpdf(y, df, X @ w, sigma))


def fit(nll, x0, *data):
    """The fit with dualgpu's derivatives, and SciPy's own fit of the same function from a
    reasonable start (BFGS on finite differences of SciPy's code) to compare it with."""
    res = minimize(nll, x0, args=data, jac=dg.grad(nll), hessp=dg.hessp(nll),
                   method="trust-ncg", options={"gtol": 1e-6})
    reference = minimize(nll, np.zeros_like(x0), args=data, method="BFGS")
    assert res.success and np.allclose(res.x, reference.x, atol=1e-4), (res, reference)
    return res


def check_gradient(nll, x, *data):
    g = dg.grad(nll)(x, *data)
    h = 1e-6
    fd = np.array([(nll(x + h * e, *data) - nll(x - h * e, *data)) / (2 * h)
                   for e in np.eye(x.size)])
    return np.max(np.abs(g - fd)) / max(1.0, np.max(np.abs(fd)))


def main():
    rng = np.random.default_rng(0)
    n = 400
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 2))])
    w_true, sigma_true = np.array([0.3, 1.0, -0.7]), 0.8
    latent = X @ w_true + sigma_true * rng.normal(size=n)
    censored = latent <= 0
    y = np.maximum(latent, 0.0)

    # a poor start: the censored points sit ~40 standard deviations in the tail
    x0 = np.array([-8.0, 0.0, 0.0, np.log(0.2)])
    assert np.isfinite(dg.grad(tobit_nll)(x0, X, y, censored)).all()
    res = fit(tobit_nll, x0, X, y, censored)
    w_hat, sigma_hat = res.x[:-1], np.exp(res.x[-1])
    err = check_gradient(tobit_nll, res.x + 0.1, X, y, censored)
    print(f"Tobit: {censored.sum()} of {n} censored; w = {np.round(w_hat, 3)} "
          f"(true {w_true}), sigma = {sigma_hat:.3f} (true {sigma_true}); "
          f"{res.nit} iterations, gradient vs SciPy differences {err:.1e}")
    assert np.allclose(w_hat, w_true, atol=0.2) and abs(sigma_hat - sigma_true) < 0.2
    assert err < 1e-6

    y_t = X @ w_true + 0.5 * rng.standard_t(3.0, size=n)
    res = fit(student_nll, np.array([0.0, 0.0, 0.0, 0.0, np.log(10.0)]), X, y_t)
    w_hat, sigma_hat, df_hat = res.x[:-2], np.exp(res.x[-2]), np.exp(res.x[-1])
    err = check_gradient(student_nll, res.x + 0.1, X, y_t)
    print(f"Student t: w = {np.round(w_hat, 3)}, sigma = {sigma_hat:.3f} (true 0.5), "
          f"df = {df_hat:.2f} (true 3); {res.nit} iterations, gradient vs SciPy "
          f"differences {err:.1e}")
    assert np.allclose(w_hat, w_true, atol=0.2) and 1.5 < df_hat < 6 and err < 1e-6


if __name__ == "__main__":
    main()
