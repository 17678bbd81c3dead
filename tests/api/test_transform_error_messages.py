"""Bad input is one DualgpuError naming the argument at fault -- never a raw TypeError,
IndexError or AttributeError from deep inside dualgpu or NumPy.

One table: each row is a bad call, the DualgpuError subclass it must raise and substrings of
the message (the function and the argument). Covers the Hessian helpers (``hessp``,
``HessianOperator``, ``hessian``), ``dg.testing``, and the
argument checks of ``custom_op`` and ``defprim``.
"""
import warnings

import numpy as np
import pytest

import dualgpu as dg
from dualgpu import testing

f = lambda x: np.sum(x ** 3)  # noqa: E731
f2 = lambda x, y: np.sum(x ** 2 * y)  # noqa: E731
x = np.array([0.5, -1.0, 2.0])


def _H(*args, **kw):
    return dg.HessianOperator(*args, **kw)


_CASES = [
    # ----------------------------------------------------------------- HessianOperator
    ("HO list x", lambda: _H(f, [1.0, 2.0]), dg.DualgpuError, ["HessianOperator", "x", "list"]),
    ("HO None x", lambda: _H(f, None), dg.DualgpuError, ["HessianOperator", "x", "NoneType"]),
    ("HO str x", lambda: _H(f, "abc"), dg.DualgpuError, ["HessianOperator", "x", "str"]),
    ("HO int x", lambda: _H(f, np.arange(3)), dg.IntegerInputError,
     ["HessianOperator", "x", "int64", "astype"]),
    ("HO bool x", lambda: _H(f, True), dg.IntegerInputError, ["HessianOperator", "x"]),
    ("HO tuple argnums", lambda: _H(f2, x, x, argnums=(0, 1)), dg.DualgpuError,
     ["HessianOperator", "argnums", "(0, 1)"]),
    ("HO argnums str", lambda: _H(f, x, argnums="a"), dg.DualgpuError, ["argnums", "'a'"]),
    ("HO argnums out of range", lambda: _H(f, x, argnums=2), dg.DualgpuError,
     ["HessianOperator", "argnums=2"]),
    ("HO f not callable", lambda: _H(3, x), dg.DualgpuError, ["HessianOperator", "f", "int"]),
    ("HO wrong size v", lambda: _H(f, x) @ np.ones(4), dg.ShapeMismatchError,
     ["HessianOperator", "v", "(4,)", "3 entries"]),
    ("HO str v", lambda: _H(f, x) @ "abc", dg.DualgpuError, ["HessianOperator", "v", "str"]),
    ("HO None v", lambda: _H(f, x).matvec(None), dg.DualgpuError, ["v", "NoneType"]),
    ("HO complex v", lambda: _H(f, x) @ (1j * np.ones(3)), dg.ShapeMismatchError,
     ["v", "complex"]),
    ("HO 3-D v", lambda: _H(f, x).dot(np.ones((3, 1, 1))), dg.ShapeMismatchError,
     ["v", "(3, 1, 1)"]),
    ("HO matmat 1-D", lambda: _H(f, x).matmat(np.ones(3)), dg.ShapeMismatchError,
     ["V", "(3, k)"]),
    ("HO matmat wrong rows", lambda: _H(f, x).matmat(np.ones((4, 2))), dg.ShapeMismatchError,
     ["V", "(4, 2)"]),
    # ----------------------------------------------------------------- hessp
    ("hessp list x", lambda: dg.hessp(f)([1.0, 2.0], np.ones(2)), dg.DualgpuError,
     ["hessp", "x", "list"]),
    ("hessp int x", lambda: dg.hessp(f)(np.arange(3), np.ones(3)), dg.IntegerInputError,
     ["hessp", "x", "int64"]),
    ("hessp tuple argnums", lambda: dg.hessp(f2, argnums=(0, 1)), dg.DualgpuError,
     ["hessp", "argnums"]),
    ("hessp argnums str", lambda: dg.hessp(f, argnums="a"), dg.DualgpuError, ["argnums"]),
    ("hessp argnums too large", lambda: dg.hessp(f2, argnums=2)(x, x, x), dg.DualgpuError,
     ["hessp", "argnums=2"]),
    ("hessp wrong size p", lambda: dg.hessp(f)(x, np.ones(4)), dg.ShapeMismatchError,
     ["hessp", "p", "(4,)"]),
    ("hessp None p", lambda: dg.hessp(f)(x, None), dg.DualgpuError, ["hessp", "p", "NoneType"]),
    ("hessp str p", lambda: dg.hessp(f)(x, "abc"), dg.DualgpuError, ["hessp", "p"]),
    ("hessp f not callable", lambda: dg.hessp(3), dg.DualgpuError, ["hessp", "f"]),
    # ----------------------------------------------------------------- dense hessian
    ("hessian list", lambda: dg.hessian(f)([1.0, 2.0]), dg.DualgpuError,
     ["hessian", "argument 0", "list"]),
    ("hessian None", lambda: dg.hessian(f)(None), dg.DualgpuError, ["hessian", "argument 0"]),
    ("hessian str", lambda: dg.hessian(f)("abc"), dg.DualgpuError, ["hessian", "argument 0"]),
    ("hessian int", lambda: dg.hessian(f)(np.arange(3)), dg.IntegerInputError,
     ["argument 0", "int64"]),
    ("hessian argnums str", lambda: dg.hessian(f2, argnums="a"), dg.DualgpuError,
     ["argnums", "'a'"]),
    ("hessian no args", lambda: dg.hessian(f)(), dg.DualgpuError, ["hessian", "argument 0"]),
    ("hessian argnums out of range", lambda: dg.hessian(f, argnums=3)(x), dg.DualgpuError,
     ["hessian", "argument 3"]),
    ("hessian f not callable", lambda: dg.hessian(3), dg.DualgpuError, ["function"]),
    # ----------------------------------------------------------------- dg.testing
    ("check_grads unknown mode", lambda: testing.check_grads(f, (x,), modes=("bogus",)),
     dg.DualgpuError, ["check_grads", "mode", "bogus"]),
    ("check_grads no modes", lambda: testing.check_grads(f, (x,), modes=()), dg.DualgpuError,
     ["check_grads", "modes"]),
    ("check_grads order 3", lambda: testing.check_grads(f, (x,), order=3), dg.DualgpuError,
     ["check_grads", "order", "3"]),
    ("check_grads args array", lambda: testing.check_grads(f, x), dg.DualgpuError,
     ["check_grads", "args", "tuple", "ndarray"]),
    ("check_grads args None", lambda: testing.check_grads(f, None), dg.DualgpuError,
     ["check_grads", "args"]),
    ("check_grads no args", lambda: testing.check_grads(lambda: 1.0, ()), dg.DualgpuError,
     ["check_grads", "args is empty"]),
    ("check_grads int arg", lambda: testing.check_grads(f, (np.arange(3),)),
     dg.IntegerInputError, ["check_grads", "argument 0", "int64"]),
    ("check_grads str arg", lambda: testing.check_grads(f, ("abc",)), dg.DualgpuError,
     ["check_grads", "argument 0", "str"]),
    ("check_grads f not callable", lambda: testing.check_grads(3, (x,)), dg.DualgpuError,
     ["check_grads", "f", "int"]),
    ("check_jvp str arg", lambda: testing.check_jvp(f, ("a",)), dg.DualgpuError,
     ["check_jvp", "argument 0"]),
    ("check_vjp None arg", lambda: testing.check_vjp(f, (None,)), dg.DualgpuError,
     ["check_vjp", "argument 0"]),
    ("check_hvp argnum", lambda: testing.check_hvp(f, (x,), argnum=3), dg.DualgpuError,
     ["check_hvp", "argnum", "3"]),
    # ----------------------------------------------------------------- custom_op, defprim
    ("custom_op impl", lambda: dg.custom_op("te_a", 3), dg.DualgpuError, ["te_a", "impl"]),
    ("custom_op jvp", lambda: dg.custom_op("te_b", lambda xp, a: a, jvp=3), dg.DualgpuError,
     ["te_b", "jvp="]),
    ("custom_op vjp", lambda: dg.custom_op("te_c", lambda xp, a: a, vjp="v"), dg.DualgpuError,
     ["te_c", "vjp="]),
    ("custom_op shape", lambda: dg.custom_op("te_d", lambda xp, a: a, shape=1),
     dg.DualgpuError, ["te_d", "shape="]),
    ("custom_op doc", lambda: dg.custom_op("te_e", lambda xp, a: a, doc=1), dg.DualgpuError,
     ["te_e", "doc="]),
    ("custom_op impl without xp", lambda: dg.custom_op("te_f", lambda: 1), dg.DualgpuError,
     ["te_f", "impl(xp"]),
    ("custom_op arity", lambda: dg.custom_op("te_g", lambda xp, a: a)(x, x), dg.DualgpuError,
     ["te_g", "1 operand"]),
    ("defprim impl", lambda: dg.defprim("te_h", 3, lambda avals: avals[0]), dg.DualgpuError,
     ["te_h", "impl"]),
    ("defprim abstract_eval", lambda: dg.defprim("te_i", lambda xp, a: a, None),
     dg.DualgpuError, ["te_i", "abstract_eval"]),
    ("defprim jvp", lambda: dg.defprim("te_j", lambda xp, a: a, lambda avals: avals[0],
                                       jvp=1), dg.DualgpuError, ["te_j", "jvp="]),
    # ----------------------------------------------------------------- public transforms
    ("grad f not callable", lambda: dg.grad(3), dg.DualgpuError, ["function"]),
    ("grad argnums negative out of range", lambda: dg.grad(f, argnums=-2)(x), dg.DualgpuError,
     ["argnums", "-2"]),
    ("hvp direction None", lambda: dg.hvp(f)(x, None), dg.ShapeMismatchError, ["direction"]),
    ("jvp tangent shape", lambda: dg.jvp(f, (x,), (np.ones(4),)), dg.ShapeMismatchError,
     ["tangent", "(4,)"]),
]


