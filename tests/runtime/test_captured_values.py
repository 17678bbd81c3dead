"""Values a function reads from outside its arguments (globals, closure cells, defaults,
attributes of modules and objects): reassigned, the next call returns what a fresh build
returns (dualgpu/guards.py). Each test reassigns one kind of place and checks the cached
call against the closed form."""
from __future__ import annotations

import argparse
import array
import collections
import functools
import types
import warnings

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.runtime.guards import collect_guards

x = np.array([1.0, -1.0, 3.0])

act, COEF, MODE = np.tanh, (1.0, 2.0), "sin"
TABLE = {"k": 1.0}
ITEMS = [2.0]
knobs_module = types.ModuleType("knobs_module")  # a user module (not a library)
knobs_module.factor = 2.0


def f_act(x):
    return np.sum(act(x))


def f_coef(x):
    return np.sum(COEF[0] * x + COEF[1] * x ** 2)


def f_mode(x):
    return np.sum(np.sin(x) if MODE == "sin" else x ** 3)


def f_table(x):
    return np.sum(TABLE["k"] * x ** 2) + ITEMS[0] * np.sum(x)


def f_module(x):
    return knobs_module.factor * np.sum(x ** 2)


@pytest.fixture(autouse=True)
def _restore_globals():
    saved = dict(act=act, COEF=COEF, MODE=MODE)
    table, items, factor = dict(TABLE), list(ITEMS), knobs_module.factor
    yield
    globals().update(saved)
    TABLE.clear()
    TABLE.update(table)
    ITEMS[:] = items
    knobs_module.factor = factor


def test_reassigned_ufunc_global_rebuilds():
    global act
    np.testing.assert_allclose(dg.grad(f_act)(x), 1 - np.tanh(x) ** 2)
    act = np.sin
    np.testing.assert_allclose(dg.grad(f_act)(x), np.cos(x))  # a new transform object
    g = dg.grad(f_act)
    g(x)
    act = np.cos
    np.testing.assert_allclose(g(x), -np.sin(x))  # the same object, the cached fast path


def test_reassigned_python_function_global_rebuilds():
    global act
    act = lambda v: v ** 2  # noqa: E731
    np.testing.assert_allclose(dg.grad(f_act)(x), 2 * x)
    act = lambda v: v ** 3  # noqa: E731
    np.testing.assert_allclose(dg.grad(f_act)(x), 3 * x ** 2)


def test_reassigned_tuple_and_string_globals_rebuild():
    global COEF, MODE
    g = dg.grad(f_coef)
    np.testing.assert_allclose(g(x), 1 + 4 * x)
    COEF = (3.0, 0.0)
    np.testing.assert_allclose(g(x), [3.0, 3.0, 3.0])
    COEF = (3, 0)  # equal, but ints: a fresh build gives the same values
    np.testing.assert_allclose(g(x), [3.0, 3.0, 3.0])
    h = dg.grad(f_mode)
    np.testing.assert_allclose(h(x), np.cos(x))
    MODE = "cube"
    np.testing.assert_allclose(h(x), 3 * x ** 2)


def test_items_of_small_dicts_and_lists_are_guarded_by_value():
    g = dg.grad(f_table)
    np.testing.assert_allclose(g(x), 2 * x + 2)
    TABLE["k"] = 5.0
    np.testing.assert_allclose(g(x), 10 * x + 2)
    ITEMS[0] = -1.0
    np.testing.assert_allclose(g(x), 10 * x - 1)


class _UserList(list):
    pass


class _UserDict(dict):
    pass


@pytest.mark.parametrize(("make", "read", "write"), [
    (lambda: collections.OrderedDict(k=3.0), lambda h: h["k"], lambda h: h.update(k=4.0)),
    (lambda: collections.defaultdict(float, k=3.0), lambda h: h["k"],
     lambda h: h.update(k=4.0)),
    (lambda: collections.Counter(k=3), lambda h: h["k"], lambda h: h.update(k=1)),
    (lambda: _UserDict(k=3.0), lambda h: h["k"], lambda h: h.update(k=4.0)),
    (lambda: _UserList([3.0]), lambda h: h[0], lambda h: h.__setitem__(0, 4.0)),
    (lambda: collections.deque([3.0]), lambda h: h[0], lambda h: h.__setitem__(0, 4.0)),
    (lambda: array.array("d", [3.0]), lambda h: h[0], lambda h: h.__setitem__(0, 4.0)),
    (lambda: collections.namedtuple("Pair", "a b")([3.0], 0), lambda h: h.a[0],
     lambda h: h.a.__setitem__(0, 4.0)),
    (lambda: types.SimpleNamespace(k=3.0), lambda h: h.k, lambda h: setattr(h, "k", 4.0)),
    (lambda: argparse.Namespace(k=3.0), lambda h: h.k, lambda h: setattr(h, "k", 4.0)),
], ids=["OrderedDict", "defaultdict", "Counter", "dict-subclass", "list-subclass", "deque",
        "array.array", "namedtuple-of-list", "SimpleNamespace", "argparse.Namespace"])
