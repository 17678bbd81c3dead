"""Curvature without the Hessian: ``laplacian``, ``hessian_diag`` and ``hessian_trace``.

The exact forms propagate second derivatives forward in one pass
(:mod:`dualgpu.transforms.laplacian`): every value carries its Jacobian over the ``D``
input coordinates and either the sum of its pure second derivatives (the Laplacian) or each
of them (the diagonal). With ``batch_axes`` the coordinates are those of one instance
(``D`` is the per-instance dimension), after the separability check that
``hvp(batch_axes=...)`` uses: one Laplacian per collocation point, in one program.

The estimators (``method="hutchinson"`` / ``"hutch++"``) use products with the Hessian
only: one program (``vmap`` of the HVP) applied to a chunk of random directions at once,
the chunk sized to a memory budget. They are for Hessians too large for ``D`` Jacobian
columns (a network loss with respect to its parameters).
"""
from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from . import api
from . import tree as pytree
from .api import Transformed, _flags, hvp
from .backends import array_backend
from .core.trace import Tracer
from .errors import ArgumentTypeError, InvalidArgumentError
from .executor import config
from .fusion.plan import memory_profile, plan_graph
from .transforms.laplacian import coordinate_layout, curvature_graph
from .transforms.separability import check_separable
from .vectorize import vmap

__all__ = ["laplacian", "hessian_diag", "hessian_trace", "DEFAULT_MEMORY_BUDGET"]

# bytes that one chunk of random directions may use (see _chunk_size); a parameter of the
# estimators
DEFAULT_MEMORY_BUDGET = 1 << 30
METHODS = ("exact", "hutchinson", "hutch++")


class _Curvature(Transformed):
    """The forward Laplacian (``diag=False``) or the exact Hessian diagonal."""

    diag = False
    chunk_size = None      # coordinates propagated at a time (the Laplacian's options)
    memory_budget = None

    def build(self, traced, sig):
        graph = traced.graph
        if self.batch_axes is not None:
            check_separable(graph, sig.diff_inputs(), self.batch_axes, what=self.kind)
        flags = _flags(sig, graph)
        programs: dict = {}      # chunk size -> its graph (a budget's search builds a few)

        def program(chunk):
            if chunk not in programs:
                programs[chunk] = curvature_graph(graph, flags, diag=self.diag,
                                                  batch_axes=self.batch_axes, values=False,
                                                  chunk_size=chunk)
            return programs[chunk]

        chunk = self.chunk_size
        if chunk is None and self.memory_budget is not None:
            D = coordinate_layout(graph, flags, self.batch_axes)[1]
            chunk = self._fitting_chunk(program, D)
        return program(chunk), traced.out_tree

    def _fitting_chunk(self, program, D: int) -> int | None:
        """The chunk size for ``memory_budget``: the most coordinates at a time whose
        program (``program(chunk)``) holds at most that many bytes at once, counted on its
        GPU plan (:func:`~dualgpu.fusion.plan.memory_profile`; a bisection, the count grows
        with the chunk), then evened out over the same number of chunks
        (:func:`balanced_chunk`); None when all ``D`` fit in one pass."""
        budget = self.memory_budget

        def held(chunk) -> int:
            plan = plan_graph(program(chunk), recompute=config["recompute"])
            return memory_profile(plan)["peak"]

        if D <= 1 or held(None) <= budget:
            return None
        lo, hi = 1, D - 1          # the answer is in [lo, hi] if chunk lo fits
        one = held(1)
        if one > budget:
            warnings.warn(f"{self.kind}: memory_budget={budget} bytes is less than the "
                          f"{one} bytes of one coordinate at a time; propagating one "
                          f"coordinate at a time", stacklevel=4)
            return 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if held(mid) <= budget:
                lo = mid
            else:
                hi = mid - 1
        return balanced_chunk(D, lo)


class _Laplacian(_Curvature):
    kind = "laplacian"

    def __init__(self, fn, argnums=0, *, batch_axes=None, chunk_size=None,
                 memory_budget=None):
        super().__init__(fn, argnums, batch_axes=batch_axes)
        for name, value in (("chunk_size", chunk_size), ("memory_budget", memory_budget)):
            if value is not None:
                _positive_int(value, name, "laplacian", " or None")
        if chunk_size is not None and memory_budget is not None:
            raise InvalidArgumentError("laplacian: give chunk_size or memory_budget, not both")
        self.chunk_size = None if chunk_size is None else int(chunk_size)
        self.memory_budget = None if memory_budget is None else int(memory_budget)

    def options(self) -> dict:
        return {"chunk_size": self.chunk_size, "memory_budget": self.memory_budget}

    def finish(self, compiled, sig, outs):
        return pytree.unflatten(compiled.trees, outs)


