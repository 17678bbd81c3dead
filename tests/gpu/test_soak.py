"""GPU soak: 10,000 cached calls neither grow the CuPy memory pool nor host memory, and
random programs (tests/helpers/fuzz_programs.py) give the NumPy answers on CuPy. Skipped without
CuPy and a device (tests/gpu/conftest.py marks every test here ``gpu``)."""
from __future__ import annotations

import gc
import os
import tracemalloc

import numpy as np
import pytest

import dualgpu as dg

cp = pytest.importorskip("cupy")
import fuzz_programs as fp  # noqa: E402

N_CALLS = 10_000


def loss(w, x):
    return np.sum(dg.nn.sigmoid(x @ w) ** 2) + 0.01 * np.sum(w ** 2)


def particles(x, mu):
    return np.exp(-np.sum((x - mu[:, None, None, :]) ** 2, axis=0))


def _pool_bytes():
    cp.cuda.Device().synchronize()
    pool = cp.get_default_memory_pool()
    return pool.used_bytes(), pool.total_bytes()


def test_cached_calls_do_not_grow_the_memory_pool():
    rng = np.random.default_rng(0)
    w, x, v = (cp.asarray(rng.standard_normal(s)) for s in ((10,), (4, 10), (10,)))
    g, h, gh = dg.grad(loss), dg.hvp(loss), dg.grad_and_hvp(loss)
    for _ in range(100):  # warm up: trace, compile, fill the pool
        g(w, x), h(w, x, v), gh(w, x, v)
    gc.collect()
    used0, total0 = _pool_bytes()
    for k in range(N_CALLS):
        out = (g, h, gh)[k % 3](*((w, x) if k % 3 == 0 else (w, x, v)))
    del out
    gc.collect()
    used1, total1 = _pool_bytes()
    print(f"pool in use {used0} -> {used1} bytes, held {total0} -> {total1} bytes")
    assert used1 <= used0 + 64 * 1024, f"pool in use grew {used0} -> {used1} bytes"
    assert total1 <= total0 + 1024 * 1024, f"pool grew {total0} -> {total1} bytes"


def test_batched_hvp_soak():
    d, n = 3, 32
    rng = np.random.default_rng(1)
    x = cp.asarray(rng.standard_normal((d, n, n, n)))
    v = cp.asarray(rng.standard_normal((d, n, n, n)))
    mu = cp.asarray(rng.standard_normal((d, n)))
    gh = dg.grad_and_hvp(particles, batch_axes=(1, 2, 3))
    for _ in range(20):
        gh(x, mu, v)

    def window():
        for _ in range(1000):
            res = gh(x, mu, v)
        del res
        return _pool_bytes()

    # the pool may settle during the first window (blocks split and cached); after that
    # another 1000 calls must not take more
    used1, total1 = window()
    used2, total2 = window()
    print(f"pool in use {used1} -> {used2} bytes, held {total1} -> {total2} bytes")
    assert used2 <= used1 + 64 * 1024, f"pool in use grew {used1} -> {used2} bytes"
    assert total2 <= total1 + 1024 * 1024, f"pool grew {total1} -> {total2} bytes"


def test_cached_gpu_calls_do_not_grow_host_memory():
    w, x, v = cp.ones(10), cp.ones((4, 10)), cp.ones(10)
    h = dg.hvp(loss)
    for _ in range(200):
        h(w, x, v)
    gc.collect()
    tracemalloc.start()
    try:
        for _ in range(N_CALLS // 2):
            h(w, x, v)
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(N_CALLS // 2):
            h(w, x, v)
        gc.collect()
        growth = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert growth < 64 * 1024, f"host memory grew by {growth} bytes"


def test_random_programs_on_cupy_match_numpy():
    from hypothesis import HealthCheck, given, seed, settings

    n = int(os.environ.get("DUALGPU_GPU_FUZZ_PROGRAMS", "40"))
    start = int(os.environ.get("DUALGPU_GPU_FUZZ_SEED", "0"))
    failures = []

    @seed(start)
    @settings(max_examples=n, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(fp.programs(sparse=False))
    def run(prog):
        with np.errstate(all="ignore"):
            outcome = fp.check_program_backend(prog, cp)
        if not outcome.ok:
            failures.append(fp.describe(prog, outcome))

    run()
    assert not failures, f"{len(failures)} of {n} programs differ on CuPy:\n\n" + \
        "\n\n".join(failures[:5])