def test_containers_and_namespaces_changed_in_place_rebuild(make, read, write):
    """Subclasses of dict and list, deques, array.arrays and the standard library's
    namespaces hold the user's values: changed in place, a cached call (captured, or passed
    as a static argument) returns what a fresh build returns. Before, they were guarded by
    identity only and cached calls kept the old value."""
    captured, passed = make(), make()
    g = dg.grad(lambda x: np.sum(x * read(captured)))
    h = dg.grad(lambda x, c: np.sum(x * read(c)))
    for _ in range(2):
        np.testing.assert_array_equal(g(x), read(captured) * np.ones(3))
        np.testing.assert_array_equal(h(x, passed), read(passed) * np.ones(3))
        write(captured)
        write(passed)


def test_attributes_of_user_modules_are_guarded():
    g = dg.grad(f_module)
    np.testing.assert_allclose(g(x), 4 * x)
    knobs_module.factor = 0.5
    np.testing.assert_allclose(g(x), x)


class Knobs:
    power = 2  # a class attribute

    def __init__(self, scale):
        self.scale = scale


def test_attributes_of_objects_in_closures_are_guarded():
    knobs = Knobs(1.0)

    def f(x):
        return knobs.scale * np.sum(x ** knobs.power)

    g = dg.grad(f)
    np.testing.assert_allclose(g(x), 2 * x)
    knobs.scale = 3.0                       # an instance attribute
    np.testing.assert_allclose(g(x), 6 * x)
    Knobs.power = 3                         # a class attribute
    try:
        np.testing.assert_allclose(g(x), 9 * x ** 2)
    finally:
        Knobs.power = 2
    knobs = Knobs(-1.0)  # noqa: F841  (read by the closure): a new object
    np.testing.assert_allclose(g(x), -2 * x)


def test_callable_objects_and_bound_methods_see_their_attributes():
    class Model:
        def __init__(self, w):
            self.w = w

        def __call__(self, x):
            return np.sum(self.w * x ** 2)

        def loss(self, x):
            return np.sum(np.sin(self.w * x))

    m = Model(np.array(2.0))
    g, gl = dg.grad(m), dg.grad(m.loss)
    np.testing.assert_allclose(g(x), 4 * x)
    np.testing.assert_allclose(gl(x), 2 * np.cos(2 * x))
    m.w = np.array(5.0)
    np.testing.assert_allclose(g(x), 10 * x)
    np.testing.assert_allclose(gl(x), 5 * np.cos(5 * x))


def test_defaults_and_closure_cells_holding_functions():
    def f(x, fn=np.tanh):
        return np.sum(fn(x))

    g = dg.grad(f)
    np.testing.assert_allclose(g(x), 1 - np.tanh(x) ** 2)
    f.__defaults__ = (np.sin,)
    np.testing.assert_allclose(g(x), np.cos(x))

    fn = np.sin

    def h(x):
        return np.sum(fn(x))

    gh = dg.grad(h)
    np.testing.assert_allclose(gh(x), np.cos(x))
    fn = np.exp  # noqa: F841  (read by the closure)
    np.testing.assert_allclose(gh(x), np.exp(x))


def test_called_helpers_and_partials_are_followed():
    scale = 2.0

    def helper(v):
        return scale * v ** 2

    def f(x):
        return np.sum(helper(x))

    g = dg.grad(f)
    np.testing.assert_allclose(g(x), 4 * x)
    scale = 0.5  # noqa: F841  (read by helper, which f calls)
    np.testing.assert_allclose(g(x), x)

    def power(x, k):
        return np.sum(x ** k)

    for k in (2, 3):  # a partial's arguments key its program
        np.testing.assert_allclose(dg.grad(functools.partial(power, k=k))(x), k * x ** (k - 1))


def test_a_partials_keywords_changed_in_place_rebuild():
    def affine(x, a, b=1.0):
        return np.sum(a * x ** 2 + b * x)

    p = functools.partial(affine, a=1.0)
    g = dg.grad(p)
    np.testing.assert_allclose(g(x), 2 * x + 1)
    p.keywords["a"] = 4.0  # the partial's own dict: read by every call
    np.testing.assert_allclose(g(x), 8 * x + 1)
    holder = functools.partial(affine, b=0.0)  # a partial reached through a closure

    def f(x):
        return holder(x, 3.0)

    gf = dg.grad(f)
    np.testing.assert_allclose(gf(x), 6 * x)
    holder.keywords["b"] = 2.0
    np.testing.assert_allclose(gf(x), 6 * x + 2)


