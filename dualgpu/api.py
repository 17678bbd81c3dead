"""The public transformations: jvp, vjp, grad, value_and_grad, hvp, grad_and_hvp, hessian,
trace and source. Each traces the function once per argument signature (shapes, dtypes,
backend, static arguments), transforms the graph, compiles it, and caches the result."""
from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import sparse_api
from .backends import array_backend, backend_of
from .cache import IdentityKey, LRUCache
from .errors import (
    DualgpuError,
    IntegerInputError,
    NonScalarOutputError,
    ShapeMismatchError,
)
from .executor import Executable, config
from .ir import Aval, Graph
from .trace import flatten_outputs, trace_to_graph, unflatten_outputs
from .transforms import grad_graph, hvp_graph, jvp_graph, simplify, vjp_graph
from .transforms.batching import check_separable, sum_output

_SCALARS = (bool, int, float, complex, np.generic)


def _is_array(x) -> bool:
    if isinstance(x, np.ndarray):
        return True
    b = array_backend(x)
    return b is not None and not b.is_sparse(x)


def _static_key(x):
    """A cache key for a static argument: by value (containers element by element, with
    types, so that a list mutated in place or ``(1,)`` vs ``(True,)`` trace again), by
    identity only for objects that have no value to compare."""
    try:
        return ("static", _freeze(x))
    except TypeError:
        return ("static-id", IdentityKey(x))


def _freeze(x):
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(_freeze(i) for i in x))
    if isinstance(x, dict):
        return ("dict", tuple((_freeze(k), _freeze(v)) for k, v in x.items()))
    hash(x)
    return (type(x).__name__, x)


class Prepared:
    """One call's arguments split into traced inputs and static values."""

    def __init__(self, args: Sequence[Any], diff_positions: Sequence[int], what: str):
        self.backend = backend_of(args, what)
        xp = self.backend.xp
        self.arrays: list = []
        self.positions: list[int] = []
        self.static: dict[int, Any] = {}
        self.sparse = sparse_api.SparseArgs()  # sparse arguments enter as their values
        key = []
        for i, a in enumerate(args):
            if sparse_api.is_sparse(a):
                data, sparse_key = self.sparse.add(i, a)
                self.positions.append(i)
                self.arrays.append(data)
                key.append(sparse_key)
                continue
            if i in diff_positions and isinstance(a, _SCALARS) and not isinstance(a, bool):
                a = xp.asarray(a, dtype=np.float64 if not isinstance(a, np.generic)
                               else a.dtype)
            if _is_array(a):
                self.positions.append(i)
                self.arrays.append(a)
                key.append(("array", tuple(a.shape), np.dtype(a.dtype).str))
            else:
                if i in diff_positions:
                    raise DualgpuError(
                        f"argument {i} is differentiated but is a {type(a).__name__}; pass a "
                        "NumPy or CuPy array (pytrees are not supported)")
                self.static[i] = a
                key.append(_static_key(a))
        for i in diff_positions:
            if i >= len(args):
                raise DualgpuError(f"argnums names argument {i}, but only {len(args)} given")
            dt = np.dtype(self.arrays[self.positions.index(i)].dtype)
            if dt.kind not in "fc":
                raise IntegerInputError(
                    f"argument {i} has dtype {dt}: only floating-point inputs can be "
                    "differentiated; convert it with .astype(float)")
        self.key = (self.backend.name, tuple(key))
        self.avals = [Aval(tuple(a.shape), np.dtype(a.dtype)) for a in self.arrays]

    def graph_argnums(self, diff_positions: Sequence[int]) -> list[int]:
        return [self.positions.index(i) for i in diff_positions]


def _normalize_argnums(argnums) -> tuple[tuple[int, ...], bool]:
    single = isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool)
    nums = (argnums,) if single else argnums
    if not isinstance(nums, (tuple, list)) or not all(
            isinstance(i, (int, np.integer)) and not isinstance(i, bool) and i >= 0
            for i in nums):
        raise DualgpuError(f"argnums must be a non-negative int or a tuple of them, got "
                           f"{argnums!r}")
    return tuple(int(i) for i in nums), not single


_GLOBAL_CACHE = LRUCache(config["cache_size"])


def cache_info() -> dict:
    """Sizes and hit counts of the program cache."""
    return _GLOBAL_CACHE.info()


def set_cache_size(n: int) -> None:
    """Bound the number of cached programs (least recently used are dropped)."""
    _GLOBAL_CACHE.maxsize = int(n)
    config["cache_size"] = int(n)


