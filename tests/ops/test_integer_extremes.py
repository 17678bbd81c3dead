"""Integer extremes through every CPU executor, compared with NumPy bit for bit.

Every elementwise op of the registry with a C form whose NumPy value on integers is an integer
or a bool (``add``, ``floor_divide``, ``power``, ``absolute``, comparisons, the bitwise ops,
...) is applied to :func:`extremes` (MIN, MIN + 1, -1, 0, 1, 2, MAX - 1, MAX; unsigned: 0..3
and the values around MAX / 2 and MAX) or to every pair of them (the shifts: to
:func:`shift_counts`), for bool and every integer dtype from int8 to uint64, all in one
program, run by

* the generated Python program,
* the host kernel (``dg.config["host_kernel"]``: the tiny kernel's CUDA text compiled for
  the CPU), the host fused plan (``dg.config["host_fused"]``: the region kernels' loops
  compiled for the CPU) and the region kernels' CUDA text run thread by thread on the host
  (tests/helpers/product_harness.py).

C's integer division traps (SIGFPE) on ``x / 0`` and ``MIN / -1``, and C's signed overflow and
shifts by counts < 0 or >= the width are undefined, where NumPy gives ``x // 0 == 0``,
``MIN // -1 == MIN``, ``MAX + 1 == MIN``, ``1 << 64 == 0``: the
compiled executors run in a forked process (:func:`in_a_child`), so that a trap fails this test with
its signal instead of killing pytest. NumPy raises for a negative integer exponent; the
kernels give ``x ** y`` truncated there (1, +-1 or 0), checked separately.

``--fuzz-long`` (``make fuzz``) adds random values of each dtype (extremes included) to the
pairs.
"""
from __future__ import annotations

import functools
import multiprocessing
import signal
import traceback

import numpy as np
import pytest
from tiny_harness import needs_gxx

import dualgpu as dg
from dualgpu.backends.numpy import NumpyBackend
from dualgpu.core.primitives import REGISTRY
from dualgpu.runtime.executor import Executable, config

INT_DTYPES = tuple(np.dtype(d) for d in (bool, np.int8, np.int16, np.int32, np.int64,
                                         np.uint8, np.uint16, np.uint32, np.uint64))
LONG_VALUES = 40     # random values per dtype added by --fuzz-long
# ops whose parameters make no integer program here (their casts are in the float tables)
PARAMETRIZED = {"convert_element_type", "fill_like", "broadcast_to"}


