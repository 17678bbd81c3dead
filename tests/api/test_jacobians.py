"""dg.jacfwd, dg.jacrev, dg.jacobian: against central differences over the registry table,
against dense references, JAX's output structure for pytrees and tuple argnums, the
Hessian as jacfwd(jacrev(f)), and compositions."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_registry import SPECS
from test_vmap import _SETTINGS

import dualgpu as dg


def numeric_jacobian(f, args, argnum, eps=1e-6):
    """Central differences: shape out.shape + args[argnum].shape."""
    x = np.asarray(args[argnum], dtype=np.float64)
    out = np.asarray(f(*args))
    jac = np.zeros(out.shape + x.shape)
    for idx in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += eps
        lo[idx] -= eps
        a_hi = args[:argnum] + (hi,) + args[argnum + 1:]
        a_lo = args[:argnum] + (lo,) + args[argnum + 1:]
        d = (np.asarray(f(*a_hi)) - np.asarray(f(*a_lo))) / (2 * eps)
        jac[(Ellipsis,) + idx] = d
    return jac


DIFF_SPECS = sorted(n for n, s in SPECS.items() if s.kind == "diff")


@pytest.mark.parametrize("name", DIFF_SPECS)
@settings(max_examples=3, **_SETTINGS)
@given(data=st.data())
def test_jacobians_match_central_differences(name, data):
    s = SPECS[name]
    f, args = s.build(data, np.float64)
    tol = dict(rtol=1e-5, atol=1e-6)
    if "rtol" in s.f64_tol:
        tol = dict(rtol=s.f64_tol["rtol"] * 10, atol=s.f64_tol["atol"] * 10)
    eps = s.f64_tol.get("eps", 1e-6)
    argnums = tuple(range(len(args)))
    fwd = dg.jacfwd(f, argnums=argnums)(*args)
    rev = dg.jacrev(f, argnums=argnums)(*args)
    for i in argnums:
        want = numeric_jacobian(f, args, i, eps)
        np.testing.assert_allclose(fwd[i], want, **tol)
        np.testing.assert_allclose(rev[i], want, **tol)
        np.testing.assert_allclose(fwd[i], rev[i], rtol=1e-9, atol=1e-11)


def test_dense_references():
    rng = np.random.default_rng(0)
    A, x = rng.standard_normal((4, 3)), rng.standard_normal(3)
    for jac in (dg.jacfwd, dg.jacrev, dg.jacobian):
        np.testing.assert_allclose(jac(lambda x: A @ x)(x), A, rtol=1e-14)
        np.testing.assert_allclose(jac(np.sin)(x), np.diag(np.cos(x)), rtol=1e-14)
        np.testing.assert_allclose(jac(lambda x: np.sum(x ** 2))(x), 2 * x, rtol=1e-14)
        X = rng.standard_normal((2, 3))
        J = jac(lambda X: X @ A.T)(X)  # (2, 4, 2, 3): d(XA^T)_ij / dX_kl = d_ik A_jl
        np.testing.assert_allclose(J, np.einsum("ik,jl->ijkl", np.eye(2), A), atol=1e-14)


def test_hessian_is_jacfwd_of_jacrev():
    f = lambda x: np.sum(np.tanh(x) ** 3) * np.sum(x)  # noqa: E731
    x = np.random.default_rng(1).standard_normal(5)
    H = dg.jacfwd(dg.jacrev(f))(x)
    np.testing.assert_allclose(H, dg.hessian(f)(x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(H, numeric_jacobian(dg.grad(f), (x,), 0), rtol=1e-6,
                               atol=1e-7)
    np.testing.assert_allclose(dg.jacrev(dg.jacfwd(f))(x), H, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dg.jacobian(dg.grad(f))(x), H, rtol=1e-10, atol=1e-12)


def test_pytree_structure_follows_jax():
    def f(p, x):
        return {"y": np.tanh(p["W"] @ x + p["b"]), "s": np.sum(x * p["b"][:2])}

    rng = np.random.default_rng(2)
    p = {"W": rng.standard_normal((3, 2)), "b": rng.standard_normal(3)}
    x = rng.standard_normal(2)
    for jac in (dg.jacfwd, dg.jacrev):
        J = jac(f)(p, x)  # output structure, each leaf the structure of p
        assert set(J) == {"s", "y"} and set(J["y"]) == {"W", "b"}
        assert J["y"]["W"].shape == (3, 3, 2) and J["s"]["b"].shape == (3,)
        Jt = jac(f, argnums=(0, 1))(p, x)  # each leaf a tuple over argnums
        assert isinstance(Jt["y"], tuple) and Jt["y"][1].shape == (3, 2)
        np.testing.assert_allclose(Jt["y"][0]["W"], J["y"]["W"], rtol=1e-14)
        # against finite differences, leaf by leaf
        np.testing.assert_allclose(
            Jt["y"][1], numeric_jacobian(lambda x: f(p, x)["y"], (x,), 0), rtol=1e-6)
        np.testing.assert_allclose(
            J["y"]["W"], numeric_jacobian(lambda W: f({"W": W, "b": p["b"]}, x)["y"],
                                          (p["W"],), 0), rtol=1e-6)
        np.testing.assert_allclose(J["s"]["b"], np.r_[x, 0.0], rtol=1e-14)


def test_compositions_and_caching():
    f = lambda x, y: np.sin(x) * y  # noqa: E731
    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((4, 3)), rng.standard_normal(3)
    per_row = dg.vmap(dg.jacrev(f), in_axes=(0, None))(X, y)
    np.testing.assert_allclose(per_row, np.stack([np.diag(np.cos(x) * y) for x in X]),
                               rtol=1e-14)
    np.testing.assert_allclose(dg.jit(dg.jacfwd(f, argnums=1))(X[0], y), np.diag(np.sin(X[0])))
    jf = dg.jacfwd(f)
    for x in X:  # cached calls equal fresh builds
        np.testing.assert_array_equal(jf(x, y), dg.jacfwd(lambda x, y: np.sin(x) * y)(x, y))
    g = dg.grad(lambda x: np.sum(dg.jacrev(lambda z: np.sin(z) * x)(x) ** 2))
    np.testing.assert_allclose(g(X[0]), numeric_jacobian(
        lambda x: np.sum(np.diag(np.cos(x) * x) ** 2), (X[0],), 0), rtol=1e-6)


def test_errors_and_edge_cases():
    with pytest.raises(dg.DualgpuError, match="argnums"):  # negative: counted from the end
        dg.jacrev(np.sin, argnums=-2)(np.ones(2))
    with pytest.raises(dg.DualgpuError, match="argnums"):
        dg.jacrev(np.sin, argnums=0.5)
    with pytest.raises(dg.IntegerInputError):
        dg.jacfwd(np.sin)(np.arange(3))
    with pytest.raises(dg.DualgpuError, match="cannot be differentiated"):
        dg.jacrev(lambda x: x > 0)(np.ones(2))
    assert dg.jacrev(np.sin)(np.ones(0)).shape == (0, 0)
    assert dg.jacfwd(np.sin)(np.ones((2, 0))).shape == (2, 0, 2, 0)
    np.testing.assert_allclose(dg.jacfwd(lambda x: x * 3.0)(2.0), 3.0)