def clear_cache() -> None:
    """Drop every cached program (the next call of each function traces again)."""
    _GLOBAL_CACHE.clear()
    _generation[0] += 1


def _base_graph(fn, prep: Prepared) -> tuple[Graph, Any]:
    names = _arg_names(fn, prep.positions)
    if prep.sparse:
        fn = prep.sparse.wrap(fn)
    return trace_to_graph(fn, prep.avals, prep.backend.xp, static=prep.static,
                          name=getattr(fn, "__name__", "f"), input_names=names)


def _arg_names(fn, positions):
    try:
        import inspect

        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None
    from .codegen.names import function_name

    if len(params) < max(positions, default=-1) + 1:
        return None
    names = [function_name(params[i]) for i in positions]
    return names if len(set(names)) == len(names) else None


class Compiled:
    """A transformed graph, compiled, with the output structure of the traced function."""

    def __init__(self, graph: Graph, tree, backend):
        self.graph = graph
        self.tree = tree
        self.exe = Executable(graph, backend)


# ------------------------------------------------------------------------------ fast path
# Each transformed function remembers its last few call signatures, so that a cached call
# costs a tuple comparison, not the whole argument analysis (host overhead matters for tiny
# GPU problems). Bounded; invalidated by clear_cache().
FAST_SLOTS = 8
_FAST_LOCK = threading.Lock()
_generation = [0]
_SIMPLE_STATIC = (int, float, bool, str, type(None))


def _leaves(args) -> list:
    out = []
    for a in args:
        if type(a) is tuple or type(a) is list:
            out.extend(a)
        else:
            out.append(a)
    return out


def _fast_signature(args):
    """A cheap, hashable description of the arguments, or None when they are unusual."""
    sig = []
    for a in args:
        t = type(a)
        if t is tuple or t is list:
            inner = _fast_signature(a)
            if inner is None or any(type(x) in (tuple, list) for x in a):
                return None
            sig.append((t, inner))
        elif t in _SIMPLE_STATIC:
            sig.append((t, a))
        elif hasattr(a, "shape") and hasattr(a, "dtype") and t.__name__ == "ndarray":
            sig.append((t, a.shape, a.dtype))
        else:
            return None
    return tuple(sig)


