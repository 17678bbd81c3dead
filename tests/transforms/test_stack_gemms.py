"""Issue 12, item 4: the GEMM-stacking pass. The stacked program equals the unstacked one up
to float rounding (float64, on fuzzed programs and on the MLP and Dense scenarios), has fewer
products, and runs through the Python and CUDA code generators and the fusion emulator."""
from __future__ import annotations

import fuzz_programs as fp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dualgpu as dg
from benchmarks.mlp import TINY, Dims, make_inputs, make_loss, reference  # noqa: E402
from dualgpu.codegen.cuda import region_kernels
from dualgpu.core.interpret import eval_graph
from dualgpu.fusion import emulate, plan_graph
from dualgpu.ops.products import matmul
from dualgpu.runtime.executor import config
from dualgpu.transforms import hvp_graph, stack_gemms
from dualgpu.transforms.stack_gemms import stack_shared, stack_sums

SETTINGS = dict(deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))


def n_products(graph) -> int:
    return sum(e.prim is matmul for e in graph.eqns)


def assert_same(graph, stacked, args, rtol=1e-12):
    for got, want in zip(eval_graph(stacked, args), eval_graph(graph, args)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol,
                                   atol=1e-13 * (1 + float(np.max(np.abs(want)))))


@pytest.fixture(autouse=True)
def _restore():
    yield
    config["stack_gemms"] = "auto"


# ------------------------------------------------------------------------------ rewrites
def test_shared_left_operand():
    def f(x, w, v):
        return x @ w, x @ v

    x, w, v = np.ones((4, 3)), np.ones((3, 2)), np.ones((3, 5))
    g = dg.trace(f, x, w, v)
    s = stack_gemms(g)
    assert n_products(s) == 1
    assert_same(g, s, [x, w * 2, v * 3])


def test_shared_right_operand():
    def f(a, c, w):
        return np.tanh(a @ w), np.sin(c @ w)

    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s) for s in [(4, 3), (6, 3), (3, 2)]]
    g = dg.trace(f, *args)
    s = stack_gemms(g)
    assert n_products(s) == 1
    assert_same(g, s, args)


def test_sum_of_products_and_chains():
    def f(a, b, c, d, e, k):
        return a @ b + c @ d + e @ k

    rng = np.random.default_rng(1)
    shapes = [(4, 3), (3, 5), (4, 2), (2, 5), (4, 6), (6, 5)]
    args = [rng.standard_normal(s) for s in shapes]
    g = dg.trace(f, *args)
    s = stack_sums(g)
    assert n_products(s) == 1 and not any(e.prim.name == "add" for e in s.eqns)
    assert_same(g, s, args)


def test_sum_of_transposed_products_stays_a_view():
    """``aᵀ·b + cᵀ·d`` concatenates ``a`` and ``c`` and transposes the result."""
    def f(a, b, c, d):
        return a.T @ b + c.T @ d

    rng = np.random.default_rng(2)
    args = [rng.standard_normal(s) for s in [(3, 4), (3, 5), (2, 4), (2, 5)]]
    g = dg.trace(f, *args)
    s = stack_gemms(g)
    names = [e.prim.name for e in s.eqns]
    assert names == ["concatenate", "transpose", "concatenate", "matmul"], names
    assert s.eqns[0].params["axis"] == 0
    assert_same(g, s, args)


def test_no_rewrite_where_it_is_not_allowed():
    def used_twice(a, b, c, d):
        p = a @ b
        return p + c @ d, p

    def dependent(x, w):
        y = x @ w
        return x @ np.tanh(w + (y.T @ x).T)  # x @ (...) needs x @ w first

    def broadcast_add(a, b, c, d):
        return a @ b + c @ d  # (4, 5) + (1, 5)

    def batched(a, b, c):
        return a @ b, a @ c

    rng = np.random.default_rng(3)
    cases = [
        (used_twice, [(4, 3), (3, 5), (4, 2), (2, 5)], 2),
        (dependent, [(4, 3), (3, 4)], 3),
        (broadcast_add, [(4, 3), (3, 5), (1, 2), (2, 5)], 2),
        (batched, [(2, 4, 3), (2, 3, 5), (2, 3, 5)], 2),
    ]
    for fn, shapes, products in cases:
        args = [rng.standard_normal(s) for s in shapes]
        g = dg.trace(fn, *args)
        s = stack_gemms(g)
        assert n_products(s) == products, fn.__name__
        assert_same(g, s, args)


def test_mixed_dtypes_are_left_alone():
    def f(x, w, v):
        return x @ w, x @ v

    x, w, v = np.ones((4, 3)), np.ones((3, 2)), np.ones((3, 2), dtype=np.float32)
    g = dg.trace(f, x, w, v)
    assert stack_shared(g) is g or n_products(stack_shared(g)) == 2


