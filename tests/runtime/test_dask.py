"""Dask arrays of NumPy chunks through the per-instance (batch_axes) programs (CuPy chunks:
tests/gpu/test_dask_gpu.py)."""
import subprocess
import sys

import numpy as np
import pytest

import dualgpu as dg

da = pytest.importorskip("dask.array")
AXES = (1, 2, 3)


def energy(x, mu):  # examples/particles.py: one value per particle
    d = x - mu[:, None, None, :]
    return np.sum(np.cosh(d), axis=0) + 0.4 * np.exp(-np.sum(d ** 2, axis=0))


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 6, 5, 4)) * 0.7
    return x, rng.standard_normal((3, 4)) * 0.5, rng.standard_normal(x.shape)


def blocks_match(t, xd, mu, vd, result):
    """Every chunk equals, bitwise, the transform on that chunk's NumPy arrays."""
    for idx in np.ndindex(*xd.numblocks):
        want = t(xd.blocks[idx].compute(), mu, vd.blocks[idx].compute())
        want = want if isinstance(want, tuple) else (want,)
        got = result if isinstance(result, tuple) else (result,)
        for w, g in zip(want[::-1], got[::-1]):  # the per-chunk arrays, from the end
            np.testing.assert_array_equal(g.blocks[idx].compute(), w)


@pytest.mark.parametrize("chunks", [(3, 2, 3, 4), (3, 6, 5, 4), (3, 1, 5, 4), (3, 4, 2, 4)])
def test_hvp_chunks(data, chunks):
    x, mu, v = data
    h = dg.hvp(energy, batch_axes=AXES)
    xd, vd = da.from_array(x, chunks=chunks), da.from_array(v, chunks=chunks)
    hv = h(xd, mu, vd)
    assert isinstance(hv, da.Array) and hv.chunks == xd.chunks
    blocks_match(h, xd, mu, vd, hv)
    np.testing.assert_allclose(hv.compute(), h(x, mu, v), rtol=1e-13)


def test_hvp_chunks_along_every_batch_axis(data):
    x, _, v = data
    mu = np.full((3, 1), 0.3)  # broadcasts along the chunked last axis
    f = lambda x, mu: energy(x, np.broadcast_to(mu, (3, x.shape[3])))
    h = dg.hvp(f, batch_axes=AXES)
    xd, vd = da.from_array(x, chunks=(3, 4, 2, 3)), da.from_array(v, chunks=(3, 4, 2, 3))
    hv = h(xd, mu, vd)
    assert hv.chunks == xd.chunks
    blocks_match(h, xd, mu, vd, hv)
    np.testing.assert_allclose(hv.compute(), h(x, mu, v), rtol=1e-13)


@pytest.mark.parametrize("return_value", [False, True])
@pytest.mark.parametrize("scheduler", ["threads", "synchronous"])
def test_grad_and_hvp(data, return_value, scheduler):
    x, mu, v = data
    gh = dg.grad_and_hvp(energy, batch_axes=AXES, return_value=return_value)
    xd, vd = da.from_array(x, chunks=(3, 2, 3, 4)), da.from_array(v, chunks=(3, 2, 3, 4))
    out = gh(xd, mu, vd)
    assert all(isinstance(o, da.Array) for o in out)
    assert out[-1].chunks == out[-2].chunks == xd.chunks
    blocks_match(gh, xd, mu, vd, out[-2:])
    got = da.compute(*out, scheduler=scheduler)
    for g, w in zip(got, gh(x, mu, v)):
        np.testing.assert_allclose(g, w, rtol=1e-13)
    if return_value:
        assert out[0].shape == ()  # a Dask reduction of the per-chunk sums


def test_processes_scheduler(data):
    x, mu, v = data
    h = dg.hvp(energy, batch_axes=AXES)
    hv = h(da.from_array(x, chunks=(3, 3, 5, 4)), mu, v)  # a NumPy direction is chunked too
    np.testing.assert_array_equal(hv.compute(scheduler="processes", num_workers=2),
                                  np.concatenate([h(x[:, :3], mu, v[:, :3]),
                                                  h(x[:, 3:], mu, v[:, 3:])], axis=1))


