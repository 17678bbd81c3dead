"""JAX's custom_jvp and custom_vjp decorators (issue 25 group 7), built on dg.custom_op: the
behaviour JAX documents (the rule is used in place of the traced function, nondiff_argnums,
None cotangents), composed with grad, jvp, hvp, jit, vmap and hessian. References are
closed forms and central differences (dg.testing)."""
from functools import partial

import numpy as np
import pytest

import dualgpu as dg

x = np.array([0.3, -1.2, 2.0])
y = np.array([2.0, -1.0, 0.5])


@dg.custom_jvp
def sin_times(a, b):
    return np.sin(a) * b


@sin_times.defjvp
def sin_times_jvp(primals, tangents):
    (a, b), (a_dot, b_dot) = primals, tangents
    return sin_times(a, b), np.cos(a) * a_dot * b + np.sin(a) * b_dot


def test_custom_jvp_value_and_derivatives_to_second_order():
    np.testing.assert_allclose(sin_times(x, y), np.sin(x) * y, rtol=1e-15)
    ga, gb = dg.grad(lambda a, b: np.sum(sin_times(a, b)), (0, 1))(x, y)
    np.testing.assert_allclose(ga, np.cos(x) * y, rtol=1e-14)
    np.testing.assert_allclose(gb, np.sin(x), rtol=1e-14)
    hv = dg.hvp(lambda a: np.sum(sin_times(a, y)))(x, np.ones(3))
    np.testing.assert_allclose(hv, -np.sin(x) * y, rtol=1e-14)
    dg.testing.check_grads(lambda a, b: sin_times(a, b) ** 2, (x, y), order=2)


@dg.custom_jvp
def log1pexp(v):
    return np.log1p(np.exp(v))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    (v,), (v_dot,) = primals, tangents
    return log1pexp(v), v_dot * (1.0 - 1.0 / (1.0 + np.exp(v)))


def test_custom_jvp_rule_replaces_the_traced_derivative():
    # JAX's example: the traced derivative exp(v) / (1 + exp(v)) is nan at 800 (inf / inf)
    v = np.array([0.0, 800.0])
    with np.errstate(over="ignore"):
        g = dg.grad(lambda v: np.sum(log1pexp(v)))(v)
        _, t = dg.jvp(log1pexp, (v,), (np.ones(2),))
    np.testing.assert_allclose(g, [0.5, 1.0], rtol=1e-15)
    np.testing.assert_allclose(t, [0.5, 1.0], rtol=1e-15)

    @dg.custom_jvp
    def doubled_slope(v):
        return np.sin(v)

    doubled_slope.defjvp(lambda p, t: (doubled_slope(p[0]), 2.0 * t[0]))
    np.testing.assert_array_equal(dg.grad(lambda v: np.sum(doubled_slope(v)))(x), 2.0)


def test_custom_jvp_nondiff_argnums_come_first_in_the_rule():
    @partial(dg.custom_jvp, nondiff_argnums=(0,))
    def power(n, v):
        return v ** n

    @power.defjvp
    def power_jvp(n, primals, tangents):
        (v,), (v_dot,) = primals, tangents
        return power(n, v), n * v ** (n - 1) * v_dot

    for n in (2, 3):
        np.testing.assert_allclose(dg.grad(lambda v, n=n: np.sum(power(n, v)))(x),
                                   n * x ** (n - 1), rtol=1e-14)
    dg.testing.check_grads(lambda v: power(3, v), (x,), order=2)


# ------------------------------------------------------------------------------ custom_vjp
@dg.custom_vjp
def scaled_tanh(v, p):
    return np.tanh(v) * p["a"]


def scaled_tanh_fwd(v, p):
    t = np.tanh(v)
    return t * p["a"], (t, p["a"])


def scaled_tanh_bwd(res, g):
    t, a = res
    return (1.0 - t ** 2) * a * g, {"a": t * g}


