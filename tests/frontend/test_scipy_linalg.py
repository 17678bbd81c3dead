"""``scipy.linalg`` on traced values follows SciPy (not NumPy): each function under
``dg.jit`` against SciPy's own result, called by module path (``scipy.linalg.cholesky``) and by
imported name (``from scipy.linalg import cholesky``); ``dg.grad`` against central differences
of SciPy's own function; NumPy's functions of the same names keep NumPy's conventions; bad
arguments are one ``DualgpuError`` naming them. The derivatives of the ops these functions
bind (solve_triangular, lu_factor) are checked by tests/ops/test_registry.py."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from scipy.linalg import (
    cho_factor,
    cho_solve,
    cholesky,
    eigh,
    lu_factor,
    lu_solve,
    qr,
    solve_triangular,
)

import dualgpu as dg
from dualgpu import lax

RNG = np.random.default_rng(7)
N = 4
M = RNG.uniform(-1, 1, (N, N))
SPD = M @ M.T + N * np.eye(N)
# not symmetric: the functions that read one triangle must read SciPy's
LOPSIDED = SPD + np.triu(RNG.uniform(-1, 1, (N, N)), 1)
TRI = M + (N + 1) * np.eye(N)
B = RNG.uniform(-1, 1, (N, 2))
TALL = RNG.uniform(-1, 1, (6, 3)) + np.eye(6, 3) * 3
WIDE = RNG.uniform(-1, 1, (3, 5)) + np.eye(3, 5) * 3
SYM = (M + M.T) / 2 + np.diag([0.0, 3.0, 6.0, 9.0])
# real eigenvalues 1 or more apart, eigenvectors well conditioned
GENERAL = (lambda q: q * np.array([4.5, -2.0, 1.5, 3.0]) @ np.linalg.inv(q))(np.eye(N) + M / 4)
BATCH = np.stack([SPD, SPD + np.eye(N)])
# (l, u) = (1, 2): the diagonal (row u) dominant; the corners SciPy does not read are NaN
# (SciPy's check_finite=False)
BANDED = np.vstack([RNG.uniform(-1, 1, (2, N)), 6 + RNG.uniform(-1, 1, (1, N)),
                    RNG.uniform(-1, 1, (1, N))])
BANDED[0, :2] = BANDED[1, 0] = BANDED[3, -1] = np.nan

CASES = {
    # module path
    "cholesky": (lambda a: scipy.linalg.cholesky(a), (LOPSIDED,)),
    "cholesky lower": (lambda a: scipy.linalg.cholesky(a, lower=True), (SPD + np.tril(M, -1),)),
    "cholesky batched": (lambda a: scipy.linalg.cholesky(a, check_finite=False), (BATCH,)),
    "cho_factor": (lambda a: scipy.linalg.cho_factor(a)[0], (LOPSIDED,)),
    "cho_solve": (lambda a, b: scipy.linalg.cho_solve(scipy.linalg.cho_factor(a), b),
                  (SPD, B)),
    "solve_triangular trans=T unit": (
        lambda a, b: scipy.linalg.solve_triangular(a, b, trans="T", unit_diagonal=True),
        (TRI, B)),
    "lu_factor": (lambda a: scipy.linalg.lu_factor(a), (M,)),
    "lu": (lambda a: scipy.linalg.lu(a), (M,)),
    "lu p_indices": (lambda a: scipy.linalg.lu(a, p_indices=True), (M,)),
    "qr full": (lambda a: scipy.linalg.qr(a), (M,)),
    "qr r tall": (lambda a: scipy.linalg.qr(a, mode="r"), (TALL,)),
    "qr wide": (lambda a: scipy.linalg.qr(a), (WIDE,)),
    "eig": (lambda a: scipy.linalg.eig(a), (GENERAL,)),
    "eigvals homogeneous": (lambda a: scipy.linalg.eigvals(a, homogeneous_eigvals=True),
                            (GENERAL,)),
    "eigh upper": (lambda a: scipy.linalg.eigh(a, lower=False), (SYM + np.tril(M, -1),)),
    # the signs of SciPy's default driver (evr) jump under tiny perturbations: differences
    # of its eigenvectors are those of v * v
    "eigh upper sign-free": (lambda a: (lambda w, v: (w, v * v))(
        *scipy.linalg.eigh(a, lower=False)), (SYM + np.tril(M, -1),)),
    "eigh subset": (lambda a: scipy.linalg.eigh(a, subset_by_index=(0, 1))[0], (SYM,)),
    "svd": (lambda a: scipy.linalg.svd(a), (M,)),
    "solve pos upper": (lambda a, b: scipy.linalg.solve(a, b, assume_a="pos"), (LOPSIDED, B)),
    "solve transposed": (lambda a, b: scipy.linalg.solve(a, b[:, 0], transposed=True), (M, B)),
    "inv lower triangular": (lambda a: scipy.linalg.inv(a, assume_a="lower triangular"),
                             (TRI,)),
    "pinv rank": (lambda a: scipy.linalg.pinv(a, return_rank=True), (TALL,)),
    "lstsq": (lambda a, b: scipy.linalg.lstsq(a, b), (TALL, TALL[:, 0] + 1.0)),
    "sqrtm": (lambda a: scipy.linalg.sqrtm(a), (SPD,)),
    "sqrtm not symmetric": (lambda a: scipy.linalg.sqrtm(a), (TRI,)),
    "solve_sylvester": (lambda a, b, q: scipy.linalg.solve_sylvester(a, b, q),
                        (TRI, SPD[:2, :2], B)),
    "solve_banded": (lambda ab, b: scipy.linalg.solve_banded((1, 2), ab, b,
                                                             check_finite=False), (BANDED, B)),
    "solve_banded vector": (lambda ab, b: scipy.linalg.solve_banded(
        (1, 2), ab, b[:, 0], check_finite=False), (BANDED, B)),
    # imported names
    "imported cholesky": (lambda a: cholesky(a), (LOPSIDED,)),
    "imported cho_solve lower": (lambda a, b: cho_solve(cho_factor(a, lower=True), b),
                                 (SPD, B[:, 0])),
    "imported solve_triangular": (lambda a, b: solve_triangular(a, b, lower=True), (TRI, B)),
    "imported lu_solve": (lambda a, b: lu_solve(lu_factor(a), b), (M, B)),
    "imported lu_solve trans": (lambda a, b: lu_solve(lu_factor(a), b[:, 1], trans=1), (M, B)),
    "imported lu_solve batched": (lambda a, b: lu_solve(lu_factor(a), b), (BATCH, B)),
    "imported eigh": (lambda a: eigh(a), (SYM,)),
    "imported qr economic": (lambda a: qr(a, mode="economic"), (TALL,)),
}


def _leaves(x):
    return [y for part in (x if isinstance(x, (tuple, list)) else (x,))
            for y in (_leaves(part) if isinstance(part, (tuple, list)) else (part,))]


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_are_scipys(name):
    f, args = CASES[name]
    want, got = f(*args), dg.jit(f)(*args)
    assert len(_leaves(got)) == len(_leaves(want))
    for g, w in zip(_leaves(got), _leaves(want)):
        assert np.shape(g) == np.shape(w) and np.asarray(g).dtype == np.asarray(w).dtype, name
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-12, err_msg=name)


# the outputs with a derivative (integer pivots and ranks have none)
GRADIENT_CASES = ["cholesky", "cholesky lower", "cho_factor", "cho_solve",
                  "solve_triangular trans=T unit", "lu", "qr full", "qr r tall", "qr wide",
                  "eig", "eigh upper sign-free", "solve pos upper", "inv lower triangular",
                  "imported cholesky", "imported cho_solve lower", "imported lu_solve trans",
                  "imported qr economic", "sqrtm", "sqrtm not symmetric", "solve_sylvester"]


def _loss(f, weights):
    """sum(w * output) over every float output (the real part of a complex one)."""
    def loss(*args):
        outs = [o for o in _leaves(f(*args)) if np.asarray(o).dtype.kind in "fc"]
        return sum(np.sum(np.real(o) * w) for o, w in zip(outs, weights))

    return loss


@pytest.mark.filterwarnings("error")  # a complex eigenvalue's cotangent cast with a warning
@pytest.mark.parametrize("name", GRADIENT_CASES)
def test_gradients_match_differences_of_scipy(name):
    """dg.grad against central differences of SciPy's own function (the upper factor's
    derivative, the triangle each function reads, the wide QR's r2 = q.T a2...)."""
    f, args = CASES[name]
    weights = [RNG.uniform(-1, 1, np.shape(o)) for o in _leaves(f(*args))
               if np.asarray(o).dtype.kind in "fc"]
    loss = _loss(f, weights)
    grads = dg.grad(loss, argnums=tuple(range(len(args))))(*args)
    ts = [RNG.uniform(-1, 1, np.shape(a)) for a in args]
    eps = 1e-6
    plus = loss(*(a + eps * t for a, t in zip(args, ts)))
    minus = loss(*(a - eps * t for a, t in zip(args, ts)))
    want = (plus - minus) / (2 * eps)
    got = sum(np.sum(g * t) for g, t in zip(grads, ts))
    assert abs(got - want) <= 1e-6 * max(1.0, abs(want)), (name, got, want)


