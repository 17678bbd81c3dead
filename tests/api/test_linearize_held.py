"""``dg.linearize``'s ``f_jvp`` is the derivative where ``linearize`` was called, as in JAX:
it runs the program of the jvp's tangents made at that call, on copies of the point and of
the arrays the function closed over, so whatever changes afterwards (an array in place, a
Python number the function reads, the cache) does not change it, called on its own, under
``dg.jit`` and ``dg.vmap``, passed to a jitted function or exported. The call-sequence
fuzzer found it (tests/runtime/test_call_sequences.py: ``test_known_f_jvp_*``). References
are closed forms at the values of the ``linearize`` call."""
import numpy as np
import pytest
import scipy.sparse as sp

import dualgpu as dg

X = np.array([0.3, -0.7, 1.1])
T = np.array([1.0, -2.0, 0.5])
TOL = {"rtol": 1e-12, "atol": 1e-14}  # 1 - tanh² of large values: relative rounding
W0 = np.array([[1.0, 0.5, 0.0], [0.0, 3.0, -1.0], [2.0, 0.0, 0.25]])


def tanh_jvp(W, x, t):
    """The jvp of ``x -> tanh(W @ x)``."""
    return (1 - np.tanh(W @ x) ** 2) * (W @ t)


def uses(f_jvp):
    """Every way of calling an ``f_jvp`` on one tangent ``T``."""
    return {
        "call": f_jvp(T),
        "jit": dg.jit(f_jvp)(T),
        "vmap": dg.vmap(f_jvp)(np.stack([T, 2 * T]))[0],
        "passed to jit": dg.jit(lambda fj, t: fj(t))(f_jvp, T),
        "returned from jit": dg.jit(lambda fj: fj)(f_jvp)(T),
    }


def test_a_closed_over_array_changed_in_place_after_linearize():
    W = W0.copy()
    y, f_jvp = dg.linearize(lambda x: np.tanh(W @ x), X)
    want = tanh_jvp(W0, X, T)
    np.testing.assert_allclose(f_jvp(T), want, **TOL)
    W[0, 0] = 5.0   # after linearize: f_jvp stays the derivative of then
    for how, got in uses(f_jvp).items():
        np.testing.assert_allclose(got, want, **TOL, err_msg=how)
    X_moved = X.copy()
    _, fresh = dg.linearize(lambda x: np.tanh(W @ x), X_moved)   # a new one: the new W
    np.testing.assert_allclose(fresh(T), tanh_jvp(W, X, T), **TOL)
    assert not np.allclose(fresh(T), want)


def test_the_point_and_the_arrays_are_copied_and_only_those_the_jvp_reads():
    W, b = W0.copy(), np.array([7.0, 8.0, 9.0])  # b: read by the value only
    x = X.copy()
    _, f_jvp = dg.linearize(lambda v: np.tanh(W @ v) + b, x)
    leaves = dg.tree_util.tree_leaves(f_jvp)
    assert len(leaves) == 2   # the point and W: b's copy is not made
    for leaf in leaves:
        assert not np.shares_memory(leaf, W) and not np.shares_memory(leaf, x)
    np.testing.assert_array_equal(leaves[0], X)
    np.testing.assert_array_equal(leaves[1], W0)
    x[:], W[...], b[:] = 2.0, -1.0, 0.0
    np.testing.assert_allclose(f_jvp(T), tanh_jvp(W0, X, T), **TOL)


def test_a_retrace_or_a_cleared_cache_does_not_change_f_jvp():
    """A Python number the function reads, reassigned: a new linearize traces again, the
    f_jvp made before keeps its program (and so do its jit and vmap)."""
    scale = {"s": 2.0}
    W = W0.copy()

    def h(v):
        return np.tanh(scale["s"] * (W @ v))

    _, f_jvp = dg.linearize(h, X)
    want = tanh_jvp(2.0 * W0, X, T)
    scale["s"] = -3.0
    W[...] = 0.5
    dg.clear_cache()
    for how, got in uses(f_jvp).items():
        np.testing.assert_allclose(got, want, **TOL, err_msg=how)
    dg.set_cache_size(0)   # nothing cached: every call builds again
    try:
        np.testing.assert_allclose(dg.jit(f_jvp)(T), want, **TOL)
        np.testing.assert_allclose(f_jvp(T), want, **TOL)
    finally:
        dg.set_cache_size(dg.runtime.executor.DEFAULTS["cache_size"])
    _, fresh = dg.linearize(h, X)
    np.testing.assert_allclose(fresh(T), tanh_jvp(-3.0 * W, X, T), **TOL)


def test_export_of_f_jvp_holds_the_values_of_the_linearize_call():
    W = W0.copy()
    _, f_jvp = dg.linearize(lambda x: np.tanh(W @ x), X)
    W[...] = 0.0
    namespace: dict = {}
    exec(dg.export(f_jvp, T, name="f_jvp"), namespace)  # noqa: S102 - our own module
    np.testing.assert_allclose(namespace["f_jvp"](T), tanh_jvp(W0, X, T), **TOL)


def test_index_arrays_and_masks_closed_over():
    idx, mask = np.array([0, 2, 2]), np.array([True, False, True])
    x = X.copy()

    def h(v):
        return np.sin(v[idx]) * v[idx] + np.where(mask, v ** 2, 0.0)

    _, f_jvp = dg.linearize(h, x)

    def want(i, m):
        d = np.cos(X[i]) * X[i] + np.sin(X[i])
        return d * T[i] + np.where(m, 2 * X * T, 0.0)

    expected = want(idx.copy(), mask.copy())
    idx[:], mask[:] = [1, 1, 0], [False, True, False]
    x[:] = 0.0
    for how, got in uses(f_jvp).items():
        np.testing.assert_allclose(got, expected, **TOL, err_msg=how)


