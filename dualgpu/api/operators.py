"""Hessians as linear operators, for SciPy and cupyx solvers.

``x`` is one flat point: a NumPy or CuPy floating-point array (a Python or NumPy float scalar
is converted). Bad input -- a list, a string, an integer array, a tuple ``argnums``, a vector
of the wrong size -- is one :class:`~dualgpu.DualgpuError` naming the argument. An empty ``x``
(size 0) has an empty Hessian.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import lax
from ..backends import NUMPY, array_backend, backend_for_xp, backend_of
from ..base import tree as pytree
from ..core.interpret import eval_graph
from ..core.ir import Graph
from ..core.trace import Tracer, trace_to_graph
from ..errors import (
    ArgumentTypeError,
    BackendMismatchError,
    IntegerInputError,
    InvalidArgumentError,
    ShapeMismatchError,
)
from ..frontend.namespace import rebind_function
from ..runtime.checks import check_scalar_output
from ..runtime.program_cache import function_key
from ..runtime.signature import float_point
from ..runtime.tracing import check_call, name_of, rebindable
from ..runtime.transformed import Transformed
from ..transforms import hvp_graph, simplify
from .differentiation import hvp
from .vectorize import vmap


def _insert(args: tuple, argnums: int, x) -> tuple:
    """The full argument list of ``f``: ``args`` with ``x`` inserted at ``argnums``."""
    return args[:argnums] + (x,) + args[argnums:]


def _check_fn(f, what: str) -> None:
    if not callable(f):
        raise ArgumentTypeError(f"{what}: f must be a function, got {type(f).__name__}")


def _check_argnums(argnums, what: str) -> int:
    """``argnums`` of the Hessian helpers: the position of the one flat argument ``x``."""
    if isinstance(argnums, (bool, np.bool_)) or not isinstance(argnums, (int, np.integer)) \
            or argnums < 0:
        hint = (" (one argument only: concatenate several into one flat x)"
                if isinstance(argnums, (tuple, list)) else "")
        raise ArgumentTypeError(f"{what}: argnums must be a non-negative int, the position of x, "
                                f"got {argnums!r}{hint}")
    return int(argnums)


def _as_vector(v, xp, backend, n: int, dtype, what: str, name: str):
    """A direction given to a Hessian product: numeric, on ``backend``, of ``n`` entries."""
    b = array_backend(v)
    if b is not None and b is not backend:
        raise BackendMismatchError(f"{what}: {name} is a {b.name} array but x is a "
                                   f"{backend.name} array")
    if b is None and not isinstance(v, (list, tuple, int, float, complex, np.generic)):
        raise ArgumentTypeError(f"{what}: {name} must be an array, got {type(v).__name__}")
    try:
        v = xp.asarray(v)
    except (TypeError, ValueError) as e:
        raise ArgumentTypeError(f"{what}: {name} is not a numeric array "
                                f"({' '.join(str(e).split())})") from None
    kind = np.dtype(v.dtype).kind
    if kind not in "biufc":
        raise ArgumentTypeError(f"{what}: {name} must be numeric, got dtype {v.dtype}")
    if kind == "c" and np.dtype(dtype).kind != "c":
        raise ShapeMismatchError(f"{what}: {name} is complex ({v.dtype}) but x is real "
                                 f"({np.dtype(dtype)})")
    if v.size != n:
        raise ShapeMismatchError(f"{what}: {name} has shape {tuple(v.shape)} ({v.size} "
                                 f"entries), but x has {n} entries")
    return v


def _check_traced_vector(v, n: int | None, dtype, name: str) -> None:
    """A traced direction given to a HessianOperator product: ``n`` entries (unless None),
    not complex for a real point."""
    if n is not None and int(np.prod(v.shape, dtype=np.int64)) != n:
        raise ShapeMismatchError(f"HessianOperator: {name} has shape {tuple(v.shape)}, but x "
                                 f"has {n} entries")
    if np.dtype(v.dtype).kind == "c" and np.dtype(dtype).kind != "c":
        raise ShapeMismatchError(f"HessianOperator: {name} is complex ({v.dtype}) but x is "
                                 f"real ({np.dtype(dtype)})")


class HessianOperator:
    """The Hessian of ``f`` at ``x`` (with extra arguments ``args``) as a linear operator.

    ``H = HessianOperator(f, x, *args)`` is ``n × n`` with ``n = x.size``: a
    ``scipy.sparse.linalg.LinearOperator`` for NumPy inputs and a
    ``cupyx.scipy.sparse.linalg.LinearOperator`` for CuPy inputs, so SciPy's algebra and
    solvers take it as it is: ``H + lam * np.eye(n)`` (or a sparse identity, or any
    ``LinearOperator``), ``H - M``, ``alpha * H``, ``H.T``, ``H.H``, ``H @ v``, ``H @ V``,
    ``cg``, ``minres``, ``eigsh``. ``H @ V`` with a 2-D ``V`` is one program for all the
    columns (``dg.vmap`` of the HVP); ``H.toarray()`` is the dense Hessian. ``H.nprod``
    counts every Hessian-vector product, also those made through a sum or a scaled
    operator. ``f`` is called as ``f(x, *args)``; with ``argnums=k``, ``x`` is
    inserted as ``f``'s argument ``k``.

    Vectors are cast to ``x``'s dtype; the product is taken at the fixed point ``x``. ``x``
    is a floating-point array (a float scalar is converted), or a pytree of them: the
    operator then acts on its raveled vector (:func:`dualgpu.base.tree.ravel`; ``n`` is the total
    size) and ``H.unravel(v)`` turns a vector back into the tree. A vector of the wrong size
    raises :class:`~dualgpu.ShapeMismatchError`.

    Example::

        >>> H = dg.HessianOperator(lambda x: np.sum(x ** 4), np.ones(3))
        >>> H @ np.ones(3)
        array([12., 12., 12.])
        >>> from scipy.sparse.linalg import LinearOperator, aslinearoperator, cg
        >>> isinstance(H, LinearOperator), aslinearoperator(H) is H
        (True, True)
        >>> damped = H + 0.5 * np.eye(3)                         # H + 0.5 I
        >>> damped @ np.ones(3)
        array([12.5, 12.5, 12.5])
        >>> H.toarray()
        array([[12.,  0.,  0.],
               [ 0., 12.,  0.],
               [ 0.,  0., 12.]])
        >>> cg(H, np.ones(3))[0]
        array([0.08333333, 0.08333333, 0.08333333])
        >>> H.nprod >= 2
        True
        >>> Hp = dg.HessianOperator(lambda p: np.sum(p["w"] ** 2) * p["s"],
        ...                         {"w": np.ones(2), "s": np.array(3.0)})
        >>> Hp @ np.array([1.0, 0.0, 0.0])            # ravel order: sorted keys, s then w
        array([0., 2., 2.])
        >>> Hp.unravel(np.array([1.0, 2.0, 3.0]))
        {'s': array(1.), 'w': array([2., 3.])}
    """

    shape: tuple[int, int]  # from the LinearOperator class it is made an instance of
    dtype: Any

    def __new__(cls, f: Callable | None = None, x=None, *args, argnums: int = 0):
        if cls is not HessianOperator:
            return object.__new__(cls)
        backend = array_backend(x) or NUMPY
        return object.__new__(_operator_class(backend))

    def __init__(self, f: Callable, x, *args, argnums: int = 0):
        what = "HessianOperator"
        _check_fn(f, what)
        if any(isinstance(a, Tracer) for a in pytree.leaves((x, args))):
            raise ArgumentTypeError(
                "HessianOperator: x or an argument is a traced value; the operator (a SciPy "
                "LinearOperator at a fixed point) is built on concrete arrays. Inside jit, "
                "grad, vmap or export use dg.hessp(f)(x, p) or dg.hvp(f)(x, v) instead")
        self.argnums = _check_argnums(argnums, what)
        if self.argnums > len(args):
            raise ArgumentTypeError(f"{what}: argnums={self.argnums} but f gets only "
                                    f"{len(args) + 1} argument(s) (x and {len(args)} more)")
        self.unravel = None
        tree = pytree.structure(x)
        if not tree.is_leaf and tree.num_leaves and not _numbers_only(x):  # a pytree: the
            # operator acts on its raveled vector (a list of numbers is refused below)
            _check_pytree_point(x, what)
            x, self.unravel = pytree.ravel(x)
            f = _OnRaveled(f, self.unravel, self.argnums)
        x = float_point(x, what, "x")
        self.f = f
        self.x = x
        self.args = args
        self.backend = backend_of([x, *args], "HessianOperator arguments")
        if self.backend.linear_operator_class() not in type(self).__mro__:
            raise BackendMismatchError(f"{what}: built for {type(self).__name__} but x is a "
                                       f"{self.backend.name} array")
        self.n = int(np.prod(x.shape))
        self._hvp = hvp(f, argnums=self.argnums)
        self._hvp_columns = None
        self.nprod = 0
        self.backend.linear_operator_class().__init__(self, np.dtype(x.dtype),
                                                      (self.n, self.n))

    def matvec(self, v):
        """``H @ v`` for a flat (or ``(n, 1)``) vector ``v``; counts one product."""
        xp = self.backend.xp
        if isinstance(v, Tracer):  # a product traced into a program (jit, grad, vmap of it)
            _check_traced_vector(v, self.n, self.dtype, "v")
        else:
            v = _as_vector(v, xp, self.backend, self.n, self.dtype, "HessianOperator", "v")
        if not (v.ndim == 1 or (v.ndim == 2 and v.shape[1] == 1)
                or tuple(v.shape) == tuple(self.x.shape)):
            raise ShapeMismatchError(f"HessianOperator: v has shape {tuple(v.shape)}; give a "
                                     f"flat vector of {self.n} entries (or an ({self.n}, 1) "
                                     "column)")
        shape = v.shape
        direction = v.reshape(self.x.shape).astype(self.dtype, copy=False)
        out = self._hvp(*_insert(self.args, self.argnums, self.x), direction)
        self.nprod += 1
        return out.reshape(shape)

    def rmatvec(self, v):
        """``H^H @ v``: the Hessian is symmetric (Hermitian for real ``x``), so ``H @ v``."""
        return self.matvec(v)

    def matmat(self, V):
        """``H @ V`` for an ``(n, k)`` matrix: ``k`` products, run as one batched program
        (``dg.vmap`` of the HVP)."""
        xp = self.backend.xp
        b = array_backend(V)
        if b is not None and b is not self.backend:
            raise BackendMismatchError(f"HessianOperator: V is a {b.name} array but x is a "
                                       f"{self.backend.name} array")
        if isinstance(V, Tracer):
            _check_traced_vector(V, None, self.dtype, "V")
        else:
            V = xp.asarray(V) if b is not None or isinstance(V, (list, tuple)) else V
        if getattr(V, "ndim", None) != 2 or V.shape[0] != self.n:
            raise ShapeMismatchError(
                f"HessianOperator: V has shape {tuple(getattr(V, 'shape', ()))}, expected "
                f"({self.n}, k): one column per vector")
        k = V.shape[1]
        if k == 0:
            return xp.zeros((self.n, 0), dtype=self.dtype)
        if self._hvp_columns is None:  # one program for all the columns: GEMMs k wide
            self._hvp_columns = vmap(self._hvp, out_axes=-1,
                                     in_axes=(None,) * (len(self.args) + 1) + (-1,))
        directions = (V if isinstance(V, Tracer) else xp.asarray(V)).astype(
            self.dtype, copy=False).reshape(tuple(self.x.shape) + (k,))
        out = self._hvp_columns(*_insert(self.args, self.argnums, self.x), directions)
        self.nprod += k
        return out.reshape(self.n, k)

    def rmatmat(self, V):
        return self.matmat(V)

    # the library's generic entry points (sums, scaled operators, solvers) land here
    def _matvec(self, v):
        return self.matvec(v)

    def _rmatvec(self, v):
        return self.matvec(v)

    def _matmat(self, V):
        return self.matmat(V)

    def _rmatmat(self, V):
        return self.matmat(V)

    def _adjoint(self):
        return self

    def _transpose(self):
        return self

    def dot(self, v):
        """``H @ v`` for a vector, a matrix of column vectors, a scalar (a scaled operator)
        or another linear operator (their product)."""
        if isinstance(v, self.backend.linear_operator_class()) or _is_number(v):
            return self.backend.linear_operator_class().dot(self, v)
        if getattr(v, "ndim", np.ndim(v) if isinstance(v, (list, tuple)) else 1) == 2 \
                and np.shape(v)[1] != 1:
            return self.matmat(v)
        return self.matvec(v)

    def __matmul__(self, v):
        if _is_number(v):
            raise InvalidArgumentError("HessianOperator: H @ a number is not a product; scale the "
                                       "operator with * instead")
        return self.dot(v)

    # SciPy's operator algebra with matrices: H + lam * np.eye(n), H - M, M + H
    def _as_operator(self, other, op: str):
        """``other`` of ``H + other`` (``op``): a LinearOperator as it is, an ``(n, n)``
        dense or sparse matrix of ``x``'s library as its LinearOperator; ``NotImplemented``
        for anything else."""
        if isinstance(other, self.backend.linear_operator_class()):
            return other
        if _is_number(other):
            raise InvalidArgumentError(
                f"HessianOperator: H {op} a number is not defined (nor for SciPy's "
                f"operators); for a shift by lam * I write H {op} lam * scipy.sparse.eye("
                f"{self.n}) (or np.eye({self.n}))")
        b = array_backend(other)
        if b is None:
            return NotImplemented
        if b is not self.backend:
            raise BackendMismatchError(f"HessianOperator: H {op} a {b.name} matrix, but x is a "
                                       f"{self.backend.name} array")
        if tuple(other.shape) != (self.n, self.n):
            raise ShapeMismatchError(f"HessianOperator: H {op} a matrix of shape "
                                     f"{tuple(other.shape)}; H is {self.n}x{self.n}")
        return self.backend.sparse_linalg.aslinearoperator(other)

    def __add__(self, other):
        """``H + M`` for a LinearOperator or an ``(n, n)`` dense or sparse matrix ``M``:
        their sum as a LinearOperator (each product of it is one Hessian product)."""
        other = self._as_operator(other, "+")
        if other is NotImplemented:
            return NotImplemented
        return self.backend.linear_operator_class().__add__(self, other)

    def __radd__(self, other):
        return self.__add__(other)

    def __sub__(self, other):
        other = self._as_operator(other, "-")
        if other is NotImplemented:
            return NotImplemented
        return self.backend.linear_operator_class().__add__(self, -other)

    def __rsub__(self, other):
        other = self._as_operator(other, "-")
        if other is NotImplemented:
            return NotImplemented
        return other + (-self)

    def toarray(self):
        """The dense ``n x n`` Hessian, ``H @ I``: ``n`` products run as one batched
        program (``n * n`` entries: for small ``n``).

        Example::

            >>> dg.HessianOperator(lambda x: x[0] ** 2 * x[1], np.array([1.0, 2.0])).toarray()
            array([[4., 2.],
                   [2., 0.]])
        """
        return self.matmat(self.backend.xp.eye(self.n, dtype=self.dtype))

    @property
    def T(self):
        return self

    @property
    def H(self):
        return self

    def aslinearoperator(self):
        """The operator itself (it is a SciPy or cupyx ``LinearOperator``); kept for code
        written against ``H.op``."""
        return self

    op = property(aslinearoperator)

    def __repr__(self) -> str:
        return (f"<HessianOperator {self.n}x{self.n} {self.dtype} on {self.backend.name}, "
                f"{self.nprod} products>")


def _numbers_only(x) -> bool:
    """A list or tuple of Python numbers: meant as an array (``np.asarray(x)``)."""
    return isinstance(x, (list, tuple)) and all(
        isinstance(leaf, (int, float, complex)) for leaf in pytree.leaves(x))


def _check_pytree_point(x, what: str) -> None:
    for leaf in pytree.leaves(x):
        if isinstance(leaf, (bool, np.bool_)) or np.dtype(getattr(
                leaf, "dtype", np.result_type(leaf))).kind not in "fc":
            raise IntegerInputError(f"{what}: a leaf of x is {leaf!r:.40}; the leaves of a "
                                    "pytree point must be floating-point arrays")


class _OnRaveled:
    """``f`` with its argument ``argnums`` taken as the raveled vector of a pytree point
    (what :class:`HessianOperator` differentiates for a pytree ``x``)."""

    _dualgpu_transform = True  # guards and names look through to fn

    def __init__(self, fn, unravel, argnums: int):
        self.fn, self.unravel, self.argnums = fn, unravel, argnums
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)

    def __call__(self, *args, **kwargs):
        args = list(args)
        args[self.argnums] = self.unravel(args[self.argnums])
        return rebind_function(self.fn)(*args, **kwargs)


def _is_number(v) -> bool:
    return isinstance(v, (int, float, complex, np.number)) and not isinstance(v, bool)


_OPERATOR_CLASSES: dict = {}


def _operator_class(backend) -> type:
    """HessianOperator joined with the backend's LinearOperator class (made once each)."""
    cls = _OPERATOR_CLASSES.get(backend.name)
    if cls is None:
        base = backend.linear_operator_class()
        cls = type("HessianOperator", (HessianOperator, base),
                   {"__module__": __name__, "__doc__": HessianOperator.__doc__})
        _OPERATOR_CLASSES[backend.name] = cls
    return cls


