"""autograd's import names on dualgpu: the table of docs/coming_from.md ("autograd") made
into ``sys.modules`` entries, so that an autograd program runs without editing its imports.

``autograd.numpy`` is NumPy itself, ``autograd.scipy.*`` is SciPy itself, and the transforms
are dualgpu's under autograd's names (``dg.grad`` takes ``argnum=``, ``dg.elementwise_grad``,
``dg.make_hvp``, ...; ``autograd.extend``'s ``primitive``/``defvjp`` are
dualgpu.autograd_compat's). What the table does not list is written here from autograd's own
definitions (MIT licence, tests/corpus/LICENSE-autograd): ``make_vjp``'s argument order,
``misc.flatten`` (plain NumPy, traceable), the optimizers of ``autograd.misc.optimizers``
(plain NumPy loops that call the gradient) and ``misc.fixed_points`` (a primitive whose
body loops until convergence; ``vspace(x).zeros()`` as ``np.zeros_like``, ``vs.add`` as
``+``). No autograd code runs.
"""
from __future__ import annotations

import builtins
import functools
import itertools
import types

import numpy as np
import scipy.integrate
import scipy.linalg
import scipy.signal
import scipy.special
import scipy.stats

import dualgpu as dg
from dualgpu import autograd_compat


def make_vjp(fun, argnum=0):
    """autograd's ``make_vjp(f)(*args) -> (pullback, out)``: ``dg.vjp``'s pair, swapped."""
    def at(*args):
        out, pullback = dg.vjp(lambda x: fun(*args[:argnum], x, *args[argnum + 1:]),
                               args[argnum])
        return (lambda g: pullback(g)[0]), out

    return at


def check_grads(fun, argnum=0, modes=("fwd", "rev"), order=2):
    """autograd's ``check_grads(f, argnum, modes, order)(*args)``: dualgpu's checker, of
    argument ``argnum`` (an int or a tuple)."""
    def check(*args, **kwargs):
        dg.testing.check_grads(lambda *a: fun(*a, **kwargs), args, order=min(order, 2),
                               modes=tuple(modes), argnums=argnum)

    return check


def combo_check(fun, *args, **kwargs):
    """autograd's ``combo_check``: ``check_grads`` at every combination of the values
    given for each argument and keyword."""
    def check(*values, **options):
        keyed = [[(k, x) for x in xs] for k, xs in options.items()]
        for combo in itertools.product(*values):
            for chosen in itertools.product(*keyed):
                check_grads(fun, *args, **kwargs)(*combo, **dict(chosen))

    return check


# ------------------------------------------------------------------ autograd.misc (NumPy)
def _flatten(value):
    t = type(value)
    if t in (list, tuple):
        parts = [_flatten(v) for v in value]
    elif t is dict:
        parts = [_flatten(value[k]) for k in sorted(value)]
    else:
        return np.ravel(value)
    return np.concatenate(parts) if parts else np.array([])


def _unflatten_like(value, flat, start=0):
    t = type(value)
    if t in (list, tuple):
        out = []
        for v in value:
            item, start = _unflatten_like(v, flat, start)
            out.append(item)
        return t(out), start
    if t is dict:
        items = {}
        for k in sorted(value):
            items[k], start = _unflatten_like(value[k], flat, start)
        return items, start
    size = int(np.size(value))
    return np.reshape(flat[start:start + size], np.shape(value)), start + size


def flatten(value):
    """autograd's ``flatten``: ``(1-d array, unflatten)``, dict keys sorted."""
    return _flatten(value), lambda flat: _unflatten_like(value, flat)[0]


def flatten_func(func, example):
    """autograd's ``flatten_func``: ``func`` of a flat vector, its ``unflatten`` and the
    flat ``example``."""
    _ex, unflatten = flatten(example)
    _func = lambda _x, *args: flatten(func(unflatten(_x), *args))[0]
    return _func, unflatten, _ex


def unflatten_optimizer(optimize):
    @functools.wraps(optimize)
    def _optimize(grad, x0, callback=None, *args, **kwargs):
        _x0, unflatten = flatten(x0)
        _grad = lambda x, i: flatten(grad(unflatten(x), i))[0]
        if callback:
            _callback = lambda x, i, g: callback(unflatten(x), i, unflatten(g))
        else:
            _callback = None
        return unflatten(optimize(_grad, _x0, _callback, *args, **kwargs))

    return _optimize


@unflatten_optimizer
def sgd(grad, x, callback=None, num_iters=200, step_size=0.1, mass=0.9):
    velocity = np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        velocity = mass * velocity - (1.0 - mass) * g
        x = x + step_size * velocity
    return x


