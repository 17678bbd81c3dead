"""Tiny programs as one kernel of one block (``dualgpu/codegen/tiny.py``), on the CPU: the
generated CUDA text is compiled by g++ with a one-thread prelude (tests/helpers/tiny_harness.py) and
run on NumPy arrays; results must equal the generated NumPy program. The launcher's hook is
checked with a fake CuPy whose RawKernel is the same harness."""
from __future__ import annotations

import os

import fuzz_programs as fp
import numpy as np
import pytest
import scipy.sparse
from hypothesis import HealthCheck, given, settings
from tiny_harness import RawKernel, needs_gxx, run_tiny

import dualgpu as dg
from benchmarks.dense_tiny import loss as dense_loss  # noqa: E402
from benchmarks.dense_tiny import make_inputs as dense_inputs  # noqa: E402
from benchmarks.dense_tiny import reference as dense_reference  # noqa: E402
from dualgpu.codegen.c_source import array_strides
from dualgpu.codegen.launcher import FusedProgram
from dualgpu.codegen.python import compile_python
from dualgpu.codegen.tiny import TINY_SHARED, tiny_program_kernel, tiny_refusal

pytestmark = needs_gxx
EXAMPLES = int(os.environ.get("DUALGPU_TINY_EXAMPLES", 16))
TOL = {np.dtype(np.float64): dict(rtol=1e-12, atol=1e-13),
       np.dtype(np.float32): dict(rtol=2e-5, atol=2e-6)}


def _tol(graph):
    dts = [np.dtype(a.dtype) for a in graph.outputs]
    return TOL[np.dtype(np.float32)] if np.dtype(np.float32) in dts else TOL[np.dtype(np.float64)]


def _check(graph, args, strided=None):
    """The tiny kernel of ``graph`` on ``args`` (``strided``: the same values as views with
    other strides) against the NumPy program; returns the kernel."""
    want = compile_python(graph, np)(*args)
    consts = [c.value for c in graph.consts]
    for arrays in [args] + ([strided] if strided is not None else []):
        arrays = list(arrays) + consts
        tk = tiny_program_kernel(graph, {v.id: array_strides(a)
                                         for v, a in zip(graph.inputs + graph.consts, arrays)})
        assert tk is not None, tiny_refusal(graph)
        got = run_tiny(tk, arrays)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            w = np.asarray(w)
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, **_tol(graph))
    return tk


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dense_tiny_hvp_and_grad(dtype):
    for p, X, Y, v in dense_inputs(np, n_sets=2):
        p, X, Y, v = (a.astype(dtype) for a in (p, X, Y, v))
        tk = _check(dg.trace(dg.hvp(dense_loss), p, X, Y, v), (p, X, Y, v))
        assert len(tk.stages) <= 4 and tk.syncs <= 2, tk.describe()
        got = run_tiny(tk, [p, X, Y, v])[0]
        np.testing.assert_allclose(got, dense_reference(np, p, X, Y, v), rtol=1e-4 if
                                   dtype == np.float32 else 1e-12)
        _check(dg.trace(dg.grad(dense_loss), p, X, Y), (p, X, Y))
        _check(dg.trace(dg.grad_and_hvp(dense_loss, return_value=True), p, X, Y, v),
               (p, X, Y, v))


