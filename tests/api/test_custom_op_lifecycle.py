"""Custom ops can be trusted: re-registering a name replaces implementation and rules together
(cached programs included), every result of a user rule is checked and refused with one
DualgpuError naming the op and the rule, and derived-rule graphs live in a bounded cache that
dg.clear_cache() empties."""
import numpy as np
import pytest

import dualgpu as dg
from dualgpu.api import custom_op as custom
from dualgpu.core import primitives

X = np.array([0.5, -1.5, 2.0])


def _square_then_cube(name):
    """Register ``name`` as x**2 (with its VJP); ``_as_cube`` re-registers it as x**3."""
    return dg.custom_op(name, lambda xp, x: x * x, vjp=lambda g, p, ans: (2 * p[0] * g,))


def _as_cube(name):
    return dg.custom_op(name, lambda xp, x: x * x * x,
                        vjp=lambda g, p, ans: (3 * p[0] * p[0] * g,))


# ------------------------------------------------------------------------------ re-registration
def _runner(transform, f, v):
    """A zero-argument call of ``transform(f)`` (the transformed function made once)."""
    if transform == "jvp":
        return lambda: dg.jvp(f, (X,), (v,))
    g = getattr(dg, transform)(f)
    return (lambda: g(X, v)) if transform == "hvp" else (lambda: g(X))


_RUNS = ["grad", "value_and_grad", "hvp", "jit", "jvp"]


@pytest.mark.parametrize("transform", _RUNS)
def test_reregistration_replaces_impl_and_rules_in_cached_programs(transform):
    name = f"trust_rereg_{transform}"
    op = _square_then_cube(name)
    f = lambda x: np.sum(op(x) * 1.5)  # noqa: E731
    v = np.array([1.0, 0.5, -1.0])
    run = _runner(transform, f, v)
    run(), run()  # compiled, then served from the cache (and the fast path)
    _as_cube(name)  # the old handle `op` now means x**3 as well
    got = run()
    value, grad, hv = np.sum(1.5 * X ** 3), 4.5 * X ** 2, 9.0 * X * v
    want = {"grad": grad, "value_and_grad": (value, grad), "hvp": hv, "jit": value,
            "jvp": (value, np.sum(grad * v))}[transform]
    for a, b in zip(*(t if isinstance(t, tuple) else (t,) for t in (got, want))):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_reregistration_changes_derived_rules_too():
    name = "trust_rereg_derived"
    op = dg.custom_op(name, lambda xp, x: x * x, vjp=lambda g, p, ans: (2 * p[0] * g,))
    _, t1 = dg.jvp(op, (X,), (np.ones(3),))  # JVP derived from the VJP, cached
    np.testing.assert_allclose(t1, 2 * X)
    dg.custom_op(name, lambda xp, x: x * x * x, vjp=lambda g, p, ans: (3 * p[0] ** 2 * g,))
    out, t2 = dg.jvp(op, (X,), (np.ones(3),))
    np.testing.assert_allclose(out, X ** 3)
    np.testing.assert_allclose(t2, 3 * X ** 2)


def test_reregistration_bumps_the_registry_version_and_keeps_one_entry():
    name = "trust_rereg_version"
    a = _square_then_cube(name)
    v0 = primitives.registry_version()
    b = _as_cube(name)
    assert primitives.registry_version() > v0
    assert a.prim is b.prim is dg.REGISTRY[name]
    np.testing.assert_allclose(a(X), X ** 3)
    # a new name does not invalidate anything
    v1 = primitives.registry_version()
    dg.custom_op("trust_fresh_name", lambda xp, x: x, vjp=lambda g, p, ans: (g,))
    assert primitives.registry_version() == v1


def test_reregistration_without_rules_removes_the_old_rules():
    name = "trust_rereg_norules"
    op = _square_then_cube(name)
    f = lambda x: np.sum(op(x))  # noqa: E731
    g = dg.grad(f)
    np.testing.assert_allclose(g(X), 2 * X)
    dg.custom_op(name, lambda xp, x: x * x)  # no rules now
    with pytest.raises(dg.DualgpuError, match=name):
        g(X)


def test_builtin_names_are_still_refused():
    with pytest.raises(dg.DualgpuError, match="built-in"):
        dg.custom_op("sin", lambda xp, x: x, vjp=lambda g, p, ans: (g,))
    assert dg.REGISTRY["sin"].impl(np, np.zeros(1))[0] == 0.0


