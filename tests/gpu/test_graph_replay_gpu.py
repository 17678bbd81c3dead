"""Issue 12 on the device: whole programs (cuBLAS products included) captured as CUDA graphs,
replayed on the caller's arrays with no input copies, into output slots the caller owns."""
from __future__ import annotations

import gc
import sys
from pathlib import Path

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.runtime.executor import config
from dualgpu.runtime.signature import Signature

cp = pytest.importorskip("cupy")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.mlp import Dims, make_inputs, make_loss, reference  # noqa: E402

DIMS = Dims(256, 128, 10, 512)   # large enough that every product is a cuBLAS call


def _runner(fn, args):
    fargs, _ = fn.split(tuple(args))
    return fn.compiled(Signature(fargs, {}, fn.argnums, fn.__name__)).exe.graph_runner


def _mlp(dtype=np.float64):
    loss = make_loss(DIMS)
    args = [a.astype(dtype) for a in make_inputs(np, DIMS, 1)[0]]
    return loss, args


def test_cublas_products_are_captured_and_replayed():
    loss, args = _mlp()
    _, want = reference(np, DIMS, *args)
    h = dg.hvp(loss)
    g = [cp.asarray(a) for a in args]
    results = [h(*g) for _ in range(5)]
    runner = _runner(h, g)
    assert runner.failed is None, runner.failed
    assert runner.captures >= 1 and runner.replays >= 3
    for r in results:
        np.testing.assert_allclose(cp.asnumpy(r), want, rtol=1e-11, atol=1e-13)
    # results are distinct arrays: a later call never overwrites an earlier result
    assert len({r.data.ptr for r in results}) == len(results) or \
        all(np.array_equal(cp.asnumpy(r), cp.asnumpy(results[-1])) for r in results)


def test_replay_reads_the_callers_arrays_without_copies():
    """A replay keyed by addresses reads the arrays' current contents (no stale copy)."""
    f = dg.grad(lambda w, x: np.sum(np.tanh(x @ w) ** 2))
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((64, 32)), rng.standard_normal((128, 64))
    wg, xg = cp.asarray(w), cp.asarray(x)
    for _ in range(3):
        f(wg, xg)
    runner = _runner(f, (wg, xg))
    replays = runner.replays
    for _ in range(4):
        wg += 0.1          # in place: same address, new values
        w = w + 0.1
        got = f(wg, xg)
        want = dg.grad(lambda w, x: np.sum(np.tanh(x @ w) ** 2))(w, x)
        np.testing.assert_allclose(cp.asnumpy(got), want, rtol=1e-12, atol=1e-13)
    assert runner.replays == replays + 4


def test_new_arrays_each_call_stay_correct():
    """Fresh arguments every call (addresses cold or recycled by the pool): every result
    equals the NumPy one, whichever path (eager, capture, replay) ran it."""
    f = dg.hvp(lambda w, x: np.sum(np.sin(x @ w)))
    rng = np.random.default_rng(1)
    for _ in range(12):
        w, x, v = (rng.standard_normal(s) for s in ((16, 8), (32, 16), (16, 8)))
        got = f(cp.asarray(w), cp.asarray(x), cp.asarray(v))
        np.testing.assert_allclose(cp.asnumpy(got), f(w, x, v), rtol=1e-12, atol=1e-13)


def test_held_results_move_to_another_slot_then_run_eagerly():
    loss, args = _mlp()
    h = dg.grad_and_hvp(loss)
    g = [cp.asarray(a) for a in args]
    want = [cp.asnumpy(o) for o in h(*g)]
    held = [h(*g) for _ in range(8)]      # every result kept: slots fill, then eager
    runner = _runner(h, g)
    assert len(runner.policy.slots) == runner.policy.max_slots
    ptrs = [o[1].data.ptr for o in held]
    assert len(set(ptrs)) == len(ptrs), "a held result was overwritten by a later call"
    for o in held:
        for got, w in zip(o, want):
            np.testing.assert_array_equal(cp.asnumpy(got), w)
    del held, o, got
    gc.collect()
    replays = runner.replays
    out = h(*g)
    assert runner.replays == replays + 1, "released slots are replayed again"
    for got, w in zip(out, want):
        np.testing.assert_array_equal(cp.asnumpy(got), w)


