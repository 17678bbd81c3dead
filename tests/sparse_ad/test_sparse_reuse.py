"""What docs/sparse_ad.md's Reuse section says: a sparse transform builds its pattern,
coloring and program once per signature (the program cache's: arrays by shape and dtype,
ints by value, floats by type, containers by structure and contents), in one entry of the
program cache (bounded by its size, emptied by ``dg.clear_cache()``), and ``pattern=`` skips
detection. References are closed forms."""
import numpy as np
import pytest

import dualgpu as dg
from dualgpu.api import sparse_derivatives


@pytest.fixture
def detections(monkeypatch):
    """The number of pattern detections so far (Hessian and Jacobian), from an empty
    program cache."""
    dg.clear_cache()
    calls = []
    for name in ("hessian_pattern", "jacobian_pattern"):
        detect = getattr(sparse_derivatives, name)
        monkeypatch.setattr(sparse_derivatives, name,
                            lambda *a, detect=detect: calls.append(1) or detect(*a))
    return calls


def chain(x, scale):
    return scale * np.sum(x[1:] * x[:-1])


def chain_hessian(n, scale):
    return scale * (np.eye(n, k=1) + np.eye(n, k=-1))


def test_a_new_float_value_reuses_a_new_int_value_rebuilds(detections):
    hess = dg.sparse_hessian(lambda x, scale, k: chain(x[:k], scale))
    x = np.ones(6)
    np.testing.assert_array_equal(hess(x, 2.0, 4).toarray()[:4, :4], chain_hessian(4, 2.0))
    np.testing.assert_array_equal(hess(x, 3.0, 4).toarray()[:4, :4], chain_hessian(4, 3.0))
    assert len(detections) == 1
    np.testing.assert_array_equal(hess(x, 3.0, 6).toarray(), chain_hessian(6, 3.0))
    assert len(detections) == 2


def test_the_lagrange_multipliers_are_a_second_argument(detections):
    # L(z, lam) = sum z^2 + lam @ (z[1:] z[:-1]): H = 2 I + lam_i at (i, i+1) and (i+1, i)
    lagrangian = lambda z, lam: np.sum(z ** 2) + lam @ (z[1:] * z[:-1])
    hess = dg.sparse_hessian(lagrangian)
    z = np.linspace(-1, 1, 7)
    for lam in (np.arange(1.0, 7.0), -np.ones(6)):
        want = 2 * np.eye(7) + np.diag(lam, 1) + np.diag(lam, -1)
        np.testing.assert_array_equal(hess(z, lam).toarray(), want)
    assert len(detections) == 1


def test_plans_are_entries_of_the_program_cache(detections):
    """A new transform object of the same function finds the plan there (a transform
    written inside a loop reuses it), and the cache's bound drops it."""
    for _ in range(3):
        dg.sparse_hessian(chain)(np.ones(5), 1.0)
    assert len(detections) == 1
    size = dg.config["cache_size"]
    try:
        dg.set_cache_size(1)
        dg.sparse_hessian(chain)(np.ones(4), 1.0)  # the only entry now
        dg.sparse_hessian(chain)(np.ones(5), 1.0)
        assert len(detections) == 3
    finally:
        dg.set_cache_size(size)


def test_clear_cache_drops_the_plans_with_the_programs(detections):
    hess = dg.sparse_hessian(chain)
    hess(np.ones(5), 1.0)
    dg.clear_cache()
    np.testing.assert_array_equal(hess(np.ones(5), 2.0).toarray(), chain_hessian(5, 2.0))
    assert len(detections) == 2


def test_a_container_argument_is_keyed_by_its_contents(detections):
    hess = dg.sparse_hessian(lambda x, scales: chain(x[:scales[1]], scales[0]))
    scales = [1.0, 5]
    hess(np.ones(5), scales)
    np.testing.assert_array_equal(hess(np.ones(5), [4.0, 5]).toarray(), chain_hessian(5, 4.0))
    assert len(detections) == 1                    # a new list, a new float: reused
    scales[1] = 3                                  # an int in it, changed in place
    np.testing.assert_array_equal(hess(np.ones(5), scales).toarray()[:3, :3],
                                  chain_hessian(3, 1.0))
    assert len(detections) == 2


def test_a_given_pattern_skips_detection(detections):
    given = np.eye(5, k=1) + np.eye(5, k=-1)
    hess = dg.sparse_hessian(chain, pattern=given)
    np.testing.assert_array_equal(hess(np.ones(5), 2.0).toarray(), chain_hessian(5, 2.0))
    assert detections == []


def test_the_sparsity_transforms_detect_on_every_call(detections):
    detect = dg.hessian_sparsity(chain)
    detect(np.ones(5), 1.0)
    detect(np.ones(5), 1.0)
    assert len(detections) == 2


A = np.eye(3)


def through_global(x):
    return A @ np.sin(x)


def test_a_reassigned_global_is_seen(monkeypatch):
    jac = dg.sparse_jacobian(through_global)
    x = np.zeros(3)
    np.testing.assert_array_equal(jac(x).toarray(), np.eye(3))        # d/dx A sin(x) = A
    monkeypatch.setitem(globals(), "A", np.ones((3, 3)))
    assert np.array_equal(dg.jacobian(through_global)(x), np.ones((3, 3)))   # seen there
    np.testing.assert_array_equal(jac(x).toarray(), np.ones((3, 3)))