class _ExactTrace(_Laplacian):
    """``hessian_trace(method="exact")``: the forward Laplacian, named as the user called it
    (in its errors and its programs' names)."""

    kind = "hessian_trace"


class _HessianDiag(_Curvature):
    kind = "hessian_diag"
    diag = True

    def finish(self, compiled, sig, outs):
        tree = compiled.trees
        n, k = tree.num_leaves, sum(sig.diff)
        per_out = []
        for j in range(n):
            values = outs[j * k:(j + 1) * k]
            per = [sig.per_argument(values, a, repackage=False) for a in self.argnums]
            per_out.append(tuple(per) if self.argnums_tuple else per[0])
        return pytree.unflatten(tree, per_out)


def laplacian(fn: Callable | None = None, argnums=0, batch_axes=None, *,
              chunk_size: int | None = None, memory_budget: int | None = None):
    """The Laplacian ``sum_d d2f/dx_d2`` of ``fn`` with respect to argument ``argnums``
    (all coordinates of all the differentiated arguments), by forward-Laplacian
    propagation: one pass, no Hessian, no nested differentiation.

    ``fn`` may return any shape: the result has the output's shape, one Laplacian per output
    element. With ``batch_axes`` (the instance axes of the differentiated argument, as in
    ``hvp``), ``fn`` returns one value per instance and the result is the per-instance
    Laplacian (``D`` is the instance dimension); dualgpu checks on the graph that ``fn``
    does not couple instances. Composes with ``grad`` and ``jit`` (a PINN loss).

    ``chunk_size``: propagate that many coordinates at a time, one chunk after the other in
    the same program, and sum the chunks' Laplacians (exact: the Laplacian is a sum over
    coordinates). A call then holds the Jacobians of one chunk instead of all ``D``: less
    memory (about ``chunk_size / D`` of the Jacobians' share) for a few more, narrower
    products. The values are computed once. ``memory_budget`` (bytes; instead of
    ``chunk_size``): the most coordinates at a time whose program holds at most that much
    at once, counted on the program's GPU plan when it is built (the values alive at once;
    the arguments, cuBLAS's workspace and the memory pool's rounding come on top); one pass
    when everything fits.

    Example::

        >>> import numpy as np, dualgpu as dg
        >>> u = lambda x: np.sum(x ** 3)               # Laplacian 6 * sum(x)
        >>> dg.laplacian(u)(np.array([1.0, 2.0]))
        array(18.)
        >>> pts = np.array([[1.0, 2.0], [0.0, 3.0]])   # two points, one per row
        >>> dg.laplacian(lambda p: np.sum(p ** 3, axis=1), batch_axes=0)(pts)
        array([18., 18.])
        >>> dg.laplacian(lambda p: np.sum(p ** 3, axis=1), batch_axes=0, chunk_size=1)(pts)
        array([18., 18.])
        >>> dg.laplacian(lambda p: np.sum(p ** 3, axis=1), batch_axes=0,
        ...              memory_budget=1 << 20)(pts)
        array([18., 18.])
    """
    if fn is None:
        return lambda f: laplacian(f, argnums, batch_axes, chunk_size=chunk_size,
                                   memory_budget=memory_budget)
    return _Laplacian(fn, argnums, batch_axes=batch_axes, chunk_size=chunk_size,
                      memory_budget=memory_budget)


def hessian_diag(fn: Callable | None = None, argnums=0, batch_axes=None, *,
                 method: str = "exact", num_samples: int = 64, seed: int | None = 0,
                 memory_budget: int | None = None, chunk_size: int | None = None):
    """The diagonal of the Hessian of ``fn`` with respect to argument ``argnums``.

    ``method="exact"``: the pure second derivatives propagated forward in one pass (the
    Laplacian's machinery without the sum over coordinates); the result has shape
    ``out.shape + x.shape`` (``x.shape`` for a scalar ``fn``; per instance, shaped like
    ``x``, with ``batch_axes``). ``method="hutchinson"``: the estimate
    ``mean_s v_s * (H v_s)`` over ``num_samples`` Rademacher directions (scalar ``fn``;
    see :func:`hessian_trace` for ``seed``, ``memory_budget`` and ``chunk_size``).

    Example::

        >>> dg.hessian_diag(lambda x: np.sum(x ** 3) + x[0] * x[1])(np.array([1.0, 2.0]))
        array([ 6., 12.])
    """
    _check_method(method, "hessian_diag")
    if fn is None:
        return lambda f: hessian_diag(f, argnums, batch_axes, method=method,
                                      num_samples=num_samples, seed=seed,
                                      memory_budget=memory_budget, chunk_size=chunk_size)
    if method == "exact":
        for name, value in (("chunk_size", chunk_size), ("memory_budget", memory_budget)):
            if value is not None:
                raise ArgumentTypeError(f"hessian_diag: {name} is a parameter of "
                                        f"method='hutchinson' (the exact diagonal is one pass)")
        return _HessianDiag(fn, argnums, batch_axes=batch_axes)
    if method == "hutch++":
        raise InvalidArgumentError("hessian_diag: method must be 'exact' or 'hutchinson' "
                                   "('hutch++' estimates traces only)")
    return _Estimator(fn, argnums, "diag", batch_axes, num_samples, seed, memory_budget,
                      chunk_size)


