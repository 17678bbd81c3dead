"""Regression tests: every failure the fuzzer (tests/fuzz/test_fuzz.py) or the reliability
review found, as the smallest program that showed it. Programs found by the fuzzer are
pasted as the fuzzer printed them (``Program(...)``) and also written out by hand."""
from __future__ import annotations

import gc

import fuzz_programs as fp
import numpy as np
import pytest
import scipy.special as special

import dualgpu as dg
from dualgpu.testing import check_grads, check_hvp

# --------------------------------------------------------------------------- found by the fuzzer
FUZZ_FAILURES = {
    # gammaln's second derivative was silently zero: its partial, digamma, was registered
    # as non-differentiable, so hvp differentiated it as a constant.
    "gammaln_hvp": fp.Program(inputs=((), (4,), (1,)), seed=1677, nodes=(
        ("log2", (2,), (("wrap", True),)),
        ("gammaln", (1,), (("wrap", True),)),
        ("div_scalar", (4,), (("wrap", False),)),
        ("logsumexp", (5,), (("axis", None), ("keepdims", False))),
        ("fmin", (6, 4), ()))),
    # the HVP of cumprod along an axis of length 1 crashed (stack of an empty list): its VJP
    # takes cumprod of x[..., :0], whose JVP had no case for an empty axis.
    "cumprod_length_one": fp.Program(inputs=((), (3,), ()), seed=45525, nodes=(
        ("erfc", (2,), (("wrap", False),)),
        ("minimum", (0, 1), ()),
        ("sqrt", (4,), (("wrap", True),)),
        ("cumprod", (1,), (("axis", -1),)))),
    # hvp with a 0-d argument crashed before tracing: the direction (not a tuple) was
    # iterated over to check its backend.
    "hvp_0d_direction": fp.Program(inputs=((),), seed=3733, nodes=(
        ("tan", (0,), (("wrap", True),)),
        ("tanh", (1,), (("wrap", False),)))),
    # np.pad of a 0-d traced array generated xp.pad(x, ()), which NumPy refuses at run time
    # (NumPy itself pads nothing in a 0-d array).
    "pad_0d": fp.Program(inputs=((),), seed=23744, nodes=(
        ("method_sum", (0,), (("axis", None), ("keepdims", False))),
        ("expand", (1,), (("kind", "pad"), ("axis", 0), ("n", 1))),
        ("log1p", (2,), (("wrap", False),)),
        ("reshape", (1,), (("shape", (1,)), ("method", True))))),
}


@pytest.mark.parametrize("name", sorted(FUZZ_FAILURES))
def test_fuzz_failure(name):
    outcome = fp.check_program(FUZZ_FAILURES[name])
    assert outcome.ok, fp.describe(FUZZ_FAILURES[name], outcome)


def test_gammaln_second_derivative():
    f = lambda x: np.sum(special.gammaln(x * x + 0.5))  # noqa: E731
    x = np.array([0.3, -1.2, 0.7, 1.1])
    check_hvp(f, (x,))
    # d2/dx2 gammaln(x) = polygamma(1, x)
    np.testing.assert_allclose(dg.hvp(lambda x: np.sum(special.gammaln(x)))(x + 2, np.ones(4)),
                               special.polygamma(1, x + 2), rtol=1e-12)


@pytest.mark.parametrize("shape, axis", [((1,), 0), ((2, 1), -1), ((1, 3), 0), ((3,), 0)])
def test_cumprod_hvp_short_axes(shape, axis):
    x = np.linspace(0.5, 1.5, int(np.prod(shape))).reshape(shape)
    check_grads(lambda x: np.sum(np.cumprod(x * x, axis=axis) * np.cos(x)), (x,), order=2)


def test_hvp_of_a_0d_argument():
    x, v = np.array(0.3), np.array(2.0)
    np.testing.assert_allclose(dg.hvp(lambda x: np.sin(x))(x, v), -np.sin(0.3) * 2.0)
    g, hv = dg.grad_and_hvp(lambda x: x ** 3)(x, v)
    np.testing.assert_allclose((g, hv), (3 * 0.09, 6 * 0.3 * 2.0))


def test_pad_of_a_0d_array():
    x = np.array(0.5)
    np.testing.assert_allclose(dg.grad(lambda x: np.sum(np.log1p(np.pad(x, 2))))(x), 1 / 1.5)