def test_a_trace_counter_does_not_retrace_every_call():
    traces = []

    def f(x, c):
        traces.append(1)  # written by the trace: not data the program reads
        return np.sum(x ** 2) * c

    g = dg.grad(f)
    g(x, 3)
    g(x, 2)
    g(x, 3)
    g(x, 2)
    assert traces == [1]  # c is an input of the program (a weakly typed int)


def test_a_property_is_static_and_listed():
    class Holder:
        def __init__(self):
            self.value = 1.0

        @property
        def doubled(self):
            return 2 * self.value

    obj = Holder()

    def f(x):
        return obj.doubled * np.sum(x)

    guards = collect_guards(f)
    assert any("doubled" in s and "property" in s for s in guards.static)
    np.testing.assert_allclose(dg.grad(f)(x), 2.0 * np.ones(3))


def test_the_retrace_warning_names_the_changed_global():
    def f(x):
        return np.sum(COEF[0] * x)

    global COEF
    g = dg.grad(f)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(10):
            COEF = (float(k), 0.0)
            np.testing.assert_allclose(g(x), [float(k)] * 3)
    messages = [str(w.message) for w in caught if "traced" in str(w.message)]
    assert len(messages) == 1 and "COEF (global)" in messages[0]
    assert "argument" in messages[0]


def test_guards_change_nothing_for_unchanged_values():
    def f(x):
        return np.sum(act(x) * COEF[1]) + TABLE["k"] * knobs_module.factor

    guards = collect_guards(f)
    assert guards.hold() and guards.changed() is None
    names = " ".join(p[0] for p in guards.places)
    for what in ("act (global)", "COEF (global)", "TABLE (global)",
                 "knobs_module.factor (global)"):
        assert what in names


# a closed-over array changed in place: every program reads it by reference, so no transform
# may compute a value from it while tracing (W @ the Hessian's basis was, and a cached
# dg.hessian mixed the old products with the new W: neither Hessian, not symmetric)
IN_PLACE_TRANSFORMS = {
    "hessian": lambda f: dg.hessian(f),
    "jacfwd": lambda f: dg.jacfwd(dg.grad(f)),
    "jacrev": lambda f: dg.jacrev(dg.grad(f)),
    "hvp": lambda f: _at_v(dg.hvp(f)),
    "grad": lambda f: dg.grad(f),
    "laplacian": lambda f: dg.laplacian(f),
    "jit": lambda f: dg.jit(f),
    "jacfwd_linear": lambda f: dg.jacfwd(lambda x: W_LIVE @ x),
}
W_LIVE = np.zeros((2, 4))


def _at_v(hvp):
    return lambda x: hvp(x, np.array([1.0, -2.0, 0.5, 3.0]))


@pytest.mark.parametrize("name", sorted(IN_PLACE_TRANSFORMS))
def test_an_array_changed_in_place_is_read_by_cached_programs(name):
    W_LIVE[...] = [[1.0, 0.0, 0.0, 2.0], [0.0, 3.0, 0.0, 0.0]]
    x4 = np.arange(1.0, 5.0)

    def f(x):
        return np.sum((W_LIVE @ x) ** 3)

    transformed = IN_PLACE_TRANSFORMS[name](f)
    transformed(x4)
    W_LIVE[0, 1] = 5.0
    cached = transformed(x4)
    dg.clear_cache()
    fresh = IN_PLACE_TRANSFORMS[name](f)(x4)
    np.testing.assert_array_equal(cached, fresh)


def _written_after_a_trace(W, x):
    o = np.zeros((2, 3))
    o[0] = x            # o holds a traced value from here on
    o[1] = W[1]         # then a closed-over row is written into it
    return o