def test_reuse_mode_writes_one_block():
    config["cuda_graph_outputs"] = "reuse"
    f = dg.jit(lambda a, b: np.tanh(a @ b))
    a, b = cp.ones((64, 64)), cp.ones((64, 8))
    outs = [f(a, b) for _ in range(4)]
    assert outs[-1].data.ptr == outs[-2].data.ptr
    cp.testing.assert_allclose(outs[-1], cp.tanh(a @ b))


def test_replay_on_another_stream_waits_for_the_last():
    f = dg.grad(lambda w, x: np.sum(np.tanh(x @ w) ** 2))
    w, x = cp.ones((64, 32)), cp.ones((256, 64))
    want = cp.asnumpy(f(w, x))
    for _ in range(2):
        f(w, x)
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(3)]
    outs = []
    for s in streams * 2:
        with s:
            outs.append(f(w, x))
    cp.cuda.Device().synchronize()
    for o in outs:
        np.testing.assert_allclose(cp.asnumpy(o), want, rtol=1e-12)


@pytest.mark.parametrize("precision,lo,hi", [("float32", 0, 1e-5), ("tf32", 1e-5, 1e-2)])
def test_own_handle_follows_matmul_precision(precision, lo, hi):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 2048)).astype(np.float32)
    b = rng.standard_normal((2048, 256)).astype(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    config["matmul_precision"] = precision
    f = dg.jit(lambda a, b: a @ b)
    ag, bg = cp.asarray(a), cp.asarray(b)
    for _ in range(3):   # eager, capture, replay: all at the precision
        got = cp.asnumpy(f(ag, bg)).astype(np.float64)
        err = np.max(np.abs(got - want)) / np.max(np.abs(want))
        assert lo <= err < hi, (precision, err)


@pytest.mark.parametrize("a_shape,b_shape,ta,tb", [
    ((64, 32), (32, 16), False, False), ((64, 32), (32, 16), True, False),
    ((64, 32), (32, 16), False, True), ((64, 32), (32, 16), True, True),
    ((32,), (32, 16), False, False), ((64, 32), (32,), False, False),
    ((3, 64, 32), (3, 32, 16), False, False), ((3, 64, 32), (32, 16), False, True),
    ((1, 32), (32, 1), False, False)])
def test_gemm_layouts_on_the_device(a_shape, b_shape, ta, tb):
    from dualgpu.backends.cublas import CublasGemm

    rng = np.random.default_rng(0)

    def make(shape, t):
        if t:
            return np.swapaxes(rng.standard_normal(shape[:-2] + shape[::-1][:2]), -1, -2)
        return rng.standard_normal(shape)

    a, b = make(a_shape, ta), make(b_shape, tb)
    got = CublasGemm.get().matmul(cp.asarray(a), cp.asarray(b))
    np.testing.assert_allclose(cp.asnumpy(got), a @ b, rtol=1e-12, atol=1e-12)


def test_mlp_hvp_host_time_is_one_launch():
    """Not a timing assertion: the replayed call makes no per-op launches. Its host time
    is printed for the notes."""
    from cupyx.profiler import benchmark

    loss = make_loss(Dims(784, 512, 10, 4096))
    args = [cp.asarray(a) for a in make_inputs(np, Dims(784, 512, 10, 4096), 1)[0]]
    h = dg.hvp(loss)
    r = benchmark(h, tuple(args), n_repeat=50, n_warmup=5)
    runner = _runner(h, args)
    assert runner.failed is None and runner.replays >= 50
    print(f"MLP HVP: gpu {np.median(r.gpu_times) * 1e6:.1f} us, "
          f"cpu {np.median(r.cpu_times) * 1e6:.1f} us per call")


def test_first_calls_from_several_threads():
    """A threaded scheduler (Dask) makes the first calls of one program at once."""
    from concurrent.futures import ThreadPoolExecutor

    f = dg.grad(lambda w, x: np.sum(np.tanh(x @ w) ** 2))
    w, x = cp.ones((64, 32)), cp.ones((128, 64))
    want = cp.asnumpy(dg.grad(lambda w, x: np.sum(np.tanh(x @ w) ** 2))(w, x))
    dg.clear_cache()
    with ThreadPoolExecutor(8) as pool:
        outs = list(pool.map(lambda _: cp.asnumpy(f(w, x)), range(32)))
    for o in outs:
        np.testing.assert_allclose(o, want, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_shape,b_shape,ta,tb", [
    ((4096, 512), (512, 10), False, False), ((4096, 512), (10, 512), False, True),  # skinny
    ((4099, 300), (300, 3), False, False),              # skinny, 4 rows a warp, a short last
    ((4096, 10), (10, 512), False, False), ((300, 7), (7, 1), False, False),     # thin K
    ((4096, 10), (512, 10), False, True),               # thin: g @ W2.T, b in registers
    ((5001, 16), (16, 1000), False, False),             # thin, 4 columns a thread
    ((4096, 512), (4096, 10), True, False),             # hᵀ @ g: cuBLAS
    ((60000,), (60000,), False, False),                 # a long dot product: cuBLAS
    ((512, 4096), (4096, 10), False, False), ((4, 10), (10,), False, False),  # cuBLAS, tiny
    # the feature-major network's: g @ hᵀ (skinny_t, b sliced when K is long), W2 @ h
    # (wide), W2ᵀ @ g (thin in column tiles)
    ((10, 4096), (512, 4096), False, True), ((3, 20000), (300, 20000), False, True),
    ((10, 512), (512, 4096), False, False), ((10, 512), (10, 4096), True, False),
    ((7, 100), (100, 3001), False, False),
    ((2000, 3000), (3000, 10), False, False)])         # skinny, b staged in slices of K
