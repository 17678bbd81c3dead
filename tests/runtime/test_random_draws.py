"""Random draws inside a traced function are inputs of its program, drawn again at every call
from the same source, in the same order: a cached call returns what the eager function
returns under the same seed, and leaves the source where the eager call would
(dualgpu/frontend/numpy/random.py)."""
from __future__ import annotations

import functools
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dualgpu as dg

X = np.array([0.3, -0.7, 1.1])
V = np.array([1.0, 0.5, -2.0])

# --------------------------------------------------------------------------- sources
# a source is NumPy's global state, or a generator that is a module global or an argument
G_RNG, G_RS, G_PY = np.random.default_rng(0), np.random.RandomState(0), random.Random(0)


def _draws(kind, r):
    """Two draws from source ``r`` in the order the functions make them: an array z of
    shape (3,) and a scalar s."""
    if kind == "numpy":
        return np.random.standard_normal(3), np.random.uniform(-1.0, 1.0)
    if kind == "rs":
        return r.normal(0.5, 2.0, size=3), r.randint(1, 5)
    if kind == "py":
        return np.array([r.gauss(0.0, 1.0) for _ in range(3)]), r.random()
    return r.standard_normal(3), r.integers(1, 5)


def _seed(kind, where, seed):
    """Seed the source (a new generator, for an argument) and return it."""
    if kind == "numpy":
        np.random.seed(seed)
        return None
    global G_RNG, G_RS, G_PY
    make = {"rng": np.random.default_rng, "rs": np.random.RandomState,
            "py": random.Random}[kind]
    if where == "arg":
        return make(seed)
    if kind == "rng":
        G_RNG = make(seed)
    elif kind == "rs":
        G_RS = make(seed)
    else:
        G_PY = make(seed)
    return {"rng": G_RNG, "rs": G_RS, "py": G_PY}[kind]


def _function(kind, where):
    """f(x[, r]) = sum(sin(x) * z) + s * sum(x ** 2), its draws from the source."""
    def draws(r):
        if where == "global":
            r = {"rng": G_RNG, "rs": G_RS, "py": G_PY}.get(kind)
        return _draws(kind, r)

    if where == "arg":
        def f(x, r):
            z, s = draws(r)
            return np.sum(np.sin(x) * z) + s * np.sum(x ** 2)
        return f

    def f(x):
        z, s = draws(None)
        return np.sum(np.sin(x) * z) + s * np.sum(x ** 2)
    return f


def _eager(transform, z, s):
    """What the transform returns at X (and V), from the draws, in closed form."""
    return {"jit": lambda: np.sum(np.sin(X) * z) + s * np.sum(X ** 2),
            "grad": lambda: np.cos(X) * z + 2 * s * X,
            "hvp": lambda: (-np.sin(X) * z + 2 * s) * V}[transform]()


def _next_draw(kind, r):
    """The next number the source gives (its state after the calls)."""
    if kind == "numpy":
        return np.random.random()
    return r.random()


@settings(max_examples=12, deadline=None, derandomize=True)
@given(kind=st.sampled_from(["numpy", "rng", "rs", "py"]),
       where=st.sampled_from(["global", "arg"]),
       transform=st.sampled_from(["jit", "grad", "hvp"]),
       calls=st.integers(2, 3), seed=st.integers(0, 2 ** 16))
def test_cached_calls_draw_what_eager_calls_draw(kind, where, transform, calls, seed):
    """Draw for draw, over several calls (the first builds, the others are cached), and the
    source is left where the eager calls leave it."""
    if kind == "numpy" and where == "arg":
        where = "global"  # the global state is no argument
    f = _function(kind, where)
    t = getattr(dg, transform)(f)
    r = _seed(kind, where, seed)
    extra = (r,) if where == "arg" else ()
    direction = (V,) if transform == "hvp" else ()
    got = [t(X, *extra, *direction) for _ in range(calls)]
    after = _next_draw(kind, r)
    r = _seed(kind, where, seed)
    want = [_eager(transform, *_draws(kind, r)) for _ in range(calls)]
    assert after == _next_draw(kind, r)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-14)
    assert not np.allclose(got[0], got[1])  # new numbers at every call