@pytest.mark.parametrize("upper_01", [lambda a: scipy.linalg.cholesky(a)[0, 1],
                                      lambda a: cholesky(a)[0, 1]], ids=["path", "name"])
def test_cholesky_default_is_the_upper_factor_by_path_and_by_name(upper_01):
    """The regression: scipy.linalg.cholesky(a) returned NumPy's lower factor under jit and
    grad (its [0, 1] entry 0); by imported name it raised."""
    s = np.sqrt(SPD[0, 0])
    assert dg.jit(upper_01)(SPD) == pytest.approx(SPD[0, 1] / s, rel=1e-12)
    want = np.zeros((N, N))
    want[0, :2] = -SPD[0, 1] / (2 * s ** 3), 1 / s  # of U[0, 1] = a[0, 1] / sqrt(a[0, 0])
    np.testing.assert_allclose(dg.grad(upper_01)(SPD), want, atol=1e-12)


def test_numpy_functions_keep_numpys_conventions():
    for f in (lambda a: np.linalg.cholesky(a), lambda a: np.linalg.qr(a[:, :3]),
              lambda a: np.linalg.eigh(a), lambda a: np.linalg.eig(a)[0]):
        want, got = f(SYM + 8 * np.eye(N)), dg.jit(f)(SYM + 8 * np.eye(N))
        for g, w in zip(_leaves(got), _leaves(want)):
            assert np.shape(g) == np.shape(w) and np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_vmap_of_the_new_ops():
    f = lambda a, b: scipy.linalg.lu_solve(scipy.linalg.lu_factor(a), b)  # noqa: E731
    got = dg.vmap(f, in_axes=(0, None))(BATCH, B)
    np.testing.assert_allclose(got, np.stack([f(a, B) for a in BATCH]), rtol=1e-12)
    g = lambda a, b: scipy.linalg.solve_triangular(a, b, lower=True)  # noqa: E731
    got = dg.vmap(g, in_axes=(None, 0))(TRI, np.stack([B, -B]))
    np.testing.assert_allclose(got, np.stack([g(TRI, B), g(TRI, -B)]), rtol=1e-12)
    h = lambda a, q: scipy.linalg.solve_sylvester(a, SPD[:2, :2], q)  # noqa: E731
    got = dg.vmap(h, in_axes=(0, None))(np.stack([TRI, TRI.T]), B)
    np.testing.assert_allclose(got, np.stack([h(TRI, B), h(TRI.T, B)]), rtol=1e-12)


