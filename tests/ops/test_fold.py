"""The fold rules (rules/folding.py) and the fill-folding pass (transforms/fold.py): a
folded graph computes bit for bit what the unfolded graph computes, signed zeros, NaN and
infinities included, and the identities do remove equations."""
from __future__ import annotations

import contextlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import dualgpu as dg
from dualgpu.core.interpret import eval_graph
from dualgpu.core.primitives import REGISTRY
from dualgpu.transforms.fold import fold_fills

FOLDING = [p for p in REGISTRY.values() if p.rule("fold") is not None]
OPS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
       "true_divide": np.true_divide, "power": np.power}
NUMBERS = [0, 1, -1, 2, 0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.0]


@contextlib.contextmanager
def no_folding():
    """Trace as if no op had a fold rule (to build graphs the pass has work on)."""
    saved = {p: p.rules.pop("fold") for p in FOLDING}
    try:
        yield
    finally:
        for p, rule in saved.items():
            p.rules["fold"] = rule


def test_the_arithmetic_ops_fold():
    assert {p.name for p in FOLDING} == set(OPS)


# an operand: the traced x, a Python number, or a fill of one (zeros_like(x) + c)
operand = st.one_of(st.just(("x",)), st.tuples(st.just("num"), st.sampled_from(NUMBERS)),
                    st.tuples(st.just("fill"), st.sampled_from(NUMBERS)))
step = st.tuples(st.sampled_from(sorted(OPS)), operand, st.booleans())


def _program(steps):
    def f(x):
        acc = x
        for name, (kind, *value), left in steps:
            if kind == "x":
                other = x
            elif kind == "num":
                other = value[0]
            else:
                other = np.zeros_like(x) + value[0]
            a, b = (other, acc) if left else (acc, other)
            acc = getattr(np, name)(a, b)
        return acc

    return f


SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -3.0, np.inf, -np.inf, np.nan, 1e-310])


@settings(max_examples=150, deadline=None, database=None, derandomize=True)
@given(st.lists(step, min_size=1, max_size=5), st.sampled_from(["float64", "float32"]))
def test_a_folded_graph_computes_exactly_what_the_graph_computes(steps, dtype):
    x = SPECIAL.astype(dtype)
    f = _program(steps)
    with no_folding():
        graph = dg.trace(f, x)
    folded = fold_fills(graph)
    assert len(folded.eqns) <= len(graph.eqns)
    with np.errstate(all="ignore"):
        want, = eval_graph(graph, [x])
        got, = eval_graph(folded, [x])
    want, got = np.asarray(want), np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # NaN where NaN
    number = ~np.isnan(want)  # (a NaN's sign is not a value: IEEE leaves it open)
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]))


def _names(graph):
    return [e.prim.name for e in graph.eqns]


def test_neutral_operands_and_fill_arithmetic_leave_no_equation():
    x = np.linspace(-1.0, 1.0, 4)
    f = lambda x: (x * 1.0) / 1 - 0 + (-0.0) + 1 * (np.ones_like(x) * 0.25 * 4.0 - 1.0)  # noqa: E731
    with no_folding():
        graph = dg.trace(f, x)
    folded = fold_fills(graph)
    assert len(graph.eqns) > 5
    # x + (1 * (ones * 0.25 * 4 - 1)): the fills fold to a zero fill, added as the number 0.0
    assert _names(folded) == ["add"]
    assert _names(dg.trace(f, x)) == ["add"]  # tracing folds as it records


def test_identities_that_are_not_exact_are_kept():
    x = np.array([-0.0, 1.0])
    # +0.0 is not neutral for + (-0.0 + 0.0 is 0.0); -0.0 is not neutral for -
    for f in (lambda x: x + 0.0, lambda x: x - (-0.0), lambda x: x * 0.0):
        assert _names(dg.trace(f, x)) != []
        assert np.array_equal(np.signbit(dg.jit(f)(x)), np.signbit(f(x)))
    # an operand that broadcasts or promotes is not dropped
    assert _names(dg.trace(lambda x: x * np.ones((2, 2)), np.ones(2))) != []
    assert _names(dg.trace(lambda x: x * 1.0, np.ones(2, dtype=np.int64))) != []


def test_power_two_is_a_product_and_power_one_the_value():
    assert _names(dg.trace(lambda x: x ** 2, np.ones(3))) == ["multiply"]
    assert _names(dg.trace(lambda x: x ** 1, np.ones(3))) == []


def test_concrete_values_are_not_folded():
    x = np.ones(3)
    y = dg.lax.multiply(x, 1.0)
    assert y is not x and np.array_equal(y, x)


def test_a_numpy_scalar_is_not_a_neutral_number():
    # np.float64 is a Python float, but a strongly typed one: x32 * np.float64(1.0) is
    # float64 in NumPy (the fold returned x, float32)
    x = np.ones(2, dtype=np.float32)
    for f in (lambda x: x * np.float64(1.0), lambda x: x - np.float64(0.0),
              lambda x: x / np.float64(1.0), lambda x: x ** np.float64(1.0),
              lambda x: x * np.float64(-1.0), lambda x: np.float64(1.0) * x,
              lambda x: (np.zeros_like(x) + 2.0) * np.float64(3.0)):
        assert dg.jit(f)(x).dtype == f(x).dtype == np.float64