@pytest.mark.parametrize("make", [np.random.default_rng, np.random.RandomState])
def test_traced_parameters_are_numpys_stream_and_differentiable(make):
    """normal(mu, sigma), uniform(lo, hi), exponential(scale) with traced parameters: the
    values of NumPy's draws (loc + scale * standard draw), the derivatives in the
    parameters against central differences of the eager function, reseeded."""
    def f(p, r):
        a = r.normal(p[:2], p[2])
        b = r.uniform(p[0], p[1] + 2.0, size=(2, 2))
        c = r.exponential(p[3])
        return np.sum(a * a) + np.sum(np.sin(b)) + c * p[0]

    p = np.array([0.4, -0.3, 1.5, 0.8])
    value = dg.jit(f)(p, make(3))
    assert value == f(p, make(3))
    g = dg.grad(f)(p, make(3))
    h = 1e-6
    fd = [(f(p + h * e, make(3)) - f(p - h * e, make(3))) / (2 * h) for e in np.eye(4)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_a_generator_argument_is_drawn_from_at_call_time_without_tracing_again():
    captured = np.random.default_rng(1)

    def f(x, r):
        return np.sum(x * r.normal(size=3)) + np.sum(captured.uniform(size=2))

    g = dg.jit(f)
    dg.clear_cache()
    for seed in (5, 6, 5):
        want = np.sum(X * np.random.default_rng(seed).normal(size=3))
        before = captured.bit_generator.state
        got = g(X, np.random.default_rng(seed))
        captured.bit_generator.state = before
        assert got == want + np.sum(captured.uniform(size=2))
    assert dg.cache_info()["misses"] == 1


RNG = np.random.default_rng(0)


def test_a_replaced_global_generator_is_drawn_from():
    global RNG

    def f(x):
        return x * RNG.normal()

    g = dg.grad(f)
    RNG = np.random.default_rng(7)
    assert g(1.0) == np.random.default_rng(7).normal()
    RNG = np.random.default_rng(8)
    assert g(1.0) == np.random.default_rng(8).normal()


def test_draws_inside_jit_of_a_transform_and_linearize():
    """An inlined transform's draws are draws of the enclosing program; linearize's linear
    map is the derivative at the draws of its value."""
    def f(x):
        return np.sum(np.sin(x) * np.random.normal(size=3))

    np.random.seed(2)
    got = [dg.jit(lambda x: 2 * dg.grad(f)(x))(X) for _ in range(2)]
    np.random.seed(2)
    for g in got:
        np.testing.assert_allclose(g, 2 * np.cos(X) * np.random.normal(size=3), rtol=1e-14)
    np.random.seed(3)
    y, f_jvp = dg.linearize(f, X)
    np.random.seed(3)
    z = np.random.normal(size=3)
    assert y == np.sum(np.sin(X) * z)
    np.testing.assert_allclose([f_jvp(V), f_jvp(V)], [np.sum(np.cos(X) * z * V)] * 2)


def test_a_generator_passed_on_to_an_inner_transform():
    def inner(r, x):
        return np.sum(np.sin(x) * r.normal(size=3))

    def outer(x, r):
        return dg.grad(inner, argnums=1)(r, x) + r.uniform()

    got = [dg.jit(outer)(X, np.random.default_rng(s)) for s in (1, 2)]
    for s, g in zip((1, 2), got):
        r = np.random.default_rng(s)
        np.testing.assert_allclose(g, np.cos(X) * r.normal(size=3) + r.uniform(), rtol=1e-14)


def test_seeded_generators_made_inside_give_the_same_numbers_at_every_call():
    def f(mu):  # eager: a new generator, seeded alike, at every call
        np.random.seed(4)
        z = np.random.default_rng(9).normal(mu, 2.0)
        return np.sum(z ** 2) + np.random.normal()

    g = dg.grad(f)
    np.testing.assert_allclose(g(X), g(X))
    np.random.seed(0)
    z = np.random.default_rng(9).normal(X, 2.0)
    np.testing.assert_allclose(g(X), 2 * z, rtol=1e-14)
    assert np.random.normal() == (np.random.seed(4), np.random.normal(),
                                  np.random.normal())[2]


def test_isinstance_of_a_generator_holds_inside():
    rng = np.random.default_rng(0)
    seen = []

    def f(x, r):
        seen.append((isinstance(r, np.random.Generator), isinstance(rng, np.random.Generator)))
        return x

    dg.jit(f)(X, rng)
    assert seen == [(True, True)]


class _Model:
    def __init__(self):
        self.rng = np.random.default_rng(0)
        self.held = {"rng": np.random.default_rng(0)}

    def loss(self, x):
        return np.sum(x * self.rng.normal(size=3))

    def loss_of_held(self, x):
        return np.sum(x * self.held["rng"].normal(size=3))


PARAMS = {"scale": 2.0, "rng": np.random.default_rng(0)}


def test_a_generator_held_in_a_dict_is_drawn_again_at_every_call():
    """As one reached by its name (the dict is rebound as a tuple is)."""
    f = lambda x: np.sum(x * PARAMS["rng"].normal(size=3)) * PARAMS["scale"]
    PARAMS["rng"] = np.random.default_rng(0)
    traced = [dg.grad(f)(X) for _ in range(2)]
    PARAMS["rng"] = np.random.default_rng(0)
    eager = [2.0 * PARAMS["rng"].normal(size=3) for _ in range(2)]
    np.testing.assert_array_equal(traced, eager)


def test_a_generator_held_by_an_attribute_is_drawn_again_at_every_call():
    """A method's ``self.rng``, as one reached by its name (it was refused)."""
    model = _Model()
    traced = [dg.grad(model.loss)(X) for _ in range(3)]
    twin = np.random.default_rng(0)
    np.testing.assert_array_equal(traced, [twin.normal(size=3) for _ in range(3)])


def test_draws_that_dualgpu_cannot_see_are_refused():
    """A generator in a container held by an attribute, or the global state drawn by a
    library: their draws would be constants of the program."""
    with pytest.raises(dg.RandomInTraceError, match="self.held"):
        dg.grad(_Model().loss_of_held)(X)
    sp = pytest.importorskip("scipy.sparse")
    with pytest.raises(dg.RandomInTraceError, match="global random state"):
        dg.grad(lambda x: np.sum(x) * sp.random(3, 3, density=0.5).sum())(X)
    with pytest.raises(dg.RandomInTraceError, match="nested trace"):
        dg.jit(dg.vmap(lambda x: x * np.random.normal()))(np.ones((2, 3)))


def _drawers(seed):
    """Ways a function reaches draws that the tracing namespace may not see, each with the
    numbers its eager calls draw: (transform, function, arguments, eager draws of a call)."""
    make = np.random.default_rng
    held = {"draw": make(seed).standard_normal}
    partial = functools.partial(make(seed).normal, 0.0)
    nested = {"a": ({"rng": make(seed)},)}
    twin = make(seed)
    return [
        (dg.jit, lambda x: x + held["draw"](3), (X,), lambda: twin.standard_normal(3)),
        (dg.grad, lambda x: np.sum(x * partial(size=3)), (X,), lambda: twin.normal(0.0, size=3)),
        (dg.jit, lambda x, d: x + d(size=3), (X, make(seed).normal), lambda: twin.normal(size=3)),
        (dg.grad, lambda x, d: np.sum(x * d(size=3)),
         (X, functools.partial(make(seed).normal, 1.0)), lambda: twin.normal(1.0, size=3)),
        (dg.jit, lambda x: x + nested["a"][0]["rng"].normal(size=3), (X,),
         lambda: twin.normal(size=3)),
    ]


@pytest.mark.parametrize("case", range(5), ids=["dict-of-method", "partial", "method-argument",
                                                 "partial-argument", "nested"])
def test_draws_through_a_generators_method_or_a_partial_are_drawn_or_refused(case):
    """The draws of a generator's bound method or a partial of one (kept in a dict, passed
    as an argument), or of a generator nested in containers: each call draws what the eager
    call draws, or the trace is refused. They were constants of the program (the same
    numbers at every call)."""
    transform, f, args, eager = _drawers(10 + case)[case]
    t = transform(f)
    try:
        calls = [t(*args) for _ in range(3)]
    except dg.RandomInTraceError as e:
        assert "drew random numbers from" in str(e)
        return
    for got in calls:
        want = eager()
        np.testing.assert_allclose(got, X + want if transform is dg.jit else want)
