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
from dualgpu import tree as pytree
from dualgpu.coverage import builtin_ops, coverage
from dualgpu.errors import DualgpuError

K = 4
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


# power's declared partial ``y * x**(y-1)`` is taken as 0 at ``y == 0`` (JAX's convention),
# so nested JVPs of power are off at that point from the third order on, where dg.jet's own
# rule for power is exact: the reference is the smooth ``exp(y log x)`` (x > 0 in the specs)
SMOOTH_REFERENCE = {"power": lambda x, y:
                    np.exp(y * np.log(x))}
SMOOTH_REFERENCE["float_power"] = SMOOTH_REFERENCE["power"]


def _split_float(args):
    idx = [i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f"]
    return idx


def _check_spec(name, data, order_nested=K):
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

    reference = SMOOTH_REFERENCE.get(name) if len(primals) == 2 else None

    def along(t):
        return (reference or fn)(*curve(t))

    # nested JVPs along the curve: every order
    nested = _nested_jvps(along, order_nested)(np.array(0.0))
    for k in range(1, order_nested + 1):
        ref = _leaves(nested[k])
        for o, r in enumerate(ref):
            g = got[o][k - 1]
            scale = max(1.0, float(np.max(np.abs(r), initial=0.0)))
            tol = 1e-7 if r.dtype != np.float32 else 1e-5   # a cast to float32 inside
            np.testing.assert_allclose(g, r, rtol=tol, atol=tol * scale,
                                       err_msg=f"{name}: order {k} against nested JVPs")
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
    prim = dg.REGISTRY.get(SPECS[name].prim or "")
    fallback = prim is not None and coverage(prim)["taylor"][0] == "fallback"
    # an op by the fallback is its nested JVPs: checked against them to order 2 (and the
    # differences), which keeps the file fast; every other op to order 4
    _check_spec(name, data, order_nested=2 if fallback else K)


def test_every_differentiable_op_has_a_taylor_rule():
    for name, prim in builtin_ops().items():
        how, _ = coverage(prim)["taylor"]
        assert how in ("own", "flag", "fallback", "n/a"), name
