"""Fresh results and composing Hessians on CuPy (issue 23): on every executor path (fused
eager, CUDA-graph replay, generated Python), no result is a broadcast view (the gradient of
sum(x) is a fill), and writing into one does not change the next call's; dg.hessian and
dg.hessp compose with jit and vmap on CuPy arrays. CPU versions:
tests/codegen/test_results_fresh.py,
tests/api/test_compose_hessian.py."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

cp = pytest.importorskip("cupy")


BODIES = [lambda a: np.sum(a), lambda a: np.mean(a), lambda a: np.sum(a * 2.0),
          lambda a: np.sum(np.broadcast_to(np.sum(a), a.shape))]


@pytest.mark.parametrize("k", range(len(BODIES)))
def test_gradients_are_fresh_and_writeable(path, k):
    x = cp.arange(1.0, 5.0)
    g = dg.grad(BODIES[k])
    for _ in range(3):   # a fresh build, then cached calls (replayed on the graphs path)
        out = g(x)
        assert not any(s == 0 and n > 1 for s, n in zip(out.strides, out.shape))
        want = out.copy()
        out *= 0.1
        cp.testing.assert_array_equal(g(x), want)


def test_hessian_and_hessp_compose_on_cupy(path):
    f = lambda z, c=1.0: c * cp.sum(z ** 3) + z[0] * z[1] * z[2]  # noqa: E731
    x = cp.asarray([0.5, -1.25, 2.0])
    H = np.array([[6 * 0.5, 2.0, -1.25], [2.0, 6 * -1.25, 0.5], [-1.25, 0.5, 6 * 2.0]])
    cp.testing.assert_allclose(dg.jit(dg.hessian(f))(x), H, rtol=1e-12)
    cp.testing.assert_allclose(dg.hessian(f)(x, c=2.0), H + np.diag(6 * cp.asnumpy(x)),
                               rtol=1e-12)
    P = cp.eye(3)
    cp.testing.assert_allclose(dg.vmap(dg.hessp(f), in_axes=(None, 0))(x, P), H.T,
                               rtol=1e-12)
