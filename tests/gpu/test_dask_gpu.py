"""Dask arrays of CuPy chunks through the per-instance programs: with the threads scheduler,
and, where ``distributed`` (and ``dask_cuda``) import, on a ``LocalCUDACluster`` and on two
worker processes sharing GPU 0. Every chunk is bitwise the single-GPU CuPy call on it."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.backends.cupy import cupy_available

cp = pytest.importorskip("cupy")
da = pytest.importorskip("dask.array")
if not cupy_available():
    pytest.skip("needs a CUDA device", allow_module_level=True)
AXES = (1, 2, 3)


def scenario2(x, mu):  # the design's scenario 2: one value per particle
    return np.exp(-np.sum((x - mu[:, None, None, :]) ** 2, axis=0))


def inputs(dtype, shape=(3, 8, 6, 4)):
    rng = np.random.default_rng(0)
    x = cp.asarray(rng.standard_normal(shape).astype(dtype) * 0.7)
    mu = rng.standard_normal((3, shape[3])).astype(dtype) * 0.5
    v = cp.asarray(rng.standard_normal(shape).astype(dtype))
    return x, mu, v


def chunk_calls(t, x, mu, v, chunks):
    """The single-GPU CuPy call on each chunk (mu sliced along batch axis 3, which it
    follows), as ``{block index: results}``."""
    starts = [np.cumsum((0,) + c) for c in chunks]
    out = {}
    for idx in np.ndindex(*[len(c) for c in chunks]):
        sl = tuple(slice(s[i], s[i + 1]) for s, i in zip(starts, idx))
        r = t(x[sl], cp.asarray(mu[:, sl[3]]), v[sl])
        out[idx] = r if isinstance(r, tuple) else (r,)
    return out


def assert_blocks_equal(results, want: dict, chunks):
    """Dask results (or the computed arrays) equal, chunk by chunk, bitwise."""
    starts = [np.cumsum((0,) + c) for c in chunks]
    for idx, w in want.items():
        sl = tuple(slice(s[i], s[i + 1]) for s, i in zip(starts, idx))
        for g, ww in zip(results[::-1], w[::-1]):  # per-particle arrays, from the end
            block = g.blocks[idx].compute() if isinstance(g, da.Array) else g[sl]
            assert isinstance(block, cp.ndarray), type(block)
            cp.testing.assert_array_equal(block, ww)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mu_on_device", [False, True])
def test_cupy_chunks_threads(dtype, mu_on_device):
    x, mu, v = inputs(dtype)
    chunks = ((3,), (3, 3, 2), (6,), (2, 2))  # batch axes 1 and 3 split; mu follows axis 3
    gh = dg.grad_and_hvp(scenario2, batch_axes=AXES, return_value=True)
    xd, vd = da.from_array(x, chunks=chunks, asarray=False), da.from_array(v, chunks=chunks,
                                                                            asarray=False)
    assert isinstance(xd._meta, cp.ndarray)
    total, g, hv = gh(xd, cp.asarray(mu) if mu_on_device else mu, vd)
    for r in (total, g, hv):
        assert isinstance(r._meta, cp.ndarray)
    assert g.chunks == hv.chunks == xd.chunks
    want = chunk_calls(gh, x, mu, v, chunks)
    assert_blocks_equal((g, hv), want, chunks)
    got = da.compute(total, g, hv, scheduler="threads")
    assert all(isinstance(r, cp.ndarray) for r in got)
    whole = gh(x, cp.asarray(mu), v)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    cp.testing.assert_allclose(got[0], whole[0], rtol=rtol)  # a reduction: order differs
    assert_blocks_equal(got[1:], want, chunks)


def test_cupy_chunks_hvp_and_laplacian():
    x, mu, v = inputs(np.float64)
    xd = da.from_array(x, chunks=(3, 4, 3, 4), asarray=False)
    h = dg.hvp(scenario2, batch_axes=AXES)
    hv = h(xd, mu, da.from_array(v, chunks=(3, 4, 3, 4), asarray=False))
    cp.testing.assert_allclose(hv.compute(), h(x, cp.asarray(mu), v), rtol=1e-13)
    lap = dg.laplacian(scenario2, batch_axes=AXES)
    got = lap(xd, mu)
    assert isinstance(got._meta, cp.ndarray) and got.chunks == xd.chunks[1:]
    cp.testing.assert_allclose(got.compute(), lap(x, cp.asarray(mu)), rtol=1e-13)


def test_numpy_chunks_with_a_cupy_parameter_are_refused():
    x, mu, v = inputs(np.float64)
    with pytest.raises(dg.BackendMismatchError, match="CuPy array and the chunks are NumPy"):
        dg.hvp(scenario2, batch_axes=AXES)(da.from_array(x.get(), chunks=(3, 4, 6, 4)),
                                           cp.asarray(mu), v.get())


def _on_cluster(client, distributed, dtype=np.float32):
    x, mu, v = inputs(dtype, shape=(3, 16, 8, 6))
    chunks = ((3,), (4, 4, 4, 4), (8,), (3, 3))
    gh = dg.grad_and_hvp(scenario2, batch_axes=AXES, return_value=True)
    xd = da.from_array(x, chunks=chunks, asarray=False)
    vd = da.from_array(v, chunks=chunks, asarray=False)
    held = client.persist(list(gh(xd, mu, vd)))
    distributed.wait(held)
    kinds = client.run(_chunk_kinds)  # the results held by the workers: CuPy arrays only
    assert set().union(*kinds.values()) == {"cupy"}, kinds
    total, g, hv = client.gather(client.compute(held))
    assert isinstance(g, cp.ndarray) and isinstance(hv, cp.ndarray)
    assert_blocks_equal((g, hv), chunk_calls(gh, x, mu, v, chunks), chunks)
    cp.testing.assert_allclose(total, gh(x, cp.asarray(mu), v)[0], rtol=1e-5)


def _chunk_kinds(dask_worker) -> set:
    kinds = set()
    for value in dask_worker.data.values():
        for leaf in value if isinstance(value, tuple) else (value,):
            if hasattr(leaf, "shape") and getattr(leaf, "size", 0) > 1:
                kinds.add(type(leaf).__module__.split(".")[0])
    return kinds


def test_local_cuda_cluster():
    distributed = pytest.importorskip("distributed")
    try:
        from dask_cuda import LocalCUDACluster
    except Exception as exc:  # noqa: BLE001  (dask_cuda needs cuda-core, pynvml, ...)
        pytest.skip(f"dask_cuda not usable: {type(exc).__name__}: {exc}")
    with LocalCUDACluster(CUDA_VISIBLE_DEVICES="0", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 1
        _on_cluster(client, distributed)


def test_two_workers_on_one_gpu():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        _on_cluster(client, distributed)
