"""Issue 37, items 3 and 4: Python ints and floats of the arguments are weakly typed inputs
of one program (a step counter does not re-trace), made static only where the function
needs them as Python numbers (a shape, a loop count, an index); and Python control flow on
traced values under the derivative transforms takes the branch the values take, each
branch a cached variant guarded by the decisions its trace took. Every cached result is
checked bitwise against a freshly built program's (a copy of the function: no cache
entry), and values against the eager function."""
import math
import types
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dualgpu as dg
from dualgpu.runtime.signature import int_range

TRACES: dict[str, int] = {}


def traced(name: str) -> None:
    TRACES[name] = TRACES.get(name, 0) + 1


def copy_of(fn):
    """The same function as a new object: its transforms share no cache entry with fn's."""
    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)


def same(a, b) -> bool:
    a, b = dg.tree.leaves(a), dg.tree.leaves(b)
    return len(a) == len(b) and all(
        np.asarray(p).dtype == np.asarray(q).dtype and np.array_equal(p, q, equal_nan=True)
        for p, q in zip(a, b))


# ------------------------------------------------------------------------ item 3: ints
def int_arith(x, n):
    traced("arith")
    return np.sum(x * n) + n ** 2 - np.sum(x) / (n + 10)


def int_shape(x, n):
    traced("shape")
    return np.sum(x[:n] ** 2) + np.sum(np.zeros(abs(n) + 1))


def int_loop(x, n):
    traced("loop")
    s = np.sum(x)
    for k in range(n):
        s = s + np.sum(x ** k)
    return s


def int_branch(x, n):
    traced("branch")
    return np.sum(x ** 2) if n % 2 else np.sum(np.sin(x)) * n


def int_index(x, n):
    traced("index")
    return np.sum(x[n % 4] * x) + {0: 1.0, 1: 2.0}.get(n % 2, 0.0) * len(str(n))


INT_ROLES = [int_arith, int_shape, int_loop, int_branch, int_index]


@settings(max_examples=12, deadline=None)
@given(role=st.sampled_from(INT_ROLES), ns=st.lists(st.integers(-3, 6), min_size=2, max_size=6),
       f32=st.booleans())
def test_int_arguments_cached_fresh_and_eager_agree(role, ns, f32):
    x = np.linspace(0.5, 1.25, 4).astype(np.float32 if f32 else np.float64)
    g = dg.value_and_grad(role)
    ranges = set()
    for n in ns:
        before = TRACES.get(role.__name__[4:], 0)
        got = g(x, n)
        if role is int_arith and int_range(n) in ranges:
            # arithmetic only: one program for every value of a range (the integer dtypes
            # that hold n: a negative n is not an unsigned one's)
            assert TRACES["arith"] == before
        ranges.add(int_range(n))
        assert same(got, dg.value_and_grad(copy_of(role))(x, n)), (role.__name__, n)
        want = role(x, n)
        assert np.asarray(got[0]).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got[0], want, rtol=1e-6 if f32 else 1e-13)


def test_a_step_counter_traces_once_and_keeps_dtypes():
    def loss(w, step, lr):
        traced("step")
        return np.sum((w * lr) ** 2) / (step + 1)

    TRACES.pop("step", None)
    g = dg.grad(loss)
    w = np.ones(3, np.float32)
    for step in range(30):
        out = g(w, step, 0.01 * (step + 1))
        assert out.dtype == np.float32
        np.testing.assert_allclose(out, 2 * w * (0.01 * (step + 1)) ** 2 / (step + 1),
                                   rtol=1e-6)
    assert TRACES["step"] == 1
    # int arrays and Python ints: NumPy 2's rule (the int keeps the array's dtype)
    f = dg.jit(lambda a, n: a + n)
    a = np.arange(3, dtype=np.int32)
    assert f(a, 7).dtype == (a + 7).dtype == np.int32
    np.testing.assert_array_equal(f(a, 7), a + 7)


