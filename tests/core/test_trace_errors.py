"""Issue 23, raw or unclear errors while tracing: each one either works (checked against
NumPy, closed forms or finite differences) or raises one DualgpuError that names the
user's source line (or the argument) and the fix -- never a raw ValueError, TypeError or
RecursionError from NumPy or from deep inside dualgpu.
"""
import numpy as np
import pytest

import dualgpu as dg

THIS_FILE = __file__
x3 = np.array([0.5, -1.0, 2.0])


def _line_of(fn, text: str) -> str:
    """``file:line`` of the line of ``fn``'s source that contains ``text``."""
    import inspect

    lines, start = inspect.getsourcelines(fn)
    for k, line in enumerate(lines):
        if text in line:
            return f"{THIS_FILE}:{start + k}"
    raise AssertionError(f"{text!r} not in {fn.__name__}")


# ----------------------------------------------------------------- deeply nested outputs
def _nested(value, depth: int):
    for _ in range(depth):
        value = (value,)
    return value


def _innermost(tree, depth: int):
    for _ in range(depth):
        assert type(tree) is tuple and len(tree) == 1
        tree = tree[0]
    return tree


@pytest.mark.parametrize("depth", [2000])
def test_outputs_nested_thousands_deep(depth):
    f = lambda a: _nested(a * 2.0, depth)  # noqa: E731
    out = dg.jit(f)(x3)
    np.testing.assert_array_equal(_innermost(out, depth), x3 * 2.0)
    ans, ans_dot = dg.jvp(f, (x3,), (np.ones(3),))
    np.testing.assert_array_equal(_innermost(ans_dot, depth), np.full(3, 2.0))
    ans, pullback = dg.vjp(f, x3)
    (ct,) = pullback(_nested(np.array([1.0, 2.0, 3.0]), depth))
    np.testing.assert_array_equal(ct, [2.0, 4.0, 6.0])
    loss, aux = dg.grad(lambda a: (np.sum(a ** 2), _nested(a, depth)), has_aux=True)(x3)
    np.testing.assert_array_equal(loss, 2 * x3)
    np.testing.assert_array_equal(_innermost(aux, depth), x3)


def test_tree_flatten_unflatten_nested_thousands_deep():
    tree = _nested({"w": np.ones(2), "b": [1.0, None]}, 3000)
    leaves, treedef = dg.tree.flatten(tree)
    assert len(leaves) == 2 and treedef.num_leaves == 2
    assert treedef == dg.tree.structure(_nested({"w": 0, "b": [0, None]}, 3000))
    assert treedef != dg.tree.structure(_nested({"w": 0, "b": [0, 0]}, 3000))
    back = dg.tree.unflatten(treedef, leaves)
    assert _innermost(back, 3000)["b"] == [1.0, None]
    assert str(treedef).startswith("a tuple ((((")


# ----------------------------------------------------------------- writing into NumPy arrays
# (an array made in the trace takes traced writes: tests/frontend/test_inplace_writes.py; one
# the user owns does not, the user would see it changed after the call)
OUT = np.zeros(3)
OUT_INT = np.zeros(3, dtype=np.int64)


def _store_scalar(a):
    OUT[0] = a[0] ** 2  # the autograd idiom, into a global
    return np.sum(OUT)


def _store_slice(a):
    view = OUT[:]
    view[:2] = a[:2] ** 2  # a view of a global is the user's too
    return np.sum(OUT)


def _store_into_int_array(a):
    OUT_INT[1] = np.sum(a)
    return a


@pytest.mark.parametrize("fn, text", [(_store_scalar, "OUT[0] ="), (_store_slice, "view[:2] ="),
                                      (_store_into_int_array, "OUT_INT[1] =")])
@pytest.mark.parametrize("transform", [dg.grad, dg.jit])
def test_writing_a_traced_value_into_a_users_numpy_array(fn, text, transform):
    with pytest.raises(dg.TracerControlFlowError) as info:
        transform(fn)(x3)
    message = str(info.value)
    assert "written into a NumPy array" in message
    assert _line_of(fn, text) in message
    assert "copy" in message and "np.where" in message
    assert not OUT.any() and not OUT_INT.any()