class _PointFirst:
    """``f`` as the function of ``(x, p, *args, **kwargs)`` that :func:`hessp` traces:
    ``f(*args with x inserted at argnums, **kwargs)``. ``p`` is an input of the traced
    program that ``f`` does not read (the program feeds it to the product), so the program's
    inputs are the call's arguments in the caller's order."""

    _dualgpu_transform = True  # guards and names look through to fn

    def __init__(self, fn: Callable, argnums: int):
        self.fn, self.argnums = fn, argnums
        self.__name__ = name_of(fn)
        self.__signature__ = _point_first_signature(fn, argnums)

    def __call__(self, x, p, *args, **kwargs):
        args = _insert(args, self.argnums, x)
        check_call(self.fn, args, kwargs)
        return rebind_function(rebindable(self.fn))(*args, **kwargs)


def _point_first_signature(fn, argnums: int) -> inspect.Signature:
    """``(x, p, /, *others, *args, **kwargs)``, with ``fn``'s names and defaults where it
    has them: the input names of the traced program (:func:`check_call` checks the call
    against ``fn`` itself)."""
    only, either = inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD
    try:
        params = [q for q in inspect.signature(fn).parameters.values()
                  if q.kind in (only, either)]
    except (TypeError, ValueError):
        params = []
    x_name = params[argnums].name if argnums < len(params) else "x"
    others = params[:argnums] + params[argnums + 1:] if argnums < len(params) else []
    p_name = "p"
    while p_name in {q.name for q in params}:
        p_name += "_"
    tail = [inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL),
            inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)]
    head = [inspect.Parameter(x_name, only), inspect.Parameter(p_name, only)]
    try:
        return inspect.Signature(head + [q.replace(kind=either) for q in others] + tail)
    except ValueError:  # defaults out of order once reordered
        return inspect.Signature(head + tail)


