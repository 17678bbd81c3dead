"""Issue 13's NumPy/SciPy names on traced values: each traced result equals NumPy's (or
SciPy's) own on the same input. Derivatives are checked by the table of
``tests/ops/test_registry.py``; this file checks values, the construction of arrays from traced
values, and the errors of what is refused."""
from __future__ import annotations

import types
import warnings

import numpy as np
import pytest
import scipy.special
from scipy.special import digamma, logit, logsumexp, psi

import dualgpu as dg

RNG = np.random.default_rng(0)
X23 = RNG.uniform(0.2, 2.0, (2, 3))
X34 = RNG.uniform(0.2, 2.0, (3, 4))
V5 = RNG.uniform(-1.0, 1.0, 5)
V3 = RNG.uniform(-1.0, 1.0, 3)
X_NAN = X34.copy()
X_NAN[0, 1] = X_NAN[2, 2] = np.nan
X_NONFINITE = X_NAN.copy()
X_NONFINITE[1, 0], X_NONFINITE[1, 3] = np.inf, -np.inf

CASES = {
    "flipud": (lambda x: np.flipud(x), X23), "fliplr": (lambda x: np.fliplr(x), X23),
    "rot90": (lambda x: np.rot90(x, 3), X23), "roll": (lambda x: np.roll(x, -4), X23),
    "roll axes": (lambda x: np.roll(x, (1, 2), axis=(0, 1)), X23),
    "append": (lambda x: np.append(x, [[1.0, 2.0, 3.0]], axis=0), X23),
    "append flat": (lambda x: np.append(x, 1.0), X23),
    "linspace": (lambda x: np.linspace(x[0], x[1], 7), X23),
    "linspace retstep": (lambda x: np.linspace(0.0, x[0, 0], 4, endpoint=False,
                                               retstep=True), X23),
    "linspace axis": (lambda x: np.linspace(x[0], 5.0, 3, axis=1), X23),
    "logspace": (lambda x: np.logspace(x[0, 0], 2.0, 4), X23),
    "gradient": (lambda x: np.gradient(x), X34),
    "gradient spacing": (lambda x: np.gradient(x, 0.5, 2.0, edge_order=2), X34),
    "gradient coords": (lambda x: np.gradient(x, [0.0, 1.0, 1.5], axis=1), X23),
    "gradient coords 2": (lambda x: np.gradient(x, [0.0, 1.0, 1.5, 3.0], axis=1,
                                                edge_order=2), X34),
    "diff": (lambda x: np.diff(x, 2), X34),
    "diff prepend": (lambda x: np.diff(x, axis=0, prepend=0.0, append=x[:1]), X34),
    "ediff1d": (lambda x: np.ediff1d(x, to_begin=[-1.0, -2.0], to_end=5.0), X23),
    "kron": (lambda x: np.kron(x, x.T), X23), "kron 1d": (lambda x: np.kron(x[0], x), X23),
    "cross": (lambda x: np.cross(x, x[::-1]), X23),
    "cross 2-3": (lambda x: np.cross(x[:, :2], x), X23),
    "cross 2-2": (lambda x: np.cross(x[:, :2], x[:, 1:]), X23),
    "cross axis": (lambda x: np.cross(x.T, x.T[::-1], axis=0), X23),
    "atleast_3d": (lambda x: np.atleast_3d(x[0]), X23),
    "rollaxis": (lambda x: np.rollaxis(x[None], 2, 1), X23),
    "moveaxis": (lambda x: np.moveaxis(x, 0, -1), X23),
    "column_stack": (lambda x: np.column_stack([x[0], x[1], np.ones(3)]), X23),
    "select": (lambda x: np.select([x < 0.5, x > 1.5], [x * 2, x ** 2], default=-1.0), X34),
    "vsplit": (lambda x: np.vsplit(x, [1])[1], X34),
    "hsplit": (lambda x: np.hsplit(x, 2)[0], X34),
    "dsplit": (lambda x: np.dsplit(x[None], [1, 3])[1], X34),
    "array_split": (lambda x: np.array_split(x, 3, axis=1)[2], X34),
    "nan_to_num": (lambda x: np.nan_to_num(x), X_NONFINITE),
    "nan_to_num values": (lambda x: np.nan_to_num(x, nan=1.5, posinf=3.0, neginf=-2.0),
                          X_NONFINITE),
    "deg2rad": (lambda x: np.deg2rad(x) + np.radians(x), X23),
    "rad2deg": (lambda x: np.rad2deg(x) + np.degrees(x), X23),
    "logaddexp2": (lambda x: np.logaddexp2(x, x[::-1]), X23),
    "real_if_close": (lambda x: np.real_if_close(x), X23),
    "fftshift": (lambda x: np.fft.fftshift(x), X34),
    "ifftshift": (lambda x: np.fft.ifftshift(x, axes=1), X34),
    "interp": (lambda x: np.interp(x, [0.3, 1.0, 1.7], [1.0, -1.0, 2.0]), X34),
    "interp fp": (lambda x: np.interp([0.0, 0.5, 1.2, 3.0], [0.3, 1.0, 1.7], x[0]), X23),
    "interp left right": (lambda x: np.interp(x, [0.3, 1.0, 1.7], x[0], left=-5.0,
                                              right=5.0), X23),
    "interp traced xp": (lambda x: np.interp(x, np.sort(x[0]), x[1], left=x[0, 0]), X34),
    "interp traced xp at knots": (lambda x: np.interp(np.sort(x[0]), np.sort(x[0]), x[1]),
                                  X34),
    "nansum": (lambda x: np.nansum(x, axis=1), X_NAN),
    "nanmean": (lambda x: np.nanmean(x, axis=0), X_NAN),
    "nanmax": (lambda x: np.nanmax(x, axis=1), X_NAN),
    "nanmin": (lambda x: np.nanmin(x), X_NAN),
    "nanprod": (lambda x: np.nanprod(x, axis=1, keepdims=True), X_NAN),
    "nanstd": (lambda x: np.nanstd(x, axis=1, ddof=1), X_NAN),
    "nanvar": (lambda x: np.nanvar(x), X_NAN),
    "nancumsum": (lambda x: np.nancumsum(x, axis=1), X_NAN),
    "clip traced bounds": (lambda x: np.clip(x, x[:, :1], 1.2), X34),
    "matrix_power": (lambda x: np.linalg.matrix_power(x[:, :3], 5), X34),
    "matrix_power -1": (lambda x: np.linalg.matrix_power(x[:, :3] + 2 * np.eye(3), -3), X34),
    "einsum sublist": (lambda x: np.einsum(x, [0, 1], x, [2, 1], [0, 2]), X23),
    "einsum sublist implicit": (lambda x: np.einsum(x, [0], x, [0]), V5),
    "einsum sublist ellipsis": (lambda x: np.einsum(x, [Ellipsis, 1], [1, Ellipsis]), X23),
    "array nested": (lambda x: np.array([[x[0, 0], x[0, 1]], [x[1, 0], 0.5]]), X23),
    "asarray tuple": (lambda x: np.asarray((x[0], np.ones(3))), X23),
    "stack mixed": (lambda x: np.stack([x[0, 0], 0.5, x[1, 2]]), X23),
    "r_": (lambda x: np.r_[x[0], 0.5, x[1], 0:2], X23),
    "c_": (lambda x: np.c_[x[0], x[1], np.zeros(3)], X23),
    "mean of list": (lambda x: np.mean([x[0, 0], x[0, 1] + 2]), X23),
    "std of list": (lambda x: np.std([x[0, 0], x[0, 1], 3.0]), X23),
    "var of list": (lambda x: np.var([x[0, 0], x[0, 1], 3.0]), X23),
    "norm of list": (lambda x: np.linalg.norm([x[0, 0], x[0, 1], 3.0]), X23),
    "sum of list": (lambda x: np.sum([x[0], x[1]], axis=0), X23),
    "logsumexp b": (lambda x: logsumexp(x, axis=1, b=x[::-1]), X23),
    "special.logsumexp b": (lambda x: scipy.special.logsumexp(x, b=0.5), X23),
    "digamma imported": (lambda x: digamma(x) + psi(x), X23),
    "logit imported": (lambda x: logit(x / 3.0), X23),
}
PHASES = np.array([0.0, 3.0, 6.5, 0.2, -3.3, 3 * np.pi, 1.0])
MASK34 = X34 > 1.0
# the NumPy functions of the "real programs" round: the same values, dtypes and shapes as
# NumPy's (test_new_functions_match_numpy_exactly checks dtypes and shapes too)
NEW_CASES = {
    "polyval": (lambda x: np.polyval(x, 0.5), V5),
    "polyval x": (lambda x: np.polyval([1.0, -2.0, 3.0], x), X23),
    "polyval 2d p": (lambda x: np.polyval(x, x[0]), X34),
    "polyval int x": (lambda x: np.polyval(x, 3), V5),
    "vander": (lambda x: np.vander(x), V5),
    "vander N increasing": (lambda x: np.vander(x, 4, increasing=True), V3),
    "vander float32": (lambda x: np.vander(x.astype(np.float32), 3), V3),
    "trapezoid": (lambda x: np.trapezoid(x), X34),
    "trapezoid x": (lambda x: np.trapezoid(x, np.sort(x[0]), axis=1), X34),
    "trapezoid x nd": (lambda x: np.trapezoid(x, x ** 2, axis=0), X34),
    "trapezoid dx": (lambda x: np.trapezoid(x, dx=x[0, 0]), X34),
    "unwrap": (lambda p: np.unwrap(p), PHASES),
    "unwrap discont": (lambda p: np.unwrap(p, discont=4.0), PHASES),
    "unwrap period": (lambda p: np.unwrap(p, period=4), PHASES),
    "unwrap int": (lambda p: np.unwrap((3 * p).astype(int), period=4), PHASES),
    "unwrap axis": (lambda p: np.unwrap(np.outer(p, p[:3]), axis=0), PHASES),
    "unwrap half period": (lambda p: np.unwrap(p[:5] * 0 + [0.0, np.pi, 0.0, -np.pi, 0.0]),
                           PHASES),
    "average": (lambda x: np.average(x, axis=1), X34),
    "average returned": (lambda x: np.average(x, returned=True), X34),
    "average weights": (lambda x: np.average(x, weights=x ** 2, axis=0, returned=True), X34),
    "average weights 1d": (lambda x: np.average(x, axis=1, weights=[1, 2, 3, 4],
                                                keepdims=True), X34),
    "average weights axes": (lambda x: np.average(x.reshape(2, 2, 3), axis=(2, 0),
                                                  weights=x[:3, :2]), X34),
    "average int": (lambda x: np.average((3 * x).astype(int), axis=0, weights=x[:, 0]), X34),
    "ptp": (lambda x: np.ptp(x), X34),
    "ptp axis": (lambda x: np.ptp(x, axis=1, keepdims=True), X34),
    "sum where": (lambda x: np.sum(x, axis=1, where=x > 1.0), X34),
    "sum where initial": (lambda x: np.sum(x, where=MASK34, initial=2.5), X34),
    "prod where": (lambda x: np.prod(x, axis=0, where=x < 1.5, keepdims=True), X34),
    "max where": (lambda x: np.max(x, axis=1, where=MASK34, initial=-1.0), X34),
    "min initial": (lambda x: np.min(x, axis=0, initial=0.5), X34),
    "mean where": (lambda x: np.mean(x, axis=1, where=x > 0.8), X34),
    "mean where row": (lambda x: np.mean(x, axis=0, where=[True, False, True]), X23),
    "var where": (lambda x: np.var(x, axis=1, where=x > 0.5, ddof=1), X34),
    "std where": (lambda x: np.std(x, where=MASK34), X34),
    "all where": (lambda x: np.all(x > 0.5, axis=1, where=x < 1.5), X34),
    "any where": (lambda x: np.any(x > 1.5, where=MASK34, keepdims=True), X34),
    "cov": (lambda x: np.cov(x), X34),
    "cov 1d": (lambda x: np.cov(x[0]), X34),
    "cov y rowvar": (lambda x: np.cov(x, x[:, :2] ** 2, rowvar=False), X34),
    "cov bias": (lambda x: np.cov(x, bias=True), X34),
    "cov ddof": (lambda x: np.cov(x, ddof=2), X34),
    "cov fweights aweights": (lambda x: np.cov(x, fweights=[1, 2, 3, 1],
                                               aweights=[0.5, 2.0, 3.0, 1.0]), X34),
    "cov traced aweights": (lambda x: np.cov(x, aweights=x[0] ** 2, ddof=1), X34),
    "cov complex": (lambda x: np.cov(x + 1j * x[::-1]), X34),
    "corrcoef": (lambda x: np.corrcoef(x), X34),
    "corrcoef y": (lambda x: np.corrcoef(x[0], x[1] ** 2), X34),
    "corrcoef one": (lambda x: np.corrcoef(x[0]), X34),
    "meshgrid": (lambda x: np.meshgrid(x[0], x[1, :2]), X34),
    "meshgrid ij 3": (lambda x: np.meshgrid(x[0], x[1, :2], x[2, :3], indexing="ij"), X34),
    "meshgrid sparse": (lambda x: np.meshgrid(x[0], x[1, :2], sparse=True), X34),
    "block": (lambda x: np.block([[x, x[:, :1]], [x[:1], np.ones((1, 1))]]), X34),
    "block 1d": (lambda x: np.block([x[0], 2.0, x[1, :2]]), X34),
    "block depth 3": (lambda x: np.block([[[x[0, :1]], [x[1, :1]]]]), X34),
    "geomspace": (lambda x: np.geomspace(1, 2 + x[0, 0] ** 2, 5), X34),
    "geomspace negative": (lambda x: np.geomspace(-x[0, 0], -5.0, 6, endpoint=False), X34),
    "geomspace arrays axis": (lambda x: np.geomspace(x[0, :2], [3.0, 4.0], 4, axis=-1), X34),
    "geomspace dtype": (lambda x: np.geomspace(x[0, 0], 30.0, 5, dtype=int), X34),
    "linspace int dtype": (lambda x: np.linspace(x[0, 0] - 3.0, 7.0, 6, dtype=int), X34),
    "piecewise": (lambda x: np.piecewise(x, [x > 1.0], [lambda t: t ** 2, lambda t: -t]), X34),
    "piecewise otherwise": (lambda x: np.piecewise(x, [x < 0.5, x > 1.5],
                                                   [lambda t: -t, np.sin, 7.0]), X34),
    "piecewise one condition": (lambda x: np.piecewise(x[0], x[0] > 1.0, [np.exp, 2.0]), X34),
    "piecewise constant": (lambda x: np.piecewise(x, [MASK34], [lambda t: t - t.mean(),
                                                                np.sum]), X34),
    "piecewise args": (lambda x: np.piecewise(x, [x > 1.0], [lambda t, a: t * a, 0], 3.0),
                       X34),
    "piecewise int": (lambda x: np.piecewise((3 * x).astype(int), [x > 1.0],
                                             [lambda t: t * 1.5, -1]), X34),
    "apply_along_axis": (lambda x: np.apply_along_axis(np.sum, 0, x), X34),
    "apply_along_axis matrix": (lambda x: np.apply_along_axis(lambda r: np.outer(r, r), 1, x),
                                X34),
    "apply_along_axis args": (lambda x: np.apply_along_axis(np.dot, -1, x, np.arange(4.0)),
                              X34),
    "polynomial.polyval": (lambda x: np.polynomial.polynomial.polyval(0.5, x), V5),
    "polynomial.polyval tensor": (lambda x: np.polynomial.polynomial.polyval(x[0], x), X34),
    "polynomial.polyval2d": (lambda x: np.polynomial.polynomial.polyval2d(x[0], x[1], x[:, :3]),
                             X34),
    "chebval": (lambda x: np.polynomial.chebyshev.chebval(x, [1.0, 2.0, -3.0, 0.5]), X23),
    "chebval3d": (lambda x: np.polynomial.chebyshev.chebval3d(x, x, x, np.ones((2, 2, 3))),
                  V3),
    "legval": (lambda x: np.polynomial.legendre.legval(x[0], x, tensor=False), X34),
    "hermval": (lambda x: np.polynomial.hermite.hermval(0.5, x), V5),
    "hermeval": (lambda x: np.polynomial.hermite_e.hermeval(x, x), V5),
    "lagval": (lambda x: np.polynomial.laguerre.lagval([0.5, 1.5], x), X34),
    "hermval float32": (lambda x: np.polynomial.hermite.hermval(0.5, x.astype(np.float32)), V5),
}
for _mode in ("full", "same", "valid"):
    for _n, _m in ((5, 3), (3, 5), (4, 4), (1, 3)):
        CASES[f"convolve {_mode} {_n},{_m}"] = (
            lambda x, m=_mode, n=_n, k=_m: np.convolve(x[:n], x[::-1][:k] * 2, m), V5)
        CASES[f"correlate {_mode} {_n},{_m}"] = (
            lambda x, m=_mode, n=_n, k=_m: np.correlate(x[:n], x[::-1][:k] * 2, m), V5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_traced_value_equals_numpy(name):
    f, x = CASES[name]
    want = f(x)
    got = dg.jit(f)(x)
    for g, w in zip(np.broadcast_arrays(*got) if isinstance(want, (tuple, list)) else [got],
                    want if isinstance(want, (tuple, list)) else [want]):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(NEW_CASES))