def test_writing_into_a_numpy_array_is_reported_even_if_the_function_fails_later():
    out = np.zeros(2)

    def f(a):
        out[0] = a[0]  # a closure cell: the caller's
        if out[0] > 0.0:  # the NaN placeholder must not decide anything silently
            raise RuntimeError("user code saw a concrete value")
        return np.sum(out * a[:2])

    with pytest.raises(dg.TracerControlFlowError, match="written into a NumPy array"):
        dg.grad(f)(x3)


def test_a_write_into_an_attributes_array_says_numpy_already_changed_it():
    """An array held by an object's attribute is not seen by the trace before NumPy writes
    the conversion's placeholder into it: the refusal says so (not a silent change)."""
    class Holder:
        buf = None

    holder = Holder()
    holder.buf = np.zeros(2)

    def f(a):
        holder.buf[0] = a[0]
        return np.sum(a)

    with pytest.raises(dg.TracerControlFlowError, match="already stored nan at that position"):
        dg.grad(f)(x3)


def test_the_functional_alternatives_named_by_the_message_work():
    def stacked(a):
        return np.sum(np.stack([a[0] ** 2, np.zeros(()), np.zeros(())]))

    def masked(a):
        return np.sum(np.where(np.arange(3) == 0, a ** 2, 0.0))

    for f in (stacked, masked):
        np.testing.assert_allclose(dg.grad(f)(x3), [2 * x3[0], 0.0, 0.0])


# ----------------------------------------------------------------- np.vectorize and math.sin
def _vectorized(a):
    return np.sum(np.vectorize(lambda t: t * 2.0)(a))


def test_np_vectorize_traces_its_function_on_whole_arrays():
    """It was refused (NumPy calls the function on concrete elements); the front end's
    vectorize calls it once on the traced arrays (tests/frontend/test_vectorize.py)."""
    np.testing.assert_allclose(dg.grad(_vectorized)(x3), [2.0, 2.0, 2.0])


def _math_sin(a):
    import math

    return math.sin(a[0]) + np.sum(a)


def test_math_sin_names_the_users_line_and_suggests_np_sin():
    with pytest.raises(dg.DualgpuError) as info:
        dg.grad(_math_sin)(x3)
    message = str(info.value)
    assert _line_of(_math_sin, "math.sin(") in message
    assert "np.sin" in message


# ----------------------------------------------------------------- the math module
import math  # noqa: E402  (module level on purpose: the traced functions read it as a global)
from math import exp as math_exp  # noqa: E402


def _global_math_sin(a):
    return math.sin(a[0]) + np.sum(a)


def _imported_math_exp(a):
    return math_exp(np.sum(a))


@pytest.mark.parametrize("fn, name, hint, line", [
    (_global_math_sin, "math.sin", "np.sin", "return math.sin"),
    (_imported_math_exp, "math.exp", "np.exp", "return math_exp")])
def test_math_functions_name_themselves_the_line_and_their_numpy_counterpart(fn, name, hint,
                                                                              line):
    with pytest.raises(dg.UnsupportedOpError) as info:
        dg.grad(fn)(x3)
    message = str(info.value)
    assert name in message and hint in message
    assert _line_of(fn, line) in message


def test_math_on_python_numbers_still_works_inside_a_trace():
    f = lambda a: np.sum(a) * math.sin(0.5) + math.pi  # noqa: E731
    np.testing.assert_allclose(dg.grad(f)(x3), np.full(3, math.sin(0.5)))


