"""The Hessian estimators (issue 23): keyword arguments reach f (unmapped, like dg.grad's),
a point with no coordinates has trace 0 for every method (np.trace of a 0 x 0 matrix) and an
empty diagonal, and hessian_diag's errors name hessian_diag and the method the user gave."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

A_DIAG = np.diag([1.0, -2.0, 3.5])
B = np.array([[2.0, 0.5, -1.0], [0.5, 1.0, 0.25], [-1.0, 0.25, 3.0]])   # symmetric


def quad(x, A=None, scale=1.0):
    return scale * 0.5 * x @ (A @ x)          # Hessian: scale * A (A symmetric)


X = np.array([0.3, -0.7, 1.1])


@pytest.mark.parametrize("method", ["exact", "hutchinson", "hutch++"])
def test_trace_estimators_pass_keyword_arguments(method):
    # a diagonal Hessian: Hutchinson is exact (v_i^2 = 1); Hutch++ with 9 products sketches
    # the whole 3-D range, so it is exact for any symmetric A
    est = dg.hessian_trace(quad, method=method, num_samples=9, seed=1)
    np.testing.assert_allclose(float(est(X, A=A_DIAG, scale=2.0)), 2.0 * np.trace(A_DIAG),
                               rtol=1e-12)
    if method != "hutchinson":
        np.testing.assert_allclose(float(est(X, A=B)), np.trace(B), rtol=1e-12)


def test_keyword_arguments_change_the_estimate_and_the_chunking():
    est = dg.hessian_trace(quad, method="hutchinson", num_samples=8, memory_budget=1 << 20)
    np.testing.assert_allclose(float(est(X, A=A_DIAG)), np.trace(A_DIAG), rtol=1e-12)
    np.testing.assert_allclose(float(est(X, A=3 * A_DIAG)), 3 * np.trace(A_DIAG), rtol=1e-12)


def test_diag_estimator_passes_keyword_arguments():
    d = dg.hessian_diag(quad, method="hutchinson", num_samples=4)(X, A=A_DIAG, scale=0.5)
    np.testing.assert_allclose(d, 0.5 * np.diag(A_DIAG), rtol=1e-12)


@pytest.mark.parametrize("method", ["exact", "hutchinson", "hutch++"])
def test_trace_of_an_empty_point_is_zero(method):
    est = dg.hessian_trace(lambda x: np.sum(x ** 4), method=method, num_samples=6)
    t = est(np.ones(0))
    assert float(t) == 0.0 and np.shape(t) == ()
    assert float(est(np.ones((2, 0)))) == 0.0


@pytest.mark.parametrize("method", ["exact", "hutchinson"])
def test_diag_of_an_empty_point_is_empty(method):
    d = dg.hessian_diag(lambda x: np.sum(x ** 4), method=method)(np.ones((2, 0)))
    assert d.shape == (2, 0)


@pytest.mark.parametrize("make, needles, absent", [
    (lambda: dg.hessian_diag(quad, method="bogus"),
     ["hessian_diag", "'exact', 'hutchinson'", "'bogus'"], ["hutch++'"]),
    (lambda: dg.hessian_diag(quad, method="hutch++"),
     ["hessian_diag", "'hutch++' estimates traces only", "hessian_trace"], []),
    (lambda: dg.hessian_diag(quad, method="hutchinson", batch_axes=0),
     ["hessian_diag", "method='hutchinson'"], ["'diag'", "hessian_trace"]),
    (lambda: dg.hessian_diag(quad, method="hutchinson", seed="a"),
     ["hessian_diag", "seed"], ["hessian_trace"]),
    (lambda: dg.hessian_diag(quad, method="hutchinson", num_samples=0),
     ["hessian_diag", "num_samples"], ["hessian_trace"]),
    (lambda: dg.hessian_diag(quad, method="hutchinson", argnums=(0,)),
     ["hessian_diag", "method='hutchinson'", "argnums"], ["'diag'"]),
    (lambda: dg.hessian_trace(quad, method="hutch++", num_samples=2),
     ["hessian_trace", "at least 3"], []),
    (lambda: dg.hessian_trace(quad, method="bogus"),
     ["hessian_trace", "'hutch++'", "'bogus'"], []),
])
def test_estimator_errors_name_the_function_and_method(make, needles, absent):
    with pytest.raises(dg.DualgpuError) as e:
        make()
    msg = str(e.value)
    for needle in needles:
        assert needle in msg, (needle, msg)
    for word in absent:
        assert word not in msg, (word, msg)


def test_an_estimator_made_anew_reuses_the_programs_of_the_last():
    """A new seed or sample count makes a new estimator object; it takes the vmapped HVP's
    program and its measured memory from the one cache (each estimator traced three
    programs before), and still draws its own directions."""
    def g(x):
        return np.sum(np.cos(x)) + 0.5 * x @ (B @ x)

    first = float(dg.hessian_trace(g, method="hutchinson", num_samples=4, seed=0)(X))
    misses = dg.cache_info()["misses"]
    again = [float(dg.hessian_trace(g, method="hutchinson", num_samples=4, seed=s)(X))
             for s in (0, 1, 2)]
    diag = dg.hessian_diag(g, method="hutchinson", num_samples=4, seed=5)(X)
    assert dg.cache_info()["misses"] == misses
    assert again[0] == first and len(set(again)) == 3
    dense = dg.hessian(g)(X)
    assert diag.shape == (3,) and np.all(np.abs(diag - np.diag(dense)) < 5 * np.abs(dense).max())
    # another argnums or another argument count is another program
    dg.hessian_trace(lambda x, y: g(x) * y, method="hutchinson", num_samples=4, seed=0)(X, 2.0)
    assert dg.cache_info()["misses"] > misses
