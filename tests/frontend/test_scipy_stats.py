"""scipy.stats in traced functions (issue 37, item 1): every distribution and method against
SciPy on random parameters, with out-of-support points and invalid parameters appended, and
its derivatives in every parameter against central differences of SciPy itself; the three
spellings (module path, imported name, frozen) and the errors."""
import zlib

import numpy as np
import pytest
import scipy.special
import scipy.stats
from scipy import stats

import dualgpu as dg
from dualgpu.errors import DualgpuError

N = 5  # random points per distribution; the special points follow them
CONTINUOUS_METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")
DISCRETE_METHODS = ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf")
# incomplete beta/gamma functions: no derivative in these shape parameters
CUMULATIVE = {"cdf", "logcdf", "sf", "logsf"}
NO_SHAPE_DERIVATIVE = {"t", "gamma", "beta", "chi2"}


def _continuous_case(rng, shapes, y_lo, y_hi, support, bad_shape):
    """(x, *shapes, loc, scale): N random points, then out of the support (below, above),
    at its ends, a NaN x, and invalid scale and shape parameters."""
    shape_values = [rng.uniform(lo, hi, N) for lo, hi in shapes]
    loc, scale = rng.uniform(-1, 1, N), rng.uniform(0.5, 2.0, N)
    x = loc + scale * rng.uniform(y_lo, y_hi, N)
    a, b = support
    ys = [y for y in (a - 0.5, b + 0.5, a, b) if np.isfinite(y)] + [np.nan, 0.5, 0.5, 0.5]
    n_extra = len(ys)
    scales = [1.0] * (n_extra - 2) + [-1.0, 0.0] if not shapes else (
        [1.0] * (n_extra - 3) + [-1.0, 0.0, 1.0])
    x = np.concatenate([x, np.array(ys)])  # loc 0 for the special rows
    loc = np.concatenate([loc, np.zeros(n_extra)])
    scale = np.concatenate([scale, scales])
    shape_values = [np.concatenate([s, [s[0]] * (n_extra - 1) + [bad_shape]])
                    for s in shape_values]
    return (x, *shape_values, loc, scale)


CONTINUOUS = {  # name: (shape ranges, y range, support, an invalid shape value)
    "norm": ((), (-3, 3), (-np.inf, np.inf), None),
    "t": (((0.7, 20.0),), (-4, 4), (-np.inf, np.inf), -1.0),
    "gamma": (((0.6, 5.0),), (0.1, 6), (0.0, np.inf), -1.0),
    "beta": (((0.6, 5.0), (0.6, 5.0)), (0.05, 0.95), (0.0, 1.0), 0.0),
    "chi2": (((0.6, 8.0),), (0.1, 8), (0.0, np.inf), -1.0),
    "expon": ((), (0.05, 4), (0.0, np.inf), None),
    "laplace": ((), (-4, 4), (-np.inf, np.inf), None),
    "cauchy": ((), (-6, 6), (-np.inf, np.inf), None),
}


def _discrete_case(name, rng):
    """(k, *shapes, loc): N random points, then k out of the support, not an integer, NaN,
    and invalid parameters."""
    if name == "poisson":
        mu = rng.uniform(0.5, 8.0, N)
        k = rng.integers(0, 12, N).astype(float)
        return (np.r_[k, -1, 2.5, np.nan, 1, 0], np.r_[mu, 2.0, 2.0, 2.0, -1.0, 0.0],
                np.r_[rng.integers(-2, 3, N), 0, 0, 0, 0, 0].astype(float))
    p = rng.uniform(0.05, 0.95, N)
    if name == "bernoulli":
        k = rng.integers(0, 2, N).astype(float)
        return (np.r_[k, -1, 2, 0.5, np.nan, 1], np.r_[p, 0.3, 0.3, 0.3, 0.3, 1.5],
                np.zeros(N + 5))
    n = rng.integers(1, 20, N).astype(float)
    k = np.floor(rng.uniform(0, 1, N) * (n + 1))
    return (np.r_[k, -1, 7, 2.5, np.nan, 1, 1], np.r_[n, 6, 6, 6, 6, 2.5, 6],
            np.r_[p, 0.4, 0.4, 0.4, 0.4, 0.4, 1.5], np.zeros(N + 6))