# found by the CuPy-vs-NumPy fuzz (tests/gpu/test_soak.py) on an H200: gammaln's HVP called
# cupyx.scipy.special.polygamma(1, x), which needs an array order (it calls n.astype)
GPU_FUZZ_FAILURES = {
    "gammaln_hvp_cupy": fp.Program(inputs=((), (1,)), seed=14529, nodes=(
        ("gammaln", (1,), (("wrap", True),)),
        ("maximum", (2, 1), ()),
        ("prod", (3,), (("axis", 0), ("keepdims", False))))),
    "gammaln_copysign_cupy": fp.Program(inputs=((),), seed=278, nodes=(
        ("min", (0,), (("axis", None), ("keepdims", True))),
        ("copysign", (1, 0), ()),
        ("gammaln", (2,), (("wrap", False),)))),
}


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GPU_FUZZ_FAILURES))
def test_gpu_fuzz_failure(name):
    cp = pytest.importorskip("cupy")
    outcome = fp.check_program_backend(GPU_FUZZ_FAILURES[name], cp)
    assert outcome.ok, fp.describe(GPU_FUZZ_FAILURES[name], outcome)


@pytest.mark.parametrize("name", sorted(GPU_FUZZ_FAILURES))
def test_gpu_fuzz_failure_on_numpy(name):
    assert fp.check_program(GPU_FUZZ_FAILURES[name]).ok


# --------------------------------------------------------------------------- found in review
def test_freed_function_does_not_reuse_a_cached_program():
    """The cache was keyed by id(fn): a new lambda reusing a freed lambda's id ran the old
    program (47 wrong gradients out of 49 in a loop of 49: nearly every new lambda took a
    freed one's id; 9 here, as each full collection costs ~0.3 s in a long test run)."""
    x = np.ones(3)
    for k in range(1, 10):
        def make(k):
            c = float(k)
            return lambda x: np.sum(c * x * x)

        np.testing.assert_allclose(dg.grad(make(k))(x), 2 * k * x)
        gc.collect()


def test_jvp_of_fresh_lambdas():
    x, t = np.ones(2), np.ones(2)
    for k in range(1, 10):
        _, out_dot = dg.jvp(lambda x, k=k: np.sin(k * x), (x,), (t,))
        np.testing.assert_allclose(out_dot, k * np.cos(k * x))
        gc.collect()


@pytest.mark.parametrize("param", ["t0", "c0", "xp", "ops", "x_dot", "float"])
def test_argument_names_that_collide_with_generated_names(param):
    """An argument named t0 or c0 silently gave wrong gradients (it shadowed a generated
    variable or a constant); xp, ops and x_dot broke the generated source."""
    W = np.array([0.5, -1.0, 2.0])
    ns = {"np": np, "W": W}
    exec(f"def f(x, {param}):\n    return np.sum(np.sin(x) * np.cos({param}) * W)\n", ns)
    f = ns["f"]
    x, y = np.array([0.3, 0.5, 0.7]), np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(dg.grad(f, argnums=(0, 1))(x, y),
                               (np.cos(x) * np.cos(y) * W, -np.sin(x) * np.sin(y) * W),
                               rtol=1e-13)
    np.testing.assert_allclose(dg.hvp(f, argnums=1)(x, y, np.ones(3)),
                               -np.sin(x) * np.cos(y) * W, rtol=1e-13)


@pytest.mark.parametrize("name", ["xp", "ops", "c0", "t1", "float"])
def test_function_names_that_collide_with_generated_names(name):
    def f(x):
        return np.sum(np.sin(x) * np.arange(3.0))

    f.__name__ = name
    x = np.array([0.3, 0.5, 0.7])
    np.testing.assert_allclose(dg.grad(f)(x), np.cos(x) * np.arange(3.0), rtol=1e-13)


@pytest.mark.parametrize("f", [
    lambda x: np.sum(np.swapaxes(x, 0, 3)),
    lambda x: np.sum(np.moveaxis(x, 0, 3)),
    lambda x: np.sum(np.expand_dims(x, 5)),
])
def test_out_of_range_axes_raise(f):
    """swapaxes/moveaxis/expand_dims wrapped an out-of-range axis around silently."""
    with pytest.raises(dg.DualgpuError, match="out of bounds"):
        dg.grad(f)(np.ones(3))


def test_constant_index_out_of_bounds_raises_while_tracing():
    """np.take(x, [5]) on a length-3 x failed inside the generated program with NumPy's
    IndexError; now it is a DualgpuError naming getitem."""
    with pytest.raises(dg.DualgpuError, match="getitem.*out of bounds"):
        dg.grad(lambda x: np.sum(np.take(x, [5])))(np.ones(3))


