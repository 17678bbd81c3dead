"""The public transformations: grad, value_and_grad, hvp, grad_and_hvp, hessian, jit,
trace and source (jvp, linearize, vjp and linear_transpose: :mod:`dualgpu.api.linearization`).

Each transformation traces the function once per call signature (pytree structure, shapes,
dtypes, backend, exact static values, aliasing: :mod:`dualgpu.runtime.signature`), transforms the
graph, compiles it and caches the result. A transformation called on traced values (inside
another transformation) builds the same graph and inlines it into the enclosing trace, so
transformations compose to any depth: ``grad(grad(f))``, ``jit(hvp(f))``, a gradient
penalty that calls ``grad`` inside the loss.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import math
import threading
from collections.abc import Callable

import numpy as np

from ..base import tree as pytree
from ..core.ir import Graph
from ..errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    NonScalarOutputError,
    ShapeMismatchError,
    StaticArgumentError,
)
from ..runtime.checks import (
    check_bool,
    check_complex_inputs,
    check_holomorphic,
    check_scalar_output,
    normalize_argnums,
    output_reshaped,
    size_one_as_scalar,
)
from ..runtime.executor import config, jit_switch, jit_switch_open
from ..runtime.program_cache import cache_info, clear_cache, set_cache_size
from ..runtime.signature import SHAPES_ONLY, shape_stand_in
from ..runtime.tracing import name_of, with_aux
from ..runtime.transformed import Transformed
from ..transforms import grad_graph, hvp_graph, simplify
from ..transforms.hessian import hessian_graph

__all__ = ["cache_info", "clear_cache", "grad", "grad_and_hvp", "hessian", "hvp", "jit",
           "set_cache_size", "source", "trace", "value_and_grad"]


# ------------------------------------------------------------------------------ transforms
class _Grad(Transformed):
    kind = "grad"
    finish_places_outputs = True
    returns_value = False

    def __init__(self, fn, argnums=0, *, has_aux: bool = False, holomorphic: bool = False,
                 allow_int: bool = False):
        super().__init__(fn, argnums, has_aux=has_aux)
        self.holomorphic = check_holomorphic(holomorphic, f"dg.{self.kind}")
        self.allow_int = check_bool(allow_int, "allow_int", f"dg.{self.kind}")

    def options(self) -> dict:
        return {"holomorphic": self.holomorphic, "allow_int": self.allow_int}

    def build(self, traced, sig):
        main, aux, tree, aux_tree = self._base(traced, sig)
        main, size_one = size_one_as_scalar(main, tree)  # autograd takes it
        check_scalar_output(main, tree, self.__name__, self.holomorphic)
        check_complex_inputs(main, sig, self.__name__, self.holomorphic, "rev")
        program = grad_graph(main, sig.diff_inputs(),
                             stack=config.stack_gemms_for(sig.backend))
        if size_one is not None:  # the value in its own shape
            program = output_reshaped(program, size_one)
        return with_aux(program, aux), aux_tree

    def finish(self, compiled, sig, outs):
        n = sum(sig.diff)
        value, grads, aux = outs[0], outs[1:1 + n], outs[1 + n:]
        g = self._per_argnum(sig, grads)
        if self.has_aux:
            aux = pytree.unflatten(compiled.trees, aux)
            return ((value, aux), g) if self.returns_value else (g, aux)
        return (value, g) if self.returns_value else g


class _ValueAndGrad(_Grad):
    kind = "value_and_grad"
    returns_value = True


class _Hvp(Transformed):
    """``H·v``: the program computes only what the call returns (:meth:`outputs`), and
    :meth:`pick` shapes it."""

    kind = "hvp"
    finish_places_outputs = True

    def __init__(self, fn, argnums=0, batch_axes=None, has_aux=False):
        super().__init__(fn, argnums, has_aux=has_aux, batch_axes=batch_axes)
        if len(set(self.argnums)) != len(self.argnums):
            raise InvalidArgumentError(f"hvp: argnums {self.argnums} names an argument twice; "
                                       "give each argument once (its direction goes with it)")

    def split(self, args):
        if len(args) < 1:
            raise ArgumentTypeError(f"{self.__name__} needs the arguments followed by the "
                                    "direction v")
        return args[:-1], args[-1]

    def extra_inputs(self, sig, v):
        try:
            return self._directions(sig, v, "direction")
        except ShapeMismatchError as e:  # often scipy's hessp(x, p, *args) order
            raise ShapeMismatchError(
                f"{e} (hvp(f) takes f's arguments, then v last: hvp(f)(*args, v); for "
                "scipy.optimize.minimize's hessp=, called as hessp(x, p, *args), use "
                "dg.hessp(f))") from None

    def outputs(self) -> tuple[bool, bool]:
        """Whether the program computes ``(the value, the gradients)`` besides ``H·v``:
        what the call does not return is pruned from the program."""
        return False, False

    def build(self, traced, sig):
        main, aux, tree, aux_tree = self._base(traced, sig)
        main, size_one = size_one_as_scalar(main, tree)  # autograd takes it
        check_scalar_output(main, tree, self.__name__)
        value, grads = self.outputs()
        program = hvp_graph(main, sig.diff_inputs(), value=value, grads=grads,
                            stack=config.stack_gemms_for(sig.backend))
        if size_one is not None and value:  # the value in its own shape
            program = output_reshaped(program, size_one)
        return with_aux(program, aux), aux_tree

    def pick(self, sig, value, grads, hvps) -> tuple:
        """The results of a call, from the program's value, gradients and products (None
        where :meth:`outputs` left them out)."""
        return (self._per_argnum(sig, hvps),)

    def finish(self, compiled, sig, outs):
        n = sum(sig.diff)
        has_value, has_grads = self.outputs()
        value = outs[0] if has_value else None
        outs = outs[1:] if has_value else outs
        grads = outs[:n] if has_grads else None
        outs = outs[n:] if has_grads else outs
        hvps, aux = outs[:n], outs[n:]
        result = self.pick(sig, value, grads, hvps)
        if self.has_aux:
            result = result + (pytree.unflatten(compiled.trees, aux),)
        return result[0] if len(result) == 1 else result


class _GradAndHvp(_Hvp):
    """``(grad, H·v)``, or ``(value, grad, H·v)`` with ``return_value``."""

    kind = "grad_and_hvp"

    def __init__(self, fn, argnums=0, batch_axes=None, has_aux=False, return_value=False):
        if not isinstance(return_value, bool):
            raise ArgumentTypeError(f"grad_and_hvp: return_value must be True or False, got "
                                    f"{return_value!r}")
        self.return_value = return_value
        super().__init__(fn, argnums, batch_axes, has_aux)

    def options(self) -> dict:
        return {**super().options(), "return_value": self.return_value}

    def outputs(self) -> tuple[bool, bool]:
        return self.return_value, True

    def pick(self, sig, value, grads, hvps) -> tuple:
        g_hv = (self._per_argnum(sig, grads), self._per_argnum(sig, hvps))
        return (value,) + g_hv if self.return_value else g_hv


class _Jit(Transformed):
    kind = "jit"
    finish_places_outputs = True
    sees_values = False  # abstract tracing: a branch on a traced value is an error
    floats_fall_back = False  # a float is traced (an int needed as a number becomes static)

    def __init__(self, fn, argnums=(), *, static_argnums=None, static_argnames=None):
        super().__init__(fn, argnums)
        self.static = _static_arguments(fn, static_argnums, static_argnames)
        refusal = _unknown_static(fn, () if static_argnums is None else static_argnums,
                                  () if static_argnames is None else static_argnames)
        if refusal is not None:  # when jit is applied, as JAX's resolve_argnums
            raise InvalidArgumentError(refusal)

    def options(self) -> dict:
        return {"static": self.static} if self.static != ((), ()) else {}

    def _signature(self, fargs, kwargs):
        if self.static != ((), ()):
            _check_hashable(self.__name__, self.static, fargs, kwargs)
        return super()._signature(fargs, kwargs)

    def build(self, traced, sig):
        return simplify(traced.graph), traced.out_tree

    def finish(self, compiled, sig, outs):
        return pytree.unflatten(compiled.trees, outs)

    def eval_shape(self, *args, **kwargs):
        """JAX's ``jit(f).eval_shape(*args)``: :func:`eval_shape` of this function."""
        return eval_shape(self, *args, **kwargs)