@pytest.mark.parametrize("case", _CASES, ids=[c[0] for c in _CASES])
def test_bad_input_is_one_dualgpu_error_naming_the_argument(case):
    _, call, cls, needles = case
    with pytest.raises(cls) as info:
        call()
    msg = str(info.value)
    for needle in needles:
        assert needle in msg, (needle, msg)
    assert "\n" not in msg.strip(), msg


# ------------------------------------------------------------------------------ good input
def test_hessian_helpers_convert_float_scalars():
    assert float(dg.hessian(f)(2.0)) == 12.0
    assert float(dg.hessp(f)(2.0, 1.0)) == 12.0
    H = dg.HessianOperator(f, 2.0)
    assert H.shape == (1, 1)
    np.testing.assert_allclose(H @ np.ones(1), [12.0])


def test_hessian_helpers_accept_empty_points():
    """A function of no variables has an empty Hessian (as in NumPy and JAX)."""
    g = lambda x: np.sum(x ** 2) + 1.0  # noqa: E731
    assert dg.hessian(g)(np.ones(0)).shape == (0, 0)
    assert dg.hessian(g)(np.ones((2, 0))).shape == (2, 0, 2, 0)
    assert dg.hessp(g)(np.ones(0), np.ones(0)).shape == (0,)
    H = dg.HessianOperator(g, np.ones(0))
    assert H.shape == (0, 0) and (H @ np.ones(0)).shape == (0,)


