"""NaN, infinities, signed zeros, subnormals and huge values through every executor.

:data:`ROWS` holds a row for every elementwise op of ``dualgpu.core.primitives.REGISTRY`` that
has a C form (``test_every_elementwise_op_with_a_c_form_has_a_row`` fails for a new one
without). Each op is applied to :func:`special_values` (unary ops) or to every pair of them
(binary ops and ``where``), in float64 and float32, and run by

* the generated Python program (``dg.config["host_kernel"] = False``),
* the host kernel (``dg.config["host_kernel"] = True``: the tiny kernel's CUDA text compiled
  for the CPU, :mod:`dualgpu.codegen.host`),
* the fused region kernels: their CUDA text compiled by g++ and run one host thread per CUDA
  thread (``HostProgram`` of tests/codegen/test_cupy_launcher.py over
  tests/helpers/product_harness.py),

and tests/gpu/test_special_values_gpu.py runs the same programs through CuPy. Values are
compared with NumPy's (:func:`disagreements`: NaN where NumPy gives NaN, the same
infinities and signed zeros, finite values within a few units in the last place). The JVP
and the gradient programs of every differentiable op are compared, executor by executor,
with the generated Python program's results on the same inputs. Each kind of program
(values, JVP, gradient) holds the whole table, so that each executor compiles a handful of
kernels per dtype.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
import scipy.special
from test_cupy_launcher import FakeBackend
from test_cupy_launcher import HostProgram as RegionKernelsOnHost
from tiny_harness import needs_gxx

import dualgpu as dg
from dualgpu.backends.numpy import NumpyBackend
from dualgpu.codegen import host
from dualgpu.codegen.tiny import tiny_refusal
from dualgpu.core.primitives import NON_DIFFERENTIABLE, REGISTRY
from dualgpu.runtime.executor import Executable, config

DTYPES = (np.float64, np.float32)
ORDINARY = (0.75, -0.75, 1.5, -2.0, 3.0)
# extreme finite values, both signs: where exp, logistic and their derivatives underflow or
# cancel (+-40: logistic(-40) is 4e-18, 1 - logistic(40) rounds to 0), where exp overflows
# (+-700, +-88), huge (squares overflow) and tiny (squares underflow) normal values
EXTREMES = {np.dtype(np.float64): (1e-300, 40.0, 700.0, 1e300),
            np.dtype(np.float32): (1e-38, 40.0, 88.0, 3e38)}
N_VALUES = 9 + len(ORDINARY) + 8


def special_values(dtype) -> np.ndarray:
    """NaN, +-inf, +-0, the smallest subnormal and the largest finite value of each sign,
    a few ordinary values of both signs (-2 a pole of gammaln) and :data:`EXTREMES` of both
    signs, in ``dtype``."""
    fi = np.finfo(dtype)
    tiny, big = fi.smallest_subnormal, fi.max
    extremes = [s * v for v in EXTREMES[np.dtype(dtype)] for s in (1, -1)]
    return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, tiny, -tiny, big, -big, *ORDINARY,
                     *extremes], dtype=dtype)


def special_pairs(dtype) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of :func:`special_values`: ``a[k], b[k]`` is the k-th pair."""
    v = special_values(dtype)
    a, b = np.meshgrid(v, v, indexing="ij")
    return a.ravel(), b.ravel()


def _gammaln_of_tiny(x, want):
    """SciPy's gammaln overflows to inf below ~5.6e-308 (cephes takes log(1 / x)); the
    kernels give lgamma's -log|x| there, the closed form (docs/limitations.md)."""
    tiny = (np.abs(x) < 1e-300) & (x != 0)
    with np.errstate(divide="ignore"):
        return np.where(tiny, -np.log(np.abs(x)), want)


@dataclass(frozen=True)
class Row:
    """How one op is checked. ``params``: the equation's parameters (``dtype="other"``: the
    other float dtype). ``ulps``: how many units in the last place of NumPy's value a kernel's
    finite result may be off (more than 4 only where math libraries legitimately differ);
    ``d_ulps``: the same for the JVP and gradient programs against the Python program's.
    ``kernel_reference(x, numpy_value)``: what the kernels must give instead of NumPy's
    value, where that is wrong and the difference is documented (docs/limitations.md).
    ``zero_sign``: False where IEEE leaves the sign of a zero result open and NumPy's own
    loops differ (``fmax(0.0, -0.0)`` is 0.0 or -0.0 by dtype and NumPy build).
    ``reference``: the NumPy or SciPy function every executor is compared with, where the
    op's implementation is not one (the generated Python calls the implementation)."""

    params: dict = field(default_factory=dict)
    ulps: float = 4
    d_ulps: float = 8
    kernel_reference: Callable | None = None
    zero_sign: bool = True
    integer_exponent: bool = False
    reference: Callable | None = None


