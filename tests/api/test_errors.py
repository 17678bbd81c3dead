"""The error catalogue: every DualgpuError subclass, raised on purpose, with a message that
names the op, the user's line or the argument at fault and says what to do. User mistakes
(shapes that do not fit, axes out of range) are DualgpuErrors naming the op -- never a deep
traceback from inside NumPy. NaN and Inf propagate as in NumPy, without an exception."""
from __future__ import annotations

import inspect
import os
import types
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import dualgpu as dg
from dualgpu import errors
from dualgpu.core.ir import Aval

HERE = os.path.basename(__file__)


def _line_of(fn, text: str) -> int:
    """The line number of the first line of ``fn``'s source containing ``text``."""
    lines, first = inspect.getsourcelines(fn)
    for k, line in enumerate(lines):
        if text in line:
            return first + k
    raise AssertionError(f"{text!r} not in the source of {fn.__name__}")


# --------------------------------------------------------------------------- UnsupportedOpError
def test_unsupported_op_is_named_with_the_users_line():
    def f(x):
        return np.sum(np.packbits(x > 0))  # the call at fault

    with pytest.raises(dg.UnsupportedOpError) as info:
        dg.grad(f)(np.ones(4))
    msg = str(info.value)
    assert "packbits" in msg and "no dualgpu rule" in msg
    assert f"{HERE}:{_line_of(f, 'the call at fault')}" in msg
    assert "defprim" in msg  # says what to do


# a table the tracer does not rebind: these calls reach the tracer through NumPy's protocols
_UNREBOUND = {"unique": np.unique, "spacing": np.spacing, "accumulate": np.add.accumulate}


@pytest.mark.parametrize("name", sorted(_UNREBOUND))
def test_unsupported_op_through_numpy_protocols(name):
    fn = _UNREBOUND[name]
    with pytest.raises(dg.UnsupportedOpError, match=name):
        dg.grad(lambda x: np.sum(fn(x)))(np.ones(3))


@pytest.mark.parametrize("f, what", [
    (lambda x: x.__setitem__(0, 1.0), "in-place assignment"),
    (lambda x: np.sum(x[x > 0]), "boolean mask"),
    (lambda x: np.sum(np.where(x > 0)[0]), "one argument"),
    (lambda x: np.sum(x.reshape(3, order="F")), "order"),
    (lambda x: np.sum(x) + "a", "str"),
    (lambda x: np.sum(x) * object(), "object"),
    (lambda x: len(np.sum(x)), "len()"),
])
def test_unsupported_uses_say_what_is_wrong(f, what):
    with pytest.raises(dg.UnsupportedOpError) as info:
        dg.grad(f)(np.ones(3))
    assert what in str(info.value)


# --------------------------------------------------------------------------- control flow
def test_control_flow_on_traced_value_names_file_and_line():
    def f(x):
        if np.sum(x) > 0:  # branch on a traced value
            return np.sum(x ** 2)
        return np.sum(x)

    with pytest.raises(dg.TracerControlFlowError) as info:
        dg.jit(f)(np.ones(3))  # dg.grad takes the branch the values take (issue 37)
    msg = str(info.value)
    assert f"{HERE}:{_line_of(f, 'branch on a traced value')}" in msg
    assert "np.where" in msg  # the suggestion
    assert isinstance(info.value, TypeError)  # what NumPy-style code expects


@pytest.mark.parametrize("f, what", [
    (lambda x: float(np.sum(x)), "float()"),
    (lambda x: np.sum(x).item(), ".item()"),
    (lambda x: np.ones(int(np.sum(x))), "int()"),
    (lambda x: np.sum(np.asarray(x.tolist())), ".tolist()"),
    (lambda x: np.sum(x) if np.all(x > 0) else 0.0, "bool()"),
])
def test_concrete_conversions_are_refused(f, what):
    with pytest.raises(dg.TracerControlFlowError) as info:
        dg.jit(f)(np.ones(3))  # under dg.grad: float() and .item() only (decisions.py)
    assert what in str(info.value) and HERE in str(info.value)


def test_while_loop_on_traced_value():
    def f(x):
        y = x
        while np.max(y) < 10:  # a data-dependent loop
            y = y * 2
        return np.sum(y)

    with pytest.raises(dg.TracerControlFlowError, match=f"{HERE}:{_line_of(f, 'data-dep')}"):
        dg.jit(f)(np.ones(2))