# ------------------------------------------------------------------------------ public API
def grad(fn: Callable | None = None, argnums=0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False):
    """Gradient of a scalar function: ``grad(f)(*args)``; a tuple when ``argnums`` is.

    Arguments may be pytrees (nested tuples, lists and dicts of arrays): the gradient has the
    argument's structure. With ``has_aux=True``, ``f`` returns ``(value, aux)`` and the
    result is ``(grad, aux)``. Keyword arguments are passed through, not differentiated.

    The output must be real, as in JAX; a real output of complex inputs gets JAX's
    convention (``grad(lambda z: abs(z) ** 2)(z) == 2 * conj(z)``). With
    ``holomorphic=True`` the output and the differentiated inputs must be complex and the
    result is the complex derivative ``f'(z)`` (of a holomorphic ``f``: dualgpu does not
    check that it is).

    As in JAX, ``argnums`` may count from the end (``-1`` is the last positional argument),
    and an integer argument (a Python ``int`` too) is refused unless ``allow_int=True``,
    which gives it a zero gradient of dtype ``float0`` (``dg.float0``, JAX's).

    Example::

        >>> import numpy as np, dualgpu as dg
        >>> dg.grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
        array([2., 4.])
        >>> dg.grad(lambda p: np.sum(p["w"] * p["b"]))({"w": np.ones(2), "b": np.arange(2.)})
        {'b': array([1., 1.]), 'w': array([0., 1.])}
        >>> dg.grad(lambda z: z ** 2, holomorphic=True)(np.array(1 + 2j))
        array(2.+4.j)
        >>> dg.grad(lambda x, n: np.sum(x ** 2) * n, argnums=-2)(np.ones(2), 3)
        array([6., 6.])
        >>> g, g_n = dg.grad(lambda x, n: np.sum(x) * n, (0, 1), allow_int=True)(np.ones(2), 3)
        >>> g, g_n.dtype == dg.float0
        (array([3., 3.]), True)
    """
    if fn is None:
        return lambda f: grad(f, argnums, has_aux, holomorphic, allow_int)
    return _Grad(fn, argnums, has_aux=has_aux, holomorphic=holomorphic, allow_int=allow_int)