def test_batch_axes_out_of_range():
    """hvp(batch_axes=(3,)) on a 2-d argument wrapped the axis around silently."""
    with pytest.raises(dg.SeparabilityError, match="do not fit"):
        dg.hvp(lambda x: np.sum(x ** 2, axis=0), batch_axes=(3,))(np.ones((3, 5)),
                                                                   np.ones((3, 5)))


def test_len_of_a_0d_traced_value():
    with pytest.raises(dg.UnsupportedOpError, match="len"):
        dg.grad(lambda x: len(np.sum(x)) * np.sum(x))(np.ones(3))


# --------------------------------------------------------------------------- dtypes (fuzzer's
# float32 check): a graph's recorded dtypes must be what NumPy computes at run time
def test_where_of_python_scalars_is_not_weakly_typed():
    """np.where(c, 1.0, 0.5) is a float64 array in NumPy; the graph called it weak, so
    x32 * where(...) was float32 in the graph but float64 when run -- and the JVP of
    maximum/minimum/fmax/fmin (whose partials are such wheres) returned float64 tangents
    for float32 inputs."""
    x = np.linspace(-1, 1, 5).astype(np.float32)
    f = lambda x: x * np.where(x > 0, 1.0, 0.5)  # noqa: E731
    assert dg.trace(f, x).outputs[0].dtype == f(x).dtype == dg.jit(f)(x).dtype
    for op in (np.maximum, np.minimum, np.fmax, np.fmin):
        _, t = dg.jvp(lambda x, y, op=op: op(x, y * y), (x, x[::-1].copy()), (x, x))
        assert t.dtype == np.float32, op.__name__


def test_float32_grad_through_a_float64_sparse_matrix():
    """x32 @ A64 is float64 (as in SciPy), but the gradient with respect to x must have x's
    dtype; the sparse rule returned float64 (fixed in the backward pass for every rule)."""
    import scipy.sparse as sp

    A = sp.random(3, 4, density=0.5, format="csr", random_state=0)
    x = np.linspace(-1, 1, 4).astype(np.float32)
    f = lambda x: np.sum(np.sin(A @ x))  # noqa: E731
    assert dg.grad(f)(x).dtype == np.float32
    assert dg.hvp(f)(x, x).dtype == np.float32
    np.testing.assert_allclose(dg.grad(f)(x), A.T @ np.cos(A @ x.astype(np.float64)),
                               rtol=1e-5)


def test_static_list_mutated_in_place_traces_again():
    """Unhashable static arguments were cached by identity: a list of indices changed in
    place ran the program traced for its old contents."""
    x = np.linspace(-1, 1, 4)
    g = dg.grad(lambda x, idx: np.sum(x[idx] ** 2))
    idx = [0, 0, 1]
    np.testing.assert_allclose(g(x, idx), [4 * x[0], 2 * x[1], 0, 0])
    idx[:] = [3, 3, 3]
    np.testing.assert_allclose(g(x, idx), [0, 0, 0, 6 * x[3]])


def test_static_values_of_different_types_do_not_share_programs():
    """(1,) == (True,) in Python: static arguments are keyed with their types."""
    x = np.linspace(-1, 1, 4)
    g = dg.grad(lambda x, k: np.sum(x[k] ** 2))
    np.testing.assert_allclose(g(x, (1,)), [0, 2 * x[1], 0, 0])
    np.testing.assert_allclose(g(x, (True,)), 2 * x)  # x[True] is x[None]


def test_bool_scalar_index():
    """x[True] was read as x[1] (a bool is an int to Python): NumPy reads it as a 0-d mask,
    which adds an axis."""
    x = np.linspace(-1, 1, 4)
    f = lambda x: np.sum(x[True] ** 2 * np.arange(4.0))  # noqa: E731
    np.testing.assert_allclose(dg.jit(f)(x), f(x))
    np.testing.assert_allclose(dg.grad(f)(x), 2 * x * np.arange(4.0))
    with pytest.raises(dg.UnsupportedOpError, match="False"):
        dg.grad(lambda x: np.sum(x[False]))(x)


@pytest.mark.parametrize("argnums", [-3, 1.0, "0", (0, -3), None])
def test_invalid_argnums(argnums):
    """A negative argnums failed deep inside argument handling with list.index's
    ValueError. Now one counts from the end (as JAX), and one out of range is refused."""
    with pytest.raises(dg.DualgpuError, match="argnums"):
        dg.grad(lambda x, y: np.sum(x * y), argnums=argnums)(np.ones(2), np.ones(2))