def test_hessian_operator_vectors():
    x2 = np.arange(1.0, 7.0).reshape(2, 3)
    H = dg.HessianOperator(f, x2)
    want = 6 * x2.ravel()
    np.testing.assert_allclose(H @ np.ones(6), want)
    np.testing.assert_allclose(H @ list(np.ones(6)), want)
    np.testing.assert_allclose(H @ np.ones((6, 1)), want[:, None])
    np.testing.assert_allclose(H.matvec(np.ones((2, 3))), want.reshape(2, 3))  # x's shape
    np.testing.assert_allclose(H @ np.ones(6, dtype=np.int64), want)  # cast to x's dtype
    np.testing.assert_allclose(H.matmat(np.ones((6, 2))), np.stack([want, want], axis=1))
    assert H.nprod == 7
    np.testing.assert_allclose(dg.hessp(f)(x2, np.ones(6)), want.reshape(2, 3))


def test_dense_hessian_matches_the_documented_example():
    np.testing.assert_allclose(dg.hessian(f)(np.array([1.0, 2.0])), [[6.0, 0.0],
                                                                          [0.0, 12.0]])
    np.testing.assert_allclose(dg.hessian(f2, argnums=1)(x, x), np.zeros((3, 3)))


# ------------------------------------------------------------------------------ check_grads
_wrong_vjp = dg.custom_op("te_wrong_vjp", lambda xp, a: a * a,
                          vjp=lambda g, p, ans: (3.0 * p[0] * g,))  # should be 2 * p[0] * g
