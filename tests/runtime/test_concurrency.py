"""Thread safety: transformed functions shared by 8 threads give the single-threaded
answers, with shapes varying between calls; concurrent first calls of one signature trace
and compile once; a failing build neither deadlocks nor poisons the cache."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.base.cache import LRUCache

N_THREADS = 8
SIZES = (1, 2, 3, 5, 8, 13)


def loss(w, x):
    return np.sum(dg.nn.softplus(x @ w) ** 2) + 0.1 * np.sum(np.tanh(w) ** 2)


def vec(w, x):
    return np.sin(x @ w) * w[0]


def _inputs(n, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(3), rng.standard_normal((n, 3)), rng.standard_normal(3)


def _run_all(tasks):
    barrier = threading.Barrier(N_THREADS)

    def start(task):
        barrier.wait()
        return task()

    with ThreadPoolExecutor(N_THREADS) as pool:
        return list(pool.map(start, tasks))


def test_shared_transforms_match_single_threaded():
    grad, hvp, gh = dg.grad(loss), dg.hvp(loss), dg.grad_and_hvp(loss)
    cases = [_inputs(n, seed) for seed, n in enumerate(SIZES)]
    expected = []
    for w, x, v in cases:  # single-threaded answers first
        expected.append((grad(w, x), hvp(w, x, v), gh(w, x, v),
                         dg.jvp(vec, (w, x), (v, np.ones_like(x)))))

    def worker(k):
        def run():
            rng = np.random.default_rng(k)
            for _ in range(40):
                i = int(rng.integers(len(cases)))
                w, x, v = cases[i]
                g, hv, (g2, hv2), (out, out_dot) = expected[i]
                np.testing.assert_array_equal(grad(w, x), g)
                np.testing.assert_array_equal(hvp(w, x, v), hv)
                got_g, got_hv = gh(w, x, v)
                np.testing.assert_array_equal(got_g, g2)
                np.testing.assert_array_equal(got_hv, hv2)
                got = dg.jvp(vec, (w, x), (v, np.ones_like(x)))
                np.testing.assert_array_equal(got[0], out)
                np.testing.assert_array_equal(got[1], out_dot)
            return True

        return run

    assert all(_run_all([worker(k) for k in range(N_THREADS)]))


def test_concurrent_first_calls_build_once():
    traced = []

    def f(x):
        traced.append(threading.get_ident())  # runs only while dualgpu traces f
        return np.sum(np.sin(x) * np.cos(x) ** 2)

    x, v = np.linspace(-1, 1, 7), np.ones(7)
    before = dg.cache_info()["misses"]
    shared = dg.hvp(f)
    results = _run_all([lambda: shared(x, v) for _ in range(N_THREADS)])
    assert len(traced) == 1, f"f was traced {len(traced)} times"
    assert dg.cache_info()["misses"] == before + 1
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


def test_concurrent_first_calls_from_separate_transform_objects():
    traced = []

    def f(x):
        traced.append(1)
        return np.sum(np.exp(-x ** 2))

    x = np.linspace(-1, 1, 5)
    results = _run_all([lambda: dg.grad(f)(x) for _ in range(N_THREADS)])
    assert len(traced) == 1
    for r in results:
        np.testing.assert_array_equal(r, -2 * x * np.exp(-x ** 2))


def test_concurrent_traces_of_different_functions():
    """Each thread traces its own function (distinct constants) at the same time."""

    def make(k):
        c = float(k + 1)
        return lambda x: np.sum(np.sin(c * x) ** 2)

    fns = [make(k) for k in range(N_THREADS)]
    x = np.linspace(-1, 1, 4)
    results = _run_all([lambda f=f: dg.hvp(f)(x, np.ones(4)) for f in fns])
    for k, r in enumerate(results):
        c = k + 1.0
        np.testing.assert_allclose(r, 2 * c * c * np.cos(2 * c * x), rtol=1e-12)


def test_failing_build_raises_everywhere_without_deadlock():
    calls = []

    def f(x):
        calls.append(1)
        if x.shape[0] == 3:
            raise ValueError("no programs of size 3")
        return np.sum(x ** 2)

    g = dg.grad(f)

    def call():
        try:
            g(np.ones(3))
        except ValueError as e:
            return str(e)
        return "no error"

    results = _run_all([call] * N_THREADS)
    assert results == ["no programs of size 3"] * N_THREADS
    np.testing.assert_array_equal(g(np.ones(4)), 2 * np.ones(4))  # the cache still works


def test_calls_while_the_cache_is_cleared_and_resized():
    info = dg.cache_info()
    f = lambda x: np.sum(np.tanh(x) ** 3)  # noqa: E731
    h = dg.hvp(f)
    xs = [np.linspace(-1, 1, n) for n in SIZES]
    want = [h(x, np.ones_like(x)) for x in xs]
    stop = threading.Event()

    def churn():
        k = 0
        while not stop.is_set():
            dg.clear_cache() if k % 2 else dg.set_cache_size(2 + k % 5)
            k += 1
        return True

    def caller(seed):
        def run():
            rng = np.random.default_rng(seed)
            for _ in range(30):
                i = int(rng.integers(len(xs)))
                np.testing.assert_array_equal(h(xs[i], np.ones_like(xs[i])), want[i])
            return True

        return run

    try:
        with ThreadPoolExecutor(N_THREADS) as pool:
            churner = pool.submit(churn)
            callers = [pool.submit(caller(s)) for s in range(N_THREADS - 1)]
            results = [c.result() for c in callers]
            stop.set()
            assert churner.result()
        assert all(results)
    finally:
        stop.set()
        dg.set_cache_size(info["maxsize"])


def test_lru_cache_builds_each_key_once_under_contention():
    cache = LRUCache(maxsize=4)
    builds = []
    lock = threading.Lock()

    def build(key):
        def make():
            with lock:
                builds.append(key)
            threading.Event().wait(0.01)  # a slow build widens the race window
            return object()

        return make

    keys = [k % 3 for k in range(N_THREADS * 3)]
    values = _run_all([lambda: [cache.get_or_build(k, build(k)) for k in keys]
                       for _ in range(N_THREADS)])
    assert sorted(builds) == [0, 1, 2]
    for per_thread in values:
        for k, v in zip(keys, per_thread):
            assert v is values[0][keys.index(k)]


@pytest.mark.parametrize("n_threads", [2, N_THREADS])
def test_value_and_grad_across_threads(n_threads):
    vg = dg.value_and_grad(loss, argnums=(0, 1))
    w, x, _ = _inputs(4, 0)
    want_v, (want_gw, want_gx) = vg(w, x)

    def run():
        for _ in range(20):
            v, (gw, gx) = vg(w, x)
            assert v == want_v
            np.testing.assert_array_equal(gw, want_gw)
            np.testing.assert_array_equal(gx, want_gx)
        return True

    with ThreadPoolExecutor(n_threads) as pool:
        assert all(pool.map(lambda _: run(), range(n_threads)))