def test_new_functions_match_numpy_exactly(name):
    """NumPy's dtypes and shapes, and its values to rounding (the same operations in the
    same order: most are equal bit for bit)."""
    f, x = NEW_CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want, got = f(x), dg.jit(f)(x)
    assert type(got) is type(want) or not isinstance(want, (tuple, list))
    for g, w in zip(got if isinstance(want, (tuple, list)) else [got],
                    want if isinstance(want, (tuple, list)) else [want]):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        scale = np.max(np.abs(w), initial=1.0)
        np.testing.assert_allclose(g, w, rtol=1e-15, atol=4e-16 * scale)


@pytest.mark.parametrize("name", ["digamma imported", "logit imported", "r_",
                                  "array nested", "norm of list", "einsum sublist"])
def test_construction_and_imports_differentiate(name):
    f, x = CASES[name]
    dg.testing.check_grads(lambda x: np.sum(f(x) ** 2), (x,), order=2)


def test_refusals_are_clear():
    with pytest.raises(dg.DualgpuError, match="real_if_close"):
        dg.jit(lambda x: np.real_if_close(x * 1j))(X23)
    with pytest.raises(dg.DualgpuError, match="period"):  # period=2.0 is supported now
        dg.jit(lambda x: np.interp(x, [0.0, 1.0], [1.0, 2.0], period=0))(X23)
    with pytest.raises(dg.DualgpuError, match="ragged"):
        dg.jit(lambda x: np.array([[x[0, 0], x[0, 1]], [x[1, 0]]]))(X23)
    with pytest.raises(dg.DualgpuError, match="mode"):
        dg.jit(lambda x: np.convolve(x, x, "middle"))(V3)