def value_and_grad(fn: Callable | None = None, argnums=0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False):
    """``value_and_grad(f)(*args) -> (f(*args), grad)``; with ``has_aux=True``,
    ``((value, aux), grad)``. ``holomorphic`` and ``allow_int`` as in :func:`grad`.

    Example::

        >>> v, g = dg.value_and_grad(lambda x: np.sum(x ** 2))(np.array([3.0]))
        >>> float(v), g
        (9.0, array([6.]))
        >>> dg.value_and_grad(lambda z: z * z, holomorphic=True)(np.array(1 + 1j))
        (array(0.+2.j), array(2.+2.j))
    """
    if fn is None:
        return lambda f: value_and_grad(f, argnums, has_aux, holomorphic, allow_int)
    return _ValueAndGrad(fn, argnums, has_aux=has_aux, holomorphic=holomorphic,
                         allow_int=allow_int)


def hvp(fn: Callable | None = None, argnums=0, batch_axes=None, has_aux: bool = False):
    """Hessian-vector product by forward-over-reverse: ``hvp(f)(*args, v) -> H·v``.

    ``v`` has the structure of the differentiated argument (a tuple of them when
    ``argnums`` is a tuple). With ``batch_axes`` (the instance axes of the differentiated
    argument), ``f`` returns one value per instance and the result is the per-instance
    product (the block-diagonal Hessian applied to ``v``); dualgpu first checks on the graph
    that ``f`` does not couple instances. With ``has_aux=True``: ``(H·v, aux)``. Usable as a
    decorator, ``@dg.hvp`` or ``@dg.hvp(argnums=1)``.

    Example::

        >>> f = lambda x: np.sum(x ** 3)
        >>> dg.hvp(f)(np.array([1.0, 2.0]), np.array([1.0, 0.0]))
        array([6., 0.])
    """
    if fn is None:
        return lambda f: hvp(f, argnums, batch_axes, has_aux)
    return _Hvp(fn, argnums, batch_axes, has_aux=has_aux)


