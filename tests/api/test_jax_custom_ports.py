"""Ports of JAX's own custom_jvp / custom_vjp tests, the ones no other file here ports yet.

Source: jax-ml/jax ``tests/custom_api_test.py`` (classes ``CustomJVPTest`` and
``CustomVJPTest``), translated: ``jnp`` -> ``np``, ``jax.X`` -> ``dg.X``, JAX's assertions
kept. Each test names the JAX test it mirrors. JAX is Copyright the JAX authors, licensed
under the Apache License 2.0 (http://www.apache.org/licenses/LICENSE-2.0); these are
translations, not copies. Out of scope (not ported): ``lax.scan``/``cond``/``while``
("initial style"), remat, pmap, jaxprs, symbolic zeros, ``custom_gradient``,
``closure_convert``; and ``test_jvp_error`` (JAX refuses forward mode through a custom_vjp
function; dualgpu differentiates through fwd and bwd, tests/api/test_custom_jvp_vjp.py).

In ``test_custom_vjp_closure_4521`` the ``lax.scan`` around the body is left out.
"""
from functools import partial

import numpy as np

import dualgpu as dg


def close(a, b, **kw):
    la, lb = dg.tree_util.tree_leaves(a), dg.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for u, v in zip(la, lb):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), **kw)


def _sin_with_rule():
    @dg.custom_jvp
    def f(x):
        return np.sin(x)

    def f_jvp(primals, tangents):
        x, = primals
        g, = tangents
        return f(x), 2 * np.cos(x) * g
    f.defjvp(f_jvp)
    return f


# ---------------------------------------------------------------------------- custom_jvp
def test_custom_jvp_basic():
    f, x = _sin_with_rule(), 3.0
    close(f(x), np.sin(x))
    close(dg.jvp(f, (x,), (1.0,)), (np.sin(x), 2 * np.cos(x)))
    close(dg.grad(f)(x), 2 * np.cos(x))


def test_custom_jvp_invariance():
    @dg.custom_jvp
    def f(x):
        return np.cos(2 * x) / 2.0

    def f_jvp(primals, tangents):
        x, = primals
        g, = tangents
        return f(x), 3 * g
    f.defjvp(f_jvp)

    def f2(x):
        return dg.jvp(f, (x,), (x,))[0]

    def f3(x):
        return dg.jvp(f2, (x,), (x,))[0]
    close(dg.jvp(f, (1.0,), (1.0,)), dg.jvp(f2, (1.0,), (1.0,)))
    close(dg.jvp(f, (1.0,), (1.0,)), dg.jvp(f3, (1.0,), (1.0,)))


def test_custom_jvp_vmap():
    @dg.custom_jvp
    def f(x):
        assert np.ndim(x) == 0
        return np.sin(x)

    def f_jvp(primals, tangents):
        x, = primals
        g, = tangents
        assert np.ndim(x) == np.ndim(g) == 0
        return f(x), 2 * np.cos(x) * g
    f.defjvp(f_jvp)
    x, xx = np.arange(3.0), np.arange(6.0).reshape(2, 3)
    close(dg.vmap(f)(x), np.sin(x))
    close(dg.vmap(dg.vmap(f))(xx), np.sin(xx))
    close(dg.vmap(lambda v: dg.jvp(f, (v,), (v,)))(x), (np.sin(x), 2 * np.cos(x) * x))
    close(dg.vmap(dg.vmap(lambda v: dg.jvp(f, (v,), (v,))))(xx),
          (np.sin(xx), 2 * np.cos(xx) * xx))
    close(dg.jvp(dg.vmap(f), (x,), (x,)), (np.sin(x), 2 * np.cos(x) * x))
    close(dg.jvp(dg.vmap(dg.vmap(f)), (xx,), (xx,)), (np.sin(xx), 2 * np.cos(xx) * xx))
    close(dg.vmap(lambda v: dg.jvp(dg.vmap(f), (v,), (v,)))(xx),
          (np.sin(xx), 2 * np.cos(xx) * xx))