SORT_CASES = {
    "sort": lambda x: np.sort(x), "sort axis 0": lambda x: np.sort(x, axis=0),
    "sort flat": lambda x: np.sort(x, axis=None), "argsort": lambda x: np.argsort(x, axis=0),
    "median": lambda x: np.median(x), "median axis": lambda x: np.median(x, axis=1),
    "median even": lambda x: np.median(x, axis=0, keepdims=True),
    "quantile": lambda x: np.quantile(x, [0.0, 0.3, 1.0], axis=1),
    "percentile": lambda x: np.percentile(x, 62.5, keepdims=True),
    "take_along_axis": lambda x: np.take_along_axis(x, np.argsort(x, axis=1), axis=1),
    "partition kth": lambda x: np.partition(x, 2, axis=1)[:, 2],
}


@pytest.mark.parametrize("name", sorted(SORT_CASES))
def test_sorting_values_equal_numpy(name):
    f = SORT_CASES[name]
    np.testing.assert_allclose(dg.jit(f)(X34), f(X34), rtol=1e-12)


def test_sort_ties_follow_numpys_stable_order():
    """Of two equal values the first sorts first and keeps its own derivative."""
    x = np.array([1.0, 1.0, 0.0])
    np.testing.assert_array_equal(dg.grad(lambda x: np.sort(x)[1] + 2 * np.sort(x)[2])(x),
                                  [1.0, 2.0, 0.0])
    dg.testing.check_grads(lambda x: np.sort(x) * x, (X34,), order=2)