def grad_and_hvp(fn: Callable | None = None, argnums=0, batch_axes=None,
                 return_value: bool = False, has_aux: bool = False):
    """``grad_and_hvp(f)(*args, v) -> (grad, H·v)`` from one program (one pass on the GPU).

    ``return_value=True`` gives ``(value, grad, H·v)``; with ``batch_axes`` the value is
    the sum over instances; ``has_aux=True`` appends ``aux``.

    Example::

        >>> g, hv = dg.grad_and_hvp(lambda x: np.sum(np.sin(x)))(np.zeros(2), np.ones(2))
        >>> g, hv
        (array([1., 1.]), array([-0., -0.]))
    """
    if fn is None:
        return lambda f: grad_and_hvp(f, argnums, batch_axes, return_value, has_aux)
    return _GradAndHvp(fn, argnums, batch_axes, has_aux, return_value)


class _Hessian(Transformed):
    """The dense Hessian of a scalar function, JAX's ``jacfwd(jacrev(f, argnums),
    argnums)``: for one array argument of shape ``S``, an array ``S + S``; for pytrees and
    tuple ``argnums``, JAX's nesting (block ``[a][b]`` of shape ``a.shape + b.shape``). The
    forward-over-reverse product with every basis vector, batched into one program. A
    transform like the others: cached, inlined when called on traced values, exported."""

    kind = "hessian"
    finish_places_outputs = True
    nested: Callable | None = None  # jacfwd(jacrev(fn)), once fn returned a non-scalar

    def __call__(self, *args, **kwargs):
        if self.nested is None:
            try:
                return super().__call__(*args, **kwargs)
            except _NotScalar:  # JAX's hessian of a vector (or pytree) output: nested
                argnums = self.argnums if self.argnums_tuple else self.argnums[0]
                self.nested = NESTED_HESSIAN[0](self.fn, argnums, self.has_aux, False)
        return self.nested(*args, **kwargs)

    def build(self, traced, sig):
        main, aux, tree, aux_tree = traced.split_aux(self.has_aux, self.__name__)
        if tree is None or not tree.is_leaf or tuple(main.outputs[0].shape) != ():
            raise _NotScalar(self.__name__)
        check_scalar_output(main, tree, self.__name__)
        # JAX's jacfwd(jacrev(f)): a complex input without holomorphic=True is refused (the
        # Hessian's columns would be those of the real directions only)
        check_complex_inputs(main, sig, self.__name__, False, "fwd")
        if sig.sparse:
            raise ArgumentTypeError(f"{self.__name__}: a sparse matrix argument has no dense "
                                    "Hessian; pass its dense form (x.toarray())")
        return with_aux(hessian_graph(main, sig.diff_inputs()), aux), aux_tree

    def finish(self, compiled, sig, outs):
        k = sum(sig.diff)
        rows = [self._per_argnum(sig, outs[i * k:(i + 1) * k], repackage=False)
                for i in range(k)]  # rows[i]: the blocks of leaf i against every leaf
        hess = self._per_argnum(sig, rows, repackage=False)
        if self.has_aux:
            return hess, pytree.unflatten(compiled.trees, outs[k * k:])
        return hess


# JAX's hessian, jacfwd(jacrev(fn, argnums, has_aux, holomorphic), ...): given by the
# module of the Jacobians (dualgpu/api/vectorize.py, a layer above this one) when imported
NESTED_HESSIAN: list[Callable] = []


class _NotScalar(NonScalarOutputError):
    """The traced function of a :class:`_Hessian` returns something other than a scalar."""


