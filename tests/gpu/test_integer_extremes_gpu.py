"""The integer-extremes program of tests/ops/test_integer_extremes.py on the device: every integer
op on MIN, MAX, -1, 0, ... of every integer dtype (``MIN // -1``, ``x % 0``, wrapping
overflow, powers by squaring, and the truncated powers at negative exponents), through
CuPy's region kernels and the tiny kernel, against NumPy bit for bit. (A division by zero
or ``MIN / -1`` does not trap on the device, but its value is unspecified: the integer C
forms test the divisor first.)"""
from __future__ import annotations

import numpy as np
import pytest
from gpu_device import cupy_or_skip

from dualgpu.backends import backend_of
from dualgpu.runtime.executor import Executable, config

cp = cupy_or_skip()
from test_integer_extremes import (  # noqa: E402
    _checks,
    _report,
    inputs,
    negative_powers,
    numpy_values,
    program,
    truncated_power,
)


@pytest.mark.parametrize("tiny", [False, True], ids=["region_kernels", "tiny_kernel"])
def test_integer_extremes_agree_with_numpy(tiny):
    config["fuse"], config["tiny_kernel"] = True, tiny
    args = [cp.asarray(a) for a in inputs()]
    exe = Executable(program(with_negative_powers=True), backend_of(args))
    got = [cp.asnumpy(cp.asarray(o)) for o in exe(*args)]
    checks = _checks(False)
    bad = _report(got, numpy_values(checks), checks)
    for g, (a, e) in zip(got[len(checks):], negative_powers()):
        w = truncated_power(a, e)
        bad += [f"power({a[k]}, {e[k]}) [{a.dtype}] = {g[k]}, want {w[k]}"
                for k in np.flatnonzero(g != w)[:4]]
    assert not bad, "\n".join(bad)
