"""Composed transforms, table-driven: ``outer(inner(f))`` for every pair of transforms,
third order, transforms inside traced functions, and the pytree / has_aux / keyword
conventions (JAX semantics), each checked against float64 references.

References. ``f`` has closed-form derivatives (``f_ref``, ``grad_ref``, ``hess_ref``,
``third_ref`` below, plain NumPy). The *inner* transform's reference is exact (closed form);
the *outer* transform's reference is central finite differences of that exact inner
reference, so each check has one level of finite differences only:

* first derivatives (grad, jvp, vjp): step 1e-6; error ~ eps² f''' + 1e-16/eps ~ 1e-10;
  compared with ``rtol=1e-6, atol=1e-7`` (relative to the largest element);
* second derivatives (hvp, grad_and_hvp): the 4-point mixed difference
  ``[g(x+εv+δe_i) - g(x+εv-δe_i) - g(x-εv+δe_i) + g(x-εv-δe_i)] / 4εδ`` with ε = δ = 1e-4;
  error ~ ε² g'''' + 1e-16/ε² ~ 1e-8; compared with ``rtol=1e-5, atol=1e-6``;
* ``jit`` of anything: the inner reference itself, ``rtol=1e-10``.
"""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

C = 0.1
X0 = np.array([0.3, -0.7, 1.1])
T0 = np.array([0.5, -1.0, 0.25])      # jvp tangent of the inner transforms
U0 = np.array([-0.4, 0.8, 0.6])       # hvp direction of the inner transforms
CT0 = np.asarray(1.7)                 # vjp cotangent of the inner transforms (f is scalar)
V_OUT = np.array([0.9, 0.2, -0.5])    # direction of the outer transform


def f(x):
    return np.sum(np.sin(x) * x ** 2) + C * np.sum(x) ** 3


def f_ref(x):
    return np.sum(np.sin(x) * x ** 2) + C * np.sum(x) ** 3


def grad_ref(x):
    return np.cos(x) * x ** 2 + 2 * x * np.sin(x) + 3 * C * np.sum(x) ** 2


def hess_ref(x):
    d = -np.sin(x) * x ** 2 + 4 * x * np.cos(x) + 2 * np.sin(x)
    return np.diag(d) + 6 * C * np.sum(x)


def hvp_ref(x, u):
    d = -np.sin(x) * x ** 2 + 4 * x * np.cos(x) + 2 * np.sin(x)
    return d * u + 6 * C * np.sum(x) * np.sum(u)


def third_diag(x):
    """d³/dx³ of sin(x) x² (elementwise)."""
    return -x ** 2 * np.cos(x) - 6 * x * np.sin(x) + 6 * np.cos(x)


# ------------------------------------------------------------------ tree helpers


def leaves(x):
    if isinstance(x, (tuple, list)):
        return [leaf for item in x for leaf in leaves(item)]
    if isinstance(x, dict):
        return [leaf for k in sorted(x) for leaf in leaves(x[k])]
    return [x]


def tree_map(fn, *xs):
    x = xs[0]
    if isinstance(x, (tuple, list)):
        return type(x)(tree_map(fn, *items) for items in zip(*xs))
    if isinstance(x, dict):
        return {k: tree_map(fn, *(t[k] for t in xs)) for k in x}
    return fn(*xs)


def struct(x):
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, tuple(struct(i) for i in x))
    if isinstance(x, dict):
        return ("dict", tuple((k, struct(x[k])) for k in sorted(x)))
    return ("leaf", tuple(np.shape(x)))


def weights(shape, salt=0.0):
    n = int(np.prod(shape, dtype=np.int64))
    return np.cos(np.arange(n, dtype=np.float64) * 0.37 + salt).reshape(shape)


def wsum(out):
    """``<out, w>`` summed over the leaves: a scalar from any pytree (works traced)."""
    total = 0.0
    for j, leaf in enumerate(leaves(out)):
        total = total + np.sum(leaf * weights(tuple(np.shape(leaf)), j))
    return total


def assert_tree_close(got, want, rtol, atol, what):
    assert struct(got) == struct(want), (
        f"{what}: structure {struct(got)} != expected {struct(want)}")
    for g, w in zip(leaves(got), leaves(want)):
        g = np.asarray(g, dtype=np.float64)
        w = np.asarray(w, dtype=np.float64)
        scale = float(np.max(np.abs(w), initial=0.0))
        err = float(np.max(np.abs(g - w), initial=0.0))
        assert err <= atol + rtol * scale, (
            f"{what}: max |got - want| = {err:.3g} (rtol={rtol}, atol={atol})\n"
            f"  got  {g.ravel()[:6]}\n  want {w.ravel()[:6]}")


