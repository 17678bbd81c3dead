"""np.argmax / np.argmin (dualgpu/ops/sorting.py): values against NumPy (NaN first, ties to
the first index, keepdims, the flattened array), vmap, the separability proof and its refusal.
(Their registry rows: tests/ops/test_registry.py.)"""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

X = np.array([[1.0, 5.0, 5.0, np.nan], [7.0, -1.0, -1.0, 0.0], [2.0, 2.0, 2.0, 2.0]])


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis, keepdims", [(None, False), (None, True), (0, False), (1, True),
                                            (-1, False)])
def test_values_equal_numpys(name, axis, keepdims):
    f = lambda x: getattr(np, name)(x, axis=axis, keepdims=keepdims)  # noqa: E731
    got = dg.jit(f)(X)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, f(X))
    np.testing.assert_array_equal(dg.jit(lambda x: getattr(x, name)(axis=axis))(X),
                                  getattr(X, name)(axis=axis))


def test_vmap_and_separability():
    x = np.random.default_rng(0).normal(size=(4, 5))
    np.testing.assert_array_equal(dg.vmap(lambda r: np.argmax(r))(x), np.argmax(x, axis=1))
    # one instance per row: the index reads its own row only
    f = lambda x: x[np.arange(x.shape[0]), np.argmax(x, axis=1)] ** 3  # noqa: E731
    v = np.ones_like(x)
    want = np.zeros_like(x)
    want[np.arange(4), np.argmax(x, axis=1)] = 6 * x[np.arange(4), np.argmax(x, axis=1)]
    np.testing.assert_allclose(dg.hvp(lambda x: np.sum(f(x)))(x, v), want)
    with pytest.raises(dg.SeparabilityError, match="compares entries along an instance axis"):
        dg.hvp(lambda x: np.sum(x * np.argmax(x, axis=0)), batch_axes=0)(x, v)


def test_out_is_refused():
    with pytest.raises(dg.UnsupportedOpError, match="out="):
        dg.jit(lambda x: np.argmax(x, out=np.zeros((), np.int64)))(X)
