"""Taylor mode (dualgpu/transforms/taylor.py): ``dg.jet`` over the whole registry against
nested ``dg.jvp`` along the input curve (orders 1-4) and central differences of the curve
(orders 1-2), closed forms, JAX's conventions worked out by hand, the errors; and the
collapsed operators ``dg.differential_operator`` against nested Hessians and Laplacians."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from test_registry import _SETTINGS, SPECS

import dualgpu as dg
from dualgpu.base import tree as pytree
from dualgpu.core.primitives import REGISTRY
from dualgpu.errors import DualgpuError
from dualgpu.tools.op_matrix import builtin_ops, coverage

K = 4
K_VJP = 3      # the orders reached through the VJP rules in CI (K under --fuzz-long)
DIFF = sorted(n for n, s in SPECS.items() if s.kind == "diff")


# ------------------------------------------------------------------------------ helpers
def _leaves(tree) -> list:
    return [np.asarray(x) for x in pytree.flatten(tree)[0]]


def _curve(args, series):
    """``t -> x(t) = x_0 + x_1 t + x_2 t**2 / 2 + ...`` for each argument (JAX's terms)."""
    def at(t):
        out = []
        for a, terms in zip(args, series):
            x = a
            for k, c in enumerate(terms, start=1):
                x = x + c * (t ** k / math.factorial(k))
            out.append(x)
        return out

    return at


def _nested_jvps(g, order: int):
    """``t -> [g(t), g'(t), ..., g^(order)(t)]`` by nesting ``dg.jvp`` (one level per order,
    each differentiating the list of the level below)."""
    level = lambda t: [g(t)]  # noqa: E731
    for _ in range(order):
        def level(t, below=level):
            primal, tangent = dg.jvp(below, (t,), (np.ones_like(t),))
            return list(primal) + [tangent[-1]]
    return level




def _split_float(args):
    idx = [i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f"]
    return idx


def _check_spec(name, data, order_nested=K, vjp_order=K_VJP):
    s = SPECS[name]
    f, args = s.build(data, np.float64)
    idx = _split_float(args)
    if not idx:
        return
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    fixed = list(args)

    def fn(*xs):
        full = list(fixed)
        for i, x in zip(idx, xs):
            full[i] = x
        return f(*full)

    primals = tuple(np.asarray(args[i], dtype=np.float64) for i in idx)
    series = tuple(tuple(rng.standard_normal(np.shape(p)) * 0.5 for _ in range(K))
                   for p in primals)
    out, terms = dg.jet(fn, primals, series)
    want_out = _leaves(fn(*primals))
    got_out = _leaves(out)
    for g, w in zip(got_out, want_out):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=f"{name}: value")
    got = [_leaves(t) for t in pytree.flatten(terms, is_leaf=lambda x: isinstance(x, list))[0]]
    curve = _curve(primals, series)

    def along(t):
        return fn(*curve(t))

    # nested JVPs along the curve: every order
    nested_at = _nested_jvps(along, order_nested)
    nested = nested_at(np.array(0.0))
    for k in range(1, order_nested + 1):
        ref = _leaves(nested[k])
        for o, r in enumerate(ref):
            g = got[o][k - 1]
            scale = max(1.0, float(np.max(np.abs(r), initial=0.0)))
            tol = 1e-7 if r.dtype != np.float32 else 1e-5   # a cast to float32 inside
            np.testing.assert_allclose(g, r, rtol=tol, atol=tol * scale,
                                       err_msg=f"{name}: order {k} against nested JVPs")
    # each order k of the nested JVPs against central differences of order k - 1: a rule
    # that is exact to some order only (a constant where a derivative should be) shows here,
    # where the jet, falling back on nested JVPs, would agree with it
    _check_nested_against_differences(name, nested_at, nested, s.f64_tol)
    if s.prim is None or REGISTRY[s.prim].kind != "elementwise":  # their VJP: one rule
        _check_vjp_rules_to_order(name, fn, primals, series, nested, rng, vjp_order)
    # the collapsed operator over two directions of the first argument (coefficients with
    # a direction axis through every op's rule, the top one summed) against the jet
    V = rng.standard_normal((2,) + np.shape(primals[0])) * 0.5
    w = np.array([0.7, -1.3])
    op = _leaves(dg.differential_operator(fn, V, K, w)(*primals))
    zeros = tuple(tuple(np.zeros_like(p) for _ in range(K)) for p in primals[1:])
    want = None
    for wr, v in zip(w, V):
        terms = dg.jet(fn, primals, ((v,) + (np.zeros_like(v),) * (K - 1),) + zeros)[1]
        top = [wr * t[K - 1] for t in pytree.flatten(
            terms, is_leaf=lambda x: isinstance(x, list))[0]]
        want = top if want is None else [a + b for a, b in zip(want, top)]
    for g, r in zip(op, want):
        scale = max(1.0, float(np.max(np.abs(r), initial=0.0)))
        tol = 1e-7 if r.dtype != np.float32 else 1e-5
        np.testing.assert_allclose(g, r, rtol=tol, atol=tol * scale,
                                   err_msg=f"{name}: differential_operator")
    # central differences of the curve: orders 1 and 2 (1 only for the casts to float32)
    steps = ((1, s.f64_tol["eps"]),) if "eps" in s.f64_tol else ((1, 1e-5), (2, 1e-3))
    rtol = s.f64_tol.get("rtol", 2e-4)
    for k, h in steps:
        hi, mid, lo = (_leaves(along(np.array(t))) for t in (h, 0.0, -h))
        for o in range(len(hi)):
            fd = ((hi[o] - lo[o]) / (2 * h) if k == 1
                  else (hi[o] - 2 * mid[o] + lo[o]) / h ** 2)
            scale = max(1.0, float(np.max(np.abs(fd), initial=0.0)))
            np.testing.assert_allclose(got[o][k - 1], fd, rtol=rtol, atol=rtol * scale,
                                       err_msg=f"{name}: order {k} against differences")


def _check_nested_against_differences(name, nested_at, nested, f64_tol):
    """Order k of ``nested`` (the nested JVPs at 0) against central differences of order
    k - 1 (steps h and h / 2, Richardson-extrapolated: error O(h**4)), for every order the
    nesting reaches."""
    h = f64_tol.get("eps", 2e-3)
    rtol = f64_tol.get("rtol", 1e-6)
    at = {t: nested_at(np.array(t)) for t in (h, -h, h / 2, -h / 2)}

    def central(step, k):
        return [(up - down) / (2 * step) for up, down in
                zip(_leaves(at[step][k - 1]), _leaves(at[-step][k - 1]))]

    for k in range(1, len(nested)):
        for r, wide, narrow in zip(_leaves(nested[k]), central(h, k), central(h / 2, k)):
            fd = (4 * narrow - wide) / 3
            scale = max(1.0, float(np.max(np.abs(fd), initial=0.0)))
            np.testing.assert_allclose(r, fd, rtol=rtol, atol=rtol * scale,
                                       err_msg=f"{name}: nested JVP of order {k} against "
                                               f"differences of order {k - 1}")


def _check_vjp_rules_to_order(name, fn, primals, series, nested, rng, order):
    """The VJP rules differentiated again: with F = <w, f>, the nested JVPs (orders
    0..order-1) of ``t -> <grad F(x(t)), x'(t)>`` are the orders 1..order of F along the
    curve."""
    weights = [rng.standard_normal(np.shape(o)) for o in _leaves(nested[0])]

    def scalar(*xs):
        outs = pytree.flatten(fn(*xs))[0]
        return sum((w * o).sum() for w, o in zip(weights, outs)
                   if np.dtype(o.dtype).kind in "fc")

    grads = dg.grad(scalar, argnums=tuple(range(len(primals))))
    curve = _curve(primals, series)

    def slope(t):   # <grad F(x(t)), x'(t)>, x'(t) = sum_k x_k t^(k-1) / (k-1)!
        velocity = [sum(c * (t ** (k - 1) / math.factorial(k - 1))
                        for k, c in enumerate(terms, start=1)) for terms in series]
        return sum((g * v).sum() for g, v in zip(pytree.flatten(grads(*curve(t)))[0],
                                                    velocity))

    got = _nested_jvps(slope, order - 1)(np.array(0.0))
    for k in range(1, order + 1):
        want = sum((w * o).sum() for w, o in zip(weights, _leaves(nested[k]))
                   if o.dtype.kind in "fc")
        scale = max(1.0, abs(float(want)))
        np.testing.assert_allclose(got[k - 1], want, rtol=1e-7, atol=1e-7 * scale,
                                   err_msg=f"{name}: order {k} through the VJP rules")


# ------------------------------------------------------------------------------ the registry
_SEEN: set = set()


@pytest.mark.parametrize("name", DIFF)
@settings(max_examples=2, phases=(Phase.explicit, Phase.generate), **_SETTINGS)
@given(data=st.data())
def test_jet_of_every_op(name, data):
    """One random example per op, float64: hypothesis's first example is the simplest one
    (zeros, the low end of the domain), which would leave most terms zero, so the check
    runs on the second (random) one; the series are random."""
    if name not in _SEEN:
        _SEEN.add(name)
        SPECS[name].build(data, np.float64)   # draws: hypothesis then tries another example
        return
    _check_spec(name, data)


LONG_EXAMPLES = 25


@pytest.mark.parametrize("name", DIFF)
def test_jet_of_every_op_long(name, fuzz_long):
    """The long campaign of the test above (``make fuzz``, ``--fuzz-long``): more random
    examples per op, every order through the VJP rules too."""
    if not fuzz_long:
        pytest.skip("the long campaign runs under --fuzz-long (make fuzz)")

    @settings(max_examples=LONG_EXAMPLES, **_SETTINGS)
    @given(data=st.data())
    def run(data):
        _check_spec(name, data, vjp_order=K)

    run()


def test_only_structured_ops_fall_back():
    """Every elementwise, linear and product op has a rule of its own or by flag; the
    nested-JVP fallback is left to sorts, decompositions and products along an axis."""
    fallback = set()
    for name, prim in builtin_ops().items():
        how, _ = coverage(prim)["taylor"]
        if how == "fallback":
            assert prim.kind in ("library", "reduction", "scan"), name
            fallback.add(name)
    assert fallback <= {"inv", "solve", "det", "slogdet", "cholesky", "eigh", "eig", "svd",
                        "qr", "pinv", "reduce_prod", "cumprod", "sort",
                        "solve_triangular", "lu_factor", "spsolve", "solve_sylvester",
                        "sqrtm"}, fallback


# ------------------------------------------------------------------------------ closed forms
def _unit_curve(x0, order, dtype=np.float64):
    """``x(t) = x0 + t``: series ``(1, 0, ..., 0)``."""
    x0 = np.asarray(x0, dtype=dtype)
    return (x0,), ((np.ones_like(x0),) + tuple(np.zeros_like(x0) for _ in range(order - 1)),)


@pytest.mark.parametrize("order", [1, 3, 6])
def test_closed_forms(order):
    x = np.array([-0.7, 0.1, 0.4])
    primals, series = _unit_curve(x, order)
    ks = np.arange(1, order + 1)
    fact = np.array([math.factorial(k) for k in ks])
    cases = {
        "exp": (np.exp, [np.exp(x)] * order),
        "sin": (np.sin, [np.sin(x + k * np.pi / 2) for k in ks]),
        "cos": (np.cos, [np.cos(x + k * np.pi / 2) for k in ks]),
        "1/(1-x)": (lambda x: 1 / (1 - x), [f / (1 - x) ** (k + 1) for k, f in zip(ks, fact)]),
        "log(1+x)": (np.log1p, [(-1.0) ** (k - 1) * math.factorial(k - 1) / (1 + x) ** k
                                for k in ks]),
        "x**3 + 2x": (lambda x: x ** 3 + 2 * x, [3 * x ** 2 + 2, 6 * x, 6 + 0 * x]
                      + [0 * x] * 3),
    }
    for name, (f, want) in cases.items():
        y, terms = dg.jet(f, primals, series)
        np.testing.assert_allclose(y, f(x), rtol=1e-12, err_msg=name)
        for k in range(order):
            np.testing.assert_allclose(terms[k], want[k], rtol=1e-10, atol=1e-10,
                                       err_msg=f"{name} order {k + 1}")


def _poly_terms(coefficients, order):
    """The derivatives 1..order at 0 of ``sum_k c_k t^k`` (c along the first axis)."""
    c = list(coefficients) + [np.zeros_like(coefficients[0])] * (order + 1)
    return [math.factorial(k) * c[k] for k in range(1, order + 1)]


def _line_det(a, v):
    """det(a + t v) = det(a) prod_i (1 + t l_i), l the eigenvalues of a^-1 v."""
    lam = np.linalg.eigvals(np.linalg.solve(a, v))
    return np.real(np.linalg.det(a) * np.poly(-lam))  # [1, e_1(l), e_2(l), ...] times det


def _line_prod(x, v):
    out = np.ones(1)
    for xi, vi in zip(x, v):
        out = np.polynomial.polynomial.polymul(out, [xi, vi])
    return out


def _line_powers(a, v, order):
    """(a^-1 v)^k a^-1, k = 0..order: (a + t v)^-1 = sum_k (-t)^k (a^-1 v)^k a^-1."""
    ainv = np.linalg.inv(a)
    return [np.linalg.matrix_power(-ainv @ v, k) @ ainv for k in range(order + 1)]


_RNG = np.random.default_rng(35)
_A3, _V3 = _RNG.normal(size=(3, 3)) + 3 * np.eye(3), _RNG.normal(size=(3, 3))
_A4, _V4 = _RNG.normal(size=(4, 4)) + 4 * np.eye(4), _RNG.normal(size=(4, 4))
_X4, _W4 = _RNG.uniform(0.5, 2, size=4), _RNG.normal(size=4)
_B3 = _RNG.normal(size=3)
# op -> (f, x, v, the derivatives of f(x + t v) at 0 of orders 1..K, in closed form)
LINES = {
    "det 3x3": (np.linalg.det, _A3, _V3, _poly_terms(_line_det(_A3, _V3), K)),
    "det 4x4": (np.linalg.det, _A4, _V4, _poly_terms(_line_det(_A4, _V4), K)),
    "inv": (np.linalg.inv, _A3, _V3, _poly_terms(_line_powers(_A3, _V3, K), K)),
    "solve": (lambda a: np.linalg.solve(a, _B3), _A3, _V3,
              _poly_terms([m @ _B3 for m in _line_powers(_A3, _V3, K)], K)),
    "slogdet": (lambda a: np.linalg.slogdet(a)[1], _A3, _V3,
                [(-1.0) ** (k - 1) * math.factorial(k - 1)
                 * np.trace(np.linalg.matrix_power(np.linalg.solve(_A3, _V3), k))
                 for k in range(1, K + 1)]),
    # (1.7 + 0.3 t) ** t through y == 0, where power's partial in x was held at 0: no
    # closed form, the jet and differences are the references
    "power at y = 0": (lambda z: z[0] ** z[1], np.array([1.7, 0.0]), np.array([0.3, 1.0]),
                       None),
    "reduce_prod": (np.prod, _X4, _W4, _poly_terms(_line_prod(_X4, _W4), K)),
    "cumprod": (np.cumprod, _X4, _W4, _poly_terms(np.stack(
        [np.pad(_line_prod(_X4[:i + 1], _W4[:i + 1]), (0, 4 - i)) for i in range(4)],
        axis=1), K)),
}


@pytest.mark.parametrize("name", sorted(LINES))
def test_structured_ops_along_a_line(name):
    """The ops whose derivatives are not elementwise, along ``t -> x + t v``, at sizes where
    every order to K is not 0: nested JVPs (also against differences of the order below)
    and the jet against closed forms (det's polynomial of degree n, the Neumann series of
    inv and solve, prod's polynomial)."""
    f, x, v, want = LINES[name]
    along = lambda t: f(x + t * v)  # noqa: E731
    nested_at = _nested_jvps(along, K)
    nested = nested_at(np.array(0.0))
    _check_nested_against_differences(name, nested_at, nested, {})
    _, terms = dg.jet(f, (x,), ((v,) + (np.zeros_like(v),) * (K - 1),))
    for k in range(1, K + 1):
        if want is None:
            np.testing.assert_allclose(nested[k], terms[k - 1], rtol=1e-9, atol=1e-9,
                                       err_msg=f"{name}: order {k}, nested JVPs and the jet")
            continue
        scale = max(1.0, float(np.max(np.abs(want[k - 1]))))
        for got, what in ((nested[k], "nested JVPs"), (terms[k - 1], "jet")):
            np.testing.assert_allclose(got, want[k - 1], rtol=1e-9, atol=1e-9 * scale,
                                       err_msg=f"{name}: order {k} by {what}")


def test_exp_along_a_quadratic_curve():
    """``x(t) = t + t**2`` (terms 1, 2): ``e^(t + t^2) = 1 + t + 3/2 t^2 + 7/6 t^3 + ...``,
    so the derivatives are 1, 3, 7, 25 (the sequence 1, 1, 3, 7, 25, 81 of k! c_k)."""
    _, terms = dg.jet(np.exp, (np.array(0.0),), ((np.array(1.0), np.array(2.0),
                                                   np.array(0.0), np.array(0.0)),))
    np.testing.assert_allclose([float(t) for t in terms], [1.0, 3.0, 7.0, 25.0])


def test_recurrences_keep_their_precision_in_the_tails():
    """tanh, logistic and expm1 along ``x0 + t`` far out: their ODEs' right-hand sides at
    ``t = 0`` (``1 - y**2``, ``y (1 - y)``, ``y + 1``) cancel there (off by ``eps / f'``:
    4e-6 at ``|x| = 12``, all 0 from ``|x| ~ 19`` on), the closed forms do not."""
    x = np.array([-40.0, -25.0, -12.0, 12.0, 25.0, 40.0])
    primals, series = _unit_curve(x, 4)
    s, t = 1 / np.cosh(x) ** 2, np.tanh(x)
    lo = 1 / (1 + np.exp(-x))
    ls = lo * (1 / (1 + np.exp(x)))                    # logistic'(x), no cancellation
    cases = {
        "tanh": (np.tanh, [s, -2 * t * s, s * (4 * t ** 2 - 2 * s), 8 * t * s * (2 * s - t ** 2)]),
        "logistic": (lambda x: 1 / (1 + np.exp(-x)),
                     [ls, ls * (1 - 2 * lo), ls * (1 - 6 * ls), ls * (1 - 2 * lo) * (1 - 12 * ls)]),
        "expm1": (np.expm1, [np.exp(x)] * 4),
    }
    for name, (f, want) in cases.items():
        _, terms = dg.jet(f, primals, series)
        for k in range(4):
            np.testing.assert_allclose(terms[k], want[k], rtol=1e-12, atol=0,
                                       err_msg=f"{name} order {k + 1}")


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning",
                            "ignore:invalid value:RuntimeWarning")