def test_a_scalar_needed_as_a_number_is_static_and_warns_once_naming_it():
    TRACES.pop("shape", None)
    g = dg.grad(int_shape)
    x = np.linspace(0.0, 1.0, 12)
    with pytest.warns(UserWarning, match=r"traced 8 times.*argument 1 = \d+ \(a number"):
        for n in range(1, 10):
            np.testing.assert_array_equal(g(x, n), np.where(np.arange(12) < n, 2 * x, 0.0))
    for n in range(1, 10):  # static: cached per value, no more traces
        g(x, n)
    assert TRACES["shape"] == 10  # the first (tentative) trace, then one per value
    h = dg.grad(lambda x, lr: np.sum(x) * math.exp(lr))  # math.* of a float: static too
    assert np.allclose(h(x, 0.5), math.exp(0.5)) and np.allclose(h(x, 1.0), math.e)


# ------------------------------------------------------------- item 4: value decisions
def two_sided(x):
    traced("two_sided")
    if np.sum(x) > 0:
        return np.sum(x ** 3)
    return np.sum(np.sin(x))


def halving(x):
    y = x
    while np.max(np.abs(y)) > 1.0:  # a loop count from the data
        y = y / 2
    return np.sum(y ** 2)


def counted(x):
    n = int(np.floor(np.sum(x ** 2))) % 4  # int() of a differentiated value: allowed
    s = np.sum(x)
    for k in range(n):
        s = s * np.sum(np.cos(x + k))
    return s


def two_tests(x):
    if x[0] > 0 and x[1] < 0.5:
        return np.sum(np.exp(x))
    return np.sum(x * x[0])


BRANCHY = [two_sided, halving, counted, two_tests]


@settings(max_examples=12, deadline=None)
@given(fn=st.sampled_from(BRANCHY), kind=st.sampled_from(["grad", "hvp"]),
       seeds=st.lists(st.integers(0, 10 ** 6), min_size=2, max_size=6))
def test_branches_cached_fresh_and_eager_agree(fn, kind, seeds):
    make = getattr(dg, kind)
    t = make(fn)
    for seed in seeds:
        x = np.random.default_rng(seed).uniform(-2.5, 2.5, 3)
        args = (x,) if kind == "grad" else (x, np.ones(3))
        assert same(t(*args), make(copy_of(fn))(*args)), (fn.__name__, seed)
    np.testing.assert_allclose(dg.value_and_grad(fn)(x)[0], fn(x), rtol=1e-13)


def test_each_branch_is_traced_once_and_matches_its_closed_form():
    TRACES.pop("two_sided", None)
    g = dg.grad(two_sided)
    for s in [1, -1, 1, -1, 1]:
        x = s * np.array([0.5, 0.25])
        want = 3 * x ** 2 if s > 0 else np.cos(x)
        np.testing.assert_allclose(g(x), want, rtol=1e-15)
        np.testing.assert_allclose(dg.hvp(two_sided)(x, np.ones(2)),
                                   6 * x if s > 0 else -np.sin(x), rtol=1e-15)
    assert TRACES["two_sided"] == 2 + 2  # grad's two variants, then hvp's
    out, tangent = dg.jvp(two_sided, (-np.ones(2),), (np.ones(2),))
    np.testing.assert_allclose(tangent, 2 * np.cos(-1.0))
    # a branch inside a transform called in another's trace: the outer one decides
    gg = dg.grad(lambda x: np.sum(dg.grad(two_sided)(x) ** 2))
    np.testing.assert_allclose(gg(np.array([0.5, 0.7])), 36 * np.array([0.5, 0.7]) ** 3)
    np.testing.assert_allclose(gg(-np.array([0.5, 0.7])), -np.sin(-2 * np.array([0.5, 0.7])))


def test_a_step_counter_branch_gives_two_variants():
    def loss(w, step):
        traced("every")
        if step % 10 == 0:
            return np.sum(w ** 2)
        return np.sum(w)

    TRACES.pop("every", None)
    g = dg.grad(loss)
    for step in range(25):
        np.testing.assert_array_equal(g(np.ones(2), step), 2.0 if step % 10 == 0 else 1.0)
    assert TRACES["every"] == 2


