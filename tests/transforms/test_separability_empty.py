"""An empty value couples no instances: slices, reshapes, concatenations and pads of
size-0 parts are separable, and ``sparse_hessian(batch_axes=...)`` of a function built
with them equals the dense Hessian."""
import numpy as np
import pytest

import dualgpu as dg

X = np.linspace(0.2, 1.1, 2).reshape(2, 1)     # 2 instances of 1 coordinate
X3 = np.linspace(0.2, 1.3, 6).reshape(2, 3)    # 2 instances of 3 coordinates

CASES = {
    # the review's case: x[:, 1:] is empty for one coordinate
    "empty slice": (lambda x: np.sum(x[:, 1:] ** 2, axis=1) + np.sum(x ** 3, axis=1), X),
    "empty slice only": (lambda x: np.sum(np.sin(x[:, 1:]), axis=1), X),
    "empty slice along the instances": (
        lambda x: np.sum(x ** 3, axis=1) + np.sum(x[:0] ** 2), X3),
    "reshape of an empty part": (
        lambda x: np.sum(x ** 3, axis=1) + np.sum(x[:, 3:].reshape(0, 2)), X3),
    "concatenate with an empty part": (
        lambda x: np.sum(np.concatenate([x[:, 3:], np.sin(x), x[:, :0]], axis=1) ** 2,
                         axis=1), X3),
    "concatenate along the instances with an empty part": (
        lambda x: np.sum(np.concatenate([x[:0], x ** 3, x[2:]], axis=0), axis=1), X3),
    "pad of an empty part": (
        lambda x: np.sum(x ** 3, axis=1) + np.sum(np.pad(x[:, 3:], ((0, 0), (1, 1)))), X3),
}


@pytest.mark.parametrize("name", list(CASES))
def test_sparse_hessian_batched_with_empty_parts_equals_dense(name):
    f, x = CASES[name]
    n = x.size
    dense = dg.hessian(lambda x: np.sum(f(x)))(x).reshape(n, n)
    got = dg.sparse_hessian(f, batch_axes=0)(x).toarray()
    np.testing.assert_allclose(got, dense, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dg.hessian_diag(f, batch_axes=0)(x).reshape(-1),
                               np.diag(dense), rtol=1e-12, atol=1e-12)


def test_a_nonempty_concatenation_along_the_instances_still_couples():
    f = lambda x: np.sum(np.concatenate([x[:1], x], axis=0) ** 2, axis=1)[1:]  # noqa: E731
    with pytest.raises(dg.SeparabilityError, match="couples different instances"):
        dg.sparse_hessian(f, batch_axes=0)(X3)