def test_custom_jvp_jit():
    f, x = _sin_with_rule(), 3.0
    close(dg.jit(f)(x), np.sin(x))
    close(dg.jit(dg.jit(f))(x), np.sin(x))
    close(dg.jit(lambda v: dg.jvp(f, (v,), (v,)))(x), (np.sin(x), 2 * np.cos(x) * x))
    close(dg.jvp(dg.jit(f), (x,), (x,)), (np.sin(x), 2 * np.cos(x) * x))


def test_custom_jvp_kwargs():
    @dg.custom_jvp
    def my_fun(x, y, c=1.0):
        return c * (x + y)

    def my_jvp(primals, tangents):
        x, y, c = primals
        t_x, t_y, t_c = tangents
        return my_fun(x, y, c), t_c
    my_fun.defjvp(my_jvp)
    f = lambda x, y: np.square(my_fun(x, y, c=2.0)).sum()  # noqa: E731
    f(10.0, 5.0)
    dg.jvp(f, (10.0, 5.0), (1.0, 1.0))


def test_custom_jvp_nondiff_argnums():
    @partial(dg.custom_jvp, nondiff_argnums=(0,))
    def app(f, x):
        return f(x)

    def app_jvp(f, primals, tangents):
        (x,), (t,) = primals, tangents
        return app(f, x), 3 * t
    app.defjvp(app_jvp)
    close(app(lambda v: 2 * v, 1), 2)
    close(dg.jvp(lambda v: app(lambda y: 2 * y, v), (1.0,), (1.0,)), (2.0, 3.0))


def test_custom_jvp_nondiff_argnames():
    @partial(dg.custom_jvp, nondiff_argnames=("f",))
    def app(f, x):
        return f(x)

    def app_jvp(f, primals, tangents):
        (x,), (t,) = primals, tangents
        return app(f, x), 3 * t
    app.defjvp(app_jvp)
    close(app(lambda v: 2 * v, 1), 2)


def test_missing_jvp_rule_error_message():
    @dg.custom_jvp
    def foo(x):
        return x ** 2
    for call in (lambda: foo(2), lambda: dg.jvp(foo, (2.0,), (1.0,)),
                 lambda: dg.grad(foo)(2.0)):
        try:
            call()
        except AttributeError as e:
            assert "foo" in str(e) and "defjvp" in str(e)
        else:
            raise AssertionError("no AttributeError")


def _raises_type_error(call, *words):
    try:
        call()
    except TypeError as e:
        for w in words:
            assert w in str(e), (w, str(e))
    else:
        raise AssertionError("no TypeError")


def test_primal_tangent_aval_disagreement_error_message():
    @dg.custom_jvp
    def f(x):
        return x ** 2

    @f.defjvp
    def foo_jvp(primals, tangents):
        x, = primals
        t, = tangents
        return f(x), np.reshape(t, (1,))
    f(2.0)
    _raises_type_error(lambda: dg.jvp(f, (np.float32(2.0),), (np.float32(1.0),)), "(1,)")


def test_jvp_rule_doesnt_return_pair_error_message():
    @dg.custom_jvp
    def f(x):
        return x ** 2

    @f.defjvp
    def foo_jvp(primals, tangents):
        return tangents[0]
    f(2.0)
    _raises_type_error(lambda: dg.jvp(f, (2.0,), (1.0,)), "foo_jvp", "pair")


def test_custom_jvps_first_rule_is_none():
    @dg.custom_jvp
    def f(x, y):
        return x ** 2 * y
    f.defjvps(None, lambda x_dot, primal_out, x, y: 2 * x * y * x_dot)
    close(dg.grad(f, 1)(2.0, 3.0), 12.0)


def test_custom_jvp_functools_partial():
    def fun(x, y, a):
        return x + y * a
    fun_wrapped = partial(fun, a=0.1)
    fn = dg.custom_jvp(fun_wrapped)
    fn.defjvp(lambda primals, tangents: dg.jvp(fun_wrapped, primals, tangents))
    close(dg.grad(lambda args: fn(*args))((1.0, 2.0)), (1.0, 0.1))