# the second operands of an op whose second argument is an integer exponent (ldexp), one per
# special value: each first operand meets each of them once
EXPONENTS = np.array([0, 1, -1, 3, -3, 30, -30, 126, -149, 1023, -1074, 1100, -1100, 64,
                      2, -2, 127, -127, 1000, -1000, 2 ** 31 - 1, -2 ** 31], dtype=np.int32)
assert EXPONENTS.size == N_VALUES


ROWS: dict[str, Row] = {name: Row() for name in (
    "add", "subtract", "multiply", "true_divide", "negative", "power", "square",
    "reciprocal", "absolute", "sqrt", "cbrt", "maximum", "minimum", "fmax", "fmin", "hypot",
    "copysign", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh",
    "arcsinh", "arccosh", "arctanh", "erf", "erfc", "where", "sign", "floor",
    "ceil", "rint", "trunc", "less", "less_equal", "greater", "greater_equal", "equal",
    "not_equal", "logical_and", "logical_or", "logical_not", "isnan", "isfinite",
    "floor_divide", "remainder", "fmod", "stop_gradient", "isinf", "signbit", "nextafter",
    "tanh", "logaddexp",
    "heaviside")}
# integer exponents: no NaN, infinity or zero of x is moved; overflow and underflow of x * 2**e
ROWS["ldexp"] = Row(integer_exponent=True)
ROWS.update({
    # glibc's and cephes' lgamma differ by 3 ulps at 1.5 (a value near lgamma's zero at 2)
    "gammaln": Row(ulps=8, kernel_reference=_gammaln_of_tiny),
    # SciPy's expit: the generated Python calls the op's implementation
    "logistic": Row(reference=scipy.special.expit),
    # tanh's derivative (no NumPy function): its closed form in long double
    "sech2": Row(reference=lambda x: _sech2_ld(x).astype(np.asarray(x).dtype)),
    "fmax": Row(zero_sign=False),
    "fmin": Row(zero_sign=False),
    "convert_element_type": Row(params=dict(dtype="other")),
    "fill_like": Row(params=dict(value=2.5)),
    "broadcast_to": Row(params=dict(shape=(2, N_VALUES))),
})


def table() -> list:
    """``(name, primitive, row)`` of every op of :data:`ROWS`, unary ops first (the ops of
    one domain fuse into one region: few kernels to compile)."""
    return sorted([(name, REGISTRY[name], row) for name, row in ROWS.items()],
                  key=lambda t: t[1].arity)


def _params(row: Row, dtype) -> dict:
    if row.params.get("dtype") == "other":
        return dict(row.params, dtype=np.dtype(np.float32 if dtype == np.float64
                                               else np.float64))
    return dict(row.params)


def _operands(prim, x, a, b, row: Row | None = None) -> tuple:
    """``x`` for a unary op, the pairs ``(a, b)`` for a binary one, a fixed condition and
    the pairs for ``where``."""
    if prim.arity == 1:
        return (x,)
    if prim.arity == 2:
        if row is not None and row.integer_exponent:
            return (a, np.resize(EXPONENTS, np.shape(a)))
        return (a, b)
    return (np.arange(np.shape(a)[0]) % 3 != 1, a, b)


def _apply(ops, dtype, x, a, b) -> tuple:
    return tuple(prim.bind(*_operands(prim, x, a, b, row), **_params(row, dtype))
                 for _, prim, row in ops)


@dataclass
class Program:
    """A traced program over the table, its arguments and, per output, the row and the
    operands it is reported at."""

    graph: object
    args: tuple
    rows: list          # (name, row, operands) per output


def _inputs(dtype) -> tuple:
    return (special_values(dtype), *special_pairs(dtype))


def values_program(dtype) -> Program:
    """Every op of the table on the special values."""
    ops = table()
    args = _inputs(dtype)
    graph = dg.trace(lambda x, a, b: _apply(ops, dtype, x, a, b), *args)
    return Program(graph, args, [(n, r, _operands(p, *args, r)) for n, p, r in ops])