def _case(name, rng):
    if name in CONTINUOUS:
        shapes, ys, support, bad = CONTINUOUS[name]
        return _continuous_case(rng, shapes, *ys, support, bad)
    return _discrete_case(name, rng)


def _differentiated(name, method, n_args):
    """The argument positions whose derivative is checked: all of a continuous
    distribution's (but its shapes under a cumulative function of NO_SHAPE_DERIVATIVE), the
    probability parameters of a discrete one (mu, p: not k, n or loc)."""
    if name in CONTINUOUS:
        n_shapes = len(CONTINUOUS[name][0])
        skip = (set(range(1, 1 + n_shapes))
                if method in CUMULATIVE and name in NO_SHAPE_DERIVATIVE else set())
        return tuple(i for i in range(n_args) if i not in skip)
    return (n_args - 2,)  # mu, p: the last shape parameter


def _central_difference(fn, args, i, valid):
    """d fn / d args[i], element by element (fn is elementwise), by central differences."""
    h = 1e-6 * np.maximum(1.0, np.abs(args[i]))
    up, down = list(args), list(args)
    up[i], down[i] = args[i] + h, args[i] - h
    return np.where(valid, (fn(*up) - fn(*down)) / (2 * h), 0.0)


def _summed(fn):
    return lambda *args: np.sum(fn(*args))


CASES = ([(n, m) for n in CONTINUOUS for m in CONTINUOUS_METHODS]
         + [(n, m) for n in ("poisson", "binom", "bernoulli") for m in DISCRETE_METHODS])


@pytest.mark.parametrize("name,method", CASES, ids=[f"{n}.{m}" for n, m in CASES])
def test_values_and_derivatives_against_scipy(name, method):
    rng = np.random.default_rng(zlib.crc32(f"{name}.{method}".encode()))
    args = _case(name, rng)
    real = getattr(getattr(scipy.stats, name), method)

    def fn(*a):
        out = getattr(getattr(scipy.stats, name), method)(*a)
        return np.sum(np.where(np.isfinite(out), out, 0.0)), out

    argnums = _differentiated(name, method, len(args))
    with np.errstate(all="ignore"):
        want = real(*args)
    with np.errstate(all="ignore"):  # derivatives at the ends of the support: inf, NaN
        (_, got), grads = dg.value_and_grad(fn, argnums=argnums, has_aux=True)(*args)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-300)
    assert got.dtype == np.float64
    valid = (np.arange(len(args[0])) < N) & np.isfinite(want)
    for i, g in zip(argnums, grads):
        with np.errstate(all="ignore"):
            fd = _central_difference(real, args, i, valid)
        np.testing.assert_allclose(np.where(valid, g, 0.0), fd, rtol=2e-6, atol=1e-8,
                                   err_msg=f"d/d(argument {i})")


def test_the_normal_log_cdf_far_in_the_tail_is_scipys_log_ndtr():
    x = np.array([-1e3, -300.0, -40.0, -20.5, -19.5, -5.0, -1.0, 0.0, 6.0, 30.0])
    got, g = dg.value_and_grad(lambda x: (np.sum(scipy.stats.norm.logcdf(x)),
                                          scipy.stats.norm.logcdf(x)), has_aux=True)(x)
    np.testing.assert_allclose(got[1], scipy.special.log_ndtr(x), rtol=1e-13)
    # d/dx log ndtr(x) = pdf / cdf, ~ -x in the far tail (finite, no log(0))
    ratio = np.exp(scipy.stats.norm.logpdf(x) - scipy.special.log_ndtr(x))
    np.testing.assert_allclose(g, ratio, rtol=1e-10)
    np.testing.assert_allclose(dg.jit(lambda x: scipy.stats.norm.logsf(x))(-x),
                               scipy.special.log_ndtr(x), rtol=1e-13)


@pytest.mark.parametrize("name,shapes", [("norm", ()), ("t", (3.0,)), ("t", (np.inf,)),
                                         ("laplace", ()), ("cauchy", ())])