scaled_tanh.defvjp(scaled_tanh_fwd, scaled_tanh_bwd)
params = {"a": np.array([1.5, 2.0, -0.5])}


def test_custom_vjp_pytree_arguments_and_second_order():
    np.testing.assert_allclose(scaled_tanh(x, params), np.tanh(x) * params["a"], rtol=1e-15)
    gv, gp = dg.grad(lambda v, p: np.sum(scaled_tanh(v, p)), (0, 1))(x, params)
    np.testing.assert_allclose(gv, (1 - np.tanh(x) ** 2) * params["a"], rtol=1e-14)
    np.testing.assert_allclose(gp["a"], np.tanh(x), rtol=1e-14)
    # forward mode and hvp differentiate through fwd and bwd (JAX refuses forward mode)
    dg.testing.check_grads(lambda v, p: scaled_tanh(v, p) ** 2, (x, params), order=2)


def test_custom_vjp_bwd_replaces_the_gradient_and_none_is_zero():
    @partial(dg.custom_vjp, nondiff_argnums=(0, 1))
    def clip_gradient(lo, hi, v):
        return v

    clip_gradient.defvjp(lambda lo, hi, v: (v, None),
                         lambda lo, hi, res, g: (np.clip(g, lo, hi),))
    g = dg.grad(lambda v: np.sum(3.0 * clip_gradient(-1.0, 1.0, v)))(x)
    np.testing.assert_array_equal(g, [1.0, 1.0, 1.0])

    @dg.custom_vjp
    def first_only(a, b):
        return a * b

    first_only.defvjp(lambda a, b: (a * b, b), lambda b, g: (g * b, None))
    ga, gb = dg.grad(lambda a, b: np.sum(first_only(a, b)), (0, 1))(x, y)
    np.testing.assert_allclose(ga, y, rtol=1e-15)
    np.testing.assert_array_equal(gb, np.zeros(3))


def test_custom_rules_compose_with_jit_vmap_and_hessian():
    f = dg.jit(lambda v: sin_times(v, y) + scaled_tanh(v, params))
    np.testing.assert_allclose(f(x), np.sin(x) * y + np.tanh(x) * params["a"], rtol=1e-15)
    rows = dg.vmap(lambda v: sin_times(v, y))(np.stack([x, 2 * x]))
    np.testing.assert_allclose(rows, np.sin(np.stack([x, 2 * x])) * y, rtol=1e-15)
    H = dg.hessian(lambda v: np.sum(sin_times(v, y)))(x)
    np.testing.assert_allclose(H, np.diag(-np.sin(x) * y), rtol=1e-14, atol=1e-15)


# ------------------------------------------------------------------------------ mistakes
def test_custom_functions_without_rules_or_with_bad_rules_say_what_to_do():
    @dg.custom_jvp
    def no_rule(v):
        return v

    with pytest.raises(dg.DualgpuError, match=r"no JVP rule yet.*@no_rule\.defjvp"):
        no_rule(x)

    @dg.custom_vjp
    def bad_bwd(a, b):
        return a * b

    bad_bwd.defvjp(lambda a, b: (a * b, (a, b)), lambda res, g: (g,))
    with pytest.raises(dg.DualgpuError, match="tuple of 2 cotangent"):
        dg.grad(lambda a: np.sum(bad_bwd(a, y)))(x)

    @partial(dg.custom_vjp, nondiff_argnums=(1,))
    def static_array(a, b):
        return a * b

    static_array.defvjp(lambda a, b: (a * b, None), lambda b, res, g: (g * b,))
    with pytest.raises(dg.DualgpuError, match="argument 1 is in nondiff_argnums but is an "
                                              "array"):
        static_array(x, y)

    @dg.custom_jvp
    def pair(v):
        return v, "not an array"

    pair.defjvp(lambda p, t: (pair(*p), t))
    with pytest.raises(dg.DualgpuError, match="returns a tuple with a str leaf"):
        dg.jit(pair)(x)