def test_unchanged_graph_is_returned_as_is():
    g = dg.trace(lambda x: np.sum(np.sin(x)), np.ones(3))
    assert stack_gemms(g) is g


# ------------------------------------------------------------------------------ scenarios
def _mlp_args(dims=TINY):
    return [a.astype(np.float64) for a in make_inputs(np, dims, 1)[0]]


def test_mlp_hvp_products_11_to_7():
    loss = make_loss(TINY)
    args = _mlp_args()
    main = dg.trace(loss, *args[:3])
    g = hvp_graph(main, [0], value=False, grads=False)
    s = hvp_graph(main, [0], value=False, grads=False, stack=True)
    assert (n_products(g), n_products(s)) == (11, 7)
    assert_same(g, s, args)
    _, hvp_ref = reference(np, TINY, *args)
    np.testing.assert_allclose(eval_graph(s, args)[0], hvp_ref, rtol=1e-11, atol=1e-15)


def test_mlp_through_the_api_with_stacking_on():
    config["stack_gemms"] = True
    loss = make_loss(TINY)
    args = _mlp_args()
    grad_ref, hvp_ref = reference(np, TINY, *args)
    assert n_products(dg.trace(dg.hvp(loss), *args)) == 7
    g, hv = dg.grad_and_hvp(loss)(*args)
    np.testing.assert_allclose(g, grad_ref, rtol=1e-11, atol=1e-15)
    np.testing.assert_allclose(hv, hvp_ref, rtol=1e-11, atol=1e-15)
    config["stack_gemms"] = False
    assert n_products(dg.trace(dg.hvp(loss), *args)) == 11


def test_auto_stacks_large_products_on_cupy_only_true_everywhere():
    """Measured (benchmarks/NOTES.md): with graph replay, stacking everything no longer pays
    on CuPy; widening a large product by small weight matrices is what "auto" keeps."""
    from dualgpu.api.export import CupyOnCpu as FakeCupy
    from dualgpu.backends import backend_of

    config["stack_gemms"] = "auto"
    assert config.stack_gemms_for(FakeCupy()) == "large"
    assert config.stack_gemms_for(backend_of([np.ones(1)])) is False
    config["stack_gemms"] = True
    assert config.stack_gemms_for(FakeCupy()) is True
    assert config.stack_gemms_for(backend_of([np.ones(1)])) is True
    with pytest.raises(dg.DualgpuError, match="stack_gemms"):
        config["stack_gemms"] = 1


def test_dense_scenario():
    from test_fusion import dense_loss

    rng = np.random.default_rng(4)
    p, X, Y, v = (rng.standard_normal(s) for s in [(11,), (4, 10), (4, 1), (11,)])
    main = dg.trace(dense_loss, p, X, Y)
    g = hvp_graph(main, [0])
    s = hvp_graph(main, [0], stack=True)
    assert n_products(s) <= n_products(g)
    assert_same(g, s, [p, X, Y, v])


def test_stacked_program_in_the_code_generators():
    """Python source, the fusion plan and CUDA text, and the plan's NumPy emulation."""
    dims = Dims(20, 16, 3, 8)
    loss = make_loss(dims)
    args = _mlp_args(dims)
    main = dg.trace(loss, *args[:3])
    s = hvp_graph(main, [0], value=False, grads=False, stack=True)
    config["stack_gemms"] = True
    src = dg.source(dg.hvp(loss), *args)
    assert "xp.concatenate(" in src and src.count(" @ ") == 7
    plan = plan_graph(s)
    text = str(plan)
    assert "concatenate" in text and "matmul" in text
    for region in plan.regions:
        assert region_kernels(region)
    _, hvp_ref = reference(np, dims, *args)
    np.testing.assert_allclose(emulate(plan, args)[0], hvp_ref, rtol=1e-11, atol=1e-15)


# ------------------------------------------------------------------------------ fuzzing
@st.composite
def product_programs(draw):
    """Random layered programs of 2-D products: shared operands, sums of products, and
    transposes, under a scalar loss (so that grad and hvp add more of each)."""
    n = draw(st.integers(2, 5))
    dims = [draw(st.integers(1, 5)) for _ in range(n + 1)]
    ops = [draw(st.sampled_from(["tanh", "sin", "square", "none"])) for _ in range(n)]
    transposed = [draw(st.booleans()) for _ in range(n)]
    seed = draw(st.integers(0, 2 ** 16))
    return dims, ops, transposed, seed


def _program(dims, ops, transposed):
    act = {"tanh": np.tanh, "sin": np.sin, "square": lambda t: t * t, "none": lambda t: t}

    def loss(x, *ws):
        h = x
        for w, op, tr in zip(ws, ops, transposed):
            z = h @ (w.T.T if not tr else w)
            h = act[op](z) + 0.5 * z
        return np.sum(h * h)

    shapes = [(3, dims[0])] + [(a, b) for a, b in zip(dims[:-1], dims[1:])]
    return loss, shapes