def test_derivatives_at_the_center_are_the_density(name, shapes):
    """At x == loc a symmetric distribution's |x - loc| or (x - loc)**2 has derivative 0:
    written in them, cdf and logcdf had derivative 0 (laplace) or NaN (t)."""
    dist = getattr(scipy.stats, name)
    loc, scale = 0.5, 2.0

    def four(x):  # one method per entry
        return (dist.cdf(x[0], *shapes, loc, scale) + dist.logcdf(x[1], *shapes, loc, scale)
                + dist.sf(x[2], *shapes, loc, scale) + dist.logsf(x[3], *shapes, loc, scale))

    pdf = dist.pdf(loc, *shapes, loc, scale)
    np.testing.assert_allclose(dg.grad(four)(np.full(4, loc)),
                               [pdf, 2 * pdf, -pdf, -2 * pdf], rtol=1e-12)
    np.testing.assert_allclose(dg.jit(four)(np.full(4, loc)), 1 - 2 * np.log(2), rtol=1e-14)


def test_multivariate_normal_values_and_derivatives():
    rng = np.random.default_rng(1)
    k = 3
    m = rng.normal(size=(k, k))
    cov, mean, x = m @ m.T + k * np.eye(k), rng.normal(size=k), rng.normal(size=(4, k))
    mvn = scipy.stats.multivariate_normal
    for fn in (lambda x, mu, c: mvn.logpdf(x, mu, c),            # module path
               lambda x, mu, c: mvn(mean=mu, cov=c).logpdf(x),   # frozen, traced parameters
               lambda x, mu, c: mvn.pdf(x, mean=mu, cov=c) * 1e3):
        np.testing.assert_allclose(dg.jit(fn)(x, mean, cov), fn(x, mean, cov), rtol=1e-10)
        gx, gmu, gc = dg.grad(_summed(fn), argnums=(0, 1, 2))(x, mean, cov)
        for i, (g, direction) in enumerate([(gx, rng.normal(size=x.shape)),
                                            (gmu, rng.normal(size=k)),
                                            (gc, (lambda d: d + d.T)(rng.normal(size=(k, k))))]):
            up, down = [x, mean, cov], [x, mean, cov]
            up[i], down[i] = up[i] + 1e-6 * direction, down[i] - 1e-6 * direction
            fd = (np.sum(fn(*up)) - np.sum(fn(*down))) / 2e-6
            np.testing.assert_allclose(np.sum(g * direction), fd, rtol=1e-6)
    # SciPy's shapes: one point, a scalar and a diagonal covariance, one dimension
    for x_, mean_, cov_ in [(x[0], mean, cov), (x, mean, 2.0), (x, mean, np.diag(cov)),
                            (np.array([0.3, 1.0]), 0.5, 2.0), (0.3, None, 1.0)]:
        want = mvn.logpdf(x_, mean_, cov_)
        logpdf = (lambda m, c: lambda x: mvn.logpdf(x, m, c))(mean_, cov_)
        got = dg.jit(logpdf)(np.asarray(x_, float))
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-10)


def test_multivariate_normal_entropy_and_a_singular_covariance():
    """entropy and allow_singular=True are SciPy's pseudo-determinant and pseudo-inverse:
    values against SciPy (a point off the support: -inf), derivatives of both orders against
    differences (a singular covariance: in x within the support and in mean)."""
    mvn = scipy.stats.multivariate_normal
    rng = np.random.default_rng(3)
    m = rng.normal(size=(3, 3))
    cov, mean, x = m @ m.T + np.eye(3), rng.normal(size=3), rng.normal(size=(2, 3))
    singular = np.diag([2.0, 0.5, 0.0])
    points = np.array([[0.3, -0.2, 0.0], [0.3, 0.1, 1e-3]])  # the second off the support
    for fn, args in [(lambda mu, c: mvn.entropy(mu, c), (mean, cov)),
                     (lambda mu, c: mvn(mu, c, allow_singular=True).entropy(), (mean, singular)),
                     (lambda x, c: mvn.logpdf(x, mean, c, allow_singular=True), (x, cov)),
                     (lambda x, c: mvn(np.zeros(3), c, allow_singular=True).pdf(x),
                      (points, singular))]:
        np.testing.assert_allclose(dg.jit(fn)(*args), fn(*args), rtol=1e-12)
    dg.testing.check_grads(lambda c: mvn.entropy(mean, (c + c.T) / 2), (cov,), order=1)
    dg.testing.check_grads(lambda c: mvn.logpdf(x, mean, (c + c.T) / 2, allow_singular=True),
                           (cov,), order=2)
    dg.testing.check_grads(  # x moves within the support: its last entry is the mean's
        lambda x, mu: mvn.logpdf(np.concatenate([x, mu[2:]]), mu, singular, allow_singular=True),
        (points[0, :2], mean), order=2, argnums=(0, 1))
    with pytest.raises(DualgpuError, match="allow_singular must be True or False"):
        dg.jit(lambda x: mvn.logpdf(x, mean, cov, allow_singular="yes"))(x)