def test_laplacian(data):
    x, mu, _ = data
    lap = dg.laplacian(energy, batch_axes=AXES)
    xd = da.from_array(x, chunks=(3, 2, 3, 4))
    got = lap(xd, mu)
    assert got.chunks == xd.chunks[1:]
    np.testing.assert_allclose(got.compute(), lap(x, mu), rtol=1e-13)


def test_chunked_coordinate_axis_is_rechunked(data):
    x, mu, v = data
    h = dg.hvp(energy, batch_axes=AXES)
    hv = h(da.from_array(x, chunks=(1, 3, 5, 4)), mu, da.from_array(v, chunks=(2, 2, 5, 4)))
    assert hv.chunks == ((3,), (3, 3), (5,), (4,))
    np.testing.assert_allclose(hv.compute(), h(x, mu, v), rtol=1e-13)


def test_rechunk_too_big(data):
    import dask
    x, mu, v = data
    with dask.config.set({"array.chunk-size": "1KiB"}):
        with pytest.raises(dg.DualgpuError, match="only batch axes"):
            dg.hvp(energy, batch_axes=AXES)(da.from_array(x, chunks=(1, 6, 5, 4)), mu, v)


def test_not_separable(data):
    x, mu, v = data
    coupled = lambda x, mu: energy(x, mu) / np.sum(energy(x, mu))
    with pytest.raises(dg.SeparabilityError):
        dg.hvp(coupled, batch_axes=AXES)(da.from_array(x, chunks=(3, 2, 5, 4)), mu, v)


@pytest.mark.parametrize("make", [
    lambda: dg.grad(lambda x, mu: np.sum(energy(x, mu))),
    lambda: dg.jit(energy),
    lambda: dg.hvp(lambda x, mu: np.sum(energy(x, mu))),  # no batch_axes
])
def test_other_transforms_refuse(data, make):
    x, mu, v = data
    t = make()
    args = (da.from_array(x), mu) + ((v,) if t.kind == "hvp" else ())
    with pytest.raises(dg.DualgpuError, match="take Dask arrays"):
        t(*args)


def test_parameters_must_not_be_dask(data):
    x, mu, v = data
    with pytest.raises(dg.DualgpuError, match="follows no chunked batch axis"):
        dg.hvp(energy, batch_axes=AXES)(da.from_array(x), da.from_array(mu), v)


def sliced_blocks_match(t, xd, params, vd, result, follow):
    """Every chunk equals, bitwise, the transform on that chunk's arrays, with each parameter
    sliced along the batch axes it follows (``follow``: parameter -> {its axis: batch axis})."""
    starts = [np.cumsum((0,) + c) for c in xd.chunks]
    for idx in np.ndindex(*xd.numblocks):
        ps = []
        for p, axes in zip(params, follow):
            key = [slice(None)] * p.ndim
            for k, a in axes.items():
                key[k] = slice(starts[a][idx[a]], starts[a][idx[a] + 1])
            ps.append(p[tuple(key)])
        want = t(xd.blocks[idx].compute(), *ps, vd.blocks[idx].compute())
        np.testing.assert_array_equal(result.blocks[idx].compute(), want)


@pytest.mark.parametrize("chunks", [(3, 6, 5, 2), (3, 3, 5, 1), (3, 2, 2, 3)])
def test_parameter_following_a_chunked_batch_axis_is_chunked(data, chunks):
    """mu of shape (3, n3) follows batch axis 3 (``mu[:, None, None, :]``): chunking that axis
    chunks mu with it. With chunks of length 1 a whole mu would broadcast silently."""
    x, mu, v = data
    h = dg.hvp(energy, batch_axes=AXES)
    xd, vd = da.from_array(x, chunks=chunks), da.from_array(v, chunks=chunks)
    hv = h(xd, mu, vd)
    assert hv.chunks == xd.chunks
    sliced_blocks_match(h, xd, [mu], vd, hv, [{1: 3}])
    np.testing.assert_allclose(hv.compute(), h(x, mu, v), rtol=1e-13)


