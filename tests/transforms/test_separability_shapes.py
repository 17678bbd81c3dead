"""The separability proof of ``batch_axes`` reasons about shapes (issue 23, items 4 and 6).

* An instance axis of length one must not let a function through that returns more values
  than instances, or that couples instances once there are more of them (Dask chunks of one
  instance each).
* Batched curvature transforms compose (``laplacian(laplacian(u))``, the biharmonic), and
  every SeparabilityError names the user's transform and the user's line.

References are closed forms in NumPy and finite differences of closed forms.
"""
import inspect
import os

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.transforms.separability import check_separable

HERE = os.path.basename(__file__)
RNG = np.random.default_rng(23)
C5 = RNG.uniform(0.5, 1.5, size=(5, 1))    # one row per instance of a 5-point call


def _line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _transforms():
    """Every batched transform, as a call on ``(f, x)``."""
    return {
        "laplacian": lambda f, x: dg.laplacian(f, batch_axes=0)(x),
        "hessian_diag": lambda f, x: dg.hessian_diag(f, batch_axes=0)(x),
        "hvp": lambda f, x: dg.hvp(f, batch_axes=0)(x, np.ones_like(x)),
        "grad_and_hvp": lambda f, x: dg.grad_and_hvp(f, batch_axes=0)(x, np.ones_like(x)),
    }


TRANSFORMS = _transforms()


# ------------------------------------------------------------------ one instance, many values
def broadcast_against_rows(p):      # (1, 3) * (5, 1): five values for one instance
    return np.sum(np.tanh(p * C5) ** 2, axis=1)


def broadcast_to_rows(p):           # the instance axis broadcast to 5 explicitly
    return np.sum(np.broadcast_to(p, (5, p.shape[1])) ** 3, axis=1)


def outer_with_constant(p):         # einsum of the instance with 5 rows of data
    return np.einsum("ij,kj->k", p ** 2, np.ones((5, p.shape[1])) + C5)


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
@pytest.mark.parametrize("f", [broadcast_against_rows, broadcast_to_rows])
def test_length_one_instance_axis_broadcast_is_refused(name, f):
    """Before: accepted, laplacian returned 5 values for 1 point, hessian_diag a (5, 3)
    array for a (1, 3) argument, hvp the product of the sum of 5 functions."""
    with pytest.raises(dg.SeparabilityError) as info:
        TRANSFORMS[name](f, np.full((1, 3), 0.3))
    msg = str(info.value)
    assert f"{name}(batch_axes=(0,))" in msg
    assert "broadcasts batch axis 0 (1 instance) to length 5" in msg
    assert f"{HERE}:" in msg


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_output_with_more_values_than_instances_is_refused(name):
    with pytest.raises(dg.SeparabilityError, match="sums over an instance axis|one value"):
        TRANSFORMS[name](outer_with_constant, np.full((1, 3), 0.3))


# Every way a length-1 instance axis could hide coupling: each of these couples instances
# when there are several, and each is refused with one instance too.
HIDDEN = {
    "reshape merging the instance axis": (lambda p: (p ** 2).reshape(-1), "one value"),
    "sum over the length-1 instance axis": (
        lambda p: np.sum(np.sum(p ** 2, axis=0, keepdims=True), axis=1), "reduces over"),
    "mean over instances": (lambda p: np.sum(p ** 2, axis=1) - np.mean(p), "reduces over"),
    "matmul with the transpose": (lambda p: np.sum(p @ p.T, axis=1), "different axes"),
    "matmul contracting the instance axis": (
        lambda p: np.sum(np.ones((len(p), len(p))) @ p ** 2, axis=1), "contracts"),
    "einsum summing over instances": (
        lambda p: np.einsum("ij,kj->i", p, p ** 2), "sums over an instance axis"),
    "outer product of instances": (
        lambda p: np.sum(np.sum(p, axis=1)[:, None] * np.sum(p, axis=1)[None, :], axis=1),
        "different axes"),
    "cumsum along instances": (lambda p: np.cumsum(np.sum(p ** 2, axis=1)), "accumulates"),
    "index along the instance axis": (lambda p: p[0, 0] * p[:, 0], "selects"),
    "slice of the last instance": (lambda p: p[-1:, 0] * p[:, 0], "selects"),
    "reversal of the instance axis": (lambda p: np.sum(p[::-1] * p, axis=1), "reorders|sel"),
}


