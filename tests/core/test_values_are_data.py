"""Values are data, never code (issue 10, item 5).

Every literal or parameter reaches generated source through one encoder
(``dualgpu/codegen/encode.py``), which accepts only known types by exact type: special floats
(inf, nan, -0.0) and NumPy scalars work in Python and CUDA source, and a user object -- even
one whose ``__repr__``/``__str__`` returns code -- is refused with a DualgpuError before any
of its methods is called.
"""
from __future__ import annotations

import math
import re
import shutil
import struct
import subprocess

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dualgpu as dg
from dualgpu.codegen.cuda import region_kernels
from dualgpu.core import encode
from dualgpu.fusion import plan_graph

SPECIALS = [math.inf, -math.inf, math.nan, -0.0]
X = np.array([0.5, 1.0, 2.0])
V = np.array([1.0, -1.0, 0.5])


def _same_bits(a, b) -> bool:
    """Equal as IEEE values: same bits, except that any two NaNs of one sign are equal."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    nan = np.isnan(a)
    if not np.array_equal(nan, np.isnan(b)) or not np.array_equal(np.signbit(a), np.signbit(b)):
        return False
    return bool(np.all((a == b) | nan))


# --------------------------------------------------------------------------- NumPy programs
@pytest.mark.parametrize("v", SPECIALS, ids=repr)
def test_special_fill_values(v):
    f = dg.jit(lambda a: np.full_like(a, v))
    assert _same_bits(f(X), np.full_like(X, v))
    src = dg.source(f, X)
    assert not re.search(r"\b(inf|nan)\b(?!')", src), src


@pytest.mark.parametrize("v", SPECIALS, ids=repr)
def test_special_literals_in_jit(v):
    for fn in (lambda a: a * v, lambda a: v * a, lambda a: a + v, lambda a: np.maximum(a, v),
               lambda a: np.minimum(a, v), lambda a: -(a * 0.0 + v)):
        assert _same_bits(dg.jit(fn)(X), fn(X))


def test_negative_zero_keeps_its_sign():
    out = dg.jit(lambda a: a * -0.0)(X)
    assert np.all(np.signbit(out)) and np.all(out == 0)
    assert np.all(np.signbit(dg.jit(lambda a: np.full_like(a, -0.0))(X)))
    # the gradient of sum(a * -0.0) is -0.0 everywhere
    g = dg.grad(lambda a: np.sum(a * np.full_like(a, -0.0)))(X)
    assert np.all(g == 0) and np.all(np.signbit(g))
    # a negative literal as the left operand of ** stays one operand: (-2.0) ** a
    assert _same_bits(dg.jit(lambda a: (-2.0) ** np.round(a))(X), (-2.0) ** np.round(X))


def test_special_literals_in_grad_and_hvp():
    f = lambda a: np.sum(np.minimum(a, np.inf) ** 3 + np.maximum(a, -np.inf))  # noqa: E731
    np.testing.assert_allclose(dg.grad(f)(X), 3 * X ** 2 + 1)
    np.testing.assert_allclose(dg.hvp(f)(X, V), 6 * X * V)
    val, g = dg.value_and_grad(lambda a: np.sum(a + np.full_like(a, np.nan)))(X)
    assert np.isnan(val) and np.array_equal(g, np.ones(3))
    h = dg.hvp(lambda a: np.sum(np.where(a > 1.0, a ** 2, np.full_like(a, -np.inf))))
    np.testing.assert_allclose(h(X, V), np.where(X > 1.0, 2 * V, 0.0))
    src = dg.source(dg.hvp(f), X, V)
    assert "float('inf')" in src and not re.search(r"\binf\b(?!')", src)


def test_numpy_scalar_literals():
    f32, i64 = np.float32(2.0), np.int64(3)
    assert np.array_equal(dg.jit(lambda a: a * f32 + i64)(X), X * f32 + i64)
    x32 = X.astype(np.float32)
    out = dg.jit(lambda a: a * np.float32(0.1))(x32)
    assert out.dtype == np.float32 and _same_bits(out, x32 * np.float32(0.1))
    np.testing.assert_allclose(dg.grad(lambda a: np.sum(a * f32 * i64))(X), 6.0)
    np.testing.assert_allclose(dg.hvp(lambda a: np.sum(f32 * a ** i64))(X, V), 12 * X * V)
    for fill in (np.float32(2.5), np.int64(-4), np.float64(-0.0), np.float32(np.inf),
                 np.bool_(True)):
        out = dg.jit(lambda a, fill=fill: np.full_like(a, fill))(X)
        assert _same_bits(out, np.full_like(X, fill))
    # a NumPy integer as an axis
    np.testing.assert_allclose(dg.jit(lambda a: np.sum(a[None] * a[:, None], axis=np.int64(0)))(X),
                               np.sum(X[None] * X[:, None], axis=0))


def test_string_fill_is_refused_at_trace_time():
    with pytest.raises(dg.DualgpuError, match=r"fill_like: parameter 'value'.*number"):
        dg.jit(lambda a: np.full_like(a, "x"))(X)
    with pytest.raises(dg.DualgpuError, match="fill_like"):
        dg.trace(lambda a: np.full_like(a, "x"), X)


def test_a_traced_fill_value_is_a_value_of_the_program_never_a_parameter():
    f = dg.jit(lambda a: np.full_like(a, np.sum(a)))
    assert np.array_equal(f(X), np.full_like(X, np.sum(X)))
    assert np.array_equal(f(2 * X), np.full_like(X, np.sum(2 * X)))  # not baked in by the first
    assert repr(float(np.sum(X))) not in dg.source(lambda a: np.full_like(a, np.sum(a)), X)


# --------------------------------------------------------------------------- hostile objects
_FLAG = {"executed": False}


@pytest.fixture(autouse=True)
def _fresh_flag():
    """Each test starts with the flag down: a Hostile's text made outside a test (its repr
    when pytest or xdist describes a parameter) must not fail the next test."""
    _FLAG["executed"] = False


class Hostile:
    """Every textual conversion returns code that would set the flag if it were run."""

    def _code(self, *_):
        _FLAG["executed"] = True
        return "__import__('tests.test_values_are_data').test_values_are_data._FLAG" \
               ".__setitem__('executed', True) or 2.0"

    __repr__ = __str__ = _code

    def __format__(self, spec):
        return self._code()


class HostileFloat(float):
    __repr__ = __str__ = Hostile._code

    def __format__(self, spec):
        return Hostile._code(self)


@pytest.fixture
def hostile_op():
    """A registered elementwise op with a parameter printed into both templates."""
    op = dg.defprim("values_data_op", lambda xp, x, k: x * 2.0, lambda avals, k: avals[0],
                    jvp=lambda p, t, k: (op.bind(p[0], k=k), t[0] * 2.0),
                    vjp=lambda g, p, ans, k: (g * 2.0,),
                    kind="elementwise", c="({0} * {k})", py="ops.values_data_op({0}, k={k})")
    op.arity = 1
    plain = dg.defprim("values_data_plain", lambda xp, x, k: x * 2.0,
                       lambda avals, k: avals[0])
    _FLAG["executed"] = False
    try:
        yield op, plain
    finally:
        dg.REGISTRY.pop("values_data_op", None)
        dg.REGISTRY.pop("values_data_plain", None)
    assert not _FLAG["executed"]


@pytest.mark.parametrize("bad", [Hostile(), HostileFloat(2.0), [Hostile()], (1, HostileFloat(1)),
                                 slice(0, Hostile()), np.array(2.0), object()],
                         ids=lambda v: type(v).__name__)
def test_hostile_parameters_are_refused_before_codegen(hostile_op, bad):
    op, plain = hostile_op
    for f in (lambda a: op.bind(a, k=bad), lambda a: plain.bind(a, k=bad),
              lambda a: np.full_like(a, bad)):
        with pytest.raises(dg.DualgpuError, match="parameter 'k'|parameter 'value'"):
            dg.trace(f, X)
        with pytest.raises(dg.DualgpuError):
            dg.grad(lambda a, f=f: np.sum(f(a)))(X)
    assert not _FLAG["executed"]


def test_hostile_float_literal_is_refused(hostile_op):
    with pytest.raises(dg.DualgpuError, match="operand"):
        dg.jit(lambda a: a * HostileFloat(2.0))(X)
    with pytest.raises(dg.DualgpuError):
        dg.hvp(lambda a: np.sum(a ** 2 + HostileFloat(1.0)))(X, V)
    assert not _FLAG["executed"]


def test_hostile_parameter_names_are_refused(hostile_op):
    _, plain = hostile_op
    with pytest.raises(dg.DualgpuError):
        dg.jit(lambda a: plain.bind(a, **{"k=1) or __import__('os') or (k": 1}))(X)


def test_string_parameters_are_data(hostile_op):
    """A plain-identifier string is printed quoted too: it is data, not a name."""
    op = dg.defprim("values_data_mode", lambda xp, x, mode: x * (2.0 if mode == "fast" else 3.0),
                    lambda avals, mode: avals[0], py="ops.values_data_mode({0}, mode={mode})")
    try:
        f = dg.jit(lambda a: op.bind(a, mode="fast"))
        np.testing.assert_allclose(f(X), 2 * X)
        assert "mode='fast'" in dg.source(f, X)
    finally:
        dg.REGISTRY.pop("values_data_mode", None)


@pytest.mark.parametrize("dtype", ["float32", np.float32, np.dtype("float32"), "f4"])
def test_dtype_parameters_print_fixed_names(dtype):
    f = dg.jit(lambda a: a.astype(dtype) * 2)
    assert f(X).dtype == np.float32
    assert "astype(xp.float32)" in dg.source(f, X)


def test_bad_dtype_names_are_refused():
    g = dg.trace(lambda a: a.astype("float32"), X)
    g.eqns[0].params["dtype"] = "float32); __import__('os'"
    from dualgpu.codegen.python import generate_python

    with pytest.raises(dg.DualgpuError, match="dtype"):
        generate_python(g)


# --------------------------------------------------------------------------- CUDA text
def _kernels(fn, *args) -> str:
    g = dg.trace(fn, *args)
    return "".join(region_kernels(r).full_source() for r in plan_graph(g).regions)


_C_FORMS = {(math.inf, 4): "(1.0f / 0.0f)", (-math.inf, 4): "(-(1.0f / 0.0f))",
            (math.nan, 4): "__int_as_float(0x7fc00000)", (-0.0, 4): "(-0.0f)",
            (math.inf, 8): "(1.0 / 0.0)", (-math.inf, 8): "(-(1.0 / 0.0))",
            (math.nan, 8): "__longlong_as_double(0x7ff8000000000000LL)", (-0.0, 8): "(-0.0)"}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("v", SPECIALS, ids=repr)
def test_special_values_in_cuda_text(v, dtype):
    x = np.ones(8, dtype)
    want = _C_FORMS[(v, np.dtype(dtype).itemsize)]
    for fn in (lambda a: np.sin(a) * v, lambda a: np.full_like(a, v) * np.sin(a),
               lambda a: np.maximum(np.sin(a), v)):
        src = _kernels(fn, x)
        assert want in src, src
        assert not re.search(r"\b(inf|nan|INF|NAN)\b", src)
    # and through an HVP program
    src = _kernels(dg.hvp(lambda a: np.sum(np.minimum(a, v) ** 2 * np.full_like(a, v))), x, x)
    assert not re.search(r"\b(inf|nan)\b", src)


def test_numpy_scalars_in_cuda_text():
    x = np.ones(8, np.float32)
    src = _kernels(lambda a: (np.full_like(a, np.float32(0.1)), np.sin(a)), x)
    assert "= 0.1f;" in src
    src = _kernels(lambda a: (np.full_like(a, np.int64(-3)), np.sin(a)), np.ones(8))
    assert "= (-3.0);" in src


def test_hostile_cuda_parameters_are_refused(hostile_op):
    op, _ = hostile_op
    g = dg.trace(lambda a: op.bind(np.sin(a), k=2.0) + 1.0, np.ones(8))
    assert "2.0" in "".join(region_kernels(r).source for r in plan_graph(g).regions)
    eqn = next(e for e in g.eqns if e.prim is op)
    for bad in (Hostile(), HostileFloat(2.0), "2.0); asm(\"trap\"); (", "system", (2.0,)):
        eqn.params["k"] = bad
        with pytest.raises(dg.CodegenSafetyError, match="values_data_op: parameter 'k'"):
            [region_kernels(r) for r in plan_graph(g).regions]
    assert not _FLAG["executed"]


@pytest.mark.parametrize("value, dtype, text", [
    (-3, np.int64, "(-3LL)"), (7, np.uint32, "7U"), (1e300, np.float32, "(1.0f / 0.0f)"),
    (-1e300, np.float32, "(-(1.0f / 0.0f))"),
    (np.float32(0.1), np.float64, "0.10000000149011612"),
    (2 ** 63 - 1, np.int64, "9223372036854775807LL"),
    (-2 ** 63, np.int64, "(-9223372036854775807LL - 1)"),
    (np.uint64(2 ** 64 - 1), np.uint64, "18446744073709551615ULL"),
    (np.bool_(False), np.bool_, "false"),
])
def test_c_literal_forms(value, dtype, text):
    assert encode.c_literal(value, dtype) == text


@pytest.mark.parametrize("value, dtype", [(300, np.int8), (-1, np.uint8), (2.5, np.int32),
                                          (math.nan, np.int64), ("1", np.float32),
                                          (1j, np.float64), (HostileFloat(1.0), np.float32),
                                          (1.0, np.float16)])
def test_c_literal_refuses(value, dtype):
    with pytest.raises(dg.CodegenSafetyError):
        encode.c_literal(value, dtype)
    assert not _FLAG["executed"]


# --------------------------------------------------------------------------- encoder fuzz
_SCOPE = {"xp": np, "__builtins__": {"float": float, "complex": complex, "slice": slice}}


def _eval(src):
    return eval(src, dict(_SCOPE))  # noqa: S307 -- the encoder's output, in a bare scope


def _same(a, b) -> bool:
    """Equal with exact types and bit-exact numbers (NaN: sign kept, payload not)."""
    if type(a) is not type(b):
        return False
    if type(a) in (tuple, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is float:
        return _same_bits(np.float64(a), np.float64(b))
    if type(a) is complex:
        return _same(a.real, b.real) and _same(a.imag, b.imag)
    if isinstance(a, np.generic):
        if np.dtype(type(a)).kind == "c":
            return (_same(complex(a.real), complex(b.real))
                    and _same(complex(a.imag), complex(b.imag)))
        return _same_bits(a, b)
    return a == b


_floats = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True)
_scalars = st.one_of(
    st.none(), st.just(Ellipsis), st.booleans(), st.integers(-(10 ** 30), 10 ** 30), _floats,
    st.builds(complex, _floats, _floats), st.text(max_size=20),
    st.builds(np.float32, st.floats(width=32)), st.builds(np.float16, st.floats(width=16)),
    _floats.map(np.float64), st.integers(-(2 ** 63), 2 ** 63 - 1).map(np.int64),
    st.integers(0, 255).map(np.uint8), st.booleans().map(np.bool_),
    st.builds(np.complex64, st.floats(width=32)),
    st.sampled_from([np.dtype("float32"), np.dtype("int64"), np.dtype(bool), np.float64]),
    st.builds(slice, st.none() | st.integers(-9, 9), st.none() | st.integers(-9, 9),
              st.none() | st.integers(1, 3)),
)
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                       | st.lists(inner, max_size=4).map(tuple), max_leaves=12)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_values)
def test_python_encoding_round_trips(v):
    encode.check_value(v)
    assert _same(_eval(encode.py_literal(v)), v)


@settings(max_examples=300, deadline=None)
@given(_floats)
def test_encoded_floats_are_one_operand(f):
    """Negative numbers come in parentheses: -x ** 2 and x - -y parse as meant."""
    src = encode.py_literal(f)
    with np.errstate(all="ignore"):
        assert _same(_eval(f"-{src}"), -f)
        assert _same(_eval(f"0.5 - {src}"), 0.5 - f)
        if abs(f) < 1e150:
            assert _same(_eval(f"{src} ** 2"), f ** 2)


def _parse_c(text: str, single: bool):
    """Read back a C literal the encoder wrote (the forms are few and known)."""
    neg = False
    t = text
    while t.startswith("(") and t.endswith(")") and (t.count("(") == 1 or t.startswith("(-")):
        t = t[1:-1]
        if t.startswith("-"):
            neg, t = not neg, t[1:]
    if t.startswith(("__int_as_float(", "__longlong_as_double(")):
        assert single == t.startswith("__int_as_float("), text
        bits = int(t[t.index("(") + 1:-1].rstrip("L"), 16) % (1 << (32 if single else 64))
        return np.array(bits, dtype=np.uint32 if single else np.uint64).view(
            np.float32 if single else np.float64)[()]
    if t in ("(1.0f / 0.0f)", "(1.0 / 0.0)", "1.0f / 0.0f", "1.0 / 0.0"):
        v = math.inf
    else:
        assert single == t.endswith("f"), text
        v = float(t.rstrip("f"))
    v = -v if neg else v
    return np.float32(v) if single else np.float64(v)


@settings(max_examples=400, deadline=None)
@given(_floats)
def test_c_encoding_round_trips(f):
    with np.errstate(over="ignore"):
        want32 = np.float32(f)
    assert _same_bits(_parse_c(encode.c_literal(f, np.float32), True), want32)
    assert _same_bits(_parse_c(encode.c_literal(f, np.float64), False), np.float64(f))


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler")
def test_c_literals_compile_with_their_types_and_values(tmp_path):
    """The literals as a C++ compiler reads them: float vs double type, and the bits."""
    values = [0.0, -0.0, 1.5, -1.5, 0.1, 1e-45, 3.4028234663852886e38, 1e-310, 1e300,
              -1e300, math.inf, -math.inf, math.nan, 2.0 ** -149, 123456789.0]
    lines = ["#include <cstdio>", "#include <cstring>", "#include <cstdint>",
             "#include <type_traits>",
             # CUDA's bit-cast intrinsics, as NVRTC defines them
             "float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }",
             "double __longlong_as_double(long long i) "
             "{ double d; std::memcpy(&d, &i, 8); return d; }",
             "int main() {"]
    want = []
    for i, v in enumerate(values):
        for dt, ct, it in ((np.float32, "float", "uint32_t"), (np.float64, "double", "uint64_t")):
            lit = encode.c_literal(v, dt)
            lines += [f"  {{ auto v = {lit};",
                      f"    static_assert(std::is_same<decltype(v), {ct}>::value, \"{i}\");",
                      f"    {it} b; std::memcpy(&b, &v, sizeof b);",
                      "    std::printf(\"%d %llu\\n\", (int)(v != v), (unsigned long long)b); }"]
            with np.errstate(over="ignore"):
                want.append(np.asarray(v, dtype=dt))
    lines.append("  return 0; }")
    (tmp_path / "t.cpp").write_text("\n".join(lines))
    subprocess.run(["g++", "-std=c++17", "-w", "-o", str(tmp_path / "t"), str(tmp_path / "t.cpp")],
                   check=True)
    out = subprocess.run([str(tmp_path / "t")], check=True, capture_output=True,
                         text=True).stdout.split("\n")
    for line, w in zip(out, want):
        is_nan, bits = (int(s) for s in line.split())
        assert is_nan == bool(np.isnan(w))
        assert bits == int(w.view(np.uint32 if w.dtype == np.float32 else np.uint64)), (w, line)


def test_encoder_refuses_unknown_types():
    for bad in (object(), Hostile(), HostileFloat(1.0), np.array(1.0), b"x", {1: 2},
                np.longdouble(1), np.datetime64("2020-01-01"), np.dtype("M8[s]"),
                np.dtype(">f8"), slice(0.5, 1)):
        with pytest.raises(dg.CodegenSafetyError):
            encode.py_literal(bad)
        with pytest.raises(dg.CodegenSafetyError):
            encode.check_value(bad)
    nested = []
    nested.append(nested)
    with pytest.raises(dg.CodegenSafetyError):
        encode.check_value(nested)
    assert not _FLAG["executed"]


def test_struct_helper_sanity():
    # _same_bits distinguishes -0.0 from 0.0 and compares NaN by sign
    assert not _same_bits(np.float64(0.0), np.float64(-0.0))
    payload = struct.unpack("<d", b"\x01\0\0\0\0\0\xf8\x7f")[0]
    assert _same_bits(np.float64(math.nan), np.float64(payload))
