"""dg.vmap: every primitive batched against a Python loop, the layouts the rules must get
right (advanced indexing, matmul and solve ranks, sparse products), pytrees, None axes,
errors, compositions with the other transforms, and the cached-call invariant.

The registry table is the one of tests/ops/test_registry.py: each entry draws a function and
arguments inside its domain; the examples of a batch are the drawn arguments scaled by
distinct positive factors (which keeps every domain, ties and positive definiteness).
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_registry import SPECS

import dualgpu as dg
from dualgpu.frontend import numpy as dnp
from dualgpu.frontend.scipy.sparse import Pattern
from dualgpu.ops.sparse import spmm
from dualgpu.rules import batching_rules
from dualgpu.transforms.vmap import batch_graph

SCALES = (1.0, 1.07, 0.93)
_SETTINGS = dict(deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                        HealthCheck.data_too_large])


def loop(f, examples):
    """The reference: f on each example, results stacked (pytrees leaf by leaf)."""
    outs = [f(*args) for args in examples]
    leaves = [dg.tree.flatten(o)[0] for o in outs]
    tree = dg.tree.structure(outs[0])
    return dg.tree.unflatten(tree, [np.stack([np.asarray(lv[k]) for lv in leaves])
                                    for k in range(len(leaves[0]))])


def assert_tree_close(got, want, rtol=1e-10, atol=1e-12):
    g, tg = dg.tree.flatten(got)
    w, tw = dg.tree.flatten(want)
    assert tg == tw, (tg, tw)
    for a, b in zip(g, w):
        assert np.shape(a) == np.shape(b), (np.shape(a), np.shape(b))
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def _refuse(eqn, *args):
    raise AssertionError(f"{eqn.prim.name} was batched by the per-example loop")


@pytest.fixture
def no_loop(monkeypatch):
    """Fail when a built-in op falls back to the per-example loop."""
    monkeypatch.setattr(batching_rules, "loop_rule", _refuse)


# ------------------------------------------------------------------------------ the registry
@pytest.mark.parametrize("name", sorted(SPECS))
@settings(max_examples=10, **_SETTINGS)
@given(data=st.data())
def test_vmap_matches_a_loop(name, data):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batching_rules, "loop_rule", _refuse)
        _check_against_loop(name, data)


def _check_against_loop(name, data):
    f, args = SPECS[name].build(data, np.float64)
    floats = [i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f"]
    mode = data.draw(st.sampled_from(["all", "one"]))
    mapped = floats if mode == "all" else [data.draw(st.sampled_from(floats))]
    at_end = data.draw(st.booleans())
    examples = [tuple(a * c if i in mapped else a for i, a in enumerate(args))
                for c in SCALES]
    batched = []
    for i, a in enumerate(args):
        if i not in mapped:
            batched.append(a)
            continue
        stacked = np.stack([ex[i] for ex in examples])
        batched.append(np.moveaxis(stacked, 0, -1) if at_end else stacked)
    in_axes = tuple((-1 if at_end else 0) if i in mapped else None for i in range(len(args)))
    got = dg.vmap(f, in_axes=in_axes)(*batched)
    assert_tree_close(got, loop(f, examples))


# ------------------------------------------------------------------------------ layouts
KEYS = [
    (slice(None, None, -1),), (1, slice(None)), (Ellipsis, None, 0),
    (np.array([0, 2, 2]),), (slice(None), np.array([[1, 0], [2, 2]])),
    (np.array([0, 1]), slice(None), np.array([2, 0])),          # separated: dims go first
    (np.array([0, 1]), None, np.array([2, 0])),                  # None separates too
    (slice(1, None), np.array([0, 1]), np.array([2, 0])),        # adjacent, not first
    (0, slice(None), np.array([1, 1, 0])),                       # an int is advanced
    (np.array([[True, False, True], [False, True, True], [True, True, False]]),),
]


@pytest.mark.parametrize("key", KEYS, ids=range(len(KEYS)))
def test_getitem_layouts(key, no_loop):
    x = np.arange(3 * 3 * 3.0).reshape(3, 3, 3) * 0.1
    X = np.stack([x * c for c in SCALES])
    f = lambda x: x[key] * 2.0  # noqa: E731
    assert_tree_close(dg.vmap(f)(X), loop(f, [(x * c,) for c in SCALES]))
    g = dg.grad(lambda x: np.sum(np.sin(x[key])))
    assert_tree_close(dg.vmap(g)(X), loop(g, [(x * c,) for c in SCALES]))


@pytest.mark.parametrize("which", ["first", "middle", "two"])
def test_batched_index_arrays(which, no_loop):
    """Index arrays that are mapped (gathers and their transposes, the scatters)."""
    x = np.arange(4 * 5.0).reshape(4, 5)
    idx = np.array([[0, 3, 3], [1, 2, 0], [3, 3, 1]])
    f = {"first": lambda x, i: x[i] ** 2,
         "middle": lambda x, i: x[1:, i] ** 2,
         "two": lambda x, i: x[i, i + 1] ** 2}[which]
    for x_axis in (0, None):
        X = np.stack([x * c for c in SCALES]) if x_axis == 0 else x
        ex = [((x * c if x_axis == 0 else x), i) for c, i in zip(SCALES, idx)]
        assert_tree_close(dg.vmap(f, in_axes=(x_axis, 0))(X, idx), loop(f, ex))
        g = dg.grad(lambda x, i: np.sum(np.cos(f(x, i))))
        assert_tree_close(dg.vmap(g, in_axes=(x_axis, 0))(X, idx), loop(g, ex))


def _shape(rank, batch):
    return {1: (3,), 2: (2, 3), 3: batch + (2, 3)}[rank]


@pytest.mark.parametrize("ra", [1, 2, 3])
@pytest.mark.parametrize("rb", [1, 2, 3])
@pytest.mark.parametrize("mapped", [(0, None), (None, 0), (0, 0)])
def test_matmul_ranks(ra, rb, mapped, no_loop):
    rng = np.random.default_rng(ra * 10 + rb)
    a = rng.standard_normal(_shape(ra, (2,)))
    b_shape = {1: (3,), 2: (3, 4), 3: (1, 3, 4)}[rb]
    b = rng.standard_normal(b_shape)
    args = (a, b)
    examples = [tuple(x * c if m is not None else x for x, m in zip(args, mapped))
                for c in SCALES]
    batched = [np.stack([e[k] for e in examples]) if m is not None else args[k]
               for k, m in enumerate(mapped)]
    got = dg.vmap(np.matmul, in_axes=mapped)(*batched)
    assert_tree_close(got, loop(np.matmul, examples))


@pytest.mark.parametrize("a_batch", [(), (2,)])
@pytest.mark.parametrize("b_kind", ["vector", "matrix", "stack"])
@pytest.mark.parametrize("mapped", [(0, None), (None, 0), (0, 0)])
def test_solve_ranks(a_batch, b_kind, mapped, no_loop):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(a_batch + (3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal({"vector": (3,), "matrix": (3, 2), "stack": (2, 3, 2)}[b_kind])
    f = np.linalg.solve
    examples = [tuple(x * c if m is not None else x for x, m in zip((a, b), mapped))
                for c in SCALES]
    batched = [np.stack([e[k] for e in examples]) if m is not None else (a, b)[k]
               for k, m in enumerate(mapped)]
    assert_tree_close(dg.vmap(f, in_axes=mapped)(*batched), loop(f, examples))


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("transpose", [False, True])
def test_sparse_products_with_mapped_values(fmt, transpose, no_loop):
    """A batch of matrices of one pattern (values mapped), times shared or mapped x."""
    a = sp.random(4, 3, density=0.6, format=fmt, random_state=1)
    if fmt == "coo":
        a.sum_duplicates()
    x = np.random.default_rng(0).standard_normal((4 if transpose else 3, 2))
    p = Pattern.of(a)

    def f(values, x):
        y = spmm(values, x, p.ind, p.ptr, fmt=p.fmt, shape=p.shape, transpose=transpose)
        return np.sum(np.tanh(y) ** 2)

    data = np.stack([a.data * c for c in SCALES])
    for mapped in [(0, None), (0, 0), (None, 0)]:
        X = np.stack([x * c for c in SCALES]) if mapped[1] == 0 else x
        D = data if mapped[0] == 0 else a.data
        ex = [(D[i] if mapped[0] == 0 else D, X[i] if mapped[1] == 0 else X)
              for i in range(3)]
        for fn in (f, dg.grad(f, argnums=(0, 1))):
            assert_tree_close(dg.vmap(fn, in_axes=mapped)(D, X), loop(fn, ex))


def test_sparse_matrices_closed_over_or_shared(no_loop):
    a = sp.random(5, 4, density=0.5, format="csr", random_state=2)
    f = dg.grad(lambda x: np.sum(np.tanh(x @ a.T) ** 2))
    X = np.random.default_rng(1).standard_normal((3, 6, 4))
    assert_tree_close(dg.vmap(f)(X), loop(f, [(x,) for x in X]))
    g = dg.grad(lambda a, x: np.sum(np.tanh(a @ x) ** 2), argnums=1)
    assert_tree_close(dg.vmap(g, in_axes=(None, 0))(a, X[:, 0]),
                      loop(g, [(a, x) for x in X[:, 0]]))


# ------------------------------------------------------------------------------ semantics
def test_pytrees_none_axes_and_out_axes():
    def f(params, x, scale):
        h = np.tanh(x @ params["W"] + params["b"]) * scale
        return {"h": h, "s": (np.sum(h), params["b"])}

    rng = np.random.default_rng(0)
    params = {"W": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
    X = rng.standard_normal((3, 5, 3))  # examples along axis 1
    got = dg.vmap(f, in_axes=(None, 1, None), out_axes={"h": -1, "s": (0, None)})(
        params, X, 0.5)
    want = loop(lambda x: f(params, x, 0.5), [(X[:, i],) for i in range(5)])
    assert_tree_close(got["h"], np.moveaxis(want["h"], 0, -1))
    assert_tree_close(got["s"][0], want["s"][0])
    assert_tree_close(got["s"][1], params["b"])  # not mapped: returned once
    # a dict entry of in_axes for a dict argument; unbatched outputs broadcast
    Ws = np.stack([params["W"] * c for c in SCALES])
    got = dg.vmap(lambda p, x: (np.sum(x @ p["W"] + p["b"]), 2.0),
                  in_axes=({"W": 0, "b": None}, None))(
        {"W": Ws, "b": params["b"]}, X[:, 0])
    assert got[0].shape == (3,) and np.array_equal(got[1], np.full(3, 2.0))


def test_keyword_arguments_are_mapped_along_axis_0():
    f = dg.vmap(lambda x, *, y: x * y, in_axes=(None,))
    np.testing.assert_allclose(f(np.ones(2), y=np.arange(3.0)[:, None]),
                               np.arange(3.0)[:, None] * np.ones(2))


def test_errors():
    x, y = np.ones((3, 2)), np.ones((4, 2))
    with pytest.raises(dg.ShapeMismatchError,
                       match=r"(?s)inconsistent sizes.*size 3: axis 0.*size 4: axis 0"):
        dg.vmap(np.add)(x, y)
    with pytest.raises(dg.DualgpuError, match="out of range"):
        dg.vmap(np.sin, in_axes=2)(x)
    with pytest.raises(dg.DualgpuError, match=r"len\(in_axes\)=1, len\(args\)=2"):
        dg.vmap(np.add, in_axes=(0,))(x, x)
    with pytest.raises(dg.DualgpuError, match="argument x2 is mapped.*float"):
        dg.vmap(np.multiply)(x, 2.0)
    with pytest.raises(dg.DualgpuError, match="no argument is mapped"):
        dg.vmap(np.sin, in_axes=None)(x)
    with pytest.raises(dg.DualgpuError, match="out_axes is None"):
        dg.vmap(np.sin, out_axes=None)(x)
    with pytest.raises(dg.DualgpuError, match=r"in_axes\[0\]"):
        dg.vmap(lambda p: p[0], in_axes=((0, 0, 0),))((x, x))
    with pytest.raises(dg.DualgpuError, match="in_axes must be"):
        dg.vmap(np.sin, in_axes="0")
    with pytest.raises(dg.DualgpuError, match="0-d"):
        dg.vmap(np.sin)(np.ones(()))
    np.testing.assert_allclose(dg.vmap(np.multiply, in_axes=(0, None))(x, 2.0), 2 * x)


def test_custom_ops_are_batched_as_one_op_or_run_per_example():
    cube = dg.custom_op("vmap_test_cube", lambda xp, x: x ** 3,
                        vjp=lambda g, p, ans: (3 * p[0] ** 2 * g,))
    square = dg.custom_op("vmap_test_square", lambda xp, x: x * x,
                          vjp=lambda g, p, ans: (2 * p[0] * g,), c="({0} * {0})")
    on_values = dg.custom_op("vmap_test_on_values", lambda xp, x: x * float(x[0]),
                             shape=lambda a: a)  # a body that cannot be traced: the loop
    X = np.arange(6.0).reshape(3, 2)
    g = dg.trace(dg.vmap(lambda x: cube(x) + square(x) + on_values(x)), X)
    counts = g.primitive_counts()  # cube: one batched op (api/custom_batching.py)
    assert "vmap_test_cube" not in counts and counts["vmap_test_square"] == 1
    assert sum(n for p, n in counts.items() if p.startswith("vmap_test_cube_vmap")) == 1
    assert counts["vmap_test_on_values"] == 3
    np.testing.assert_allclose(dg.vmap(on_values)(X), X * X[:, :1])
    np.testing.assert_allclose(dg.vmap(lambda x: cube(x) + square(x))(X), X ** 3 + X ** 2)
    np.testing.assert_allclose(dg.vmap(dg.grad(lambda x: np.sum(cube(x))))(X), 3 * X ** 2)


def test_batch_graph_directly():
    g = dg.trace(lambda x, w: np.sum(np.sin(x) @ w), np.ones(3), np.ones((3, 2)))
    b, out_dims = batch_graph(g, [0, None], 5)
    assert [tuple(v.shape) for v in b.inputs] == [(5, 3), (3, 2)] and out_dims == [0]
    assert b.primitive_counts()["matmul"] == 1
    b.validate()


# ------------------------------------------------------------------------------ compositions
def mlp_loss(w, X, y):
    W1, W2 = w[:12].reshape(4, 3), w[12:].reshape(3, 1)
    return np.sum((dg.nn.sigmoid(np.tanh(X @ W1) @ W2)[:, 0] - y) ** 2)


@pytest.fixture
def mlp():
    rng = np.random.default_rng(0)
    return rng.standard_normal(15), rng.standard_normal((6, 4)), rng.standard_normal(6)


def test_vmap_of_hvp_is_one_program_as_wide_as_the_directions(mlp, no_loop):
    w, X, y = mlp
    V = np.random.default_rng(1).standard_normal((7, 15))
    h = dg.vmap(dg.hvp(mlp_loss), in_axes=(None, None, None, 0))
    got = h(w, X, y, V)
    want = np.stack([dg.hvp(mlp_loss)(w, X, y, v) for v in V])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    one = dg.trace(dg.hvp(mlp_loss), w, X, y, V[0]).primitive_counts()["matmul"]
    wide = dg.trace(h, w, X, y, V).primitive_counts()["matmul"]
    assert wide <= one  # no GEMM per direction: each product of the HVP runs once, 7 wide
    H = dg.hessian(mlp_loss)(w, X, y)
    np.testing.assert_allclose(got, V @ H, rtol=1e-9, atol=1e-11)


def test_vmap_of_grad_and_grad_of_vmap(mlp):
    w, X, y = mlp
    Ws = np.stack([w * c for c in SCALES])
    g = dg.vmap(dg.grad(mlp_loss), in_axes=(0, None, None))(Ws, X, y)
    assert_tree_close(g, np.stack([dg.grad(mlp_loss)(wi, X, y) for wi in Ws]))

    def per_row(w, X):  # a vmap inside the differentiated function, w closed over
        return np.sum(dg.vmap(lambda x: np.tanh(x @ w[:4]) ** 2)(X))

    gw = dg.grad(per_row)(w, X)
    ref = dg.grad(lambda w, X: np.sum(np.tanh(X @ w[:4]) ** 2))(w, X)
    np.testing.assert_allclose(gw, ref, rtol=1e-12)
    dg.testing.check_grads(per_row, (w, X), order=2)


def test_jit_vmap_nested_vmap_and_source():
    f = lambda x, y: np.sum(np.sin(x) * y)  # noqa: E731
    X, Y = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    inner = dg.vmap(f, in_axes=(0, None))
    nested = dg.vmap(inner, in_axes=(None, 0))  # nested[i, j] = f(X[j], Y[i])
    want = np.array([[f(x, y) for x in X] for y in Y])
    np.testing.assert_allclose(nested(X, Y), want, rtol=1e-12)
    np.testing.assert_allclose(dg.jit(nested)(X, Y), want, rtol=1e-12)
    assert "def " in dg.source(nested, X, Y)
    print(dg.trace(nested, X, Y))


def test_hessian_operator_matmat_is_one_program(mlp):
    w, X, y = mlp
    H = dg.HessianOperator(mlp_loss, w, X, y)
    V = np.random.default_rng(2).standard_normal((15, 4))
    got = H @ V
    np.testing.assert_allclose(got, dg.hessian(mlp_loss)(w, X, y) @ V, rtol=1e-9,
                               atol=1e-11)
    assert H.nprod == 4


# ------------------------------------------------------------------------------ cached calls
def test_cached_calls_equal_fresh_builds():
    f = lambda x, y: np.tanh(x) * y + np.sum(x)  # noqa: E731
    rng = np.random.default_rng(5)
    vf = dg.vmap(f, in_axes=(0, None))
    for _ in range(3):  # new data, same signature: the cached program
        X, y = rng.standard_normal((4, 3)), rng.standard_normal(3)
        want = dg.vmap(lambda x, y: np.tanh(x) * y + np.sum(x), in_axes=(0, None))(X, y)
        np.testing.assert_array_equal(vf(X, y), want)
        np.testing.assert_allclose(vf(X, y), loop(f, [(x, y) for x in X]), rtol=1e-13)
    # aliased arguments, and the same shapes mapped differently
    S = rng.standard_normal((3, 3))
    g = lambda a, b: a @ b  # noqa: E731
    np.testing.assert_allclose(dg.vmap(g)(S, S), np.stack([s @ s for s in S]))
    np.testing.assert_allclose(dg.vmap(g)(S, S.copy()), np.stack([s @ s for s in S]))
    np.testing.assert_allclose(dg.vmap(g, in_axes=(0, None))(S, S), S @ S)
    np.testing.assert_allclose(dg.vmap(g, in_axes=(1, None))(S, S), S.T @ S)
    np.testing.assert_allclose(dg.vmap(g, in_axes=(0, 1))(S, S),
                               np.stack([S[i] @ S[:, i] for i in range(3)]))


def test_reference_semantics_of_dnp_loop_helper():
    """The loop reference itself (the table's oracle) agrees with NumPy broadcasting."""
    x = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(loop(dnp.sin, [(r,) for r in x]), np.sin(x))