def test_a_python_number_operand_keeps_its_weak_type_through_custom_functions():
    """A Python float or int passed to a custom_jvp/custom_vjp function or a custom_op
    (an argument of the transform: a weakly typed input) promotes as the number does, as the
    eager call's: float32 * 2.0 is float32. The body's shape was traced with it as a
    float64 array, and the program's weak inputs were made float64 around the op: float64."""
    @dg.custom_vjp
    def scaled(x, c):
        return np.sin(x) * c

    scaled.defvjp(lambda x, c: (scaled(x, c), (x, c)),
                  lambda res, g: (g * np.cos(res[0]) * res[1], np.sum(g * np.sin(res[0]))))

    @dg.custom_jvp
    def jscaled(x, c):
        return np.sin(x) * c

    jscaled.defjvp(lambda p, t: (jscaled(*p), np.cos(p[0]) * p[1] * t[0]))
    times = dg.custom_op("test_weak_operand_times", lambda xp, x, c: x * c,
                         jvp=lambda p, t, ans: t[0] * p[1])
    x = np.array([0.3, 0.9], np.float32)
    for f in (scaled, jscaled, times):
        for c in (2.0, 3):
            want = f(x, c) + x  # eager: the number promotes weakly
            got = dg.jit(lambda x, c, f=f: f(x, c) + x)(x, c)
            assert got.dtype == want.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=1e-6)
            value, grad = dg.value_and_grad(lambda x, c, f=f: np.sum(f(x, c)))(x, c)
            assert np.asarray(value).dtype == grad.dtype == np.float32


def test_a_traced_nondiff_argument_is_named_for_what_it_is():
    """custom_vjp (as JAX's): under dg.jit a Python number is a traced weak scalar, not an
    array: the message says it is traced and how to keep it static (static_argnums, or a
    hashable value); a traced array is named as such, and a concrete array as an array."""
    scaled = dg.custom_vjp(lambda v, s: np.sin(v) * s, nondiff_argnums=(1,))
    scaled.defvjp(lambda v, s: (scaled(v, s), np.cos(v)), lambda s, c, g: (c * s * g,))
    with pytest.raises(dg.DualgpuError, match=r"argument 1 is in nondiff_argnums but is "
                                              r"traced: a Python number.*static_argnums.*"
                                              r"hashable") as e:
        dg.jit(lambda v, s: scaled(v, s))(x, 2.0)
    assert "is an array" not in str(e.value)
    with pytest.raises(dg.DualgpuError, match=r"argument 1 is in nondiff_argnums but is "
                                              r"traced: an array of shape \(3,\).*"
                                              r"stop_gradient.*static_argnums"):
        dg.jit(lambda v, s: scaled(v, s))(x, y)
    with pytest.raises(dg.DualgpuError, match=r"argument 1 is in nondiff_argnums but is an "
                                              r"array"):
        scaled(x, y)
    # made static, the number works
    np.testing.assert_allclose(dg.jit(lambda v, s: scaled(v, s), static_argnums=1)(x, 2.0),
                               np.sin(x) * 2.0)


