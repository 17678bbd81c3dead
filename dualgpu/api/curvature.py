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
from typing import Any

import numpy as np

from ..backends import array_backend
from ..base import tree as pytree
from ..core.ir import Aval
from ..core.trace import Tracer, current_builder
from ..errors import (
    ArgumentTypeError,
    BackendMismatchError,
    InvalidArgumentError,
    RandomInTraceError,
    ShapeMismatchError,
)
from ..fusion import memory_profile, plan_graph
from ..runtime.checks import diff_flags
from ..runtime.executor import config
from ..runtime.transformed import Transformed
from ..transforms.biharmonic import NoForwardRule, biharmonic_graph
from ..transforms.interpreter import coordinate_layout
from ..transforms.laplacian import curvature_graph
from ..transforms.separability import check_separable
from .estimators import DEFAULT_MEMORY_BUDGET, Estimator, positive_int

__all__ = ["laplacian", "biharmonic", "hessian_diag", "hessian_trace",
           "DEFAULT_MEMORY_BUDGET"]

# bytes that one chunk of random directions may use (see _chunk_size); a parameter of the
# estimators
METHODS = ("exact", "hutchinson", "hutch++")


class _Curvature(Transformed):
    """The forward Laplacian (``diag=False``) or the exact Hessian diagonal."""

    finish_places_outputs = True
    diag = False
    levels = 1             # 2: the Laplacian of the Laplacian program (the biharmonic)
    chunk_size = None      # coordinates propagated at a time (the Laplacian's options)
    memory_budget = None

    def build(self, traced, sig):
        graph = traced.graph
        if self.batch_axes is not None:
            check_separable(graph, sig.diff_inputs(), self.batch_axes, what=self.kind)
        flags = diff_flags(sig, graph)
        programs: dict = {}      # chunk size -> its graph (a budget's search builds a few)

        sigma = self._directions_aval(sig, graph, flags)

        def program(chunk):
            if chunk not in programs:
                g, wrt = graph, flags
                for _ in range(self.levels):  # the biharmonic: the Laplacian's Laplacian
                    g = curvature_graph(g, wrt, diag=self.diag, batch_axes=self.batch_axes,
                                        values=False, chunk_size=chunk, sigma=sigma)
                    wrt = wrt + [False] * (len(g.inputs) - len(wrt))  # its directions
                programs[chunk] = g
            return programs[chunk]

        forward = self._forward_program(graph, flags)
        if forward is not None:
            return forward, traced.out_tree
        chunk = self.chunk_size
        if chunk is None and self.memory_budget is not None:
            D = coordinate_layout(graph, flags, self.batch_axes)[1]
            chunk = self._fitting_chunk(program, D if sigma is None else sigma.shape[-1],
                                        "coordinate" if sigma is None else "direction")
        return program(chunk), traced.out_tree

    def _directions_aval(self, sig, graph, flags):
        """The aval of the directions input (None: the identity rows, the plain forward
        Laplacian)."""
        return None

    def _forward_program(self, graph, flags):
        """A one-pass program that replaces the levels of forward Laplacians, or None."""
        return None

    def _held(self, program) -> int:
        """Bytes ``program`` holds at once, counted on its GPU plan."""
        return memory_profile(plan_graph(program, recompute=config["recompute"]))["peak"]

    def _fitting_chunk(self, program, D: int, unit: str = "coordinate") -> int | None:
        """The chunk size for ``memory_budget``: the most coordinates at a time whose
        program (``program(chunk)``) holds at most that many bytes at once, counted on its
        GPU plan (:func:`~dualgpu.fusion.regions.memory_profile`; a bisection, the count grows
        with the chunk), then evened out over the same number of chunks
        (:func:`balanced_chunk`); None when all ``D`` fit in one pass."""
        budget = self.memory_budget
        assert budget is not None  # called with a memory budget only

        def held(chunk) -> int:
            return self._held(program(chunk))

        if D <= 1 or held(None) <= budget:
            return None
        lo, hi = 1, D - 1          # the answer is in [lo, hi] if chunk lo fits
        one = held(1)
        if one > budget:
            warnings.warn(f"{self.kind}: memory_budget={budget} bytes is less than the "
                          f"{one} bytes of one {unit} at a time; propagating one "
                          f"{unit} at a time", stacklevel=4)
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
                 memory_budget=None, sigma=None, method="exact", num_samples=None, seed=0,
                 distribution="rademacher"):
        super().__init__(fn, argnums, batch_axes=batch_axes)
        for name, value in (("chunk_size", chunk_size), ("memory_budget", memory_budget)):
            if value is not None:
                positive_int(value, name, self.kind, " or None")
        if chunk_size is not None and memory_budget is not None:
            raise InvalidArgumentError(f"{self.kind}: give chunk_size or memory_budget, not "
                                       "both")
        self.chunk_size = None if chunk_size is None else int(chunk_size)
        self.memory_budget = None if memory_budget is None else int(memory_budget)
        self.random = _RandomDirections.check(self.kind, method, num_samples, seed,
                                              distribution)
        self.sigma = None if sigma is None else _check_sigma(sigma, self.kind)

    def options(self) -> dict:
        opts: dict[str, Any] = {"chunk_size": self.chunk_size,
                                "memory_budget": self.memory_budget}
        if self.sigma is not None:   # the program takes S as an input: its shape and dtype
            opts["sigma"] = (tuple(self.sigma.shape), np.dtype(self.sigma.dtype).str)
        if self.random is not None:  # drawn per call: their count, not their values
            opts["hutchinson"] = self.random.num_samples
        return opts

    def _directions_aval(self, sig, graph, flags):
        if self.random is not None:   # (*batch, D, K), also for sigma @ V
            return Aval(self.random.shape(sig, self.batch_axes), _common_dtype(sig))
        if self.sigma is not None:
            return Aval(tuple(self.sigma.shape), _common_dtype(sig))
        return None

    def extra_inputs(self, sig, extra) -> list:
        if self.sigma is not None:
            S = _as_input(self.sigma, sig, self.kind, self.batch_axes)
            if self.random is None:
                return [S]
            # the randomized weighted Laplacian: S V / sqrt(K), V (R, K) per instance
            rows = int(S.shape[-1])
            V = self.random.draw(self.random.rng(self.kind), sig, self.batch_axes, rows)
            if sig.backend.on_device:
                V = sig.backend.to_device(V)
            return [S @ V]
        if self.random is not None:   # independent directions for each level
            rng = self.random.rng(self.kind)
            return [_as_input(self.random.draw(rng, sig, self.batch_axes), sig, self.kind,
                              self.batch_axes, "the directions") for _ in range(self.levels)]
        return []

    def finish(self, compiled, sig, outs):
        return pytree.unflatten(compiled.trees, outs)