SYM = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 4.0]])
TALL = RNG.uniform(-1.0, 1.0, (4, 3)) + np.eye(4, 3) * 3
DECOMPOSITION_CASES = {
    "eigvalsh": (lambda a: np.linalg.eigvalsh(a), SYM),
    "eigvalsh U": (lambda a: np.linalg.eigvalsh(np.triu(a) + 5.0 * np.tril(a, -1), "U"), SYM),
    "eigh vectors": (lambda a: np.abs(np.linalg.eigh(a).eigenvectors), SYM),
    "svd values": (lambda a: np.linalg.svd(a, compute_uv=False), TALL),
    "svd vectors": (lambda a: np.abs(np.linalg.svd(a, full_matrices=False).U), TALL),
    "svdvals": (lambda a: np.linalg.svdvals(a.T), TALL),
    "qr": (lambda a: np.linalg.qr(a).R, TALL),
    "qr r": (lambda a: np.linalg.qr(a, mode="r"), TALL),
    "pinv": (lambda a: np.linalg.pinv(a), TALL),
    "lstsq x": (lambda a: np.linalg.lstsq(a, a[:, 0] + 1.0)[0], TALL),
    "lstsq residuals": (lambda a: np.linalg.lstsq(a, a[:, :2] * a[:, 1:])[1], TALL),
    "norm 2": (lambda a: np.linalg.norm(a, 2), TALL),
    "norm nuc": (lambda a: np.linalg.norm(a, "nuc"), TALL),
    "norm -2": (lambda a: np.linalg.norm(a, -2), TALL),
}