# --------------------------------------------------------------------------- escaped tracers
def test_escaped_tracer_used_later():
    leaked = []

    def f(x):
        leaked.append(x * 2)  # stores a traced value
        return np.sum(x)

    dg.grad(f)(np.ones(3))
    with pytest.raises(dg.EscapedTracerError) as info:
        leaked[0] + 1
    msg = str(info.value)
    assert "escaped" in msg and HERE in msg and "Return the value" in msg
    with pytest.raises(dg.EscapedTracerError):
        np.sin(leaked[0])  # through __array_ufunc__


def test_escaped_tracer_used_in_another_trace():
    leaked = []

    def f(x):
        leaked.append(x)
        return np.sum(x)

    dg.grad(f)(np.ones(3))
    with pytest.raises(dg.EscapedTracerError, match="another"):
        dg.grad(lambda y: np.sum(y * leaked[0]))(np.ones(3))


# --------------------------------------------------------------------------- non-scalar output
@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "hvp", "grad_and_hvp"])
def test_non_scalar_output(transform):
    f = lambda x: x * 2  # noqa: E731
    x = np.ones(3)
    t = getattr(dg, transform)(f)
    args = (x, x) if "hvp" in transform else (x,)
    with pytest.raises(dg.NonScalarOutputError) as info:
        t(*args)
    msg = str(info.value)
    assert "(3,)" in msg and "scalar" in msg and "np.sum" in msg


def test_tuple_output_to_grad():
    with pytest.raises(dg.NonScalarOutputError, match="tuple"):
        dg.grad(lambda x: (np.sum(x), np.sum(x)))(np.ones(3))
    with pytest.raises(dg.NonScalarOutputError, match="tuple"):
        dg.hvp(lambda x: (np.sum(x), np.sum(x)))(np.ones(3), np.ones(3))


# --------------------------------------------------------------------------- integer inputs
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_, np.uint8])
def test_integer_inputs(dtype):
    x = np.ones(3, dtype=dtype)
    with pytest.raises(dg.IntegerInputError) as info:
        dg.grad(lambda x: np.sum(x * 1.0))(x)
    msg = str(info.value)
    assert np.dtype(dtype).name in msg and "astype" in msg
    with pytest.raises(dg.IntegerInputError):
        dg.hvp(lambda x: np.sum(x * 1.0))(x, np.ones(3))
    # vjp follows JAX: an integer primal gets a float0 cotangent (test_conformance_transforms)
    (ct,) = dg.vjp(lambda x: x * 1.0, x)[1](np.ones(3))
    assert ct.dtype == dg.float0 and ct.shape == (3,)


def test_integer_static_argument_is_fine():
    g = dg.grad(lambda x, n: np.sum(x[n] ** 2))(np.arange(3.0), np.array([0, 2]))
    np.testing.assert_allclose(g, [0.0, 0.0, 4.0])


# --------------------------------------------------------------------------- shape mismatches
def test_hvp_direction_shape_mismatch():
    f = lambda x: np.sum(x ** 3)  # noqa: E731
    with pytest.raises(dg.ShapeMismatchError) as info:
        dg.hvp(f)(np.ones(3), np.ones(4))
    assert "(4,)" in str(info.value) and "(3,)" in str(info.value)
    with pytest.raises(dg.ShapeMismatchError, match="must be an array"):
        dg.hvp(f)(np.ones(3), [1.0, 2.0, 3.0])
    with pytest.raises(dg.ShapeMismatchError, match="one per differentiated argument"):
        dg.hvp(lambda x, y: np.sum(x * y), argnums=(0, 1))(np.ones(3), np.ones(3), np.ones(3))


def test_jvp_tangent_mismatch():
    with pytest.raises(dg.ShapeMismatchError, match=r"\(2, 3\)"):
        dg.jvp(np.sin, (np.ones(3),), (np.ones((2, 3)),))
    with pytest.raises(dg.ShapeMismatchError, match="1 primals but 2 tangents"):
        dg.jvp(np.sin, (np.ones(3),), (np.ones(3), np.ones(3)))