class _Hessp(Transformed):
    """``hp(x, p, *args, **kwargs) = H(x) @ p``: a transform like the others (cached;
    inlined into an enclosing trace; exported), whose program takes the call's arguments in
    the caller's order (see :class:`_PointFirst`)."""

    kind = "hessp"
    finish_places_outputs = True

    def __init__(self, fn: Callable, argnums: int = 0):
        _check_fn(fn, "hessp")
        self.x_argnums = _check_argnums(argnums, "hessp")
        super().__init__(_PointFirst(fn, self.x_argnums), argnums=0)
        self._weak = []
        self._fn_key = ("hessp", self.x_argnums, function_key(fn, self._weak))
        self.__name__ = self.__qualname__ = f"hessp_{name_of(fn)}"
        self.__wrapped__ = fn
        self.__doc__ = (f"Hessian-vector product of {name_of(fn)}: hp(x, p, *args, "
                        "**kwargs) = H(x) @ p.")

    def options(self) -> dict:
        return {"x_argnums": self.x_argnums}

    def __repr__(self) -> str:
        return f"<dualgpu.hessp of {name_of(self.fn.fn)}>"

    def split(self, args):
        if len(args) < 2:
            raise ArgumentTypeError(f"hessp: hp takes (x, p, *args), got {len(args)} positional "
                                    "argument(s)")
        x, p, rest = args[0], args[1], args[2:]
        if self.x_argnums > len(rest):
            raise ArgumentTypeError(f"hessp: argnums={self.x_argnums} but hp got only {len(rest)} "
                                    "extra argument(s) after x and p")
        if isinstance(x, Tracer):
            if np.dtype(x.dtype).kind not in "fc":
                raise IntegerInputError(f"hessp: x has dtype {np.dtype(x.dtype)}: only "
                                        "floating-point points can be differentiated")
            backend = backend_for_xp(x._builder.xp)
        else:
            x = float_point(x, "hessp", "x")
            backend = backend_of([x], "hessp arguments")
        n = int(np.prod(x.shape, dtype=np.int64))
        if isinstance(p, Tracer):
            if int(np.prod(p.shape, dtype=np.int64)) != n:
                raise ShapeMismatchError(f"hessp: p has shape {tuple(p.shape)}, but x has "
                                         f"{n} entries")
            if np.dtype(p.dtype).kind == "c" and np.dtype(x.dtype).kind != "c":
                raise ShapeMismatchError(f"hessp: p is complex ({p.dtype}) but x is real "
                                         f"({x.dtype})")
        elif isinstance(p, (list, tuple)):  # one argument, one program input: an array
            raise ArgumentTypeError(f"hessp: p must be an array of {n} entries, got a "
                                    f"{type(p).__name__}; pass np.asarray(p)")
        else:
            p = _as_vector(p, backend.xp, backend, n, x.dtype, "hessp", "p")
        return (x, p) + tuple(rest), None

    def build(self, traced, sig):
        graph = traced.graph
        check_scalar_output(graph, traced.out_tree, self.__name__)
        return hessp_graph(graph), None

    def finish(self, compiled, sig, outs):
        return outs[0]