def test_multivariate_normal_of_an_indefinite_covariance_is_nan():
    """The pseudo-determinant's path meant NaN where cov is not positive semidefinite (SciPy
    raises); the Cholesky factorization of cov + V V^T raised a raw LinAlgError first."""
    mvn = scipy.stats.multivariate_normal
    cov = np.diag([1.0, -1.0, 2.0])
    assert np.isnan(dg.jit(lambda c: mvn.entropy(cov=c))(cov))
    assert np.all(np.isnan(dg.jit(lambda x, c: mvn.logpdf(x, cov=c, allow_singular=True))(
        np.ones((2, 3)), cov)))


def test_multivariate_normal_bad_parameters_are_one_dualgpu_error():
    """A keyword repeating a positional parameter was taken silently (SciPy: TypeError); a
    covariance matrix beside a scalar mean raised a raw reshape ValueError."""
    mvn, x = scipy.stats.multivariate_normal, np.ones(3)
    with pytest.raises(DualgpuError, match="multiple values for argument 'mean'"):
        dg.jit(lambda x: mvn.logpdf(x, x, 1.0, mean=x))(x)
    with pytest.raises(DualgpuError, match=r"cov of shape \(3, 3\) does not fit"):
        dg.jit(lambda x: mvn.logpdf(x, 0.0, np.eye(3)))(x)


def test_dirichlet_values_and_derivatives():
    alpha = np.array([0.7, 2.0, 3.5])
    x = np.array([[0.2, 0.5], [0.3, 0.1], [0.5, 0.4]])  # the first axis: the components
    for x_ in (x, x[:, 0], x[:2]):
        want = scipy.stats.dirichlet.logpdf(x_, alpha)
        np.testing.assert_allclose(dg.jit(lambda a, x: scipy.stats.dirichlet.logpdf(x, a))(
            alpha, x_), want, rtol=1e-12)
        np.testing.assert_allclose(
            dg.jit(lambda x, a: scipy.stats.dirichlet(a).pdf(x))(x_, alpha),
            scipy.stats.dirichlet.pdf(x_, alpha), rtol=1e-12)
    g_alpha, g_x = dg.grad(lambda a, x: np.sum(scipy.stats.dirichlet.logpdf(x, a)),
                           argnums=(0, 1))(alpha, x[:2])
    def total(a, x):
        return np.sum(scipy.stats.dirichlet.logpdf(x, a))

    steps_a = 1e-7 * np.eye(3)
    steps_x = 1e-7 * np.eye(4).reshape(4, 2, 2)
    fd_a = [(total(alpha + e, x[:2]) - total(alpha - e, x[:2])) / 2e-7 for e in steps_a]
    fd_x = [(total(alpha, x[:2] + e) - total(alpha, x[:2] - e)) / 2e-7 for e in steps_x]
    np.testing.assert_allclose(g_alpha, fd_a, rtol=1e-6)
    np.testing.assert_allclose(g_x.ravel(), fd_x, rtol=1e-6)
    with pytest.raises(DualgpuError, match="simplex"):
        dg.grad(lambda a: np.sum(scipy.stats.dirichlet.logpdf(x + 0.1, a)))(alpha)