def test_power_with_a_differentiated_exponent_at_a_zero_base():
    """``x ** y`` with both differentiated at ``x = 0`` (log x = -inf there): the series of
    ``x(t) ** y_0``, as nested JVPs and the Hessian give with the exponent's terms 0 (NaN
    before); the exponent's terms do not enter (power's partial in y is 0 at x == 0)."""
    z = np.zeros(3)
    x, y = np.array([0.0, 0.0, 0.5]), np.array([2.0, 3.0, 1.5])
    _, terms = dg.jet(lambda x, y: x ** y, (x, y), ((np.ones(3), z, z), (z, z, z)))
    want = [y * x ** (y - 1), y * (y - 1) * np.where(x == 0, y == 2, x ** (y - 2)),
            y * (y - 1) * (y - 2) * np.where(x == 0, y == 3, x ** (y - 3))]
    np.testing.assert_allclose(terms, want, rtol=1e-13)
    # the exponent's terms do not enter at x == 0 (they do elsewhere: nested JVPs there)
    _, terms = dg.jet(lambda x, y: x ** y, (x, y), ((np.ones(3), z, z), (np.ones(3), z, z)))
    np.testing.assert_allclose([t[:2] for t in terms], [w[:2] for w in want], rtol=1e-13)
    along = lambda t: (x[2] + t) ** (y[2] + t)  # noqa: E731
    nested = _nested_jvps(along, 3)(np.array(0.0))
    np.testing.assert_allclose([t[2] for t in terms], nested[1:], rtol=1e-12)
    hess = dg.hessian(lambda v: v[0] ** v[1])(np.array([0.0, 2.0]))
    op = dg.differential_operator(lambda v: v[0] ** v[1], np.eye(2), 2)(np.array([0.0, 2.0]))
    assert float(op) == np.trace(hess) == 2.0


