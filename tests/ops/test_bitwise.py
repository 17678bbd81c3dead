"""Python's bitwise operators and NumPy's bitwise functions on traced values give NumPy's
values and dtypes (issue 35: ``~``, ``&`` and ``|`` were the logical ops, ``^``, ``<<`` and
``>>`` raised). One program per dtype holds the whole table; the C forms at MIN, MAX, -1
and shift counts past the width are checked by tests/ops/test_integer_extremes.py."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

VALUES = {
    np.dtype(bool): [False, True],
    np.dtype(np.int8): [-128, -7, -1, 0, 1, 3, 7, 8, 127],
    np.dtype(np.int64): [-2 ** 63, -9, -1, 0, 1, 5, 63, 64, 2 ** 63 - 1],
    np.dtype(np.uint8): [0, 1, 2, 7, 8, 9, 127, 128, 255],
}

# a, b: every pair of VALUES; c: a NumPy array of the same dtype (the tracer on the right)
OPERATORS = {
    "a & b": lambda a, b, c: a & b,
    "a | b": lambda a, b, c: a | b,
    "a ^ b": lambda a, b, c: a ^ b,
    "~a": lambda a, b, c: ~a,
    "a << b": lambda a, b, c: a << b,
    "a >> b": lambda a, b, c: a >> b,
    "a & 6": lambda a, b, c: a & 6,
    "6 & a": lambda a, b, c: 6 & a,
    "a | 2": lambda a, b, c: a | 2,
    "2 | a": lambda a, b, c: 2 | a,
    "a ^ 5": lambda a, b, c: a ^ 5,
    "5 ^ a": lambda a, b, c: 5 ^ a,
    "a << 3": lambda a, b, c: a << 3,
    "3 << a": lambda a, b, c: 3 << a,
    "a >> 1": lambda a, b, c: a >> 1,
    "100 >> a": lambda a, b, c: 100 >> a,
    "a & True": lambda a, b, c: a & True,
    "True ^ a": lambda a, b, c: True ^ a,
    "c & a": lambda a, b, c: c & a,
    "c | a": lambda a, b, c: c | a,
    "c ^ a": lambda a, b, c: c ^ a,
    "c << a": lambda a, b, c: c << a,
    "c >> a": lambda a, b, c: c >> a,
    "np.bitwise_and": lambda a, b, c: np.bitwise_and(a, b),
    "np.bitwise_or": lambda a, b, c: np.bitwise_or(a, b),
    "np.bitwise_xor": lambda a, b, c: np.bitwise_xor(a, b),
    "np.invert": lambda a, b, c: np.invert(a),
    "np.bitwise_not": lambda a, b, c: np.bitwise_not(a),
    "np.bitwise_invert": lambda a, b, c: np.bitwise_invert(a),
    "np.left_shift": lambda a, b, c: np.left_shift(a, b),
    "np.right_shift": lambda a, b, c: np.right_shift(a, b),
    "np.bitwise_left_shift": lambda a, b, c: np.bitwise_left_shift(b, a),
    "np.bitwise_right_shift": lambda a, b, c: np.bitwise_right_shift(b, a),
}


def _operands(dtype):
    v = np.array(VALUES[dtype], dtype=dtype)
    a, b = (x.ravel() for x in np.meshgrid(v, v, indexing="ij"))
    return a, b, b[::-1].copy()


@pytest.mark.parametrize("dtype", list(VALUES), ids=lambda d: d.name)
def test_operators_on_tracers_agree_with_numpy(dtype):
    a, b, c = _operands(dtype)

    def table(a, b):
        return tuple(op(a, b, c) for op in OPERATORS.values())

    got = dg.jit(table)(a, b)
    bad = []
    with np.errstate(all="ignore"):
        for (name, op), g in zip(OPERATORS.items(), got):
            want = np.asarray(op(a, b, c))
            g = np.asarray(g)
            if g.dtype != want.dtype:
                bad.append(f"{name} [{dtype}]: dtype {g.dtype}, want {want.dtype}")
            elif not np.array_equal(g, want):
                k = np.flatnonzero(g != want)[0]
                bad.append(f"{name} [{dtype}] at a={a[k]!r}, b={b[k]!r}: {g[k]!r}, "
                           f"want {want[k]!r}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("f", [lambda x: x & 1.5, lambda x: ~x.astype(np.float32),
                               lambda x: np.left_shift(x, 1.0),
                               lambda x: np.bitwise_or(x, x.astype(np.uint64))],
                         ids=["& float", "~ float32", "left_shift float", "int64 | uint64"])
def test_floats_are_refused_as_numpy_does(f):
    """NumPy raises TypeError (int64 | uint64 promotes to float64): so do traced values,
    with a DualgpuError naming the op and the input types."""
    with pytest.raises(dg.DualgpuError, match=r"not supported for the input types") as info:
        dg.jit(f)(np.array([1, 2]))
    assert isinstance(info.value, TypeError)
    with pytest.raises(TypeError):
        f(np.array([1, 2]))


def test_bool_and_stays_logical():
    """``&``, ``|``, ``^`` and ``~`` of bool masks are bool (masks compose as before)."""
    x = np.array([-1.0, 0.5, 2.0])
    got = dg.jit(lambda x: np.where(~(x > 0) | (x > 1) & (x < 3) ^ (x > 0), x, 0.0))(x)
    np.testing.assert_array_equal(got, np.where(~(x > 0) | (x > 1) & (x < 3) ^ (x > 0), x, 0.0))
    assert dg.trace(lambda x: ~(x > 0), x).outputs[0].dtype == np.dtype(bool)