# ------------------------------------------------------------------ finite differences
EPS1, EPS2 = 1e-6, 1e-4
RTOL1, ATOL1 = 1e-6, 1e-7
RTOL2, ATOL2 = 1e-5, 1e-6


def fd_dir(g, x, t, eps=EPS1):
    """Directional derivative of any pytree-valued g along t."""
    return tree_map(lambda p, m: (np.asarray(p) - np.asarray(m)) / (2 * eps),
                    g(x + eps * t), g(x - eps * t))


def fd_grad(s, x, eps=EPS1):
    """Gradient of a scalar function."""
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = 1.0
        out[i] = (s(x + eps * e) - s(x - eps * e)) / (2 * eps)
    return out


def fd_hvp(s, x, v, eps=EPS2):
    """H·v of a scalar function: 4-point mixed differences."""
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = 1.0
        out[i] = (s(x + eps * v + eps * e) - s(x + eps * v - eps * e)
                  - s(x - eps * v + eps * e) + s(x - eps * v - eps * e)) / (4 * eps * eps)
    return out


def fd_vjp(g, x, ct, eps=EPS1):
    return (fd_grad(lambda y: sum(float(np.sum(np.asarray(a) * np.asarray(b)))
                                  for a, b in zip(leaves(g(y)), leaves(ct))), x, eps),)


# ------------------------------------------------------------------ inner transforms
# name -> (function of x built from dualgpu, its exact NumPy reference, output is scalar)
def _inner(name):
    if name == "jit":
        return dg.jit(f), f_ref, True
    if name == "grad":
        return dg.grad(f), grad_ref, False
    if name == "value_and_grad":
        return dg.value_and_grad(f), lambda x: (f_ref(x), grad_ref(x)), False
    if name == "jvp":
        return (lambda x: dg.jvp(f, (x,), (T0,)),
                lambda x: (f_ref(x), np.sum(grad_ref(x) * T0)), False)
    if name == "vjp":
        return (lambda x: dg.vjp(f, x)[1](CT0),
                lambda x: (CT0 * grad_ref(x),), False)
    if name == "hvp":
        return lambda x: dg.hvp(f)(x, U0), lambda x: hvp_ref(x, U0), False
    if name == "grad_and_hvp":
        return (lambda x: dg.grad_and_hvp(f)(x, U0),
                lambda x: (grad_ref(x), hvp_ref(x, U0)), False)
    raise ValueError(name)


TRANSFORMS = ["jit", "grad", "value_and_grad", "jvp", "vjp", "hvp", "grad_and_hvp"]


def _apply_outer(outer, F, F_ref, scalar):
    """(got, want, rtol, atol) for outer applied to F at X0."""
    x = X0.copy()
    # scalar-only outer transforms take F itself when it is scalar, else <F, w>
    S = F if scalar else (lambda y: wsum(F(y)))
    S_ref = F_ref if scalar else (lambda y: float(wsum(F_ref(y))))
    if outer == "jit":
        return dg.jit(F)(x), F_ref(x), 1e-10, 1e-12
    if outer == "grad":
        return dg.grad(S)(x), fd_grad(S_ref, x), RTOL1, ATOL1
    if outer == "value_and_grad":
        return (dg.value_and_grad(S)(x), (np.asarray(S_ref(x)), fd_grad(S_ref, x)),
                RTOL1, ATOL1)
    if outer == "jvp":
        got = dg.jvp(F, (x,), (V_OUT,))
        return got, (F_ref(x), fd_dir(F_ref, x, V_OUT)), RTOL1, ATOL1
    if outer == "vjp":
        out, pullback = dg.vjp(F, x)
        ct = tree_map(lambda o: weights(np.shape(o), 0.5), out)
        return (out, pullback(ct)), (F_ref(x), fd_vjp(F_ref, x, ct)), RTOL1, ATOL1
    if outer == "hvp":
        return dg.hvp(S)(x, V_OUT), fd_hvp(S_ref, x, V_OUT), RTOL2, ATOL2
    if outer == "grad_and_hvp":
        return (dg.grad_and_hvp(S)(x, V_OUT), (fd_grad(S_ref, x), fd_hvp(S_ref, x, V_OUT)),
                RTOL2, ATOL2)
    raise ValueError(outer)