def hessian(fn: Callable | None = None, argnums=0, has_aux: bool = False,
            holomorphic: bool = False):
    """Dense Hessian (for small problems), JAX's ``jacfwd(jacrev(f, argnums), argnums)``:
    ``hessian(f)(*args, **kwargs)`` has shape ``x.shape + x.shape`` for the array
    ``x = args[argnums]``. For a pytree argument or a tuple ``argnums``, JAX's nesting:
    the argument's structure, each leaf ``a`` replaced by the structure again, holding the
    blocks ``a.shape + b.shape``. A function of a non-scalar output (or ``holomorphic=True``,
    complex inputs and output) gets JAX's ``jacfwd(jacrev(f))`` itself: the output's shape
    (structure) first. Keyword arguments are passed through to ``f``, not
    differentiated; with ``has_aux=True``, ``f`` returns ``(value, aux)`` and the result is
    ``(hessian, aux)``. One program (the Hessian-vector product batched over the basis
    vectors), cached like the other transforms, and composable with them: ``jit``,
    ``vmap``, ``grad`` (third derivatives), ``jvp``, ``hessian`` and ``dg.export`` of it.
    Usable as a decorator.

    Example::

        >>> dg.hessian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
        array([[ 6.,  0.],
               [ 0., 12.]])
        >>> dg.hessian(lambda x, c: c * np.sum(x ** 3))(np.array([1.0, 2.0]), c=0.5)
        array([[3., 0.],
               [0., 6.]])
        >>> dg.vmap(dg.hessian(lambda x: np.sum(x ** 3)))(np.array([[1.0], [2.0]]))
        array([[[ 6.]],
        <BLANKLINE>
               [[12.]]])
        >>> H = dg.hessian(lambda x, y: x * y ** 2, argnums=(0, 1))(1.0, 3.0)
        >>> [[float(h) for h in row] for row in H]
        [[0.0, 6.0], [6.0, 2.0]]
        >>> dg.hessian(lambda p: p["a"] * p["b"])({"a": 2.0, "b": 5.0})["a"]["b"]
        array(1.)
    """
    if fn is None:
        return lambda f: hessian(f, argnums, has_aux, holomorphic)
    if check_holomorphic(holomorphic, "dg.hessian"):
        return NESTED_HESSIAN[0](fn, argnums, has_aux, True)
    return _Hessian(fn, argnums, has_aux=has_aux)


# ------------------------------------------------------------------------------ inspection
def trace(fn: Callable, *example_args, **example_kwargs) -> Graph:
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
        return fn.graph(*example_args, **example_kwargs)
    return _Jit(fn, argnums=()).graph(*example_args, **example_kwargs)