# ----------------------------------------------------------------- CuPy ufunc objects
class _FakeCupyUfunc:
    """Mimics ``cupy._core._kernel.ufunc``: a callable object (not a function) whose
    ``__name__`` is ``cupy_<op>``, and which refuses objects it does not know with a
    TypeError, as CuPy does with tracers. With ``override``, it first hands the call to an
    argument's ``__cupy_override_elementwise_kernel__``, as recent CuPy versions do."""

    def __init__(self, op: str, override: bool = False):
        self.name = self.__name__ = f"cupy_{op}"
        self.nin, self.nout, self.nargs = 1, 1, 2
        self._op = getattr(np, op)
        self._override = override

    def __call__(self, *args, **kwargs):
        for a in args:
            if self._override and hasattr(a, "__cupy_override_elementwise_kernel__"):
                return a.__cupy_override_elementwise_kernel__(self, *args, **kwargs)
            if not isinstance(a, (np.ndarray, np.generic, int, float)):
                raise TypeError(f"Unsupported type {type(a)}")
        return self._op(*args, **kwargs)

    def reduce(self, *args, **kwargs):
        raise NotImplementedError


@pytest.fixture
def fake_cupy_backend(monkeypatch):
    """Without CuPy installed: the backend that objects of ``cupy.*`` modules reach (no
    arrays, no sparse matrices), as on a machine with CuPy."""
    from dualgpu import backends
    from dualgpu.backends import cupy as cupy_backend

    class NoArrays(backends.Backend):
        name, on_device = "cupy", True

        def is_array(self, x):
            return False

        def is_sparse(self, x):
            return False

    if not cupy_backend.cupy_available():
        monkeypatch.setattr(cupy_backend, "get_cupy_backend", lambda: NoArrays())


_FakeCupyUfunc.__module__ = "cupy._core._kernel"
_FakeCupyUfunc.__name__ = _FakeCupyUfunc.__qualname__ = "ufunc"
fake_tanh = _FakeCupyUfunc("tanh")
_GLOBAL_ACT = fake_tanh


def _with_default(a, act=fake_tanh):
    return np.sum(act(a) ** 2)


def _with_kwdefault(a, *, act=fake_tanh):
    return np.sum(act(a) ** 2)


def _with_global(a):
    return np.sum(_GLOBAL_ACT(a) ** 2)


def _make_closure():
    act = fake_tanh

    def with_closure(a):
        return np.sum(act(a) ** 2)

    return with_closure


def _with_argument(a, act):
    return np.sum(act(a) ** 2)


def _grad_of_sum_tanh_squared(a):
    t = np.tanh(a)
    return 2 * t * (1 - t ** 2)


@pytest.mark.parametrize("fn", [_with_default, _with_kwdefault, _with_global, _make_closure(),
                                __import__("functools").partial(_with_argument,
                                                                act=fake_tanh)],
                         ids=["default", "kwdefault", "global", "closure", "partial"])
def test_captured_cupy_ufunc_objects_are_rebound(fn, fake_cupy_backend):
    np.testing.assert_allclose(dg.grad(fn)(x3), _grad_of_sum_tanh_squared(x3), rtol=1e-12)
    dg.testing.check_grads(fn, (x3,), order=2)


def test_cupy_ufunc_held_as_an_attribute_dispatches_through_cupys_override_hook(
        fake_cupy_backend):
    class Layer:
        act = _FakeCupyUfunc("tanh", override=True)

        def __call__(self, a):
            return np.sum(self.act(a) ** 2)

    np.testing.assert_allclose(dg.grad(Layer())(x3), _grad_of_sum_tanh_squared(x3),
                               rtol=1e-12)


def test_cupy_ufunc_without_a_rule_is_a_clear_error(fake_cupy_backend):
    holder = type("Holder", (), {})()
    holder.op = _FakeCupyUfunc("spacing", override=True)  # an attribute: not rebound

    def f(a):
        return np.sum(holder.op(a))

    with pytest.raises(dg.UnsupportedOpError) as info:
        dg.grad(f)(x3)
    # (the fake's __call__ is Python code in this file; CuPy's is compiled: the user's line)
    assert "cupy.spacing" in str(info.value) and THIS_FILE in str(info.value)


# ----------------------------------------------------------------- dg.nn
logits23 = np.array([[0.2, -1.0, 0.5], [1.5, 0.0, -0.3]])


def _cross_entropy_reference(z, labels):
    log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(log_p[np.arange(len(labels)), labels])