def test_vjp_cotangent_mismatch():
    _, pullback = dg.vjp(np.sin, np.ones(3))
    with pytest.raises(dg.ShapeMismatchError, match=r"\(4,\)"):
        pullback(np.ones(4))


# --------------------------------------------------------------------------- backends
class _FakeCupyArray:
    """Stands in for a CuPy array on machines without a GPU (the backend is chosen by the
    module of the array's type)."""

    __module__ = "cupy._core.core"

    def __init__(self, a):
        self.a = np.asarray(a)
        self.shape, self.dtype = self.a.shape, self.a.dtype


def _fake_cupy(monkeypatch):
    from dualgpu import backends
    from dualgpu.backends import cupy as cupy_backend

    class FakeBackend(backends.Backend):
        name = "cupy"
        on_device = True
        xp = types.SimpleNamespace(__name__="cupy")

        def is_array(self, x):
            return isinstance(x, _FakeCupyArray)

        def is_sparse(self, x):
            return False

    fake = FakeBackend()
    monkeypatch.setattr(cupy_backend, "get_cupy_backend", lambda: fake)
    return _FakeCupyArray


def _cupy_array_type(monkeypatch):
    from dualgpu.backends.cupy import cupy_available

    if cupy_available():
        import cupy

        return cupy.asarray
    return _fake_cupy(monkeypatch)


def test_mixed_numpy_and_cupy_arguments(monkeypatch):
    to_gpu = _cupy_array_type(monkeypatch)
    f = lambda x, y: np.sum(x * y)  # noqa: E731
    with pytest.raises(dg.BackendMismatchError) as info:
        dg.grad(f)(np.ones(3), to_gpu(np.ones(3)))
    assert "NumPy and CuPy" in str(info.value)


def test_cupy_direction_for_numpy_arguments(monkeypatch):
    to_gpu = _cupy_array_type(monkeypatch)
    with pytest.raises(dg.BackendMismatchError, match="cupy"):
        dg.hvp(lambda x: np.sum(x ** 3))(np.ones(3), to_gpu(np.ones(3)))


def test_cupy_constant_in_numpy_trace(monkeypatch):
    to_gpu = _cupy_array_type(monkeypatch)
    c = to_gpu(np.ones(3))
    with pytest.raises(dg.BackendMismatchError) as info:
        dg.grad(lambda x: np.sum(x * c))(np.ones(3))
    assert HERE in str(info.value)


# --------------------------------------------------------------------------- separability
def test_separability_error_names_op_and_line():
    def f(x):  # x: (3, n) -> one value per instance? no: it sums over instances
        return np.sum(x ** 2, axis=1)  # couples instances

    x = np.ones((3, 5))
    with pytest.raises(dg.SeparabilityError) as info:
        dg.hvp(f, batch_axes=(1,))(x, x)
    msg = str(info.value)
    assert "reduce_sum" in msg and f"{HERE}:{_line_of(f, 'couples instances')}" in msg
    assert "batch_axes=(1,)" in msg


@pytest.mark.parametrize("f, batch_axes, what", [
    (lambda x: np.sum(x ** 2), (1,), "reduces over an instance axis"),
    (lambda x: np.exp(-np.sum(x ** 2, axis=0)) @ np.ones(5), (1,), "contracts"),
    (lambda x: np.exp(-np.sum(x ** 2, axis=0))[::-1], (1,), "reorders"),
    (lambda x: np.cumsum(np.sum(x, axis=0)), (1,), "accumulates"),
    (lambda x: np.sum(x ** 2, axis=0), (3,), "do not fit"),
    (lambda x: x ** 2, (1,), "one value per instance"),
])
def test_separability_errors(f, batch_axes, what):
    x = np.ones((3, 5))
    with pytest.raises(dg.SeparabilityError, match=what):
        dg.hvp(f, batch_axes=batch_axes)(x, x)


def test_separable_function_is_accepted():
    f = lambda x: np.exp(-np.sum(x ** 2, axis=0))  # noqa: E731
    x = np.random.default_rng(0).standard_normal((3, 5))
    v = np.random.default_rng(1).standard_normal((3, 5))
    got = dg.hvp(f, batch_axes=(1,))(x, v)
    for i in range(5):
        one = dg.hvp(lambda y: f(y[:, None])[0])(x[:, i], v[:, i])
        np.testing.assert_allclose(got[:, i], one, rtol=1e-12)


