"""NumPy functions beyond the elementwise registry ops on CuPy (sorting, linear-algebra
decompositions, scipy.linalg's functions, interpolation, convolution, NaN-aware reductions,
array construction): values, gradients and HVPs equal the NumPy backend's (which the CPU
tests check against finite differences). Library ops (sort, eigh, eig, svd, qr, pinv) run
through cupy / cuSOLVER, solve_triangular and lu_factor through cupyx.scipy.linalg; the
compositions through the fused kernels."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import dualgpu as dg

cp = pytest.importorskip("cupy")

TOL = {np.float64: 1e-9, np.float32: 2e-3}
RNG = np.random.default_rng(3)
X = RNG.uniform(0.2, 2.0, (4, 5))
SYM = (lambda m: (m + m.T) / 2 + np.diag([0.0, 3.0, 6.0, 9.0]))(RNG.uniform(-0.4, 0.4, (4, 4)))
TALL = RNG.uniform(-0.2, 0.2, (5, 3)) + np.eye(5, 3) * np.array([3.0, 2.0, 1.0])

CASES = {
    "sort": (lambda x: np.sort(x, axis=1) * x, X),
    "argsort gather": (lambda x: np.take_along_axis(x, np.argsort(x, axis=0), axis=0), X),
    "median": (lambda x: np.median(x, axis=0), X),
    "eigh": (lambda a: np.linalg.eigh(a)[0] + np.abs(np.linalg.eigh(a)[1][0]), SYM),
    "svd": (lambda a: np.linalg.svd(a, full_matrices=False)[1], TALL),
    "norm 2": (lambda a: np.linalg.norm(a, 2) * a, TALL),
    "qr": (lambda a: np.linalg.qr(a)[1], TALL),
    # scipy.linalg on CuPy arrays: cupyx.scipy.linalg's solve_triangular and lu_factor
    "scipy cholesky cho_solve": (lambda a: scipy.linalg.cho_solve(
        scipy.linalg.cho_factor(a @ a.T), a[:, :2]) + scipy.linalg.cholesky(a @ a.T)[:, :2], SYM),
    "scipy solve_triangular": (lambda a: scipy.linalg.solve_triangular(
        a, a[:, 1], trans=1, lower=True), SYM),
    "scipy lu_solve": (lambda a: scipy.linalg.lu_solve(scipy.linalg.lu_factor(a), a[::-1])
                       + scipy.linalg.lu_solve(scipy.linalg.lu_factor(a), a[0], trans=1), SYM),
    "scipy qr economic": (lambda a: scipy.linalg.qr(a, mode="economic")[1], TALL),
    "pinv": (lambda a: np.linalg.pinv(a), TALL),
    "lstsq": (lambda a: np.linalg.lstsq(a, a[:, 0] + 1.0)[0], TALL),
    "convolve": (lambda x: np.convolve(x[0], x[1, :3], "same"), X),
    "interp": (lambda x: np.interp(x, np.array([0.3, 1.0, 1.7]), x[0, :3]), X),
    "interp traced xp": (lambda x: np.interp(x, np.array([0.3, 1.0, 1.7]) * x[0, 0], x[0, :3]),
                         X),
    "gradient": (lambda x: np.gradient(x, 0.5, axis=1), X),
    "nanmean": (lambda x: np.nanmean(np.where(x > 1.5, np.nan, x), axis=1), X),
    "roll kron": (lambda x: np.kron(np.roll(x, 2, axis=1), x[:2, :2]), X),
    "array of traced": (lambda x: np.array([[x[0, 0], 0.5], [x[1, 1], x[2, 2]]]), X),
    "linspace": (lambda x: np.linspace(x[0, 0], x[1], 4), X),
    # the front end's compositions of this round (the CPU tests check them against NumPy)
    "polyval vander": (lambda x: np.polyval(x[0], x[1]) + np.vander(x[2], 3)[:, 1], X),
    "trapezoid unwrap ptp": (lambda x: np.trapezoid(x, axis=1) + np.ptp(np.unwrap(x), axis=1),
                             X),
    "average cov corrcoef": (lambda x: np.average(x, axis=1, weights=x[0])
                             + np.cov(x)[0] + np.corrcoef(x)[1], X),
    "sum where, max initial": (lambda x: np.sum(x, axis=1, where=x > 1.0)
                               + np.max(x, axis=1, where=x < 1.5, initial=0.0), X),
    "meshgrid block geomspace": (lambda x: np.meshgrid(x[0], x[1, :2])[0][1]
                                 + np.block([x[0, :2], x[1, :3]])
                                 + np.geomspace(x[0, 0], x[0, 1], 5), X),
    "polynomial chebval": (lambda x: np.polynomial.chebyshev.chebval(x[0], x[1, :3])
                           + np.polynomial.polynomial.polyval(x[2], x[3, :2]), X),
    "piecewise": (lambda x: np.piecewise(x, [x > 1.0], [lambda t: t ** 2, lambda t: -t]), X),
    # numpy.fft through cupy.fft (cuFFT)
    "fft rfft irfft ifftn": (lambda x: np.abs(np.fft.fft(x, axis=0))
                             + np.fft.irfft(np.fft.rfft(x) * (1.0 + 1.0j), 5)
                             + np.real(np.fft.ifftn(x * 1j, norm="ortho")), X),
    "histogram weights and edges": (lambda x: np.histogram(x[1:], bins=3, weights=x[1:] ** 2)[0]
                                    + np.histogram(x, bins=[0.0, 0.5, 1.0, 2.5])[1][:3], X),
    "fft2 hfft": (lambda x: np.imag(np.fft.fft2(x, s=(3, 6))[:, :5] * x[:3])
                  + np.fft.hfft(x[:, :3], 5, norm="forward")[:3], X),
}


def _loss(f):
    return lambda x: np.sum(f(x) ** 2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_numpy_function_on_cupy_matches_numpy(name, dtype):
    f, x = CASES[name]
    agrees_with_numpy(f, x, dtype, RNG, name)


def agrees_with_numpy(f, x, dtype, rng, label: str) -> None:
    """``dg.jit(f)`` and ``dg.grad_and_hvp`` of a loss of ``f`` give on CuPy arrays what they
    give on NumPy ones (within :data:`TOL`, relative to the largest value)."""
    x = x.astype(dtype)
    v = rng.uniform(-1, 1, x.shape).astype(dtype)
    for fn, args in ((dg.jit(f), (x,)), (dg.grad_and_hvp(_loss(f)), (x, v))):
        want = fn(*args)
        got = fn(*[cp.asarray(a) for a in args])
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            assert isinstance(g, cp.ndarray)
            scale = max(1.0, float(np.max(np.abs(w))))
            err = float(np.max(np.abs(cp.asnumpy(g).astype(np.float64) - np.asarray(w))))
            assert err <= TOL[dtype] * scale, f"{label}: error {err:.3g}"


HAS_EIG = hasattr(cp.linalg, "eig")
NO_EIG = f"cupy {cp.__version__} has no cupy.linalg.eig (cuSOLVER Xgeev, CuPy 14 and later)"
# Q diag(lam) Q^-1: real eigenvalues at least 1 apart, Q well conditioned
GENERAL5 = (lambda q: q * np.array([4.5, -2.0, 1.5, 3.0, 0.5]) @ np.linalg.inv(q))(
    np.eye(5) + RNG.uniform(-0.3, 0.3, (5, 5)))


def _close(got, want, what):
    got = cp.asnumpy(got) if isinstance(got, cp.ndarray) else np.asarray(got)
    scale = max(1.0, float(np.max(np.abs(want))))
    err = float(np.max(np.abs(got - want)))
    assert err <= 1e-9 * scale, f"{what}: error {err:.3g}"


def _eig_loss(a):
    """Eigenvalues and eigenvectors in a form free of their order and signs."""
    w, v = np.linalg.eig(a)
    rows = np.arange(1.0, 6.0)[:, None]
    return np.sum(w ** 3) / 10 + np.sum(rows * v ** 2 * w)


@pytest.mark.skipif(not HAS_EIG, reason=NO_EIG)
def test_general_eig_on_cupy_matches_numpy():
    """eig/eigvals on CuPy (cuSOLVER): NumPy's eigenpairs up to their order (ascending on
    CuPy) and the eigenvectors' signs, in float64; their JVP, gradient and HVP too. The
    program reads the eigenvalues on the host (the complex-eigenvalue check), so it runs
    eagerly instead of as a CUDA graph: repeated calls agree."""
    a, a_d = GENERAL5, cp.asarray(GENERAL5)
    w_np, v_np = dg.jit(np.linalg.eig)(a)
    o = np.argsort(w_np)
    eig_d = dg.jit(np.linalg.eig)
    for _ in range(3):
        w, v = eig_d(a_d)
        assert isinstance(w, cp.ndarray) and w.dtype == v.dtype == np.float64
        w, v = cp.asnumpy(w), cp.asnumpy(v)
        assert np.all(np.diff(w) > 0)
        signs = np.sign(np.sum(v * v_np[:, o], axis=0))
        _close(w, w_np[o], "eig values")
        _close(v * signs, v_np[:, o], "eig vectors")
        _close(dg.jit(np.linalg.eigvals)(a_d), w_np[o], "eigvals")
    t = np.random.default_rng(5).uniform(-1, 1, a.shape)
    _, (dw_np, dv_np) = dg.jvp(np.linalg.eig, (a,), (t,))
    _, (dw, dv) = dg.jvp(np.linalg.eig, (a_d,), (cp.asarray(t),))
    _close(dw, dw_np[o], "eig jvp values")
    _close(cp.asnumpy(dv) * signs, dv_np[:, o], "eig jvp vectors")
    _close(dg.grad(_eig_loss)(a_d), dg.grad(_eig_loss)(a), "eig grad")
    _close(dg.hvp(_eig_loss)(a_d, cp.asarray(t)), dg.hvp(_eig_loss)(a, t), "eig hvp")


@pytest.mark.skipif(not HAS_EIG, reason=NO_EIG)
def test_general_eig_of_complex_eigenvalues_raises_on_cupy():
    """A rotation block's eigenvalues +-2i: the clear error when the program runs."""
    rotation = cp.asarray(np.array([[0.0, -2.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))
    with pytest.raises(dg.DualgpuError, match="complex eigenvalues"):
        dg.grad(lambda a: np.sum(np.linalg.eigvals(a)))(rotation)
    with pytest.raises(dg.DualgpuError, match="complex eigenvalues"):
        dg.jit(np.linalg.eig)(rotation)


@pytest.mark.skipif(HAS_EIG, reason=f"cupy {cp.__version__} has cupy.linalg.eig")
def test_general_eig_is_refused_on_a_cupy_without_it():
    """Before CuPy 14 there is no general eigensolver: eig/eigvals of a traced CuPy matrix
    are refused when traced, naming the op and CuPy's version."""
    a = cp.asarray(np.array([[1.0, 2.0], [0.0, 3.0]]))
    for fn in (lambda a: np.linalg.eigvals(a), lambda a: np.linalg.eig(a)[1]):
        with pytest.raises(dg.UnsupportedOpError, match=f"linalg.eig.*cupy {cp.__version__}"):
            dg.grad(lambda a, fn=fn: np.sum(fn(a)))(a)


def test_fft_programs_replay_as_cuda_graphs():
    """A program of cuFFT transforms called again and again (eager, captured, replayed):
    every call gives the NumPy backend's values, in float32 and float64."""
    def spectral(x):
        return np.fft.irfft(np.fft.rfft(x, axis=1) * np.exp(-1j * x[:, :3]), 5, axis=1) ** 2

    for dtype in (np.float64, np.float32):
        x = X.astype(dtype)
        v = RNG.uniform(-1, 1, x.shape).astype(dtype)
        f, gh = dg.jit(spectral), dg.grad_and_hvp(lambda x: np.sum(spectral(x)))
        want_f, want_gh = f(x), gh(x, v)
        x_d, v_d = cp.asarray(x), cp.asarray(v)
        for _ in range(4):
            got = f(x_d)
            assert got.dtype == want_f.dtype
            assert float(cp.max(cp.abs(got - cp.asarray(want_f)))) <= TOL[dtype]
            for g, w in zip(gh(x_d, v_d), want_gh):
                scale = max(1.0, float(np.max(np.abs(w))))
                assert float(cp.max(cp.abs(g - cp.asarray(w)))) <= TOL[dtype] * scale
