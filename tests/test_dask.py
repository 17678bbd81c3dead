"""Dask arrays of NumPy chunks through the per-instance (batch_axes) programs."""
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
    with pytest.raises(dg.DualgpuError, match="only the differentiated argument"):
        dg.hvp(energy, batch_axes=AXES)(da.from_array(x), da.from_array(mu), v)


def test_import_dualgpu_does_not_import_dask():
    code = "import sys, dualgpu; assert 'dask' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