def test_complex_point_and_closed_over_array():
    C = np.array([1.0 + 2.0j, -0.5j, 3.0])
    z = np.array([0.2 + 0.1j, -0.3j, 0.5])
    tz = np.array([1.0, 1j, -1.0 + 0.5j])
    _, f_jvp = dg.linearize(lambda v: np.exp(C * v), z)
    want = np.exp(C * z) * C * tz
    C[:] = 0.0
    z[:] = 0.0
    np.testing.assert_allclose(f_jvp(tz), want, **TOL)
    np.testing.assert_allclose(dg.jit(f_jvp)(tz), want, **TOL)


def test_has_aux_and_a_branch_on_the_values():
    W = W0.copy()

    def h(v):
        y = np.tanh(W @ v) if np.sum(v) > 0 else np.cos(W @ v)   # a branch on the values
        return y, {"n": np.sum(v)}

    y, f_jvp, aux = dg.linearize(h, X, has_aux=True)
    np.testing.assert_allclose(aux["n"], np.sum(X))
    want = tanh_jvp(W0, X, T)
    W[...] = 3.0
    np.testing.assert_allclose(f_jvp(T), want, **TOL)
    np.testing.assert_allclose(dg.jit(f_jvp)(T), want, **TOL)
    _, g_jvp, _ = dg.linearize(h, -X, has_aux=True)   # the other branch, at the new W
    np.testing.assert_allclose(g_jvp(T), -np.sin(W @ -X) * (W @ T), **TOL)


def test_random_draws_are_those_of_the_value():
    W = W0.copy()

    def h(v):
        return np.tanh(W @ v) * np.random.normal(size=3)

    np.random.seed(4)
    y, f_jvp = dg.linearize(h, X)
    np.random.seed(4)
    z = np.random.normal(size=3)
    np.testing.assert_allclose(y, np.tanh(W0 @ X) * z, **TOL)
    W[...] = 1.0
    np.random.seed(9)  # later draws are not f_jvp's
    for how, got in uses(f_jvp).items():
        np.testing.assert_allclose(got, tanh_jvp(W0, X, T) * z, **TOL, err_msg=how)


def test_a_sparse_matrix_closed_over():
    """A closed-over sparse matrix is read as a sparse transform's (not copied: change one
    in place with dg.clear_cache(), limitations.md); f_jvp runs on it."""
    S = sp.csr_matrix(W0)
    _, f_jvp = dg.linearize(lambda x: np.tanh(S @ x), X)
    np.testing.assert_allclose(f_jvp(T), tanh_jvp(W0, X, T), **TOL)
    np.testing.assert_allclose(dg.jit(f_jvp)(T), tanh_jvp(W0, X, T), **TOL)


def test_integer_primals_and_outputs_take_float0():
    n = np.array([2, 3])
    _, f_jvp = dg.linearize(lambda v, k: (v * k, k * 2), X[:2], n)
    tv, tk = f_jvp(np.ones(2), np.zeros(2, dg.float0))
    np.testing.assert_allclose(tv, [2.0, 3.0])
    assert tk.dtype == dg.float0 and tk.shape == (2,)
    n[:] = 0
    np.testing.assert_allclose(f_jvp(np.ones(2), np.zeros(2, dg.float0))[0], [2.0, 3.0])
    with pytest.raises(dg.ShapeMismatchError, match="one tangent per primal"):
        f_jvp(np.ones(2))


def test_linearize_inside_jit_reads_the_enclosing_values():
    """Inside a traced function, f_jvp is built into the enclosing program (its values are
    the enclosing program's), as a pullback is."""
    def outer(v, s):
        _, f_jvp = dg.linearize(lambda u: np.tanh(s * (W0 @ u)), v)
        return f_jvp(T)

    for s in (1.0, -2.0):
        np.testing.assert_allclose(dg.jit(outer)(X, s), tanh_jvp(s * W0, X, T),
                                   **TOL)


def test_a_sparse_point_changed_in_place():
    A = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))
    v = np.array([1.0, -1.0, 0.5])
    _, f_jvp = dg.linearize(lambda M: np.tanh(M @ v), A)
    T_A = A.copy()
    T_A.data[:] = [1.0, 0.0, 0.0]
    want = (1 - np.tanh(A @ v) ** 2) * (T_A @ v)
    A.data[:] = 0.0
    np.testing.assert_allclose(f_jvp(T_A), want, **TOL)


def test_f_jvp_goes_through_grad():
    """Differentiated in its tangent (Jᵀ·1) and in its leaves (the point's among them), as a
    pullback is; after the closed-over array changed."""
    W = W0.copy()
    _, f_jvp = dg.linearize(lambda x: np.tanh(W @ x), X)
    W[...] = 0.0
    s = 1 - np.tanh(W0 @ X) ** 2
    np.testing.assert_allclose(dg.grad(lambda t: np.sum(f_jvp(t)))(T), W0.T @ s, **TOL)
    g = dg.grad(lambda fj: np.sum(fj(T)))(f_jvp)
    point = dg.tree_util.tree_leaves(g)[0]   # d/dx Σ (1 - tanh²(W0 x)) (W0 T)
    want = W0.T @ (-2 * np.tanh(W0 @ X) * s * (W0 @ T))
    np.testing.assert_allclose(point, want, **TOL)