@pytest.mark.parametrize("n", [1, 4])
@pytest.mark.parametrize("case", sorted(HIDDEN))
def test_coupling_is_refused_at_every_length(case, n):
    f, why = HIDDEN[case]
    x = RNG.standard_normal((n, 3))
    for name in ("laplacian", "hvp"):
        with pytest.raises(dg.SeparabilityError, match=why):
            TRANSFORMS[name](f, x)


# ------------------------------------------------------------------ one instance, accepted
def indexed(p):  # u = x0^2 sin(x1) + x2^3 per point, written with indexing
    return p[:, 0] ** 2 * np.sin(p[:, 1]) + p[..., 2] ** 3 + 0.0 * p[:, None, 1][:, 0]


def indexed_diag(x):
    return np.stack([2 * np.sin(x[:, 1]), -x[:, 0] ** 2 * np.sin(x[:, 1]), 6 * x[:, 2]], 1)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_indexing_with_one_instance_is_accepted(n):
    """Before: indexing refused any instance axis of length 1 ('selects or reorders')."""
    x = RNG.standard_normal((n, 3))
    np.testing.assert_allclose(dg.hessian_diag(indexed, batch_axes=0)(x), indexed_diag(x),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dg.laplacian(indexed, batch_axes=0)(x),
                               indexed_diag(x).sum(axis=1), rtol=1e-12, atol=1e-12)
    v = RNG.standard_normal(x.shape)
    np.testing.assert_allclose(dg.hvp(indexed, batch_axes=0)(x, v),
                               _hvp_indexed(x, v), rtol=1e-12, atol=1e-12)


def _hvp_indexed(x, v):
    h = np.zeros(x.shape[:1] + (3, 3))
    h[:, 0, 0], h[:, 1, 1], h[:, 2, 2] = indexed_diag(x).T
    h[:, 0, 1] = h[:, 1, 0] = 2 * x[:, 0] * np.cos(x[:, 1])
    return np.einsum("nij,nj->ni", h, v)


@pytest.mark.parametrize("n", [1, 4])
def test_reshape_merging_instances_and_back_is_separable(n):
    """The instance axis merged with the coordinates into rows, a product per row, and
    split back (what the vmap rules do inside composed transforms): separable. Before:
    refused ('the reshape merges or splits an instance axis')."""
    w = np.array([[0.5, -1.0, 2.0, 0.25]])

    def f(p):
        rows = p.reshape(-1, 1)                           # (3n, 1): point-major rows
        return np.sum(np.tanh(rows * w).reshape(p.shape[0], 3, 4), axis=(1, 2))

    x = RNG.standard_normal((n, 3))
    t = np.tanh(x[:, :, None] * w[0])
    want = np.sum(-2 * t * (1 - t ** 2) * w[0] ** 2, axis=2)  # d2/dx2 of tanh(x w)
    np.testing.assert_allclose(dg.hessian_diag(f, batch_axes=0)(x), want, rtol=1e-12)
    np.testing.assert_allclose(dg.laplacian(f, batch_axes=0)(x), want.sum(1), rtol=1e-12)


def test_reshape_that_splits_instances_is_refused():
    x = RNG.standard_normal((6, 3))
    with pytest.raises(dg.SeparabilityError, match="splits an instance axis"):
        dg.laplacian(lambda p: np.sum(p.reshape(2, 3, 3) ** 2, axis=(0, 2)), batch_axes=0)(x)