# ------------------------------------------------------------------------------ conventions
def test_jax_conventions_by_hand():
    # jax.experimental.jet's docstring: x(t) = t (h0, h1, h2 = 0, 1, 0) through sin
    f0, (f1, f2) = dg.jet(np.sin, (0.0,), ((1.0, 0.0),))
    assert (float(f0), float(f1), float(f2)) == (0.0, 1.0, 0.0)
    # two primals: (2 + t) * (3 + t^2 / 2) = 6 + 3t + t^2 + t^3 / 2
    y, terms = dg.jet(lambda a, b: a * b, (2.0, 3.0), ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)))
    assert float(y) == 6.0 and [float(t) for t in terms] == [3.0, 2.0, 3.0]
    # x ** 2 with x(t) = x0 + x1 t + x2 t^2 / 2 + x3 t^3 / 6
    x0, x1, x2, x3 = 1.5, -0.5, 2.0, 0.25
    _, (y1, y2, y3) = dg.jet(lambda x: x * x, (np.array(x0),),
                             ((np.array(x1), np.array(x2), np.array(x3)),))
    np.testing.assert_allclose([y1, y2, y3], [2 * x0 * x1, 2 * x1 ** 2 + 2 * x0 * x2,
                                              6 * x1 * x2 + 2 * x0 * x3])