# np.polyfit solves by a pseudo-inverse (NumPy: LAPACK's gelsd): equal to rounding
POLYFIT_CASES = {
    "polyfit": lambda x: np.polyfit(x[0], x[1], 2),
    "columns weights": lambda x: np.polyfit(x[0], x.T, 1, w=x[2]),
    "full": lambda x: np.polyfit(x[0], x[1], 2, full=True),
    "cov": lambda x: np.polyfit(x[0], x[1], 1, cov=True),
    "cov columns unscaled": lambda x: np.polyfit(x[0], x[1:].T, 2, cov="unscaled"),
    "float32": lambda x: np.polyfit(x[0].astype(np.float32), x[1], 1),
    "float degree": lambda x: np.polyfit(x[0], x[1], 2.0),
}


@pytest.mark.parametrize("shape", [(4, 0), (0, 3), (2, 0, 0)])
def test_matrix_rank_of_empty_matrices_is_zero_as_numpys(shape):
    """NumPy's largest singular value of an empty matrix is its initial=0: rank 0 (the
    maximum over no values raised NumPy's ValueError from inside the trace)."""
    f = lambda a: np.linalg.matrix_rank(a * 2.0)
    got, want = dg.jit(f)(np.ones(shape)), f(np.ones(shape))
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", sorted(POLYFIT_CASES))
def test_polyfit_matches_numpy(name):
    f = POLYFIT_CASES[name]
    want, got = f(X34), dg.jit(f)(X34)
    assert type(got) is type(want)
    for g, w in zip(got if isinstance(want, tuple) else [got],
                    want if isinstance(want, tuple) else [want]):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=2e-6 if w.dtype == np.float32 else 1e-10,
                                   atol=1e-12 * np.max(np.abs(w), initial=1.0))


@pytest.mark.parametrize("name", sorted(DECOMPOSITION_CASES))
def test_decomposition_values_equal_numpy(name):
    f, a = DECOMPOSITION_CASES[name]
    np.testing.assert_allclose(dg.jit(f)(a), f(a), rtol=1e-10, atol=1e-12)
    if name != "qr r":
        dg.testing.check_grads(lambda a: np.sum(np.asarray(f(a)) ** 2), (a,), order=1)


def test_eigh_upper_triangle_is_numpys_own_call():
    """eigh(a, "U") calls LAPACK on the upper triangle, as NumPy: reading the lower triangle
    of a.T gives the same matrix but other eigenvector signs (found by autograd's
    test_eigvalh_upper through benchmarks/peer_suite.py)."""
    a = np.array([[0.1, -0.1, 0.6], [0.1, -0.5, 0.4], [1.3, 0.9, -0.7]])
    w, v = dg.jit(lambda a: np.linalg.eigh(a, "U"))(a)
    np.testing.assert_array_equal(v, np.linalg.eigh(a, "U")[1])
    np.testing.assert_array_equal(w, np.linalg.eigh(a, "U")[0])
    dg.testing.check_grads(lambda a: tuple(np.linalg.eigh(a, "U")), (a,), order=2)
    with pytest.raises(dg.DualgpuError, match="UPLO"):
        dg.jit(lambda a: np.linalg.eigh(a, "X"))(a)