def extremes(dtype, long: bool = False) -> np.ndarray:
    """The values where integer arithmetic overflows or traps (bool: both); with ``long``,
    random values of the whole range too (seeded)."""
    if np.dtype(dtype) == bool:
        return np.array([False, True])
    info = np.iinfo(dtype)
    if info.min < 0:
        v = [info.min, info.min + 1, -1, 0, 1, 2, info.max - 1, info.max]
    else:
        v = [0, 1, 2, 3, info.max // 2, info.max // 2 + 1, info.max - 1, info.max]
    v = np.array(v, dtype=dtype)
    if long:
        rng = np.random.default_rng(int(dtype.num))
        v = np.concatenate([v, rng.integers(info.min, info.max, LONG_VALUES, dtype=dtype,
                                            endpoint=True)])
    return v


def _pairs(v):
    a, b = np.meshgrid(v, v, indexing="ij")
    return a.ravel(), b.ravel()


def _nonnegative(b):
    """``b`` with each negative value ``y`` replaced by ``-1 - y`` (MIN becomes MAX); on
    NumPy arrays and traced ones."""
    if b.dtype.kind == "u":
        return b
    return np.where(b < 0, -1 - b, b)


def shift_counts(dtype, shape) -> np.ndarray:
    """The second operands of the shifts (a constant of the program): each first operand of
    the pairs meets each of MIN, -1, 0, 1, width - 1, width, width + 1 and MAX (unsigned: 0,
    1, 2, width - 1, width, width + 1, MAX - 1, MAX), where C's shifts are undefined and
    NumPy gives 0 or -1."""
    info, width = np.iinfo(dtype), 8 * np.dtype(dtype).itemsize
    low = [info.min, -1, 0, 1] if info.min < 0 else [0, 1, 2, info.max - 1]
    counts = np.array([*low, width - 1, width, width + 1, info.max], dtype=dtype)
    return np.resize(counts, shape)


def _operands(prim, x, a, b) -> tuple:
    if prim.arity == 1:
        return (x,)
    if prim.arity == 3:
        return (np.arange(a.size) % 3 != 1, a, b)
    if prim.name == "power":    # NumPy refuses negative exponents (checked apart)
        return (a, _nonnegative(b))
    if prim.name in ("left_shift", "right_shift") and b.dtype != bool:
        return (a, shift_counts(b.dtype, b.shape))
    return (a, b)


@functools.cache
def _integer_ops(dtype) -> list:
    """The ops of the registry with a C form that NumPy computes in integers or bools on
    ``dtype`` (dualgpu giving the same dtype): those the kernels compute by their integer
    forms."""
    x = extremes(dtype)
    ops = []
    for name, prim in sorted(REGISTRY.items()):
        if prim.kind != "elementwise" or not prim.has_c_form or name in PARAMETRIZED \
                or getattr(prim, "custom", False):
            continue
        operands = _operands(prim, x, *_pairs(x))
        try:
            with np.errstate(all="ignore"):
                want = np.asarray(prim.impl(np, *operands))
            aval = dg.trace(lambda *a, prim=prim: prim.bind(*a), *operands).outputs[0]
        except (TypeError, ValueError, dg.DualgpuError):
            continue
        if want.dtype.kind in "iub" and aval.dtype == want.dtype:
            ops.append(prim)
    return ops


def inputs(long: bool = False) -> tuple:
    """``x, a, b`` per dtype: the values and every pair of them."""
    return tuple(arr for d in INT_DTYPES
                 for arr in (extremes(d, long), *_pairs(extremes(d, long))))


def _checks(long: bool):
    """``(dtype, prim, operands)`` per output of the program, in order."""
    args = inputs(long)
    out = []
    for k, d in enumerate(INT_DTYPES):
        x, a, b = args[3 * k:3 * k + 3]
        out += [(d, prim, _operands(prim, x, a, b)) for prim in _integer_ops(d)]
    return out


def negative_powers(long: bool = False) -> list:
    """``(a, e)`` per signed dtype: the pairs' first operands and negative exponents (-1 to
    -70), where NumPy raises."""
    out = []
    for d in INT_DTYPES:
        if d.kind == "i":
            a, b = _pairs(extremes(d, long))
            out.append((a, (-1 - _nonnegative(b) % 70).astype(d)))
    return out


def program(long: bool = False, with_negative_powers: bool = False):
    """The one program: every integer op on every dtype's extremes, then (with
    ``with_negative_powers``) ``power`` at :func:`negative_powers`, their exponents
    constants of the program."""
    ops = {d: _integer_ops(d) for d in INT_DTYPES}   # NumPy's values: not while tracing
    negatives = negative_powers(long) if with_negative_powers else []
    power = REGISTRY["power"]

    def f(*args):
        outs = []
        for k, d in enumerate(INT_DTYPES):
            x, a, b = args[3 * k:3 * k + 3]
            outs += [prim.bind(*_operands(prim, x, a, b)) for prim in ops[d]]
        signed = [args[3 * k + 1] for k, d in enumerate(INT_DTYPES) if d.kind == "i"]
        outs += [power.bind(a, e) for a, (_, e) in zip(signed, negatives)]
        return tuple(outs)

    return dg.trace(f, *inputs(long))


def truncated_power(a, e) -> np.ndarray:
    """What the kernels give for ``a ** e`` with ``e < 0`` (NumPy raises): the value
    truncated toward 0."""
    return np.where(a == 1, 1, np.where(a == -1, np.where(e % 2 == 0, 1, -1), 0)).astype(a.dtype)


# --------------------------------------------------------------------------- the child
def compiled_results(long: bool) -> dict:
    """The program with negative powers run by every compiled executor (the region kernels'
    CUDA text only with ``long``: the harness compiles each of the program's ~130 regions
    alone, ~1.3 s each; the host fused plan compiles the same regions' C, one library).
    Runs in a child process of the test (:func:`in_a_child`)."""
    from test_cupy_launcher import FakeBackend
    from test_cupy_launcher import HostProgram as RegionKernelsOnHost

    from dualgpu.codegen import host, host_regions

    host.HOST_WORK_MAX = 1 << 30
    graph, args = program(long, with_negative_powers=True), inputs(long)
    results = {}
    config["host_kernel"], config["host_fused"] = True, False
    exe = Executable(graph, NumpyBackend())
    assert exe.host is not None, "the program did not run as the host kernel"
    results["host_kernel"] = [np.asarray(v) for v in exe(*args)]
    fused = host_regions.host_fused_program(graph, min_elements=0)
    assert fused is not None, "the program did not compile as a host fused plan"
    results["host_fused"] = [np.asarray(v) for v in fused(*args)]
    if long:
        results["region_kernels"] = [np.asarray(v) for v in
                                     RegionKernelsOnHost(graph, FakeBackend())(*args)]
    return results


def in_a_child(fn, *args, timeout: float = 600):
    """``fn(*args)`` computed in a forked process: a trap (SIGFPE) or a crash there fails the
    test with its signal, and pytest survives. (Forked, not spawned: the modules are loaded
    already; the compiled regions here are too small for OpenMP's threads.)"""
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)

    def target():
        try:
            send.send(("ok", fn(*args)))
        except BaseException:     # noqa: BLE001 (the child reports everything)
            send.send(("error", traceback.format_exc()))

    proc = ctx.Process(target=target)
    proc.start()
    send.close()
    try:
        message = receive.recv() if receive.poll(timeout) else None
    except EOFError:        # the child died before it sent anything
        message = None
    proc.join(timeout)
    if message is None:
        code = proc.exitcode
        how = (f"killed by {signal.Signals(-code).name}" if code is not None and code < 0
               else f"exit status {code}")
        pytest.fail(f"the compiled executors' process ended ({how})")
    status, value = message
    if status != "ok":
        pytest.fail(f"the compiled executors' process failed:\n{value}")
    return value