@pytest.mark.parametrize("inner", TRANSFORMS)
def test_inner_references(inner):
    """The references themselves (no composition): every inner transform against its
    closed form, and the closed forms against finite differences."""
    F, F_ref, _ = _inner(inner)
    assert_tree_close(F(X0.copy()), F_ref(X0), 1e-12, 1e-12, f"{inner}(f)")
    assert_tree_close(fd_grad(f_ref, X0), grad_ref(X0), RTOL1, ATOL1, "grad_ref")
    assert_tree_close(fd_hvp(f_ref, X0, U0), hess_ref(X0) @ U0, RTOL2, ATOL2, "hess_ref")


@pytest.mark.parametrize("inner", TRANSFORMS)
@pytest.mark.parametrize("outer", TRANSFORMS)
def test_outer_references(outer, inner):
    """The finite-difference references of the table, validated with what works without
    composition: the outer transform applied to the inner transform's closed form (plain
    NumPy code that dualgpu traces)."""
    _, F_ref, scalar = _inner(inner)
    got, want, rtol, atol = _apply_outer(outer, F_ref, F_ref, scalar)
    assert_tree_close(got, want, rtol, atol, f"{outer}(closed form of {inner}(f))")


@pytest.mark.parametrize("inner", TRANSFORMS)
@pytest.mark.parametrize("outer", TRANSFORMS)
def test_compose_pair(outer, inner):
    """outer(inner(f)): scalar-only outer transforms (grad, value_and_grad, hvp,
    grad_and_hvp) take ``inner(f)`` itself when it is scalar (jit) and ``x -> <inner(f)(x),
    w>`` otherwise; jit, jvp and vjp take any output."""
    F, F_ref, scalar = _inner(inner)
    got, want, rtol, atol = _apply_outer(outer, F, F_ref, scalar)
    assert_tree_close(got, want, rtol, atol, f"{outer}({inner}(f))")


@pytest.mark.parametrize("inner", TRANSFORMS)
@pytest.mark.parametrize("outer", TRANSFORMS)
def test_compose_pair_jitted(outer, inner):
    """The same pairs under one more jit: jit(outer(inner(f))) for function-valued outer
    transforms, outer(jit(inner(f))) for jvp/vjp."""
    F, F_ref, scalar = _inner(inner)
    if outer in ("jvp", "vjp"):
        F = dg.jit(F)
        got, want, rtol, atol = _apply_outer(outer, F, F_ref, scalar)
    else:
        S = F if scalar else (lambda y: wsum(F(y)))
        t = {"jit": dg.jit, "grad": dg.grad, "value_and_grad": dg.value_and_grad,
             "hvp": dg.hvp, "grad_and_hvp": dg.grad_and_hvp}[outer]
        arg = F if outer == "jit" else S
        extra = (V_OUT,) if outer in ("hvp", "grad_and_hvp") else ()
        got = dg.jit(t(arg))(X0.copy(), *extra)
        _, want, rtol, atol = _apply_outer(outer, F, F_ref, scalar)
    assert_tree_close(got, want, rtol, atol, f"jit·{outer}({inner}(f))")


# ------------------------------------------------------------------ named compositions


def test_jit_of_grad():
    """jit(grad(f))(x) returned f(x)."""
    assert_tree_close(dg.jit(dg.grad(f))(X0.copy()), grad_ref(X0), 1e-12, 1e-12,
                      "jit(grad(f))")


def test_grad_of_jit():
    """grad(jit(f))(x) returned ()."""
    assert_tree_close(dg.grad(dg.jit(f))(X0.copy()), grad_ref(X0), 1e-12, 1e-12,
                      "grad(jit(f))")


def test_hvp_of_jit_and_jit_of_hvp():
    assert_tree_close(dg.hvp(dg.jit(f))(X0.copy(), U0), hess_ref(X0) @ U0, 1e-12, 1e-12,
                      "hvp(jit(f))")
    assert_tree_close(dg.jit(dg.hvp(f))(X0.copy(), U0), hess_ref(X0) @ U0, 1e-12, 1e-12,
                      "jit(hvp(f))")


def test_grad_of_grad():
    """grad(grad(f)) on a scalar function of a scalar returned ∇f."""
    g1 = lambda x: np.sum(np.sin(x) * x ** 2)  # noqa: E731
    x = np.array(0.8)
    got = dg.grad(dg.grad(g1))(x)
    want = -np.sin(0.8) * 0.64 + 4 * 0.8 * np.cos(0.8) + 2 * np.sin(0.8)
    assert_tree_close(got, want, 1e-12, 1e-12, "grad(grad(f)) at a 0-d array")