def test_joining_functions_take_dtype_and_casting():
    """NumPy 2's dtype=/casting= of vstack, hstack, stack and row_stack (np.row_stack passes
    them on to vstack: autograd's test_row_stack_* through benchmarks/peer_suite.py)."""
    x = np.arange(3.0)
    for fn in (np.vstack, np.hstack, np.stack):
        got = dg.jit(lambda x, fn=fn: fn([x, x * x], dtype=np.float32))(x)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, fn([x, x * x], dtype=np.float32))
    with pytest.raises(dg.DualgpuError, match="vstack: cannot cast float64 to int64"):
        dg.jit(lambda x: np.vstack([x, x], dtype=np.int64))(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        dg.testing.check_grads(lambda a, b: np.row_stack((a, b)), (x, x + 1.0), order=2)


def test_repeated_eigenvalues_follow_jax():
    """At a repeated eigenvalue the eigenvalues' gradient is finite (and right for their
    symmetric functions); eigenvector derivatives are not finite, as in JAX."""
    a = np.diag([1.0, 1.0, 3.0])
    g = dg.grad(lambda a: np.sum(np.linalg.eigvalsh(a) ** 2))(a)
    np.testing.assert_allclose(g, np.tril(2 * a), atol=1e-12)  # d tr(A^2) on the lower half
    gv = dg.grad(lambda a: np.sum(np.linalg.eigh(a)[1][:, 0] * np.arange(3.0)))(a)
    assert not np.all(np.isfinite(gv))
    s = dg.grad(lambda a: np.sum(np.linalg.svd(a, compute_uv=False)))(np.eye(3))
    np.testing.assert_allclose(s, np.eye(3), atol=1e-12)  # the nuclear norm's gradient


GENERAL = np.array([[1.0, 2.0, 0.5], [0.0, 3.0, -1.0], [0.2, 0.1, 6.0]])  # real eigenvalues


def test_eig_values_and_derivatives():
    """eig of a real matrix with real eigenvalues: NumPy's values (LAPACK's order, unit
    columns), the eigenvalue gradient u v^T / (u . v) from the left and right eigenvectors,
    and second derivatives against finite differences (check_grads order 2)."""
    w, v = dg.jit(np.linalg.eig)(GENERAL)
    w_np, v_np = np.linalg.eig(GENERAL)
    np.testing.assert_allclose(w, w_np, rtol=1e-12)
    np.testing.assert_allclose(v, v_np, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(v, axis=0), 1.0, rtol=1e-12)
    k = int(np.argmax(w_np))
    left = np.linalg.inv(v_np)[k]  # the left eigenvector of w[k]
    want = np.outer(left, v_np[:, k]) / (left @ v_np[:, k])
    np.testing.assert_allclose(dg.grad(lambda a: np.linalg.eigvals(a)[k])(GENERAL), want,
                               rtol=1e-10, atol=1e-12)
    dg.testing.check_grads(lambda a: np.linalg.eig(a)[1] * np.linalg.eig(a)[1][:1],
                           (GENERAL,), order=2)
    p = np.arange(9.0).reshape(3, 3) / 9
    h = dg.hvp(lambda a: np.sum(np.linalg.eigvals(a) ** 3))(GENERAL, p)
    g = dg.grad(lambda a: np.sum(np.linalg.eigvals(a) ** 3))
    fd = (g(GENERAL + 1e-6 * p) - g(GENERAL - 1e-6 * p)) / 2e-6
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-6)


def test_eig_with_complex_eigenvalues_is_refused_when_it_runs():
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    with pytest.raises(dg.DualgpuError, match="complex eigenvalues"):
        dg.grad(lambda a: np.sum(np.linalg.eigvals(a)))(rotation)
    with pytest.raises(dg.UnsupportedOpError, match="complex traced matrix"):
        dg.jit(np.linalg.eig)(rotation + 0j)
    # a constant matrix inside a traced function is NumPy's (complex results included)
    got = dg.jit(lambda x: x * np.abs(np.linalg.eigvals(rotation))[0])(np.ones(2))
    np.testing.assert_allclose(got, np.ones(2))


class _FakeXp(types.ModuleType):
    """An array module standing for CuPy on the CPU: NumPy's functions, but not NumPy (so
    eig's impl takes its non-LAPACK path), with the given ``linalg.eig`` or none."""

    def __init__(self, eig=None, version="13.6.0"):
        super().__init__("cupy")
        self.__version__ = version
        self.linalg = types.SimpleNamespace(**({} if eig is None else {"eig": eig}))

    def __getattr__(self, name):
        return getattr(np, name)


def _complex_eig(imag, phases=True):
    """An eig giving complex results: eigenvalues with imaginary part ``imag`` times their
    modulus, eigenvectors times a complex phase each (as a complex-arithmetic solver may)."""
    def eig(a):
        w, v = np.linalg.eig(a)
        w = w + 1j * imag * np.abs(w)
        phase = np.exp(1j * np.linspace(0.3, 2.0, w.shape[-1])) if phases else 1.0
        return w[..., ::-1], (v * phase)[..., ::-1]
    return eig