def test_differentiated_inputs_with_different_instance_counts_are_refused():
    with pytest.raises(dg.SeparabilityError, match=r"\(1,\) and \(4,\) instances"):
        dg.laplacian(lambda a, b: np.sum(a * b, axis=1), argnums=(0, 1), batch_axes=0)(
            np.ones((1, 3)), np.ones((4, 3)))


# ------------------------------------------------------------------ Dask chunks of one instance
def _dask():
    return pytest.importorskip("dask.array")


def coupled_by_reshape(x):  # f_i = x_i^2 sum_j x_j: the reshape is a transpose when d == 1
    return np.sum(x * x * x.reshape(1, x.shape[0]), axis=1)


@pytest.mark.parametrize("chunk", [1, 2, 5])
@pytest.mark.parametrize("name", ["laplacian", "hvp"])
def test_dask_coupled_function_is_refused_whatever_the_chunks(name, chunk):
    """Before: chunks of one instance ran it, each chunk alone (Laplacians 6 x_i instead of
    2 sum_j x_j + 4 x_i)."""
    dask_array = _dask()
    x = RNG.standard_normal((5, 1))
    xd = dask_array.from_array(x, chunks=(chunk, 1))
    with pytest.raises(dg.SeparabilityError, match=f"{name}\\(batch_axes=\\(0,\\)\\).*"
                       "different axes"):
        if name == "laplacian":
            dg.laplacian(coupled_by_reshape, batch_axes=0)(xd)
        else:
            dg.hvp(coupled_by_reshape, batch_axes=0)(xd, dask_array.ones_like(xd))


def separable_mlp(x, c):  # c: one row per point, passed as an argument
    return np.sum(np.tanh(x * c) ** 2, axis=1) + x[:, 0] * np.cos(x[:, 1])


@pytest.mark.parametrize("chunks", [1, 2, (2, 2, 1), 5])
def test_dask_separable_function_matches_numpy_whatever_the_chunks(chunks):
    dask_array = _dask()
    x, c = RNG.standard_normal((5, 3)), RNG.uniform(0.5, 1.5, size=(5, 1))
    v = RNG.standard_normal(x.shape)
    xd = dask_array.from_array(x, chunks=(chunks, 3))
    vd = dask_array.from_array(v, chunks=(chunks, 3))
    lap = dg.laplacian(separable_mlp, batch_axes=0)
    np.testing.assert_allclose(lap(xd, c).compute(), lap(x, c), rtol=1e-13)
    np.testing.assert_allclose(lap(x, c), _lap_separable_mlp(x, c), rtol=1e-10)
    hv = dg.hvp(separable_mlp, batch_axes=0)
    np.testing.assert_allclose(hv(xd, c, vd).compute(), hv(x, c, v), rtol=1e-13)


def _lap_separable_mlp(x, c):
    t = np.tanh(x * c)
    d2 = 2 * c ** 2 * (1 - t ** 2) * (1 - 3 * t ** 2)          # d2/dx2 tanh(cx)^2
    return np.sum(d2, axis=1) - x[:, 0] * np.cos(x[:, 1])


@pytest.mark.parametrize("chunk", [1, 2])
def test_dask_closed_over_rows_that_do_not_follow_the_chunks_are_refused(chunk):
    """Before: chunks of one point each gave every point the H·v of the sum over the 5
    rows of C5 (no error)."""
    dask_array = _dask()
    x = RNG.standard_normal((5, 3))
    xd = dask_array.from_array(x, chunks=(chunk, 3))
    h = dg.hvp(broadcast_against_rows, batch_axes=0)
    np.testing.assert_allclose(h(dask_array.from_array(x, chunks=(5, 3)), np.ones_like(x))
                               .compute(), h(x, np.ones_like(x)), rtol=1e-13)
    with pytest.raises(dg.SeparabilityError, match="not on a chunk of shape .*pass it to f "
                       "as an argument"):
        h(xd, dask_array.ones_like(xd))