@pytest.mark.parametrize("labels", [np.array([0, 3]), np.array([-1, 2]), [5, 0]],
                         ids=["too large", "negative", "list"])
def test_cross_entropy_refuses_labels_out_of_range(labels):
    def loss(z):
        return dg.nn.cross_entropy(z, labels)

    with pytest.raises(dg.DualgpuError) as info:
        dg.grad(loss)(logits23)
    message = str(info.value)
    assert "labels" in message and "[0, 3)" in message
    assert _line_of(loss, "dg.nn.cross_entropy") in message
    with pytest.raises(dg.DualgpuError, match="labels"):
        dg.nn.cross_entropy(logits23, labels)  # concrete arrays, outside any trace


def test_cross_entropy_with_traced_labels_out_of_range_raises_not_a_wrong_class():
    loss = dg.jit(lambda z, labels: dg.nn.cross_entropy(z, labels))
    for labels in (np.array([-1, 2]), np.array([0, 3])):
        with pytest.raises(dg.errors.IndexOutOfBoundsError, match="out of bounds"):
            loss(logits23, labels)
    np.testing.assert_allclose(loss(logits23, np.array([2, 1])),
                               _cross_entropy_reference(logits23, [2, 1]), rtol=1e-12)


def test_cross_entropy_refuses_float_labels():
    with pytest.raises(dg.DualgpuError, match="integer"):
        dg.nn.cross_entropy(logits23, np.array([0.0, 1.0]))


def test_cross_entropy_in_range_matches_numpy_and_finite_differences():
    labels = [2, 0]
    np.testing.assert_allclose(dg.nn.cross_entropy(logits23, labels),
                               _cross_entropy_reference(logits23, labels), rtol=1e-12)
    dg.testing.check_grads(lambda z: dg.nn.cross_entropy(z, labels), (logits23,), order=2)


@pytest.mark.parametrize("name, reference", [
    ("sigmoid", lambda a: 1 / (1 + np.exp(-a))),
    ("silu", lambda a: a / (1 + np.exp(-a))),
    ("hard_tanh", lambda a: np.clip(a, -1.0, 1.0)),
])
def test_nn_activations_take_lists_like_numpy(name, reference):
    fn = getattr(dg.nn, name)
    np.testing.assert_allclose(fn([1.0, -2.0, 0.5]), reference(np.array([1.0, -2.0, 0.5])),
                               rtol=1e-15)
    np.testing.assert_allclose(fn((0.25,)), reference(np.array([0.25])), rtol=1e-15)


# ----------------------------------------------------------------- defprim shape rules
@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyError("axis"),
                                   ValueError("bad shapes"), ZeroDivisionError("zero")])
def test_a_raising_abstract_eval_names_the_primitive_and_chains_the_cause(error):
    def shape_rule(avals):
        raise error

    name = f"raising_shape_rule_{type(error).__name__.lower()}"
    prim = dg.defprim(name, lambda xp, a: a, shape_rule)

    def f(a):
        return np.sum(prim.bind(a))

    try:
        with pytest.raises(dg.DualgpuError) as info:
            dg.grad(f)(x3)
    finally:
        dg.REGISTRY.pop(name, None)  # leave the registry as the other tests expect
    assert name in str(info.value)
    assert _line_of(f, "prim.bind") in str(info.value)
    assert info.value.__cause__ is error


# ----------------------------------------------------------------- masked and object arrays
masked3 = np.ma.array(x3, mask=[False, True, False])
cube = lambda a: np.sum(a ** 3)  # noqa: E731


@pytest.mark.parametrize("call", [
    lambda: dg.grad(cube)(masked3),
    lambda: dg.jit(lambda a: a * 2.0)(masked3),
    lambda: dg.hvp(cube)(masked3, x3),
    lambda: dg.vjp(lambda a: a ** 3, masked3),
], ids=["grad", "jit", "hvp", "vjp"])
def test_masked_array_arguments_are_refused(call):
    with pytest.raises(dg.DualgpuError, match="MaskedArray"):
        call()


