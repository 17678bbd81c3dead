"""dg.laplacian and dg.hessian_diag (exact, forward propagation): every differentiable entry
of the registry table (tests/ops/test_registry.py SPECS) against the dense Hessian and against
central differences of the gradient, in float64; which ops use the nested-JVP fallback;
batch_axes per instance against a loop; pytrees and tuple argnums; compositions with grad
and jit; the cached-call invariant; errors."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_jacobians import numeric_jacobian
from test_registry import SPECS
from test_vmap import _SETTINGS

import dualgpu as dg
from dualgpu.frontend import numpy as dnp

DIFF_SPECS = sorted(n for n, s in SPECS.items() if s.kind == "diff")


def scalarized(f, ybar):
    return lambda *a: dnp.sum(dnp.multiply(f(*a), ybar))


def fd_hessian_diag(g, args, i, eps=1e-5):
    """Central differences of the gradient: the diagonal of d(grad)/dx."""
    x = np.asarray(args[i], dtype=np.float64)
    jac = numeric_jacobian(dg.grad(g, argnums=i), args, i, eps)
    return jac.reshape(x.size, x.size).diagonal().reshape(x.shape)


@pytest.mark.parametrize("name", DIFF_SPECS)
@settings(max_examples=3, **_SETTINGS)
@given(data=st.data())
def test_laplacian_and_diag_match_dense_hessian(name, data):
    s = SPECS[name]
    f, args = s.build(data, np.float64)
    out = np.asarray(f(*args))
    ybar = np.random.default_rng(3).standard_normal(out.shape)
    g = scalarized(f, ybar)
    for i, a in enumerate(args):
        if np.asarray(a).dtype.kind != "f" or np.size(a) == 0:
            continue
        H = np.asarray(dg.hessian(g, argnums=i)(*args)).reshape(np.size(a), np.size(a))
        want = np.diag(H).reshape(np.shape(a))
        lap = np.asarray(dg.laplacian(f, argnums=i)(*args))
        assert lap.shape == out.shape
        np.testing.assert_allclose(np.sum(lap * ybar), np.trace(H), rtol=1e-7, atol=1e-8)
        diag = np.asarray(dg.hessian_diag(f, argnums=i)(*args))
        assert diag.shape == out.shape + np.shape(a)
        got = np.tensordot(ybar, diag, axes=out.ndim)
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-8)
        tol = s.f64_tol.get("rtol", 1e-5)
        np.testing.assert_allclose(got, fd_hessian_diag(g, args, i), rtol=max(tol, 1e-4),
                                   atol=1e-4)


def test_tanh_mlp_against_dense():
    rng = np.random.default_rng(0)
    Ws = [rng.standard_normal((5, 7)) / 2, rng.standard_normal((7, 6)) / 2,
          rng.standard_normal((6, 1)) / 2]

    def u(x):
        h = x
        for W in Ws[:-1]:
            h = np.tanh(h @ W)
        return np.sum(h @ Ws[-1])

    x = rng.standard_normal(5)
    H = dg.hessian(u)(x)
    np.testing.assert_allclose(dg.laplacian(u)(x), np.trace(H), rtol=1e-10)
    np.testing.assert_allclose(dg.hessian_diag(u)(x), np.diag(H), rtol=1e-10)
    np.testing.assert_allclose(dg.hessian_trace(u)(x), np.trace(H), rtol=1e-10)


def _points_mlp(rng, d):
    W1, W2 = rng.standard_normal((d, 6)) / 2, rng.standard_normal((6, 1)) / 2

    def u(x):  # x: (points, d) -> (points,)
        return (np.tanh(x @ W1) @ W2)[:, 0] + np.sum(x ** 3, axis=1)

    def u_one(p):
        return np.sum(np.tanh(p @ W1) @ W2) + np.sum(p ** 3)

    return u, u_one


def test_batch_axes_per_point_against_loop():
    rng = np.random.default_rng(1)
    u, u_one = _points_mlp(rng, 3)
    X = rng.standard_normal((8, 3))
    lap = dg.laplacian(u, batch_axes=0)(X)
    diag = dg.hessian_diag(u, batch_axes=0)(X)
    assert lap.shape == (8,) and diag.shape == X.shape
    for p in range(8):
        H = dg.hessian(u_one)(X[p])
        np.testing.assert_allclose(lap[p], np.trace(H), rtol=1e-10)
        np.testing.assert_allclose(diag[p], np.diag(H), rtol=1e-10)
    # instances along the last axis, coordinates first
    lap_t = dg.laplacian(lambda xt: u(xt.T), batch_axes=1)(X.T)
    np.testing.assert_allclose(lap_t, lap, rtol=1e-12)
    np.testing.assert_allclose(dg.hessian_diag(lambda xt: u(xt.T), batch_axes=(1,))(X.T),
                               diag.T, rtol=1e-12)


def test_batch_axes_coupling_is_refused():
    with pytest.raises(dg.SeparabilityError):
        dg.laplacian(lambda x: np.sum(x, axis=0) * np.sum(x ** 2), batch_axes=1)(
            np.ones((3, 4)))


def test_non_scalar_output_is_per_element():
    x = np.array([0.5, -1.0, 2.0])
    f = lambda x: np.sin(x) * np.sum(x ** 2)
    lap = dg.laplacian(f)(x)
    for k in range(3):
        H = dg.hessian(lambda x, k=k: f(x)[k])(x)
        np.testing.assert_allclose(lap[k], np.trace(H), rtol=1e-10)
    diag = dg.hessian_diag(f)(x)
    assert diag.shape == (3, 3)
    np.testing.assert_allclose(diag[1], np.diag(dg.hessian(lambda x: f(x)[1])(x)), rtol=1e-10)


def test_pytrees_and_tuple_argnums():
    p = {"a": np.array([0.3, 0.7]), "b": np.array(1.5)}
    y = np.array([2.0, -1.0])
    f = lambda p, y: np.sum(np.sin(p["a"] * p["b"]) * y ** 2)
    flat = lambda a, b, y: f({"a": a, "b": b}, y)
    d = dg.hessian_diag(f)(p, y)
    np.testing.assert_allclose(d["a"], np.diag(dg.hessian(flat, 0)(p["a"], p["b"], y)))
    np.testing.assert_allclose(d["b"], dg.hessian(flat, 1)(p["a"], p["b"], y))
    da, dy = dg.hessian_diag(f, argnums=(0, 1))(p, y)
    np.testing.assert_allclose(dy, np.diag(dg.hessian(flat, 2)(p["a"], p["b"], y)))
    lap = dg.laplacian(f, argnums=(0, 1))(p, y)
    np.testing.assert_allclose(lap, np.sum(d["a"]) + d["b"] + np.sum(dy), rtol=1e-12)


def test_composes_with_grad_and_jit():
    """d/dw of the Laplacian (a PINN loss) against finite differences; jit of it."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((4, 2))

    def loss(w):
        u = lambda x: np.tanh(x @ w[:2] + w[2]) * np.sum(x ** 2, axis=1)
        return np.mean(dg.laplacian(u, batch_axes=0)(X) ** 2)

    w = np.array([0.4, -0.3, 0.2])
    g = dg.grad(loss)(w)
    eps = 1e-6
    fd = [(loss(w + eps * e) - loss(w - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(dg.jit(loss)(w), loss(w), rtol=1e-12)
    dg.testing.check_grads(loss, (w,), order=1)


def test_cached_call_equals_fresh_build():
    f = lambda x: np.sum(np.exp(np.sin(x)) * x)
    lap = dg.laplacian(f)
    x1, x2 = np.array([0.1, 0.2]), np.array([1.0, -0.5])
    first = lap(x1)
    second = lap(x2)          # cached program, new values
    dg.clear_cache()
    np.testing.assert_array_equal(second, dg.laplacian(f)(x2))
    np.testing.assert_array_equal(first, lap(x1))


def test_graph_prints_and_float32_stays_float32():
    g = dg.trace(dg.laplacian(lambda x: np.sum(np.tanh(x) ** 2)), np.ones(3, np.float32))
    assert "tanh" in str(g)
    assert all(o.dtype == np.float32 for o in g.outputs)
    out = dg.laplacian(lambda x: np.sum(np.tanh(x) ** 2))(np.ones(3, np.float32))
    assert out.dtype == np.float32


def test_linear_function_has_zero_laplacian():
    A = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(dg.laplacian(lambda x: A @ x)(np.ones(3)), np.zeros(2))
    np.testing.assert_array_equal(dg.hessian_diag(lambda x: np.sum(A @ x))(np.ones(3)),
                                  np.zeros(3))


def test_custom_op_uses_the_fallback():
    cube = dg.custom_op("lap_test_cube", lambda xp, x: x ** 3,
                        vjp=lambda g, p, ans: (3 * p[0] ** 2 * g,))
    f = lambda x: np.sum(cube(x) * x)
    x = np.array([0.5, 2.0])
    np.testing.assert_allclose(dg.hessian_diag(f)(x), 12 * x ** 2, rtol=1e-10)
    np.testing.assert_allclose(dg.laplacian(f)(x), np.sum(12 * x ** 2), rtol=1e-10)


def test_errors_name_the_argument():
    with pytest.raises(dg.DualgpuError, match="argnums"):
        dg.laplacian(lambda x: x, argnums="x")
    with pytest.raises(dg.DualgpuError, match="batch_axes"):
        dg.laplacian(lambda x: x, batch_axes="0")
    with pytest.raises(dg.DualgpuError):
        dg.laplacian(lambda x, n: x * n, argnums=1)(np.ones(2), np.arange(2))


# ------------------------------------------------------------------ products with an input
def fd_diag(f, args, i, h=1e-4):
    """Second central differences of ``f`` (NumPy only) along each coordinate of
    ``args[i]``: the Hessian diagonal, shaped ``out.shape + x.shape`` (for a per-instance
    ``f`` the caller picks each instance's own block)."""
    x = np.asarray(args[i], dtype=np.float64)
    f0 = np.asarray(f(*args))
    out = np.empty(f0.shape + x.shape)
    for k in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[k] = h
        plus = list(args)
        minus = list(args)
        plus[i], minus[i] = x + e, x - e
        out[(...,) + k] = (np.asarray(f(*plus)) - 2 * f0 + np.asarray(f(*minus))) / h ** 2
    return out


def _matmuls(fn, *args):
    return sum(e.prim.name == "matmul" for e in dg.trace(fn, *args).eqns)


_rng = np.random.default_rng(7)
_W1, _b1, _w2 = _rng.standard_normal((3, 5)) / 2, _rng.standard_normal(5) / 4, \
    _rng.standard_normal(5)


def _rows(X, W1, b1, w2):      # points along axis 0: (N, d) -> (N,)
    return np.tanh(X @ W1 + b1) @ w2


def _cols(Xt, W1, b1, w2):     # points along axis 1: (d, N) -> (N,)
    return w2 @ np.tanh(W1.T @ Xt + b1[:, None])


# (f, args, argnums, batch_axes, matmuls of the Laplacian program or None)
SEEDED = {
    "x@W per point": (_rows, (_rng.standard_normal((4, 3)), _W1, _b1, _w2), 0, 0, 2),
    "W@x per point": (_cols, (_rng.standard_normal((3, 4)), _W1, _b1, _w2), 0, 1, 2),
    "x@W closed over": (lambda x: np.sum(np.sin(x @ _W1)), (_rng.standard_normal(3),), 0,
                        None, 1),
    "W@x closed over": (lambda x: np.sum(np.tanh(_W1.T @ x) ** 2), (_rng.standard_normal(3),),
                        0, None, 1),
    "x@w vector": (lambda x: np.cos(x @ _W1[:, 0]) * np.sum(x ** 2),
                   (_rng.standard_normal(3),), 0, None, None),
    "two inputs, offsets": (lambda x, y: np.sum(np.tanh(x @ _W1)) * np.sum(np.sin(y @ _W1.T)),
                            (_rng.standard_normal(3), _rng.standard_normal(5)), (0, 1), None,
                            2),
    "x@x both active": (lambda x: np.tanh(x @ x), (_rng.standard_normal(3),), 0, None, None),
    "all points one Laplacian": (lambda X: np.sum(np.tanh(X @ _W1)),
                                 (_rng.standard_normal((2, 3)),), 0, None, None),
}


@pytest.mark.parametrize("case", sorted(SEEDED))
def test_products_with_an_input_against_second_differences(case):
    """A product with a differentiated input takes the other factor's rows as its Jacobian
    (no product with the identity seed); the results match NumPy second differences."""
    f, args, argnums, batch_axes, n_mm = SEEDED[case]
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    lap = np.asarray(dg.laplacian(f, argnums=argnums, batch_axes=batch_axes)(*args))
    diag = dg.hessian_diag(f, argnums=argnums, batch_axes=batch_axes)(*args)
    diag = diag if isinstance(argnums, tuple) else (diag,)
    want = 0.0
    for i, d in zip(nums, diag):
        ref = fd_diag(f, args, i)
        if batch_axes is not None:   # per instance: the instance's own coordinates
            n = np.shape(args[i])[batch_axes]
            ref = np.moveaxis(ref, batch_axes + 1, 1)
            ref = np.stack([ref[p, p] for p in range(n)], axis=batch_axes)
        np.testing.assert_allclose(d, ref, rtol=1e-5, atol=1e-6)
        out_nd = np.ndim(lap) if batch_axes is None else 0
        want = want + np.sum(ref, axis=tuple(range(out_nd, ref.ndim)) if batch_axes is None
                             else tuple(a for a in range(ref.ndim) if a != batch_axes))
    np.testing.assert_allclose(lap, want, rtol=1e-5, atol=1e-6)
    if n_mm is not None:
        assert _matmuls(dg.laplacian(f, argnums=argnums, batch_axes=batch_axes), *args) == n_mm


# ------------------------------------------------------------------ the benchmark's MLP, counted
@pytest.mark.parametrize("d", [10, 50])
def test_mlp_program_is_at_the_forward_laplacian_count(d):
    """The per-point Laplacian of the tanh MLP d-768-768-512-512-1 at 1024 points (the
    benchmark's network, counted on the CPU): the matmuls and their flops are exactly the
    forward Laplacian's (no product with the identity seed, no value of u), no (N*d, d)
    seed is materialised, and with each value freed after its last read the program holds
    two Jacobians of a 768-wide layer and a few (N, width) values at most."""
    from benchmarks import laplacian as bench

    args = bench.make_inputs(np, d, bench.HIDDEN, bench.POINTS)
    c = bench.program_costs(dg.trace(dg.laplacian(bench.u, batch_axes=0), *args))
    ideal = bench.ideal_costs(d)
    assert c["matmuls"] == ideal["matmuls"] == 11
    assert c["gflop"] == pytest.approx(ideal["gflop"], rel=1e-12)
    # tanh's derivative exact over the whole range and again when differentiated (the op
    # sech2, whose derivative is -2 tanh(x) sech2(x)), all elementwise, fused beside the
    # same products
    assert c["eqns"] == 61
    assert (bench.POINTS * d, d) not in c["large"]
    assert ideal["peak_MB"] <= c["peak_MB"] <= ideal["peak_MB"] + 4 * 3.0   # + (N, 768) values
    big = [s for s in c["large"] if np.prod(s) >= bench.POINTS * d * 512]
    assert len(big) == 6   # J of layer 1 (a kernel); J_z, J_h of layers 2, 3; J_z of layer 4


# ------------------------------------------------------------------ coordinates in chunks
@pytest.mark.parametrize("chunk_size", [1, 2, 3, 7])
def test_chunked_coordinates_equal_one_pass(chunk_size):
    """``chunk_size``: the coordinates propagated a chunk at a time and the Laplacians
    summed; exact against one pass (and the dense Hessian's trace) with two differentiated
    arguments whose coordinates a chunk splits, per instance with ``batch_axes``, and
    through ``hessian_trace(method="exact")``."""
    rng = np.random.default_rng(7)
    W = rng.standard_normal((5, 4))

    def f(x, y):
        return np.sum(np.tanh(x @ W) * y[:4]) + np.sum(y ** 3) * x[0] + np.sin(x[1] * y[4])

    x, y = rng.standard_normal(5), rng.standard_normal(6)
    one = dg.laplacian(f, argnums=(0, 1))(x, y)
    got = dg.laplacian(f, argnums=(0, 1), chunk_size=chunk_size)(x, y)
    H = np.asarray(dg.hessian(lambda z: f(z[:5], z[5:]))(np.concatenate([x, y])))
    np.testing.assert_allclose(got, one, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, np.trace(H), rtol=1e-10)
    tr = dg.hessian_trace(f, argnums=(0, 1), chunk_size=chunk_size)(x, y)
    np.testing.assert_allclose(tr, one, rtol=1e-12, atol=1e-12)

    def u(X):   # per point: the same MLP on every row
        return np.tanh(np.tanh(X @ W) @ np.ones((4, 3))) @ np.ones(3) + np.sum(X ** 3, axis=1)

    X = rng.standard_normal((6, 5))
    np.testing.assert_allclose(dg.laplacian(u, batch_axes=0, chunk_size=chunk_size)(X),
                               dg.laplacian(u, batch_axes=0)(X), rtol=1e-12, atol=1e-12)


def test_chunk_size_is_checked_and_keys_the_program():
    f = lambda x: np.sum(np.sin(x) ** 2)   # noqa: E731
    x = np.linspace(0.1, 1.0, 6)
    for bad in (0, -1, 2.5, True, "2"):
        with pytest.raises(dg.DualgpuError, match="chunk_size"):
            dg.laplacian(f, chunk_size=bad)
    whole, chunked = dg.laplacian(f), dg.laplacian(f, chunk_size=2)
    assert whole.spec != chunked.spec   # two programs, never one reused for the other
    assert len(chunked.graph(x).eqns) > len(whole.graph(x).eqns)
    np.testing.assert_allclose(chunked(x), whole(x), rtol=1e-12)


def test_chunks_hold_one_chunk_of_jacobians():
    """The benchmark's MLP at d = 50 in two chunks of 25 coordinates: the program holds
    about half the Jacobian bytes of one pass (the values computed once, merged by CSE)."""
    from benchmarks import laplacian as bench

    args = bench.make_inputs(np, 50, bench.HIDDEN, bench.POINTS)
    one = bench.program_costs(dg.trace(dg.laplacian(bench.u, batch_axes=0), *args))
    two = bench.program_costs(dg.trace(dg.laplacian(bench.u, batch_axes=0, chunk_size=25),
                                       *args))
    assert two["peak_MB"] < 0.6 * one["peak_MB"]
    assert two["gflop"] < 1.03 * one["gflop"]
    assert (bench.POINTS * 25, 768) in two["large"] and (bench.POINTS * 50, 768) not in \
        two["large"]


def test_exact_diagonal_refuses_chunk_size():
    with pytest.raises(dg.DualgpuError, match="chunk_size.*hutchinson"):
        dg.hessian_diag(lambda x: np.sum(x ** 3), chunk_size=2)


def _held(graph) -> int:
    from dualgpu.fusion import memory_profile, plan_graph

    return memory_profile(plan_graph(graph, recompute=dg.config["recompute"]))["peak"]


def test_memory_budget_picks_the_widest_chunk_that_fits():
    """``memory_budget``: the largest chunk whose counted program fits, exactly the program
    ``chunk_size`` of that width builds; one pass when all fits."""
    from benchmarks import laplacian as bench

    args = bench.make_inputs(np, 12, (64, 64, 32), 40)
    lap = lambda **kw: dg.laplacian(bench.u, batch_axes=0, **kw)   # noqa: E731
    held = {c: _held(dg.trace(lap(chunk_size=c), *args)) for c in range(1, 12)}
    held[12] = _held(dg.trace(lap(), *args))
    assert held[1] < held[6] < held[12]
    assert str(dg.trace(lap(memory_budget=held[12]), *args)) == str(dg.trace(lap(), *args))
    budget = (held[5] + held[6]) // 2 if held[5] < held[6] else held[5]
    widest = max(c for c in range(1, 13) if held[c] <= budget)
    even = -(-12 // -(-12 // widest))          # as many chunks, widths evened out
    got = dg.trace(lap(memory_budget=budget), *args)
    assert str(got) == str(dg.trace(lap(chunk_size=even), *args))
    assert _held(got) <= budget
    np.testing.assert_array_equal(lap(memory_budget=budget)(*args),
                                  lap(chunk_size=even)(*args))


def test_memory_budget_below_one_coordinate_warns_and_goes_one_at_a_time():
    from benchmarks import laplacian as bench

    args = bench.make_inputs(np, 5, (16, 16), 8)
    with pytest.warns(UserWarning, match="memory_budget=1000 bytes"):
        got = dg.trace(dg.laplacian(bench.u, batch_axes=0, memory_budget=1000), *args)
    assert str(got) == str(dg.trace(dg.laplacian(bench.u, batch_axes=0, chunk_size=1),
                                    *args))


def test_memory_budget_is_checked_keys_the_program_and_reaches_hessian_trace():
    f = lambda x: np.sum(np.sin(x) ** 2)   # noqa: E731
    x = np.linspace(0.1, 1.0, 6)
    for bad in (0, -1, 2.5, True, "2"):
        with pytest.raises(dg.DualgpuError, match="memory_budget"):
            dg.laplacian(f, memory_budget=bad)
    with pytest.raises(dg.DualgpuError, match="not both"):
        dg.laplacian(f, chunk_size=2, memory_budget=1 << 20)
    with pytest.raises(dg.DualgpuError, match="memory_budget.*hutchinson"):
        dg.hessian_diag(f, memory_budget=1 << 20)
    assert dg.laplacian(f).spec != dg.laplacian(f, memory_budget=1 << 20).spec
    tight = dg.hessian_trace(f, memory_budget=1)
    with pytest.warns(UserWarning, match="memory_budget"):
        np.testing.assert_allclose(tight(x), dg.hessian_trace(f)(x), rtol=1e-12)
    with pytest.warns(UserWarning, match="memory_budget"):
        assert str(tight.graph(x)) == str(dg.laplacian(f, chunk_size=1).graph(x))
