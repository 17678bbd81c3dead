"""More ports of JAX's custom_jvp / custom_vjp tests: the in-scope ones no other file ported.

Source: jax-ml/jax ``tests/custom_api_test.py`` (``CustomJVPTest``, ``CustomVJPTest``) at
cec06d1, translated: ``jnp`` -> ``np``, ``jax.X`` -> ``dg.X``, JAX's assertions kept (JAX's
``UnexpectedTracerError`` is ``dg.EscapedTracerError``). Each test names the JAX test it
mirrors. JAX is Copyright the JAX authors, licensed under the Apache License 2.0
(http://www.apache.org/licenses/LICENSE-2.0); these are translations, not copies. The census
of what is in scope is in tests/api/test_jax_api_ports_more.py.
"""
import collections
import copy
from functools import partial

import numpy as np
import pytest

import dualgpu as dg


def close(a, b, **kw):
    la, lb = dg.tree_util.tree_leaves(a), dg.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for u, v in zip(la, lb):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), **kw)


# ------------------------------------------------------------------------ CustomJVPTest
def test_custom_jvp_deepcopy():  # CustomJVPTest.test_deepcopy (dg.nn.relu: no custom rule)
    f = copy.deepcopy(dg.nn.relu)  # doesn't crash
    close(dg.grad(f)(1.), 1.)


def test_custom_jvp_closed_over_tracers_error_message():  # test_closed_over_tracers_error_message
    def f(x):
        @dg.custom_jvp
        def g(y):
            return x + y

        def g_jvp(primals, tangents):
            return g(x), 2 * primals[0]
        g.defjvp(g_jvp)
        return g(1.)

    with pytest.raises(dg.EscapedTracerError):
        dg.jvp(f, (3.,), (1.,))
    with pytest.raises(dg.EscapedTracerError):
        dg.grad(f)(3.)


def test_custom_jvp_nondiff_arg_vmap_tracer():  # test_nondiff_arg_vmap_tracer
    @partial(dg.custom_jvp, nondiff_argnums=(0,))
    def f(x, y):
        return x * y

    def f_jvp(x, primals, tangents):
        (y,), (t_y,) = primals, tangents
        return f(x, y), 5 * t_y
    f.defjvp(f_jvp)

    g = dg.vmap(f)
    ans = dg.jvp(lambda y: g(np.array([2.]), y), (np.array([3.]),), (np.array([1.]),))
    close(ans, (np.array([6.]), np.array([5.])))


def test_custom_jvp_nondiff_arg_hiding_jvp_tracer():  # test_nondiff_arg_hiding_jvp_tracer
    def f(x):
        @partial(dg.custom_jvp, nondiff_argnums=(0,))
        def g(h, x):
            return h(x)

        @g.defjvp
        def g_jvp(h, primals, tangents):
            x, = primals
            t, = tangents
            return g(h, x), 2. * t
        h = lambda y: x + y  # noqa: E731  capture x
        return g(h, x)

    with pytest.raises(dg.EscapedTracerError):
        dg.jvp(f, (2.,), (1.,))


def test_custom_jvp_hard_stuff():  # CustomJVPTest.test_hard_stuff
    arr = np.ones((5, 2, 2))
    dg.jit(dg.vmap(np.linalg.det))(arr)  # doesn't crash


def test_custom_jvp_hard_stuff2():  # CustomJVPTest.test_hard_stuff2
    @dg.custom_jvp
    def f(x):
        return np.zeros(x.shape, x.dtype)

    @f.defjvp
    def f_jvp(primals, tangents):
        x, = primals
        t, = tangents
        return f(x), t

    # don't crash
    dg.jit(dg.vmap(f))(np.arange(3.))
    dg.jit(dg.vmap(dg.grad(f)))(np.arange(3.))
    dg.jit(dg.grad(lambda x: dg.vmap(f)(x).sum()))(np.arange(3.))
    dg.grad(lambda x: dg.vmap(f)(x).sum())(np.arange(3.))
    dg.jvp(dg.vmap(f), (np.arange(3.),), (np.ones(3),))