def _mlp(dtype, batch=8, dims=(6, 16, 3)):
    rng = np.random.default_rng(3)
    W1 = (rng.standard_normal(dims[:2]) / 3).astype(dtype)
    W2 = (rng.standard_normal(dims[1:]) / 3).astype(dtype)
    b1 = rng.standard_normal(dims[1]).astype(dtype)
    X = rng.standard_normal((batch, dims[0])).astype(dtype)
    Y = rng.standard_normal((batch, dims[2])).astype(dtype)

    def loss(W1, b1, W2, X, Y):
        h = np.tanh(X @ W1 + b1)
        z = h @ W2
        z = z - np.max(z, axis=1, keepdims=True)
        logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
        return -np.mean(np.sum(logp * np.exp(Y) / np.sum(np.exp(Y), axis=1, keepdims=True),
                               axis=1)) + 1e-3 * np.sum(W1 ** 2)

    return loss, (W1, b1, W2, X, Y)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_small_mlps(dtype):
    loss, args = _mlp(dtype)
    vs = tuple(np.ones_like(a) * 0.3 for a in args[:3])
    _check(dg.trace(dg.grad(loss, argnums=(0, 1, 2)), *args), args)
    g = dg.trace(dg.hvp(loss, argnums=(0, 1, 2)), *args, vs)
    _check(g, args + vs)
    _check(dg.trace(dg.jit(lambda *a: loss(*a)), *args), args)


def test_a_long_sum_is_a_block_tree():
    x = np.random.default_rng(0).standard_normal((30, 20))
    g = dg.trace(lambda x: (np.sum(np.sin(x)), np.max(x * x), np.sum(x > 0.1)), x)
    tk = _check(g, (x,), (np.asfortranarray(x),))
    assert "block tree" in " ".join(tk.stages) and "nthreads / 2" in tk.source


def test_views_reshapes_and_literal_outputs():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((4, 6)), rng.standard_normal((3, 4))

    def f(x, y):
        a = x[1:, ::-2].T                      # getitem with steps, transpose
        b = np.concatenate([a, y.T[:3] * 2.0], axis=1).reshape(-1)
        c = np.broadcast_to(y[:, :1], (3, 4)) + x[2, :4][None]
        d = (x.T @ y.T).T.reshape(2, 9)     # reshape of a transposed value: a copy
        return b, c, d, x, c, 2.5, np.sum(d, axis=0), x[0, 0]

    _check(dg.trace(f, x, y), (x, y))


def test_strided_and_transposed_inputs():
    rng = np.random.default_rng(2)
    W, X = rng.standard_normal((5, 3)), rng.standard_normal((4, 5))
    f = dg.grad(lambda W, X: np.sum(np.tanh(X @ W).reshape(-1) ** 2), argnums=(0, 1))
    g = dg.trace(f, W, X)
    strided = (np.asfortranarray(W),
               rng.standard_normal((8, 11))[::2, 1:11:2])
    strided[1][...] = X
    _check(g, (W, X), strided)
    bcast = (W, np.broadcast_to(X[:1], X.shape))
    _check(g, (W, np.ascontiguousarray(bcast[1])), bcast)
    rev = (W[::-1, ::-1].copy()[::-1, ::-1], X[::-1].copy()[::-1])
    _check(g, (W, X), rev)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_integer_and_bool_values(dtype):
    x = np.arange(12, dtype=dtype).reshape(3, 4) - 5
    i = np.arange(4, dtype=np.int32)

    def f(x, i):
        k = (i * 3) // 2 + i.astype(np.int64)
        m = np.where(x > 0, x, -x) + k.astype(x.dtype)
        return m, np.sum(m > 2, axis=0), np.concatenate([k, np.array([7], np.int64)])

    _check(dg.trace(f, x, i), (x, i))


def fuzzed_programs(prog) -> list:
    """``(graph, arguments)`` of a fuzzed program, of the gradient of its loss with respect
    to every argument, and of its HVP (the direction its first argument)."""
    f, loss = prog.functions()
    args = tuple(np.asarray(a) for a in prog.args())
    argnums = tuple(range(len(args)))
    return [(dg.trace(dg.jit(f), *args), args),
            (dg.trace(dg.grad(loss, argnums=argnums), *args), args),
            (dg.trace(dg.hvp(loss), *args, args[0]), args + (args[0],))]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(fp.programs(max_nodes=7, sparse=False))
def test_fuzzed_programs_and_their_derivatives(prog):
    for g, a in fuzzed_programs(prog):
        if tiny_refusal(g) is None:
            _check(g, a, [np.array(b, order="F") for b in a])