def _report(got: list, want: list, checks: list) -> list:
    bad = []
    for g, w, (d, prim, operands) in zip(got, want, checks):
        g, w = np.asarray(g), np.asarray(w)
        if g.dtype != w.dtype:
            bad.append(f"{prim.name}({d.name}): dtype {g.dtype}, want {w.dtype}")
            continue
        for k in np.flatnonzero(g != w)[:4]:
            at = ", ".join(repr(np.broadcast_to(v, w.shape)[k].item()) for v in operands)
            bad.append(f"{prim.name}({at}) [{d.name}] = {g[k]!r}, want {w[k]!r}")
    return bad


def numpy_values(checks) -> list:
    with np.errstate(all="ignore"):
        return [np.asarray(prim.impl(np, *operands)) for _, prim, operands in checks]


# --------------------------------------------------------------------------- the tests
@pytest.fixture(autouse=True)
def _switches_restored(host_kernel_restored):
    before = config["host_fused"]
    yield
    config["host_fused"] = before


def test_the_program_holds_the_integer_ops():
    """The table is not empty by accident: the ops that trap or overflow in C are in it."""
    names = {prim.name for _, prim, _ in _checks(False)}
    assert {"add", "subtract", "multiply", "negative", "absolute", "square", "power",
            "floor_divide", "remainder", "fmod", "maximum", "sign", "less", "bitwise_and",
            "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"} <= names


def test_python_program_agrees_with_numpy(fuzz_long):
    config["host_kernel"], config["host_fused"] = False, False
    checks = _checks(fuzz_long)
    with np.errstate(all="ignore"):
        got = Executable(program(fuzz_long), NumpyBackend())(*inputs(fuzz_long))
    bad = _report(got, numpy_values(checks), checks)
    assert not bad, "\n".join(bad)


@needs_gxx
def test_compiled_executors_agree_with_numpy(fuzz_long):
    """The host kernel and the host fused plan (with ``--fuzz-long`` the region kernels'
    CUDA text too), in a forked process: NumPy's values bit for bit, and truncated powers
    at negative exponents."""
    results = in_a_child(compiled_results, fuzz_long)
    checks = _checks(fuzz_long)
    want = numpy_values(checks)
    negatives = negative_powers(fuzz_long)
    bad = []
    for executor, outs in results.items():
        assert len(outs) == len(checks) + len(negatives)
        bad += [f"{executor}: {line}" for line in _report(outs, want, checks)]
        for g, (a, e) in zip(outs[len(checks):], negatives):
            w = truncated_power(a, e)
            bad += [f"{executor}: power({a[k]}, {e[k]}) [{a.dtype}] = {g[k]}, want {w[k]}"
                    for k in np.flatnonzero(g != w)[:4]]
    assert not bad, "\n".join(bad)