def test_custom_jvp_fun_with_nested_calls_2():  # test_fun_with_nested_calls_2
    def call(f, *args):
        f = dg.custom_jvp(f)
        f.defjvp(lambda primals, tangents: (f(*primals), sum(tangents)))
        return f(*args)

    def fun_with_nested_calls_2(x):
        def bar(y):
            def baz(w):
                q = call(lambda x: y, x)
                q = q + call(lambda: y)
                q = q + call(lambda y: w + y, y)
                q = call(lambda w: call(np.sin, x) * y, 1.0) + q
                return q
            return dg.jit(baz)(x)
        return call(bar, x)

    close(dg.jit(fun_with_nested_calls_2)(3.), fun_with_nested_calls_2(3.))
    dg.vmap(fun_with_nested_calls_2)(np.arange(3.))


def test_custom_jvp_closure_with_vmap2():  # CustomJVPTest.test_closure_with_vmap2
    def h(z):
        def f(x):
            @dg.custom_jvp
            def g(y):
                return x * y

            @g.defjvp
            def g_jvp(primals, tangents):
                (y,), (ydot,) = primals, tangents
                return x * y, x * ydot
            return g(z)
        return dg.vmap(f)(np.arange(3., dtype='float32'))

    primals, tangents = dg.jvp(h, (np.float32(1.),), (np.float32(2.),))
    close(primals, np.arange(3., dtype='float32'))
    close(tangents, 2 * np.arange(3., dtype='float32'))


def test_custom_jvp_vmap_broadcasting_interaction():
    def f2(y, z):
        v1 = z
        v2 = np.sum(y) + z
        return np.logaddexp(v1, v2)

    def f1(y, z):
        v = dg.vmap(lambda _y: f2(_y, z))(y)
        return np.sum(v)

    y = np.ones((3, 2))
    val, g = dg.value_and_grad(lambda z: f1(y, z))(0.1)
    assert val.shape == ()
    assert g.shape == ()


def test_custom_jvp_vmap_broadcasting_interaction_2():  # jax.random.uniform -> NumPy's
    @dg.custom_jvp
    def transform(box, R):
        if np.isscalar(box) or box.size == 1:
            return R * box
        elif box.ndim == 2:
            return np.einsum('ij,j->i', box, R)
        raise ValueError()

    @transform.defjvp
    def transform_jvp(primals, tangents):
        box, R = primals
        dbox, dR = tangents
        return (transform(box, R), dR + transform(dbox, R))

    def periodic_general(box):
        def displacement_fn(Ra, Rb, **kwargs):
            _box = kwargs.get('box', box)
            return transform(_box, Ra - Rb)
        return displacement_fn

    displacement = periodic_general(1.0)
    R = np.random.default_rng(0).uniform(size=(250, 2))  # as JAX: one batched custom op

    def energy_fn(box):
        d = partial(displacement, box=box)
        d = dg.vmap(dg.vmap(d, (None, 0)), (0, None))
        return np.sum(d(R, R) ** 2)

    g = dg.grad(energy_fn)(1.0)
    assert g.shape == ()
    close(g, 2 * np.sum((R[:, None] - R[None]) ** 2))  # d/dbox of box^2 |Ra - Rb|^2


def test_custom_jvp_unbroadcasting():  # CustomJVPTest.test_custom_jvp_unbroadcasting
    a = np.array([1., 1.])

    @dg.custom_jvp
    def f(x):
        return a * x

    @f.defjvp
    def f_jvp(primals, tangents):
        x, = primals
        dx, = tangents
        return a * x, a * dx

    shape = dg.grad(lambda x: np.sum(f(x)))(np.array(1.)).shape
    assert shape == ()


def test_custom_jvp_resolve_kwargs_error_message():  # test_resolve_kwargs_error_message
    @dg.custom_jvp
    def f(x, y, *, z=None):
        return np.sin(x), x + np.cos(y)

    @f.defjvp
    def f_jvp(primals, tangents):
        pytest.fail("should not be executed")

    with pytest.raises(TypeError, match=r"The input arguments to the custom_jvp-decorated "
                                        r"function f(.*)\nmissing a required argument: 'y'"):
        f(0.5)
    with pytest.raises(TypeError, match=r"The input arguments to the custom_jvp-decorated "
                                        r"function f(.*)\nThe following keyword arguments "
                                        r"could not be resolved to positions: z"):
        f(0.5, 0.1, z=1.0)


