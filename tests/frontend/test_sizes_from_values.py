"""Sizes read from traced integers: ``np.zeros(np.max(g) + 1)`` and ``np.bincount`` in a
function differentiated on arrays (autograd programs: group sums, counts by label). The size
is a decision the program checks at every call, so a call whose integers give another size
gets its own program; under ``jit``, where values are not known, a clear refusal."""
import numpy as np
import pytest

import dualgpu as dg

w = np.array([1.0, 2.0, 3.0, 0.5])


def grouped(w, g):
    """A sum by group, through a one-hot matrix as wide as the largest group."""
    onehot = g[:, None] == np.arange(np.max(g) + 1)
    return np.sum((w @ onehot) ** 2) + np.sum(np.zeros(np.max(g) + 1) + w[1])


def counted(w, g):
    return np.sum(np.bincount(g, w) ** 2) + np.sum(np.bincount(g, minlength=5) * w[0])


@pytest.mark.parametrize("f", [grouped, counted])
def test_a_cached_call_with_other_integers_is_a_fresh_build(f):
    cached = dg.grad(f)
    for g in (np.array([0, 2, 0, 1]), np.array([3, 0, 3, 3]), np.array([0, 2, 0, 1])):
        fresh = dg.grad(f)(w, g)
        step = 1e-6 * np.eye(len(w))
        numeric = [(f(w + e, g) - f(w - e, g)) / 2e-6 for e in step]
        np.testing.assert_allclose(cached(w, g), fresh, rtol=1e-12)
        np.testing.assert_allclose(fresh, numeric, rtol=1e-6)


def test_bincount_as_numpy():
    g = np.array([4, 0, 4, 1])
    got = dg.jvp(lambda w: np.bincount(g, w), (w,), (w,))
    np.testing.assert_allclose(got[0], np.bincount(g, w))
    np.testing.assert_allclose(got[1], np.bincount(g, w))
    def counts(w, g):
        c = np.bincount(g)
        assert c.dtype == np.bincount(np.array([1])).dtype
        return np.sum(c * w[0])

    assert dg.grad(counts)(w, g)[0] == 4.0


def test_refusals_name_the_call():
    with pytest.raises(dg.InvalidArgumentError, match="bincount: x has negative values"):
        dg.grad(lambda w, g: np.sum(np.bincount(g, w)))(w, np.array([0, -1, 0, 0]))
    with pytest.raises(dg.TracerControlFlowError, match="bincount at .*read from x's values"):
        dg.jit(lambda w, g: np.bincount(g, w))(w, np.array([0, 1, 0, 0]))
    with pytest.raises(dg.TracerControlFlowError, match="int.. of a traced value"):
        dg.jit(lambda w, g: np.zeros(np.max(g) + 1))(w, np.array([0, 1, 0, 0]))
    with pytest.raises(dg.UnsupportedOpError, match="numpy.zeros_like|has no dualgpu rule"):
        dg.grad(lambda w: np.sum(np.unique(w)))(w)  # a traced float: still no rule
