"""A custom_jvp / custom_vjp function returning several arrays is ONE op with several outputs
(as JAX's): ``bwd`` is called once with the whole cotangent pytree, the JVP rule once, the
function's body once per call. References are JAX's semantics computed by hand."""
import numpy as np
import pytest

import dualgpu as dg

x = np.array([0.5, -2.0, 3.0])


def _clipping_pair(calls):
    """``f(x) = (sin x, {"c": x ** 2})`` whose bwd clips the SUM of the two cotangents:
    nonlinear in ``g``, so calling it per output leaf and summing is wrong."""
    @dg.custom_vjp
    def f(x):
        calls.append(1)
        return np.sin(x), {"c": x ** 2}

    def bwd(x, g):
        return (np.clip(g[0] + g[1]["c"], -1.0, 1.0) * np.cos(x),)

    f.defvjp(lambda x: (f(x), x), bwd)
    return f


def test_a_nonlinear_bwd_sees_the_whole_cotangent_once():
    f = _clipping_pair([])

    def loss(x):
        a, d = f(x)
        return np.sum(0.75 * a) + np.sum(0.5 * d["c"])

    # JAX: g = (0.75, {"c": 0.5}) at once, bwd -> clip(1.25) * cos(x) (per leaf and
    # summed it would be (0.75 + 0.5) * cos(x))
    want = np.cos(x)
    np.testing.assert_allclose(dg.grad(loss)(x), want, rtol=1e-14)
    np.testing.assert_allclose(dg.jit(dg.grad(loss))(x), want, rtol=1e-14)
    _, pullback = dg.vjp(f, x)
    g = (np.full(3, 2.0), {"c": np.array([-4.0, 0.5, 0.25])})
    (ct,) = pullback(g)
    np.testing.assert_allclose(ct, np.clip(g[0] + g[1]["c"], -1, 1) * np.cos(x), rtol=1e-14)


def test_the_body_runs_once_per_call():
    calls: list = []
    f = _clipping_pair(calls)
    f(x)  # the first call traces the body for its outputs' shapes too
    calls.clear()
    f(x)
    assert len(calls) == 1
    jf = dg.jit(lambda x: f(x)[1]["c"] + f(x)[0])
    jf(x)
    calls.clear()
    jf(x)
    assert len(calls) == 1  # the two calls of f are one op (its leaves are not two ops)


def test_one_jvp_rule_call_gives_every_output_tangent():
    rule_calls: list = []

    @dg.custom_jvp
    def f(x, y):
        return x * y, [np.sin(x), y]

    @f.defjvp
    def f_jvp(primals, tangents):
        rule_calls.append(1)
        (x, y), (tx, ty) = primals, tangents
        return f(x, y), (tx * y + x * ty, [np.cos(x) * tx, ty])

    y = np.array([1.0, 2.0, -1.0])
    out, t = dg.jvp(f, (x, y), (np.ones(3), np.zeros(3)))
    np.testing.assert_allclose(t[0], y)
    np.testing.assert_allclose(t[1][0], np.cos(x))
    np.testing.assert_allclose(t[1][1], 0.0)
    # one call for the three outputs (under jit: the rule is not also run for the branches
    # it takes on the values, api/custom_decisions.py)
    rule_calls.clear()
    dg.jit(lambda x, y, t: dg.jvp(f, (x, y), (t, 0 * t)))(x[:2], y[:2], np.ones(2))
    assert len(rule_calls) == 1


def test_defjvps_of_a_function_with_several_outputs():
    """JAX's defjvps: each rule returns a tangent pytree like the output; they are summed
    leaf by leaf (not concatenated)."""
    @dg.custom_jvp
    def f(x, y):
        return x * y, x + y

    f.defjvps(lambda tx, ans, x, y: (tx * y, tx), lambda ty, ans, x, y: (x * ty, ty))
    y = np.array([1.0, 2.0, -1.0])
    out, (ta, tb) = dg.jvp(f, (x, y), (np.ones(3), 2 * np.ones(3)))
    np.testing.assert_allclose(ta, y + 2 * x)
    np.testing.assert_allclose(tb, 3.0)
    ga, gb = dg.grad(lambda x, y: np.sum(f(x, y)[0]) + 3 * np.sum(f(x, y)[1]), (0, 1))(x, y)
    np.testing.assert_allclose(ga, y + 3)
    np.testing.assert_allclose(gb, x + 3)


def test_a_rule_with_several_outputs_under_hvp_and_vmap():
    """Second order through a multi-output rule, and vmap (the op's per-example loop)."""
    @dg.custom_vjp
    def f(x):
        return np.sin(x), x ** 3

    f.defvjp(lambda x: (f(x), x), lambda x, g: (g[0] * np.cos(x) + 3 * g[1] * x ** 2,))

    def loss(x):
        a, b = f(x)
        return np.sum(a * b)

    def plain(x):
        return np.sum(np.sin(x) * x ** 3)

    v = np.array([1.0, -1.0, 0.5])
    np.testing.assert_allclose(dg.hvp(loss)(x, v), dg.hvp(plain)(x, v), rtol=1e-12)
    np.testing.assert_allclose(dg.vmap(dg.grad(loss))(x[:, None]),
                               dg.vmap(dg.grad(plain))(x[:, None]), rtol=1e-12)


def test_custom_op_with_several_outputs_checks_its_rules():
    op = dg.custom_op("my_sincos", lambda xp, x: (xp.sin(x), xp.cos(x)),
                      shape=lambda a: [a, a], multiple_results=True,
                      vjp=lambda g, p, ans: (g[0] * ans[1] - g[1] * ans[0],))
    s, c = op(x)
    np.testing.assert_allclose(s, np.sin(x))
    np.testing.assert_allclose(dg.grad(lambda x: np.sum(op(x)[0] + 2 * op(x)[1]))(x),
                               np.cos(x) - 2 * np.sin(x), rtol=1e-14)
    _, (ts, tc) = dg.jvp(lambda x: op(x), (x,), (np.ones(3),))  # JVP derived from the VJP
    np.testing.assert_allclose(ts, np.cos(x), rtol=1e-14)
    np.testing.assert_allclose(tc, -np.sin(x), rtol=1e-14)
    bad = dg.custom_op("my_sincos_bad", lambda xp, x: (xp.sin(x), xp.cos(x)),
                       shape=lambda a: [a, a], multiple_results=True,
                       jvp=lambda p, t, ans: (t[0],))
    with pytest.raises(dg.DualgpuError, match="returned 1 tangent.* 2 outputs"):
        dg.jvp(bad, (x,), (np.ones(3),))