class _Biharmonic(_Laplacian):
    """``biharmonic``: the forward Laplacian of the forward-Laplacian program, one program;
    with ``method="hutchinson"`` each level has its own random directions."""

    kind = "biharmonic"
    levels = 2

    def _forward_program(self, graph, flags):
        """The forward biharmonic (:mod:`dualgpu.transforms.biharmonic`) for the exact
        method without ``chunk_size``, when every op of ``fn`` has its rule and the program
        fits ``memory_budget`` (if given); else None: nested forward Laplacians."""
        if self.random is not None or self.chunk_size is not None:
            return None
        try:
            program = biharmonic_graph(graph, flags, batch_axes=self.batch_axes)
        except NoForwardRule:
            return None
        if self.memory_budget is not None and self._held(program) > self.memory_budget:
            return None
        return program


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


# ------------------------------------------------------------------- weighted and random
def _instance_shapes(sig, batch_axes) -> tuple[int, set]:
    """``D`` (the differentiated coordinates, per instance with ``batch_axes``) and the
    batch shapes of the differentiated inputs (their batch axes in the order of
    ``batch_axes``, as the result's)."""
    D, batches = 0, set()
    for x, d in zip(sig.inputs, sig.diff):
        if not d:
            continue
        shape = tuple(np.shape(x))
        axes = () if batch_axes is None else tuple(a % len(shape) for a in batch_axes)
        D += int(np.prod([s for a, s in enumerate(shape) if a not in axes], dtype=np.int64))
        batches.add(tuple(shape[a] for a in axes))
    return D, batches


def _common_dtype(sig):
    """The dtype of the directions: that of the differentiated inputs (float32 stays
    float32)."""
    return np.result_type(*[np.dtype(x.dtype) for x, d in zip(sig.inputs, sig.diff) if d])


