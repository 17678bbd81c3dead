"""The forward biharmonic (dualgpu/transforms/biharmonic.py) against nested forward
Laplacians, nested Hessians and closed forms, float64 and float32, batched and not."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.core.interpret import eval_graph
from dualgpu.transforms.biharmonic import NoForwardRule, biharmonic_graph, state_sizes

RNG = np.random.default_rng(3)
W = RNG.standard_normal((3, 5)) / 2
V = RNG.standard_normal((5, 4)) / 2


def forward(f, *args, wrt=None, batch_axes=None):
    g = dg.trace(f, *args)
    return np.asarray(eval_graph(biharmonic_graph(g, wrt, batch_axes=batch_axes),
                                 list(args))[0])


def nested(f, *args, batch_axes=None):
    lap = dg.laplacian(f, batch_axes=batch_axes)
    return dg.laplacian(lap, batch_axes=batch_axes)(*args)


PROGRAMS = {
    "quartic": lambda x: np.sum(x ** 4),
    "tanh*sin": lambda x: np.sum(np.tanh(x) * np.sin(x)),
    "exp of square": lambda x: np.exp(np.sum(x * x) / 4),
    "layers": lambda x: np.sum(np.tanh(np.tanh(x @ W) @ V)),
    "sigmoid+log": lambda x: np.sum(1 / (1 + np.exp(-x))) + np.log(np.sum(x ** 2)),
    "dependent matmul": lambda x: np.sum(np.outer(x, x) @ np.sin(x)),
    "einsum": lambda x: np.einsum("ij,j->", np.outer(x, x), np.cos(x)),
    "sqrt and power": lambda x: np.sum(np.sqrt(1 + x ** 2) ** 3),
    "broadcast": lambda x: np.sum(np.sin(x[:, None] * np.arange(1.0, 4.0)) * x[None, :]),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_against_nested_laplacians(name):
    f = PROGRAMS[name]
    x = RNG.standard_normal(3)
    np.testing.assert_allclose(forward(f, x), nested(f, x), rtol=1e-10, atol=1e-10)


def test_against_nested_hessians():
    f = PROGRAMS["layers"]
    x = RNG.standard_normal(3)
    want = np.trace(dg.hessian(lambda y: np.trace(dg.hessian(f)(y)))(x))
    np.testing.assert_allclose(forward(f, x), want, rtol=1e-10)


@pytest.mark.parametrize("D", [1, 2, 5])
def test_closed_form(D):
    """Δ²|x|⁴ = 8 D (D + 2) in D dimensions."""
    x = RNG.standard_normal(D)
    np.testing.assert_allclose(forward(lambda x: np.sum(x * x) ** 2, x), 8 * D * (D + 2))


def mlp(X, *params):
    h = X
    for i in range(0, len(params) - 2, 2):
        h = np.tanh(h @ params[i] + params[i + 1])
    return (h @ params[-2] + params[-1])[:, 0]


def mlp_args(dtype, D=3, points=4):
    sizes = (D, 6, 6, 1)
    params = []
    for m, n in zip(sizes[:-1], sizes[1:]):
        params += [RNG.standard_normal((m, n)) / np.sqrt(m), 0.1 * RNG.standard_normal(n)]
    return [a.astype(dtype) for a in [RNG.standard_normal((points, D))] + params]


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-10), (np.float32, 2e-4)])
def test_per_point_network(dtype, rtol):
    args = mlp_args(dtype)
    wrt = [True] + [False] * (len(args) - 1)
    got = forward(mlp, *args, wrt=wrt, batch_axes=(0,))
    assert got.dtype == dtype and got.shape == (4,)
    want = nested(mlp, *[a.astype(np.float64) for a in args], batch_axes=0)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def test_two_inputs_and_outputs():
    def f(x, y):
        return np.sum(np.sin(x)) * np.sum(y ** 2), np.tanh(x) * np.sum(y)
    x, y = RNG.standard_normal(2), RNG.standard_normal(3)
    g = dg.trace(f, x, y)
    got = eval_graph(biharmonic_graph(g), [x, y])

    def joint(z, k):
        return f(z[:2], z[2:])[k]
    z = np.concatenate([x, y])
    np.testing.assert_allclose(got[0], nested(lambda z: joint(z, 0), z), rtol=1e-10)
    np.testing.assert_allclose(got[1], nested(lambda z: joint(z, 1), z), rtol=1e-10)


@pytest.mark.parametrize("f", [lambda x: np.sum(np.sort(x) ** 3),
                               lambda x: np.max(np.sin(x)),
                               lambda x: np.sum(x / (1 + x ** 2)),
                               lambda x: np.einsum("i,ij,j->", np.cos(x), np.outer(x, x), x)])
def test_ops_without_a_rule_are_refused(f):
    with pytest.raises(NoForwardRule):
        biharmonic_graph(dg.trace(f, RNG.standard_normal(3)))


def test_state_sizes():
    assert state_sizes(5) == {"forward": 28, "nested": 42}


def test_dg_biharmonic_runs_the_forward_pass_or_falls_back():
    x = RNG.standard_normal(3)
    f, sort = PROGRAMS["layers"], (lambda x: np.sum(np.sort(x) ** 3 * np.sin(x)))
    assert dg.trace(dg.biharmonic(f), x).name.startswith("bih_")           # one pass
    assert not dg.trace(dg.biharmonic(sort), x).name.startswith("bih_")    # nested
    assert not dg.trace(dg.biharmonic(f, chunk_size=2), x).name.startswith("bih_")
    for fn in (f, sort):
        want = nested(fn, x)
        np.testing.assert_allclose(dg.biharmonic(fn)(x), want, rtol=1e-10)
        np.testing.assert_allclose(dg.biharmonic(fn, chunk_size=2)(x), want, rtol=1e-10)
        np.testing.assert_allclose(dg.biharmonic(fn, memory_budget=1 << 20)(x), want,
                                   rtol=1e-10)


# ------------------------------------------------- an op's derivatives, derived once per build
def _network(widths):
    ws = [RNG.standard_normal((a, b)) / 2 for a, b in zip((3,) + widths, widths)]

    def net(x):
        for w in ws:
            x = np.tanh(x @ w)
        return np.sum(x, axis=-1)
    return net


def test_a_unary_ops_derivatives_are_derived_once_whatever_its_sites_shapes(monkeypatch):
    """tanh's partial is traced (and differentiated to fourth order) once per build, not at
    each layer: three layers of three widths cost what one layer costs."""
    from dualgpu.ops.elementwise import tanh

    calls = []

    def counted(x, ans, partial=tanh.partials[0]):
        calls.append(x)
        return partial(x, ans)

    monkeypatch.setattr(tanh, "partials", (counted,))
    per_build = []
    for widths in [(4,), (4, 5, 6)]:
        calls.clear()
        biharmonic_graph(dg.trace(_network(widths), np.ones((2, 3))), batch_axes=[0])
        per_build.append(len(calls))
    assert per_build[0] == per_build[1] > 0


@pytest.fixture
def probe_sin():
    """``sin`` whose partial reshapes its operand (to ``(-1,)`` and back): its derivatives
    name a shape, so they are derived at each operand shape."""
    from dualgpu.core.primitives import REGISTRY
    from dualgpu.frontend import numpy as dnp
    from dualgpu.ops.elementwise import ELEMENTWISE, cos, elementwise

    prim = elementwise("biharmonic_probe_sin", None, 1, c="sin({0})", result="float",
                       impl=lambda xp, x: xp.sin(x),
                       partials=(lambda x, ans: cos(dnp.reshape(dnp.reshape(x, (-1,)),
                                                                x.shape)),))
    yield prim
    REGISTRY.pop(prim.name, None)
    ELEMENTWISE.pop(prim.name, None)


def test_derivatives_that_name_a_shape_are_derived_at_each_shape(probe_sin):
    w2 = RNG.standard_normal((5, 2))

    def f(sin):
        return lambda x: np.sum(sin(sin(x @ W) @ w2), axis=-1)   # sites of two shapes

    x = RNG.standard_normal((4, 3))
    np.testing.assert_allclose(forward(f(probe_sin), x, batch_axes=[0]),
                               forward(f(np.sin), x, batch_axes=[0]), rtol=1e-12)
