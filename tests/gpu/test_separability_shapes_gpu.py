"""Issue 23, items 4 and 6 on CuPy: chunks of one instance (Dask arrays of CuPy chunks) and
the biharmonic by composition, against the NumPy calls (whose references are closed forms in
tests/transforms/test_separability_shapes.py)."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.backends.cupy import cupy_available

cp = pytest.importorskip("cupy")
da = pytest.importorskip("dask.array")
if not cupy_available():
    pytest.skip("needs a CUDA device", allow_module_level=True)

RNG = np.random.default_rng(23)
W1, B1 = RNG.standard_normal((3, 16)) * 0.7, RNG.standard_normal(16) * 0.3
W2, B2 = RNG.standard_normal((16, 16)) * 0.7, RNG.standard_normal(16) * 0.3
W3 = RNG.standard_normal(16)


def u(p):  # one value per point, biases included
    return np.tanh(np.tanh(p @ W1 + B1) @ W2 + B2) @ W3 + 0.2


def coupled(x):  # f_i = x_i^2 sum_j x_j
    return np.sum(x * x * x.reshape(1, x.shape[0]), axis=1)


def test_biharmonic_on_cupy_matches_numpy():
    x = RNG.standard_normal((64, 3))
    bi = dg.laplacian(dg.laplacian(u, batch_axes=0), batch_axes=0)
    np.testing.assert_allclose(cp.asnumpy(bi(cp.asarray(x))), bi(x), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("chunk", [1, 3])
def test_cupy_chunks_of_one_point_refuse_a_coupled_function(chunk):
    xd = da.from_array(cp.asarray(RNG.standard_normal((5, 1))), chunks=(chunk, 1),
                       asarray=False)
    with pytest.raises(dg.SeparabilityError, match=r"laplacian\(batch_axes=\(0,\)\)"):
        dg.laplacian(coupled, batch_axes=0)(xd)


@pytest.mark.parametrize("chunk", [1, 2])
def test_cupy_chunks_of_one_point_match_the_whole_call(chunk):
    x = RNG.standard_normal((5, 3))
    xd = da.from_array(cp.asarray(x), chunks=(chunk, 3), asarray=False)
    lap = dg.laplacian(lambda p: u(p) + p[:, 0] * np.cos(p[:, 1]), batch_axes=0)
    got = lap(xd).compute()
    assert isinstance(got, cp.ndarray)
    np.testing.assert_allclose(cp.asnumpy(got), lap(x), rtol=1e-10, atol=1e-10)