# ------------------------------------------------------------------------------ transforms
class Transformed:
    """A function transformed by dualgpu. Calling it traces (once per signature) and runs."""

    kind = "abstract"

    def __init__(self, fn: Callable, argnums=0, batch_axes=None):
        if not callable(fn):
            raise DualgpuError(f"expected a function, got {type(fn).__name__}")
        self.fn = fn
        self.argnums, self.argnums_tuple = _normalize_argnums(argnums)
        self.batch_axes = None if batch_axes is None else tuple(
            (batch_axes,) if isinstance(batch_axes, int) else batch_axes)
        self._fast: dict = {}
        functools.update_wrapper(self, fn)

    # subclasses: split the call's args into function args and extra inputs; build graph
    def split(self, args):
        return args, ()

    def build(self, fn, prep: Prepared) -> tuple[Graph, Any]:
        raise NotImplementedError

    def compiled(self, args) -> tuple[Compiled, Prepared, tuple]:
        fargs, extra = self.split(args)
        prep = Prepared(fargs, self.argnums, f"arguments of {self.__name__}")
        extra_leaves = list(extra) if isinstance(extra, (tuple, list)) else [extra]
        backend_of(extra_leaves + prep.arrays[:1], "arguments")  # raises on NumPy/CuPy mixes
        key = (self.kind, IdentityKey(self.fn), self.argnums, self.batch_axes, prep.key)

        def build():
            graph, tree = self.build(self.fn, prep)
            return Compiled(graph, tree, prep.backend)

        entry = _GLOBAL_CACHE.get_or_build(key, build)
        return entry, prep, extra

    def graph(self, *args) -> Graph:
        return self.compiled(args)[0].graph

    def source(self, *args) -> str:
        return self.compiled(args)[0].exe.source

    def __call__(self, *args):
        sig = _fast_signature(args)
        hit = self._fast.get(sig) if sig is not None else None
        if hit is not None and hit[2] == _generation[0]:
            # A signature seen before: its checks passed then and pass now; skip them.
            entry, indices, _ = hit
            leaves = _leaves(args)
            return self.finish(entry, None, entry.exe(*[leaves[j] for j in indices]))
        entry, prep, extra = self.compiled(args)
        self.check_extra(prep, extra)
        passed = list(prep.arrays) + list(extra)
        outs = entry.exe(*passed)
        if sig is not None:
            self._remember(sig, entry, args, passed)
        return self.finish(entry, prep, outs)

    def _remember(self, sig, entry, args, passed):
        leaves = _leaves(args)
        indices = []
        for a in passed:
            j = next((k for k, leaf in enumerate(leaves) if leaf is a), None)
            if j is None:  # an argument was converted (dtype, Python scalar): no fast path
                return
            indices.append(j)
        with _FAST_LOCK:
            self._fast[sig] = (entry, tuple(indices), _generation[0])
            while len(self._fast) > FAST_SLOTS:
                self._fast.pop(next(iter(self._fast)))

    def check_extra(self, prep, extra):
        pass

    def finish(self, entry, prep, outs):
        raise NotImplementedError

    def _base(self, fn, prep):
        graph, tree = _base_graph(fn, prep)
        if self.batch_axes is not None:
            gargs = prep.graph_argnums(self.argnums)
            check_separable(graph, gargs, self.batch_axes)
            graph = sum_output(graph)
        return graph, tree

    def _wrap_argnums(self, values, prep=None):
        """Per-argument results (computed in argument order) in the order of ``argnums``."""
        order = sorted(set(self.argnums))
        if prep is not None and prep.sparse:  # sparse arguments: sparse results
            values = [prep.sparse.repackage(i, v) for i, v in zip(order, values)]
        values = [values[order.index(a)] for a in self.argnums]
        return tuple(values) if self.argnums_tuple else values[0]

    def _check_directions(self, prep, vs, what="direction"):
        vs = vs if self.argnums_tuple else (vs,)
        if not isinstance(vs, (tuple, list)) or len(vs) != len(self.argnums):
            raise ShapeMismatchError(
                f"expected {len(self.argnums)} {what}(s), one per differentiated argument")
        out = []
        for i, v in zip(self.argnums, vs):
            v = prep.sparse.direction(i, v)
            x = prep.arrays[prep.positions.index(i)]
            b = array_backend(v)
            if b is None:
                raise ShapeMismatchError(f"the {what} for argument {i} must be an array, "
                                         f"got {type(v).__name__}")
            if b is not prep.backend:
                from .errors import BackendMismatchError

                raise BackendMismatchError(
                    f"the {what} for argument {i} is a {b.name} array but the arguments are "
                    f"{prep.backend.name} arrays")
            if tuple(v.shape) != tuple(x.shape):
                raise ShapeMismatchError(
                    f"the {what} for argument {i} has shape {tuple(v.shape)}, but the "
                    f"argument has shape {tuple(x.shape)}")
            if v.dtype != x.dtype:
                v = v.astype(x.dtype)
            out.append(v)
        return out


class _Grad(Transformed):
    kind = "grad"

    def __init__(self, fn, argnums=0, has_value=False):
        super().__init__(fn, argnums)
        self.has_value = has_value
        if has_value:
            self.kind = "value_and_grad"

    def build(self, fn, prep):
        graph, tree = self._base(fn, prep)
        if tree is not None:
            raise NonScalarOutputError(
                f"{self.__name__} returns a tuple; grad needs one scalar output")
        return grad_graph(graph, prep.graph_argnums(self.argnums)), tree

    def finish(self, entry, prep, outs):
        grads = self._wrap_argnums(outs[1:], prep)
        return (outs[0], grads) if self.has_value else grads


class _Hvp(Transformed):
    kind = "hvp"

    def __init__(self, fn, argnums=0, batch_axes=None, returns="hvp"):
        super().__init__(fn, argnums, batch_axes)
        if len(set(self.argnums)) != len(self.argnums):
            raise DualgpuError(f"hvp: argnums {self.argnums} names an argument twice; "
                               "give each argument once (its direction goes with it)")
        self.returns = returns
        self.kind = "hvp:" + returns

    def split(self, args):
        if len(args) < 1:
            raise DualgpuError(f"{self.__name__} needs the arguments followed by the "
                               "direction v")
        return args[:-1], args[-1]

    def compiled(self, args):
        entry, prep, v = super().compiled(args)
        vs = self._check_directions(prep, v)  # in argnums order; the program takes them
        return entry, prep, tuple(vs[self.argnums.index(a)] for a in sorted(self.argnums))

    def build(self, fn, prep):
        graph, tree = self._base(fn, prep)
        if tree is not None:
            raise NonScalarOutputError(
                f"{self.__name__} returns a tuple; hvp needs one scalar output")
        return hvp_graph(graph, prep.graph_argnums(self.argnums)), tree

    def finish(self, entry, prep, outs):
        k = len(self.argnums)
        value, grads, hvps = outs[0], outs[1:1 + k], outs[1 + k:]
        if self.returns == "hvp":
            return self._wrap_argnums(hvps, prep)
        result = (self._wrap_argnums(grads, prep), self._wrap_argnums(hvps, prep))
        if self.returns == "value_grad_hvp":
            return (value,) + result
        return result