def test_ineligible_programs_are_refused():
    x = np.ones((4, 4))
    assert tiny_refusal(dg.trace(lambda x: np.cumsum(x, axis=0), x)) == \
        "cumsum has no tiny form"
    assert "index array" in tiny_refusal(dg.trace(lambda x: x[np.array([0, 2])], x)) or \
        "no tiny form" in tiny_refusal(dg.trace(lambda x: x[np.array([0, 2])], x))
    assert "elements" in tiny_refusal(dg.trace(np.sin, np.ones(1 << 15)))
    big = np.ones((90, 90))   # 8100 float64 intermediates, each in shared memory
    why = tiny_refusal(dg.trace(lambda x: np.sum(np.sin(x) @ np.cos(x)), big))
    assert why is not None and ("shared" in why or "steps" in why), why
    assert TINY_SHARED == 48 << 10
    A = scipy.sparse.random(4, 4, density=0.5, format="csr", random_state=0)
    assert tiny_refusal(dg.trace(lambda x: A @ x, np.ones(4))) is not None


# ------------------------------------------------------------------ the launcher's hook
def _backend():
    from test_cupy_launcher import FakeBackend
    backend = FakeBackend()
    backend.xp.RawKernel = RawKernel
    return backend


def test_the_launcher_runs_a_tiny_program_as_one_kernel_into_its_destinations():
    p, X, Y, v = dense_inputs(np, n_sets=1)[0]
    g = dg.trace(dg.grad_and_hvp(dense_loss, return_value=True), p, X, Y, v)
    want = compile_python(g, np)(p, X, Y, v)
    program = FusedProgram(g, _backend(), tiny=True)
    assert program.tiny is not None and program.source.startswith("# one tiny kernel")
    RawKernel.LOG.clear()
    dests = [np.full(np.shape(w), np.nan, dtype=np.asarray(w).dtype) for w in want]
    for out in (None, dests):
        got = program(p, X, Y, v, out=out)
        for k, (o, w) in enumerate(zip(got, want)):
            if out is not None:
                assert o is dests[k], "an output must be written into its destination"
            np.testing.assert_allclose(o, w, rtol=1e-5, atol=1e-6)
    assert RawKernel.LOG == [program.tiny.name] * 2, "one launch per call, compiled once"
    # another stride pattern: another kernel
    got = program(p, np.asfortranarray(X), Y, v)
    np.testing.assert_allclose(got[-1], want[-1], rtol=1e-5, atol=1e-6)
    assert len(set(RawKernel.LOG)) == 2


def test_the_launcher_keeps_the_plan_when_not_tiny_or_switched_off():
    x = np.ones((4, 4))
    g = dg.trace(lambda x: np.cumsum(np.sin(x), axis=0), x)
    assert FusedProgram(g, _backend(), tiny=True).tiny is None
    g = dg.trace(dg.hvp(dense_loss), *dense_inputs(np, n_sets=1)[0])
    assert FusedProgram(g, _backend(), tiny=False).tiny is None
    # a plan of one launch gains nothing
    assert FusedProgram(dg.trace(np.sin, x), _backend(), tiny=True).tiny is None


def test_the_switch_is_a_build_switch():
    from dualgpu.runtime.executor import BUILD_SWITCHES, config
    assert "tiny_kernel" in BUILD_SWITCHES and config["tiny_kernel"] is True
    with pytest.raises(dg.DualgpuError):
        config["tiny_kernel"] = "yes"


def test_einsum():
    rng = np.random.default_rng(4)
    a, b, c = rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), rng.standard_normal(4)
    f = lambda a, b, c: (np.einsum("ij,jk->ik", a, b), np.einsum("ij,j,jk->k", a, c, b),  # noqa: E731
                         np.einsum("ij,ij->", a, a), np.einsum("i,j->ij", c, c),
                         np.einsum("ii->i", a[:, :3]))
    _check(dg.trace(f, a, b, c), (a, b, c), (np.asfortranarray(a), b[::-1].copy()[::-1], c))
