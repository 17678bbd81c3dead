"""The sparse transforms on more kinds of programs (issue 39, item 4): several differentiated
arguments (a tuple ``argnums``, a pytree: the result in blocks, as ``dg.jacobian`` and
``dg.hessian`` give them), products with scipy.sparse constants, ``np.where`` (the union of
the branches), per-instance Hessians with ``batch_axes``, and composition with ``jit`` and
``vmap``. Each case: the detected pattern holds every nonzero of the dense derivative, at
random points, and the sparse values equal the dense derivative."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg

import dualgpu as dg
from dualgpu.base import tree as pytree

RNG = np.random.default_rng(39)
A = sp.random(6, 4, density=0.4, random_state=1, format="csr")     # a sparse constant
B = RNG.standard_normal((3, 6))                                      # a dense one


def blocks(result) -> list:
    """The leaves of a block result (one matrix: itself), dense."""
    return [np.asarray(b.toarray() if sp.issparse(b) else b)
            for b in pytree.flatten(result)[0]]


def check(f, args, argnums=0, hessian=False, **options):
    """Sparse against dense, block by block, at ``args`` and at two random points."""
    sparse = (dg.sparse_hessian if hessian else dg.sparse_jacobian)(f, argnums, **options)
    detect = (dg.hessian_sparsity if hessian else dg.jacobian_sparsity)(f, argnums)
    dense = (dg.hessian if hessian else dg.jacobian)(f, argnums=argnums)
    for trial in range(3):
        point = args if trial == 0 else pytree.tree_map(
            lambda a: a + RNG.uniform(-0.3, 0.3, np.shape(a)), args)
        got, want, pattern = (blocks(t(*point)) for t in (sparse, dense, detect))
        assert len(got) == len(want) == len(pattern)
        for g, w, p in zip(got, want, pattern):
            w = w.reshape(g.shape)
            assert not ((w != 0) & ~p.astype(bool)).any(), "the pattern misses an entry"
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    return sparse


# ------------------------------------------------------------------ several arguments
def coupled(x, y):
    return np.concatenate([x[1:] * x[:-1] * y[0], np.sin(y) * x[:3]])


def coupled_energy(x, y):
    return np.sum(x[1:] * x[:-1] * y[0]) + np.sum(np.sin(y) ** 2 * x[:3]) + np.sum(np.cos(x))


X, Y = RNG.uniform(0.5, 1.5, 7), RNG.uniform(0.5, 1.5, 3)


@pytest.mark.parametrize("mode", ["fwd", "rev", "auto", "bidirectional"])
def test_a_tuple_of_argnums_gives_one_jacobian_block_per_argument(mode):
    jac = check(coupled, (X, Y), (0, 1), mode=mode)
    jx, jy = jac(X, Y)
    assert (jx.shape, jy.shape) == ((9, 7), (9, 3))
    assert sp.issparse(jx) and jx.format == "csr"
    # one coloring of the stacked columns [x, y] (or of the rows) serves both blocks
    assert jac.sparsity(X, Y).shape == (9, 7 + 3)


@pytest.mark.parametrize("coloring", ["distance2", "star", "acyclic"])
def test_a_tuple_of_argnums_gives_the_hessian_in_blocks(coloring):
    hess = check(coupled_energy, (X, Y), (0, 1), hessian=True, coloring=coloring)
    (hxx, hxy), (hyx, hyy) = hess(X, Y)
    assert [h.shape for h in (hxx, hxy, hyx, hyy)] == [(7, 7), (7, 3), (3, 7), (3, 3)]
    np.testing.assert_array_equal(hxy.toarray(), hyx.toarray().T)


def test_a_pytree_argument_gives_blocks_in_its_structure():
    energy = lambda p: coupled_energy(p["a"], p["b"])
    p = {"a": X, "b": Y}
    hess = check(energy, (p,), hessian=True)
    h = hess(p)
    assert set(h) == {"a", "b"} and set(h["a"]) == {"a", "b"}
    assert h["b"]["a"].shape == (3, 7)
    jac = check(lambda p, s: coupled(p[0], p[1]) * s, ((X, Y), 2.0), 0)
    assert [b.shape for b in jac((X, Y), 2.0)] == [(9, 7), (9, 3)]


def test_a_single_argnum_in_a_tuple_is_a_tuple_of_one_block():
    (jx,) = check(coupled, (X, Y), (0,))(X, Y)
    assert jx.shape == (9, 7)


# ------------------------------------------------------------------ sparse constants
@pytest.mark.parametrize("f", [
    lambda x: A.T @ np.sin(x[:6]),                                   # sparse @ dense
    lambda x: (np.sin(x[:12]).reshape(2, 6) @ A).ravel(),            # dense @ sparse
    lambda x: B @ (A @ np.exp(x[:4])),                               # dense @ sparse @ x
    lambda x: A.dot(x[:4] ** 2) * x[:6],
], ids=["sparse@x", "X@sparse", "dense@sparse@x", "sparse.dot"])
def test_products_with_a_scipy_sparse_constant(f):
    check(f, (RNG.uniform(0.5, 1.5, 12),))


def test_a_hessian_through_a_sparse_constant():
    check(lambda x: np.sum((A.T @ x[:6]) ** 2 * x[6:10]), (RNG.uniform(0.5, 1.5, 10),),
          hessian=True)


def test_spsolve_of_a_traced_value_is_traced():
    square = (A @ A.T + sp.identity(6)).tocsr()
    check(lambda x: scipy.sparse.linalg.spsolve(square, x ** 2) * x, (RNG.uniform(0.5, 1.5, 6),))
    check(lambda x: np.sum(np.sin(scipy.sparse.linalg.spsolve(square, x))),
          (RNG.uniform(0.5, 1.5, 6),), hessian=True)


# ------------------------------------------------------------------ branches
def test_where_takes_the_union_of_its_branches():
    f = lambda x: np.where(x[:-1] > 0, x[1:] ** 2, np.exp(x[:-1]))
    check(f, (RNG.uniform(-1, 1, 6),))
    # the pattern is global: both branches' entries, whichever the condition picks
    every = dg.jacobian_sparsity(f)(np.ones(6)).toarray()
    assert (every == dg.jacobian_sparsity(f)(-np.ones(6)).toarray()).all()
    assert every.sum(axis=1).tolist() == [2] * 5
    g = lambda x: np.sum(np.where(x > 0, x * np.roll(x, 1), np.sin(x)))
    check(g, (RNG.uniform(-1, 1, 6),), hessian=True)


# ------------------------------------------------------------------ instances
def per_instance(xs):
    return np.sum(xs[:, 1:] * xs[:, :-1] ** 2, axis=1) + np.sum(np.sin(xs), axis=1)


def test_batch_axes_gives_the_per_instance_hessians_block_diagonal():
    xs = RNG.standard_normal((4, 6))
    hess = dg.sparse_hessian(per_instance, batch_axes=0)
    h = hess(xs).toarray()
    for b in range(4):
        block = h[6 * b:6 * b + 6, 6 * b:6 * b + 6]
        np.testing.assert_allclose(block, dg.hessian(lambda r: per_instance(r[None])[0])(xs[b]),
                                   rtol=1e-12, atol=1e-12)
        h[6 * b:6 * b + 6, 6 * b:6 * b + 6] = 0
    assert not h.any()                                   # nothing between instances
    assert hess.coloring(xs).max() + 1 == 3              # one instance's colors, any count
    pattern = dg.hessian_sparsity(per_instance, batch_axes=0)(xs)
    assert pattern.nnz == 4 * (3 * 6 - 2)


def test_batch_axes_refuses_a_function_that_couples_instances():
    coupling = lambda xs: np.sum(xs[1:] * xs[:-1], axis=1)
    with pytest.raises(dg.SeparabilityError, match=r"sparse_hessian\(batch_axes=\(0,\)\)"):
        dg.sparse_hessian(coupling, batch_axes=0)(np.ones((3, 4)))
    with pytest.raises(dg.ArgumentTypeError, match="unexpected keyword argument 'batch_axes'"):
        dg.sparse_jacobian(per_instance, batch_axes=0)     # a Jacobian's pattern says it


# ------------------------------------------------------------------ composition
def chain(x):
    return np.sum(x[1:] * x[:-1] ** 2) + np.sum(np.cos(x))


def test_sparse_of_a_jitted_and_of_a_vmapped_function():
    x = RNG.uniform(0.5, 1.5, 6)
    check(dg.jit(chain), (x,), hessian=True)
    rows = RNG.uniform(0.5, 1.5, (3, 5))
    check(dg.vmap(lambda r: r[1:] * r[:-1]), (rows,))


def test_jit_vmap_and_grad_of_products_with_a_sparse_hessian():
    hess = dg.sparse_hessian(chain)
    xs, v = RNG.uniform(0.5, 1.5, (3, 6)), RNG.standard_normal(6)
    each = dg.vmap(lambda x: hess(x) @ v)(xs)
    np.testing.assert_allclose(each, [dg.hessian(chain)(x) @ v for x in xs], rtol=1e-12)
    np.testing.assert_allclose(dg.jit(lambda x: hess(x) @ v)(xs[0]), each[0], rtol=1e-12)
    # d/dx (v . H(x) v): the third derivative along v, against differences
    curvature = lambda x: v @ (hess(x) @ v)
    eps = 1e-6
    g = dg.grad(curvature)(xs[0])
    fd = [(curvature(xs[0] + eps * e) - curvature(xs[0] - eps * e)) / (2 * eps)
          for e in np.eye(6)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)
    blocks_hess = dg.sparse_hessian(coupled_energy, (0, 1))
    hxy_y = dg.jit(lambda x, y: blocks_hess(x, y)[0][1] @ y)(X, Y)
    np.testing.assert_allclose(hxy_y, dg.hessian(coupled_energy, argnums=(0, 1))(X, Y)[0][1] @ Y,
                               rtol=1e-12)


def test_a_given_pattern_of_several_arguments_is_checked_block_by_block():
    full = dg.jacobian_sparsity(coupled, (0, 1))(X, Y)
    stacked = sp.hstack(full).tocsr()                     # the pattern over [x, y]
    jac = dg.sparse_jacobian(coupled, (0, 1), pattern=stacked, check_pattern=True)
    for got, want in zip(jac(X, Y), dg.jacobian(coupled, argnums=(0, 1))(X, Y)):
        np.testing.assert_allclose(got.toarray(), want, rtol=1e-12)
    missing = stacked.tolil()
    missing[0, 7] = False                                 # d coupled[0] / d y[0]
    with pytest.raises(dg.InvalidArgumentError, match=r"misses entry \(0, 7\)"):
        dg.sparse_jacobian(coupled, (0, 1), pattern=missing.tocsr(), check_pattern=True)(X, Y)
    hess_pattern = sp.bmat(dg.hessian_sparsity(coupled_energy, (0, 1))(X, Y)).tocsr()
    hess = dg.sparse_hessian(coupled_energy, (0, 1), pattern=hess_pattern, check_pattern=True)
    assert hess(X, Y)[1][0].shape == (3, 7)


def test_vmap_of_a_sparse_hessian_says_to_return_its_values():
    hess = dg.sparse_hessian(chain)
    with pytest.raises(dg.ArgumentTypeError, match="vmap of .* returns a sparse matrix"):
        dg.vmap(hess)(np.ones((2, 6)))
    data = dg.vmap(lambda x: hess(x).data)(RNG.uniform(0.5, 1.5, (2, 6)))
    assert data.shape == (2, hess(np.ones(6)).nnz)