def test_pytrees_dtypes_and_constants():
    x = {"a": np.array([0.5, 1.0], dtype=np.float32), "b": np.array(2.0, dtype=np.float32)}
    terms = [{"a": np.ones(2, np.float32), "b": np.array(1.0, np.float32)},
             {"a": np.zeros(2, np.float32), "b": np.array(0.0, np.float32)}]

    def f(p):
        return {"s": np.sum(p["a"] * p["b"]), "c": np.ones(3, np.float32),
                "i": np.argmax(p["a"])}

    out, series = dg.jet(f, (x,), (terms,))
    assert set(series) == {"s", "c", "i"} and len(series["s"]) == 2
    assert series["s"][0].dtype == np.float32
    np.testing.assert_allclose(series["s"][0], 2 + 2 + 1.5)   # a'.b + a.b'
    np.testing.assert_allclose(series["s"][1], 2 * 2.0)                  # 2 a'.b'
    assert not np.any(series["c"][0]) and not np.any(series["c"][1])    # a symbolic zero
    assert series["i"][0].dtype == dg.float0                              # as jvp


def test_integer_operands_broadcasting_and_complex():
    e = np.array([[1], [2]], dtype=np.int32)
    x = np.array([0.3, -0.2, 0.9])

    def f(x):
        return np.ldexp(np.sin(x), e) * x[None, :] + x ** e

    ser = (np.ones(3), np.zeros(3), np.zeros(3))
    _, terms = dg.jet(f, (x,), (ser,))
    assert terms[0].shape == (2, 3)
    nested = _nested_jvps(lambda t: f(x + t), 3)(np.array(0.0))
    for k in range(3):
        np.testing.assert_allclose(terms[k], nested[k + 1], rtol=1e-10, atol=1e-12)
    z = np.array([0.2 + 0.5j, -1.0 + 0.1j])
    _, terms = dg.jet(np.exp, (z,), ((np.ones(2, complex), np.zeros(2, complex)),))
    np.testing.assert_allclose(terms[1], np.exp(z))
    _, terms = dg.jet(lambda z: np.abs(np.sin(z)) ** 2, (z,),
                      ((np.ones(2, complex), np.zeros(2, complex)),))
    h = 1e-4
    g = lambda t: np.abs(np.sin(z + t)) ** 2  # noqa: E731
    np.testing.assert_allclose(terms[1], (g(h) - 2 * g(0) + g(-h)) / h ** 2, rtol=1e-5)


