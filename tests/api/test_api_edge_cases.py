"""Regression tests for the silently wrong results of review: composed transforms, the cache
(aliasing, containers, exact static values, fresh lambdas, reassigned globals, freed
closures), pytrees, has_aux, keyword arguments and callables of every kind."""
import functools
import gc
import weakref

import numpy as np
import pytest

import dualgpu as dg

x = np.array([0.3, -1.2, 2.0])
v = np.array([1.0, -0.5, 0.25])


def f(x):
    return np.sum(np.sin(x) ** 3)


def grad_f(x):
    return 3 * np.sin(x) ** 2 * np.cos(x)


def hess_diag_f(x):
    s, c = np.sin(x), np.cos(x)
    return 6 * s * c ** 2 - 3 * s ** 3


# ------------------------------------------------------------------------------ composition
def test_jit_of_grad_is_the_gradient():
    np.testing.assert_allclose(dg.jit(dg.grad(f))(x), grad_f(x))


def test_grad_of_grad_and_third_order():
    t = np.array(0.7)
    g2 = dg.grad(dg.grad(lambda t: np.sin(t) ** 3))(t)
    np.testing.assert_allclose(g2, hess_diag_f(t))
    assert float(dg.grad(dg.grad(dg.grad(lambda t: t ** 4)))(np.array(2.0))) == 48.0


def test_grad_of_jit_and_hvp_of_jit():
    np.testing.assert_allclose(dg.grad(dg.jit(f))(x), grad_f(x))
    np.testing.assert_allclose(dg.hvp(dg.jit(f))(x, v), hess_diag_f(x) * v)


def test_vjp_and_jvp_of_grad():
    out, pullback = dg.vjp(dg.grad(f), x)
    np.testing.assert_allclose(out, grad_f(x))
    np.testing.assert_allclose(pullback(v)[0], hess_diag_f(x) * v)
    _, tangent = dg.jvp(dg.grad(f), (x,), (v,))
    np.testing.assert_allclose(tangent, hess_diag_f(x) * v)


def test_composition_does_not_poison_the_cache():
    vg = dg.value_and_grad(f)
    value, g = dg.jit(vg)(x)
    value2, g2 = dg.value_and_grad(f)(x)
    np.testing.assert_allclose(value, value2)
    np.testing.assert_allclose(g2, grad_f(x))
    assert not hasattr(dg.grad(vg), "_quick") or dg.grad(vg)._quick == {}


def test_transform_does_not_copy_the_wrapped_dict():
    def h(x):
        """doc of h"""
        return np.sum(x)

    h.custom_attribute = 1
    t = dg.grad(h)
    assert not hasattr(t, "custom_attribute")
    assert t.__wrapped__ is h and t.__doc__ == "doc of h"
    assert repr(t) == "<dualgpu.grad of h>"


def test_gradient_penalty_calls_grad_inside_a_traced_function():
    def penalised(p):
        return f(p) + np.sum(dg.grad(f)(p) ** 2)

    dg.testing.check_grads(penalised, (x,), order=2)


def test_inner_function_reads_a_traced_value_of_the_enclosing_function():
    def outer(p):
        return np.sum(dg.grad(lambda q: np.sum(np.sin(q * p)))(x) ** 2)

    dg.testing.check_grads(outer, (v,), order=2)


# ------------------------------------------------------------------------------ caching
def test_aliased_arguments_do_not_leak_into_the_next_call():
    h = dg.hvp(f)
    h(x, x)
    np.testing.assert_allclose(h(x, v), hess_diag_f(x) * v)
    g = dg.grad(lambda a, b: np.sum(a * b * b), argnums=1)
    a, b = np.ones(3), 2 * np.ones(3)
    np.testing.assert_allclose(g(a, a), 2 * a * a)
    np.testing.assert_allclose(g(a, b), 2 * a * b)


def test_arrays_inside_containers_are_inputs_not_constants():
    def loss(X, params):
        W, b = params
        return np.sum((X @ W + b) ** 2)

    X, W, b = np.ones((2, 3)), np.ones((3, 2)), np.zeros(2)
    g = dg.grad(loss, argnums=1)
    g(X, [W, b])
    gW, gb = g(X, [2 * W, b + 1])
    np.testing.assert_allclose(gb, 2 * (X @ (2 * W) + b + 1).sum(axis=0))
    assert isinstance(g(X, (W, b)), tuple) and isinstance(g(X, [W, b]), list)


def test_static_values_are_keyed_exactly():
    j = dg.jit(lambda x, c: x * c)
    assert not np.signbit(j(np.ones(1), 0.0)).any()
    assert np.signbit(j(np.ones(1), -0.0)).all()
    assert np.isnan(j(np.ones(1), float("nan"))).all()
    k = dg.jit(lambda x, c: x * c if isinstance(c, bool) else x + c)
    np.testing.assert_array_equal(k(np.ones(1), True), [1.0])
    np.testing.assert_array_equal(k(np.ones(1), 1), [2.0])