def _check_sigma(sigma, what: str):
    """``sigma`` as an array (a traced value stays one): real floating point, at least 2-d
    (the shape against the arguments is checked per call)."""
    if not isinstance(sigma, Tracer) and not hasattr(sigma, "dtype"):
        try:
            sigma = np.asarray(sigma)
        except Exception:   # noqa: BLE001 -- any failure is the same bad argument
            raise ArgumentTypeError(f"{what}: sigma must be an array of shape (D, R), got "
                                    f"{type(sigma).__name__}") from None
    if not hasattr(sigma, "shape") or np.dtype(sigma.dtype).kind != "f":
        raise ArgumentTypeError(f"{what}: sigma must be a real floating-point array (D, R), got "
                                f"dtype {getattr(sigma, 'dtype', type(sigma).__name__)}")
    if sigma.ndim < 2:
        raise ShapeMismatchError(f"{what}: sigma must have shape (D, R) (its columns are the "
                                 f"directions), or (*batch, D, R) with batch_axes; got shape "
                                 f"{tuple(sigma.shape)}")
    return sigma


def _as_input(S, sig, what: str, batch_axes=None, name: str = "sigma"):
    """``S`` checked against the call (shape ``(D, R)`` or ``(*batch, D, R)``), on the
    call's backend, in the dtype of the differentiated inputs."""
    D, batches = _instance_shapes(sig, batch_axes)
    shape = tuple(S.shape)
    allowed = [(D,)] + [(*b, D) for b in sorted(batches) if b and batch_axes is not None]
    if shape[:-1] not in allowed or shape[-1] < 1:
        want = " or ".join(str(a + ("R",)).replace("'R'", "R") for a in allowed)
        per = " per instance" if batch_axes is not None else ""
        raise ShapeMismatchError(f"{what}: {name} must have shape {want} (D = {D} "
                                 f"differentiated coordinates{per}, R >= 1 directions), got "
                                 f"{shape}")
    dtype = _common_dtype(sig)
    if isinstance(S, Tracer):
        return S if S.dtype == dtype else S.astype(dtype)
    b = array_backend(S)
    if b is None:
        raise ArgumentTypeError(f"{what}: {name} must be an array, got {type(S).__name__}")
    if b is not sig.backend:
        if sig.backend.on_device and b.name == "numpy":
            S = sig.backend.to_device(np.asarray(S))
        else:
            raise BackendMismatchError(f"{what}: {name} is a {b.name} array but the arguments "
                                       f"are {sig.backend.name} arrays")
    return S if S.dtype == dtype else S.astype(dtype)


class _RandomDirections:
    """``method="hutchinson"``: ``num_samples`` random directions (Rademacher or Gaussian)
    scaled by ``1/sqrt(num_samples)``, drawn on the host with
    ``np.random.default_rng(seed)`` at each call; one set per instance with batch_axes."""

    DISTRIBUTIONS = ("rademacher", "gaussian")

    def __init__(self, num_samples: int, seed, distribution: str):
        self.num_samples, self.seed, self.distribution = num_samples, seed, distribution

    @classmethod
    def check(cls, what, method, num_samples, seed, distribution):
        """None for ``method="exact"``; the checked options of ``"hutchinson"``."""
        if method not in ("exact", "hutchinson"):
            raise InvalidArgumentError(f"{what}: method must be 'exact' or 'hutchinson', got "
                                       f"{method!r}")
        if method == "exact":
            if num_samples is not None:
                raise InvalidArgumentError(f"{what}: num_samples is a parameter of "
                                           "method='hutchinson' (the exact form takes none)")
            return None
        num_samples = 64 if num_samples is None else num_samples
        positive_int(num_samples, "num_samples", what)
        if seed is not None and (not isinstance(seed, (int, np.integer))
                                 or isinstance(seed, bool)):
            raise ArgumentTypeError(f"{what}: seed must be an int or None, got {seed!r}")
        if distribution not in cls.DISTRIBUTIONS:
            raise InvalidArgumentError(f"{what}: distribution must be 'rademacher' or "
                                       f"'gaussian', got {distribution!r}")
        return cls(int(num_samples), seed, distribution)

    def shape(self, sig, batch_axes, rows: int | None = None) -> tuple:
        """``(*batch, rows, K)``; ``rows`` defaults to ``D``."""
        D, batches = _instance_shapes(sig, batch_axes)
        batch = next(iter(batches)) if batch_axes is not None and len(batches) == 1 else ()
        return tuple(batch) + (D if rows is None else rows, self.num_samples)

    def rng(self, what: str = "laplacian"):
        if self.seed is None and current_builder() is not None:
            raise RandomInTraceError(
                f"{what}: method='hutchinson' with seed=None draws fresh directions per call, "
                "but this call is traced (inside grad, jit, ...): the draws would be frozen "
                "into the compiled program. Give a seed (the directions are then fixed by it, "
                "traced or not), or draw the directions V (D, K) outside and pass "
                "sigma=V / sqrt(K) as a traced argument")
        return np.random.default_rng(self.seed)

    def draw(self, rng, sig, batch_axes, rows: int | None = None):
        shape = self.shape(sig, batch_axes, rows)
        dtype = _common_dtype(sig)
        if self.distribution == "gaussian":
            V = rng.standard_normal(shape)
        else:
            V = rng.integers(0, 2, size=shape) * 2.0 - 1.0
        return (V / np.sqrt(self.num_samples)).astype(dtype)


