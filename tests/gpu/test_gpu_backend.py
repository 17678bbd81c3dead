"""The CuPy backend against the NumPy backend: fused kernels, the generic path, CUDA-graph
replay, no host synchronisation in cached calls, and the kernel count of scenario 2."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.runtime.executor import config
from dualgpu.tools.op_matrix import builtin_ops

cp = pytest.importorskip("cupy")
import gpu_sweep  # noqa: E402
from test_fusion import dense_loss, fusion_cases, scenario2  # noqa: E402

TOL = {np.float64: 1e-12, np.float32: 1e-5}


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


def _to_cupy(args):
    return tuple(tuple(cp.asarray(b) for b in a) if isinstance(a, tuple) else cp.asarray(a)
                 for a in args)


def _compare(got, want, dtype):
    got, want = _leaves(got), _leaves(want)
    assert len(got) == len(want)
    rtol = TOL[dtype]
    for g, w in zip(got, want):
        assert isinstance(g, cp.ndarray), type(g)
        w = np.asarray(w)
        assert g.shape == w.shape
        # NumPy's runtime promotion can widen where the graph's avals do not (e.g. float32
        # gradients through where(c, 1.0, 0.0)); the CuPy result follows the avals
        assert g.dtype == w.dtype or (g.dtype.kind == w.dtype.kind == "f")
        # relative to the result's magnitude (and at least 1): sums in another order differ
        # by a few ulps of their terms, not of a result that cancels to near zero
        scale = max(1.0, float(np.max(np.abs(w)))) if w.size else 1.0
        err = float(np.max(np.abs(cp.asnumpy(g).astype(np.float64) - w))) if w.size else 0.0
        assert err <= rtol * scale, f"max error {err:.3g} > {rtol:g} * {scale:.3g}"


@pytest.fixture
def switches():
    saved = dict(config)
    yield config
    config.clear()
    config.update(saved)
    dg.clear_cache()


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", list(fusion_cases()))
@pytest.mark.parametrize("mode", ["fused", "generic"])
def test_case_matches_numpy(name, dtype, mode, switches):
    switches["fuse"] = mode == "fused"
    dg.clear_cache()
    fn, args = fusion_cases(dtype, n=6)[name]
    want = fn(*args)
    gargs = _to_cupy(args)
    for _ in range(4):  # eager, capture, replays
        _compare(fn(*gargs), want, dtype)


def _exe(fn, args):
    """The compiled executable a call of the transformed ``fn`` on ``args`` runs."""
    from dualgpu.runtime.signature import Signature

    fargs, _ = fn.split(tuple(args))  # hvp-like transforms take their directions last
    sig = Signature(fargs, {}, fn.argnums, fn.__name__)
    return fn.compiled(sig).exe


def test_scenario2_runs_in_two_kernels_and_replays(switches):
    fn, args = fusion_cases(np.float32, n=32)["scenario2"]
    gargs = _to_cupy(args)
    want = fn(*args)
    outs = [fn(*gargs) for _ in range(4)]
    exe = _exe(fn, gargs)
    assert exe.plan.kernel_count() <= 2
    assert exe.graph_runner.failed is None and exe.graph_runner.replays >= 2
    _compare(outs[-1], want, np.float32)
    # results are fresh arrays: a later call does not overwrite an earlier result
    first = outs[-2][1].copy()
    fn(*gargs)
    cp.testing.assert_array_equal(outs[-2][1], first)
    assert "dg_fused_" in dg.source(fn, *gargs)


def test_dense_hvp_scenario1(switches):
    rng = np.random.default_rng(0)
    p, x, y, v = rng.standard_normal(11), rng.standard_normal((4, 10)), rng.random((4, 1)), \
        rng.standard_normal(11)
    want = dg.hvp(dense_loss)(p, x, y, v)
    h = dg.hvp(dense_loss)
    g = [cp.asarray(a) for a in (p, x, y, v)]
    for _ in range(4):
        _compare(h(*g), want, np.float64)
    H = dg.HessianOperator(dense_loss, g[0], g[1], g[2])
    hv = H @ g[3]
    assert isinstance(hv, cp.ndarray)
    np.testing.assert_allclose(cp.asnumpy(hv), want, rtol=1e-12)
    gr = dg.grad(dense_loss)(*g[:3])
    assert isinstance(gr, cp.ndarray)
    out, pullback = dg.vjp(lambda p: dense_loss(p, g[1], g[2]), g[0])
    assert isinstance(pullback(cp.ones(()))[0], cp.ndarray)
    o, t = dg.jvp(lambda p: dense_loss(p, g[1], g[2]), (g[0],), (g[3],))
    assert isinstance(o, cp.ndarray) and isinstance(t, cp.ndarray)


def test_scenario3_sparse_on_gpu(switches):
    import cupyx.scipy.sparse as csp
    import scipy.sparse as sp

    A = sp.random(50, 40, density=0.1, format="csr", random_state=0)
    x = np.random.default_rng(0).standard_normal((8, 50))
    want = dg.grad(lambda x: np.sum(np.tanh(x @ A) ** 2))(x)
    Ag, xg = csp.csr_matrix(A), cp.asarray(x)
    f = dg.grad(lambda x: np.sum(np.tanh(x @ Ag) ** 2))
    for _ in range(3):
        _compare(f(xg), want, np.float64)


def test_cached_call_does_not_synchronise(switches):
    """A cached call captured into a CUDA graph: any host synchronisation breaks capture."""
    switches["cuda_graphs"] = False
    fn, args = fusion_cases(np.float32, n=16)["scenario2"]
    gargs = _to_cupy(args)
    fn(*gargs)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        fn(*gargs)  # warms the memory pool of this stream
        stream.begin_capture()
        try:
            outs = fn(*gargs)
        finally:
            graph = stream.end_capture()
        graph.launch(stream)
    stream.synchronize()
    _compare(outs, fn(*args), np.float32)


_SYNC = dg.REGISTRY.get("test_host_roundtrip") or dg.defprim(
    "test_host_roundtrip",
    lambda xp, x: xp.asarray(x.get()) if hasattr(x, "get") else x,
    dg.core.primitives.same_as_first)
_SYNC.custom = True  # a test-only op: not part of the registry's coverage table


def test_capture_failure_falls_back_to_eager(switches):
    f = dg.jit(lambda x: _SYNC(np.sin(x)) * 2)
    x = cp.linspace(0, 1, 10)
    for _ in range(3):
        cp.testing.assert_allclose(f(x), np.sin(cp.asnumpy(x)) * 2)
    runner = _exe(f, (x,)).graph_runner
    assert runner.failed is not None and runner.replays == 0


def test_cuda_graph_opt_out_and_reuse(switches):
    f = dg.jit(lambda x: np.exp(-x * x))
    x = cp.linspace(0, 1, 100)
    switches["cuda_graphs"] = False
    for _ in range(3):
        f(x)
    assert _exe(f, (x,)).graph_runner.replays == 0
    switches["cuda_graphs"] = True
    switches["cuda_graph_outputs"] = "reuse"
    outs = [f(x) for _ in range(4)]
    assert outs[-1].data.ptr == outs[-2].data.ptr  # the static buffer, documented
    cp.testing.assert_allclose(outs[-1], cp.exp(-x * x))


def test_non_contiguous_and_broadcast_inputs(switches):
    f = dg.jit(lambda a, b: np.sin(a) * b + a)
    a = cp.arange(30.0).reshape(5, 6)[:, ::2]
    b = cp.broadcast_to(cp.arange(3.0), (5, 3))
    want = np.sin(cp.asnumpy(a)) * cp.asnumpy(b) + cp.asnumpy(a)
    for _ in range(3):
        np.testing.assert_allclose(cp.asnumpy(f(a, b)), want, rtol=1e-12)


# --------------------------------------------------------------------------- every registry op
# The cases and the reasons to skip an op are tests/helpers/gpu_sweep.py's data (checked on the
# CPU by
# tests/project/test_gpu_sweep_classification.py); any other exception, the NumPy reference's too,
# fails.


def _registry_case(name, dtype, rng):
    case = gpu_sweep.registry_case(name, dtype, rng)
    if case is None:
        pytest.skip(f"{name}: no GPU case ({gpu_sweep.NO_GPU_CASE[name]})")
    return case


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", sorted(builtin_ops()))
def test_registry_op_matches_numpy(name, dtype, switches):
    rng = np.random.default_rng(1)
    fn, args = _registry_case(name, dtype, rng)
    want = dg.jit(fn)(*args)
    for _ in range(3):
        _compare(dg.jit(fn)(*_to_cupy(args)), want, dtype)
    diff = gpu_sweep.differentiated(name, args)
    if not diff:
        return
    w = None

    def loss(*a):
        out = fn(*a)
        return np.sum(out * out) if w is None else np.sum(out * w)

    gh = dg.grad_and_hvp(loss, argnums=diff[0])
    v = rng.uniform(-1, 1, np.shape(args[diff[0]])).astype(dtype)
    want = gh(*args, v)
    for _ in range(3):
        _compare(gh(*_to_cupy(args), cp.asarray(v)), want, dtype)


@pytest.mark.parametrize("name", sorted(builtin_ops()))
def test_registry_op_curvature_matches_numpy(name, switches):
    """The curvature transforms of every registry op on the device -- the forward
    Laplacian, the exact Hessian diagonal, forward and reverse Jacobians -- against the
    NumPy backend, whose results tests/transforms/test_laplacian.py and
    tests/api/test_jacobians.py check against dense Hessians and finite differences, op by
    op (float64; eager, capture, replays)."""
    fn, args = _registry_case(name, np.float64, np.random.default_rng(2))
    diff = gpu_sweep.differentiated(name, args)
    if not diff:
        pytest.skip(f"{name}: not differentiable")
    i = diff[0]
    transforms = {"laplacian": dg.laplacian(fn, argnums=i),
                  "hessian_diag": dg.hessian_diag(fn, argnums=i),
                  "jacfwd": dg.jacfwd(fn, argnums=i), "jacrev": dg.jacrev(fn, argnums=i)}
    for t in transforms.values():
        want = t(*args)
        for _ in range(3):
            _compare(t(*_to_cupy(args)), want, np.float64)


def test_scenario2_full_size_float32(switches):
    n = 100
    rng = np.random.default_rng(0)
    x = cp.asarray(rng.standard_normal((3, n, n, n)).astype(np.float32))
    mu = cp.asarray(rng.standard_normal((3, n)).astype(np.float32))
    v = cp.asarray(rng.standard_normal((3, n, n, n)).astype(np.float32))
    gh = dg.grad_and_hvp(scenario2, batch_axes=(1, 2, 3), return_value=True)
    val, g, hv = gh(x, mu, v)
    d = x - mu[:, None, None, :]
    e = cp.exp(-cp.sum(d * d, axis=0))
    cp.testing.assert_allclose(val, cp.sum(e), rtol=1e-4)
    cp.testing.assert_allclose(g, -2 * d * e, rtol=1e-5, atol=1e-6)
    dv = cp.sum(d * v, axis=0)
    cp.testing.assert_allclose(hv, -2 * v * e + 4 * d * dv * e, rtol=1e-4, atol=1e-5)