def test_vjp_of_fresh_lambdas():
    got = []
    for c in range(30):
        _, pullback = dg.vjp(lambda x, c=c: np.sum(x * c), x)
        got.append(float(pullback(1.0)[0][0]))
    assert got == [float(c) for c in range(30)]


def test_reassigned_global_and_closure_values_rebuild():
    scale = np.array(2.0)

    def scaled(x):
        return np.sum(scale * x ** 2)

    g = dg.grad(scaled)
    np.testing.assert_allclose(g(x), 4 * x)
    scale = np.array(10.0)  # noqa: F841  (read by the closure)
    np.testing.assert_allclose(g(x), 20 * x)


_vjp_scale = 2.0


def _vjp_scaled(x):
    return np.sum(_vjp_scale * x ** 2)


def test_vjp_rebuilds_when_a_read_global_is_reassigned():
    global _vjp_scale
    np.testing.assert_allclose(dg.vjp(_vjp_scaled, x)[1](1.0)[0], 4 * x)
    _vjp_scale = 3.0
    try:  # vjp's programs are guarded like every other transformation's
        np.testing.assert_allclose(dg.vjp(_vjp_scaled, x)[1](1.0)[0], 6 * x)
    finally:
        _vjp_scale = 2.0


def _grad_of_a_closure() -> weakref.ref:
    """A weak reference to the array that a closure differentiated once captured: the closure
    and its array are locals of this frame only, which ends here."""
    big = np.ones(1000)
    fn = (lambda arr: (lambda x: np.sum(x * arr[:3])))(big)
    dg.grad(fn)(x)
    return weakref.ref(big)


def test_dropped_closures_are_freed():
    # Robust to a coverage tool that reads the running frames' f_locals (slipcover's
    # de-instrumentation does, on Python 3.11): each read leaves in a frame a snapshot of its
    # locals, so (1) the closures are locals of a helper's frame, not of this test's, which
    # would keep the snapshot's closure alive; (2) a closure caught in such a snapshot's cycle
    # dies in a collection, not by its reference count: the cache entries it keys are dropped
    # by its weakref callback during that collection, and their generated code (a function and
    # its globals, a cycle) needs the next one. A closure that dualgpu keeps stays alive
    # through any number of collections.
    dg.clear_cache()
    refs = [_grad_of_a_closure() for _ in range(20)]
    for _ in range(4):
        if not gc.collect():
            break
    assert sum(r() is not None for r in refs) == 0
    assert dg.cache_info()["size"] == 0


# ------------------------------------------------------------------------------ pytrees
def test_dict_params_and_has_aux():
    params = {"W": np.ones((3, 2)), "b": np.zeros(2)}
    X = np.arange(6.0).reshape(2, 3)

    def loss(p, X):
        pred = X @ p["W"] + p["b"]
        return np.sum(pred ** 2), pred

    g, pred = dg.grad(loss, has_aux=True)(params, X)
    assert set(g) == {"W", "b"}
    np.testing.assert_allclose(g["b"], 2 * pred.sum(axis=0))
    np.testing.assert_allclose(g["W"], 2 * X.T @ pred)
    (value, pred2), g2 = dg.value_and_grad(loss, has_aux=True)(params, X)
    np.testing.assert_allclose(value, np.sum(pred2 ** 2))
    direction = {"W": np.ones((3, 2)), "b": np.ones(2)}
    hv, aux = dg.hvp(loss, has_aux=True)(params, X, direction)
    ref_W = 2 * X.T @ (X @ direction["W"] + direction["b"])
    np.testing.assert_allclose(hv["W"], ref_W)
    np.testing.assert_allclose(aux, pred)


def test_keyword_arguments_pass_through():
    def loss(x, *, scale, shift=0.0):
        return np.sum(scale * (x - shift) ** 2)

    g = dg.grad(loss)
    np.testing.assert_allclose(g(x, scale=np.array(3.0)), 6 * x)
    np.testing.assert_allclose(g(x, scale=np.array(3.0), shift=1.0), 6 * (x - 1))


def test_partial_bound_method_and_callable_object():
    class Model:
        def __init__(self, w):
            self.w = w

        def loss(self, x):
            return np.sum(self.w * np.sin(x))

        def __call__(self, x):
            return np.sum(self.w * np.cos(x))

    m = Model(np.array(2.0))
    np.testing.assert_allclose(dg.grad(m.loss)(x), 2 * np.cos(x))
    np.testing.assert_allclose(dg.grad(m)(x), -2 * np.sin(x))
    p = functools.partial(lambda x, w: np.sum(w * x ** 2), w=np.array(3.0))
    np.testing.assert_allclose(dg.grad(p)(x), 6 * x)
    assert "Model" in repr(dg.hvp(m))