def test_more_branches_than_variants_keep_working_and_warn_once():
    def power_of_sum(x):
        return np.sum(x ** int(np.sum(x)))

    g = dg.grad(power_of_sum)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for k in list(range(11)) * 2:
            x = np.full(2, k / 2)
            np.testing.assert_allclose(g(x), k * x ** max(k - 1, 0) if k else 0 * x)
    retraces = [w for w in seen if "another branch" in str(w.message)]
    assert len(retraces) == 1 and "int() of a traced value" in str(retraces[0].message)


def test_what_stays_refused():
    x = np.ones(3)
    with pytest.raises(dg.TracerControlFlowError, match=r"float\(\)"):
        dg.grad(lambda x: np.sum(x) * float(np.sum(x)))(x)  # the derivative would be lost
    with pytest.raises(dg.TracerControlFlowError, match=r"bool\(\)"):
        dg.jit(two_sided)(x)  # jit traces abstractly, as JAX
    with pytest.raises(dg.TracerControlFlowError, match=r"bool\(\)"):
        dg.grad(dg.jit(two_sided))(x)
    with pytest.raises(dg.DualgpuError, match="branch on traced values"):
        dg.export(dg.grad(two_sided), x)
    # a float of a value that is not differentiated is a decision like a branch
    f = dg.grad(lambda x, s: np.sum(x) * math.sqrt(float(np.sum(s))))
    np.testing.assert_allclose(f(x, np.full(2, 2.0)), 2.0)
    np.testing.assert_allclose(f(x, np.full(2, 8.0)), 4.0)


def test_a_slice_bound_from_the_data():
    g = dg.grad(lambda x: np.sum(x[:np.argmax(x)] ** 2))
    for x in (np.arange(4.0), np.array([3.0, 1.0, 2.0, 0.5]), np.arange(4.0)):
        k = int(np.argmax(x))
        np.testing.assert_array_equal(g(x), np.where(np.arange(4) < k, 2 * x, 0.0))
    with pytest.raises(dg.TracerControlFlowError, match=r"int\(\)"):  # not under jit
        dg.jit(lambda x: np.sum(x[:np.argmax(x)]))(np.arange(4.0))


def test_a_decision_on_a_weak_scalar_is_taken_in_the_programs_dtype():
    """A Python float or int argument is a weakly typed input held as a 0-d float64 or
    int64 array; the trace's decision on a value computed from it must be taken in the
    dtype the program (and eager NumPy) computes in: float32(1/3) * 3.0 is 1.0 in float32
    (not > 1), and int32's maximum * 2 wraps. Before, the trace computed them in float64
    and int64, took the other branch, and every call returned that branch's gradient."""
    def branch(x, y, c):
        if np.sum(y * c) > 1.0:
            return np.sum(x ** 2)
        return np.sum(x ** 3)

    x = np.array([2.0])
    g = dg.grad(branch)
    third = np.array([1 / 3], np.float32)
    for _ in range(2):  # the trace, then the cached call
        for c in (3.0, 3):
            assert not np.sum(third * c) > 1.0  # eager NumPy: float32 throughout
            np.testing.assert_array_equal(g(x, third, c), 3 * x ** 2)
        top = np.array([2 ** 31 - 1], np.int32)
        np.testing.assert_array_equal(g(x, top, 2), 3 * x ** 2)  # wraps to -2
        np.testing.assert_array_equal(g(x, np.array([1], np.int32), 2), 2 * x)


_I8 = np.array([100, -2, 3], np.int8)
_U8 = np.array([1, 2, 3], np.uint8)
_F32 = np.array([1.5, -2.0, 3.0], np.float32)