# ------------------------------------------------------------------------------ rule results
def _grad_through(op, x=X):
    return dg.grad(lambda x: np.sum(op(x)))(x)


def _jvp_through(op, x=X):
    return dg.jvp(op, (x,), (np.ones_like(x),))


_BAD_RULES = [
    # (id, custom_op kwargs, how it is used, expected class, substrings)
    ("vjp None", dict(vjp=lambda g, p, a: (None,)), _grad_through, dg.DualgpuError,
     ["vjp rule", "None for input 0", "zeros_like"]),
    ("vjp None, derived jvp", dict(vjp=lambda g, p, a: (None,)), _jvp_through,
     dg.DualgpuError, ["vjp rule", "None for input 0", "forward mode"]),
    ("vjp wrong shape", dict(vjp=lambda g, p, a: (np.ones(5),)), _grad_through,
     dg.ShapeMismatchError, ["vjp rule", "(5,)", "input 0"]),
    ("vjp same size, wrong shape", dict(vjp=lambda g, p, a: (np.reshape(g, (3, 2)),)),
     lambda op: _grad_through(op, np.ones((2, 3))), dg.ShapeMismatchError,
     ["vjp rule", "(3, 2)", "(2, 3)"]),
    ("vjp wrong shape, derived jvp", dict(vjp=lambda g, p, a: (np.ones(5),)), _jvp_through,
     dg.ShapeMismatchError, ["vjp rule", "(5,)"]),
    ("vjp string", dict(vjp=lambda g, p, a: ("abc",)), _grad_through, dg.DualgpuError,
     ["vjp rule", "str for input 0"]),
    ("vjp too many", dict(vjp=lambda g, p, a: (g, g)), _grad_through, dg.DualgpuError,
     ["vjp rule", "2 cotangents for 1 inputs"]),
    ("vjp complex", dict(vjp=lambda g, p, a: (g * 1j,)), _grad_through, dg.ShapeMismatchError,
     ["vjp rule", "complex128", "input 0"]),
    ("vjp raises", dict(vjp=lambda g, p, a: 1 / 0), _grad_through, dg.DualgpuError,
     ["vjp rule", "ZeroDivisionError"]),
    ("jvp None", dict(jvp=lambda p, t, a: None), _jvp_through, dg.DualgpuError,
     ["jvp rule", "None"]),
    ("jvp None, derived vjp", dict(jvp=lambda p, t, a: None), _grad_through, dg.DualgpuError,
     ["jvp rule", "None"]),
    ("jvp tuple", dict(jvp=lambda p, t, a: (t[0],)), _jvp_through, dg.DualgpuError,
     ["jvp rule", "tuple"]),
    ("jvp wrong shape", dict(jvp=lambda p, t, a: np.ones(5)), _jvp_through,
     dg.ShapeMismatchError, ["jvp rule", "(5,)", "(3,)"]),
    ("jvp wrong shape, derived vjp", dict(jvp=lambda p, t, a: np.ones(5)), _grad_through,
     dg.ShapeMismatchError, ["jvp rule", "(5,)"]),
    ("jvp complex", dict(jvp=lambda p, t, a: t[0] * 1j), _jvp_through, dg.ShapeMismatchError,
     ["jvp rule", "complex128"]),
    ("shape rule None", dict(shape=lambda a: None, vjp=lambda g, p, a: (g,)), _grad_through,
     dg.DualgpuError, ["shape rule", "None"]),
    ("shape rule string", dict(shape=lambda a: "ab", vjp=lambda g, p, a: (g,)), _grad_through,
     dg.DualgpuError, ["shape rule", "'ab'"]),
    ("shape rule raises", dict(shape=lambda a: a.nope, vjp=lambda g, p, a: (g,)),
     _grad_through, dg.DualgpuError, ["shape rule", "AttributeError"]),
    ("wrong arity", dict(vjp=lambda g, p, a: (g,)), lambda op: op(X, X), dg.DualgpuError,
     ["takes 1 operand(s), got 2"]),
]


@pytest.mark.parametrize("case", _BAD_RULES, ids=[c[0] for c in _BAD_RULES])
def test_bad_rule_results_are_named(case):
    label, kwargs, use, cls, needles = case
    name = "trust_bad_" + "".join(ch if ch.isalnum() else "_" for ch in label)
    op = dg.custom_op(name, lambda xp, x: x * 2.0, **kwargs)
    with pytest.raises(cls) as info:
        use(op)
    msg = str(info.value)
    assert name in msg, msg
    for needle in needles:
        assert needle in msg, (needle, msg)
    assert "\n" not in msg