@pytest.mark.parametrize("call, what", [
    (lambda: dg.hvp(cube)(x3, masked3), "direction"),
    (lambda: dg.jvp(lambda a: a ** 3, (x3,), (masked3,)), "tangent"),
    (lambda: dg.vjp(lambda a: a ** 3, x3)[1](masked3), "cotangent"),
], ids=["hvp direction", "jvp tangent", "vjp cotangent"])
def test_masked_directions_and_cotangents_are_refused(call, what):
    with pytest.raises(dg.DualgpuError) as info:
        call()
    assert what in str(info.value) and "MaskedArray" in str(info.value)


def test_closed_over_masked_array_is_refused_at_the_users_line():
    def f(a):
        return np.sum(a * masked3)

    with pytest.raises(dg.DualgpuError) as info:
        dg.grad(f)(x3)
    assert "masked array" in str(info.value) and _line_of(f, "a * masked3") in str(info.value)


@pytest.mark.parametrize("ct", [np.array([None, 1, 2], dtype=object),
                                np.array([1, 2, 3], dtype=object)], ids=["None", "numbers"])
def test_object_dtype_cotangents_are_refused(ct):
    _, pullback = dg.vjp(lambda a: a ** 2, x3)
    with pytest.raises(dg.DualgpuError) as info:
        pullback(ct)
    assert "cotangent" in str(info.value) and "object" in str(info.value)


def test_object_dtype_cotangent_leaf_of_a_tuple_output_is_named():
    _, pullback = dg.vjp(lambda a: (a ** 2, np.sum(a)), x3)
    with pytest.raises(dg.DualgpuError, match="cotangent leaf 1"):
        pullback((np.ones(3), np.array(None, dtype=object)))


# ----------------------------------------------------------------- reshape's shape argument
x6 = np.linspace(-1.0, 1.5, 6)


@pytest.mark.parametrize("shape", [(3.0, 2), 6.0, (2, np.float64(3.0)), (True, 6), (-1, -2)],
                         ids=["float", "float scalar", "numpy float", "bool", "two unknown"])
@pytest.mark.parametrize("spelling", ["np.reshape", "method"])
def test_reshape_refuses_the_shapes_numpy_refuses(shape, spelling):
    with pytest.raises((TypeError, ValueError)):
        np.reshape(x6, shape)  # NumPy's verdict, on a concrete array

    def f(a):
        return np.sum((np.reshape(a, shape) if spelling == "np.reshape" else a.reshape(shape))
                      ** 2)

    with pytest.raises(dg.DualgpuError) as info:
        dg.grad(f)(x6)
    assert "reshape" in str(info.value) and repr(shape)[:4] in str(info.value)
    assert _line_of(f, "reshape(a, shape)") in str(info.value)


@pytest.mark.parametrize("shape", [(np.int32(2), 3), [2, -1], 6, np.int64(6), (3, 2, 1),
                                   (2, -3)])
def test_reshape_takes_the_shapes_numpy_takes(shape):
    want = np.reshape(x6, shape)
    np.testing.assert_array_equal(dg.jit(lambda a: np.reshape(a, shape))(x6), want)
    np.testing.assert_array_equal(dg.jit(lambda a: a.reshape(shape))(x6), want)


# ----------------------------------------------------------------- index arrays and batch_axes
a23 = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]])
v23 = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])
picks = np.array([2, 0])


@pytest.mark.parametrize("f", [
    lambda a, idx: a[np.arange(2), idx] ** 3,
    lambda a, idx: np.sum(np.take_along_axis(a, idx[:, None], axis=1) ** 3, axis=1),
], ids=["fancy index", "take_along_axis"])
def test_index_array_argument_with_batch_axes_is_not_differentiated(f):
    rows = np.arange(2)
    want = np.zeros_like(a23)  # d2/da2 of a[i, idx[i]]**3 is 6 a; zero elsewhere
    want[rows, picks] = 6 * a23[rows, picks] * v23[rows, picks]
    np.testing.assert_allclose(dg.hvp(f, batch_axes=0)(a23, picks, v23), want, rtol=1e-12)
    # the per-instance HVP equals the HVP of the sum, checked by finite differences too
    dg.testing.check_hvp(lambda a: np.sum(f(a, picks)), (a23,))