# ------------------------------------------------------------------ composed curvature (item 6)
D = 3
W1, B1 = RNG.standard_normal((D, 6)) * 0.7, RNG.standard_normal(6) * 0.3
W2, B2 = RNG.standard_normal((6, 5)) * 0.7, RNG.standard_normal(5) * 0.3
W3, B3 = RNG.standard_normal(5), 0.2


def mlp(biases: bool):
    b1, b2, b3 = (B1, B2, B3) if biases else (0.0, 0.0, 0.0)

    def u(p):  # one value per point (row)
        return np.tanh(np.tanh(p @ W1 + b1) @ W2 + b2) @ W3 + b3

    return u, (b1, b2, b3)


def mlp_laplacian_numpy(x, biases):
    """The Laplacian of the MLP, in closed form (chain rule by hand)."""
    b1, b2, _ = (B1, B2, B3) if biases else (0.0, 0.0, 0.0)
    h1 = np.tanh(x @ W1 + b1)
    d1 = 1 - h1 ** 2
    lap_h1 = -2 * h1 * d1 * np.sum(W1 ** 2, axis=0)         # (n, 6)
    jac_z2 = (d1[:, None, :] * W1[None]) @ W2               # (n, D, 5)
    h2 = np.tanh(h1 @ W2 + b2)
    d2 = 1 - h2 ** 2
    lap_h2 = d2 * (lap_h1 @ W2) - 2 * h2 * d2 * np.sum(jac_z2 ** 2, axis=1)
    return lap_h2 @ W3


def second_differences(g, x, step=4e-3):
    """``d2 g / dx_d2`` per point and coordinate: central differences at ``step`` and
    ``step / 2``, Richardson-extrapolated (error of order ``step ** 4``; g per point)."""
    def central(h):
        out = np.empty(x.shape)
        for d in range(x.shape[1]):
            e = np.zeros_like(x)
            e[:, d] = h
            out[:, d] = (g(x + e) - 2 * g(x) + g(x - e)) / h ** 2
        return out

    return (4 * central(step / 2) - central(step)) / 3


def test_mlp_laplacian_closed_form_is_right():
    """The reference itself, against finite differences of u (NumPy only)."""
    x = RNG.standard_normal((4, D))
    u, _ = mlp(True)
    np.testing.assert_allclose(mlp_laplacian_numpy(x, True),
                               second_differences(u, x).sum(axis=1), rtol=1e-7,
                               atol=1e-8)


@pytest.mark.parametrize("biases", [False, True])
def test_laplacian_of_laplacian_is_the_biharmonic(biases):
    """Before (with biases): SeparabilityError naming 'hvp' at contextlib.py:81."""
    u, _ = mlp(biases)
    # its own points: the module's RNG would make them depend on which tests ran before in
    # this process, and a second difference of float64 values is good to about 1e-7 only
    x = np.random.default_rng(283).standard_normal((6, D))
    lap = dg.laplacian(u, batch_axes=(0,))
    np.testing.assert_allclose(lap(x), mlp_laplacian_numpy(x, biases), rtol=1e-12,
                               atol=1e-12)
    want = second_differences(lambda y: mlp_laplacian_numpy(y, biases), x)
    got = dg.laplacian(lap, batch_axes=(0,))(x)
    np.testing.assert_allclose(got, want.sum(axis=1), rtol=1e-7, atol=1e-7)
    diag = dg.hessian_diag(lap, batch_axes=(0,))(x)
    np.testing.assert_allclose(diag, want, rtol=1e-7, atol=1e-7)
    by_trace = dg.laplacian(dg.hessian_trace(u, batch_axes=(0,)), batch_axes=(0,))(x)
    np.testing.assert_allclose(by_trace, got, rtol=1e-12, atol=1e-12)
    chunked = dg.laplacian(dg.laplacian(u, batch_axes=0, chunk_size=1), batch_axes=0)(x)
    np.testing.assert_allclose(chunked, got, rtol=1e-12, atol=1e-12)


