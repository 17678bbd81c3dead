"""autograd's ``scipy.signal.convolve`` (axes=, dot_axes=; dualgpu.autograd_compat.convolve)
against autograd's own, values and gradients, traced and concrete."""
import numpy as np
import pytest

import dualgpu as dg
from dualgpu.autograd_compat import convolve

ags = pytest.importorskip("autograd.scipy.signal")
autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")

CASES = [  # A's shape, B's shape, axes, dot_axes, mode
    ((2, 1, 6, 5), (1, 3, 2, 3), ([2, 3], [2, 3]), ([1], [0]), "valid"),
    ((2, 1, 6, 5), (1, 3, 2, 3), ([2, 3], [2, 3]), ([1], [0]), "full"),
    ((1, 3, 2, 3), (2, 1, 6, 5), ([2, 3], [2, 3]), ([0], [1]), "valid"),  # A the window
    ((5,), (3,), None, ((), ()), "full"),
    ((3,), (5,), None, ((), ()), "valid"),
    ((4, 2, 7), (2, 3, 3), ([2], [2]), ([1], [0]), "full"),
    ((6, 5), (2, 3), None, ((), ()), "same"),
    ((2, 3), (6, 5), None, ((), ()), "same"),  # A shorter: still A's length
    ((2, 1, 6, 5), (1, 3, 4, 3), ([2, 3], [2, 3]), ([1], [0]), "same"),
]


@pytest.mark.parametrize("shape_a, shape_b, axes, dot_axes, mode", CASES)
def test_values_and_gradients_are_autograds(shape_a, shape_b, axes, dot_axes, mode):
    rng = np.random.default_rng(len(shape_a) + len(mode))
    a, b = rng.normal(size=shape_a), rng.normal(size=shape_b)
    kw = {"dot_axes": dot_axes, "mode": mode} | ({} if axes is None else {"axes": axes})
    want = ags.convolve(a, b, **kw)
    np.testing.assert_allclose(convolve(a, b, **kw), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dg.jit(lambda a, b: convolve(a, b, **kw))(a, b), want,
                               rtol=1e-12, atol=1e-12)
    ours = dg.grad(lambda a, b: np.sum(np.tanh(convolve(a, b, **kw))), argnums=(0, 1))(a, b)
    theirs = autograd.grad(lambda a, b: anp.sum(anp.tanh(ags.convolve(a, b, **kw))),
                           (0, 1))(a, b)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-10, atol=1e-12)


def test_bad_modes_and_axes_are_refused():
    a, b = np.ones((4, 4)), np.ones((2, 3))
    with pytest.raises(dg.UnsupportedOpError, match="mode='circular'.*'same'"):
        convolve(a, b, mode="circular")
    with pytest.raises(dg.ShapeMismatchError, match="larger than the other"):
        convolve(a, np.ones((5, 2)), mode="valid")
    with pytest.raises(dg.ShapeMismatchError, match="dot_axes pair"):
        convolve(a, b, axes=([0], [0]), dot_axes=([1], [1]))


@pytest.mark.parametrize("axes, dot_axes, what", [
    (([0], [0]), ([0], [1]), "axis 0 of A"),       # A's axis 0 convolved and contracted
    (([0], [0]), ([1], [0]), "axis 0 of B"),
    (([0, 0], [0, 1]), ((), ()), "axis 0 of A"),   # convolved twice
    (([0], [0]), ([1, 1], [0, 1]), "axis 1 of A"),  # contracted twice
])
def test_an_axis_taken_twice_is_refused_as_autograd_does(axes, dot_axes, what):
    # autograd raises a raw einsum ValueError ("axes don't match array") or returns an
    # einsum-labelling accident whose gradient raises; an axis is convolved or contracted
    a, b = np.ones((3, 3)), np.ones((3, 3))
    with pytest.raises(dg.InvalidArgumentError, match=f"axes.*dot_axes.*{what}"):
        convolve(a, b, axes=axes, dot_axes=dot_axes, mode="valid")


def test_axes_out_of_range_are_refused_and_negative_axes_count_from_the_end():
    a, b = np.ones((3, 4)), np.ones((2, 4))
    with pytest.raises(dg.AxisError, match="axes.*axis 2 .*A"):
        convolve(a, b, axes=([2], [0]))
    with pytest.raises(dg.AxisError, match="dot_axes.*axis -3 .*B"):
        convolve(a, b, axes=([0], [0]), dot_axes=([1], [-3]))
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(2, 4))
    got = convolve(a, b, axes=([-2], [0]), dot_axes=([-1], [-1]))
    np.testing.assert_allclose(got, convolve(a, b, axes=([0], [0]), dot_axes=([1], [1])),
                               rtol=1e-12)
    # brute force: out[k] = sum_{i+j=k, c} a[i, c] b[j, c]
    want = np.array([sum(a[i, c] * b[k - i, c] for i in range(3) for c in range(4)
                         if 0 <= k - i < 2) for k in range(4)])
    np.testing.assert_allclose(got, want, rtol=1e-12)
