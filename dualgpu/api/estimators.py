"""The randomized estimators of :func:`~dualgpu.api.curvature.hessian_trace` and
:func:`~dualgpu.api.curvature.hessian_diag`: Hutchinson's and Hutch++'s, from chunks of
Hessian-vector products (one vmapped HVP program per chunk shape, sized to a memory
budget).

Example::

    >>> est = Estimator(lambda x: np.sum(x ** 2), 0, "hutchinson", None, 64, 0, None, None)
    >>> round(float(est(np.ones(3))), 6)
    6.0
"""
from __future__ import annotations

import numpy as np

from ..backends import array_backend
from ..base import tree as pytree
from ..base.cache import PROGRAMS, identity_key
from ..core.trace import Tracer
from ..errors import (
    ArgumentTypeError,
    InvalidArgumentError,
)
from ..fusion import memory_profile, plan_graph
from ..runtime.executor import config
from . import differentiation
from .differentiation import hvp
from .vectorize import vmap

DEFAULT_MEMORY_BUDGET = 1 << 30


class Estimator:
    """Hutchinson / Hutch++ estimates from chunks of Hessian-vector products. ``method`` is
    ``"hutchinson"`` or ``"hutch++"`` (:func:`hessian_trace`) or ``"diag"`` (the Hutchinson
    diagonal of :func:`hessian_diag`)."""

    def __init__(self, fn, argnums, method, batch_axes, num_samples, seed, memory_budget,
                 chunk_size):
        # the public function and the method as the user named them, for the messages
        what = "hessian_diag" if method == "diag" else "hessian_trace"
        named = "hutchinson" if method == "diag" else method
        self.what = what
        if not callable(fn):
            raise ArgumentTypeError(f"{what}: expects a function, got {type(fn).__name__}")
        if not isinstance(argnums, (int, np.integer)) or isinstance(argnums, bool) or \
                argnums < 0:
            raise ArgumentTypeError(f"{what}: method={named!r} takes one argument index as "
                                    f"argnums, got {argnums!r}")
        if batch_axes is not None:
            raise InvalidArgumentError(f"{what}: batch_axes works with method='exact' only (got "
                                       f"method={named!r})")
        positive_int(num_samples, "num_samples", what)
        if method == "hutch++" and num_samples < 3:
            raise InvalidArgumentError(f"{what}: num_samples must be at least 3 for "
                                       f"'hutch++' (a third sketches, a third projects, a third "
                                       f"estimates), got {num_samples}")
        if chunk_size is not None:
            positive_int(chunk_size, "chunk_size", what)
        if memory_budget is None:
            memory_budget = DEFAULT_MEMORY_BUDGET
        positive_int(memory_budget, "memory_budget", what)
        if seed is not None and (not isinstance(seed, (int, np.integer))
                                 or isinstance(seed, bool)):
            raise ArgumentTypeError(f"{what}: seed must be an int or None, got {seed!r}")
        self.fn, self.argnums, self.method = fn, int(argnums), method
        self.num_samples, self.seed = int(num_samples), seed
        self.memory_budget, self.chunk_size = int(memory_budget), chunk_size
        self.__name__ = f"hessian_{method}_{getattr(fn, '__name__', 'f')}"

    def __repr__(self):
        return f"<dualgpu.hessian estimator {self.method} of {getattr(self.fn, '__name__', 'f')}>"

    def __call__(self, *args, **kwargs):
        """The estimate for ``fn(*args, **kwargs)``; keyword arguments are passed through to
        ``fn``, not differentiated. A point with no coordinates has the trace 0 (of a 0 x 0
        Hessian, as ``np.trace``) and an empty diagonal."""
        if self.argnums >= len(args):
            raise ArgumentTypeError(f"{self.__name__}: argnums names argument {self.argnums}, but "
                                    f"only {len(args)} given")
        if any(isinstance(leaf, Tracer) for leaf in pytree.leaves((args, kwargs))):
            raise ArgumentTypeError(f"{self.__name__}: the estimators draw random directions and "
                                    "run on concrete arrays; they cannot be traced (use "
                                    "method='exact' inside a transformed function)")
        x = args[self.argnums]
        leaves, tree = pytree.flatten(x)
        xp = _xp_of(leaves, self.what)
        n = sum(int(np.prod(np.shape(leaf), dtype=np.int64)) for leaf in leaves)
        dtype = np.result_type(*[leaf.dtype for leaf in leaves])
        if n == 0 and self.method != "diag":  # no products to take: tr of a 0 x 0 matrix
            return xp.sum(xp.zeros(0, dtype=dtype))
        products = _Products(self, args, kwargs, leaves, tree, xp)
        est = estimate_from_products(self.method, products, n, dtype, xp, self.num_samples,
                                     self.seed)
        if self.method == "diag":
            return pytree.unflatten(tree, _split(est, leaves, xp, ()))
        return est

    def chunk_for(self, args, leaves, tree, xp, kwargs=None) -> int:
        """Directions per program: ``chunk_size``, or as many as fit ``memory_budget``. The
        bytes the vmapped HVP program holds at once, counted on its GPU plan
        (:func:`~dualgpu.fusion.regions.memory_profile`) at 2 and 4 directions, grow by the
        same amount with each direction: the budget less the fixed part, over that."""
        if self.chunk_size is not None:
            return self.chunk_size
        kwargs = kwargs or {}
        key = (HELD_BYTES, identity_key(self.fn), self.argnums, config["recompute"],
               pytree.structure((args, kwargs))) + tuple(
            (tuple(np.shape(a)), str(getattr(a, "dtype", type(a))))
            for a in pytree.leaves((args, kwargs)))

        def measure():
            two, four = (self._held(args, leaves, tree, xp, k, kwargs) for k in (2, 4))
            per = max((four - two) // 2, 1)
            return max(two - 2 * per, 0), per

        fixed, per = PROGRAMS.get_or_build(key, measure)
        return max(1, (self.memory_budget - fixed) // per)

    def _held(self, args, leaves, tree, xp, k: int, kwargs=None) -> int:
        V = pytree.unflatten(tree, [xp.zeros((k,) + tuple(np.shape(leaf)), leaf.dtype)
                               for leaf in leaves])
        g = differentiation.trace(_vmapped_hvp(self, len(args)), *args, V, kwargs or {})
        return memory_profile(plan_graph(g, recompute=config["recompute"]))["peak"]


class _KeywordsLast:
    """``(*args, v, kwargs) -> h(*args, v, **kwargs)``: the keyword arguments of ``fn``
    as one positional pytree, which ``vmap`` leaves unmapped (it maps keyword arguments
    along axis 0)."""

    _dualgpu_transform = True  # guards and names look through to fn

    def __init__(self, h):
        self.fn = h
        self.__name__ = h.__name__

    def __call__(self, *args):
        *rest, kwargs = args
        return self.fn(*rest, **kwargs)


# entries of the one cache beside the function's programs, so that an estimator made anew
# (a new seed, a new number of samples) reuses the vmapped HVP's programs and the memory
# measured for them (each was traced again per estimator: 3 traces a call)
VMAPPED_HVP = "estimators' vmapped HVP"
HELD_BYTES = "estimators' bytes held per direction"


def _vmapped_hvp(est: Estimator, n_args: int):
    """``vmap`` of the HVP over its direction (the argument after the ``n_args``; the
    keyword arguments follow, unmapped), one per function, ``argnums`` and argument count."""
    def build():
        in_axes = tuple(0 if i == n_args else None for i in range(n_args + 2))
        return vmap(_KeywordsLast(hvp(est.fn, est.argnums)), in_axes=in_axes)

    return PROGRAMS.get_or_build((VMAPPED_HVP, identity_key(est.fn), est.argnums, n_args),
                                 build)


class _Products:
    """``V -> H V`` for flat directions ``V`` of shape ``(k, n)``, in chunks, by one
    vmapped HVP program per chunk shape."""

    def __init__(self, est: Estimator, args, kwargs, leaves, tree, xp):
        self.args, self.kwargs, self.leaves, self.tree, self.xp = args, kwargs, leaves, tree, xp
        self.chunk = est.chunk_for(args, leaves, tree, xp, kwargs)
        self.prog = _vmapped_hvp(est, len(args))

    def __call__(self, V):
        xp = self.xp
        V = xp.asarray(V)
        out = []
        for lo in range(0, V.shape[0], self.chunk):
            block = V[lo:lo + self.chunk]
            v = pytree.unflatten(self.tree, _split(block, self.leaves, xp, (block.shape[0],)))
            hv = self.prog(*self.args, v, self.kwargs)
            out.append(xp.concatenate([xp.reshape(h, (block.shape[0], -1))
                                       for h in pytree.leaves(hv)], axis=1))
        return xp.concatenate(out, axis=0)


def estimate_from_products(method: str, products, n: int, dtype, xp, num_samples: int,
                           seed=None):
    """The randomized estimate of a symmetric ``n x n`` matrix ``H`` known by its products:
    ``products(V)`` is ``V @ H`` for ``(k, n)`` rows of directions (``H`` symmetric, so the
    rows ``H v``). ``method``: ``"hutchinson"`` or ``"hutch++"`` (the trace, a scalar) or
    ``"diag"`` (Hutchinson's diagonal, ``n`` entries). ``num_samples`` products in all,
    Rademacher directions from ``numpy.random.default_rng(seed)``.

    Example::

        >>> M = np.diag([1.0, 2.0, 3.0])          # Hutchinson is exact on a diagonal
        >>> float(estimate_from_products("hutchinson", lambda V: V @ M, 3, np.float64, np, 4))
        6.0
    """
    rng = np.random.default_rng(seed)
    if method == "hutch++":
        return _hutchpp(rng, num_samples, n, dtype, products, xp)
    V = _rademacher(rng, num_samples, n, dtype)
    HV = products(V)
    if method == "diag":
        return xp.mean(xp.asarray(V) * HV, axis=0)
    if method == "hutchinson":
        return xp.mean(xp.sum(xp.asarray(V) * HV, axis=1))
    raise InvalidArgumentError(f"estimate_from_products: method must be 'hutchinson', "
                               f"'hutch++' or 'diag', got {method!r}")


def _split(flat, leaves, xp, lead: tuple) -> list:
    """Columns of ``flat`` (``lead + (n,)``) split and shaped like ``leaves``."""
    parts, start = [], 0
    for leaf in leaves:
        shape = tuple(np.shape(leaf))
        m = int(np.prod(shape, dtype=np.int64))
        part = flat[..., start:start + m]
        parts.append(xp.reshape(part, lead + shape).astype(leaf.dtype, copy=False))
        start += m
    return parts


def _rademacher(rng, k: int, n: int, dtype):
    return (rng.integers(0, 2, size=(k, n)) * 2 - 1).astype(dtype)


def _hutchpp(rng, m: int, n: int, dtype, products, xp):
    """Hutch++ with ``m`` products: ``k = m // 3`` sketch and ``k`` range products, the
    remaining ``m - 2k`` for Hutchinson on the complement of the range."""
    k = m // 3
    S = _rademacher(rng, k, n, dtype)
    Y = products(S)                              # (k, n): rows are H s
    Q, _ = xp.linalg.qr(Y.T)                     # (n, k): orthonormal basis of the range
    HQ = products(Q.T)                           # (k, n)
    exact = xp.sum(Q.T * HQ)                     # tr(Q^T H Q)
    g = m - 2 * k
    G = xp.asarray(_rademacher(rng, g, n, dtype))
    G = G - (G @ Q) @ Q.T                        # (I - Q Q^T) g
    rest = xp.sum(G * products(G)) / g
    return exact + rest


def _xp_of(leaves, what: str):
    b = array_backend(leaves[0]) if leaves else None
    if b is None or b.is_sparse(leaves[0]):
        raise ArgumentTypeError(f"{what}: the differentiated argument must hold dense arrays")
    return b.xp


def positive_int(v, name, what: str, alternative: str = ""):
    """A ``TypeError`` for a value that is no int, a ``ValueError`` for one below 1."""
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
        raise ArgumentTypeError(f"{what}: {name} must be a positive int{alternative}, got "
                                f"{v!r}")
    if v < 1:
        raise InvalidArgumentError(f"{what}: {name} must be a positive int{alternative}, got "
                                   f"{v!r}")
