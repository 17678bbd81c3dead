"""Derivative checks against finite differences, and hypothesis strategies.

``check_jvp`` compares ``J·t`` with central differences along one random direction;
``check_vjp`` checks the inner-product identity ``<ȳ, J t> = <Jᵀ ȳ, t>``;
``check_hvp`` compares ``H·v`` with central differences of the gradient;
``check_grads(order=2)`` runs all that apply. Tolerances are documented per function and
meant for float64.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .errors import DualgpuError


def _rng(seed):
    return np.random.default_rng(seed)


def _xp(args):
    from .backends import backend_of

    return backend_of(args).xp


def _to_numpy(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)


def _random_like(rng, x, xp):
    return xp.asarray(rng.standard_normal(np.shape(x)).astype(np.dtype(x.dtype)))


def _vdot(a, b) -> float:
    return float(np.sum(_to_numpy(a).astype(np.float64) * _to_numpy(b).astype(np.float64)))


def _assert_close(got, want, rtol, atol, what):
    got = _to_numpy(got).astype(np.float64)
    want = _to_numpy(want).astype(np.float64)
    if got.shape != want.shape:
        raise AssertionError(f"{what}: shape {got.shape} != {want.shape}")
    err = np.abs(got - want)
    tol = atol + rtol * np.abs(want)
    if not np.all(err <= tol) or np.any(np.isnan(got) != np.isnan(want)):
        worst = np.nanmax(err - tol) if err.size else 0
        raise AssertionError(f"{what}: max excess error {worst:.3g} (rtol={rtol}, atol={atol})"
                             f"\n got  {got.ravel()[:6]}\n want {want.ravel()[:6]}")


def numerical_jvp(f, args, tangents, eps):
    plus = f(*[a + eps * t for a, t in zip(args, tangents)])
    minus = f(*[a - eps * t for a, t in zip(args, tangents)])
    return _tree_map2(lambda p, m: (p - m) / (2 * eps), plus, minus)


def _tree_map2(fn, a, b):
    if isinstance(a, (tuple, list)):
        return type(a)(_tree_map2(fn, x, y) for x, y in zip(a, b))
    return fn(a, b)


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [y for item in x for y in _leaves(item)]
    return [x]


def check_jvp(f: Callable, args: Sequence, *, eps: float = 1e-6, rtol: float = 1e-5,
              atol: float = 1e-6, seed: int = 0) -> None:
    """``dg.jvp(f)`` against central differences along a random direction (float64).

    Example::

        >>> check_jvp(np.tanh, (np.linspace(-1, 1, 5),))
    """
    from .api import jvp

    args = tuple(args)
    xp = _xp(args)
    rng = _rng(seed)
    ts = tuple(_random_like(rng, a, xp) for a in args)
    _, got = jvp(f, args, ts)
    want = numerical_jvp(f, args, ts, eps)
    for g, w in zip(_leaves(got), _leaves(want)):
        _assert_close(g, w, rtol, atol, f"jvp of {getattr(f, '__name__', 'f')}")


def check_vjp(f: Callable, args: Sequence, *, rtol: float = 1e-9, atol: float = 1e-9,
              seed: int = 0) -> None:
    """The inner-product identity ``<ȳ, J t> == <Jᵀ ȳ, t>`` with jvp on one side and vjp
    on the other (exact up to rounding)."""
    from .api import jvp, vjp

    args = tuple(args)
    xp = _xp(args)
    rng = _rng(seed)
    ts = tuple(_random_like(rng, a, xp) for a in args)
    out, jt = jvp(f, args, ts)
    out2, pullback = vjp(f, *args)
    ybars = [_random_like(rng, o, xp) for o in _leaves(out)]
    ybar = ybars[0] if not isinstance(out, (tuple, list)) else type(out)(ybars)
    cts = pullback(ybar)
    lhs = sum(_vdot(y, j) for y, j in zip(ybars, _leaves(jt)))
    rhs = sum(_vdot(c, t) for c, t in zip(cts, ts))
    scale = max(1.0, abs(lhs), abs(rhs))
    if abs(lhs - rhs) > atol + rtol * scale:
        raise AssertionError(f"vjp of {getattr(f, '__name__', 'f')}: <ybar, J t> = {lhs!r} "
                             f"but <J^T ybar, t> = {rhs!r}")


def check_hvp(f: Callable, args: Sequence, *, argnum: int = 0, eps: float = 1e-5,
              rtol: float = 1e-5, atol: float = 1e-6, seed: int = 0) -> None:
    """``dg.hvp(f)`` against central differences of ``dg.grad(f)`` (f scalar-valued)."""
    from .api import grad, hvp

    args = tuple(args)
    xp = _xp(args)
    rng = _rng(seed)
    v = _random_like(rng, args[argnum], xp)
    got = hvp(f, argnums=argnum)(*args, v)
    g = grad(f, argnums=argnum)

    def shifted(s):
        a = list(args)
        a[argnum] = args[argnum] + s * v
        return g(*a)

    want = (shifted(eps) - shifted(-eps)) / (2 * eps)
    _assert_close(got, want, rtol, atol, f"hvp of {getattr(f, '__name__', 'f')}")


def check_grads(f: Callable, args: Sequence, order: int = 2,
                modes: Sequence[str] = ("fwd", "rev"), *, eps: float = 1e-6,
                rtol: float = 1e-5, atol: float = 1e-6, seed: int = 0) -> None:
    """Check derivatives of ``f`` at ``args`` up to ``order`` (1 or 2) against finite
    differences. ``"fwd"`` checks jvp, ``"rev"`` checks vjp (and, for scalar ``f`` with
    ``order=2``, the HVP of every argument).

    Example::

        >>> dg.testing.check_grads(lambda x: np.sum(np.sin(x) ** 2), (np.ones(3),), order=2)
    """
    if order not in (1, 2):
        raise DualgpuError("check_grads supports order 1 and 2")
    if "fwd" in modes:
        check_jvp(f, args, eps=eps, rtol=rtol, atol=atol, seed=seed)
    if "rev" in modes:
        check_vjp(f, args, seed=seed)
    if order == 2:
        out = f(*args)
        if np.ndim(out) == 0 and not isinstance(out, (tuple, list)):
            for i in range(len(args)):
                check_hvp(f, args, argnum=i, eps=max(eps, 1e-5), rtol=max(rtol, 1e-5),
                          atol=max(atol, 1e-6), seed=seed)
        else:
            # second order of a vector function: jvp of its vjp against a random cotangent
            from .api import vjp as _vjp

            args = tuple(args)
            xp = _xp(args)
            ybar = _random_like(_rng(seed + 1), out, xp)

            def scalarized(*a):
                from . import numpy_api as dnp

                return dnp.sum(dnp.multiply(f(*a), ybar))

            for i in range(len(args)):
                check_hvp(scalarized, args, argnum=i, eps=max(eps, 1e-5),
                          rtol=max(rtol, 1e-5), atol=max(atol, 1e-6), seed=seed)
            del _vjp


from . import strategies  # noqa: E402,F401