def test_index_array_as_the_differentiated_argument_is_refused():
    with pytest.raises(dg.IntegerInputError, match="argument 1"):
        dg.hvp(lambda a, idx: a[np.arange(2), idx] ** 3, argnums=1, batch_axes=0)(
            a23, picks, np.ones(2))


# ----------------------------------------------------------------- det of singular matrices
def _cofactor_closed_form(a):
    """cof(a) = adj(a)^T: 2x2 by its entries, 3x3 by cross products of the rows."""
    if a.shape == (2, 2):
        return np.array([[a[1, 1], -a[1, 0]], [-a[0, 1], a[0, 0]]])
    return np.stack([np.cross(a[1], a[2]), np.cross(a[2], a[0]), np.cross(a[0], a[1])])


def _cofactor_derivative_closed_form(a, t):
    """d cof(a)[t]: linear for 2x2, and the product rule on the cross products for 3x3."""
    if a.shape == (2, 2):
        return _cofactor_closed_form(t)
    rows = [(1, 2), (2, 0), (0, 1)]
    return np.stack([np.cross(t[i], a[j]) + np.cross(a[i], t[j]) for i, j in rows])


SINGULAR = {
    "2x2 rank 1": np.array([[1.0, 2.0], [2.0, 4.0]]),
    "2x2 zero row": np.array([[0.0, 0.0], [3.0, -1.0]]),
    "2x2 zero": np.zeros((2, 2)),
    "3x3 rank 2": np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]),
    "3x3 rank 1": np.outer([1.0, -2.0, 0.5], [3.0, 1.0, 2.0]),
    "3x3 repeated row": np.array([[2.0, 0.0, 1.0], [2.0, 0.0, 1.0], [0.5, 3.0, -1.0]]),
    "3x3 identity": np.eye(3),
}


@pytest.mark.parametrize("name", list(SINGULAR))
def test_det_gradient_is_the_cofactor_matrix_also_where_singular(name):
    a = SINGULAR[name]
    t = np.arange(1.0, a.size + 1).reshape(a.shape) / a.size
    assert float(dg.jit(np.linalg.det)(a)) == pytest.approx(np.linalg.det(a), abs=1e-12)
    g = dg.grad(np.linalg.det)(a)
    np.testing.assert_allclose(g, _cofactor_closed_form(a), atol=1e-12)
    np.testing.assert_allclose(dg.hvp(np.linalg.det)(a, t),
                               _cofactor_derivative_closed_form(a, t), atol=1e-11)
    dg.testing.check_grads(np.linalg.det, (a,), order=2)


def test_det_gradient_of_a_batch_with_singular_members_in_float32():
    batch = np.stack([SINGULAR["3x3 rank 2"], SINGULAR["3x3 rank 1"],
                      np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])])
    g = dg.grad(lambda a: np.sum(np.linalg.det(a)))(batch.astype(np.float32))
    assert g.dtype == np.float32
    want = np.stack([_cofactor_closed_form(m) for m in batch])
    np.testing.assert_allclose(g, want, rtol=2e-5, atol=2e-5)


def test_det_gradient_of_a_larger_singular_matrix_against_finite_differences():
    rng = np.random.default_rng(23)
    low_rank = rng.normal(size=(5, 4)) @ rng.normal(size=(4, 5))  # rank 4 of 5
    dg.testing.check_grads(np.linalg.det, (low_rank,), order=2)
    g = dg.grad(np.linalg.det)(low_rank)
    # rank n-1: cof(a) = adj(a)^T is the rank-one matrix det-scaled by the null vectors
    assert np.linalg.matrix_rank(g, tol=1e-8) == 1
    np.testing.assert_allclose(g @ low_rank.T, np.zeros((5, 5)), atol=1e-9)