def test_jvp_needs_tuples():
    """jvp(f, x, t) with bare arrays split them into their rows and called f with them."""
    with pytest.raises(dg.ShapeMismatchError, match="tuples"):
        dg.jvp(np.sin, np.ones(4), np.ones(4))


# --------------------------------------------------------------------------- NumPy surface
def test_ndarray_transpose_with_separate_axes():
    """x.transpose(1, 0) (ndarray's varargs form) raised TypeError on traced values."""
    x = np.arange(6.0).reshape(2, 3)
    f = lambda x: np.sum(x.transpose(1, 0) * np.arange(6.0).reshape(3, 2))  # noqa: E731
    np.testing.assert_allclose(dg.grad(f)(x), np.arange(6.0).reshape(3, 2).T)
    np.testing.assert_allclose(dg.jit(lambda x: x.transpose())(x), x.T)


def test_remainder_is_differentiable():
    """x % c had a zero derivative (registered as non-differentiable); its slope is 1 in x
    and -floor(x / y) in y."""
    x = np.array([0.25, 0.7, 1.3, -0.45])
    y = np.array([0.4, 0.3, 0.5, 0.35])
    np.testing.assert_allclose(dg.grad(lambda x: np.sum(x % 0.3))(x), np.ones(4))
    np.testing.assert_allclose(dg.grad(lambda y: np.sum(np.mod(x, y)))(y), -np.floor(x / y))
    check_grads(lambda x, y: np.sum(np.sin(np.remainder(x, y)) * y), (x, y), order=2)


def test_ufunc_methods_inside_traced_functions():
    """np.maximum.reduce(x) inside a traced function hit the rebound np.maximum, a plain
    function without .reduce (AttributeError)."""
    x = np.array([[0.3, -1.0, 2.0], [1.5, 0.2, -0.7]])
    f = lambda x: np.sum(np.maximum.reduce(x, axis=1)) + np.sum(np.add.reduce(x ** 2))  # noqa: E731
    np.testing.assert_allclose(dg.jit(f)(x), f(x))
    want = 2 * x
    want[0, 2] += 1
    want[1, 0] += 1
    np.testing.assert_allclose(dg.grad(f)(x), want)
    with pytest.raises(dg.UnsupportedOpError, match="logaddexp.reduce"):
        dg.grad(lambda x: np.sum(np.logaddexp.reduce(x, axis=0)))(x)


def test_argmax_methods_trace_as_numpys():
    """x.argmax() once had no rule; it is the argmax op now (dualgpu/ops/sorting.py)."""
    x = np.array([0.5, 2.0, -1.0])
    np.testing.assert_allclose(dg.grad(lambda x: np.sum(x * x.argmax()))(x), [1.0, 1.0, 1.0])
    np.testing.assert_allclose(dg.grad(lambda x: np.sum(x * x.argmin()))(x), [2.0, 2.0, 2.0])


def test_clip_with_numpy2_keywords():
    x = np.linspace(-1, 1, 5)
    f = lambda x: np.sum(np.clip(x, min=-0.5, max=0.6) ** 2)  # noqa: E731
    np.testing.assert_allclose(dg.jit(f)(x), f(x))


def test_numpy2_ufunc_aliases():
    """np.acos, np.atan2, np.asinh, np.mod (NumPy 2 names of arccos, arctan2, arcsinh,
    remainder) were 'no dualgpu rule' inside traced functions."""
    x = np.array([0.2, 0.4])
    f = lambda x: np.sum(np.acos(x) + np.atan2(x, 1.0) + np.asinh(x) + np.mod(x, 0.3))  # noqa: E731
    g = lambda x: np.sum(np.arccos(x) + np.arctan2(x, 1.0) + np.arcsinh(x) + x % 0.3)  # noqa: E731
    np.testing.assert_allclose(dg.grad(f)(x), dg.grad(g)(x), rtol=1e-14)


def test_ufunc_reduce_of_a_0d_value_and_positional_axis():
    """np.add.reduce(s) of a 0-d value is s in NumPy (dualgpu refused axis 0 of rank 0),
    and the axis may be passed positionally."""
    x = np.arange(6.0).reshape(2, 3)
    f = lambda x: np.sum(np.add.reduce(x, 1)) + np.add.reduce(np.sum(x ** 2))  # noqa: E731
    np.testing.assert_allclose(dg.jit(f)(x), f(x))
    np.testing.assert_allclose(dg.grad(f)(x), 1 + 2 * x)
