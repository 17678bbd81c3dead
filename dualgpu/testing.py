"""Derivative checks against finite differences, and hypothesis strategies.

``check_jvp`` compares ``J·t`` with central differences along one random direction;
``check_vjp_fd`` compares ``Jᵀ ȳ`` with central differences through the inner product
``<ȳ, J t> = <Jᵀ ȳ, t>`` (reverse mode only, ``J t`` by differences);
``check_vjp`` checks the same identity exactly, with ``dg.jvp`` on one side and ``dg.vjp`` on
the other; ``check_hvp`` compares ``H·v`` with central differences of the gradient;
``check_grads(order=2)`` runs all that apply. Tolerances are documented per function and
meant for float64.

Bad arguments (an unknown mode, ``args`` that is not a tuple, an integer array, an
``argnum`` out of range) raise a :class:`~dualgpu.DualgpuError` naming the argument; a wrong
derivative raises ``AssertionError``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .api.differentiation import grad, hvp
from .api.linearization import jvp, vjp
from .backends import array_backend, backend_of
from .errors import DualgpuError
from .frontend import numpy as dnp
from .runtime.signature import float_point

MODES = ("fwd", "rev")


def _rng(seed):
    return np.random.default_rng(seed)


def _xp(args):
    return backend_of(_leaves(args)).xp


def _to_numpy(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)


def _random_like(rng, x, xp):
    return xp.asarray(rng.standard_normal(np.shape(x)).astype(np.dtype(x.dtype)))


def _vdot(a, b) -> float:
    return float(np.sum(_to_numpy(a).astype(np.float64) * _to_numpy(b).astype(np.float64)))


def _abs_vdot(a, b) -> float:
    return float(np.sum(np.abs(_to_numpy(a).astype(np.float64) *
                               _to_numpy(b).astype(np.float64))))


def _assert_close(got, want, rtol, atol, what):
    got = _to_numpy(got).astype(np.float64)
    want = _to_numpy(want).astype(np.float64)
    if got.shape != want.shape:
        raise AssertionError(f"{what}: shape {got.shape} != {want.shape}")
    err = np.abs(got - want)
    tol = atol + rtol * np.abs(want)
    nan_mismatch = np.isnan(got) != np.isnan(want)
    with np.errstate(invalid="ignore"):
        bad = ~(err <= tol) & ~(np.isnan(got) & np.isnan(want))
    if np.any(bad) or np.any(nan_mismatch):
        excess = (err - tol)[np.isfinite(err - tol)]
        worst = f"max excess error {excess.max():.3g}" if excess.size else "NaN mismatch"
        raise AssertionError(f"{what}: {worst} (rtol={rtol}, atol={atol})"
                             f"\n got  {got.ravel()[:6]}\n want {want.ravel()[:6]}")


def numerical_jvp(f, args, tangents, eps):
    """Central differences of ``f`` at ``args`` along ``tangents``."""
    plus = f(*[_tree_map2(lambda a, t: a + eps * t, a, t) for a, t in zip(args, tangents)])
    minus = f(*[_tree_map2(lambda a, t: a - eps * t, a, t) for a, t in zip(args, tangents)])
    return _tree_map2(lambda p, m: (p - m) / (2 * eps), plus, minus)


def _keys(d: dict) -> list:
    """A dict's keys in one canonical order (sorted when they can be), so that trees that
    differ only in insertion order line up leaf by leaf."""
    try:
        return sorted(d)
    except TypeError:
        return list(d)


def _tree_map2(fn, a, b):
    if isinstance(a, (tuple, list)):
        return type(a)(_tree_map2(fn, x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return {k: _tree_map2(fn, a[k], b[k]) for k in _keys(a)}
    return fn(a, b)


def _tree_map(fn, a):
    if isinstance(a, (tuple, list)):
        return type(a)(_tree_map(fn, x) for x in a)
    if isinstance(a, dict):
        return {k: _tree_map(fn, a[k]) for k in _keys(a)}
    return fn(a)


def _rebuild(like, leaves):
    """A tree shaped like ``like`` whose leaves are taken in order from ``leaves``."""
    it = iter(leaves)
    return _tree_map(lambda _: next(it), like)


def _random_tree(rng, tree, xp):
    return _tree_map(lambda a: _random_like(rng, a, xp), tree)


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [y for item in x for y in _leaves(item)]
    if isinstance(x, dict):
        return [y for k in _keys(x) for y in _leaves(x[k])]
    return [x]


def _fname(f) -> str:
    return getattr(f, "__name__", type(f).__name__)


def _check_args(f, args, what: str) -> tuple:
    """``args`` as a tuple of floating-point arrays (float scalars converted), or one
    DualgpuError naming the argument."""
    if not callable(f):
        raise DualgpuError(f"{what}: f must be a function, got {type(f).__name__}")
    if not isinstance(args, (tuple, list)):
        raise DualgpuError(f"{what}: args must be a tuple of arguments such as (x,), got "
                           f"{type(args).__name__}")
    if not args:
        raise DualgpuError(f"{what}: args is empty: there is nothing to differentiate")
    return tuple(_tree_map(lambda a, i=i: float_point(a, what, f"argument {i}", "checked"),
                           a) for i, a in enumerate(args))


def _check_argnum(argnum, args, what: str) -> int:
    if isinstance(argnum, (bool, np.bool_)) or not isinstance(argnum, (int, np.integer)) \
            or not 0 <= argnum < len(args):
        raise DualgpuError(f"{what}: argnum must be an int in [0, {len(args)}), got "
                           f"{argnum!r}")
    return int(argnum)


def _check_modes(modes) -> tuple[str, ...]:
    if isinstance(modes, str):
        modes = (modes,)
    if not isinstance(modes, (tuple, list, set, frozenset)) or not modes:
        raise DualgpuError(f"check_grads: modes must be a non-empty tuple of {MODES}, got "
                           f"{modes!r}")
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise DualgpuError(f"check_grads: unknown mode(s) {unknown!r} in modes; use 'fwd' "
                           "and/or 'rev'")
    return tuple(m for m in MODES if m in modes)


def _random_tangents(rng, args, xp):
    return tuple(_random_tree(rng, a, xp) for a in args)


def check_jvp(f: Callable, args: Sequence, *, eps: float = 1e-6, rtol: float = 1e-5,
              atol: float = 1e-6, seed: int = 0) -> None:
    """``dg.jvp(f)`` against central differences along a random direction (float64).

    Example::

        >>> check_jvp(np.tanh, (np.linspace(-1, 1, 5),))
    """
    args = _check_args(f, args, "check_jvp")
    xp = _xp(args)
    rng = _rng(seed)
    ts = _random_tangents(rng, args, xp)
    _, got = jvp(f, args, ts)
    want = numerical_jvp(f, args, ts, eps)
    for g, w in zip(_leaves(got), _leaves(want)):
        _assert_close(g, w, rtol, atol, f"jvp of {_fname(f)}")


def check_vjp(f: Callable, args: Sequence, *, rtol: float = 1e-9, atol: float = 1e-9,
              seed: int = 0) -> None:
    """The inner-product identity ``<ȳ, J t> == <Jᵀ ȳ, t>`` with jvp on one side and vjp
    on the other (exact up to rounding): the two modes agree. The values jvp and vjp return
    must equal ``f(*args)`` called plainly (same tolerances). ``check_vjp_fd`` checks the
    VJP against finite differences instead.

    Example::

        >>> check_vjp(lambda x: np.sin(x) * x, (np.linspace(-1, 1, 5),))
    """
    args = _check_args(f, args, "check_vjp")
    xp = _xp(args)
    rng = _rng(seed)
    ts = _random_tangents(rng, args, xp)
    out, jt = jvp(f, args, ts)
    out2, pullback = vjp(f, *args)
    want = f(*args)
    for mode, got in (("jvp", out), ("vjp", out2)):
        what = f"the value {mode} of {_fname(f)} returns, against {_fname(f)} itself"
        if len(_leaves(got)) != len(_leaves(want)):
            raise AssertionError(f"{what}: {len(_leaves(got))} arrays, "
                                 f"{len(_leaves(want))} from the plain call")
        for g, w in zip(_leaves(got), _leaves(want)):
            _assert_close(g, w, rtol, atol, what)
    ybars = [_random_like(rng, o, xp) for o in _leaves(out)]
    cts = pullback(_rebuild(out, ybars))
    lhs = sum(_vdot(y, j) for y, j in zip(ybars, _leaves(jt)))
    rhs = sum(_vdot(c, t) for c, t in zip(_leaves(cts), _leaves(ts)))
    scale = max(1.0, abs(lhs), abs(rhs))
    if abs(lhs - rhs) > atol + rtol * scale:
        raise AssertionError(f"vjp of {_fname(f)}: <ybar, J t> = {lhs!r} "
                             f"but <J^T ybar, t> = {rhs!r}")


def check_vjp_fd(f: Callable, args: Sequence, *, eps: float = 1e-6, rtol: float = 1e-5,
                 atol: float = 1e-6, seed: int = 0) -> None:
    """``dg.vjp(f)`` against central differences: ``<Jᵀ ȳ, t>`` from the pullback must
    equal ``<ȳ, (f(x + εt) - f(x - εt)) / 2ε>`` for a random ``ȳ`` and direction ``t``
    (float64). Uses reverse mode only.

    Example::

        >>> check_vjp_fd(np.tanh, (np.linspace(-1, 1, 5),))
    """
    args = _check_args(f, args, "check_vjp_fd")
    xp = _xp(args)
    rng = _rng(seed)
    ts = _random_tangents(rng, args, xp)
    out, pullback = vjp(f, *args)
    ybars = [_random_like(rng, o, xp) for o in _leaves(out)]
    cts = pullback(_rebuild(out, ybars))
    fd = _leaves(numerical_jvp(f, args, ts, eps))
    want = sum(_vdot(y, d) for y, d in zip(ybars, fd))
    got = sum(_vdot(c, t) for c, t in zip(_leaves(cts), _leaves(ts)))
    # the per-element tolerance of check_jvp, carried through the inner product
    tol = atol * sum(float(np.sum(np.abs(_to_numpy(y)))) for y in ybars) + \
        rtol * sum(_abs_vdot(y, d) for y, d in zip(ybars, fd))
    if not abs(got - want) <= tol:
        raise AssertionError(f"vjp of {_fname(f)}: <J^T ybar, t> = {got!r} but finite "
                             f"differences give <ybar, J t> = {want!r} (tolerance {tol:.3g})")


def check_hvp(f: Callable, args: Sequence, *, argnum: int = 0, eps: float = 1e-5,
              rtol: float = 1e-5, atol: float = 1e-6, seed: int = 0) -> None:
    """``dg.hvp(f)`` against central differences of ``dg.grad(f)`` (f scalar-valued)."""
    args = _check_args(f, args, "check_hvp")
    argnum = _check_argnum(argnum, args, "check_hvp")
    xp = _xp(args)
    rng = _rng(seed)
    v = _random_tree(rng, args[argnum], xp)
    got = hvp(f, argnums=argnum)(*args, v)
    g = grad(f, argnums=argnum)

    def shifted(s):
        a = list(args)
        a[argnum] = _tree_map2(lambda x, d: x + s * d, args[argnum], v)
        return g(*a)

    want = _tree_map2(lambda p, m: (p - m) / (2 * eps), shifted(eps), shifted(-eps))
    for gl, wl in zip(_leaves(got), _leaves(want)):
        _assert_close(gl, wl, rtol, atol, f"hvp of {_fname(f)}")


def _is_float_leaf(a) -> bool:
    if isinstance(a, float) or (isinstance(a, np.generic) and np.dtype(type(a)).kind in "fc"):
        return True
    b = array_backend(a)
    return b is not None and not b.is_sparse(a) and np.dtype(a.dtype).kind in "fc"


def _differentiated(args, argnums) -> list[int]:
    """The positions ``check_grads`` differentiates: ``argnums``, or every argument whose
    leaves are all floating point (integer and bool arguments are held fixed, as static)."""
    if argnums is None:
        return [i for i, a in enumerate(args) if _leaves(a) and all(
            _is_float_leaf(leaf) for leaf in _leaves(a))]
    nums = (argnums,) if not isinstance(argnums, (tuple, list)) else tuple(argnums)
    return sorted({_check_argnum(k, args, "check_grads") for k in nums})


def check_grads(f: Callable, args: Sequence, order: int = 2,
                modes: Sequence[str] = MODES, *, argnums=None, eps: float | None = None,
                rtol: float | None = None, atol: float | None = None, seed: int = 0) -> None:
    """Check derivatives of ``f`` at ``args`` up to ``order`` (1 or 2) against central
    finite differences. ``"fwd"`` checks ``dg.jvp`` (``check_jvp``), ``"rev"`` checks
    ``dg.vjp`` (``check_vjp_fd``); with both, the two modes must also agree exactly
    (``check_vjp``). ``order=2`` checks the HVP of every argument against differences of the
    gradient (of ``sum(f * ȳ)`` for a random ``ȳ`` when ``f`` is not scalar; ``f`` may return
    an array, a tuple or list of arrays, or any pytree). An unknown mode or an order other
    than 1 and 2 raises ``DualgpuError``.

    ``eps`` (the difference step), ``rtol`` and ``atol`` default by the differentiated
    arguments' least precise float dtype: ``1e-6, 1e-5, 1e-6`` for float64, ``1e-3, 2e-3,
    2e-3`` for float32 (differences at float64's step are rounding noise in float32).

    ``argnums`` (an int or a tuple) picks the arguments to differentiate; the others are held
    fixed. By default every floating-point argument is differentiated and integer or bool
    arguments (counts, indices, flags) are held fixed, as ``dg.grad`` treats them as static.

    Example::

        >>> dg.testing.check_grads(lambda x: np.sum(np.sin(x) ** 2), (np.ones(3),), order=2)
        >>> dg.testing.check_grads(lambda x, k: (x ** k, np.sum(x)), (np.ones(3), 3))
        >>> dg.testing.check_grads(lambda x, y: np.sum(x * y), (np.ones(2), np.ones(2)),
        ...                        argnums=1)
    """
    if isinstance(order, bool) or order not in (1, 2):
        raise DualgpuError(f"check_grads: order must be 1 or 2, got {order!r}")
    modes = _check_modes(modes)
    if not callable(f):
        raise DualgpuError(f"check_grads: f must be a function, got {type(f).__name__}")
    if not isinstance(args, (tuple, list)) or not args:
        _check_args(f, args, "check_grads")  # the error naming what args is
    args = tuple(args)
    diff = _differentiated(args, argnums)
    if not diff:
        _check_args(f, args, "check_grads")  # names the integer argument
        raise DualgpuError("check_grads: no floating-point argument to differentiate")
    if diff == list(range(len(args))):
        g = f
    else:
        def g(*dargs):
            full = list(args)
            for i, a in zip(diff, dargs):
                full[i] = a
            return f(*full)

        g.__name__ = _fname(f)
    dargs = _check_args(g, tuple(args[i] for i in diff), "check_grads")
    d_eps, d_rtol, d_atol = _default_tolerances(dargs)
    _check_grads_of(g, dargs, order, modes, eps=d_eps if eps is None else eps,
                    rtol=d_rtol if rtol is None else rtol, atol=d_atol if atol is None else atol,
                    seed=seed)


def _default_tolerances(args) -> tuple[float, float, float]:
    """``(eps, rtol, atol)`` for the least precise floating-point dtype among ``args``."""
    bits = [np.finfo(np.dtype(leaf.dtype)).bits for leaf in _leaves(args)
            if hasattr(leaf, "dtype") and np.dtype(leaf.dtype).kind in "fc"]
    precision = min(bits, default=64)
    if precision >= 64:
        return 1e-6, 1e-5, 1e-6
    if precision >= 32:
        return 1e-3, 2e-3, 2e-3
    return 3e-2, 5e-2, 5e-2


def _check_grads_of(f, args, order, modes, *, eps, rtol, atol, seed) -> None:
    if "fwd" in modes:
        check_jvp(f, args, eps=eps, rtol=rtol, atol=atol, seed=seed)
    if "rev" in modes:
        check_vjp_fd(f, args, eps=eps, rtol=rtol, atol=atol, seed=seed)
    if modes == MODES:  # the inner-product identity: to rounding of the arguments' dtype
        exact = _default_tolerances(args)[1] <= 1e-5
        check_vjp(f, args, seed=seed, **({} if exact else dict(rtol=1e-5, atol=1e-6)))
    if order == 2:
        hvp_tol = dict(eps=max(eps, 1e-5), rtol=max(rtol, 1e-5), atol=max(atol, 1e-6),
                       seed=seed)
        out = f(*args)
        if not isinstance(out, (tuple, list, dict)) and np.ndim(out) == 0:
            for i in range(len(args)):
                check_hvp(f, args, argnum=i, **hvp_tol)
        else:
            # second order of a vector function: the HVP of <f, ybar> for a random ybar
            xp = _xp(args)
            ybars = [_random_like(_rng(seed + 1), o, xp) for o in _leaves(out)]

            def scalarized(*a):
                return sum(dnp.sum(dnp.multiply(o, y)) for o, y in zip(_leaves(f(*a)), ybars))

            for i in range(len(args)):
                check_hvp(scalarized, args, argnum=i, **hvp_tol)



def __getattr__(name: str):
    """``dualgpu.testing.strategies`` (hypothesis strategies), imported when first used:
    hypothesis costs 60 ms at import and is a test extra."""
    if name == "strategies":
        from . import strategies

        return strategies
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