def test_custom_jvp_transpose_vjp3():  # CustomJVPTest.test_custom_jvp_transpose_vjp3
    @dg.custom_jvp
    def div(x, y):
        return x / y

    @div.defjvp
    def sin_jvp(primals, tangents):
        (x, y), (x_dot, y_dot) = primals, tangents
        del y_dot  # ignore lol
        return div(x, y), div(x_dot, y)
    _, f_vjp = dg.vjp(lambda x: div(x, 2.), 1.)
    ans, = f_vjp(1.)
    close(ans, 1. / 2)


# ------------------------------------------------------------------------ CustomVJPTest
def test_custom_vjp_deepcopy():  # CustomVJPTest.test_deepcopy
    @dg.custom_vjp
    def f(x):
        return np.sin(x)
    f.defvjp(lambda x: (np.sin(x), np.cos(x)), lambda cos_x, g: (cos_x * g,))
    g = copy.deepcopy(f)  # doesn't crash
    close(dg.grad(g)(1.), np.cos(1.))


def test_custom_vjp_nondiff_argnums_unhashable():  # test_nondiff_argnums_unhashable
    @partial(dg.custom_vjp, nondiff_argnums=(0,))
    def f(lst, x):
        return lst[0] * np.sin(x)

    def f_fwd(lst, x):
        return f(lst, x), np.cos(x)

    def f_bwd(lst, cos_x, g):
        return (lst[0] * cos_x * g,)
    f.defvjp(f_fwd, f_bwd)
    lst = [2.]  # unhashable
    close(f(lst, 3.), 2. * np.sin(3.))
    expected = 2. * np.cos(3.)
    close(dg.grad(f, argnums=1)(lst, 3.), expected)
    close(dg.jit(lambda x: dg.grad(f, argnums=1)(lst, x))(3.), expected)
    close(dg.vmap(dg.grad(lambda x: f(lst, x)))(np.arange(3.)), 2. * np.cos(np.arange(3.)))


def test_custom_vjp_nondiff_argnums_argnames():  # test_nondiff_argnums_argnames
    @partial(dg.custom_vjp, nondiff_argnums=(0,), nondiff_argnames=('g',))
    def app(f, g, x):
        return f(x) + g(x)

    def app_fwd(f, g, x):
        return app(f, g, x), np.cos(x)

    def app_rev(f, g, cos_x, v):
        return (cos_x * v,)
    app.defvjp(app_fwd, app_rev)
    f = lambda x: 2 * x  # noqa: E731
    g = lambda x: 2 * x  # noqa: E731
    close(app(f, g, 1), 4)
    close(dg.value_and_grad(lambda x: app(f, g, x))(1.), (4., np.cos(1.)))


def _outer_vjp(x, grad=False):
    @dg.custom_vjp
    def f(y):
        return x * y

    def f_fwd(y):
        return f(y), (x, np.cos(y))

    def f_rev(res, g):
        x, cos_y = res
        return (cos_y * g * (x if grad else 1.0),)
    f.defvjp(f_fwd, f_rev)
    return dg.grad(f) if grad else f


def test_custom_vjp_closed_over_vmap_tracer():  # CustomVJPTest.test_closed_over_vmap_tracer
    ans = dg.vmap(lambda x: _outer_vjp(x)(3.))(np.arange(3.))
    close(ans, np.arange(3.) * 3)


def test_custom_vjp_closed_over_tracer3():  # CustomVJPTest.test_closed_over_tracer3
    ans = dg.vmap(lambda x: _outer_vjp(x, grad=True)(3.))(np.arange(3.))
    close(ans, np.cos(3.) * np.arange(3.))


@pytest.mark.parametrize("wrap", [lambda x: x, lambda x: (x,)],
                         ids=["test_nondiff_arg_tracer_error",
                              "test_nondiff_arg_nested_tracer_error"])