# --------------------------------------------------------------------------- graph validation
def test_graph_validation_error_names_equation():
    g = dg.trace(lambda x: np.sum(np.sin(x)), np.ones(3))
    eqn = next(e for e in g.eqns if e.prim.name == "sin")
    eqn.outs[0].aval = Aval((4,), np.dtype(np.float64))
    with pytest.raises(errors.GraphValidationError, match="sin.*float64\\[4\\]"):
        g.validate()


# --------------------------------------------------------------------------- sparse formats
@pytest.mark.parametrize("make, fmt", [
    (sp.dia_matrix, "dia"), (sp.lil_matrix, "lil"), (sp.bsr_matrix, "bsr"),
    (sp.dia_array, "dia"),
    (sp.dok_matrix, "dok"),
])
def test_unsupported_sparse_formats(make, fmt):
    A = make(np.eye(3))
    with pytest.raises(dg.UnsupportedSparseFormatError) as info:
        dg.grad(lambda x: np.sum(A @ x))(np.ones(3))
    msg = str(info.value)
    assert fmt in msg and "tocsr" in msg


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_supported_sparse_formats(fmt):
    A = sp.random(4, 3, density=0.6, format=fmt, random_state=0)
    x = np.linspace(-1, 1, 3)
    np.testing.assert_allclose(dg.grad(lambda x: np.sum(np.tanh(A @ x)))(x),
                               A.T @ (1 - np.tanh(A @ x) ** 2), rtol=1e-12)


# --------------------------------------------------------------------------- codegen safety
def test_codegen_safety_error():
    with pytest.raises(dg.CodegenSafetyError, match="not allowed"):
        dg.defprim("x; import os", lambda xp, x: x, lambda avals: avals[0])


# --------------------------------------------------------------------------- user shape errors
_USER_ERRORS = [
    ("add", lambda x: np.sum(x + np.ones(7)), "add: shapes (3,), (7,)"),
    ("matmul", lambda x: np.sum(x @ np.ones((4, 2))), "matmul"),
    ("reshape", lambda x: np.sum(x.reshape(4)), "reshape"),
    ("index", lambda x: x[10], "out of bounds"),
    ("too many indices", lambda x: x[0, 1], "too many indices"),
    ("take", lambda x: np.sum(np.take(x, [5])), "out of bounds"),
    ("sum axis", lambda x: np.sum(x, axis=3), "axis 3"),
    ("transpose", lambda x: np.sum(np.transpose(np.ones((2, 3)) * x, (0, 0))), "transpose"),
    ("swapaxes", lambda x: np.sum(np.swapaxes(x, 0, 3)), "swapaxes"),
    ("moveaxis", lambda x: np.sum(np.moveaxis(x, 0, 3)), "moveaxis"),
    ("expand_dims", lambda x: np.sum(np.expand_dims(x, 5)), "expand_dims"),
    ("concatenate", lambda x: np.sum(np.concatenate([x, np.ones((2, 3))])), "concatenate"),
    ("stack", lambda x: np.sum(np.stack([x, np.ones(4)])), "concatenate"),
    ("einsum", lambda x: np.einsum("i,i->", x, np.ones(4)), "einsum"),
    ("broadcast_to", lambda x: np.sum(np.broadcast_to(x, (2, 4))), "broadcast_to"),
    ("where", lambda x: np.sum(np.where(x > 0, x, np.ones(5))), "where"),
    ("pad", lambda x: np.sum(np.pad(x, ((1, 1), (1, 1), (1, 1)))), "pad"),
    ("repeat", lambda x: np.sum(np.repeat(x, -1)), "repeat"),
    ("squeeze", lambda x: np.sum(np.squeeze(x, 0)), "squeeze"),
    ("split", lambda x: np.sum(np.split(x, 2)[0]), "split"),
    ("tensordot", lambda x: np.sum(np.tensordot(x, np.ones(4), axes=1)), "einsum"),
    ("matmul of a scalar", lambda x: np.sum(x) @ x, "matmul"),
    ("float index", lambda x: x[np.array([0.5])], "integers"),
]


