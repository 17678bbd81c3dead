"""Issue 13's ops on CuPy: values, gradients and HVPs equal the NumPy backend's (which the
CPU tests check against finite differences). Library ops (sort, eigh, svd, qr, pinv) run
through cupy / cuSOLVER; the compositions through the fused kernels."""
from __future__ import annotations

import numpy as np
import pytest

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
}


def _loss(f):
    return lambda x: np.sum(f(x) ** 2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_issue13_op_on_cupy_matches_numpy(name, dtype):
    f, x = CASES[name]
    x = x.astype(dtype)
    v = RNG.uniform(-1, 1, x.shape).astype(dtype)
    for fn, args in ((dg.jit(f), (x,)), (dg.grad_and_hvp(_loss(f)), (x, v))):
        want = fn(*args)
        got = fn(*[cp.asarray(a) for a in args])
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            assert isinstance(g, cp.ndarray)
            scale = max(1.0, float(np.max(np.abs(w))))
            err = float(np.max(np.abs(cp.asnumpy(g).astype(np.float64) - np.asarray(w))))
            assert err <= TOL[dtype] * scale, f"{name}: error {err:.3g}"


def test_general_eig_is_refused_on_cupy_naming_the_op():
    """CuPy has no general eigensolver: eig/eigvals of a traced CuPy matrix are refused when
    traced (the NumPy backend computes them)."""
    a = cp.asarray(np.array([[1.0, 2.0], [0.0, 3.0]]))
    for fn in (lambda a: np.linalg.eigvals(a), lambda a: np.linalg.eig(a)[1]):
        with pytest.raises(dg.UnsupportedOpError, match="linalg.eig"):
            dg.grad(lambda a, fn=fn: np.sum(fn(a)))(a)