class _Jvp(Transformed):
    kind = "jvp"

    def build(self, fn, prep):
        graph, tree = _base_graph(fn, prep)
        return jvp_graph(graph, [True] * len(graph.inputs)), tree


class _Vjp(Transformed):
    kind = "vjp"

    def programs(self, prep: Prepared) -> tuple[Compiled, Executable]:
        """The pullback program (primals, cotangents) -> (outputs, input cotangents) and
        the forward program, both cached."""
        key = (self.kind, id(self.fn), prep.key)

        def build():
            graph, tree = _base_graph(self.fn, prep)
            pullback = Compiled(vjp_graph(graph, [True] * len(graph.inputs)), tree,
                                prep.backend)
            return pullback, Executable(simplify(graph), prep.backend)

        return _GLOBAL_CACHE.get_or_build(key, build)


# ------------------------------------------------------------------------------ public API
def grad(fn: Callable | None = None, argnums=0):
    """Gradient of a scalar function: ``grad(f)(*args)``; a tuple when ``argnums`` is.

    Example::

        >>> import numpy as np, dualgpu as dg
        >>> dg.grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
        array([2., 4.])
    """
    if fn is None:
        return lambda f: grad(f, argnums)
    return _Grad(fn, argnums)


def value_and_grad(fn: Callable | None = None, argnums=0):
    """``value_and_grad(f)(*args) -> (f(*args), grad)``.

    Example::

        >>> v, g = dg.value_and_grad(lambda x: np.sum(x ** 2))(np.array([3.0]))
        >>> float(v), g
        (9.0, array([6.]))
    """
    if fn is None:
        return lambda f: value_and_grad(f, argnums)
    return _Grad(fn, argnums, has_value=True)


def hvp(fn: Callable | None = None, argnums=0, batch_axes=None):
    """Hessian-vector product by forward-over-reverse: ``hvp(f)(*args, v) -> H·v``.

    With ``batch_axes`` (the instance axes of the differentiated argument), ``f`` returns one
    value per instance and the result is the per-instance product (the block-diagonal
    Hessian applied to ``v``); dualgpu first checks on the graph that ``f`` does not couple
    instances. Usable as a decorator, ``@dg.hvp`` or ``@dg.hvp(argnums=1)``.

    Example::

        >>> f = lambda x: np.sum(x ** 3)
        >>> dg.hvp(f)(np.array([1.0, 2.0]), np.array([1.0, 0.0]))
        array([6., 0.])
    """
    if fn is None:
        return lambda f: hvp(f, argnums, batch_axes)
    return _Hvp(fn, argnums, batch_axes, returns="hvp")


def grad_and_hvp(fn: Callable | None = None, argnums=0, batch_axes=None,
                 return_value: bool = False):
    """``grad_and_hvp(f)(*args, v) -> (grad, H·v)`` from one program (one pass on the GPU).

    ``return_value=True`` gives ``(value, grad, H·v)``; with ``batch_axes`` the value is
    the sum over instances.

    Example::

        >>> g, hv = dg.grad_and_hvp(lambda x: np.sum(np.sin(x)))(np.zeros(2), np.ones(2))
    """
    if fn is None:
        return lambda f: grad_and_hvp(f, argnums, batch_axes, return_value)
    return _Hvp(fn, argnums, batch_axes,
                returns="value_grad_hvp" if return_value else "grad_hvp")