@pytest.mark.parametrize("shape", [(), (1,)])
def test_third_order(shape):
    """grad(grad(grad(f))) of a scalar function of a scalar / 1-element array."""
    g1 = lambda x: np.sum(np.sin(x) * x ** 2)  # noqa: E731
    x = np.full(shape, 0.8)
    d1 = dg.grad(g1)
    d2 = dg.grad(lambda y: np.sum(d1(y)))
    d3 = dg.grad(lambda y: np.sum(d2(y)))
    assert_tree_close(d3(x), np.full(shape, third_diag(0.8)), 1e-11, 1e-12, "grad³")
    # and by finite differences of the exact second derivative
    second = lambda y: float(np.sum(-np.sin(y) * y ** 2 + 4 * y * np.cos(y)  # noqa: E731
                                    + 2 * np.sin(y)))
    assert_tree_close(d3(x), fd_grad(second, x), RTOL1, ATOL1, "grad³ vs FD")
    if shape == ():
        got = dg.grad(dg.grad(dg.grad(g1)))(x)
        assert_tree_close(got, third_diag(0.8), 1e-11, 1e-12, "grad(grad(grad(f)))")


def test_grad_norm_penalty():
    """dg.grad inside a traced function: P(p) = loss(p) + |∇loss(p)|², under grad and
    hvp."""
    def penalty(p):
        return f(p) + np.sum(dg.grad(f)(p) ** 2)

    def penalty_ref(p):
        return f_ref(p) + float(np.sum(grad_ref(p) ** 2))

    def penalty_grad_ref(p):
        return grad_ref(p) + 2 * hess_ref(p) @ grad_ref(p)

    p = X0.copy()
    assert_tree_close(penalty_grad_ref(p), fd_grad(penalty_ref, p), RTOL1, ATOL1,
                      "reference of ∇P")
    assert_tree_close(dg.grad(penalty)(p), penalty_grad_ref(p), 1e-11, 1e-12, "grad(P)")
    want_hvp = fd_dir(penalty_grad_ref, p, V_OUT, eps=1e-5)
    assert_tree_close(dg.hvp(penalty)(p, V_OUT), want_hvp, RTOL1, 1e-6, "hvp(P)")
    v, g = dg.value_and_grad(penalty)(p)
    assert_tree_close((v, g), (penalty_ref(p), penalty_grad_ref(p)), 1e-11, 1e-12,
                      "value_and_grad(P)")


# ------------------------------------------------------------------ wrapper state


def _shared_mutable_state(outer, inner):
    """Mutable attribute values of ``inner`` that ``outer`` holds as the same object."""
    outer_vars = vars(outer) if hasattr(outer, "__dict__") else {}
    inner_vars = vars(inner) if hasattr(inner, "__dict__") else {}
    return sorted(k for k, v in inner_vars.items()
                  if isinstance(v, (dict, list, set, bytearray)) and outer_vars.get(k) is v
                  and not k.startswith("__"))  # functools.wraps shares __annotations__


@pytest.mark.parametrize("outer", ["jit", "grad", "value_and_grad", "hvp", "grad_and_hvp"])
@pytest.mark.parametrize("inner", ["jit", "grad", "value_and_grad", "hvp", "grad_and_hvp"])
def test_transforms_do_not_inherit_state(outer, inner):
    """A transform of a transform keeps its own state: functools.update_wrapper copied the
    wrapped transform's __dict__ (its cache slots, its wrapped function, its argnums). No
    mutable attribute is shared; the inner transform still works after the outer one ran;
    the outer one gives what a fresh one gives on an empty cache."""
    x = X0.copy()
    extra = (U0,) if inner in ("hvp", "grad_and_hvp") else ()
    inner_t = getattr(dg, inner)(f)
    before = inner_t(x, *extra)  # fill its state (cache slots)
    outer_t = getattr(dg, outer)(inner_t)
    assert _shared_mutable_state(outer_t, inner_t) == []
    if outer == "jit" or inner == "jit":  # type-valid: the outer one can be called
        outer_extra = (V_OUT,) if outer in ("hvp", "grad_and_hvp") else ()
        got = outer_t(x, *extra, *outer_extra)
        dg.clear_cache()
        fresh = getattr(dg, outer)(getattr(dg, inner)(f))(x, *extra, *outer_extra)
        assert_tree_close(got, fresh, 0, 0, f"{outer}({inner}(f)) vs a fresh build")
    assert_tree_close(inner_t(x, *extra), before, 0, 0, f"{inner}(f) after {outer} of it")