def test_solve_banded_reads_the_band_only_and_differentiates_in_ab_and_b():
    """SciPy's layout: the corners of ab (NaN here) are not read, and get no derivative."""
    f = lambda ab, b: scipy.linalg.solve_banded((1, 2), ab, b, check_finite=False)  # noqa: E731
    g_ab, g_b = dg.grad(lambda ab, b: np.sum(f(ab, b) ** 2), argnums=(0, 1))(BANDED, B)
    assert np.all(g_ab[np.isnan(BANDED)] == 0) and np.all(np.isfinite(g_ab))
    clean = np.nan_to_num(BANDED)
    dg.testing.check_grads(f, (clean, B), order=1, argnums=(0, 1))


def test_sqrtm_of_a_matrix_with_a_negative_eigenvalue_is_refused():
    with pytest.raises(dg.DualgpuError, match="negative eigenvalue"):
        dg.jit(lambda a: scipy.linalg.sqrtm(a))(np.diag([-1.0, 4.0]))


@pytest.mark.parametrize("call, match", [
    (lambda a: scipy.linalg.qr(a, pivoting=True), "pivoting=True"),
    (lambda a: scipy.linalg.qr(a, mode="raw"), "mode='raw'"),
    (lambda a: scipy.linalg.qr(np.vstack([a, a])), "mode='economic'"),
    (lambda a: scipy.linalg.cholesky(a, lower="yes"), "lower must be a Python bool"),
    (lambda a: scipy.linalg.solve_triangular(a, a, trans=3), "trans must be"),
    (lambda a: scipy.linalg.solve_triangular(a, a[:3]), "does not fit"),
    (lambda a: scipy.linalg.cho_solve(a, a), "c_and_lower must be the pair"),
    (lambda a: scipy.linalg.eigh(a, a), "generalized"),
    (lambda a: scipy.linalg.eigh(a, subset_by_value=(0, 1)), "subset_by_value"),
    (lambda a: scipy.linalg.eig(a, left=True), "left=True"),
    (lambda a: scipy.linalg.lu_factor(a[:3]), "non-square"),
    (lambda a: scipy.linalg.solve(a, a, assume_a="sideways"), "not a recognized"),
    (lambda a: scipy.linalg.svd(a, lapack_driver="gesvd"), "gesvd"),
    (lambda a: scipy.linalg.pinv(a, atol=0.1), "atol"),
    (lambda a: scipy.linalg.sqrtm(a, disp=False), "disp=False"),
    (lambda a: scipy.linalg.solve_sylvester(a, a[:, :2], a), "b must be square"),
    (lambda a: scipy.linalg.solve_sylvester(a, a, a[:2]), "q must be of shape"),
    (lambda a: scipy.linalg.solve_banded(1, a, a), "l_and_u must be a pair"),
    (lambda a: scipy.linalg.solve_banded((1, 1), a, a), r"ab must be of shape \(l \+ u \+ 1"),
    (lambda a: scipy.linalg.solve_banded((1, 2), a, a[:2]), "b must be of shape"),
])
def test_bad_arguments_are_one_dualgpu_error(call, match):
    with pytest.raises(dg.DualgpuError, match=match):
        dg.jit(call)(SPD)