def test_a_custom_jvp_nondiff_argument_may_be_an_array_its_derivative_stopped():
    """custom_jvp (as JAX's: the argument's gradient stopped, closed over by the function and
    its rule): a traced number or array, a concrete array, under jit, vmap and derivatives,
    of either argument; the rule's scale (3) shows it is used."""
    @partial(dg.custom_jvp, nondiff_argnums=(1,))
    def scaled(v, s):
        return np.sin(v) * s

    scaled.defjvp(lambda s, p, t: (scaled(p[0], s), 3 * np.cos(p[0]) * s * t[0]))
    for s in (2.0, y):
        np.testing.assert_allclose(dg.jit(scaled)(x, s), np.sin(x) * s)
        np.testing.assert_allclose(scaled(x, np.asarray(s)), np.sin(x) * s)
        np.testing.assert_allclose(dg.grad(lambda v, s=s: np.sum(scaled(v, s)))(x),
                                   3 * np.cos(x) * s)
    np.testing.assert_allclose(dg.vmap(scaled)(x, y), np.sin(x) * y)
    np.testing.assert_allclose(dg.grad(lambda s: np.sum(scaled(x, s)))(y), 0 * y)
    # s = v: only the first argument's derivative counts
    np.testing.assert_allclose(dg.grad(lambda v: np.sum(scaled(v, v)))(x), 3 * np.cos(x) * x)
    np.testing.assert_allclose(dg.hvp(lambda v: np.sum(scaled(v, v)))(x, y),
                               -3 * np.sin(x) * x * y)


def _pytree_custom_functions(scale):
    """``f(x, y) = (sin(x) * y, {"c": x * y, "n": None})`` as a custom_jvp and a custom_vjp
    function whose rules are the true derivatives times ``scale``."""
    def plain(x, y):
        return np.sin(x) * y, {"c": x * y, "n": None}

    jf = dg.custom_jvp(plain)

    @jf.defjvp
    def jf_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        return jf(x, y), (scale * (np.cos(x) * y * tx + np.sin(x) * ty),
                          {"c": scale * (tx * y + x * ty), "n": None})

    vf = dg.custom_vjp(plain)

    def vf_bwd(res, g):
        x, y = res
        a, c = g[0], g[1]["c"]
        return scale * (a * np.cos(x) * y + c * y), scale * (a * np.sin(x) + c * x)

    vf.defvjp(lambda x, y: (vf(x, y), (x, y)), vf_bwd)
    return plain, jf, vf


def test_pytree_outputs_of_custom_functions_under_every_transform():
    """A custom function returning a pytree (several arrays and a None): its values and
    derivatives under jvp, grad, hvp, jit and vmap are the plain function's when its rules
    are the true derivatives, and its rules are the ones used (rules scaled by 3 scale
    every derivative by 3)."""
    x, y = np.array([0.3, -1.2]), np.array([2.0, 0.5])

    def loss(f):  # uses both array leaves: reverse mode sums the rule over them
        def run(x, y):
            a, d = f(x, y)
            assert d["n"] is None
            return np.sum(a * a) + np.sum(np.cos(d["c"]))
        return run

    for scale in (1.0, 3.0):
        plain, jf, vf = _pytree_custom_functions(scale)
        for f in (jf, vf):
            close = partial(np.testing.assert_allclose, rtol=1e-10, atol=1e-12)
            out = dg.jit(f)(x, y)
            close(out[0], plain(x, y)[0])
            close(out[1]["c"], x * y)
            (_, (ta, td)) = dg.jvp(f, (x, y), (np.ones(2), np.zeros(2)))
            close(ta, scale * np.cos(x) * y)
            close(td["c"], scale * y)
            g = dg.grad(loss(f), argnums=(0, 1))(x, y)
            want = dg.grad(loss(plain), argnums=(0, 1))(x, y)
            close(g[0], scale * want[0])
            close(g[1], scale * want[1])
            close(dg.jit(dg.grad(loss(f)))(x, y), scale * want[0])
            if scale == 1.0:  # forward over reverse: true rules give the true H v
                v = np.array([1.0, -2.0])
                close(dg.hvp(loss(f))(x, y, v), dg.hvp(loss(plain))(x, y, v))
            per = dg.vmap(dg.grad(loss(f)))(x[:, None], y[:, None])
            close(per[:, 0], scale * want[0])