@pytest.mark.parametrize(("f", "x", "values"), [
    # a NumPy function returns NumPy values: what it computes from a Python number is an
    # array of its dtype (float64, int64), no longer weakly typed
    (lambda x, c: x * np.sin(c), _F32, (0.3, 1.7)),
    (lambda x, c: x * np.asarray(c), _F32, (0.3, 2)),
    (lambda x, c: x + np.full(3, c), _F32, (0.3, -1.5)),
    (lambda x, c: x * np.sum(np.asarray(c)), _I8, (3, 5)),
    (lambda x, c: x * np.abs(c), _I8, (-3, 2)),
    (lambda x, c: x * abs(c) + c * 2, _I8, (-3, 2)),  # Python's own: still weak
    (lambda x, c: np.clip(x, -c, c), _F32, (0.5, 2)),  # bounds promote as Python numbers
    (lambda x, c: x.astype(np.result_type(x, c)), _F32, (0.5, 2)),
    (lambda x, c: np.dot(x, c), _I8, (3, 2)),  # np.dot, einsum...: operands made arrays
    (lambda x, c: np.einsum("i,->i", x, c), _F32, (0.5, 2)),
    # an int that the array's dtype cannot hold: NumPy compares it exactly, divides by it,
    # or raises; a cast to int8 or uint8 wrapped it
    (lambda x, c: x < c, _U8, (2, -3, 2 ** 40, 1)),
    (lambda x, c: x / c, _I8, (2, 200, -300, 3)),
    (lambda x, c: np.clip(x, -c, c), _U8, (2, 3, 200)),
    (lambda x, c: x + c, _U8, (2, -1, 3)),
    (lambda x, c: x + (c + 1), _I8, (3, 127, 5)),
    # a bound beyond the dtype clips nothing on its side, and raises on the other
    (lambda x, c: np.clip(x, c, None), _I8, (1, 200, -200, 2)),
    (lambda x, c: np.clip(x, -5, c), _U8, (3, -1, 300, 4)),
    # Python's arithmetic on the number is exact: c * c beyond int64 is no wrapped int64
    (lambda x, c: x + c * c, _F32, (3, 2 ** 40, 2 ** 33, 5)),
    (lambda x, c: x * (2 ** c), _F32, (3, 70, 4)),
], ids=["sin", "asarray", "full", "sum-int8", "abs-int8", "python-ops", "clip-f32",
        "result_type", "dot-int8", "einsum", "less-uint8", "divide-int8", "clip-uint8",
        "add-uint8", "derived", "clip-low-int8", "clip-high-uint8", "square-beyond-int64",
        "power-beyond-int64"])
def test_python_numbers_through_numpy_functions_promote_as_eager_numpy(f, x, values):
    """Cached calls (jit and grad) with Python numbers agree with eager NumPy in dtype and
    value, also when the number goes through a NumPy function, or does not fit the integer
    dtype it meets (an OverflowError where NumPy raises one)."""
    jf = dg.jit(f)
    for c in values * 2:  # the traces, then cached calls
        try:
            want = f(x, c)
        except OverflowError:
            with pytest.raises(OverflowError):
                jf(x, c)
            continue
        got = jf(x, c)
        assert got.dtype == want.dtype, (c, got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want)


def test_an_int_beyond_64_bits_promotes_as_numpys_python_int():
    """A Python int beyond int64 (a static argument, or a literal) is a weak integer, as
    NumPy takes it: with a float array it is a float. It was an object-dtype value, so the
    graph said ``object`` and grad refused its output."""
    for x in (np.ones(2), np.ones(2, np.float32)):
        for c in (2 ** 70, -2 ** 70):
            got = dg.grad(lambda x, c: np.sum(x * c))(x, c)
            assert got.dtype == x.dtype
            np.testing.assert_array_equal(got, np.full(2, c, x.dtype))
        assert dg.jit(lambda x: x * 2 ** 70).graph(x).outputs[0].dtype == x.dtype


@pytest.mark.parametrize("c", [2, 2.5, 2 ** 40])
def test_a_weak_number_passed_on_to_an_inner_transform_keeps_numpys_dtypes(c):
    # the inner jit traced the enclosing trace's weak number as a strong one: np.sin(c)
    # stayed weak where it replayed (float32, eager's float64), x * c was float64
    x = np.array([0.5, 1.5], np.float32)
    for f in (lambda x, c: x * np.sin(c), lambda x, c: x * c, lambda x, c: x + c * c):
        inner = dg.jit(f)
        mapped = dg.vmap(f, in_axes=(0, None))
        for got in (dg.jit(lambda x, c, inner=inner: inner(x, c))(x, c), mapped(x, c)):
            assert got.dtype == f(x, c).dtype
            np.testing.assert_allclose(got, f(x, c), rtol=1e-7)
    assert dg.jit(lambda x, c: x * np.sin(c)).eval_shape(x, 2.5).dtype == np.float64
