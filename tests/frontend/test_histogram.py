"""``np.histogram`` and ``np.histogram_bin_edges`` on traced values: NumPy's counts, sums of
weights, densities, edges and dtypes (over data with ties at the edges, repeated values, NaN,
integers, float32), derivatives in the weights and (through the edges) in the data, and
NumPy's refusals."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

RNG = np.random.default_rng(0)
DATA = {
    "normal": RNG.normal(size=40),
    "on the edges": np.linspace(0.0, 1.0, 11),
    "ties": RNG.integers(0, 4, 25).astype(float),
    "constant": np.full(3, 2.5),
    "float32": RNG.normal(size=20).astype(np.float32),
    "integers": RNG.integers(-3, 9, 30),
    "nan outside range": np.array([np.nan, 0.2, 0.5, 1.0, 1.5]),
}
BINS = {"10": 10, "1": 1, "3": 3, "edges": np.array([-1.0, 0.0, 0.25, 1.0]),
        "list": [0.0, 0.5, 2.0]}


@pytest.mark.parametrize("data", sorted(DATA))
@pytest.mark.parametrize("bins", sorted(BINS))
def test_counts_weights_density_and_edges_are_numpys(data, bins):
    a = DATA[data]
    w = RNG.uniform(0.5, 2.0, a.shape)
    rng = (0.0, 1.0) if data == "nan outside range" else None
    calls = [lambda a: np.histogram(a, BINS[bins], range=rng),
             lambda a: np.histogram(a, BINS[bins], range=rng, weights=w),
             lambda a: np.histogram(a, BINS[bins], range=rng, density=True, weights=w),
             lambda a: (np.histogram_bin_edges(a, BINS[bins], range=rng),)]
    for f in calls:
        with np.errstate(invalid="ignore", divide="ignore"):
            want, got = f(a), dg.jit(f)(a)
        for g, x in zip(got, want):
            g, x = np.asarray(g), np.asarray(x)
            assert (g.dtype, g.shape) == (x.dtype, x.shape)
            np.testing.assert_allclose(g, x, rtol=1e-14, atol=0)


def test_derivatives_in_the_weights_and_through_the_edges():
    a = np.array([0.1, 0.2, 0.45, 0.9, 0.3])
    w = np.array([1.0, 2.0, 3.0, 4.0, 0.5])
    dg.testing.check_grads(lambda w: np.sum(np.histogram(a, 3, weights=w ** 2)[0] ** 2), (w,),
                           order=2)
    dg.testing.check_grads(lambda a: np.sum(np.histogram(a, 4)[1] ** 2), (a,), order=2)
    g = dg.grad(lambda a: np.sum(np.histogram(a, 2)[0] * 1.0))(a)   # counts: constant
    np.testing.assert_array_equal(g, np.zeros_like(a))


@pytest.mark.parametrize("call, error, match", [
    (lambda a: np.histogram(a, "auto"), dg.UnsupportedOpError, "read from the data"),
    (lambda a: np.histogram(a, 0), ValueError, "must be positive"),
    (lambda a: np.histogram(a, 2.5), TypeError, "must be an integer"),
    (lambda a: np.histogram(a, np.sum(a > 0)), TypeError, "traced number of bins"),
    (lambda a: np.histogram(a, 2, range=(1.0, 0.0)), ValueError, "max must be larger"),
    (lambda a: np.histogram(a, 2, range=(0.0, np.inf)), ValueError, "not finite"),
    (lambda a: np.histogram(a, [1.0, 0.0, 2.0]), ValueError, "increase monotonically"),
    (lambda a: np.histogram(a, 2, weights=np.ones(2)), ValueError, "same shape"),
])
def test_refusals(call, error, match):
    with pytest.raises(error, match=match):
        dg.jit(call)(np.array([0.1, 0.5, 0.7]))


@pytest.mark.parametrize("a, bins", [
    (np.array([0.2, 1.0, 1.5]), [0, 1, 2]),                                 # int edges
    (np.array([0.2, 1.0, 1.5]), np.array([0.0, 1.0, 2.0], np.float32)),    # float32 edges
    (np.array([0.0, 1.0, 2.0]), np.array([0.0, 0.5, 2.0], np.float16)),
])
def test_the_given_edges_come_back_in_their_own_dtype(a, bins):
    for f in (lambda a: np.histogram(a, bins), lambda a: np.histogram(a, bins, density=True)):
        want, got = f(a), dg.jit(f)(a)
        for g, x in zip(got, want):
            assert np.asarray(g).dtype == x.dtype
            np.testing.assert_allclose(np.asarray(g), x, rtol=1e-7)


def test_a_number_of_bins_keeps_the_values_between_the_outer_edges_in_the_datas_type():
    # range=(np.float64(0), 0.1): float64 edges, but NumPy keeps float32(0.1) (compared with
    # the weak 0.1 in float32), counted in the last bin although above the float64 edge 0.1
    a = np.array([0.0, 0.05, 0.1, 0.2, -0.01], np.float32)
    want = np.histogram(a, 3, range=(np.float64(0.0), 0.1))
    for got in (dg.jit(lambda a: np.histogram(a, 3, range=(np.float64(0.0), 0.1)))(a),
                dg.jit(lambda a, lo: np.histogram(a, 3, range=(lo, 0.1)))(a, np.float64(0.0))):
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    u = np.array([0, 7, 255], np.uint8)   # a range beyond uint8's: NumPy compares exactly
    np.testing.assert_array_equal(dg.jit(lambda u: np.histogram(u, 3, range=(-1, 300))[0])(u),
                                  np.histogram(u, 3, range=(-1, 300))[0])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.complex64])
def test_a_number_of_bins_sums_low_precision_weights_in_double_as_numpy(dtype):
    # NumPy's bincount sums in float64 (3000 float16 ones: 3000, not float16's 2048)
    a, w = np.zeros(3000), np.full(3000, 1.1, dtype)
    want = np.histogram(a, 2, weights=w)[0]
    got = dg.jit(lambda w: np.histogram(a, 2, weights=w)[0])(w)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("a", [np.array([np.nan, 1.0, 2.0]), np.array([1.0, np.inf])])
def test_a_range_read_from_constant_data_must_be_finite(a):
    with pytest.raises(ValueError, match="autodetected range .* not finite"):
        dg.jit(lambda w: np.histogram(a, 3, weights=w))(np.ones(a.shape))


@pytest.mark.parametrize("call", [
    lambda a, w: np.histogram(a, 10, range=(1.0, 1.0 + 1e-15), weights=w),   # range constant
    lambda a, w: np.histogram(np.array([1.0, 1.0 + 1e-15]), 10, weights=w),  # data constant
    lambda a, w: np.histogram_bin_edges(a, 3, range=(-1e308, 1.7e308)),     # overflow: inf
])
def test_too_many_bins_for_a_constant_range(call):
    with pytest.raises(ValueError, match="Too many bins"):
        dg.jit(call)(np.ones(2), np.ones(2))


def test_edges_given_as_a_list_holding_traced_values():
    a = np.array([0.1, 0.5, 0.7, 1.0, 1.5])
    f = dg.jit(lambda a, lo, hi: np.histogram(a, [lo, 0.6, hi]))
    got, want = f(a, 0.0, 1.0), np.histogram(a, [0.0, 0.6, 1.0])
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_weights_that_are_not_numbers_are_refused():
    # NumPy fails summing strings; the scatter-add returned one string per bin
    with pytest.raises(TypeError, match="weights"):
        dg.jit(lambda a: np.histogram(a, 2, weights=np.array(["a", "b", "c"])))(np.ones(3))


def test_a_string_bins_refuses_weights_as_numpy():
    a = np.array([0.1, 0.5, 0.7, 0.2])    # constant: the weights alone are traced
    for f in (lambda w: np.histogram(a, "auto", weights=w),
              lambda w: np.histogram_bin_edges(a, "fd", weights=w)):
        with pytest.raises(TypeError, match="not supported for weighted data"):
            dg.jit(f)(np.ones(4))


@pytest.mark.parametrize("edges", [np.array([0.5]), np.zeros(0)])
def test_fewer_than_two_edges_give_no_bins_as_numpy(edges):
    a, w = np.array([0.1, 0.5, 0.9]), np.ones(3, np.float32)
    for f in (lambda a: np.histogram(a, edges), lambda a: np.histogram(a, edges, weights=w),
              lambda a: np.histogram(a, edges, density=True, weights=w),
              lambda a: (np.histogram_bin_edges(a, edges),)):
        for g, x in zip(dg.jit(f)(a), f(a)):
            assert (np.asarray(g).dtype, np.shape(g)) == (x.dtype, x.shape)
            np.testing.assert_array_equal(g, x)
