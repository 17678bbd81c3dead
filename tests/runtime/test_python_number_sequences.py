"""Python numbers as arguments, fuzzed: call sequences of one function with ints and floats
of every range (small, beyond int8 and uint8, negative, beyond 32 bits), bools and NumPy
scalars, next to arrays of several dtypes, through ufuncs, NumPy functions of the number,
Python arithmetic and (under grad) branches on it. Each cached call must return what eager
NumPy returns: the same dtype, the same values, and an ``OverflowError`` where NumPy raises
one. The bugs it found: a NumPy function's result on the number kept the number's weak type
(``x32 * np.sin(c)`` float32, ``x8 * np.sum(c)`` wrapped), an int that an int8 or uint8
array cannot hold was wrapped by a cast (``x_u8 < -3``), a decision on ``x32 * c`` was taken
in float64.

CI runs a few dozen seeded sequences; ``--fuzz-long`` runs thousands (``make fuzz``).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import dualgpu as dg

FUNCTIONS = {  # name -> f(x, c); x an array, c the number
    "mul": lambda x, c: x * c,
    "radd": lambda x, c: c + x,
    "div": lambda x, c: x / c,
    "floordiv": lambda x, c: x // c,
    "less": lambda x, c: x < c,
    "eq": lambda x, c: x == c,
    "max": lambda x, c: np.maximum(x, c),
    "where": lambda x, c: np.where(x > 1, x, c),
    "clip": lambda x, c: np.clip(x, -abs(c), abs(c)),
    "clip-low": lambda x, c: np.clip(x, c, None),
    "py-square": lambda x, c: x + c * c,
    "py-arith": lambda x, c: x * (c * 2 - 1),
    "sin": lambda x, c: x * np.sin(c),
    "asarray": lambda x, c: x + np.asarray(c),
    "sum": lambda x, c: x * np.sum(c),
    "abs": lambda x, c: x - np.abs(c),
    "full": lambda x, c: x + np.full(x.shape, c),
    "dot": lambda x, c: np.dot(x, c),
    "mean": lambda x, c: np.mean(x) * c,
    "square": lambda x, c: x * np.square(c),
}
DIFFERENTIABLE = ("mul", "radd", "div", "max", "where", "clip", "clip-low", "py-square",
                  "py-arith", "sin", "asarray",
                  "sum", "abs", "full", "dot", "mean", "square")
DTYPES = (np.float32, np.float64, np.int8, np.uint8, np.int32)
NUMBERS = (0, 1, 3, 100, 127, 128, 200, 255, 256, -1, -3, -129, 2 ** 31, -2 ** 33, 2 ** 40,
           0.5, 2.0, -1.5, 1e10, True, False, np.float32(2.0), np.int8(3), np.int64(-2),
           np.float64(1.0))


def _branchy(f):
    def g(x, c):
        y = f(x, c)
        if np.sum(y) > 2.0:  # a decision on the value, in the program's dtype
            return np.sum(y ** 2)
        return np.sum(y)
    return g


def _eager(f, args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return f(*args), None
        except OverflowError as e:
            return None, e


def _check(seed: int) -> None:
    rng = np.random.default_rng(seed)
    name = str(rng.choice(list(FUNCTIONS)))
    grad = name in DIFFERENTIABLE and rng.random() < 0.4
    dtype = rng.choice(DTYPES[:2] if grad else DTYPES)
    f = _branchy(FUNCTIONS[name]) if grad else FUNCTIONS[name]
    t = dg.value_and_grad(f) if grad else dg.jit(f)
    x = (rng.integers(-4, 5, size=3) if np.dtype(dtype).kind in "iu" else
         rng.normal(size=3)).astype(dtype)
    if np.dtype(dtype).kind == "u":
        x = np.abs(x)
    for c in rng.choice(np.array(NUMBERS, dtype=object), size=int(rng.integers(3, 7))):
        want, raised = _eager(f, (x, c))
        where = f"seed {seed}: {'value_and_grad' if grad else 'jit'} of {name!r} at x " \
                f"{x.dtype}{x.tolist()}, c = {c!r}"
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            if raised is not None:
                with pytest.raises(OverflowError):
                    t(x, c)
                continue
            got = t(x, c)
        if grad:
            got = got[0]
        assert np.asarray(got).dtype == np.asarray(want).dtype, \
            f"{where}: dtype {np.asarray(got).dtype}, eager {np.asarray(want).dtype}"
        exact = np.asarray(want).dtype.kind in "biu"
        np.testing.assert_allclose(got, want, rtol=0 if exact else 1e-6, atol=0,
                                   equal_nan=True, err_msg=where)


def test_python_number_call_sequences(fuzz_long):
    for seed in range(3000 if fuzz_long else 40):
        _check(seed)
