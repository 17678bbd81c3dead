"""More of JAX's own transformation tests (jax-ml/jax ``tests/api_test.py``), ported: each
test names the JAX test it mirrors. The linear functions ``vjp``, ``linearize`` and
``linear_transpose`` return are pytrees (JAX's ``tree_util.Partial``) whose leaves are their
residuals; the refusals JAX raises as ``TypeError`` are ``TypeError``\\ s; ``jit``'s static
arguments are keyed, refused and paired with their names as in JAX."""
import collections

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.core.trace import Tracer

x = np.array([0.5, -1.0, 2.0])
ct = np.array([1.0, 2.0, -3.0])


# ------------------------------------------------------------- linear functions as pytrees
def _double(v):
    return 2.0 * v


MAKERS = {  # JAX test name: (what makes the linear function of _double at 1.0, its result at 3)
    "test_vjp_fun_jit": (lambda f, v: dg.vjp(f, v)[1], (6.0,)),
    "test_linearize_fun_jit": (lambda f, v: dg.linearize(f, v)[1], 6.0),
    "test_linear_transpose_fun_jit": (lambda f, v: dg.linear_transpose(f, v), (6.0,)),
}


@pytest.mark.parametrize("jax_test", list(MAKERS))
def test_linear_functions_are_returned_from_and_passed_to_jit(jax_test):
    make, expected = MAKERS[jax_test]
    linearized = dg.jit(make, static_argnums=0)(_double, 1.0)  # returned from a jit
    apply = dg.jit(lambda f, v: f(v))
    assert apply(linearized, 3.0) == expected                  # and passed to one
    assert apply(make(_double, 1.0), 3.0) == expected          # made outside jit


def test_the_leaves_of_a_pullback_are_its_residuals():
    # JAX: vjp_fun is a Partial over the residuals; here the primal inputs are the residuals
    _, pullback = dg.vjp(lambda a, b: np.sin(a) * b, x, 2.0)
    leaves = dg.tree_util.tree_leaves(pullback)
    assert len(leaves) == 2
    np.testing.assert_array_equal(leaves[0], x)
    np.testing.assert_array_equal(leaves[1], 2.0)
    again = dg.tree_util.tree_unflatten(dg.tree_util.tree_structure(pullback), [x, 5.0])
    np.testing.assert_allclose(again(ct)[1], np.sum(ct * np.sin(x)))  # b's cotangent at b=5


def test_pullbacks_go_through_grad_and_vmap():
    _, pullback = dg.vjp(np.sin, x)
    # the derivative of ⟨c, J(x)ᵀ c⟩ = Σ c² cos x: in the residual (x) and in the cotangent
    g = dg.grad(lambda f, c: np.sum(c * f(c)[0]), argnums=(0, 1))(pullback, ct)
    np.testing.assert_allclose(dg.tree_util.tree_leaves(g[0])[0], -ct ** 2 * np.sin(x))
    np.testing.assert_allclose(g[1], 2 * ct * np.cos(x))
    cs = np.stack([ct, 2 * ct])
    out = dg.vmap(lambda f, c: f(c)[0], in_axes=(None, 0))(pullback, cs)
    np.testing.assert_allclose(out, cs * np.cos(x))


def test_a_pullback_made_inside_jit_holds_no_tracer_after_it():
    # JAX test_vjp_fun_jit, with an array: the returned pullback's leaves are concrete
    pullback = dg.jit(lambda v: dg.vjp(np.sin, v)[1])(x)
    assert not any(isinstance(leaf, Tracer) for leaf in dg.tree_util.tree_leaves(pullback))
    np.testing.assert_allclose(pullback(ct)[0], ct * np.cos(x))


def test_partial_is_a_pytree_whose_function_is_static():
    add = dg.tree_util.Partial(np.add, x)
    assert dg.tree_util.tree_leaves(add) == [x]
    np.testing.assert_allclose(dg.jit(lambda f, v: f(v))(add, ct), x + ct)
    inner = dg.tree_util.Partial(dg.tree_util.Partial(np.multiply, 2.0))  # not merged
    assert dg.tree_util.tree_leaves(inner) == []


# ------------------------------------------------------- refusals JAX raises as TypeError
def _foo(v):
    return (v, v)