def hessp_graph(graph: Graph) -> Graph:
    """``(x, p, *rest) -> H(x) @ p`` for a graph of ``(x, p, *rest)`` whose scalar output
    does not read ``p``: the HVP program with ``p`` (reshaped like ``x``, cast to its dtype)
    as the direction."""
    x = graph.inputs[0]
    hv = hvp_graph(graph, [0], value=False, grads=False)

    def run(*inputs):
        p = inputs[1]
        if tuple(p.shape) != tuple(x.shape):
            p = lax.reshape(p, tuple(x.shape))
        if p.dtype != x.dtype:
            p = lax.astype(p, x.dtype)
        return eval_graph(hv, list(inputs) + [p])

    new, _ = trace_to_graph(run, [v.aval for v in graph.inputs], graph.xp,
                            name=f"hessp_{graph.name}", input_names=graph.input_names)
    return simplify(new)


def hessp(f: Callable, argnums: int = 0):
    """``hp(x, p, *args, **kwargs) = H(x) @ p``, the signature of
    ``scipy.optimize.minimize``'s ``hessp``. ``f`` is called as ``f(x, *args, **kwargs)``;
    with ``argnums=k``, ``x`` is inserted as ``f``'s argument ``k``. ``p`` has ``x.size``
    entries (any shape); the result has ``x``'s shape. A transform like ``dg.hvp``: ``jit``,
    ``vmap``, ``grad`` and ``dg.export`` of it work.

    Example::

        >>> from scipy.optimize import minimize, rosen
        >>> f = lambda x: np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
        >>> res = minimize(f, np.zeros(4), jac=dg.grad(f), hessp=dg.hessp(f),
        ...                method="trust-krylov")
        >>> np.round(res.x, 4)
        array([1., 1., 1., 1.])
        >>> dg.vmap(dg.hessp(lambda x: np.sum(x ** 3)), in_axes=(None, 0))(
        ...     np.array([1.0, 2.0]), np.eye(2))                  # the rows of H
        array([[ 6.,  0.],
               [ 0., 12.]])
    """
    return _Hessp(f, argnums)