def test_eig_impl_refuses_an_array_module_without_eig():
    """Where ``linalg.eig`` is missing (CuPy before 14), the op is refused naming it and the
    module's version, when traced and at run time; an eig whose cuSOLVER routine is missing
    is refused too."""
    from dualgpu.ops.decompositions import _eig_impl, eig_unavailable

    old = _FakeXp(version="13.6.0")
    why = eig_unavailable(old)
    assert "cupy 13.6.0" in why and "cupy.linalg.eig" in why
    assert eig_unavailable(np) is None and eig_unavailable(_FakeXp(_complex_eig(0.0))) is None
    with pytest.raises(dg.UnsupportedOpError, match=r"linalg\.eig: cupy 13\.6\.0"):
        _eig_impl(old, GENERAL)

    def no_geev(a):
        raise RuntimeError("geev is not available")
    with pytest.raises(dg.UnsupportedOpError, match="linalg.eig: cupy .*geev"):
        _eig_impl(_FakeXp(no_geev), GENERAL)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_eig_impl_takes_negligible_imaginary_parts_as_real(dtype, monkeypatch):
    """A solver's complex results with imaginary parts of rounding size are real ones: the
    real dtype of the input, unit-norm real eigenvectors (NumPy's up to sign), eigenpairs
    in ascending order of eigenvalue off NumPy."""
    from dualgpu.backends import backend_for_xp
    from dualgpu.ops import decompositions
    from dualgpu.ops.decompositions import _eig_impl

    class DeviceSolver:  # the fake library's backend: a device solver, not LAPACK
        on_device = True

    monkeypatch.setattr(decompositions, "backend_for_xp",
                        lambda xp: DeviceSolver() if isinstance(xp, _FakeXp)
                        else backend_for_xp(xp))

    a = GENERAL.astype(dtype)
    w_np, v_np = np.linalg.eig(GENERAL)
    order = np.argsort(w_np)
    for phases in (True, False):
        w, v = _eig_impl(_FakeXp(_complex_eig(1e-3 * np.finfo(dtype).eps, phases)), a)
        assert w.dtype == dtype and v.dtype == dtype
        tol = 1e-12 if dtype == np.float64 else 1e-5
        np.testing.assert_allclose(w, w_np[order], rtol=tol)
        signs = np.sign(np.sum(v * v_np[:, order], axis=0))
        np.testing.assert_allclose(v * signs, v_np[:, order], atol=tol)
        np.testing.assert_allclose(np.linalg.norm(v, axis=0), 1.0, rtol=tol)
    batch = np.stack([GENERAL, GENERAL.T + np.eye(3)])
    w, v = _eig_impl(_FakeXp(_complex_eig(1e-18)), batch)
    assert np.all(np.diff(w, axis=-1) > 0)
    np.testing.assert_allclose(batch @ v, v * w[:, None, :], atol=1e-12)
    # NumPy's own results keep LAPACK's order and signs
    w, v = _eig_impl(np, GENERAL)
    np.testing.assert_array_equal(w, w_np)
    np.testing.assert_array_equal(v, v_np)


def test_eig_impl_raises_on_a_non_negligible_imaginary_part():
    from dualgpu.ops.decompositions import _eig_impl

    with pytest.raises(dg.DualgpuError, match="complex eigenvalues"):
        _eig_impl(_FakeXp(_complex_eig(1e-4)), GENERAL)
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    for xp in (np, _FakeXp(np.linalg.eig)):
        with pytest.raises(dg.DualgpuError, match=r"complex eigenvalues \(e\.g\. 1j\)"):
            _eig_impl(xp, rotation)


def test_full_svd_and_wide_qr_are_refused():
    with pytest.raises(dg.UnsupportedOpError, match="full_matrices"):
        dg.jit(lambda a: np.linalg.svd(a)[0])(TALL)
    with pytest.raises(dg.DualgpuError, match="rows"):
        dg.jit(lambda a: np.linalg.qr(a.T)[0])(TALL)


REFUSED_NEW = [
    (lambda x: np.vander(x), "vander: x must be a one-dimensional"),
    (lambda x: np.average(x, weights=x[0]), "axis must be specified"),
    (lambda x: np.average(x, axis=1, weights=[1.0, -1.0, 0.0, 0.0]), "weights sum to zero"),
    (lambda x: np.average(x, axis=(1, 1)), "repeated axis"),
    (lambda x: np.cov(x, fweights=np.abs(x[0])), "traced fweights"),
    (lambda x: np.cov(x, fweights=[1, 2.5, 1, 1]), "fweights must be integer"),
    (lambda x: np.cov(x, aweights=[1.0, 2.0]), "aweights"),
    (lambda x: np.cov(x[None]), "more than 2 dimensions"),
    (lambda x: np.max(x, where=MASK34), "needs initial"),
    (lambda x: np.sum(x, where=np.ones(5, bool)), "where="),
    (lambda x: np.var(x, axis=0, where=np.eye(3, 4, dtype=bool), ddof=1), "degrees of freedom"),
    (lambda x: np.block([x, (x,)]), "tuple"),
    (lambda x: np.block([x, [x]]), "depths are mismatched"),
    (lambda x: np.block([[], x]), "cannot be empty"),
    (lambda x: np.meshgrid(x, indexing="xx"), "indexing"),
    (lambda x: np.geomspace(x[0, 0], 0.0, 3), "cannot include zero"),
    (lambda x: np.geomspace(x[0, 0], 1j, 3), "complex"),
    (lambda x: np.piecewise(x, [x > 1.0], [lambda t: t - t.mean(), 0.0]), "elementwise"),
    (lambda x: np.piecewise(x, [x > 1.0], [lambda t: t[::-1], 0.0]), "getitem"),
    (lambda x: np.piecewise(x, [x > 1.0], [1, 2, 3]), "functions are expected"),
    (lambda x: np.piecewise(x, [x[0] > 1.0], [1]), "x's shape"),
    (lambda x: np.polynomial.polynomial.polyval2d(x[0], x[1, :2], x), "polyval2d: x, y"),
    (lambda x: np.trim_zeros(x[0]), "trim_zeros at .* where to cut is read"),
    (lambda x: np.polyfit(x[0], x[1, :3], 1), "as long as x"),
    (lambda x: np.polyfit(x, x[0], 1), "1-D vector for x"),
    (lambda x: np.polyfit(x[0], x[1], -1), "deg >= 0"),
    (lambda x: np.polyfit(x[0], x[1], 3, cov=True), "must exceed order"),
    (lambda x: np.linalg.matrix_rank(x, tol=0.5, rtol=0.1), "can't be both set"),
    (lambda x: np.apply_along_axis(np.sum, 0, np.ones((2, 0)) * x[0, 0]), "dimensions are 0"),
]