def test_impl_whose_shape_disagrees_with_the_shape_rule():
    op = dg.custom_op("trust_bad_impl", lambda xp, x: xp.sum(x), vjp=lambda g, p, a: (g,))
    with pytest.raises(dg.ShapeMismatchError, match="impl of custom op 'trust_bad_impl'"):
        op(X)  # eager
    with pytest.raises(dg.ShapeMismatchError, match="shape="):
        dg.jit(lambda x: op(x) * 2)(X)  # compiled


@pytest.mark.parametrize("kwargs, needle", [
    (dict(vjp=3), "vjp="), (dict(jvp="f"), "jvp="), (dict(shape=1), "shape="),
    (dict(doc=3), "doc="),
])
def test_bad_custom_op_arguments(kwargs, needle):
    with pytest.raises(dg.DualgpuError, match=needle):
        dg.custom_op("trust_bad_args", lambda xp, x: x, **kwargs)


def test_none_for_an_input_that_is_not_differentiated_is_fine():
    op = dg.custom_op("trust_partial_vjp", lambda xp, x, y: x * y,
                      vjp=lambda g, p, a: (g * p[1], None))
    f = lambda x, y: np.sum(op(x, y))  # noqa: E731
    np.testing.assert_allclose(dg.grad(f)(X, 2 * X), 2 * X)
    with pytest.raises(dg.DualgpuError, match="None for input 1"):
        dg.grad(f, argnums=1)(X, 2 * X)
    with pytest.raises(dg.DualgpuError, match="None for input 1"):
        dg.hvp(f, argnums=(0, 1))(X, X, (X, X))


def test_integer_input_needs_no_cotangent():
    op = dg.custom_op("trust_int_input", lambda xp, x, n: x * n,
                      vjp=lambda g, p, a: (g * p[1], None))
    g = dg.grad(lambda x, n: np.sum(op(x, n)))(X, np.array([1, 2, 3]))
    np.testing.assert_allclose(g, [1.0, 2.0, 3.0])


def test_rule_that_needs_itself_to_be_derived_is_refused():
    lin = dg.custom_op("trust_self_linear", lambda xp, x: 2.0 * x,
                       jvp=lambda p, t, a: lin(t[0]))  # applies the op to the tangent
    _, t = dg.jvp(lin, (X,), (np.ones(3),))
    np.testing.assert_allclose(t, 2.0)
    with pytest.raises(dg.DualgpuError, match="give both jvp= and vjp="):
        dg.grad(lambda x: np.sum(lin(x)))(X)


# ------------------------------------------------------------------------------ derived rules
def test_derived_rule_cache_is_bounded_and_clearable(monkeypatch):
    """Derived rules are entries of the one cache: bounded by dg.config["cache_size"]."""
    op = dg.custom_op("trust_derived_bound", lambda xp, x: x * x,
                      vjp=lambda g, p, ans: (2 * p[0] * g,))
    custom.clear_derived_rules()
    monkeypatch.setitem(dg.config, "cache_size", 3)
    for n in range(1, 7):  # six input shapes: six derived JVP graphs (and six programs)
        dg.jvp(op, (np.ones(n),), (np.ones(n),))
    info = custom.derived_rules_info()
    assert 1 <= info["size"] <= 3 and info["maxsize"] == 3
    custom.clear_derived_rules()
    assert custom.derived_rules_info()["size"] == 0
    _, t = dg.jvp(op, (X,), (np.ones(3),))  # rebuilt on demand
    np.testing.assert_allclose(t, 2 * X)


def test_reregistration_clears_derived_rules():
    name = "trust_derived_rereg"
    op = dg.custom_op(name, lambda xp, x: x * x, vjp=lambda g, p, ans: (2 * p[0] * g,))
    dg.jvp(op, (X,), (np.ones(3),))
    assert custom.derived_rules_info()["size"] >= 1
    dg.custom_op(name, lambda xp, x: x * x, vjp=lambda g, p, ans: (2 * p[0] * g,))
    assert custom.derived_rules_info()["size"] == 0


def test_clear_cache_clears_derived_rules():
    op = dg.custom_op("trust_derived_clear", lambda xp, x: x * x,
                      vjp=lambda g, p, ans: (2 * p[0] * g,))
    dg.jvp(op, (X,), (np.ones(3),))
    assert custom.derived_rules_info()["size"] >= 1
    dg.clear_cache()
    assert custom.derived_rules_info()["size"] == 0