@pytest.mark.parametrize("name, f, what", _USER_ERRORS, ids=[c[0] for c in _USER_ERRORS])
def test_user_shape_errors_are_dualgpu_errors(name, f, what):
    with pytest.raises(dg.DualgpuError) as info:
        dg.grad(f)(np.ones(3))
    assert what in str(info.value)
    # raised on purpose by dualgpu with a one-line message, not an exception from NumPy
    assert "\n" not in str(info.value)
    assert info.value.__cause__ is None or isinstance(info.value.__cause__, dg.DualgpuError)


def test_shape_error_names_users_line():
    def f(x):
        return np.sum(x + np.ones(7))  # mismatched shapes

    with pytest.raises(dg.DualgpuError) as info:
        dg.hvp(f)(np.ones(3), np.ones(3))
    assert f"{HERE}:{_line_of(f, 'mismatched shapes')}" in str(info.value)


# --------------------------------------------------------------------------- NaN and Inf
def test_inf_propagates_through_grad_and_hvp():
    f = lambda x: np.sum(np.log(x))  # noqa: E731
    x = np.array([0.0, 1.0, 2.0])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, g = dg.value_and_grad(f)(x)
        hv = dg.hvp(f)(x, np.ones(3))
        want_g = 1 / x
        want_hv = -1 / x ** 2
    assert value == -np.inf
    np.testing.assert_array_equal(g, want_g)
    np.testing.assert_array_equal(hv, want_hv)


def test_nan_propagates_through_grad_hvp_and_jvp():
    f = lambda x: np.sum(np.sin(x) ** 2)  # noqa: E731
    x = np.array([np.nan, 0.5])
    with np.errstate(all="ignore"):
        g = dg.grad(f)(x)
        hv = dg.hvp(f)(x, np.array([1.0, 1.0]))
        out, out_dot = dg.jvp(np.sqrt, (np.array([-1.0, 4.0]),), (np.ones(2),))
    assert np.isnan(g[0]) and np.isclose(g[1], np.sin(1.0))
    assert np.isnan(hv[0]) and np.isclose(hv[1], 2 * np.cos(1.0))
    assert np.isnan(out[0]) and np.isnan(out_dot[0]) and out_dot[1] == 0.25


def test_inf_input_follows_numpy():
    f = lambda x: np.sum(np.exp(-x))  # noqa: E731
    x = np.array([np.inf, 0.0])
    g = dg.grad(f)(x)
    np.testing.assert_array_equal(g, [-0.0, -1.0])
    with np.errstate(invalid="ignore"):
        hv = dg.hvp(lambda x: np.sum(x * np.exp(-x)))(np.array([np.inf]), np.ones(1))
    assert np.isnan(hv[0])  # inf * 0, as NumPy computes it


def test_errstate_raise_is_respected():
    """Floating-point errors follow np.errstate, as in NumPy code: raise only when asked."""
    f = lambda x: np.sum(np.log(x))  # noqa: E731
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        dg.grad(f)(np.array([0.0, 1.0]))


def test_axis_error_names_op_axis_and_line():
    def f(x):
        return np.sum(np.transpose(x, (0, 5)))
    with pytest.raises(dg.AxisError) as info:
        dg.grad(f)(np.ones((2, 2)))
    msg = str(info.value)
    assert "transpose" in msg and "axis 5" in msg and "test_errors.py" in msg
    assert isinstance(info.value, np.exceptions.AxisError)


def test_random_in_trace_names_the_call_and_says_what_to_do():
    def f(x):  # a draw per example would be one draw shared by the batch
        return np.sum(x * np.random.rand(3))
    with pytest.raises(dg.RandomInTraceError) as info:
        dg.vmap(f)(np.ones((2, 3)))
    msg = str(info.value)
    assert "numpy.random.rand" in msg and "test_errors.py" in msg and "pass them in" in msg


def test_argument_type_error_names_the_option_and_is_a_type_error():
    with pytest.raises(dg.ArgumentTypeError) as info:
        dg.grad(lambda x: np.sum(x), has_aux="yes")
    assert "has_aux" in str(info.value) and isinstance(info.value, TypeError)