def _differentiable(dtype) -> list:
    """The differentiable ops whose derivative programs run as one kernel (gammaln's
    derivative, digamma, has no C form: its programs run it as a library call)."""
    args = _inputs(dtype)
    ops = []
    for name, prim, row in table():
        if name in NON_DIFFERENTIABLE:
            continue
        op = [(name, prim, row)]
        jvp = dg.trace(lambda *xt, op=op: dg.jvp(
            lambda x, a, b: _apply(op, dtype, x, a, b), xt[:3], xt[3:])[1], *args, *args)
        if tiny_refusal(jvp) is None:
            ops.append((name, prim, row))
    return ops


def jvp_program(dtype) -> Program:
    """The JVP of every differentiable op at the special values, every tangent 1 (so a binary
    op's output tangent is the sum of its partials)."""
    ops = _differentiable(dtype)
    args = _inputs(dtype)

    def jvp(x, a, b, x_dot, a_dot, b_dot):
        return dg.jvp(lambda x, a, b: _apply(ops, dtype, x, a, b), (x, a, b),
                      (x_dot, a_dot, b_dot))[1]

    graph = dg.trace(jvp, *args, *[np.ones_like(v) for v in args])
    return Program(graph, args + tuple(np.ones_like(v) for v in args),
                   [(n, r, _operands(p, *args, r)) for n, p, r in ops])


def vjp_program(dtype) -> Program:
    """The VJP of every differentiable op at the special values, every cotangent 1, each op
    reading inputs of its own: each input's cotangent is one partial of one op."""
    x, a, b = _inputs(dtype)
    uses, primals, rows = [], [], []
    for name, prim, row in _differentiable(dtype):
        operands = _operands(prim, x, a, b, row)
        traced = [k for k, v in enumerate(operands) if v.dtype.kind == "f"]
        uses.append((prim, row, operands, traced, len(primals)))
        primals.extend(operands[k] for k in traced)
        rows.extend((f"d{name}/d{k}", row, operands) for k in traced)

    def f(*inputs):
        outs = []
        for prim, row, operands, traced, first in uses:
            ops_in = list(operands)
            for j, k in enumerate(traced):
                ops_in[k] = inputs[first + j]
            outs.append(prim.bind(*ops_in, **_params(row, dtype)))
        return tuple(outs)

    n = len(primals)
    with np.errstate(all="ignore"):
        cotangents = [np.ones(np.shape(o), o.dtype) for o in f(*primals)]
    graph = dg.trace(lambda *a: dg.vjp(f, *a[:n])[1](tuple(a[n:])), *primals, *cotangents)
    return Program(graph, tuple(primals) + tuple(cotangents), rows)


def flush_subnormals(a) -> np.ndarray:
    """``a`` with its subnormal values replaced by zeros of their sign: what a kernel
    compiled with flush-to-zero reads and writes (CuPy compiles every kernel, its own ufuncs
    included, with ``-ftz=true``: float32 subnormals are zeros on the device)."""
    a = np.asarray(a)
    if a.dtype.kind != "f":
        return a
    subnormal = (a != 0) & (np.abs(a) < np.finfo(a.dtype).tiny)
    return np.where(subnormal, np.copysign(np.zeros((), a.dtype), a), a)


def flushed(program: Program) -> Program:
    """``program`` on flushed arguments (its rows' operands flushed too)."""
    return Program(program.graph, tuple(flush_subnormals(a) for a in program.args),
                   [(name, row, tuple(flush_subnormals(v) for v in operands))
                    for name, row, operands in program.rows])


# --------------------------------------------------------------------------- executors
def run_python(graph, args) -> list:
    config["host_kernel"] = False
    with np.errstate(all="ignore"):
        return Executable(graph, NumpyBackend())(*args)


def run_host_kernel(graph, args) -> list:
    config["host_kernel"] = True
    exe = Executable(graph, NumpyBackend())
    assert exe.host is not None, "the program did not run as the host kernel"
    return exe(*args)


def run_region_kernels(graph, args) -> list:
    return RegionKernelsOnHost(graph, FakeBackend())(*args)


KERNEL_EXECUTORS = {"host_kernel": run_host_kernel, "region_kernels": run_region_kernels}
EXECUTORS = {"python": run_python, **KERNEL_EXECUTORS}