def test_three_spellings_and_a_frozen_distribution_closed_over():
    from scipy.stats import norm, poisson

    frozen = norm(1.0, 2.0)
    x, mu, s = np.array([0.3, -1.0, 2.5]), np.array(0.5), np.array(1.5)
    spellings = {
        "module path": lambda x, mu, s: scipy.stats.norm.logpdf(x, mu, s),
        "submodule imported": lambda x, mu, s: stats.norm.logpdf(x, mu, s),
        "imported name": lambda x, mu, s: norm.logpdf(x, loc=mu, scale=s),
        "keywords for x": lambda x, mu, s: norm.logpdf(scale=s, x=x, loc=mu),
        "frozen": lambda x, mu, s: norm(mu, s).logpdf(x),
        "frozen by keyword": lambda x, mu, s: norm(loc=mu, scale=s).logpdf(x),
    }
    want = scipy.stats.norm.logpdf(x, mu, s)
    for label, fn in spellings.items():
        value, grads = dg.value_and_grad(_summed(fn), argnums=(0, 1, 2))(x, mu, s)
        np.testing.assert_allclose(value, np.sum(want), rtol=1e-13, err_msg=label)
        np.testing.assert_allclose(grads[1], np.sum((x - mu) / s**2), rtol=1e-13,
                                   err_msg=label)
    # a frozen distribution made outside, its method called on traced x; pdf of the module
    # path (AttributeError before); a discrete one frozen inside with traced mu
    got = dg.grad(lambda x: np.sum(frozen.logpdf(x) + scipy.stats.norm.pdf(x)))(x)
    np.testing.assert_allclose(got, -(x - 1.0) / 4 - x * scipy.stats.norm.pdf(x), rtol=1e-12)
    got = dg.grad(lambda mu: np.sum(poisson(mu).logpmf([0, 1, 3])))(np.array(2.0))
    np.testing.assert_allclose(got, 4 / 2.0 - 3, rtol=1e-13)
    # broadcasting: a column of locations against a row of points
    got = dg.jit(lambda x, mu: norm.cdf(x, mu[:, None]))(x, np.array([0.0, 1.0]))
    np.testing.assert_allclose(got, norm.cdf(x, np.array([[0.0], [1.0]])), rtol=1e-13)
    # concrete arguments inside a traced function are SciPy's own call
    np.testing.assert_allclose(dg.jit(lambda x: x + norm.ppf(0.975))(np.array(0.0)),
                               1.959963984540054, rtol=1e-15)


def test_bad_arguments_and_unsupported_methods_are_clear_errors():
    from scipy.stats import norm

    x = np.array([0.5, 1.0])
    with pytest.raises(DualgpuError, match=r"t\.logpdf is missing the shape parameter.*df"):
        dg.jit(lambda x: scipy.stats.t.logpdf(x))(x)
    with pytest.raises(DualgpuError, match="unexpected keyword argument 'sigma'"):
        dg.jit(lambda x: norm.logpdf(x, sigma=2.0))(x)
    with pytest.raises(DualgpuError, match="at most 2 parameters"):
        dg.jit(lambda x: norm.logpdf(x, 0.0, 1.0, 3.0))(x)
    with pytest.raises(DualgpuError, match=r"scipy.stats.norm.ppf has no dualgpu rule"):
        dg.jit(lambda x: scipy.stats.norm.ppf(x))(x)
    with pytest.raises(DualgpuError, match=r"norm\(\.\.\.\)\.entropy is not supported"):
        dg.jit(lambda s: norm(0.0, s).entropy())(np.array(1.0))
    with pytest.raises(DualgpuError, match="scipy.stats.lognorm.logpdf has no dualgpu rule"):
        dg.jit(lambda x: scipy.stats.lognorm.logpdf(x, 1.0))(x)
    with pytest.raises(DualgpuError, match="no derivative in a or b"):
        dg.grad(lambda df: scipy.stats.t.cdf(0.5, df))(np.array(3.0))
    with pytest.raises(DualgpuError, match=r"scipy.stats.norm.rvs .*frozen into the compiled"):
        dg.jit(lambda x: x + norm.rvs(size=2))(x)


FROZEN = scipy.stats.norm(1.0, 2.0)


def test_a_cached_program_sees_new_points_and_a_reassigned_frozen_distribution():
    global FROZEN
    x = np.array([0.5, 1.5])
    logpdf = dg.jit(lambda x: scipy.stats.norm.logpdf(x, 1.0, 2.0))
    logpdf(x)
    np.testing.assert_allclose(logpdf(x + 1), scipy.stats.norm.logpdf(x + 1, 1.0, 2.0))
    grad = dg.grad(lambda x: np.sum(FROZEN.logpdf(x)))
    np.testing.assert_allclose(grad(x), -(x - 1.0) / 4)
    try:
        FROZEN = scipy.stats.norm(3.0, 2.0)
        np.testing.assert_allclose(grad(x), -(x - 3.0) / 4)
    finally:
        FROZEN = scipy.stats.norm(1.0, 2.0)