@settings(max_examples=40, **SETTINGS)
@given(product_programs())
def test_fuzzed_product_programs(spec):
    dims, ops, transposed, seed = spec
    loss, shapes = _program(dims, ops, transposed)
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(s) for s in shapes]
    vs = [rng.standard_normal(s) for s in shapes]
    argnums = list(range(len(shapes)))
    main = dg.trace(loss, *args)
    for build in (lambda stack: hvp_graph(main, argnums, stack=stack),
                  lambda stack: hvp_graph(main, argnums[1:], value=False, stack=stack)):
        g, s = build(False), build(True)
        assert n_products(s) <= n_products(g)
        feed = args + (vs if len(g.inputs) == 2 * len(args) else vs[1:])
        assert_same(g, s, feed, rtol=1e-10)


@settings(max_examples=60, **SETTINGS)
@given(fp.programs())
def test_fuzzed_registry_programs(prog):
    """Any program of the registry fuzzer: stacking its HVP program changes no value."""
    _, loss = prog.functions()
    args = [np.asarray(a) for a in prog.args()]
    rng = np.random.default_rng(prog.seed + 1)
    vs = [rng.standard_normal(np.shape(a)) for a in args]
    main = dg.trace(loss, *args)
    argnums = list(range(len(args)))
    g = hvp_graph(main, argnums)
    s = stack_gemms(g)
    assert n_products(s) <= n_products(g)
    assert_same(g, s, args + vs, rtol=1e-10)


# ------------------------------------------------------------------------------ liveness
def test_generated_python_frees_large_temporaries():
    from dualgpu.codegen.python import FREE_BYTES, generate_python

    n = FREE_BYTES // 8

    def f(x):
        a = np.sin(x)
        b = np.exp(a)
        return np.sum(b * a), b

    x = np.linspace(0, 1, n)
    src, _ = generate_python(dg.trace(f, x))
    lines = src.splitlines()
    dels = [line.strip() for line in lines if line.strip().startswith("del ")]
    # a (t0) dies at the multiply; b (t1) is an output; x is an input
    assert dels == ["del t0", "del t2"]
    small, _ = generate_python(dg.trace(f, np.ones(3)))
    assert "del " not in small
    out = dg.jit(f)(x)
    np.testing.assert_allclose(out[0], np.sum(np.exp(np.sin(x)) * np.sin(x)))


def test_large_only_widens_a_large_product_by_small_operands():
    """``"large"`` (CuPy's default): ``X @ W1`` and ``X @ V1`` become ``X @ [W1 | V1]`` (and
    ``W1 @ X``, ``V1 @ X`` become ``[W1 ; V1] @ X``); the small products of the same
    program (``h @ W2``, ``h @ V2``) and products sharing a large operand with another large
    one are left alone."""
    rng = np.random.default_rng(3)
    X, W, V = rng.standard_normal((2048, 256)), rng.standard_normal((256, 512)), \
        rng.standard_normal((256, 512))
    W2, V2 = rng.standard_normal((512, 3)), rng.standard_normal((512, 3))

    def f(X, W, V, W2, V2):
        h = np.tanh(X @ W)
        return np.sum(h @ W2) + np.sum((X @ V) @ V2) + np.sum(h @ V2)

    args = (X, W, V, W2, V2)
    g = dg.trace(f, *args)
    s = stack_gemms(g, large_only=True)
    concats = [e for e in s.eqns if e.prim.name == "concatenate"]
    assert n_products(s) == n_products(g) - 1 and len(concats) == 1
    assert [tuple(v.shape) for v in concats[0].inputs] == [(256, 512), (256, 512)]
    assert_same(g, s, args)
    def ft(X, W, V):   # feature-major: the batch along the columns
        Xt, Wt, Vt = X.T, W.T, V.T
        return np.sum(np.tanh(Wt @ Xt)) + np.sum(Vt @ Xt)

    st = stack_gemms(dg.trace(ft, X, W, V), large_only=True)
    assert n_products(st) == 1
    assert_same(dg.trace(ft, X, W, V), st, (X, W, V))
    # others as large as the shared operand: not widened (activations are never copied)
    A, B = rng.standard_normal((256, 2048)), rng.standard_normal((256, 2048))
    huge = lambda X, A, B: np.sum(np.tanh(X @ A) * (X @ B))
    assert n_products(stack_gemms(dg.trace(huge, X, A, B), large_only=True)) == 2
    assert n_products(stack_gemms(dg.trace(huge, X, A, B))) == 1
    assert dg.config.stack_gemms_for(None) is False
    dg.config["stack_gemms"] = "large"
    assert dg.config.stack_gemms_for(None) == "large"