def hessian_trace(fn: Callable | None = None, argnums=0, batch_axes=None, *,
                  method: str = "exact", num_samples: int = 64, seed: int | None = 0,
                  memory_budget: int | None = None, chunk_size: int | None = None):
    """The trace of the Hessian of a scalar ``fn`` with respect to argument ``argnums``.

    * ``"exact"``: the forward Laplacian (one pass; the cost grows with the number of
      coordinates ``D``); with ``batch_axes``, one trace per instance.
    * ``"hutchinson"``: ``mean_s v_s . H v_s`` over ``num_samples`` Rademacher directions.
    * ``"hutch++"`` (Meyer et al. 2021): a third of the products sketch the top of the
      spectrum (``Q = qr(H S)``, trace taken exactly on it), the rest estimate the trace of
      the complement by Hutchinson; a much smaller variance when the spectrum decays.

    The estimators draw their directions on the host with ``np.random.default_rng(seed)``
    (the same directions for NumPy and CuPy arguments; ``seed=None``: fresh ones) and run
    all products of a chunk as one program (``vmap`` of the HVP). A chunk holds
    ``chunk_size`` directions, or as many as fit ``memory_budget`` bytes (default
    :data:`DEFAULT_MEMORY_BUDGET`, 1 GiB) by the count of the values the vmapped HVP program
    holds at once on its GPU plan. With ``"exact"``, ``chunk_size`` and
    ``memory_budget`` are :func:`laplacian`'s: the coordinates propagated at a time, or as
    many as fit the budget (one pass when neither is given). The differentiated argument may
    be a pytree (the trace is over all its leaves).

    Example::

        >>> f = lambda x: np.sum(x ** 4)                  # H = diag(12 x^2)
        >>> float(dg.hessian_trace(f)(np.array([1.0, 2.0])))
        60.0
        >>> est = dg.hessian_trace(f, method="hutchinson", num_samples=8, seed=0)
        >>> float(est(np.array([1.0, 2.0])))              # exact for a diagonal Hessian
        60.0
    """
    _check_method(method, "hessian_trace")
    if fn is None:
        return lambda f: hessian_trace(f, argnums, batch_axes, method=method,
                                       num_samples=num_samples, seed=seed,
                                       memory_budget=memory_budget, chunk_size=chunk_size)
    if method == "exact":
        return _ExactTrace(fn, argnums, batch_axes=batch_axes, chunk_size=chunk_size,
                           memory_budget=memory_budget)
    return _Estimator(fn, argnums, method, batch_axes, num_samples, seed, memory_budget,
                      chunk_size)