# --------------------------------------------------------------------------- agreement
def _ulps_apart(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """How many representable values apart ``got`` and ``want`` are (finite, nonzero, of one
    sign and one dtype: their bit patterns are ordered as their values)."""
    ints = np.int64 if got.dtype.itemsize == 8 else np.int32
    return np.abs(got.view(ints).astype(np.int64) - want.view(ints).astype(np.int64))


def disagreements(got, want, ulps: float, zero_sign: bool = True) -> np.ndarray:
    """The flat indices where ``got`` and ``want`` disagree: NaN-ness, infinities, the sign of
    zero (unless ``zero_sign`` is False), or finite values more than ``ulps`` units in the
    last place apart (booleans and integers: any difference)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, \
        (got.dtype, got.shape, want.dtype, want.shape)
    g, w = got.ravel(), want.ravel()
    if w.dtype.kind != "f":
        return np.flatnonzero(g != w)
    ok = np.isnan(g) & np.isnan(w)
    ok |= (g == w) & ((np.signbit(g) == np.signbit(w)) | (not zero_sign))
    near = ~ok & np.isfinite(g) & np.isfinite(w) & (g != 0) & (w != 0) & \
        (np.signbit(g) == np.signbit(w))
    ok[np.flatnonzero(near)[_ulps_apart(g[near], w[near]) <= ulps]] = True
    return np.flatnonzero(~ok)


def _at(operands, k: int) -> str:
    picked = [np.broadcast_to(v, np.shape(operands[-1])).ravel() for v in operands]
    return ", ".join(repr(v[k % v.size].item()) for v in picked)


def assert_agree(program: Program, got: list, want: list, dtype, ulps_of,
                 zero_sign: bool = True) -> None:
    """Every output of ``program`` agrees with ``want``, each within its row's tolerance
    (``ulps_of(row)``; the sign of a zero only where the row and ``zero_sign`` ask for it);
    the message lists the disagreements op by op."""
    assert len(got) == len(want) == len(program.rows)
    report = []
    for (name, row, operands), g, w in zip(program.rows, got, want):
        bad = disagreements(g, w, ulps_of(row), row.zero_sign and zero_sign)
        for k in bad[:6]:
            report.append(f"{name}({_at(operands, k)}) = {np.ravel(g)[k]!r}, "
                          f"want {np.ravel(w)[k]!r}")
        if len(bad) > 6:
            report.append(f"  ... {name}: {len(bad)} disagreements in all")
    assert not report, f"{np.dtype(dtype).name}:\n" + "\n".join(report)


def numpy_values(program: Program, dtype, kernel: bool) -> list:
    """NumPy's value of every op of ``program`` (each op's implementation on NumPy), or for
    a kernel, the row's ``kernel_reference`` where it has one."""
    want = []
    with np.errstate(all="ignore"):
        for (name, row, operands) in program.rows:
            value = np.asarray(row.reference(*operands) if row.reference is not None else
                               REGISTRY[name].impl(np, *operands, **_params(row, dtype)))
            if kernel and row.kernel_reference is not None:
                value = row.kernel_reference(*operands, value).astype(value.dtype)
            want.append(value)
    return want


# --------------------------------------------------------------------------- the tests
@pytest.fixture(autouse=True)
def _switch_restored(host_kernel_restored):
    """Every test here flips dg.config["host_kernel"] (tests/conftest.py restores it)."""


def test_every_elementwise_op_with_a_c_form_has_a_row():
    with_c = {name for name, p in REGISTRY.items()
              if p.kind == "elementwise" and p.c is not None and not getattr(p, "custom", False)}
    assert with_c == set(ROWS), (f"no row: {sorted(with_c - set(ROWS))}; "
                                 f"not an elementwise op with a C form: "
                                 f"{sorted(set(ROWS) - with_c)}")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("executor", ["python"] + [
    pytest.param(name, marks=needs_gxx) for name in sorted(KERNEL_EXECUTORS)])
def test_values_agree_with_numpy(executor, dtype):
    program = values_program(dtype)
    got = EXECUTORS[executor](program.graph, program.args)
    want = numpy_values(program, dtype, kernel=executor != "python")
    assert_agree(program, got, want, dtype, lambda row: row.ulps)


