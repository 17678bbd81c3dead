"""The public API contract (docs/api.md), on NumPy."""
import numpy as np
import pytest
from scipy.sparse.linalg import LinearOperator

import dualgpu as dg

rng = np.random.default_rng(0)


def f2(x, y):
    return np.sum(np.sin(x) * y ** 2)


def test_grad_argnums():
    x, y = rng.standard_normal(3), rng.standard_normal(3)
    np.testing.assert_allclose(dg.grad(f2)(x, y), np.cos(x) * y ** 2)
    gx, gy = dg.grad(f2, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gy, 2 * np.sin(x) * y)
    (gy2,) = dg.grad(f2, argnums=(1,))(x, y)
    np.testing.assert_allclose(gy2, gy)


def test_value_and_grad():
    x = rng.standard_normal(4)
    v, g = dg.value_and_grad(lambda x: np.sum(x ** 3))(x)
    assert np.isclose(v, np.sum(x ** 3))
    np.testing.assert_allclose(g, 3 * x ** 2)


def test_hvp_decorator_forms():
    @dg.hvp
    def h(x):
        return np.sum(x ** 4)

    @dg.hvp(argnums=1)
    def h1(a, x):
        return np.sum(a * x ** 4)

    x, v = rng.standard_normal(3), rng.standard_normal(3)
    np.testing.assert_allclose(h(x, v), 12 * x ** 2 * v)
    np.testing.assert_allclose(h1(2.0, x, v), 24 * x ** 2 * v)


def test_hvp_with_several_argnums():
    x, y = rng.standard_normal(3), rng.standard_normal(3)
    vx, vy = rng.standard_normal(3), rng.standard_normal(3)
    hx, hy = dg.hvp(f2, argnums=(0, 1))(x, y, (vx, vy))
    # H = [[-sin(x) y^2, 2 cos(x) y], [2 cos(x) y, 2 sin(x)]] (diagonal blocks)
    np.testing.assert_allclose(hx, -np.sin(x) * y ** 2 * vx + 2 * np.cos(x) * y * vy)
    np.testing.assert_allclose(hy, 2 * np.cos(x) * y * vx + 2 * np.sin(x) * vy)


def test_grad_and_hvp_one_program():
    f = lambda x: np.sum(np.exp(x))
    x, v = rng.standard_normal(5), rng.standard_normal(5)
    g, hv = dg.grad_and_hvp(f)(x, v)
    np.testing.assert_allclose(g, np.exp(x))
    np.testing.assert_allclose(hv, np.exp(x) * v)
    val, g2, hv2 = dg.grad_and_hvp(f, return_value=True)(x, v)
    assert np.isclose(val, np.sum(np.exp(x)))
    # one graph gives both: exp is computed once
    graph = dg.trace(dg.grad_and_hvp(f), x, v)
    assert graph.primitive_counts()["exp"] == 1


def test_jvp_and_vjp():
    x, t = rng.standard_normal(3), rng.standard_normal(3)
    out, out_t = dg.jvp(np.tanh, (x,), (t,))
    np.testing.assert_allclose(out, np.tanh(x))
    np.testing.assert_allclose(out_t, (1 - np.tanh(x) ** 2) * t)
    out, pullback = dg.vjp(lambda x, y: x * y, x, t)
    cx, cy = pullback(np.ones(3))
    np.testing.assert_allclose(cx, t)
    np.testing.assert_allclose(cy, x)


def test_jvp_of_tuple_output():
    x, t = rng.standard_normal(3), rng.standard_normal(3)
    (a, b), (ta, tb) = dg.jvp(lambda x: (np.sin(x), np.sum(x)), (x,), (t,))
    np.testing.assert_allclose(ta, np.cos(x) * t)
    assert np.isclose(tb, t.sum())