@unflatten_optimizer
def rmsprop(grad, x, callback=None, num_iters=100, step_size=0.1, gamma=0.9, eps=10**-8):
    avg_sq_grad = np.ones(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        avg_sq_grad = avg_sq_grad * gamma + g**2 * (1 - gamma)
        x = x - step_size * g / (np.sqrt(avg_sq_grad) + eps)
    return x


@unflatten_optimizer
def adam(grad, x, callback=None, num_iters=100, step_size=0.001, b1=0.9, b2=0.999, eps=10**-8):
    m = np.zeros(len(x))
    v = np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * (g**2) + b2 * v
        mhat = m / (1 - b1 ** (i + 1))
        vhat = v / (1 - b2 ** (i + 1))
        x = x - step_size * mhat / (np.sqrt(vhat) + eps)
    return x


# ------------------------------------------------------------------ autograd.misc.fixed_points
@autograd_compat.primitive
def fixed_point(f, a, x0, distance, tol):
    """autograd's ``fixed_point``: iterate ``f(a)`` from ``x0`` until two iterates are
    within ``tol``; its derivative in ``a`` is the fixed point of the adjoint iteration."""
    _f = f(a)
    x, x_prev = _f(x0), x0
    while distance(x, x_prev) > tol:
        x, x_prev = _f(x), x
    return x


def fixed_point_vjp(ans, f, a, x0, distance, tol):
    def rev_iter(params):
        a, x_star, x_star_bar = params
        vjp_x, _ = make_vjp(f(a))(x_star)
        return lambda g: vjp_x(g) + x_star_bar

    vjp_a, _ = make_vjp(lambda x, y: f(x)(y))(a, ans)
    return lambda g: vjp_a(fixed_point(rev_iter, (a, ans, g), np.zeros_like(x0), distance,
                                       tol))


autograd_compat.defvjp(fixed_point, None, fixed_point_vjp, None)


# ------------------------------------------------------------------ the modules
def _module(name, **attrs):
    module = types.ModuleType(name)
    module.__path__ = []  # a package: its submodules are found in sys.modules
    # a module of this file's: code traced by dualgpu sees through it as through the user's
    # modules (``sp.special.polygamma`` of ``import autograd.scipy as sp`` is SciPy's, traced)
    module.__file__ = __file__
    module.__dict__.update(attrs)
    return module


def make_jvp(fun, argnum=0):
    """autograd's ``make_jvp(f, argnum)(*args)(v) -> (out, tangent)``: ``dg.jvp``."""
    def at(*args):
        def jvp(v):
            return dg.jvp(lambda x: fun(*args[:argnum], x, *args[argnum + 1:]),
                          (args[argnum],), (v,))

        return jvp

    return at


# autograd.numpy's own names (NumPy has no such functions): set on NumPy for the run
NUMPY_EXTRAS = {"make_diagonal": autograd_compat.make_diagonal}


def modules() -> dict[str, object]:
    """The ``sys.modules`` entries that stand for autograd."""
    transforms = dict(
        grad=dg.grad, value_and_grad=dg.value_and_grad, jacobian=dg.jacobian,
        hessian=dg.hessian, elementwise_grad=dg.elementwise_grad, deriv=dg.deriv,
        hessian_vector_product=dg.hessian_vector_product,
        hessian_tensor_product=dg.hessian_vector_product, make_hvp=dg.make_hvp,
        make_vjp=make_vjp, make_jvp=make_jvp)
    test_util = _module("autograd.test_util", check_grads=check_grads, combo_check=combo_check)
    misc_flatten = _module("autograd.misc.flatten", flatten=flatten, flatten_func=flatten_func)
    optimizers = _module("autograd.misc.optimizers", sgd=sgd, rmsprop=rmsprop, adam=adam,
                         unflatten_optimizer=unflatten_optimizer)
    fixed_points = _module("autograd.misc.fixed_points", fixed_point=fixed_point)
    misc = _module("autograd.misc", flatten=flatten, optimizers=optimizers,
                   fixed_points=fixed_points)
    builtins_ = _module("autograd.builtins", tuple=builtins.tuple, list=builtins.list,
                        dict=builtins.dict, isinstance=builtins.isinstance, type=builtins.type)
    extend = _module("autograd.extend", primitive=autograd_compat.primitive,
                     defvjp=autograd_compat.defvjp, defjvp=autograd_compat.defjvp)
    core = _module("autograd.core", primitive=autograd_compat.primitive,
                   defvjp=autograd_compat.defvjp, defjvp=autograd_compat.defjvp)
    scipy_misc = _module("autograd.scipy.misc", logsumexp=scipy.special.logsumexp)
    # autograd's own convolution (axes=, dot_axes=), not SciPy's signature
    signal = _module("autograd.scipy.signal", convolve=autograd_compat.convolve)
    scipy_ = _module("autograd.scipy", stats=scipy.stats, special=scipy.special,
                     linalg=scipy.linalg, signal=signal, integrate=scipy.integrate,
                     misc=scipy_misc)
    autograd = _module("autograd", numpy=np, scipy=scipy_, core=core, extend=extend,
                       misc=misc, builtins=builtins_,
                       test_util=test_util, tuple=builtins.tuple, list=builtins.list,
                       dict=builtins.dict, isinstance=builtins.isinstance, type=builtins.type,
                       **transforms)
    entries: dict[str, object] = {
        "autograd": autograd, "autograd.numpy": np, "autograd.numpy.random": np.random,
        "autograd.numpy.linalg": np.linalg, "autograd.scipy": scipy_,
        "autograd.scipy.stats": scipy.stats, "autograd.scipy.special": scipy.special,
        "autograd.scipy.linalg": scipy.linalg, "autograd.scipy.signal": signal,
        "autograd.scipy.integrate": scipy.integrate, "autograd.scipy.misc": scipy_misc,
        "autograd.misc": misc, "autograd.misc.flatten": misc_flatten,
        "autograd.misc.optimizers": optimizers, "autograd.misc.fixed_points": fixed_points,
        "autograd.builtins": builtins_,
        "autograd.test_util": test_util, "autograd.extend": extend, "autograd.core": core}
    for dist in ("norm", "t", "gamma", "beta", "chi2", "poisson", "multivariate_normal",
                 "dirichlet", "expon", "laplace", "cauchy", "binom", "bernoulli"):
        entries[f"autograd.scipy.stats.{dist}"] = getattr(scipy.stats, dist)
    return entries