def test_jit_of_value_and_grad_leaves_value_and_grad_working():
    x = X0.copy()
    vg = dg.value_and_grad(f)
    first = dg.jit(vg)(x)
    assert_tree_close(first, (f_ref(x), grad_ref(x)), 1e-12, 1e-12, "jit(value_and_grad(f))")
    assert_tree_close(dg.value_and_grad(f)(x), (f_ref(x), grad_ref(x)), 1e-12, 1e-12,
                      "value_and_grad(f) after jit(value_and_grad(f))")
    assert_tree_close(vg(x), (f_ref(x), grad_ref(x)), 1e-12, 1e-12,
                      "the wrapped value_and_grad object itself")
    assert_tree_close(dg.grad(f)(x), grad_ref(x), 1e-12, 1e-12, "grad(f) afterwards")


def test_composition_then_plain_transforms_in_any_order():
    """Composed and plain transforms of the same f, interleaved: none poisons another."""
    x = X0.copy()
    calls = [
        ("grad", lambda: dg.grad(f)(x), grad_ref(x)),
        ("jit∘grad", lambda: dg.jit(dg.grad(f))(x), grad_ref(x)),
        ("jit", lambda: dg.jit(f)(x), f_ref(x)),
        ("grad∘jit", lambda: dg.grad(dg.jit(f))(x), grad_ref(x)),
        ("hvp", lambda: dg.hvp(f)(x, U0), hess_ref(x) @ U0),
        ("grad∘<grad,w>", lambda: dg.grad(lambda y: np.sum(dg.grad(f)(y) * U0))(x),
         hess_ref(x) @ U0),
    ]
    for order in (calls, calls[::-1], calls[1::2] + calls[::2]):
        for name, call, want in order:
            assert_tree_close(call(), want, 1e-11, 1e-12, name)


# ------------------------------------------------------------------ pytrees, has_aux, kwargs
W0 = np.array([[0.2, -0.5], [0.7, 0.1], [-0.3, 0.4]])
B0 = np.array([0.05, -0.2])
XS = np.array([[0.5, -1.0, 0.3], [0.2, 0.4, -0.6], [-0.8, 0.1, 0.9], [0.3, 0.3, 0.3]])


def loss_params(params, xs):
    return np.sum(np.tanh(xs @ params["W"] + params["b"]) ** 2) + 0.1 * np.sum(params["W"] ** 2)


def _flat_params(params):
    return np.concatenate([params["W"].ravel(), params["b"].ravel()])


def _unflat(v):
    return {"W": v[:6].reshape(3, 2), "b": v[6:]}


def test_pytree_dict_argument():
    params = {"W": W0.copy(), "b": B0.copy()}
    got = dg.grad(loss_params)(params, XS)
    assert isinstance(got, dict) and sorted(got) == ["W", "b"]
    flat = fd_grad(lambda v: float(loss_params(_unflat(v), XS)), _flat_params(params))
    assert_tree_close(got, _unflat(flat), RTOL1, ATOL1, "grad(loss)(params_dict, X)")
    g0, gx = dg.grad(loss_params, argnums=(0, 1))(params, XS)
    assert_tree_close(g0, got, 1e-12, 1e-12, "argnums=(0, 1)[0]")
    assert_tree_close(gx, fd_grad(lambda y: float(loss_params(params, y)), XS), RTOL1, ATOL1,
                      "argnums=(0, 1)[1]")
    value, g = dg.value_and_grad(loss_params)(params, XS)
    assert_tree_close((value, g), (float(loss_params(params, XS)), got), 1e-12, 1e-12,
                      "value_and_grad")


def test_pytree_hvp_and_jit():
    params = {"W": W0.copy(), "b": B0.copy()}
    v = {"W": weights((3, 2), 0.3), "b": weights((2,), 1.1)}
    got = dg.hvp(loss_params)(params, XS, v)
    flat = fd_hvp(lambda p: float(loss_params(_unflat(p), XS)), _flat_params(params),
                  _flat_params(v))
    assert_tree_close(got, _unflat(flat), RTOL2, ATOL2, "hvp(loss)(params, X, v_dict)")
    assert_tree_close(dg.jit(dg.grad(loss_params))(params, XS), dg.grad(loss_params)(params, XS),
                      1e-12, 1e-12, "jit(grad) with a dict")