def test_custom_vjp_nondiff_arg_tracer_error(wrap):
    @partial(dg.custom_vjp, nondiff_argnums=(0,))
    def f(x, y):
        return (x[0] if isinstance(x, tuple) else x) * y

    def f_fwd(x, y):
        return f(x, y), np.cos(y)

    def f_rev(x, cos_y, g):
        return (cos_y * g,)
    f.defvjp(f_fwd, f_rev)

    @dg.jit
    def g(x, y):
        return f(wrap(x), y)
    with pytest.raises(dg.EscapedTracerError, match="custom_vjp"):
        _ = g(2., 3.)
    with pytest.raises(dg.EscapedTracerError, match="custom_vjp"):
        _ = dg.grad(g, 1)(2., 3.)


def test_custom_vjp_issue2511():  # CustomVJPTest.test_issue2511
    arr = np.ones((5, 2, 2))
    foo = lambda x: dg.vmap(np.linalg.det, (0,))(x)  # noqa: E731
    dg.jit(foo)(arr)  # doesn't crash


def test_custom_vjp_lowering_out_of_traces():  # CustomVJPTest.test_lowering_out_of_traces
    class F(collections.namedtuple("F", ["a"])):
        def __call__(self, x):
            return dg.nn.relu(self.a) * x

    @dg.jit
    def g(f, x):
        return f(x)
    dg.grad(g, argnums=(1,))(F(2.0), 0.)  # doesn't crash


def _closes_over(where):
    def f(y):
        @dg.custom_vjp
        def f(x):
            return 2. * np.sin(x)

        def fwd(x):
            return f(x), (y if where == "fwd" else ())

        def bwd(res, g):
            return (2. * np.cos(res if where == "fwd" else y) * g,)  # capture!
        f.defvjp(fwd, bwd)
        return dg.grad(f)(1.)
    return f


@pytest.mark.parametrize("where", ["bwd", "fwd"],
                         ids=["test_bwd_closes_over_tracer", "test_fwd_closes_over_tracer"])
def test_custom_vjp_rule_closes_over_tracer(where):
    f = _closes_over(where)
    close(dg.jit(f)(2.), 2. * np.cos(2.))
    close(dg.vmap(f)(np.arange(3.)), 2. * np.cos(np.arange(3.)))
    close(dg.jit(dg.vmap(f))(np.arange(3.)), 2. * np.cos(np.arange(3.)))
    close(dg.vmap(dg.jit(f))(np.arange(3.)), 2. * np.cos(np.arange(3.)))
    close(dg.grad(f)(4.), -2. * np.sin(4.))


def test_custom_vjp_float0_bwd_none():  # CustomVJPTest.test_float0_bwd_none
    @dg.custom_vjp
    def f(i, x):
        return np.sin(x)

    def f_fwd(i, x):
        return f(i, x), np.cos(x)

    def f_rev(cos_x, g):
        return (None, 2 * cos_x * g)
    f.defvjp(f_fwd, f_rev)
    close(dg.grad(f, 1)(np.array([1, 2]), 3.), 2 * np.cos(3.))


def test_custom_vjp_float0_cotangents_automatically_handled():
    @dg.custom_vjp
    def f(x, y):
        return x

    def f_fwd(x, y):
        return x, None

    def f_bwd(_, zbar):
        return (0., 1)
    f.defvjp(f_fwd, f_bwd)
    dg.jit(lambda x: dg.vjp(f, 0., x)[1](1.))(1)  # doesn't crash


def test_custom_vjp_closure_with_vmap2():  # CustomVJPTest.test_closure_with_vmap2
    def h(z):
        def f(x):
            @dg.custom_vjp
            def g(y):
                return x * y

            def g_fwd(y):
                return x * y, (x, x * y, y)

            def g_rev(res, w_bar):
                x, *_ = res
                return (x * w_bar,)
            g.defvjp(g_fwd, g_rev)
            return g(z)
        return dg.vmap(f)(np.arange(3., dtype='float32')).sum()
    # eps: dg.testing's default (1e-6) is below float32's resolution; JAX's is 1e-4
    dg.testing.check_grads(h, (np.float32(3.14),), order=1, modes=['rev'], eps=1e-3, rtol=1e-2,
                           atol=1e-2)


def test_custom_vjp_pytrees_not_required_to_contain_nones():
    class A(list):
        pass

    def unflatten(_, children):
        assert children[0] is not None
        return A(children)
    dg.tree_util.register_pytree_node(A, lambda x: (x, None), unflatten)

    @dg.custom_vjp
    def f(x):
        return x[0]

    def f_fwd(x):
        return x[0], None

    def f_bwd(_, g):
        return A([g]),
    f.defvjp(f_fwd, f_bwd)
    dg.grad(f)(A([1.]))  # doesn't crash