def balanced_chunk(D: int, widest: int) -> int:
    """The chunk size that covers ``D`` coordinates in as few chunks as ``widest`` does,
    with widths as even as possible (so no chunk is a narrow remainder, and the widest is
    no wider than needed).

    Example::

        >>> balanced_chunk(50, 47), balanced_chunk(50, 25), balanced_chunk(50, 17)
        (25, 25, 17)
    """
    chunks = -(-D // widest)
    return -(-D // chunks)


def _check_method(method, what):
    """``method`` is one that ``what`` (``"hessian_trace"`` or ``"hessian_diag"``) offers;
    the error lists those, and sends a trace-only method to :func:`hessian_trace`."""
    offered = METHODS if what == "hessian_trace" else ("exact", "hutchinson")
    if isinstance(method, str) and method in offered:
        return
    hint = (" ('hutch++' estimates traces only: dg.hessian_trace(f, method='hutch++'))"
            if method == "hutch++" else "")
    raise InvalidArgumentError(f"{what}: method must be one of "
                               f"{', '.join(map(repr, offered))}, got {method!r}{hint}")


# ------------------------------------------------------------------------------ estimators
class _Estimator:
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
        _positive_int(num_samples, "num_samples", what)
        if method == "hutch++" and num_samples < 3:
            raise InvalidArgumentError(f"{what}: num_samples must be at least 3 for "
                                       f"'hutch++' (a third sketches, a third projects, a third "
                                       f"estimates), got {num_samples}")
        if chunk_size is not None:
            _positive_int(chunk_size, "chunk_size", what)
        if memory_budget is None:
            memory_budget = DEFAULT_MEMORY_BUDGET
        _positive_int(memory_budget, "memory_budget", what)
        if seed is not None and (not isinstance(seed, (int, np.integer))
                                 or isinstance(seed, bool)):
            raise ArgumentTypeError(f"{what}: seed must be an int or None, got {seed!r}")
        self.fn, self.argnums, self.method = fn, int(argnums), method
        self.num_samples, self.seed = int(num_samples), seed
        self.memory_budget, self.chunk_size = int(memory_budget), chunk_size
        self.__name__ = f"hessian_{method}_{getattr(fn, '__name__', 'f')}"
        self._products: dict = {}
        self._per_sample: dict = {}

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
        rng = np.random.default_rng(self.seed)
        products = _Products(self, args, kwargs, leaves, tree, xp)
        if self.method == "diag":
            V = _rademacher(rng, self.num_samples, n, dtype)
            HV = products(V)
            est = xp.mean(xp.asarray(V) * HV, axis=0)
            return pytree.unflatten(tree, _split(est, leaves, xp, ()))
        if self.method == "hutchinson":
            V = _rademacher(rng, self.num_samples, n, dtype)
            return xp.mean(xp.sum(xp.asarray(V) * products(V), axis=1))
        return _hutchpp(rng, self.num_samples, n, dtype, products, xp)

    def chunk_for(self, args, leaves, tree, xp, kwargs=None) -> int:
        """Directions per program: ``chunk_size``, or as many as fit ``memory_budget``. The
        bytes the vmapped HVP program holds at once, counted on its GPU plan
        (:func:`~dualgpu.fusion.plan.memory_profile`) at 2 and 4 directions, grow by the
        same amount with each direction: the budget less the fixed part, over that."""
        if self.chunk_size is not None:
            return self.chunk_size
        kwargs = kwargs or {}
        key = (pytree.structure((args, kwargs)),) + tuple(
            (tuple(np.shape(a)), str(getattr(a, "dtype", type(a))))
            for a in pytree.leaves((args, kwargs)))
        cost = self._per_sample.get(key)
        if cost is None:
            two, four = (self._held(args, leaves, tree, xp, k, kwargs) for k in (2, 4))
            per = max((four - two) // 2, 1)
            self._per_sample[key] = cost = (max(two - 2 * per, 0), per)
        fixed, per = cost
        return max(1, (self.memory_budget - fixed) // per)

    def _held(self, args, leaves, tree, xp, k: int, kwargs=None) -> int:
        V = pytree.unflatten(tree, [xp.zeros((k,) + tuple(np.shape(leaf)), leaf.dtype)
                               for leaf in leaves])
        g = api.trace(_vmapped_hvp(self, len(args)), *args, V, kwargs or {})
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


def _vmapped_hvp(est: _Estimator, n_args: int):
    """``vmap`` of the HVP over its direction (the argument after the ``n_args``; the
    keyword arguments follow, unmapped), one per estimator and argument count."""
    prog = est._products.get(n_args)
    if prog is None:
        in_axes = tuple(0 if i == n_args else None for i in range(n_args + 2))
        prog = est._products[n_args] = vmap(_KeywordsLast(hvp(est.fn, est.argnums)),
                                            in_axes=in_axes)
    return prog


class _Products:
    """``V -> H V`` for flat directions ``V`` of shape ``(k, n)``, in chunks, by one
    vmapped HVP program per chunk shape."""

    def __init__(self, est: _Estimator, args, kwargs, leaves, tree, xp):
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


def _positive_int(v, name, what: str, alternative: str = ""):
    """A ``TypeError`` for a value that is no int, a ``ValueError`` for one below 1."""
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
        raise ArgumentTypeError(f"{what}: {name} must be a positive int{alternative}, got "
                                f"{v!r}")
    if v < 1:
        raise InvalidArgumentError(f"{what}: {name} must be a positive int{alternative}, got "
                                   f"{v!r}")
