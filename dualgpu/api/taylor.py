"""Taylor mode: ``jet`` (JAX's ``jax.experimental.jet.jet``) and the collapsed Taylor
operators ``differential_operator`` (docs/taylor.md).

Both propagate univariate Taylor coefficients through the traced graph in one forward pass
(:mod:`dualgpu.transforms.taylor`); both are compiled and cached like every transform (a
jet of the same function with the same shapes and order traces once).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..backends import array_backend
from ..base import tree as pytree
from ..core.trace import Tracer
from ..errors import (
    ArgumentTypeError,
    BackendMismatchError,
    IntegerInputError,
    InvalidArgumentError,
    ShapeMismatchError,
)
from ..runtime.checks import diff_flags, is_integer_like
from ..runtime.signature import FLOAT0
from ..runtime.transformed import Transformed
from ..transforms.separability import check_separable
from ..transforms.taylor import jet_graph, operator_graph

__all__ = ["jet", "differential_operator", "biharmonic_directions"]


class _Jet(Transformed):
    """``(f(*primals), series_out)``: every leaf of every primal carries ``order`` terms."""

    kind = "jet"

    def __init__(self, fn, argnums, order: int):
        super().__init__(fn, argnums)
        self.order = order

    def options(self) -> dict:
        return {"order": self.order}

    def split(self, args):
        return args[0], args[1]

    def extra_inputs(self, sig, series):
        K = self.order
        for k in range(K):
            _same_dtypes(sig, tuple(terms[k] for terms in series), k)
        per_term = [self._directions(sig, tuple(terms[k] for terms in series),
                                     f"series term {k}") for k in range(K)]
        return [per_term[k][j] for j in range(len(per_term[0])) for k in range(K)]

    def build(self, traced, sig):
        main, _, tree, _ = traced.split_aux(False, self.__name__)
        return jet_graph(main, diff_flags(sig, main), self.order), tree

    def finish(self, compiled, sig, outs):
        tree, K = compiled.trees, self.order
        n = tree.num_leaves
        primal = outs[:n]
        terms = []
        for o in range(n):
            block = outs[n + o * K:n + (o + 1) * K]
            if is_integer_like(primal[o]):   # an integer output: float0 terms, as jvp
                block = [np.zeros(np.shape(t), dtype=FLOAT0) for t in block]
            terms.append(list(block))
        return pytree.unflatten(tree, primal), pytree.unflatten(tree, terms)


def _same_dtypes(sig, terms: tuple, k: int) -> None:
    """A series term's arrays have their primals' dtypes (Python numbers take the primal's):
    a float64 term of a float32 primal is refused, as the documentation says, not cast."""
    for a, term in enumerate(terms):
        primals = [sig.inputs[j] for j, d in enumerate(sig.diff)
                   if d and sig.arg_of_input[j] == a]
        for x, v in zip(primals, pytree.flatten(term)[0]):
            dtype = getattr(v, "dtype", None)
            if dtype is not None and np.dtype(dtype) != np.dtype(x.dtype):
                raise ShapeMismatchError(
                    f"jet: series term {k} for argument {a} has dtype {np.dtype(dtype)}, but "
                    f"the argument has dtype {np.dtype(x.dtype)}; give the series the "
                    f"primal's dtype (.astype(np.{np.dtype(x.dtype).name}))")


def jet(fun: Callable, primals: Sequence[Any], series: Sequence[Sequence[Any]]):
    """Taylor mode of any order, with JAX's convention (``jax.experimental.jet.jet``).

    ``primals``: the arguments of ``fun`` (a tuple or list; pytrees of real or complex
    floating arrays). ``series``: per primal, a list of ``K`` terms shaped like it, the
    derivatives ``x_1 .. x_K`` of the input curve ``x(t) = x_0 + x_1 t + x_2 t**2 / 2! +
    ... + x_K t**K / K!``. Returns ``(primals_out, series_out)``: ``fun(*primals)`` and,
    for each output leaf, the list of the ``K`` derivatives of ``fun(x(t))`` at ``t = 0``
    (so ``series_out[k - 1]`` is ``d^k/dt^k fun(x(t))``).

    One forward pass through the traced graph propagates the ``K`` coefficients through
    every op (docs/taylor.md: the ODE recurrences of exp, log, sin, tanh..., Leibniz sums
    for products, Faà di Bruno for the other elementwise ops, nested JVPs for the rest).
    Compiled and cached like :func:`jvp`.

    Example::

        >>> import numpy as np, dualgpu as dg
        >>> y, (y1, y2, y3) = dg.jet(np.sin, (np.array(0.0),),
        ...                          ((np.array(1.0), np.array(0.0), np.array(0.0)),))
        >>> float(y), float(y1), float(y2), float(y3)       # sin(t): 0, cos 0, -sin 0, -cos 0
        (0.0, 1.0, 0.0, -1.0)
        >>> _, terms = dg.jet(lambda x: 1 / (1 - x), (np.array(0.0),),
        ...                   ((np.array(1.0), np.array(0.0), np.array(0.0)),))
        >>> [float(t) for t in terms]                       # k! / (1 - x)**(k + 1)
        [1.0, 2.0, 6.0]
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(series, (tuple, list)):
        raise ShapeMismatchError(
            "jet takes the primals and the series as tuples: jet(f, (x,), ((x1, x2),)), got "
            f"{type(primals).__name__} and {type(series).__name__}")
    if len(primals) != len(series):
        raise ShapeMismatchError(f"jet got {len(primals)} primals but {len(series)} series "
                                 "(one list of terms per primal)")
    if not primals:
        raise ShapeMismatchError("jet needs at least one primal")
    for i, terms in enumerate(series):
        if not isinstance(terms, (tuple, list)):
            raise ShapeMismatchError(f"jet: the series of argument {i} must be a list of "
                                     f"terms, got {type(terms).__name__}")
    for i, p in enumerate(primals):
        for leaf in pytree.flatten(p)[0]:
            kind = np.dtype(getattr(leaf, "dtype", np.result_type(leaf))).kind
            if kind in "iub":
                raise IntegerInputError(
                    f"jet: argument {i} has a leaf of dtype "
                    f"{getattr(leaf, 'dtype', type(leaf).__name__)}; Taylor series are for "
                    "floating-point primals: convert it with .astype(float), or close over "
                    "it in the function")
    orders = {len(t) for t in series}
    if len(orders) != 1:
        raise ShapeMismatchError(
            "jet: the series have different lengths "
            f"({', '.join(f'argument {i}: {len(t)}' for i, t in enumerate(series))}); every "
            "primal needs the same number of terms (the order)")
    order = orders.pop()
    if order < 1:
        raise ShapeMismatchError("jet: the series are empty; give at least one term per "
                                 "primal")
    t = _Jet(fun, tuple(range(len(primals))), order)
    return t(tuple(primals), tuple(tuple(s) for s in series))


# ------------------------------------------------------------------------------ operators
class _DifferentialOperator(Transformed):
    """``sum_r w_r d^K/dt^K f(x + t v_r)`` at ``t = 0`` (per instance with batch axes); with
    a tuple ``argnums``, ``v_r`` has one part per argument (``directions`` a tuple)."""

    kind = "differential_operator"
    finish_places_outputs = True

    def __init__(self, fn, directions, order, weights, argnums, batch_axes, chunk_size):
        super().__init__(fn, argnums, batch_axes=batch_axes)
        what = "differential_operator"
        if len(set(self.argnums)) != len(self.argnums):
            raise InvalidArgumentError(f"{what}: argnums {self.argnums} names an argument "
                                       "twice")
        if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 1:
            raise InvalidArgumentError(f"{what}: order must be a positive int, got {order!r}")
        if chunk_size is not None and (isinstance(chunk_size, bool)
                                       or not isinstance(chunk_size, (int, np.integer))
                                       or chunk_size < 1):
            raise InvalidArgumentError(f"{what}: chunk_size must be a positive int or None, "
                                       f"got {chunk_size!r}")
        if self.argnums_tuple:
            if not isinstance(directions, (tuple, list)) or len(directions) != len(
                    self.argnums):
                raise ShapeMismatchError(
                    f"{what}: with argnums {self.argnums}, directions must be a tuple of "
                    f"{len(self.argnums)} arrays (R, *argument shape), one per argument")
            parts = list(directions)
        else:
            parts = [directions]
        for a, d in zip(self.argnums, parts):
            if array_backend(d) is None or isinstance(d, Tracer):
                raise ArgumentTypeError(f"{what}: the directions of argument {a} must be a "
                                        f"NumPy or CuPy array of shape (R, ...), got "
                                        f"{type(d).__name__}")
            if d.ndim < 1 or d.shape[0] < 1:
                raise ShapeMismatchError(f"{what}: the directions of argument {a} must have "
                                         f"shape (R, ...) with R >= 1, got "
                                         f"{tuple(d.shape)}")
            if np.dtype(d.dtype).kind not in "fiu":
                raise ArgumentTypeError(f"{what}: directions must be real, got dtype "
                                        f"{d.dtype} for argument {a}")
        R = int(parts[0].shape[0])
        if any(int(d.shape[0]) != R for d in parts):
            raise ShapeMismatchError(f"{what}: the directions of the arguments must have the "
                                     f"same count R, got {[int(d.shape[0]) for d in parts]}")
        if weights is None:
            weights = np.ones(R)
        elif array_backend(weights) is None:
            weights = np.asarray(weights, dtype=float)
        if tuple(weights.shape) != (R,):
            raise ShapeMismatchError(f"{what}: weights must have shape ({R},), one per "
                                     f"direction, got {tuple(weights.shape)}")
        self.directions = dict(zip(self.argnums, parts))   # argnum -> (R, ...)
        self.weights, self.R = weights, R
        self.order = int(order)
        self.chunk_size = None if chunk_size is None else int(chunk_size)

    def options(self) -> dict:
        return {"order": self.order, "chunk_size": self.chunk_size,
                "directions": tuple((a, tuple(d.shape)) for a, d in self.directions.items())}

    def _leaves(self, sig) -> dict:
        """argnum -> the index of its one differentiated input."""
        out = {}
        for a in self.argnums:
            ks = [k for k, d in enumerate(sig.diff) if d and sig.arg_of_input[k] == a]
            if len(ks) != 1:
                raise ArgumentTypeError(
                    f"differential_operator: argument {a} must be one floating array (its "
                    f"directions are an array of shape (R, *x.shape)); it has {len(ks)} "
                    "differentiable leaves")
            out[a] = ks[0]
        return out

    def _direction_shape(self, sig, a: int, k: int) -> tuple:
        """The shape argument ``a``'s directions enter the program with: ``(R, *x.shape)``,
        or with batch axes ``(R, *x.shape)`` with ones on the batch axes."""
        x = sig.inputs[k]
        d = self.directions[a]
        shape = tuple(d.shape[1:])
        if shape == tuple(x.shape):
            return (self.R,) + shape
        if self.batch_axes is not None:
            axes = tuple(b % x.ndim for b in self.batch_axes)
            inst = tuple(s for b, s in enumerate(x.shape) if b not in axes)
            if shape == inst:
                it = iter(inst)
                return (self.R,) + tuple(1 if b in axes else next(it) for b in range(x.ndim))
        raise ShapeMismatchError(
            f"differential_operator: directions of shape {tuple(d.shape)} do not fit "
            f"argument {a} of shape {tuple(x.shape)}: give (R, *x.shape)"
            + (", or (R, *instance shape) with batch_axes"
               if self.batch_axes is not None else ""))

    def _to_backend(self, sig, name, a, dtype):
        b = array_backend(a)
        if b is not sig.backend:
            if b.on_device:
                raise BackendMismatchError(
                    f"differential_operator: the {name} are a {b.name} array but the "
                    f"arguments are {sig.backend.name} arrays")
            a = sig.backend.to_device(np.asarray(a)) if sig.backend.on_device else a
        return a.astype(dtype) if a.dtype != dtype else a

    def extra_inputs(self, sig, extra):
        leaves = self._leaves(sig)
        out = []
        for a, k in sorted(leaves.items(), key=lambda item: item[1]):   # the inputs' order
            x = sig.inputs[k]
            if np.dtype(x.dtype).kind != "f":
                raise ArgumentTypeError(f"differential_operator: argument {a} has dtype "
                                        f"{x.dtype}; only real floating-point arguments")
            d = self._to_backend(sig, f"directions of argument {a}", self.directions[a],
                                 x.dtype)
            shape = self._direction_shape(sig, a, k)
            out.append(d.reshape(shape) if tuple(d.shape) != shape else d)
        dtype = np.result_type(*[sig.inputs[k].dtype for k in leaves.values()])
        out.append(self._to_backend(sig, "weights", self.weights, dtype))
        return out

    def build(self, traced, sig):
        main, _, tree, _ = traced.split_aux(False, self.__name__)
        if self.batch_axes is not None:
            check_separable(main, sig.diff_inputs(), self.batch_axes, what=self.kind)
        shapes = {k: self._direction_shape(sig, a, k) for a, k in self._leaves(sig).items()}
        graph = operator_graph(main, diff_flags(sig, main), self.order, self.R,
                               chunk_size=self.chunk_size, direction_shapes=shapes)
        return graph, tree

    def finish(self, compiled, sig, outs):
        return pytree.unflatten(compiled.trees, outs)


def differential_operator(fn: Callable, directions, order: int, weights=None, argnums=0,
                          batch_axes=None, chunk_size: int | None = None):
    """The collapsed Taylor operator ``x -> sum_r w_r d^K/dt^K fn(x + t v_r)`` at ``t = 0``
    (``K = order``), for directions ``v_r`` (``directions``, shape ``(R, *x.shape)``, or
    ``(R, *instance shape)`` with ``batch_axes``) and weights ``w_r`` (default ones). With
    a tuple ``argnums``, ``x`` is those arguments (one array each) and ``directions`` a
    tuple of one such array per argument (the parts of each ``v_r``, same ``R``).

    One forward pass: Taylor coefficients ``1..K-1`` travel per direction, and of the
    ``K``-th only its weighted sum (the top coefficient is affine in the operands' top
    coefficients, so each op sums its own part over the directions at once and applies its
    JVP to the summed part of its operands; docs/taylor.md). The result has ``fn``'s output
    shape. With ``batch_axes``, ``fn`` returns one value per instance (checked, as
    :func:`laplacian`) and the result is the per-instance operator. ``chunk_size``:
    propagate that many directions at a time and add the chunks' sums (less memory, exact).

    Instances: the **weighted Laplacian** ``sum_ij (sigma sigma^T)_ij d2f/dx_i dx_j`` is
    ``K = 2`` with the columns of ``sigma`` as directions; the **biharmonic**
    ``Delta^2 f = sum_ij d4f/dx_i^2 dx_j^2`` in ``D`` dimensions is ``K = 4`` with the
    directions ``e_i`` at weight ``1 - (D - 1) / 3`` and ``e_i +- e_j`` (``i < j``) at
    weight ``1 / 6`` (:func:`biharmonic_directions`; docs/taylor.md derives them).

    Example::

        >>> import numpy as np, dualgpu as dg
        >>> u = lambda x: np.sum(x ** 4) + x[0] ** 2 * x[1] ** 2
        >>> x = np.array([1.0, 2.0])
        >>> sigma = np.array([[1.0, 0.0], [0.5, 2.0]])           # weighted Laplacian, K=2
        >>> float(dg.differential_operator(u, sigma.T, 2)(x))    # tr(sigma^T H sigma)
        240.5
        >>> H = dg.hessian(u)(x); float(np.trace(sigma.T @ H @ sigma))
        240.5
        >>> D = 2                                                 # the biharmonic, K=4
        >>> E = np.eye(D)
        >>> pairs = [s * E[i] + E[j] for i in range(D) for j in range(i + 1, D)
        ...          for s in (1.0, -1.0)]
        >>> dirs = np.array(list(E) + pairs)
        >>> w = np.array([1 - (D - 1) / 3] * D + [1 / 6] * len(pairs))
        >>> float(dg.differential_operator(u, dirs, 4, w)(x))    # 24 + 24 + 2 * 4
        56.0
    """
    if not callable(fn):
        raise ArgumentTypeError(f"dg.differential_operator expects a function, got "
                                f"{type(fn).__name__}")
    return _DifferentialOperator(fn, directions, order, weights, argnums, batch_axes,
                                 chunk_size)


def biharmonic_directions(D: int, dtype=np.float64) -> tuple:
    """The directions and weights of the biharmonic ``Delta^2`` in ``D`` dimensions as a
    ``K = 4`` operator: ``e_i`` at weight ``1 - (D - 1) / 3`` and ``e_i +- e_j``
    (``i < j``) at ``1 / 6`` (docs/taylor.md derives them).

    Example::

        >>> dirs, w = biharmonic_directions(3)
        >>> dirs.shape, [round(float(v), 4) for v in w[2:4]]
        ((9, 3), [0.3333, 0.1667])
    """
    if isinstance(D, bool) or not isinstance(D, (int, np.integer)) or D < 1:
        raise InvalidArgumentError(f"biharmonic_directions: D must be a positive int (the "
                                   f"number of coordinates), got {D!r}")
    try:
        kind = np.dtype(dtype).kind
    except TypeError:
        kind = None
    if kind != "f":  # an integer dtype would round the weights 2/3 and 1/6 to 0
        raise ArgumentTypeError(f"biharmonic_directions: dtype must be a real floating-point "
                                f"dtype, got {dtype!r}")
    D = int(D)
    E = np.eye(D, dtype=dtype)
    pairs = [s * E[i] + E[j] for i in range(D) for j in range(i + 1, D) for s in (1.0, -1.0)]
    dirs = np.array(list(E) + pairs, dtype=dtype).reshape(-1, D)
    w = np.array([1 - (D - 1) / 3] * D + [1 / 6] * len(pairs), dtype=dtype)
    return dirs, w