def jvp(fn: Callable, primals: Sequence[Any], tangents: Sequence[Any]):
    """Forward mode: ``(f(*primals), J·tangents)``.

    Example::

        >>> dg.jvp(np.sin, (np.zeros(2),), (np.ones(2),))
        (array([0., 0.]), array([1., 1.]))
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise ShapeMismatchError(
            "jvp takes the primals and the tangents as tuples: jvp(f, (x,), (t,)), got "
            f"{type(primals).__name__} and {type(tangents).__name__}")
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ShapeMismatchError(
            f"jvp got {len(primals)} primals but {len(tangents)} tangents")
    t = _Jvp(fn, argnums=tuple(range(len(primals))))
    entry, prep, _ = t.compiled(primals)
    ts = t._check_directions(prep, tangents, what="tangent")
    outs = entry.exe(*prep.arrays, *ts)
    n = len(outs) // 2
    return unflatten_outputs(entry.tree, outs[:n]), unflatten_outputs(entry.tree, outs[n:])


def vjp(fn: Callable, *primals):
    """Reverse mode: ``(f(*primals), pullback)``; ``pullback(cotangent)`` returns a tuple of
    cotangents, one per primal.

    Example::

        >>> out, pullback = dg.vjp(np.sin, np.zeros(2))
        >>> pullback(np.ones(2))
        (array([1., 1.]),)
    """
    t = _Vjp(fn, argnums=tuple(range(len(primals))))
    prep = Prepared(primals, t.argnums, "primals")
    entry, forward = t.programs(prep)
    outs = forward(*prep.arrays)

    def pullback(cotangent):
        leaves = flatten_outputs(cotangent)[0] if entry.tree is not None else [cotangent]
        if len(leaves) != len(outs):
            raise ShapeMismatchError(f"pullback expects {len(outs)} cotangent(s), "
                                     f"got {len(leaves)}")
        cts = []
        for c, o in zip(leaves, outs):
            c = prep.backend.xp.asarray(c)
            if tuple(c.shape) != tuple(o.shape):
                raise ShapeMismatchError(
                    f"cotangent has shape {tuple(c.shape)}, output has {tuple(o.shape)}")
            cts.append(c.astype(o.dtype))
        res = entry.exe(*prep.arrays, *cts)[len(outs):]
        return tuple(prep.sparse.repackage(i, r) for i, r in zip(prep.positions, res))

    return unflatten_outputs(entry.tree, outs), pullback


def hessian(fn: Callable, argnums: int = 0):
    """Dense Hessian (for small problems): ``hessian(f)(*args)`` has shape
    ``x.shape + x.shape``. Built column by column from cached HVPs.

    Example::

        >>> dg.hessian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
        array([[ 6.,  0.],
               [ 0., 12.]])
    """
    h = _Hvp(fn, argnums, returns="hvp")

    @functools.wraps(fn)
    def hess(*args):
        x = args[argnums]
        xp = backend_of([x]).xp
        n = int(np.prod(x.shape))
        cols = []
        for i in range(n):
            e = xp.zeros(n, dtype=x.dtype)
            e[i] = 1
            cols.append(h(*args, e.reshape(x.shape)).reshape(-1))
        H = xp.stack(cols, axis=1)
        return H.reshape(tuple(x.shape) + tuple(x.shape))

    return hess


# ------------------------------------------------------------------------------ inspection
def trace(fn: Callable, *example_args) -> Graph:
    """The traced graph of ``fn`` on arguments like ``example_args``.

    Works on transformed functions too: ``dg.trace(dg.hvp(f), x, v)`` is the HVP program.

    Example::

        >>> print(dg.trace(lambda x: np.sum(np.sin(x)), np.ones(3)))
        { lambda x:float64[3] .
          t0:float64[3] = sin x
          t1:float64[] = reduce_sum t0 axes=(0,)
          in ( t1 ) }
    """
    if isinstance(fn, Transformed):
        return fn.graph(*example_args)
    prep = Prepared(example_args, (), "example arguments")
    graph, _ = _base_graph(fn, prep)
    return simplify(graph)


def source(fn: Callable, *example_args) -> str:
    """Generated source of ``fn`` (a plain or transformed function): Python for NumPy
    arguments; the fusion plan and CUDA kernels for CuPy arguments.

    Example::

        >>> print(dg.source(dg.grad(lambda x: np.sum(np.sin(x))), np.ones(3)))
    """
    if isinstance(fn, Transformed):
        return fn.source(*example_args)
    prep = Prepared(example_args, (), "example arguments")
    graph, _ = _base_graph(fn, prep)
    return Executable(simplify(graph), prep.backend).source


def jit(fn: Callable):
    """Trace, cache and compile ``fn`` itself (no derivative): NumPy runs generated
    Python, CuPy runs fused kernels.

    Example::

        >>> fast = dg.jit(lambda x: np.exp(-x ** 2).sum())
    """
    return _Jit(fn, argnums=())


class _Jit(Transformed):
    kind = "jit"

    def build(self, fn, prep):
        graph, tree = _base_graph(fn, prep)
        return simplify(graph), tree

    def finish(self, entry, prep, outs):
        return unflatten_outputs(entry.tree, outs)