def test_custom_jvp_closure_with_vmap():
    @dg.custom_jvp
    def f(x):
        return np.sin(x)
    f.defjvp(lambda p, t: (f(p[0]), np.cos(p[0]) * t[0]))

    def g(x, y):
        return dg.vmap(lambda v: f(v) * y)(x)
    x, y = np.arange(3.0), 2.0
    close(dg.grad(lambda a: np.sum(g(a, y)))(x), np.cos(x) * y)


def test_custom_jvp_pytrees():  # test_pytrees
    @dg.custom_jvp
    def f(x):
        return {'b': np.sin(x['a'])}

    def f_jvp(primals, tangents):
        x, = primals
        g, = tangents
        return f(x), {'b': 2 * np.cos(x['a']) * g['a']}
    f.defjvp(f_jvp)
    x = {'a': 3.}
    close(f(x)['b'], np.sin(x['a']))
    close(dg.jvp(f, (x,), (x,)), ({'b': np.sin(x['a'])}, {'b': 2 * np.cos(x['a']) * x['a']}))


def test_jvp_rule_inconsistent_pytree_structures_error_message():
    @dg.custom_jvp
    def f(x):
        return (x**2,)

    @f.defjvp
    def foo_jvp(primals, tangents):
        x, = primals
        t, = tangents
        return f(x), [2 * x * t, x]

    f(2.)  # doesn't crash
    _raises_type_error(lambda: dg.jvp(f, (2.,), (1.,)),
                       "Custom JVP rule foo_jvp for function f must produce primal and "
                       "tangent outputs with equal container (pytree) structures, but got "
                       f"{dg.tree_util.tree_structure((1,))} and "
                       f"{dg.tree_util.tree_structure([1, 2])} respectively")


def test_custom_jvp_float0():  # test_float0 (zero_from_primal(y): a float0 zero like y)
    scalar_float0 = np.zeros((), dtype=dg.float0)

    @dg.custom_jvp
    def f(x, y):
        return x, y

    def f_jvp(primals, _):
        x, y = primals
        return (x, y), (2., np.zeros(np.shape(y), dtype=dg.float0))
    f.defjvp(f_jvp)
    primals = (2., 3)
    (p_out, t_out) = dg.jvp(f, primals, (np.ones(()), scalar_float0))
    close(p_out, primals)
    close(t_out[0], 2.)
    assert t_out[1].dtype == dg.float0 and t_out[1].shape == ()


def test_custom_jvp_python_control_flow():  # test_python_control_flow
    @dg.custom_jvp
    def f(x):
        if x > 0:
            return np.sin(x)
        else:
            return np.cos(x)

    def f_jvp(primals, tangents):
        x, = primals
        g, = tangents
        if x > 0:
            return f(x), 2 * g
        else:
            return f(x), 3 * g
    f.defjvp(f_jvp)
    x = 2.0
    close(f(x), np.sin(x))
    close(f(-x), np.cos(-x))
    close(dg.jvp(f, (x,), (1.0,)), (np.sin(x), 2.0))
    close(dg.jvp(f, (-x,), (1.0,)), (np.cos(-x), 3.0))
    close(dg.grad(f)(x), 2.0)
    close(dg.grad(f)(-x), 3.0)


# ---------------------------------------------------------------------------- custom_vjp
def _sin_with_vjp():
    @dg.custom_vjp
    def f(x):
        return np.sin(x)
    f.defvjp(lambda x: (f(x), np.cos(x)), lambda cos_x, g: (2 * cos_x * g,))
    return f


def test_custom_vjp_basic():
    f, x = _sin_with_vjp(), 3.0
    close(f(x), np.sin(x))
    close(dg.grad(f)(x), 2 * np.cos(x))
    close(dg.value_and_grad(f)(x), (np.sin(x), 2 * np.cos(x)))


def test_custom_vjp_python_control_flow():  # test_python_control_flow
    @dg.custom_vjp
    def f(x):
        if x > 0:
            return np.sin(x)
        else:
            return np.cos(x)

    def f_fwd(x):
        if x > 0:
            return f(x), x
        else:
            return f(x), x

    def f_rev(x, g):
        if x > 0:
            return (2 * g,)
        else:
            return (3 * g,)
    f.defvjp(f_fwd, f_rev)
    x = 2.0
    close(f(x), np.sin(x))
    close(f(-x), np.cos(-x))
    close(dg.vjp(f, x)[1](1.0), (2.0,))
    close(dg.vjp(f, -x)[1](1.0), (3.0,))


