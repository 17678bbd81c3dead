"""np.searchsorted, the op written whole in one module (dualgpu/ops/sorting.py):
values against NumPy, each interpreter's rule (vmap both ways, separability), export, and
the refusals. (Its registry row: tests/ops/test_registry.py.)"""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

KNOTS = np.array([-1.0, 0.0, 0.0, 0.5, 2.0])
X = np.array([[-2.0, 0.0, 0.25], [0.5, 2.0, 3.0]])


@pytest.mark.parametrize("side", ["left", "right"])
def test_values_equal_numpys_on_ties_and_ends(side):
    got = dg.jit(lambda x: np.searchsorted(KNOTS, x, side=side))(X)
    want = np.searchsorted(KNOTS, X, side=side)
    assert got.dtype == np.int64 and got.shape == X.shape
    np.testing.assert_array_equal(got, want)
    # a traced sorted array and a constant value
    got = dg.jit(lambda k: np.searchsorted(k, 0.0, side=side))(KNOTS)
    assert int(got) == np.searchsorted(KNOTS, 0.0, side=side)


def test_sorter_and_the_derivative_of_a_product_with_the_index():
    unsorted = np.array([2.0, -1.0, 0.5])
    sorter = np.argsort(unsorted)
    f = lambda x: np.sum(x ** 2 * np.searchsorted(unsorted, x, sorter=sorter))  # noqa: E731
    x = np.array([-3.0, 0.0, 1.0, 5.0])
    np.testing.assert_allclose(dg.grad(f)(x), 2 * x * np.searchsorted(unsorted, x,
                                                                         sorter=sorter))
    dg.testing.check_grads(f, (x,), order=2)


@pytest.mark.parametrize("with_ties_and_nan", [False, True])
def test_vmap_over_values_and_over_sorted_arrays(with_ties_and_nan):
    ks = np.sort(np.random.default_rng(0).normal(size=(3, 6)), axis=1)
    vs = np.random.default_rng(1).normal(size=(3, 4))
    if with_ties_and_nan:  # NaN sorts last in NumPy, and searchsorted follows that order
        ks[:, 2] = ks[:, 3]
        ks[1, -2:] = np.nan
        vs[:, 0], vs[:, 1], vs[2, 2] = ks[:, 3], np.nan, np.inf
    np.testing.assert_array_equal(
        dg.vmap(lambda v: np.searchsorted(ks[0], v))(vs),
        np.stack([np.searchsorted(ks[0], v) for v in vs]))
    np.testing.assert_array_equal(
        dg.vmap(lambda k, v: np.searchsorted(k, v, side="right"))(ks, vs),
        np.stack([np.searchsorted(k, v, side="right") for k, v in zip(ks, vs)]))
    np.testing.assert_array_equal(
        dg.vmap(lambda k: np.searchsorted(k, vs[0]))(ks),
        np.stack([np.searchsorted(k, vs[0]) for k in ks]))


def test_separability_keeps_instances_apart_through_the_values_only():
    f = lambda x: np.sum(x ** 3 * np.searchsorted(KNOTS, x), axis=1)  # one per instance
    x = np.linspace(-2.0, 3.0, 6).reshape(3, 2)
    v = np.ones_like(x)
    want = np.stack([dg.hvp(lambda r: np.sum(r ** 3 * np.searchsorted(KNOTS, r)))(r, w)
                     for r, w in zip(x, v)])
    np.testing.assert_allclose(dg.hvp(f, batch_axes=0)(x, v), want)
    # a sorted array holding one entry per instance: every output reads all of them
    coupled = lambda x: np.sum(  # noqa: E731
        x * np.searchsorted(x[:, 0] * 0.0 + np.array([-1.0, 0.0, 1.0]), x), axis=1)
    with pytest.raises(dg.SeparabilityError, match="whole sorted array"):
        dg.hvp(coupled, batch_axes=0)(x, v)


def test_export_runs_the_same_program():
    f = lambda x: x * np.searchsorted(KNOTS, x)  # noqa: E731
    ns: dict = {}
    exec(dg.export(f, X, name="f_exported"), ns)
    np.testing.assert_array_equal(ns["f_exported"](X), f(X))


@pytest.mark.parametrize("call, match", [
    (lambda x: np.searchsorted(KNOTS, x, side="middle"), "side must be 'left' or 'right'"),
    (lambda x: np.searchsorted(x, 0.0), "must be 1-D"),
])
def test_bad_arguments_name_the_op(call, match):
    with pytest.raises(dg.DualgpuError, match=match):
        dg.jit(call)(X)