# the traced ops that read a closed-over array beside a traced value, where dualgpu's own
# front end once copied the array at the trace (np.asarray copied; a write gathered it;
# np.interp took its end values as numbers): a cached call kept the old values
READ_BESIDE_TRACED = {
    "concatenate": lambda W: dg.jit(lambda x: np.concatenate([x, W[0]])),
    "concatenate_2d": lambda W: dg.jit(lambda x: np.concatenate([x[None], W])),
    "hstack": lambda W: dg.jit(lambda x: np.hstack([x, W[1]])),
    "append": lambda W: dg.jit(lambda x: np.append(x, W[0])),
    "asarray": lambda W: dg.jit(lambda x: x * np.asarray(W[0])),
    "grad_sort_concatenate": lambda W: dg.grad(
        lambda x: np.sum(np.sort(np.concatenate([x, W[1]])) * np.arange(6.0))),
    "written_into_an_array_made_in_the_trace": lambda W: dg.jit(
        lambda x: _written_after_a_trace(W, x)),
    "interp_end_values": lambda W: dg.jit(
        lambda x: np.interp(x, np.array([-2.0, 0.0, 3.0]), W[0])),
    "interp_end_values_vmap": lambda W: dg.vmap(
        lambda x: np.interp(x, np.array([-2.0, 0.0, 3.0]), W[0])),
}


@pytest.mark.parametrize("name", sorted(READ_BESIDE_TRACED))
def test_a_closed_over_array_read_beside_a_traced_value_is_read_when_called(name):
    x3 = np.array([[0.5, -3.0, 4.0], [1.0, -1.0, 2.0]])[0 if "vmap" not in name else slice(None)]
    W = np.arange(9.0).reshape(3, 3) / 10
    transformed = READ_BESIDE_TRACED[name](W)
    transformed(x3)
    W[0, 0], W[1, 2], W[0, 2] = 5.0, -3.0, 1.5
    cached = transformed(x3)
    dg.clear_cache()
    fresh = READ_BESIDE_TRACED[name](W.copy())(x3)
    np.testing.assert_array_equal(cached, fresh)


def test_operands_that_depend_on_no_differentiated_input_get_no_cotangent():
    """Closed-over arrays (read as traced values by the transforms) and arguments outside
    argnums are constants of the derivative: a rule with no derivative in such an operand
    (betainc's a and b) must not be asked for one."""
    import scipy.special as ss

    a, b, x = np.full(3, 2.0), np.full(3, 3.0), np.full(3, 0.4)
    want = x ** (a - 1) * (1 - x) ** (b - 1) / ss.beta(a, b)
    np.testing.assert_allclose(dg.grad(lambda x: np.sum(ss.betainc(a, b, x)))(x), want)
    np.testing.assert_allclose(
        dg.grad(lambda x, a, b: np.sum(ss.betainc(a, b, x)))(x, a, b), want)
    hv = dg.hvp(lambda x, a, b: np.sum(ss.betainc(a, b, x)))(x, a, b, np.ones(3))
    np.testing.assert_allclose(hv, want * ((a - 1) / x - (b - 1) / (1 - x)))


# --------------------------------------------------------------------------- arguments
class _Model:
    def __init__(self, scale):
        self.scale = scale

    def apply(self, x):
        return self.scale * x


@pytest.mark.parametrize("transform", ["jit", "grad", "hvp"])
def test_arguments_keyed_by_identity_are_guarded_like_captured_objects(transform):
    """A set or a user object passed as an argument keys the program by identity; changed in
    place (``tags.add``, ``model.scale = 3``), the next call returns what a fresh build
    returns (before: the first call's value, silently)."""
    def f(x, tags, model):
        return np.sum(model.apply(x) ** 2) * len(tags)

    def want(tags, model):
        fresh = dg.jit(f) if transform == "jit" else getattr(dg, transform)(f)
        args = (x, tags, model) if transform != "hvp" else (x, tags, model, np.ones(3))
        return fresh(*args)

    t = dg.jit(f) if transform == "jit" else getattr(dg, transform)(f)
    tags, model = {"a"}, _Model(2.0)
    call = (lambda: t(x, tags, model)) if transform != "hvp" else \
        (lambda: t(x, tags, model, np.ones(3)))
    np.testing.assert_array_equal(call(), want(set(tags), _Model(model.scale)))
    tags.add("b")
    np.testing.assert_array_equal(call(), want(set(tags), _Model(model.scale)))
    model.scale = 3.0
    np.testing.assert_array_equal(call(), want(set(tags), _Model(model.scale)))
    np.testing.assert_array_equal(call(), want(set(tags), _Model(model.scale)))


def test_an_argument_the_function_writes_into_does_not_retrace_every_call():
    traces = [0]

    def f(x, log):
        traces[0] += 1
        log.add(len(log))   # written by the trace, never read: guarded by identity only
        return np.sum(x)

    g, seen = dg.jit(f), set()
    for _ in range(5):
        assert g(x, seen) == np.sum(x)
    assert traces[0] == 1


def copy_of(fn):
    """The same function as a new object: its transforms share no cache entry with fn's."""
    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)