def test_custom_vjp_invariance():
    @dg.custom_vjp
    def f(x):
        return np.cos(2 * x) / 2.0
    f.defvjp(lambda x: (f(x), x), lambda x, g: (g * x,))

    def f2(x):
        return dg.value_and_grad(f)(x)[0]

    def f3(x):
        return dg.value_and_grad(f2)(x)[0]
    close(dg.value_and_grad(f)(1.0), dg.value_and_grad(f2)(1.0))
    close(dg.value_and_grad(f)(1.0), dg.value_and_grad(f3)(1.0))


def test_custom_vjp_vmap():
    @dg.custom_vjp
    def f(x):
        assert np.ndim(x) == 0
        return np.sin(x)

    def f_fwd(x):
        assert np.ndim(x) == 0
        return f(x), np.cos(x)

    def f_rev(cos_x, g):
        return (2 * cos_x * g,)
    f.defvjp(f_fwd, f_rev)
    x, xx = np.arange(3.0), np.arange(6.0).reshape(2, 3)
    close(dg.vmap(f)(x), np.sin(x))
    close(dg.vmap(dg.vmap(f))(xx), np.sin(xx))
    close(dg.vmap(dg.grad(f))(x), 2 * np.cos(x))
    close(dg.vmap(dg.vmap(dg.grad(f)))(xx), 2 * np.cos(xx))
    close(dg.grad(lambda v: np.sum(dg.vmap(f)(v)))(x), 2 * np.cos(x))
    close(dg.grad(lambda v: np.sum(dg.vmap(dg.vmap(f))(v)))(xx), 2 * np.cos(xx))
    close(dg.vmap(dg.grad(lambda v: np.sum(dg.vmap(f)(v))))(xx), 2 * np.cos(xx))


def test_custom_vjp_jit():
    f, x = _sin_with_vjp(), 3.0
    close(dg.jit(f)(x), np.sin(x))
    close(dg.jit(dg.jit(f))(x), np.sin(x))
    close(dg.jit(dg.grad(f))(x), 2 * np.cos(x))
    close(dg.grad(dg.jit(f))(x), 2 * np.cos(x))


def test_custom_vjp_kwargs():
    @dg.custom_vjp
    def my_fun(x, y, c=1.0):
        return c * (x + y)
    my_fun.defvjp(lambda x, y, c=1.0: (my_fun(c, y, c), None), lambda _, g: (g, g, g))
    f = lambda x, y: np.square(my_fun(x, y, c=2.0)).sum()  # noqa: E731
    f(10.0, 5.0)
    dg.grad(f)(10.0, 5.0)


def test_custom_vjp_nondiff_argnums_and_argnames():  # test_nondiff_argnums, _argnames
    for options in ({"nondiff_argnums": (0,)}, {"nondiff_argnames": ("f",)}):
        @partial(dg.custom_vjp, **options)
        def app(f, x):
            return f(x)
        app.defvjp(lambda f, x: (app(f, x), np.cos(x)), lambda f, cos_x, g: (cos_x * g,))
        close(app(lambda v: 2 * v, 1), 2)
        close(dg.value_and_grad(lambda v: app(lambda y: 2 * y, v))(1.0), (2.0, np.cos(1.0)))


def test_missing_vjp_rule_error():
    @dg.custom_vjp
    def foo(x):
        return x ** 2
    for call in (lambda: foo(2), lambda: dg.grad(foo)(2.0)):
        try:
            call()
        except AttributeError as e:
            assert "foo" in str(e) and "defvjp" in str(e)
        else:
            raise AssertionError("no AttributeError")


def test_vjp_rule_inconsistent_pytree_structures_error():
    @dg.custom_vjp
    def f(x):
        return x
    f.defvjp(lambda x: (f(x), None), lambda _, g: (2.0 * g, 3.0))
    _raises_type_error(lambda: dg.grad(f)(2.0))