def test_invalid_argument_error_names_the_axis_and_is_a_value_error():
    with pytest.raises(dg.InvalidArgumentError) as info:
        dg.vmap(np.sin, in_axes=3)(np.ones(2))
    assert "axis" in str(info.value) and "3" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_index_out_of_bounds_names_the_index_and_line():
    # tests/transforms/test_index_bounds.py: every gather, executor
    pick = dg.jit(lambda x, i: x[i] * 2)
    with pytest.raises(dg.IndexOutOfBoundsError) as info:
        pick(np.ones(3), np.array([0, 3]))
    message = str(info.value)
    assert "index 3 is out of bounds" in message and "size 3" in message
    assert "test_errors.py" in message
    assert isinstance(info.value, IndexError)



def test_invalid_index_names_the_index_and_line():
    with pytest.raises(dg.InvalidIndexError) as info:
        dg.grad(lambda x: np.sum(x[np.array([0.5])]))(np.ones(3))
    assert "index arrays must be integers" in str(info.value) and "float64" in str(info.value)
    assert "test_errors.py" in str(info.value) and isinstance(info.value, IndexError)


from test_cupy_import import test_half_installed_cupy_names_the_missing_module  # noqa
from test_sparse_methods import test_other_sparse_methods_are_one_error_naming_the_method  # noqa
from test_jax_conformance_more import test_jit_raises_on_non_hashable_static_argnum  # noqa


# --------------------------------------------------------------------------- the catalogue
# each class and the tests above that check its message
def test_missing_rules_name_the_function_and_how_to_give_them():
    @dg.custom_jvp
    def foo(x):
        return x ** 2

    @dg.custom_vjp
    def bar(x):
        return x ** 2
    for call, words in [(lambda: foo(2.0), "foo has no JVP rule yet: give it with @foo.defjvp"),
                        (lambda: dg.grad(bar)(2.0), r"bar.defvjp\(fwd, bwd\)")]:
        with pytest.raises(dg.MissingRuleError, match=words) as info:
            call()
        assert isinstance(info.value, AttributeError)  # JAX's exception


COVERED = {
    "DualgpuError": "test_user_shape_errors_are_dualgpu_errors",
    "UnsupportedOpError": "test_unsupported_op_is_named_with_the_users_line",
    "TracerControlFlowError": "test_control_flow_on_traced_value_names_file_and_line",
    "EscapedTracerError": "test_escaped_tracer_used_later",
    "NonScalarOutputError": "test_non_scalar_output",
    "IntegerInputError": "test_integer_inputs",
    "ShapeMismatchError": "test_hvp_direction_shape_mismatch",
    "BackendMismatchError": "test_mixed_numpy_and_cupy_arguments",
    "SeparabilityError": "test_separability_error_names_op_and_line",
    "GraphValidationError": "test_graph_validation_error_names_equation",
    "UnsupportedSparseFormatError": "test_unsupported_sparse_formats",
    "CodegenSafetyError": "test_codegen_safety_error",
    "AxisError": "test_axis_error_names_op_axis_and_line",
    "RandomInTraceError": "test_random_in_trace_names_the_call_and_says_what_to_do",
    "ArgumentTypeError": "test_argument_type_error_names_the_option_and_is_a_type_error",
    "InvalidArgumentError": "test_invalid_argument_error_names_the_axis_and_is_a_value_error",
    "IndexOutOfBoundsError": "test_index_out_of_bounds_names_the_index_and_line",
    "InvalidIndexError": "test_invalid_index_names_the_index_and_line",
    "CupyImportError": "test_half_installed_cupy_names_the_missing_module",
    "SparseMethodError": "test_other_sparse_methods_are_one_error_naming_the_method",
    "StaticArgumentError": "test_jit_raises_on_non_hashable_static_argnum",
    "MissingRuleError": "test_missing_rules_name_the_function_and_how_to_give_them",
}


def test_every_error_class_has_a_test():
    classes = {name for name, obj in vars(errors).items()
               if isinstance(obj, type) and issubclass(obj, errors.DualgpuError)}
    missing = classes - set(COVERED)
    assert not missing, f"error classes without a message test: {sorted(missing)}"
    for test in COVERED.values():
        assert callable(globals()[test])


def test_errors_are_exported():
    for name in COVERED:
        assert getattr(dg, name, None) is getattr(errors, name) or name == "GraphValidationError"