TYPE_ERRORS = {  # JAX test name: the call JAX refuses with a TypeError
    "test_binop_mismatch": lambda: dg.grad(lambda a, b: np.sum(a + b))(np.zeros(3),
                                                                       np.zeros(4)),
    "test_dot_mismatch": lambda: dg.grad(lambda a, b: np.dot(a, b))(np.zeros(3), np.zeros(4)),
    "test_jvp_mismatched_arguments": lambda: dg.jvp(lambda a, b: a * b, (np.float32(2),), ()),
    "test_jvp_non_tuple_arguments": lambda: dg.jvp(lambda a, b: a + b, 0.0, (1.0,)),
    "test_jvp_non_tuple_arguments (tangents)": lambda: dg.jvp(lambda a, b: a + b, (0.0,),
                                                              np.array([1.0, 2.0])),
    "test_linear_transpose_error (tree)": lambda: dg.linear_transpose(
        lambda v: [v, v], 1.0)(1.0),
    "test_linear_transpose_error (shape)": lambda: dg.linear_transpose(
        lambda v: np.stack([v, v]), 1.0)(1.0),
    "test_linear_transpose_error (complex cotangent)": lambda: dg.linear_transpose(
        lambda v: v, 1.0)(1j),
    "test_vjp_multiple_arguments_error_message": lambda: dg.vjp(_foo, 1.0)[1](1.0, 1.0),
    "linearize: a tangent too many": lambda: dg.linearize(np.sin, x)[1](x, x),
    "test_staticmethod_is_not_supported": lambda: dg.jit(staticmethod(np.sin)),
}


@pytest.mark.parametrize("jax_test", list(TYPE_ERRORS))
def test_refusals_jax_raises_as_type_errors_are_type_errors(jax_test):
    with pytest.raises(TypeError) as info:
        TYPE_ERRORS[jax_test]()
    assert isinstance(info.value, dg.DualgpuError)


def test_cotangent_mismatches_are_also_value_errors():
    # JAX test_vjp_mismatched_arguments, test_vjp_bad_cotangent_shape: the pullback's
    # ValueError (linear_transpose's are TypeErrors, above): both, as for NumPy users
    _, pullback = dg.vjp(lambda a, b: a * b, np.float32(3), np.float32(4))
    with pytest.raises(ValueError, match="structure"):
        pullback((np.float32(7), np.float32(100)))
    _, pullback = dg.vjp(np.matmul, np.ones((2, 5), np.float32), np.ones((5, 3), np.float32))
    with pytest.raises(ValueError, match="shape"):
        pullback(np.ones((2, 4), dtype=np.float32))


# ------------------------------------------------------------ static arguments and traces
class Counted:
    """``fn`` with a count of its traces (in a deque: compared by identity by the guards)."""

    def __init__(self, fn):
        self.fn, self.traces = fn, collections.deque()

    def __call__(self, *args, **kwargs):
        self.traces.append(None)
        return self.fn(*args, **kwargs)


def test_jit_static_args_trace_once_per_static_value():
    # JAX test_jit_static_args, with NumPy int32 arrays (Python ints are static here)
    one, two, three = (np.asarray(i, np.int32) for i in (1, 2, 3))

    def f(a, b, c, flag=False, flag2=False):
        assert flag
        return 100 * a + 10 * b + c

    f = Counted(f)
    f1 = dg.jit(f, static_argnums=(3, 4))
    for args, want, traces in [((one, two, three, True, False), 123, 1),
                               ((one, two, three, True, False), 123, 1),
                               ((two, one, three, True, False), 213, 1),
                               ((two, one, three, True, True), 213, 2)]:
        assert f1(*args) == want and len(f.traces) == traces


def test_jit_kwargs_trace_again_only_for_a_new_way_of_passing():
    # JAX test_jit_kwargs
    one, two, three = (np.asarray(i, np.int32) for i in (1, 2, 3))
    f = Counted(lambda a, b, c: 100 * a + 10 * b + c)
    g = dg.jit(f)
    for call, traces in [(lambda: g(one, two, three), 1), (lambda: g(one, two, three), 1),
                         (lambda: g(one, two, c=three), 2), (lambda: g(one, two, c=three), 2)]:
        assert call() == 123 and len(f.traces) == traces