MASK = np.array([True, False, True])
INDEX = np.array([0, 1, 1])
HELD = {"index": np.array([2, 0])}


@pytest.mark.parametrize("transform", [dg.jacobian, dg.jacfwd, dg.jacrev, dg.hessian])
def test_index_arrays_and_masks_changed_in_place_rebuild(transform):
    """A captured integer or boolean array (an index array, a mask; a global or in a small
    dict) changed in place: the derivative programs build their structure from its values
    (a batched gather's indices, a mask's zeros), so a cached call kept the old ones. Such
    arrays (up to 64 KiB) are guarded by their contents."""
    def f(x):
        y = np.where(MASK, x ** 3, 0.0) + x[INDEX] ** 3 + x[HELD["index"]].sum() ** 2
        return np.sum(y) if transform is dg.hessian else y

    t = transform(f)
    saved = MASK.copy(), INDEX.copy(), HELD["index"].copy()
    try:
        for change in (lambda: MASK.__setitem__(1, True), lambda: INDEX.__setitem__(0, 2),
                       lambda: HELD["index"].__setitem__(1, 1)):
            np.testing.assert_allclose(t(x), transform(copy_of(f))(x), err_msg=transform.__name__)
            change()
        np.testing.assert_allclose(t(x), transform(copy_of(f))(x))
    finally:
        MASK[:], INDEX[:], HELD["index"][:] = saved


WC = np.array([1.0, 2.0, 3.0])


@dg.custom_vjp
def _vjp_reads(v):
    return np.sum(WC * v)


_vjp_reads.defvjp(lambda v: (_vjp_reads(v), v), lambda v, g: (g * WC,))


@dg.custom_jvp
def _jvp_reads(v):
    return np.sum(WC * v)


_jvp_reads.defjvp(lambda p, t: (_jvp_reads(p[0]), np.sum(WC * t[0])))  # VJP: transposed
_op_reads = dg.custom_op("captured_values_op", lambda xp, v: v * WC,
                         jvp=lambda p, t, ans: t[0] * WC)


@pytest.mark.parametrize("fn", [_vjp_reads, _jvp_reads, lambda v: np.sum(_op_reads(v))],
                         ids=["custom_vjp", "custom_jvp", "custom_op"])
def test_a_global_read_by_custom_rules_is_guarded(fn):
    # the rules (and a VJP derived from a JVP, cached per op) read WC: reassigned, the
    # cached gradient was the old WC's
    global WC
    saved = WC
    try:
        np.testing.assert_allclose(dg.grad(fn)(np.ones(3)), [1.0, 2.0, 3.0])
        WC = np.array([10.0, 20.0, 30.0])
        np.testing.assert_allclose(dg.grad(fn)(np.ones(3)), [10.0, 20.0, 30.0])
    finally:
        WC = saved


def _scaled_model(p, X):
    return WC[0] * np.tanh(X @ p["W"])


def test_a_global_read_by_a_curvature_operators_model_is_guarded():
    # the product programs are kept per model, around dualgpu's closure of it: the model's
    # globals were not followed (a stale Gauss-Newton matrix)
    global WC
    saved = WC
    p, X = {"W": np.array([[0.5], [-0.3]])}, np.array([[1.0, 2.0], [0.5, -1.0]])
    try:
        G1 = dg.ggn(_scaled_model, "mse", p, X, np.zeros((2, 1))).toarray()
        WC = saved * 3.0
        G2 = dg.ggn(_scaled_model, "mse", p, X, np.zeros((2, 1))).toarray()
        np.testing.assert_allclose(G2, 9.0 * G1)
    finally:
        WC = saved


KEEP = 2


@dg.custom_vjp
def _head(v):
    return np.sin(v[:KEEP])


_head.defvjp(lambda v: (_head(v), v),
             lambda v, g: (np.concatenate([g * np.cos(v[:KEEP]), np.zeros(v.size - KEEP)]),))


def test_a_custom_functions_output_shape_from_a_global_is_traced_again():
    # its output's shape (and the op's check of it) were remembered per operand shape: a
    # ShapeMismatchError after KEEP changed, even for an eager call
    global KEEP
    v = np.array([0.1, 0.2, 0.3, 0.4])
    try:
        for KEEP in (2, 3):
            np.testing.assert_allclose(_head(v), np.sin(v[:KEEP]))
            np.testing.assert_allclose(dg.jit(_head)(v), np.sin(v[:KEEP]))
            g = dg.grad(lambda v: np.sum(_head(v)))(v)
            np.testing.assert_allclose(g[:KEEP], np.cos(v[:KEEP]))
    finally:
        KEEP = 2