def test_put_along_axis_add_takes_a_negative_axis():
    """It summed nothing for axis=-2 (lu_factor's VJP un-permutes rows with it)."""
    z = np.arange(6.0).reshape(3, 2)
    perm = np.array([[2], [0], [1]])
    got = dg.jit(lambda z: lax.put_along_axis_add(z, perm, -2, (3, 2)))(z)
    np.testing.assert_array_equal(got, z[np.argsort(perm[:, 0])])


def test_expm_is_scipys_with_derivatives_and_its_squarings_decided_by_the_norm():
    """scipy.linalg.expm on traced values: SciPy's values from tiny to large norms (0 to 8
    squarings), batched; derivatives to order 2; a cached call whose norm needs another
    squaring count traces again (a recorded decision); under dg.jit a traced A is refused."""
    rng = np.random.default_rng(3)
    value = dg.value_and_grad(lambda a: np.sum(scipy.linalg.expm(a)))
    for scale in (1e-3, 1.0, 30.0):
        a = scale * rng.standard_normal((3, 3))
        np.testing.assert_allclose(value(a)[0], np.sum(scipy.linalg.expm(a)), rtol=1e-11)
    batch = rng.standard_normal((2, 3, 3))
    np.testing.assert_allclose(dg.jvp(scipy.linalg.expm, (batch,), (batch,))[0],
                               scipy.linalg.expm(batch), rtol=1e-12, atol=1e-14)
    dg.testing.check_grads(scipy.linalg.expm, (rng.standard_normal((3, 3)),), order=2)
    with pytest.raises(dg.TracerControlFlowError, match="expm: its number of squarings"):
        dg.jit(scipy.linalg.expm)(batch[0])


def test_expm_of_a_zero_nan_inf_or_empty_matrix_is_scipys():
    """A norm of 0, NaN or inf has no integer logarithm (raw OverflowError and ValueError
    deciding the squarings); an empty A has no norm (refused as if under jit); a NaN matrix
    of a stack gave the others no squarings (silently wrong)."""
    f = dg.value_and_grad(lambda a: np.sum(scipy.linalg.expm(a)))
    np.testing.assert_allclose(np.concatenate([np.ravel(x) for x in f(np.zeros((2, 2)))]),
                               np.ones(5) + [1, 0, 0, 0, 0], rtol=1e-15)
    for fill in (np.nan, np.inf):
        assert np.isnan(f(np.full((2, 2), fill))[0])
    for shape in ((0, 0), (0, 2, 2)):
        out = dg.jvp(scipy.linalg.expm, (np.zeros(shape),), (np.zeros(shape),))[0]
        assert out.shape == scipy.linalg.expm(np.zeros(shape)).shape
    # a NaN matrix beside a large one: its NaN maximum norm took no squarings for both
    stack = np.stack([np.full((2, 2), np.nan), [[30.0, -20.0], [10.0, 40.0]]])
    np.testing.assert_allclose(dg.jvp(scipy.linalg.expm, (stack,), (stack,))[0],
                               scipy.linalg.expm(stack), rtol=1e-12)