@pytest.mark.parametrize("arg", [(1.0, (2.0, 3.0)), (1.0, (2.0, None))],
                         ids=["test_nones_representing_zeros_in_subtrees_returned_by_bwd",
                              "test_pytree_nones_returned_by_bwd"])
def test_custom_vjp_nones_returned_by_bwd(arg):
    @dg.custom_vjp
    def f(x):
        return x[0]

    def f_fwd(x):
        return f(x), None

    def f_bwd(_, z_bar):
        return (z_bar, (None, None)),
    f.defvjp(f_fwd, f_bwd)
    dg.grad(f)(arg)  # don't crash


def test_custom_vjp_bwd_rule_shape_mismatch():  # CustomVJPTest.test_bwd_rule_shape_mismatch
    @dg.custom_vjp
    def foo(x, y):
        return x

    def foo_fwd(x, y):
        return x, None

    def foo_bwd(_, g):
        return np.zeros(3), np.zeros(3)
    foo.defvjp(foo_fwd, foo_bwd)
    with pytest.raises(ValueError, match=r'output\[1\] the bwd rule attached to foo.*produced '
                                         r'an output of type f.*\[3\]'):
        dg.grad(lambda x, y: foo(x, y * y).sum(), 1)(np.ones(3), np.ones(4))


def test_custom_vjp_resolve_kwargs_error_message():  # test_resolve_kwargs_error_message
    @dg.custom_vjp
    def f(x, y, *, z=None):
        return np.sin(x), x + np.cos(y)

    def f_fwd(x, y):
        pytest.fail("should not be executed")

    def f_bwd(res, cts):
        pytest.fail("should not be executed")
    f.defvjp(f_fwd, f_bwd)
    with pytest.raises(TypeError, match=r"missing a required argument: 'y'"):
        f(0.5)
    with pytest.raises(TypeError, match="The following keyword arguments could not be "
                                        "resolved to positions: z"):
        f(0.5, 0.1, z=1.0)


# ----------------------------------------------- dualgpu: closures over differentiated values
def _closing_over(kind, x):
    if kind == "custom_vjp":
        f = dg.custom_vjp(lambda y: x * y)
        f.defvjp(lambda y: (x * y, None), lambda r, g: (3.0 * g,))
    else:
        f = dg.custom_jvp(lambda y: x * y)
        f.defjvp(lambda p, t: (x * p[0], 3.0 * t[0]))
    return f


@pytest.mark.parametrize("kind", ["custom_vjp", "custom_jvp"])
@pytest.mark.parametrize("transform", [lambda h: dg.grad(h)(2.0),
                                       lambda h: dg.jvp(h, (2.0,), (1.0,))],
                         ids=["grad", "jvp"])
def test_a_differentiated_closed_over_value_is_refused_not_dropped(kind, transform):
    # the rules say nothing about x's derivative: JAX raises, a silent zero would be wrong
    with pytest.raises(dg.DualgpuError, match="closes over a traced value"):
        transform(lambda x: _closing_over(kind, x)(x))


@pytest.mark.parametrize("transform", [
    lambda h: dg.grad(lambda y: dg.jit(h)(2.0, y))(5.0),  # x a jit argument
    lambda h: dg.vmap(dg.grad(h, argnums=1))(np.array([2.0]), np.array([5.0]))[0],
    lambda h: dg.grad(lambda y: dg.vmap(h)(np.array([2.0]), y).sum())(np.array([5.0]))[0],
], ids=["grad-of-jit", "vmap-of-grad", "grad-of-vmap"])
def test_a_closed_over_value_not_differentiated_is_not_refused(transform):
    # reverse mode through a custom_jvp function (its VJP derived by transposing its rule)
    # perturbed the closed-over x too, and refused it though only y is differentiated
    close(transform(lambda x, y: _closing_over("custom_jvp", x)(y)), 3.0)