@pytest.mark.parametrize("i", range(len(REFUSED_NEW)))
def test_new_functions_refuse_clearly(i):
    f, message = REFUSED_NEW[i]
    with pytest.raises(dg.DualgpuError, match=message):
        dg.jit(f)(X34)


SECOND_ORDER = {
    "corrcoef": lambda x: np.sum(np.corrcoef(x) ** 2 * np.arange(9.0).reshape(3, 3)),
    "cov aweights": lambda x: np.sum(np.cov(x, aweights=x[0] ** 2) * np.arange(9.0)
                                     .reshape(3, 3)),
    "average weights": lambda x: np.average(x, weights=x ** 2),
    "hermval": lambda x: np.sum(np.polynomial.hermite.hermval(x[0], x[1:])),
    "polyval vander": lambda x: np.sum(np.polyval(x[0], x[1])[:, None] * np.vander(x[2], 3)),
    "trapezoid": lambda x: np.sum(np.trapezoid(np.sin(x), np.cumsum(x[0]), axis=1)),
    "piecewise": lambda x: np.sum(np.piecewise(x, [x > 1.0], [lambda t: t ** 3, np.sin])),
    "geomspace": lambda x: np.sum(np.geomspace(x[0, 0], x[1, 1] + 2.0, 5) ** 2),
    "var where": lambda x: np.sum(np.var(x, axis=1, where=x > 0.5) ** 2),
    "apply_along_axis": lambda x: np.sum(np.apply_along_axis(lambda r: np.prod(r), 1, x)),
    "polyfit": lambda x: np.sum(np.polyfit(x[0], x[1] ** 2, 2, w=x[2]) ** 2),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_new_functions_second_order(name):
    """The HVP against central differences of the gradient, and the Hessian times the
    direction against the HVP."""
    f = SECOND_ORDER[name]
    v = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    h = dg.hvp(f)(X34, v)
    g = dg.grad(f)
    fd = (g(X34 + 1e-5 * v) - g(X34 - 1e-5 * v)) / 2e-5
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-7)
    hess = np.asarray(dg.hessian(f)(X34)).reshape(12, 12)
    np.testing.assert_allclose((hess @ v.ravel()).reshape(3, 4), h, rtol=1e-10, atol=1e-12)


def test_trim_zeros_reads_where_to_cut_so_poly1d_takes_traced_coefficients():
    """Where to cut is read from the values where they are known (grad, jacfwd), and
    refused under jit (the refusal is in test_new_functions_refuse_clearly)."""
    c = np.array([0.0, 0.0, 1.5, -2.0, 0.0])
    np.testing.assert_array_equal(dg.jacfwd(np.trim_zeros)(c), np.eye(5)[2:4])
    np.testing.assert_array_equal(dg.jacfwd(lambda c: np.trim_zeros(c, "b"))(c), np.eye(5)[:4])
    grid = np.outer(c, c[::-1] + 1.0)
    value, _ = dg.value_and_grad(lambda c: np.sum(np.trim_zeros(np.outer(c, c[::-1] + 1.0),
                                                              axis=0) ** 2))(c)
    np.testing.assert_allclose(value, np.sum(np.trim_zeros(grid, axis=0) ** 2), rtol=1e-15)
    c[0] = 1.0  # a leading coefficient that is not 0: nothing is cut
    np.testing.assert_allclose(dg.grad(lambda c: np.poly1d(c)(0.5))(c),
                               0.5 ** np.arange(4.0, -1.0, -1.0), rtol=1e-15)
    np.testing.assert_allclose(dg.jit(lambda c: np.polyval(c, 0.5))(c), np.poly1d(c)(0.5))


def test_matrix_rank_counts_as_numpy():
    """np.linalg.matrix_rank of traced matrices (batched, rank-deficient, tol/rtol, vectors,
    float32): NumPy's counts, int64; it passes no derivative on."""
    a = RNG.normal(size=(3, 4, 5))
    a[1] = np.outer(a[1, :, 0], a[1, 0])
    for f in (np.linalg.matrix_rank, lambda a: np.linalg.matrix_rank(a, tol=0.5),
              lambda a: np.linalg.matrix_rank(a, rtol=0.3),
              lambda a: np.linalg.matrix_rank(a, tol=np.array([0.1, 0.5, 3.0])),
              lambda a: np.linalg.matrix_rank(a[0, 0]),
              lambda a: np.linalg.matrix_rank(0 * a[0, 0]),
              lambda a: np.linalg.matrix_rank(a[0].astype(np.float32))):
        got, want = dg.jit(f)(a), np.asarray(f(a))
        assert got.dtype == np.int64 and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    g = dg.grad(lambda a: np.sum(a ** 2) * np.linalg.matrix_rank(a))(a[0])
    np.testing.assert_allclose(g, 2 * a[0] * 4)