def test_biharmonic_of_a_polynomial_closed_form():
    u = lambda p: np.sum(p ** 4, axis=1) + p[:, 0] ** 2 * p[:, 1] ** 2  # noqa: E731
    x = RNG.standard_normal((1, D))     # one point: the length-1 instance axis too
    bi = dg.laplacian(dg.laplacian(u, batch_axes=0), batch_axes=0)
    np.testing.assert_allclose(bi(x), [24.0 * D + 8.0], rtol=1e-13)
    x = RNG.standard_normal((4, D))
    np.testing.assert_allclose(bi(x), np.full(4, 24.0 * D + 8.0), rtol=1e-13)
    diag = dg.hessian_diag(dg.laplacian(u, batch_axes=0), batch_axes=0)(x)
    want = np.full((4, D), 24.0)        # d2/dx_d2 of 12 sum x^2 + 2 x0^2 + 2 x1^2
    want[:, :2] += 4.0
    np.testing.assert_allclose(diag, want, rtol=1e-13)


def test_curvature_of_hessian_products_and_diagonals():
    """``laplacian`` of ``v.Hv`` (``hvp`` with batch_axes inside), of the summed
    ``hessian_diag``, and ``hvp`` of the Laplacian, against differences of the closed-form
    Laplacian (derivatives commute: the Laplacian of ``v.Hv`` is ``d2/dt2 lap(x + t v)``)."""
    u, _ = mlp(True)
    # points of its own (the module's RNG is drawn in the order the tests run, which
    # pytest-xdist varies), and the differences extrapolated twice: one Richardson step at
    # h = 2e-3 left 1.3e-7 of truncation error on one CI run's draw (3.5e-7 on this one),
    # two at h = 1e-3 leave 2e-10
    rng = np.random.default_rng(29)
    x, v = rng.standard_normal((5, D)), rng.standard_normal((5, D))
    lap = lambda y: mlp_laplacian_numpy(y, True)  # noqa: E731

    def along(h):
        return (lap(x + h * v) - 2 * lap(x) + lap(x - h * v)) / h ** 2

    def richardson(h):
        return (4 * along(h) - along(2 * h)) / 3

    want = (16 * richardson(1e-3) - richardson(2e-3)) / 15
    vhv = lambda p: np.sum(dg.hvp(u, batch_axes=0)(p, v) * v, axis=1)  # noqa: E731
    np.testing.assert_allclose(dg.laplacian(vhv, batch_axes=0)(x), want, rtol=1e-7, atol=1e-7)
    vhv2 = lambda p: np.sum(dg.grad_and_hvp(u, batch_axes=0)(p, v)[1] * v, axis=1)  # noqa: E731
    np.testing.assert_allclose(dg.laplacian(vhv2, batch_axes=0)(x), want, rtol=1e-7,
                               atol=1e-7)

    diag_sum = lambda p: np.sum(dg.hessian_diag(u, batch_axes=0)(p), axis=1)  # noqa: E731
    biharmonic = second_differences(lap, x).sum(axis=1)
    np.testing.assert_allclose(dg.laplacian(diag_sum, batch_axes=0)(x), biharmonic,
                               rtol=1e-7, atol=1e-7)

    def mixed(h):  # d/dx_d of d/dv of the Laplacian: (H_lap v)[d], error of order h^2
        out = np.empty(x.shape)
        for d in range(D):
            e = np.zeros_like(x)
            e[:, d] = h
            out[:, d] = (lap(x + e + h * v) - lap(x + e - h * v) - lap(x - e + h * v)
                         + lap(x - e - h * v)) / (4 * h * h)
        return out

    got = dg.hvp(dg.laplacian(u, batch_axes=0), batch_axes=0)(x, v)
    once = [(4 * mixed(h) - mixed(2 * h)) / 3 for h in (1e-3, 2e-3)]
    np.testing.assert_allclose(got, (16 * once[0] - once[1]) / 15, rtol=1e-7, atol=1e-7)