@pytest.mark.parametrize("kind", ["custom_vjp", "custom_jvp"])
def test_a_closed_over_vmap_value_is_an_operand(kind):
    out = dg.vmap(lambda x: _closing_over(kind, x)(2.0))(np.arange(3.))
    close(out, 2.0 * np.arange(3.))


def test_custom_jvp_vmap_inside_defjvp():  # CustomJVPTest.test_vmap_inside_defjvp
    mat = np.random.default_rng(47).standard_normal((2, 3))  # JAX: jax.random.normal

    @dg.custom_jvp
    def f(mat, aux):
        num_rows, num_cols = mat.shape
        return np.ones((num_rows, 1)) / num_cols

    @f.defjvp
    def f_jvp(primals, tangents):
        mat, aux = primals
        vec, _ = tangents
        output = f(*primals)
        num_rows, num_cols = mat.shape
        size = num_rows * num_cols
        bd_mat = mat.reshape(1, 1, num_rows, num_cols)
        bd_mat = np.tile(bd_mat, reps=(num_rows, num_cols))
        bd_mat = bd_mat.reshape(size, num_rows, num_cols)
        rowsum = np.sum(mat, axis=1, keepdims=True)
        colsum = np.sum(mat, axis=0, keepdims=True)
        bd_rowsum = np.tile(rowsum, reps=(1, num_rows))
        bd_colsum = np.tile(colsum, reps=(num_cols, 1))
        bd_vec = vec.reshape(size, 1)

        def operate(mx, val):
            buf = 0
            for i in range(2):
                buf = buf + np.matmul(mx, bd_colsum) / np.power(aux, i)
            buf = np.matmul(bd_rowsum, buf)
            return buf * val[None, :]
        bd_buf = dg.vmap(operate, in_axes=(0, 0), out_axes=0)(bd_mat, bd_vec)
        bd_buf = bd_buf / aux
        jvp = np.sum(bd_buf, axis=0)
        jvp = np.mean(jvp, axis=1, keepdims=True)
        return (output, jvp)

    dg.grad(lambda mat, aux: np.sum(f(mat, aux)))(mat, 0.5)  # doesn't crash


def test_custom_jvp_implicit_broadcasting():  # CustomJVPTest (float32, as JAX without x64)
    @dg.custom_jvp
    def projection_unit_simplex(x):
        s = 1.0
        n_features = x.shape[0]
        u = np.sort(x)[::-1]
        cssv = np.cumsum(u) - s
        ind = np.arange(n_features, dtype=x.dtype) + 1
        cond = u - cssv / ind > 0
        idx = np.count_nonzero(cond)
        threshold = cssv[idx - 1] / idx.astype(x.dtype)
        return dg.nn.relu(x - threshold)

    @projection_unit_simplex.defjvp
    def projection_unit_simplex_jvp(primals, tangents):
        x, = primals
        x_dot, = tangents
        primal_out = projection_unit_simplex(x)
        supp = (primal_out > 0).astype(x_dot.dtype)
        card = np.count_nonzero(supp).astype(x_dot.dtype)
        tangent_out = supp * x_dot - (np.dot(supp, x_dot) / card) * supp
        return primal_out, tangent_out

    rng = np.random.default_rng(0)
    x = rng.random(5).astype(np.float32)
    J_rev = dg.jacrev(projection_unit_simplex)(x)
    J_fwd = dg.jacfwd(projection_unit_simplex)(x)
    p = projection_unit_simplex(x)
    support = (p > 0).astype(np.float32)
    cardinality = np.count_nonzero(support).astype(support.dtype)
    J_true = np.diag(support) - np.outer(support, support) / cardinality
    close(J_true, J_fwd, rtol=1e-6)
    close(J_true, J_rev, rtol=1e-6)

    proj = dg.vmap(projection_unit_simplex)

    def fun(X):
        return np.sum(proj(X) ** 2)

    X = rng.random((4, 5)).astype(np.float32)
    U = rng.random((4, 5))
    U /= np.sqrt(np.sum(U ** 2))
    U = U.astype(np.float32)
    eps = 1e-3
    dir_deriv_num = (fun(X + eps * U) - fun(X - eps * U)) / (2 * eps)
    dir_deriv = np.vdot(dg.grad(fun)(X), U)
    close(dir_deriv, dir_deriv_num, atol=1e-3)
