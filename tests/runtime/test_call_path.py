"""The cached call's path: a call seen before runs Python in at most 5 of dualgpu's modules
(the generated program counted as one) with at most 6 switches between them, measured with
``sys.setprofile`` (issue 36's bar); and what that path returns is what the slow path's
``finish`` returns, structure and values, in fresh objects."""
import collections
import sys

import numpy as np
import pytest

import dualgpu as dg


def _module(frame):
    if frame is None:
        return None
    if frame.f_code.co_filename.startswith("<dualgpu generated"):
        return "<generated>"
    name = frame.f_globals.get("__name__", "")
    return name if name.startswith("dualgpu") else None


def call_path(fn, *args) -> list[str]:
    """The dualgpu modules ``fn(*args)`` runs Python in, in order, one entry per switch
    (returns counted: leaving a module for its caller is a switch too)."""
    seq: list[str] = []

    def profile(frame, event, arg):
        if event == "call":
            m = _module(frame)
        elif event == "return":
            m = _module(frame.f_back)
        else:
            return
        if m is not None and (not seq or seq[-1] != m):
            seq.append(m)

    sys.setprofile(profile)
    try:
        fn(*args)
    finally:
        sys.setprofile(None)
    return seq


def f(x):
    return np.sum(np.sin(x) * x)


def f2(x, y):
    return np.sum(np.sin(x) * y ** 2)


CASES = {
    "hvp": (lambda: dg.hvp(f), (np.linspace(0, 1, 5), np.ones(5))),
    "grad": (lambda: dg.grad(f), (np.linspace(0, 1, 5),)),
    "value_and_grad": (lambda: dg.value_and_grad(f), (np.linspace(0, 1, 5),)),
    "grad_and_hvp, two arguments": (lambda: dg.grad_and_hvp(f2, argnums=(0, 1)),
                                    (np.ones(3), np.ones(3), (np.ones(3), np.ones(3)))),
    "jit": (lambda: dg.jit(lambda x: (np.sin(x), {"c": np.cos(x)})), (np.ones(4),)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_cached_call_stays_in_five_modules_with_six_switches(case):
    make, args = CASES[case]
    t = make()
    if case == "grad_and_hvp, two arguments":
        call = lambda: t(*args[:2], args[2])  # noqa: E731
    else:
        call = lambda: t(*args)  # noqa: E731
    call()
    call()
    seq = call_path(call)
    assert len(set(seq)) <= 5, " -> ".join(seq)
    assert len(seq) - 1 <= 6, " -> ".join(seq)
    assert "dualgpu.runtime.transformed" in seq, seq


Point = collections.namedtuple("Point", "a b")


@pytest.mark.parametrize("out", [
    lambda x: x * 2,
    lambda x: (x, [x * 2, {"z": x + 1, "a": x - 1}]),
    lambda x: Point(np.sin(x), (np.cos(x), None)),
    lambda x: {"b": x, "a": (x, x)},
])
def test_the_fast_path_returns_what_finish_returns_in_fresh_arrays(out):
    x = np.arange(3.0)
    fresh = dg.jit(out)(x)  # a new transform: its first call goes through finish
    t = dg.jit(out)
    first, second = t(x), t(x)  # the second through the template
    for got in (first, second):
        assert dg.tree_util.tree_structure(got) == dg.tree_util.tree_structure(fresh)
        for g, w in zip(dg.tree_util.tree_leaves(got), dg.tree_util.tree_leaves(fresh)):
            np.testing.assert_array_equal(g, w)
    for a, b in zip(dg.tree_util.tree_leaves(first), dg.tree_util.tree_leaves(second)):
        assert a is not b and not np.shares_memory(a, b)


def test_results_of_integer_arguments_stay_fresh_float0_arrays():
    """A result finish makes itself (float0 zeros of an integer argument) is never shared
    between calls: such results are shaped by finish on every call."""
    g = dg.grad(lambda x, n: np.sum(x) * 2.0, argnums=(0, 1), allow_int=True)
    x, n = np.ones(2), np.arange(2)
    a, b = g(x, n)[1], g(x, n)[1]
    assert a.dtype == dg.float0 and a is not b