def test_hessian_and_hessp():
    f = lambda x: np.sum(x[0] * x ** 3)
    x = rng.standard_normal(3)
    H = dg.hessian(f)(x)
    eps = 1e-6
    g = dg.grad(f)
    fd = np.stack([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(H, fd, rtol=1e-6, atol=1e-8)
    p = rng.standard_normal(3)
    np.testing.assert_allclose(dg.hessp(f)(x, p), H @ p)


def test_hessian_operator():
    f = lambda x, s: s * np.sum(x ** 4)
    x = rng.standard_normal(4)
    H = dg.HessianOperator(f, x, 2.0)
    assert H.shape == (4, 4) and isinstance(H.op, LinearOperator)
    v = rng.standard_normal(4)
    np.testing.assert_allclose(H @ v, 24 * x ** 2 * v)
    np.testing.assert_allclose(H.op.matvec(v), 24 * x ** 2 * v)
    assert H.nprod == 2


def test_cache_no_retrace():
    calls = []

    def f(x):
        calls.append(1)
        return np.sum(x ** 2)

    g = dg.grad(f)
    g(np.ones(3))
    g(np.ones(3) * 2)
    assert len(calls) == 1
    g(np.ones(4))
    assert len(calls) == 2
    g(np.ones(4, dtype=np.float32))
    assert len(calls) == 3


def test_python_int_arguments_are_inputs_of_one_program():
    calls = []

    def f(x, power):
        calls.append(1)
        return np.sum(x ** power)

    g = dg.grad(f)
    np.testing.assert_allclose(g(np.ones(2) * 2, 3), 12 * np.ones(2))
    np.testing.assert_allclose(g(np.ones(2) * 2, 2), 4 * np.ones(2))
    g(np.ones(2), 3)
    assert calls == [1]  # a weakly typed int input (issue 37), not a cache key


def test_grad_wrt_python_float():
    assert np.isclose(dg.grad(lambda a: a ** 3)(2.0), 12.0)


def test_float32_stays_float32():
    x = rng.standard_normal(3).astype(np.float32)
    g, hv = dg.grad_and_hvp(lambda x: np.sum(np.exp(x) * 0.5))(x, x)
    assert g.dtype == np.float32 and hv.dtype == np.float32


def test_source_is_standalone_python():
    src = dg.source(dg.grad(lambda x: np.sum(np.sin(x))), np.ones(3))
    assert src.startswith("def ") and "xp.cos(x)" in src
    ns = {"xp": np}
    exec(src, ns)
    fn = [v for k, v in ns.items() if k.startswith("vjp")][0]
    np.testing.assert_allclose(fn(np.zeros(3))[1], np.ones(3))


def test_jit():
    f = dg.jit(lambda x: np.exp(-x ** 2).sum())
    assert np.isclose(f(np.zeros(3)), 3.0)


def test_cache_is_bounded():
    old = dg.cache_info()["maxsize"]
    try:
        dg.set_cache_size(4)
        g = dg.grad(lambda x: np.sum(x))
        for n in range(1, 12):
            g(np.ones(n))
        assert dg.cache_info()["size"] <= 4
    finally:
        dg.set_cache_size(old)


def test_cache_info_counts_hits_on_the_fast_path():
    """500 cached calls are 499 hits (the fast paths count too), with or without keywords."""
    def f(x, scale=1.0):
        return np.sum(np.sin(x) ** 2) * scale

    g = dg.grad(f)
    dg.clear_cache()
    for _ in range(500):
        g(np.ones(4))
    info = dg.cache_info()
    assert (info["hits"], info["misses"]) == (499, 1)
    for _ in range(100):
        g(np.ones(4), scale=2.0)  # keywords: the per-function fast path
    info = dg.cache_info()
    assert (info["hits"], info["misses"]) == (499 + 99, 2)


@pytest.mark.parametrize("bad", [np.ones(4), np.ones((3, 1))])
def test_direction_shape_checked(bad):
    with pytest.raises(dg.ShapeMismatchError, match="shape"):
        dg.hvp(lambda x: np.sum(x ** 2))(np.ones(3), bad)


def test_nonscalar_output_refused():
    with pytest.raises(dg.NonScalarOutputError, match="scalar"):
        dg.grad(lambda x: x ** 2)(np.ones(3))


def test_integer_input_refused():
    with pytest.raises(dg.IntegerInputError, match="int64"):
        dg.grad(lambda x: np.sum(x ** 2))(np.arange(3))


def test_control_flow_refused_with_location():
    def f(x):
        if np.sum(x) > 0:
            return np.sum(x)
        return -np.sum(x)

    with pytest.raises(dg.TracerControlFlowError, match=r"test_api.py:\d+.*where"):
        dg.jit(f)(np.ones(3))  # dg.grad takes the branch the values take


def test_escaped_tracer():
    leak = []

    def f(x):
        leak.append(x)
        return np.sum(x)

    dg.grad(f)(np.ones(2))
    with pytest.raises(dg.EscapedTracerError):
        dg.grad(lambda y: np.sum(y * leak[0]))(np.ones(2))


def test_unsupported_op_named():
    with pytest.raises(dg.UnsupportedOpError, match="packbits"):
        dg.grad(lambda x: np.sum(np.packbits(x > 0)))(np.ones(4))


def test_argnums_order_is_the_callers():
    """Results and directions follow the order of argnums, not the order of the arguments."""
    g = lambda x, y: np.sum(x ** 2 * 3) + np.sum(y ** 3) + np.sum(x) * np.sum(y)
    x, y = np.ones(2), 2 * np.ones(3)
    gy, gx = dg.grad(g, argnums=(1, 0))(x, y)
    np.testing.assert_allclose(gy, 3 * y ** 2 + 2)
    np.testing.assert_allclose(gx, 6 * x + 6)
    hy, hx = dg.hvp(g, argnums=(1, 0))(x, y, (np.ones(3), np.ones(2)))
    np.testing.assert_allclose(hy, 14 * np.ones(3))
    np.testing.assert_allclose(hx, 9 * np.ones(2))
    a, b = dg.grad(g, argnums=(0, 0))(x, y)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(dg.DualgpuError, match="twice"):
        dg.hvp(g, argnums=(0, 0))


def test_every_transform_declares_its_spec_in_one_frozen_object():
    """The cache key's part of a transform is its Spec: named options, hashable, frozen;
    two transforms that differ in an option have different specs."""
    import dataclasses

    from dualgpu.runtime.transformed import Spec

    f = lambda x: np.sum(np.sin(x))  # noqa: E731
    made = [dg.grad(f), dg.value_and_grad(f), dg.hvp(f), dg.grad_and_hvp(f), dg.jit(f),
            dg.hessian(f), dg.hessp(f), dg.jacfwd(f), dg.jacrev(f), dg.vmap(f),
            dg.laplacian(f), dg.hessian_diag(f), dg.hessian_trace(f), dg.biharmonic(f),
            dg.laplacian(f, sigma=np.ones((3, 2))), dg.laplacian(f, method="hutchinson")]
    for t in made:
        spec = t.spec
        assert isinstance(spec, Spec), t
        hash(spec)
        with pytest.raises(dataclasses.FrozenInstanceError):
            spec.kind = "other"
    assert dg.grad(f).spec != dg.grad(f, holomorphic=True).spec
    assert dict(dg.grad_and_hvp(f, return_value=True).spec.options)["return_value"] is True
    assert dg.vmap(f, in_axes=1).spec != dg.vmap(f).spec
    # the weighted Laplacian's program takes S as an input: keyed by its shape, not values
    assert dg.laplacian(f, sigma=np.ones((3, 2))).spec == dg.laplacian(
        f, sigma=np.zeros((3, 2))).spec != dg.laplacian(f, sigma=np.ones((3, 4))).spec
    assert dg.laplacian(f, method="hutchinson", seed=1).spec == dg.laplacian(
        f, method="hutchinson", seed=2).spec