def laplacian(fn: Callable | None = None, argnums=0, batch_axes=None, *,
              chunk_size: int | None = None, memory_budget: int | None = None,
              sigma=None, method: str = "exact", num_samples: int | None = None,
              seed: int | None = 0, distribution: str = "rademacher", samples=None):
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

    ``sigma`` (an array ``S`` of shape ``(D, R)``): the weighted Laplacian
    ``tr(S S^T H) = sum_r s_r^T H s_r`` over the columns ``s_r`` of ``S`` (the diffusion
    term ``tr(sigma sigma^T H)`` of a Fokker-Planck or Kolmogorov equation, ``D`` the
    flattened differentiated coordinates, per instance with ``batch_axes``), by seeding the
    Jacobians with the ``R`` directions instead of the ``D`` rows of the identity: the cost
    grows with ``R``. With ``batch_axes``, ``S`` may be ``(*batch, D, R)``, one matrix per
    instance (``sigma(x)``; its batch axes are the argument's, in the order of
    ``batch_axes``, as the result's). ``S`` is an input of the program, not a constant: it
    may be a traced value (computed in a ``grad``-ed loss, its gradient flows), a new ``S``
    of the same shape reuses the program, and ``chunk_size`` / ``memory_budget`` count
    directions. It is cast to the dtype of the differentiated argument (a float32 program
    stays float32).

    ``method="hutchinson"``: an unbiased estimate of the Laplacian, the weighted Laplacian
    with ``S = V / sqrt(K)`` for ``K = num_samples`` random directions ``V`` (Rademacher;
    ``distribution="gaussian"``: standard normal), ``E[V V^T] / K = I`` -- one forward pass
    whose cost grows with ``K`` instead of ``D`` (the randomized collapsed Taylor mode of
    Dangel et al. 2025). The directions are drawn on the host with
    ``np.random.default_rng(seed)`` at every call (as :func:`hessian_trace`): a given
    ``seed`` gives the same directions at every call, for NumPy and CuPy arguments alike
    (reproducible, like a fixed JAX key); ``seed=None`` draws fresh ones per call, which a
    traced call refuses (:class:`~dualgpu.RandomInTraceError`: the draws would be frozen
    into the program). With ``batch_axes`` every instance has its own directions. For new
    directions at every step of a jitted or differentiated loss, draw ``V`` outside and
    pass ``sigma=V / sqrt(K)`` as a traced argument. ``samples`` is an alias of
    ``num_samples`` (the name in issue 28); default 64. With ``sigma`` too, the estimate is of
    the weighted Laplacian: the directions are ``S V / sqrt(K)``, ``V`` of shape ``(R, K)``
    (per instance with ``batch_axes``), ``K`` directions instead of ``R``.

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
        >>> S = np.array([[1.0], [1.0]])                # one direction (1, 1): H = diag(6x)
        >>> dg.laplacian(u, sigma=S)(np.array([1.0, 2.0]))
        array(18.)
        >>> dg.laplacian(u, sigma=np.array([[2.0], [0.0]]))(np.array([1.0, 2.0]))
        array(24.)
        >>> est = dg.laplacian(u, method="hutchinson", num_samples=4, seed=0)
        >>> est(np.array([1.0, 2.0]))                   # exact for a diagonal Hessian
        array(18.)
    """
    num_samples = _samples_alias(num_samples, samples, "laplacian")
    if fn is None:
        return lambda f: laplacian(f, argnums, batch_axes, chunk_size=chunk_size,
                                   memory_budget=memory_budget, sigma=sigma, method=method,
                                   num_samples=num_samples, seed=seed,
                                   distribution=distribution)
    return _Laplacian(fn, argnums, batch_axes=batch_axes, chunk_size=chunk_size,
                      memory_budget=memory_budget, sigma=sigma, method=method,
                      num_samples=num_samples, seed=seed, distribution=distribution)


def biharmonic(fn: Callable | None = None, argnums=0, batch_axes=None, *,
               chunk_size: int | None = None, memory_budget: int | None = None,
               method: str = "exact", num_samples: int | None = None, seed: int | None = 0,
               distribution: str = "rademacher", samples=None):
    """The biharmonic ``Δ²f = sum_ij d4f/dx_i2 dx_j2`` of ``fn`` with respect to argument
    ``argnums`` (all its coordinates; per instance with ``batch_axes``, after the
    separability check), for any output shape (one value per output element).

    ``method="exact"``: one forward pass, no Hessian and no nested differentiation at run
    time. Every value carries its Jacobian rows, the upper triangle of its Hessian
    (``D (D + 1) / 2`` rows: the Hessian is symmetric), its Laplacian, the gradient of its
    Laplacian and its biharmonic, with the fourth-order chain rule applied op by op
    (:mod:`dualgpu.transforms.biharmonic`): ``3 + 2 D + D (D + 1) / 2`` value-sized arrays,
    so a dense layer ``h @ W`` costs that many matmul-equivalents (28 at ``D = 5``, 78 at
    ``D = 10``). For a function with an op that pass has no rule for (a sort, a max, a
    quotient of two differentiated values, complex values), and with ``chunk_size``, the
    program is the forward Laplacian of the forward-Laplacian program instead: ``(D + 2)^2``
    arrays (49 at ``D = 5``, 144 at ``D = 10``; less after common-subexpression elimination)
    but through every op, and in chunks. Both are cheaper than a collapsed 4th-order Taylor
    mode over the ``D^2`` directions ``e_i``, ``e_i ± e_j`` (``3 D^2 + 2``: the coefficients
    of orders 1 to 3 of each direction, the 4th collapsed over all of them, and the value),
    which :func:`~dualgpu.differential_operator` computes for any directions.
    ``chunk_size`` / ``memory_budget``: as :func:`laplacian`, applied to both levels of the
    nested form (a chunk of ``c`` coordinates at a time in each, so a call holds about
    ``c^2`` of the ``D^2`` second-level Jacobian rows); with ``memory_budget`` the one-pass
    program runs when it fits. ``method="hutchinson"``: each of the two nested Laplacians
    is estimated with its own ``num_samples`` random directions (``seed``,
    ``distribution``, ``samples`` as :func:`laplacian`; the two sets are independent, so the
    product of the two unbiased estimates is unbiased): the cost grows with
    ``num_samples^2`` instead of ``D^2``.

    Composes with ``grad`` (a PINN loss of the plate equation ``Δ²w = q``), ``jit``,
    ``vmap`` and ``batch_axes``.

    Example::

        >>> r4 = lambda x: np.sum(x ** 2) ** 2         # |x|^4: Δ² = 8 D (D + 2)
        >>> dg.biharmonic(r4)(np.array([0.3, -1.0, 2.0]))
        array(120.)
        >>> pts = np.array([[1.0, 2.0], [0.5, 0.0]])
        >>> dg.biharmonic(lambda p: p[:, 0] ** 2 * p[:, 1] ** 2, batch_axes=0)(pts)
        array([8., 8.])
    """
    num_samples = _samples_alias(num_samples, samples, "biharmonic")
    if fn is None:
        return lambda f: biharmonic(f, argnums, batch_axes, chunk_size=chunk_size,
                                    memory_budget=memory_budget, method=method,
                                    num_samples=num_samples, seed=seed,
                                    distribution=distribution)
    return _Biharmonic(fn, argnums, batch_axes=batch_axes, chunk_size=chunk_size,
                       memory_budget=memory_budget, method=method, num_samples=num_samples,
                       seed=seed, distribution=distribution)


def _samples_alias(num_samples, samples, what):
    if samples is None:
        return num_samples
    if num_samples is not None:
        raise InvalidArgumentError(f"{what}: give num_samples or its alias samples, not both")
    return samples


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
    return Estimator(fn, argnums, "diag", batch_axes, num_samples, seed, memory_budget,
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
    return Estimator(fn, argnums, method, batch_axes, num_samples, seed, memory_budget,
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