def test_errors_name_the_argument():
    x = np.ones(3)
    with pytest.raises(DualgpuError, match="different lengths"):
        dg.jet(lambda a, b: a * b, (x, x), ((x, x), (x,)))
    with pytest.raises(DualgpuError, match="series term 1 for argument 0 has shape"):
        dg.jet(np.sin, (x,), ((x, np.ones(2)),))
    with pytest.raises(DualgpuError, match="complex"):
        dg.jet(np.sin, (x,), ((x + 1j,),))
    with pytest.raises(DualgpuError, match="2 primals but 1 series"):
        dg.jet(lambda a, b: a, (x, x), ((x,),))
    with pytest.raises(DualgpuError, match="as tuples"):
        dg.jet(np.sin, x, ((x,),))
    with pytest.raises(dg.IntegerInputError, match="argument 1 has a leaf of dtype int"):
        dg.jet(lambda a, b: a * b, (x, np.arange(3)), ((x,), (x,)))
    with pytest.raises(DualgpuError, match="series are empty"):
        dg.jet(np.sin, (x,), ((),))


def test_a_jet_traces_once():
    calls = []

    def f(x):
        calls.append(1)
        return np.tanh(x) * x

    x = np.linspace(-1, 1, 4)
    for _ in range(3):
        dg.jet(f, (x,), ((x, x, x),))
    dg.jet(f, (x + 1,), ((x, 2 * x, x),))
    assert len(calls) == 1
    dg.jet(f, (x,), ((x, x),))         # another order: another program
    assert len(calls) == 2