def test_pytree_output_rules_with_another_structure_are_refused():
    """A jvp rule's tangent, or a fwd rule's output, of another pytree structure than the
    function's output: one error naming the rule and both structures."""
    @dg.custom_jvp
    def f(x):
        return x, 2 * x

    @f.defjvp
    def f_rule(p, t):
        return f(*p), (t[0], {"d": 2 * t[0]})

    with pytest.raises(dg.DualgpuError, match="Custom JVP rule f_rule for function f must "
                                              "produce primal and tangent outputs"):
        dg.jvp(f, (1.0,), (1.0,))

    @dg.custom_vjp
    def h(x):
        return x, 2 * x

    h.defvjp(lambda x: ([x, 2 * x], None), lambda res, g: (g[0] + 2 * g[1],))
    with pytest.raises(dg.DualgpuError, match="fwd rule of custom_vjp function h returned an "
                                              r"output of structure a list \[\*, \*\]"):
        dg.grad(lambda x: h(x)[0])(1.0)


def test_a_jvp_rule_tangent_of_another_shape_is_refused():
    """A tangent array that broadcasts to the output (np.sum(...) for a vector output) was
    broadcast: every entry got the sum, in jvp and in grad (JAX refuses it)."""
    @dg.custom_jvp
    def f(x):
        return {"sq": x ** 2}

    @f.defjvp
    def f_rule(p, t):
        return f(p[0]), {"sq": np.sum(2 * p[0] * t[0])}

    for call in (lambda: dg.jvp(f, (np.ones(2),), (np.ones(2),)),
                 lambda: dg.grad(lambda x: np.sum(f(x)["sq"]))(np.ones(2))):
        with pytest.raises(dg.ShapeMismatchError, match=r"primal output \['sq'\], shape "
                                                        r"\(2,\)\) but got float64\[\]"):
            call()


def test_a_numpy_scalar_nondiff_argument_is_a_static_value():
    """np.float64(2.0), np.int32(3) as nondiff arguments are hashable static values (as in
    JAX), keyed by value and dtype: a new value or dtype is another op, an equal one reuses
    it; a 0-d array is still refused as an array."""
    seen = []

    @partial(dg.custom_vjp, nondiff_argnums=(1,))
    def power(v, n):
        return v ** n

    def bwd(n, v, g):
        seen.append((type(n), n))
        return (g * n * v ** (n - 1),)

    power.defvjp(lambda v, n: (power(v, n), v), bwd)
    for n in (np.float64(2.0), np.int32(3), np.float32(3.0)):
        np.testing.assert_allclose(power(x, n), x ** n)
        np.testing.assert_allclose(dg.grad(lambda v, n=n: np.sum(power(v, n)))(x),
                                   n * x ** (n - 1), rtol=1e-6)
        assert seen[-1][0] is type(n) and seen[-1][1] == n
    with pytest.raises(dg.DualgpuError, match="argument 1 is in nondiff_argnums but is an "
                                              "array"):
        power(x, np.array(2.0))


def test_a_traced_value_read_through_an_objects_attribute_is_closed_over():
    """A custom function whose body and rule read ``o.c``, a traced value held by an object
    of the user's (a model's parameter), is closure-converted as a closed-over value is."""
    class Holder:
        pass

    def loss(v, c):
        o = Holder()
        o.c = c

        @dg.custom_jvp
        def f(v):
            return np.sin(v) * o.c

        f.defjvp(lambda p, t: (f(p[0]), np.cos(p[0]) * o.c * t[0]))
        g = dg.custom_vjp(lambda v: np.sin(v) * o.c)
        g.defvjp(lambda v: (g(v), v), lambda v, ct: (np.cos(v) * o.c * ct,))
        return np.sum(f(v)) + np.sum(g(v))

    c = np.array(2.0)
    np.testing.assert_allclose(dg.jit(loss)(x, c), 2 * np.sum(np.sin(x)) * 2.0)
    np.testing.assert_allclose(dg.grad(loss)(x, c), 2 * np.cos(x) * 2.0)
    np.testing.assert_allclose(dg.vmap(loss, in_axes=(0, None))(x[:, None], c),
                               2 * np.sin(x) * 2.0)