def test_pytree_nested_lists_tuples():
    def loss(tree, x):
        a, b = tree["a"]
        (c,) = tree["c"]
        return np.sum(np.sin(a * x) * b) + np.sum(c ** 3) * np.sum(x)

    tree = {"a": [np.array([0.3, -0.2]), np.array([1.0, 0.5])], "c": (np.array([0.1, 0.2, 0.3]),)}
    x = np.array([0.7, -0.4])
    got = dg.grad(loss)(tree, x)
    assert isinstance(got, dict) and isinstance(got["a"], list) and isinstance(got["c"], tuple)
    a, b, c = tree["a"][0], tree["a"][1], tree["c"][0]
    want = {"a": [np.cos(a * x) * x * b, np.sin(a * x)], "c": (3 * c ** 2 * np.sum(x),)}
    assert_tree_close(got, want, 1e-12, 1e-12, "grad of a nested pytree")


def test_pytree_list_argument_with_new_values():
    def loss(x, wb):
        w, b = wb
        return np.sum(np.tanh(x @ w + b) ** 2)

    g = dg.grad(loss, argnums=(0, 1))
    x = XS[:2].copy()
    for scale in (1.0, -2.0, 0.5):
        wb = [W0 * scale, B0 * scale]
        gx, gwb = g(x, wb)
        assert isinstance(gwb, list) and len(gwb) == 2
        want_w = fd_grad(lambda w, wb=wb: float(loss(x, [w, wb[1]])), wb[0])
        assert_tree_close(gwb[0], want_w, RTOL1, ATOL1, f"grad wrt W (scale {scale})")
        assert_tree_close(gx, fd_grad(lambda y, wb=wb: float(loss(y, wb)), x), RTOL1, ATOL1,
                          f"grad wrt x (scale {scale})")


def aux_loss(x, w):
    z = np.tanh(x @ w)
    return np.sum(z ** 2), {"z": z, "s": np.sum(z)}


def test_has_aux():
    x = XS.copy()
    g, aux = dg.grad(aux_loss, argnums=1, has_aux=True)(x, W0.copy())
    z = np.tanh(x @ W0)
    assert isinstance(aux, dict) and sorted(aux) == ["s", "z"]
    assert_tree_close(aux, {"z": z, "s": np.sum(z)}, 1e-12, 1e-12, "aux")
    want = fd_grad(lambda w: float(aux_loss(x, w)[0]), W0)
    assert_tree_close(g, want, RTOL1, ATOL1, "grad with has_aux")
    (value, aux2), g2 = dg.value_and_grad(aux_loss, argnums=1, has_aux=True)(x, W0.copy())
    assert_tree_close((value, aux2, g2), (np.sum(z ** 2), aux, g), 1e-12, 1e-12,
                      "value_and_grad with has_aux: ((value, aux), grad)")


def kw_loss(x, *, scale=1.0, shift=None):
    s = np.sum(np.sin(x) ** 2) * scale
    if shift is not None:
        s = s + np.sum(x * shift)
    return s


@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "jit"])
def test_keyword_arguments_pass_through(transform):
    """Keyword arguments reach f and are not differentiated (arrays included)."""
    x = X0.copy()
    shift = np.array([1.0, 2.0, 3.0])
    t = getattr(dg, transform)(kw_loss)
    for kwargs in ({}, {"scale": 2.0}, {"scale": -0.0}, {"shift": shift},
                   {"scale": 0.5, "shift": shift}):
        got = t(x, **kwargs)
        ref = fd_grad(lambda y, kw=kwargs: float(kw_loss(y, **kw)), x)
        if transform == "grad":
            want = ref
        elif transform == "value_and_grad":
            want = (kw_loss(x, **kwargs), ref)
        else:
            want = kw_loss(x, **kwargs)
        assert_tree_close(got, want, RTOL1, ATOL1, f"{transform}(f)(x, **{sorted(kwargs)})")


def test_keyword_arguments_under_hvp():
    x = X0.copy()
    got = dg.hvp(kw_loss)(x, U0, scale=3.0)
    want = fd_hvp(lambda y: float(kw_loss(y, scale=3.0)), x, U0)
    assert_tree_close(got, want, RTOL2, ATOL2, "hvp(f)(x, v, scale=3.0)")