def test_vjp_bwd_returns_non_tuple_error():
    @dg.custom_vjp
    def f(x):
        return x
    f.defvjp(lambda x: (x, None), lambda _, y_bar: 2.0 * y_bar)  # not a tuple
    _raises_type_error(lambda: dg.grad(f)(3.0), "tuple")


def test_clip_gradient():
    @dg.custom_vjp
    def _clip_gradient(lo, hi, x):
        return x
    _clip_gradient.defvjp(lambda lo, hi, x: (x, (lo, hi)),
                          lambda res, g: (None, None, np.clip(g, res[0], res[1])))

    def clip_gradient(x):
        return _clip_gradient(-0.1, x + 0.1, x)
    close(dg.grad(clip_gradient)(0.1), 0.2)


def test_nestable_vjp():
    def f(x):
        return x ** 2

    @dg.custom_vjp
    def g(x):
        return f(x)

    def g_fwd(x):
        y, f_vjp = dg.vjp(f, x)
        return y, f_vjp
    g.defvjp(g_fwd, lambda f_vjp, y_bar: f_vjp(y_bar))
    _, g_vjp = dg.vjp(g, 1.0)
    y, = g_vjp(1.0)
    close(y, 2.0)

    @dg.jit
    def z(x):
        return dg.vjp(g, x)[1]
    y, = z(1.0)(3.0)
    close(y, 6.0)


def test_bwd_nones():
    @dg.custom_vjp
    def f(x, y):
        return x * np.sin(y)
    f.defvjp(lambda x, y: (f(x, y), np.cos(y)), lambda cos, g: (None, 2 * cos * g))
    close(dg.grad(lambda v: f(v, v))(3.0), 2 * np.cos(3.0))
    close(dg.grad(lambda v: dg.vmap(f)(v, v).sum())(np.arange(3.0)),  # test_bwd_nones_vmap
          2 * np.cos(np.arange(3.0)))


def test_bwd_nones_pytree():
    @dg.custom_vjp
    def f(xs, y):
        x1, x2 = xs
        return x1 * x2 * np.sin(y)
    f.defvjp(lambda xs, y: (f(xs, y), np.cos(y)), lambda cos, g: (None, 2 * cos * g))
    close(dg.grad(lambda v: f((v, v), v))(3.0), 2 * np.cos(3.0))


def test_bwd_rule_can_produce_list_or_tuple():
    @dg.custom_vjp
    def f(x, y):
        return x * y
    f.defvjp(lambda x, y: (f(x, y), (x, y)), lambda res, g: [res[1] * g, res[0] * g])
    close(dg.grad(f, argnums=(0, 1))(2.0, 3.0), (3.0, 2.0))


def test_vmap_vjp_called_twice():
    @dg.custom_vjp
    def f(x):
        return x
    f.defvjp(lambda x: (x, None), lambda _, y_bar: (y_bar,))
    _, f_vjp = dg.vjp(dg.vmap(f), np.array([3.0]))
    close(f_vjp(np.array([3.0])), (np.array([3.0]),))
    close(f_vjp(np.array([4.0])), (np.array([4.0]),))


def test_custom_vjp_pytrees():  # test_pytrees
    @dg.custom_vjp
    def f(x):
        return {'b': np.sin(x['a'])}

    def f_fwd(x):
        return f(x), {'r': np.cos(x['a'])}

    def f_bwd(res, g):
        cos_x = res['r']
        return ({'a': 2 * cos_x * g['b']},)
    f.defvjp(f_fwd, f_bwd)
    x = {'a': 3.}
    close(f(x)['b'], np.sin(x['a']))
    close(dg.grad(lambda x: f(x)['b'])(x), {'a': 2 * np.cos(x['a'])})


def test_custom_vjp_closure_4521():  # without the lax.scan around the body
    @dg.custom_vjp
    def g(x, y):
        return None

    def g_fwd(x, y):
        return None, y

    def g_bwd(residuals, z_bar):
        raise AssertionError("bwd is not called")

    g.defvjp(g_fwd, g_bwd)

    def f(xs, y):
        v_g = dg.vmap(g, in_axes=(0, None), out_axes=None)
        v_g(xs, y)

    _, vjp_f = dg.vjp(f, np.ones(5), np.zeros(1))
    vjp_f(None)  # doesn't crash