@needs_gxx
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("make", [jvp_program, vjp_program], ids=["jvp", "vjp"])
@pytest.mark.parametrize("executor", sorted(KERNEL_EXECUTORS))
def test_derivatives_agree_with_the_python_program(executor, make, dtype, monkeypatch):
    # the whole table is one kernel: more serial steps than a host kernel is given (where the
    # Python program would be faster); the bound is about speed, not values
    monkeypatch.setattr(host, "HOST_WORK_MAX", 1 << 30)
    program = make(dtype)
    want = run_python(program.graph, program.args)
    got = KERNEL_EXECUTORS[executor](program.graph, program.args)
    assert_agree(program, got, want, dtype, lambda row: row.d_ulps)


@needs_gxx
@pytest.mark.parametrize("dtype", [np.int32, np.int64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("executor", sorted(KERNEL_EXECUTORS))
def test_integer_floor_divide_and_remainder_are_numpy_s(executor, dtype):
    """x // 0 and x % 0 are 0 in NumPy (a C division by zero traps on the host); negative
    operands round toward -inf (MIN // -1 and the other extremes:
    tests/ops/test_integer_extremes.py)."""
    v = np.array([0, 1, -1, 7, -7, 3, -3, np.iinfo(dtype).max], dtype=dtype)
    a, b = (m.ravel() for m in np.meshgrid(v, v, indexing="ij"))
    graph = dg.trace(lambda a, b: (np.floor_divide(a, b), np.remainder(a, b)), a, b)
    with np.errstate(all="ignore"):
        want = [np.floor_divide(a, b), np.remainder(a, b)]
    got = KERNEL_EXECUTORS[executor](graph, (a, b))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


# --------------------------------------------------------------------------- analytic derivatives
def _sech2_ld(x):
    e = np.exp(-2 * np.abs(np.asarray(x, np.longdouble)))
    return 4 * e / ((1 + e) * (1 + e))


def _logistic_ld(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


_LN2, _LN10 = np.log(np.longdouble(2)), np.log(np.longdouble(10))
_TWO_OVER_SQRT_PI = 2 / np.sqrt(np.longdouble(np.pi))
# The partial derivatives of each op in closed form, one function per input, evaluated in
# long double (squares of 1e300 and exp(-40) ** 2 do not overflow or underflow there): what
# the derivative programs must give where it is finite (tests/ops/test_registry.py checks the
# derivatives against finite differences inside each op's domain).
DERIVATIVES: dict[str, tuple] = {
    "negative": (lambda x: -np.ones_like(x),),
    "square": (lambda x: 2 * x,),
    "reciprocal": (lambda x: -1 / (x * x),),
    "absolute": (np.sign,),
    "sqrt": (lambda x: 0.5 / np.sqrt(x),),
    "cbrt": (lambda x: 1 / (3 * np.cbrt(x) ** 2),),
    "exp": (np.exp,),
    "exp2": (lambda x: _LN2 * np.exp2(x),),
    "expm1": (np.exp,),
    "log": (lambda x: 1 / x,),
    "log2": (lambda x: 1 / (x * _LN2),),
    "log10": (lambda x: 1 / (x * _LN10),),
    "log1p": (lambda x: 1 / (1 + x),),
    "sin": (np.cos,),
    "cos": (lambda x: -np.sin(x),),
    "tan": (lambda x: 1 / np.cos(x) ** 2,),
    "arcsin": (lambda x: 1 / np.sqrt(1 - x * x),),
    "arccos": (lambda x: -1 / np.sqrt(1 - x * x),),
    "arctan": (lambda x: 1 / (1 + x * x),),
    "sinh": (np.cosh,),
    "cosh": (np.sinh,),
    "tanh": (lambda x: 1 / np.cosh(x) ** 2,),
    "arcsinh": (lambda x: 1 / np.sqrt(x * x + 1),),
    "arccosh": (lambda x: 1 / (np.sqrt(x - 1) * np.sqrt(x + 1)),),   # NaN below 1
    "arctanh": (lambda x: 1 / (1 - x * x),),
    "erf": (lambda x: _TWO_OVER_SQRT_PI * np.exp(-x * x),),
    "erfc": (lambda x: -_TWO_OVER_SQRT_PI * np.exp(-x * x),),
    "logistic": (lambda x: _logistic_ld(x) * _logistic_ld(-x),),
    "sech2": (lambda x: -2 * np.tanh(x) * _sech2_ld(x),),
    "add": (lambda a, b: np.ones_like(a), lambda a, b: np.ones_like(b)),
    "subtract": (lambda a, b: np.ones_like(a), lambda a, b: -np.ones_like(b)),
    "multiply": (lambda a, b: b, lambda a, b: a),
    "true_divide": (lambda a, b: 1 / b, lambda a, b: -a / (b * b)),
    "hypot": (lambda a, b: a / np.hypot(a, b), lambda a, b: b / np.hypot(a, b)),
    "arctan2": (lambda y, x: x / (x * x + y * y), lambda y, x: -y / (x * x + y * y)),
    "logaddexp": (lambda a, b: _logistic_ld(a - b), lambda a, b: _logistic_ld(b - a)),
    "copysign": (lambda a, b: np.sign(a) * np.where(np.signbit(b), -1, 1),
                 lambda a, b: np.zeros_like(b)),
}
# differentiable ops whose derivatives are conventions at the special points (ties, jumps,
# x ** y at x <= 0) or trivial, checked elsewhere (tests/ops/test_registry.py,
# tests/transforms/test_vmap.py)
NO_CLOSED_FORM = {"power", "maximum", "minimum", "fmax", "fmin", "remainder", "fmod", "ldexp",
                  "heaviside", "where", "stop_gradient", "convert_element_type",
                  "broadcast_to", "gammaln"}


def test_every_differentiable_op_has_a_closed_form_derivative():
    differentiable = {name for name in ROWS if name not in NON_DIFFERENTIABLE}
    assert differentiable - NO_CLOSED_FORM == set(DERIVATIVES)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_derivatives_agree_with_their_closed_forms(dtype):
    """The gradient program's partials (the generated Python; the kernels are compared with
    it above) at the special and extreme values: within 16 ulps of the closed form where
    that is a normal number, finite and below the smallest normal where it is finite and
    smaller (1 - logistic(40) and 1 - tanh(19)**2 round to 0; expm1(-40) + 1 is 0 too)."""
    program = vjp_program(dtype)
    got = run_python(program.graph, program.args)
    report = []
    tiny = np.finfo(dtype).tiny
    for (label, _, operands), g in zip(program.rows, got):
        name, k = label[1:].rsplit("/d", 1)
        if name not in DERIVATIVES:
            continue
        with np.errstate(all="ignore"):
            want = np.asarray(DERIVATIVES[name][int(k)](
                *[np.asarray(v, np.longdouble) for v in operands])).astype(dtype)
        g = np.broadcast_to(g, want.shape).ravel()
        want = want.ravel()
        finite = np.isfinite(want)
        normal = finite & (np.abs(want) >= tiny)
        bad = np.zeros(want.shape, bool)
        bad[normal] = ~np.isfinite(g[normal]) | (np.signbit(g[normal]) != np.signbit(want[normal]))
        close = normal & ~bad
        bad[np.flatnonzero(close)[_ulps_apart(g[close], want[close]) > 16]] = True
        bad |= finite & ~normal & ~(np.abs(g) < tiny)
        for i in np.flatnonzero(bad)[:6]:
            report.append(f"{label}({_at(operands, i)}) = {g[i]!r}, want {want[i]!r}")
    assert not report, f"{np.dtype(dtype).name}:\n" + "\n".join(report)


def test_tanh_derivatives_in_the_tails_raise_no_floating_point_error():
    """sech2's exp(-2|x|) underflows where tanh' does (|x| ~ 44 in float32, ~354 in
    float64): under np.errstate(all="raise") the gradient and the HVP of tanh are computed,
    not raised, and are the closed forms' (a subnormal or 0 far out)."""
    for dtype in (np.float32, np.float64):
        x = np.array([0.5, -50.0, 400.0, -800.0], dtype)
        with np.errstate(all="raise"):
            g = dg.grad(lambda x: np.sum(np.tanh(x)))(x)
            h = dg.hvp(lambda x: np.sum(np.tanh(x)))(x, np.ones_like(x))
        s = _sech2_ld(x)
        t = np.tanh(np.asarray(x, np.longdouble))
        tiny = np.finfo(dtype).tiny    # subnormals hold fewer digits
        np.testing.assert_allclose(g, s.astype(dtype), rtol=1e-6, atol=tiny)
        np.testing.assert_allclose(h, (-2 * t * s).astype(dtype), rtol=1e-6, atol=tiny)