def test_thin_and_skinny_products_match_numpy(dtype, a_shape, b_shape, ta, tb):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(a_shape).astype(dtype)
    b = rng.standard_normal(b_shape).astype(dtype)
    da, db = cp.asarray(a), cp.asarray(b)           # transposed on the device: strided
    a, b, da, db = (a.T, b, da.T, db) if ta else (a, b, da, db)
    a, b, da, db = (a, b.T, da, db.T) if tb else (a, b, da, db)
    f = dg.jit(lambda a, b: a @ b)
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    for _ in range(3):
        got = cp.asnumpy(f(da, db))
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,axes", [((4096, 512), 0), ((4096, 10), 0), ((64, 4096), 1),
                                        ((8, 16, 32), (0, 1)), ((8, 16, 32), (1, 2)),
                                        ((8, 16, 32), (0, 2))])
def test_sums_over_leading_or_trailing_axes(dtype, shape, axes):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    f = dg.jit(lambda x: np.sin(x).sum(axis=axes) * 2)
    want = np.sin(x.astype(np.float64)).sum(axis=axes) * 2
    tol = 1e-5 if dtype == np.float32 else 1e-12
    config["matmul_precision"] = "tf32"   # sums never run at TF32
    for _ in range(3):
        got = cp.asnumpy(f(cp.asarray(x)))
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


def test_reuse_mode_with_a_result_passed_back_in():
    """``x = f(x)`` under "reuse": the input is the one reused slot; the call runs eagerly
    instead of reading and writing the same memory."""
    config["cuda_graph_outputs"] = "reuse"
    f = dg.jit(lambda x: np.tanh(x @ x.T) @ x + 1.0)
    x0 = cp.asarray(np.random.default_rng(0).standard_normal((64, 64)) / 8)
    x, want = x0, cp.asnumpy(x0)
    for _ in range(6):
        x = f(x)
        want = np.tanh(want @ want.T) @ want + 1.0
        np.testing.assert_allclose(cp.asnumpy(x), want, rtol=1e-10, atol=1e-12)