class ShapeDtypeStruct:
    """A shape and a dtype, JAX's ``jax.ShapeDtypeStruct``: what :func:`eval_shape` returns
    for each output, and what it (and :func:`linear_transpose`) takes for an argument."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        if dtype is None:  # np.dtype(None) would be float64
            raise InvalidArgumentError("ShapeDtypeStruct: dtype must be specified")
        if any(d is None for d in shape):
            raise InvalidArgumentError(f"ShapeDtypeStruct: `shape` {tuple(shape)} cannot have "
                                       "None (dualgpu's shapes are concrete)")
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    def __len__(self) -> int:
        if not self.shape:
            raise ArgumentTypeError("len() of a 0-d ShapeDtypeStruct (an unsized object)")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"

    def __eq__(self, other) -> bool:
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype))


def eval_shape(fn: Callable, *args, **kwargs):
    """The shapes and dtypes of ``fn(*args, **kwargs)``'s outputs, as JAX's ``eval_shape``:
    the output's structure with a :class:`ShapeDtypeStruct` per array, from a trace of
    ``fn`` (nothing is computed on the arguments, nothing compiled). An argument may be an
    array or only its shape and dtype (a ShapeDtypeStruct, JAX's, any object with ``shape``
    and ``dtype``); ``fn`` may be a transformed function.

    Example::

        >>> x = dg.ShapeDtypeStruct((1000, 3), np.float32)
        >>> y, n = dg.eval_shape(lambda x, w: (np.tanh(x @ w), np.sum(x)), x, np.ones(3))
        >>> y
        ShapeDtypeStruct(shape=(1000,), dtype=float64)
        >>> n.shape, n.dtype
        ((), dtype('float32'))
    """
    if not callable(fn):
        raise ArgumentTypeError(f"eval_shape expects a function, got {type(fn).__name__}")
    args, kwargs = pytree.tree_map(shape_stand_in, (args, kwargs))
    trees: list = []

    def flat(*a, **k):
        leaves, tree = pytree.flatten(fn(*a, **k))
        trees.append(tree)
        return leaves

    flat.__name__ = name_of(fn)
    shapes_only = SHAPES_ONLY.set(True)  # a jit function called on one inside, as JAX
    try:
        graph = trace(flat, *args, **kwargs)
    finally:
        SHAPES_ONLY.reset(shapes_only)
    return pytree.unflatten(trees[-1], [ShapeDtypeStruct(o.aval.shape, o.aval.dtype)
                                        for o in graph.outputs])


def source(fn: Callable, *example_args, **example_kwargs) -> str:
    """Generated source of ``fn`` (a plain or transformed function): Python for NumPy
    arguments; the fusion plan and CUDA kernels for CuPy arguments.

    Example::

        >>> print(dg.source(dg.grad(lambda x: np.sum(np.sin(x))), np.ones(3)))
        def vjp__lambda(x):
            t0 = xp.sin(x)
            t1 = xp.sum(t0, axis=(0,))
            t2 = xp.cos(x)
            return (xp.asarray(t1), t2)
        ...
    """
    if not isinstance(fn, Transformed):
        fn = _Jit(fn, argnums=())
    return fn.source(*example_args, **example_kwargs)


def jit(fn: Callable | None = None, *, static_argnums=None, static_argnames=None):
    """Trace, cache and compile ``fn`` itself (no derivative): NumPy runs generated
    Python, CuPy runs fused kernels. Arguments and results may be pytrees.

    As in JAX, floating and complex scalars are traced: a Python ``float`` is a weakly typed
    0-d input (``x32 * dt`` stays float32), so a new value (the time step of an ODE loop)
    reuses the program. Python ints, bools and strings are static (a new value traces
    again: they may be shapes, indices or loop counts). ``static_argnums`` /
    ``static_argnames`` make other arguments static, keyed by their value: for a function
    that branches on a number, or passes it to ``math``; they must be hashable. As in JAX,
    positions given alone also name their parameters (passed by keyword, they stay static),
    and names alone their positions; given both, each is taken as it is. Usable as a
    decorator, also with options: ``@dg.jit(static_argnums=1)``.

    Example::

        >>> fast = dg.jit(lambda x: np.exp(-x ** 2).sum())
        >>> fast(np.zeros(3))
        array(3.)
        >>> step = dg.jit(lambda x, dt: x + dt * np.sin(x))
        >>> step(np.zeros(2, np.float32), 0.1).dtype  # dt is traced, weakly typed
        dtype('float32')
        >>> def power(x, p):
        ...     return x ** 2 if p > 1.5 else x
        >>> dg.jit(power, static_argnums=1)(np.array([3.0]), 2.0)
        array([9.])
    """
    if fn is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames)
    if isinstance(fn, staticmethod):  # JAX: "staticmethod arguments are not supported"
        raise ArgumentTypeError("dg.jit of a staticmethod: staticmethod arguments are not "
                                "supported; put @staticmethod above @dg.jit (outermost)")
    return _Jit(fn, argnums=(), static_argnums=static_argnums,
                static_argnames=static_argnames)


_SWITCH_LOCK = threading.Lock()


@contextlib.contextmanager
def disable_jit(disable: bool = True):
    """JAX's ``disable_jit``: inside the ``with`` (in this thread), functions made by
    :func:`jit` run as the plain Python functions they wrap, every call (to debug them with
    ``print`` and a debugger); inside another transform they are traced inline. The other
    transforms still trace and compile.

    Example::

        >>> calls = []
        >>> def f(x):
        ...     calls.append(1)
        ...     return x * 2
        >>> fast = dg.jit(f)
        >>> with dg.disable_jit():
        ...     _ = fast(np.ones(2)), fast(np.ones(2))
        >>> len(calls)
        2
    """
    previous = jit_switch.on
    jit_switch.on = bool(disable)
    with _SWITCH_LOCK:
        jit_switch_open[0] += 1
    try:
        yield
    finally:
        jit_switch.on = previous
        with _SWITCH_LOCK:
            jit_switch_open[0] -= 1


def _unknown_static(fn, static_argnums, static_argnames) -> str | None:
    """What is wrong with static positions or names that ``fn`` has no parameter for
    (JAX's ``ValueError``), or None; a function taking ``*args``/``**kwargs`` takes any."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    kinds = {p.kind for p in params}
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    nums, _ = normalize_argnums(static_argnums)
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    n = len(positional)
    bad = [i for i in nums if not -n <= i < n]
    if bad and inspect.Parameter.VAR_POSITIONAL not in kinds:
        return (f"jit of {name_of(fn)}: static_argnums={tuple(nums)!r} names position(s) "
                f"{tuple(bad)!r}, but the function takes {n} positional argument(s)")
    known = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    never = [a for a in names if a in {p.name for p in params} - known]
    if never:  # a positional-only parameter or *args / **kwargs: no keyword can set them
        return (f"jit of {name_of(fn)}: static_argnames={names!r} names {tuple(never)!r}, a "
                "positional-only or variadic parameter, which no keyword argument can be "
                "(give its position in static_argnums)")
    unknown = [a for a in names if a not in known]
    if unknown and inspect.Parameter.VAR_KEYWORD not in kinds:
        return (f"jit of {name_of(fn)}: static_argnames={names!r} names {tuple(unknown)!r}, "
                f"which the function has no parameter for (its parameters: "
                f"{', '.join(p.name for p in params) or 'none'})")
    return None


def _static_arguments(fn, static_argnums, static_argnames) -> tuple:
    """``(positions, names)`` of ``fn``'s static arguments, as JAX's
    ``infer_argnums_and_argnames``: positions given alone with their parameters' names,
    names given alone with their positions; given both, each as it is."""
    pair = static_argnums is None or static_argnames is None
    nums, _ = normalize_argnums(() if static_argnums is None else static_argnums)
    static_argnames = () if static_argnames is None else static_argnames
    names = (static_argnames,) if isinstance(static_argnames, str) else static_argnames
    if not isinstance(names, (tuple, list)) or not all(isinstance(n, str) for n in names):
        raise ArgumentTypeError(f"jit: static_argnames must be a str or a tuple of str, got "
                                f"{static_argnames!r}")
    names = tuple(names)
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p.name for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if positional:  # negative positions count from the end of the parameters, as JAX
        nums = tuple(i % len(positional) if -len(positional) <= i < 0 else i for i in nums)
    if not pair:
        return tuple(sorted(set(nums))), tuple(sorted(set(names)))
    names += tuple(positional[i] for i in nums
                   if -len(positional) <= i < len(positional) and positional[i] not in names)
    nums += tuple(positional.index(n) for n in names
                  if n in positional and positional.index(n) not in nums)
    return tuple(sorted(set(nums))), tuple(sorted(set(names)))


def _check_hashable(what: str, static: tuple, args: tuple, kwargs: dict) -> None:
    """Refuse a static argument holding a value that is not hashable (an array, a set), as
    JAX does: it cannot key the program (by identity, a set changed in place would reuse a
    program built for its old items)."""
    nums, names = static
    given = [(f"argument {i}", args[i]) for i in nums if -len(args) <= i < len(args)]
    given += [(f"keyword argument {n!r}", kwargs[n]) for n in names if n in kwargs]
    for label, value in given:
        for leaf in pytree.leaves(value):
            try:
                hash(leaf)
            except TypeError as e:
                raise StaticArgumentError(
                    f"{what}: {label} is static (static_argnums / static_argnames), but "
                    f"holds a {type(leaf).__name__} ({e}): Non-hashable static arguments are "
                    "not supported. A static argument keys the program by its value: pass a "
                    "hashable one (a number, string, tuple, frozenset), or pass an array as "
                    "an ordinary argument (an input of the program)"
                ) from None