_wrong_jvp = dg.custom_op("te_wrong_jvp", lambda xp, a: a * a,
                          jvp=lambda p, t, ans: 3.0 * p[0] * t[0])


@pytest.mark.parametrize("modes", [("rev",), ("fwd",), ("fwd", "rev"), "rev"])
@pytest.mark.parametrize("op", [_wrong_vjp, _wrong_jvp], ids=["vjp only", "jvp only"])
def test_every_mode_is_compared_against_finite_differences(op, modes):
    """A wrong rule is caught whatever the modes: the derived rule agrees with the wrong one,
    so comparing the two modes with each other would pass."""
    with pytest.raises(AssertionError):
        testing.check_grads(lambda a: op(a), (x,), order=1, modes=modes)


@pytest.mark.parametrize("modes", [("rev",), ("fwd",), ("fwd", "rev")])
def test_check_grads_passes_correct_derivatives_in_every_mode(modes):
    testing.check_grads(lambda a, b: np.tanh(a) * b, (x, 2 * x), order=2, modes=modes)
    testing.check_grads(lambda a: np.sum(np.sin(a) ** 2), (x,), order=2, modes=modes)


def test_check_vjp_fd_alone():
    testing.check_vjp_fd(np.tanh, (x,))
    with pytest.raises(AssertionError, match="finite differences"):
        testing.check_vjp_fd(lambda a: _wrong_vjp(a), (x,))


def test_check_grads_converts_float_scalars():
    testing.check_grads(lambda a: a ** 3, (2.0,), order=2)


def test_no_all_nan_warning_when_nan_is_compared():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AssertionError, match="NaN mismatch"):
            testing._assert_close(np.array([np.nan]), np.array([1.0]), 1e-5, 1e-6, "t")
        with pytest.raises(AssertionError, match="max excess error"):
            testing._assert_close(np.array([np.nan, 2.0]), np.array([np.nan, 1.0]), 1e-5,
                                  1e-6, "t")
        testing._assert_close(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]), 1e-5, 1e-6,
                              "t")