# ------------------------------------------------------------------------------ operators
def _u(x, sort=True):
    """A smooth scalar field (per instance: the last axis) with every kind of rule:
    products, recurrences, Faà di Bruno, a matmul, where, pad, and by the fallback a sort
    (a max per instance with ``sort=False``, which batch_axes can prove separable)."""
    n = x.shape[-1]
    W = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.3], [0.2, 0.2, 0.1]])[:n, :n]
    h = np.tanh(x @ W.astype(x.dtype) + 0.1) * np.exp(-0.5 * x ** 2)
    h = np.where(x > 5.0, 0.0, h) + np.arctan(x) ** 2 + np.sqrt(1.5 + x * x)
    s = np.pad(h, [(0, 0)] * (h.ndim - 1) + [(1, 0)])
    c = np.linspace(0.5, 1.5, n + 1).astype(x.dtype)
    if sort:
        return np.sum(np.sort(s, axis=-1) * c, axis=-1) + np.prod(x, axis=-1) ** 2
    return np.sum(s * c, axis=-1) + np.max(h * h, axis=-1) + np.prod(x, axis=-1) ** 2


def _u_sep(x):
    return _u(x, sort=False)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_weighted_laplacian_is_trace_of_sigma_h_sigma(dtype):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, 3).astype(dtype)
    sigma = rng.standard_normal((3, 2))
    got = dg.differential_operator(_u, sigma.T, 2)(x)
    H = dg.hessian(_u)(x.astype(np.float64))
    want = np.trace(sigma.T @ H @ sigma)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=1e-10 if dtype == np.float64 else 2e-4)
    # with weights and chunks: sum_r w_r v_r^T H v_r
    w = np.array([0.5, -2.0])
    got = dg.differential_operator(_u, sigma.T, 2, w, chunk_size=1)(x)
    want = sum(wr * v @ H @ v for wr, v in zip(w, sigma.T))
    np.testing.assert_allclose(got, want, rtol=1e-10 if dtype == np.float64 else 2e-4)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_biharmonic_is_the_nested_laplacian(dtype):
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, 3).astype(dtype)
    dirs, w = dg.biharmonic_directions(3)
    got = dg.differential_operator(_u, dirs, 4, w)(x)
    want = dg.laplacian(dg.laplacian(_u))(x.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-9 if dtype == np.float64 else 2e-3)
    # per collocation point: batch_axes, instance-shaped directions, chunks
    pts = rng.uniform(-1, 1, (5, 3)).astype(dtype)
    op = dg.differential_operator(_u_sep, dirs, 4, w, batch_axes=0, chunk_size=4)
    got = op(pts)
    bilap = dg.laplacian(dg.laplacian(_u_sep))   # point by point (one program)
    want = np.array([bilap(p) for p in pts.astype(np.float64)])
    assert got.shape == (5,)
    np.testing.assert_allclose(got, want, rtol=1e-9 if dtype == np.float64 else 2e-3)