def test_laplacian_of_squared_gradient_norm():
    """``|grad u|^2`` per point, by grad of the sum inside a batched laplacian."""
    u, _ = mlp(True)
    grad_sum = dg.grad(lambda p: np.sum(u(p)))

    def grad_norm2(p):
        return np.sum(grad_sum(p) ** 2, axis=1)

    def grad_norm2_numpy(x):
        h1 = np.tanh(x @ W1 + B1)
        h2 = np.tanh(h1 @ W2 + B2)
        g = (((1 - h2 ** 2) * W3) @ W2.T * (1 - h1 ** 2)) @ W1.T
        return np.sum(g ** 2, axis=1)

    x = RNG.standard_normal((5, D))
    want = second_differences(grad_norm2_numpy, x).sum(axis=1)
    np.testing.assert_allclose(dg.laplacian(grad_norm2, batch_axes=0)(x), want, rtol=1e-7,
                               atol=1e-7)


# ------------------------------------------------------------------ the message
def test_error_names_the_transform_and_the_users_line():
    def f(p):
        return np.sum(p ** 2, axis=1) - np.mean(p)   # the coupling line

    x = RNG.standard_normal((4, 3))
    line = f"{HERE}:{_line_of(f, 'the coupling line')}"
    for name in sorted(TRANSFORMS):
        with pytest.raises(dg.SeparabilityError) as info:
            TRANSFORMS[name](f, x)
        msg = str(info.value)
        assert msg.startswith(f"{name}(batch_axes=(0,)): "), msg
        assert line in msg and "contextlib" not in msg


def test_composed_error_names_the_outer_transform_and_the_users_line():
    u, _ = mlp(True)
    inner = dg.laplacian(u, batch_axes=0)

    def f(p):
        return inner(p) * np.sum(inner(p))   # couples the points

    x = RNG.standard_normal((4, D))
    with pytest.raises(dg.SeparabilityError) as info:
        dg.laplacian(f, batch_axes=0)(x)
    msg = str(info.value)
    assert msg.startswith("laplacian(batch_axes=(0,)): reduce_sum")
    assert f"{HERE}:{_line_of(f, 'couples the points')}" in msg


def test_generated_equations_carry_the_users_line():
    """The forward Laplacian's equations carry the line of the op they come from (before:
    contextlib.py, the frame of the decorator around the pass)."""
    u, _ = mlp(True)
    graph = dg.trace(dg.laplacian(u, batch_axes=0), RNG.standard_normal((4, D)))
    sources = {e.source.rsplit(":", 1)[0] for e in graph.eqns}
    assert all(os.path.basename(s) == HERE for s in sources), sources


def test_an_equation_without_a_users_line_reports_the_call():
    """An equation whose recorded line is not the user's (a transform's own) is reported
    at the user's line that called the check."""
    graph = dg.trace(lambda p: np.sum(p ** 2, axis=1), np.ones((3, 4)))
    graph.eqns[-1].source = os.path.join(os.path.dirname(os.__file__), "contextlib.py:81")
    with pytest.raises(dg.SeparabilityError) as info:
        check_separable(graph, [0], (1,), what="laplacian")   # the check's call
    msg = str(info.value)
    assert msg.startswith("laplacian(batch_axes=(1,)): reduce_sum")
    line = _line_of(test_an_equation_without_a_users_line_reports_the_call, "the check's call")
    assert f"{HERE}:{line}" in msg and "contextlib" not in msg


def test_the_exact_trace_names_itself_in_its_errors():
    with pytest.raises(dg.SeparabilityError, match=r"^hessian_trace\(batch_axes=\(0,\)\)"):
        dg.hessian_trace(lambda x: np.sum(x) * x[:, 0], batch_axes=(0,))(np.ones((3, 2)))