def test_check_grads_on_pytrees():
    """Dict, tuple and nested arguments and results; dict leaves line up by key whatever the
    insertion order."""
    params = {"w": np.array([0.3, -0.2]), "b": np.array(0.1)}  # not in sorted order
    X = np.array([[1.0, 2.0], [0.5, -1.0]])
    loss = lambda p, X: np.sum(np.tanh(X @ p["w"] + p["b"]) ** 2)  # noqa: E731
    for modes in [("fwd",), ("rev",), ("fwd", "rev")]:
        testing.check_grads(loss, (params, X), order=2, modes=modes)
    two = lambda p: (np.tanh(p["w"]) * p["b"], {"s": np.sin(p["w"])})  # noqa: E731
    testing.check_grads(two, (params,), order=2)
    testing.check_grads(lambda t: t[0] * np.sin(t[1]), ((np.ones(2), np.array([2.0, 3.0])),))
    wrong = lambda p: _wrong_vjp(p["w"]) + p["b"]  # noqa: E731
    with pytest.raises(AssertionError):
        testing.check_grads(wrong, (params,), order=1, modes=("rev",))


# a list of floats is a pytree of scalars (as JAX): a function that wants an array fails on
# it with one ArgumentTypeError naming the transform and the argument, for every transform
_sq = lambda x: np.sum(x ** 2)  # noqa: E731
_L = [1.0, 2.0]
_LIST_CALLS = {
    "grad": lambda: dg.grad(_sq)(_L),
    "value_and_grad": lambda: dg.value_and_grad(_sq)(_L),
    "hvp": lambda: dg.hvp(_sq)(_L, _L),
    "hessian": lambda: dg.hessian(_sq)(_L),
    "jvp": lambda: dg.jvp(_sq, (_L,), (_L,)),
    "vjp": lambda: dg.vjp(_sq, _L),
    "jacfwd": lambda: dg.jacfwd(np.sin)(_L),
    "jacrev": lambda: dg.jacrev(np.sin)(_L),
    "jit": lambda: dg.jit(_sq)(_L),
    "vmap": lambda: dg.vmap(np.sin)(_L),
    "laplacian": lambda: dg.laplacian(_sq)(_L),
    "jet": lambda: dg.jet(_sq, (_L,), ((_L,),)),
    "grad, in a dict": lambda: dg.grad(lambda d: np.sum(d["a"] ** 2))({"a": _L}),
}


@pytest.mark.parametrize("name", list(_LIST_CALLS))
def test_a_list_of_numbers_where_an_array_is_meant_is_one_clear_error(name):
    with pytest.raises(dg.ArgumentTypeError) as info:
        _LIST_CALLS[name]()
    message = str(info.value)
    assert name.split(",")[0] in message and "argument 0" in message
    assert "list of 2 numbers" in message and "np.asarray" in message
    assert len(message.splitlines()) == 1


def test_a_list_of_numbers_is_a_pytree_of_scalars_as_in_jax():
    product = lambda xs: xs[0] * xs[1] ** 2  # noqa: E731
    assert [float(g) for g in dg.grad(product)([3.0, 2.0])] == [4.0, 12.0]
    assert [[float(h) for h in row] for row in dg.hessian(product)([3.0, 2.0])] == \
        [[0.0, 4.0], [4.0, 6.0]]


@pytest.mark.parametrize("options, named", [
    ({"static_argnums": 5}, "static_argnums=(5,)"), ({"static_argnums": -3}, "(-3,)"),
    ({"static_argnames": "z"}, "'z'"), ({"static_argnames": ("y", "q")}, "('q',)")])
def test_static_arguments_the_function_has_no_parameter_for_are_refused_by_jit(options,
                                                                               named):
    # as JAX (test_jit_argnums_overflow_error): refused when jit is applied
    with pytest.raises(dg.InvalidArgumentError, match="jit") as info:
        dg.jit(lambda x, y: x * y, **options)
    assert named in str(info.value) and isinstance(info.value, ValueError)
    np.testing.assert_array_equal(dg.jit(lambda *a: a[0] * a[1], **options)(np.ones(2), 3.0)
                                  if "static_argnums" in options else
                                  dg.jit(lambda x, **kw: x * 3.0, **options)(np.ones(2)), 3.0)
