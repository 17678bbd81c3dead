"""The special-value table of tests/ops/test_special_values.py on the device: every elementwise
op with a C form at NaN, +-inf, +-0, subnormals, huge and ordinary values, and the JVP and
VJP programs of the differentiable ones, through CuPy's fused programs -- the region kernels
(``dg.config["tiny_kernel"] = False``) and the tiny kernel of one block -- against NumPy's
values (sign(nan) is nan, x // inf and x % inf as NumPy's) and the NumPy backend's
derivative programs. CuPy compiles every kernel with flush-to-zero (``-ftz=true``, its own
ufuncs too), so in float32 the device reads and writes subnormals as zeros of their sign:
there the reference is NumPy's on flushed operands, flushed (docs/limitations.md)."""
from __future__ import annotations

import numpy as np
import pytest
from gpu_device import cupy_or_skip

import dualgpu as dg
from dualgpu.backends import backend_of
from dualgpu.runtime.executor import Executable, config

cp = cupy_or_skip()
from test_special_values import (  # noqa: E402
    DTYPES,
    assert_agree,
    flush_subnormals,
    flushed,
    jvp_program,
    numpy_values,
    run_python,
    values_program,
    vjp_program,
)


def on_device(program, dtype):
    """``program`` as the device sees it, and how its results are read: float32 flushed (on
    both sides: an op that builds its result from bits, nextafter or ldexp, may write a
    subnormal that the device itself reads as a zero of its sign)."""
    if np.dtype(dtype) == np.float32:
        return flushed(program), lambda values: [flush_subnormals(v) for v in values]
    return program, list


def device_reference(program, want: list, dtype) -> list:
    """NumPy's values as a flush-to-zero device gives them where flushing changes an op's
    definition, not only its subnormal results: float32 ``nextafter`` steps from a zero to
    the smallest *normal* value (CUDA's ``nextafterf`` under ``-ftz=true``, as
    ``cp.nextafter`` gives; the subnormal NumPy steps to would read back as the zero itself)."""
    if np.dtype(dtype) != np.float32:
        return want
    out = []
    for (name, _row, operands), value in zip(program.rows, want):
        if name == "nextafter":
            x, y = np.broadcast_arrays(*operands)
            steps_from_zero = (x == 0) & (x != y) & ~np.isnan(y)
            value = np.where(steps_from_zero,
                             np.copysign(np.finfo(np.float32).tiny, y - x), value)
        out.append(value)
    return out


def run_cupy(graph, args, tiny: bool) -> list:
    """``graph`` as CuPy's fused program (region kernels, or the one tiny kernel)."""
    config["fuse"], config["tiny_kernel"] = True, tiny
    device_args = [cp.asarray(a) for a in args]
    exe = Executable(graph, backend_of(device_args))
    if not tiny:
        assert exe._fn.tiny is None
    return [cp.asnumpy(cp.asarray(o)) for o in exe(*device_args)]


@pytest.mark.parametrize("tiny", [False, True], ids=["region_kernels", "tiny_kernel"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_values_agree_with_numpy(dtype, tiny):
    program, read = on_device(values_program(dtype), dtype)
    got = read(run_cupy(program.graph, program.args, tiny))
    want = device_reference(program, read(numpy_values(program, dtype, kernel=True)), dtype)
    assert_agree(program, got, want, dtype, lambda row: row.ulps)


def test_cupy_nextafter_agrees_with_the_device_reference():
    """The float32 reference above is the device's own ufunc's, not a tolerance made up here."""
    x = np.array([0.0, -0.0, 0.0, 1.0], np.float32)
    y = np.array([1.0, -2.0, -1.0, 2.0], np.float32)
    got = cp.asnumpy(cp.nextafter(cp.asarray(x), cp.asarray(y)))
    tiny = np.finfo(np.float32).tiny
    np.testing.assert_array_equal(got, [tiny, -tiny, -tiny, np.nextafter(np.float32(1), 2)])


def test_sign_of_nan_is_nan():
    x = np.array([np.nan, -0.0, 0.0, -2.0, 3.0, np.inf])
    for tiny in (False, True):
        config["tiny_kernel"] = tiny
        dg.clear_cache()
        got = cp.asnumpy(dg.jit(lambda x: np.sign(x) * 1.0)(cp.asarray(x)))
        np.testing.assert_array_equal(got, np.sign(x))
        g = cp.asnumpy(dg.grad(lambda x: np.sum(np.abs(x)))(cp.asarray(x)))
        np.testing.assert_array_equal(g, np.sign(x))     # grad(abs) at nan is nan


@pytest.mark.parametrize("tiny", [False, True], ids=["region_kernels", "tiny_kernel"])
@pytest.mark.parametrize("make", [jvp_program, vjp_program], ids=["jvp", "vjp"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_derivatives_agree_with_the_numpy_program(dtype, make, tiny):
    program, read = on_device(make(dtype), dtype)
    want = read(run_python(program.graph, program.args))
    got = run_cupy(program.graph, program.args, tiny)
    # float32: a subnormal inside a derivative (1 / -FLT_MAX) is flushed to a zero on the
    # device before it is added to another zero, so a zero result may carry the other sign
    assert_agree(program, got, want, dtype, lambda row: row.d_ulps,
                 zero_sign=np.dtype(dtype) != np.float32)