def test_weighted_laplacian_per_point():
    rng = np.random.default_rng(3)
    pts = rng.uniform(-1, 1, (4, 3))
    sigma = rng.standard_normal((3, 3))
    got = dg.differential_operator(_u_sep, sigma.T, 2, batch_axes=0)(pts)
    want = [np.trace(sigma.T @ dg.hessian(_u_sep)(p) @ sigma) for p in pts]
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_operators_of_orders_one_and_three_against_jet():
    rng = np.random.default_rng(2)
    x, V = rng.uniform(-1, 1, 3), rng.standard_normal((4, 3))
    w = rng.standard_normal(4)
    for K in (1, 3):
        got = dg.differential_operator(_u, V, K, w)(x)
        want = 0.0
        for wr, v in zip(w, V):
            terms = dg.jet(_u, (x,), ((v,) + (np.zeros(3),) * (K - 1),))[1]
            want += wr * terms[K - 1]
        np.testing.assert_allclose(got, want, rtol=1e-10)


def test_an_operator_composes_with_grad_and_checks_its_arguments():
    sigma = np.array([[1.0, 0.2], [0.0, 0.7]])
    op = dg.differential_operator(lambda x: np.sum(np.sin(x) * x ** 2), sigma.T, 2)
    x = np.array([0.3, -0.4])
    g = dg.grad(lambda x: op(x) ** 2)(x)
    h = 1e-6
    fd = [(op(x + h * e) ** 2 - op(x - h * e) ** 2) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    with pytest.raises(DualgpuError, match="do not fit argument 0"):
        dg.differential_operator(np.sum, np.ones((2, 5)), 2)(x)
    with pytest.raises(DualgpuError, match="weights must have shape"):
        dg.differential_operator(np.sum, np.ones((2, 2)), 2, np.ones(3))
    with pytest.raises(DualgpuError, match="order must be a positive int"):
        dg.differential_operator(np.sum, np.ones((2, 2)), 0)
    with pytest.raises(DualgpuError, match="couple|separab|instance"):
        dg.differential_operator(lambda p: np.sum(p, axis=0), np.eye(2), 2,
                                 batch_axes=0)(np.ones((3, 2)))


@pytest.mark.parametrize("D, dtype", [(0, np.float64), (-1, np.float64), (2.0, np.float64),
                                      (True, np.float64), (3, np.int64), (3, "f8x")])
def test_biharmonic_directions_refuses_bad_arguments(D, dtype):
    """A raw ValueError / TypeError before; an integer dtype rounded the weights to 0."""
    with pytest.raises(DualgpuError, match="biharmonic_directions"):
        dg.biharmonic_directions(D, dtype)


def test_a_pinn_loss_through_the_operator_and_the_jet_differentiates_in_the_weights():
    """The operator and the jet inside a traced loss, reading the weights of the enclosing
    trace (captured values): the gradient against central differences."""
    rng = np.random.default_rng(4)
    X, W = rng.uniform(-1, 1, (5, 2)), rng.standard_normal((2, 3))
    dirs, w = dg.biharmonic_directions(2)

    def loss(W):
        u = lambda p: np.sum(np.tanh(p @ W) ** 2, axis=-1)  # noqa: E731
        bi = dg.differential_operator(u, dirs, 4, w, batch_axes=0)(X)
        third = dg.jet(lambda p: np.sum(np.sin(p @ W)), (X,), ((X, X, X),))[1][2]
        return np.mean(bi ** 2) + third

    g = dg.grad(loss)(W)
    h = 1e-6
    fd = [(loss(W + h * E) - loss(W - h * E)) / (2 * h)
          for E in np.eye(W.size).reshape(-1, *W.shape)]
    np.testing.assert_allclose(g.ravel(), fd, rtol=1e-6, atol=1e-8)


def test_an_operator_over_two_arguments():
    """``u_xt`` by polarization: directions ``(1, 1)`` and ``(1, -1)`` over ``(x, t)``,
    weights ``1/4`` and ``-1/4``; per point, with instance-shaped directions."""
    u = lambda x, t: np.sin(x[..., 0] * x[..., 1]) * np.exp(t)  # noqa: E731
    x, t = np.array([[0.3, -0.5], [1.1, 0.2]]), np.array([0.4, -0.1])
    dx = np.array([[1.0, 0.0], [1.0, 0.0]])      # d/dx_0 in both directions
    dt = np.array([1.0, -1.0])
    op = dg.differential_operator(u, (dx, dt), 2, np.array([0.25, -0.25]), argnums=(0, 1),
                                  batch_axes=0)
    got = op(x, t)
    want = [dg.jacfwd(dg.grad(lambda x, t: u(x, t)), argnums=1)(xi, ti)[0]
            for xi, ti in zip(x, t)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    with pytest.raises(DualgpuError, match="a tuple of 2 arrays"):
        dg.differential_operator(u, dx, 2, argnums=(0, 1))
    with pytest.raises(DualgpuError, match="same count R"):
        dg.differential_operator(u, (dx, np.ones(3)), 2, argnums=(0, 1))


@pytest.mark.parametrize("primal, term", [(np.float32, np.float64), (np.float64, np.float32)])
def test_series_of_another_dtype_than_the_primal_is_refused_as_documented(primal, term):
    x = np.ones(3, primal)
    with pytest.raises(dg.ShapeMismatchError, match=f"term 1 for argument 0 has dtype "
                                                    f"{np.dtype(term).name}"):
        dg.jet(np.sin, (x,), ((np.ones(3, primal), np.ones(3, term)),))
    _, (t1, t2) = dg.jet(np.sin, (x,), ((np.ones(3, primal), np.zeros(3, primal)),))
    assert t1.dtype == t2.dtype == primal