def test_jit_static_argnums_requires_type_equality():
    # JAX test of that name: 1, True and 1.0 are equal but key different programs
    f = Counted(lambda k: k)
    g = dg.jit(f, static_argnums=(0,))
    for n, k in enumerate([1, True, 1.0], start=1):
        assert g(k) == k and g(k) == k and len(f.traces) == n
        assert type(g(k).item()) is type(k)


def test_jit_with_mismatched_static_argnames():
    # JAX test of that name: given both, static_argnums and static_argnames are taken as
    # they are (a position given in one is not paired with its name in the other)
    seen = []

    def f(a, b):
        seen.append((isinstance(a, Tracer), isinstance(b, Tracer)))
        return 1.0

    dg.jit(f, static_argnums=1, static_argnames=())(2.0, "foo")
    dg.jit(f, static_argnums=1, static_argnames=())(1.0, b=2.0)
    dg.jit(f, static_argnums=(), static_argnames="b")(2.0, 3.0)
    dg.jit(f, static_argnums=(), static_argnames="b")(1.0, b="foo")
    dg.jit(f, static_argnums=(1,), static_argnames="a")(2.0, "foo")
    dg.jit(f, static_argnums=(1,), static_argnames="a")(1.0, b=3.0)
    assert seen == [(True, False), (True, True), (True, True), (True, False),
                    (True, False), (True, True)]


def test_jit_with_static_argnames_given_alone_pair_with_positions():
    # JAX test_jit_with_static_argnames, test_new_static_argnum_on_keyword_arguments
    g = dg.jit(lambda v: 1.0 if v == "foo" else 0.0, static_argnums=0)
    assert g("foo") == 1.0 and g(v="foo") == 1.0
    g = dg.jit(lambda v: 1.0 if v == "foo" else 0.0, static_argnames="v")
    assert g("foo") == 1.0 and g(v="foo") == 1.0


@pytest.mark.parametrize("static", [np.asarray(1), {1, 2}])
def test_jit_raises_on_non_hashable_static_argnum(static):
    # JAX test_jit_raises_on_first_invocation_on_non_hashable_static_argnum and
    # test_cpp_jit_raises_on_non_hashable_static_argnum: a ValueError (and a TypeError, as
    # dualgpu's refusal of a static array was). A set kept by identity would reuse a
    # program built for its old items after it changed.
    g = dg.jit(lambda a, b: a + 3, static_argnums=(1,))
    with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"
                       ) as info:
        g(1.0, static)
    assert isinstance(info.value, dg.StaticArgumentError) and isinstance(info.value, TypeError)
    assert "argument 1" in str(info.value) and type(static).__name__ in str(info.value)
    with pytest.raises(ValueError, match="keyword argument 'b'"):
        dg.jit(lambda a, b: a + 3, static_argnames="b")(1.0, b=static)


def test_static_argument_names_its_leaf_inside_a_tuple():
    with pytest.raises(dg.StaticArgumentError, match="holds a set"):
        dg.jit(lambda a, b: a, static_argnums=1)(1.0, (1, {2}))


def test_static_methods_jit_inside_staticmethod():
    # the spelling JAX suggests instead of test_staticmethod_is_not_supported's
    class A:
        @staticmethod
        @dg.jit
        def plus_two(v):
            return v + 2.0

    np.testing.assert_array_equal(A.plus_two(x), x + 2.0)
    np.testing.assert_array_equal(A().plus_two(x), x + 2.0)


def test_cpp_jit_raises_other_exceptions_when_hashing_fails():
    # JAX test of that name: the error of __hash__ itself, as it is
    class A:
        def __hash__(self):
            raise ValueError

    with pytest.raises(ValueError, match="^$"):
        dg.jit(lambda a: 1.0, static_argnums=(0,))(A())


def test_static_args_equality():
    """JAX's test_static_args_equality: a static argument of a class with its own __eq__ and
    __hash__ is keyed by equality, so an equal new instance does not trace again."""
    traces = []

    class Equal:
        def __hash__(self):
            return 1

        def __eq__(self, other):
            return isinstance(other, Equal)

    def f(x, a):
        traces.append(1)
        return x * 2.0

    g = dg.jit(f, static_argnums=1)
    assert g(1.0, Equal()) == 2.0 and g(1.0, Equal()) == 2.0
    assert len(traces) == 1