def test_parameters_following_two_axes_and_dask_parameters(data):
    x, mu, v = data
    w = np.random.default_rng(1).uniform(0.5, 1.5, (6, 5, 4))  # one weight per particle

    def weighted(x, mu, w):
        return w * energy(x, mu)

    h = dg.hvp(weighted, batch_axes=AXES)
    xd, vd = da.from_array(x, chunks=(3, 4, 5, 3)), da.from_array(v, chunks=(3, 4, 5, 3))
    want = h(x, mu, w, v)
    for wd in (w, da.from_array(w, chunks=(2, 2, 2))):  # a Dask parameter is rechunked
        hv = h(xd, mu, wd, vd)
        sliced_blocks_match(h, xd, [mu, w], vd, hv, [{1: 3}, {0: 1, 2: 3}])
        np.testing.assert_allclose(hv.compute(), want, rtol=1e-13)
    gh = dg.grad_and_hvp(weighted, batch_axes=AXES, return_value=True)
    total, g, hv = gh(xd, mu, da.from_array(w, chunks=(2, 2, 2)), vd)
    for got, w_ in zip(da.compute(total, g, hv), gh(x, mu, w, v)):
        np.testing.assert_allclose(got, w_, rtol=1e-13)


def test_constant_following_a_chunked_batch_axis_is_refused(data):
    x, mu, v = data
    c = np.linspace(0.5, 1.5, 4)  # a closed-over constant along batch axis 3
    f = lambda x, mu: c * energy(x, mu)
    h = dg.hvp(f, batch_axes=AXES)
    with pytest.raises(dg.DualgpuError, match="does not build with that axis one longer"):
        h(da.from_array(x, chunks=(3, 6, 5, 2)), mu, v)
    hv = h(da.from_array(x, chunks=(3, 2, 5, 4)), mu, v)  # axis 3 whole: fine
    np.testing.assert_allclose(hv.compute(), h(x, mu, v), rtol=1e-13)


def test_ambiguous_parameter_axes_are_refused(data):
    """b follows batch axis 1, through a slice that also fits when a is one longer: two
    equally small choices, so the call is refused rather than guessed."""
    x, mu, v = data
    a, b = np.ones(6), np.linspace(1, 2, 6)
    f = lambda x, a, b: energy(x, mu) * np.concatenate([a, b])[6:][:, None, None]
    h = dg.hvp(f, batch_axes=AXES)
    with pytest.raises(dg.DualgpuError, match="more than one choice"):
        h(da.from_array(x, chunks=(3, 3, 5, 4)), a, b, v)



def test_import_dualgpu_imports_neither_dask_nor_cupy():
    code = "import sys, dualgpu; assert 'dask' not in sys.modules and 'cupy' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_distributed_local_cluster(data):
    """Two worker processes of dask.distributed: the transform travels by pickling (it is
    rebuilt over there), mu is chunked along batch axis 3, the value is a reduction."""
    distributed = pytest.importorskip("distributed")
    x, mu, v = data
    gh = dg.grad_and_hvp(energy, batch_axes=AXES, return_value=True)
    xd, vd = da.from_array(x, chunks=(3, 3, 5, 2)), da.from_array(v, chunks=(3, 3, 5, 2))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        total, g, hv = client.compute(gh(xd, mu, vd), sync=True)
    want = gh(x, mu, v)
    np.testing.assert_allclose(total, want[0], rtol=1e-13)
    for i, j in np.ndindex(2, 2):
        sl = (slice(None), slice(3 * i, 3 * i + 3), slice(None), slice(2 * j, 2 * j + 2))
        one = gh(x[sl], mu[:, 2 * j:2 * j + 2], v[sl])
        np.testing.assert_array_equal(g[sl], one[1])
        np.testing.assert_array_equal(hv[sl], one[2])