def test_tree_ravel_roundtrip():
    tree = {"a": (np.ones(2), np.zeros((2, 2))), "b": [np.arange(3.0)]}
    flat, unravel = dg.tree.ravel(tree)
    assert flat.shape == (9,)
    back = unravel(flat)
    assert dg.tree.structure(back) == dg.tree.structure(tree)
    np.testing.assert_array_equal(back["b"][0], tree["b"][0])


def test_complex_and_integer_outputs_are_refused():
    with pytest.raises(dg.NonScalarOutputError, match="complex"):
        dg.grad(lambda x: np.sum(x) * 1j)(x)


def test_direction_structure_is_checked():
    with pytest.raises(dg.ShapeMismatchError, match="structure"):
        dg.hvp(lambda p: np.sum(p["a"] ** 3))({"a": x}, {"b": x})


def test_changing_static_values_warn_once():
    g = dg.grad(lambda x, n: np.sum(x[:n]))  # n a shape: static, keyed by its value
    with pytest.warns(UserWarning, match="traced 8 times.*argument 1 = 8"):
        for i in range(9):
            g(np.ones(10), i)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in range(1, 10):  # new shapes are not a retrace storm
            dg.grad(lambda x: np.sum(x ** 2))(np.ones(n))


def test_debug_log_names_the_transform(caplog):
    import logging

    with caplog.at_level(logging.DEBUG, logger="dualgpu"):
        dg.hvp(lambda x: np.sum(x ** 4))(np.ones(2), np.ones(2))
    assert "hvp_<lambda>" in caplog.text


# ------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("call, match", [
    pytest.param(lambda: dg.jit(lambda x: x * x)(np.matrix([[1.0, 2.0], [3.0, 4.0]])), "matrix",
                 marks=pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")),
    (lambda: dg.grad(lambda x: np.sum(x))(np.ma.masked_array([1.0, 2.0])), "MaskedArray"),
    (lambda: dg.grad(lambda x: np.sum(x))(x, x), "cannot take these arguments"),
    (lambda: dg.grad(lambda x: np.sum(x))(x, y=3), "cannot take these arguments"),
    (lambda: dg.jit(lambda x: x)(x, z=2), "cannot take these arguments"),
    (lambda: dg.trace(lambda x: x), "cannot take these arguments"),
    (lambda: dg.hvp(lambda x: np.sum(x ** 3))(x, v * 1j), "complex"),
    (lambda: dg.vjp(lambda x: x * 2, x)[1](v * 1j), "complex"),
    (lambda: dg.set_cache_size("a"), "int"),
    (lambda: dg.set_cache_size(2.5), "int"),
    (lambda: dg.grad(lambda p: 1.0)(None), "nothing to differentiate"),
    (lambda: dg.trace(3, x), "expects a function"),
    (lambda: dg.grad_and_hvp(lambda x: np.sum(x), return_value="x"), "True or False"),
])
def test_bad_input_is_one_clear_error(call, match):
    with pytest.raises(dg.DualgpuError, match=match):
        call()


def test_config_refuses_unknown_switches_and_bad_values():
    with pytest.raises(dg.DualgpuError, match="no switch"):
        dg.config["fusee"] = True
    with pytest.raises(dg.DualgpuError, match="must be"):
        dg.config["cache_size"] = "a"


def test_hessian_keeps_a_float32_scalar():
    H = dg.hessian(lambda t: t ** 3)(np.float32(2.0))
    assert H.dtype == np.float32 and float(H) == 12.0


def test_reregistering_a_custom_op_rebuilds_programs():
    name = "trust_api_square"
    op = dg.custom_op(name, lambda xp, x: x * x, vjp=lambda g, primals, ans: (2 * primals[0] * g,))
    g = dg.grad(lambda x: np.sum(op(x)))
    np.testing.assert_allclose(g(x), 2 * x)
    op = dg.custom_op(name, lambda xp, x: x * x * x,
                      vjp=lambda g, primals, ans: (3 * primals[0] ** 2 * g,))
    np.testing.assert_allclose(g(x), 3 * x ** 2)


def test_quick_key_tells_numpy_and_cupy_arrays_apart():
    """The per-function fast path once keyed arrays by shape and dtype alone, so a CuPy call
    after a NumPy call of the same shape ran the NumPy program (found on the GPU)."""
    from dualgpu.runtime.transformed import quick_key

    FakeCupyArray = type("ndarray", (), {"__module__": "cupy._core.core",
                                         "shape": (3,), "dtype": np.dtype(np.float64)})
    x = np.zeros(3)
    assert quick_key((x,)) != quick_key((FakeCupyArray(),))
    assert quick_key((x, 1.0)) == quick_key((np.ones(3), 1.0))
    assert quick_key((x, True)) != quick_key((x, 1))
    # Python ints and floats are weakly typed inputs: keyed by type, as one program
    assert quick_key((x, 0.0)) == quick_key((x, -0.0)) != quick_key((x, 0))
