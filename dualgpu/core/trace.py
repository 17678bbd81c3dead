"""Tracing: run a Python function on :class:`Tracer` values and record a :class:`Graph`.

NumPy calls reach tracers through ``__array_ufunc__``/``__array_function__``. CuPy ufuncs do
not dispatch on foreign objects (cupy issue 8597), so :func:`trace_function` also rebinds the
traced function's references to ``numpy``, ``cupy``, ``cupyx`` and ``scipy.special`` (in its
globals and closure cells, and recursively in the plain Python functions it calls) to a
tracing namespace (:mod:`dualgpu.frontend.namespace`).
"""
from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType, ModuleType
from typing import Any

import numpy as np

from ..backends import array_backend, backend_for_xp, namespace_of
from ..base.tree import postorder
from ..errors import (
    BackendMismatchError,
    DualgpuError,
    EscapedTracerError,
    ShapeMismatchError,
    TracerControlFlowError,
    UnsupportedOpError,
    like_numpy_error,
    no_matrix,
    user_location,
)
from .conversions import (
    LOAD_SUBSCR,
    STORE_SUBSCR,
    UNDECIDED,  # noqa: F401  (re-exported: the concretize protocol's answer)
    executing,
    index_error,
    no_concrete,
    store_error,
)
from .encode import TRACER_TYPES, check_equation
from .flags import Flag
from .ir import Atom, Aval, Const, Eqn, Graph, Literal, Var
from .substitution import SUBSTITUTIONS, substitute

# an op of the registry (dualgpu.core.primitives, a layer above this one, which binds here)
Primitive = Any

_SCALAR_TYPES = (bool, int, float, complex)



class GraphBuilder:
    """Collects equations while a function is traced."""

    def __init__(self, xp: ModuleType, parent: GraphBuilder | None = None):
        self.xp = xp
        self.backend = backend_for_xp(xp)
        self.parent = parent  # the trace this one runs inside (a transform called on tracers)
        self.eqns: list[Eqn] = []
        self.consts: dict[int, tuple[Any, Const]] = {}
        # var id -> the scalar every element of that var equals (from fill_like and the
        # shape ops applied to it); lets rules written naturally give lean graphs.
        self.fills: dict[int, Any] = {}
        self.alive = True
        # traced values of enclosing traces that this trace reads (closures of a function
        # transformed inside a traced function); None: such reads are errors
        self.captured: list[Tracer] | None = None
        self.captured_vars: dict[int, Var] = {}
        # while a transform rewrites an equation: the user's source line of that equation,
        # given to every equation its rule records (None: find the user's frame)
        self.rule_source: str | None = None
        # an error found where raising it would not reach the user (a conversion NumPy
        # makes inside item assignment): raised by the next equation or at the end
        self.deferred_error: DualgpuError | None = None
        # asked for the Python value of a traced value (bool(), int()...): trace_to_graph's
        self.concretize: Concretize | None = None

    def defer_error(self, error: DualgpuError) -> None:
        if self.deferred_error is None:
            self.deferred_error = error

    def raise_deferred(self, cause: BaseException | None = None) -> None:
        if self.deferred_error is not None:
            raise self.deferred_error from cause

    def new_input(self, aval: Aval) -> Tracer:
        return Tracer(Var(aval), self)

    def atom(self, value: Any, prim_name: str) -> Atom:
        if getattr(type(value), "_dualgpu_view_of_constant", False):
            value = value.constant_value()  # (traced: an array made and written in the trace)
        if isinstance(value, Tracer):
            if value._builder is not self and getattr(SUBSTITUTIONS, "pairs", None):
                value = substitute(value)
                if not isinstance(value, Tracer):
                    return self.atom(value, prim_name)
            if value._builder is not self:
                if self.captured is not None and self._encloses(value._builder):
                    return self._capture(value)
                raise EscapedTracerError(
                    f"{prim_name} received a traced value ({value._var.aval.str_short()}) from "
                    f"another (finished or outer) trace at {user_location()}: it must not be "
                    "stored and used after its function returns; pass it as an argument.")
            return value._var
        if isinstance(value, _SCALAR_TYPES) and not isinstance(value, np.generic):
            return Literal(value)
        return self.const(value)

    def _encloses(self, other: GraphBuilder) -> bool:
        b = self.parent
        while b is not None:
            if b is other:
                return other.alive
            b = b.parent
        return False

    def _capture(self, outer: Tracer) -> Var:
        """A traced value of an enclosing trace, read here: an extra input of this graph."""
        var = self.captured_vars.get(outer._var.id)
        if var is None:
            var = self.captured_vars[outer._var.id] = Var(outer._var.aval)
            assert self.captured is not None  # atom() captures only when there is a list
            self.captured.append(outer)
        return var

    def const(self, value: Any) -> Const:
        if getattr(type(value), "_dualgpu_view_of_constant", False):
            value = value.constant_value()  # a closed-over array, as the function saw it
        key = id(value)
        hit = self.consts.get(key)
        if hit is not None:
            return hit[1]
        arr = value
        if isinstance(value, (np.generic, list, tuple, np.matrix)):  # np.matrix: * a product
            arr = np.asarray(value)
        if isinstance(arr, np.ma.MaskedArray) or (isinstance(arr, np.ndarray)
                                                  and arr.dtype.kind == "O"):
            what = ("a masked array" if isinstance(arr, np.ma.MaskedArray)
                    else "an array of dtype object")
            raise UnsupportedOpError(
                f"{what} is used with traced values at {user_location()}: masks and Python "
                "objects are not traced (the mask would be dropped or carried into the "
                "result). Pass plain numbers: np.ma.filled(a, fill) or a.compressed(), or "
                "np.asarray(a, dtype=float).")
        backend = array_backend(arr)
        if backend is None:
            raise UnsupportedOpError(
                f"cannot use a value of type {type(value).__name__} inside a traced function "
                f"(at {user_location()}); pass arrays, sparse matrices or Python scalars")
        if backend is not self.backend:
            if backend.on_device:
                raise BackendMismatchError(
                    f"a CuPy array is used inside a function traced with NumPy inputs "
                    f"(at {user_location()}); use one array library per call")
            if not backend.is_sparse(arr):
                # a closed-over host (NumPy) array in a device (CuPy) program: moved to the
                # device once, here
                arr = self.backend.to_device(arr)
        c = Const(arr, Aval(tuple(arr.shape), np.dtype(arr.dtype)))
        self.consts[key] = (value, c)  # keep value alive so that id() stays unique
        return c

    def read_const(self, const: Const) -> Any:
        """A constant of a graph being re-traced, as a traced value of this trace: ops on it
        are recorded, never evaluated now. A closed-over array is read by reference when a
        program runs, so a value computed from it at the trace would keep its old contents
        after an in-place change while the program read the new ones. Index arrays, masks
        and sparse matrices stay concrete: rules build the derivative's structure from their
        values (sparse transforms check their contents on every call)."""
        backend = array_backend(const.value)  # never None: const() admits only arrays
        if const.aval.dtype.kind not in "fc" or backend is None or backend.is_sparse(const.value):
            return const.value
        hit = self.consts.setdefault(id(const.value), (const.value, const))
        return Tracer(hit[1], self)

    def record(self, prim: Primitive, args: Sequence[Any], params: dict) -> Any:
        self.raise_deferred()
        atoms = [self.atom(a, prim.name) for a in args]
        try:
            check_equation(prim.name, atoms, params)  # values are data, never code
            out_avals = prim.abstract_eval([a.aval for a in atoms], **params)
        except DualgpuError as e:
            # a shape error in user code: say where (once), as the ValueError NumPy raises
            # for operands that do not fit together when the rule gave no class of its own
            cls = ShapeMismatchError if type(e) is DualgpuError else type(e)
            if " (at " not in str(e):
                raise cls(f"{e} (at {user_location()})") from None
            if cls is not type(e):
                raise cls(str(e)) from None
            raise
        except Exception as e:
            if isinstance(e, (ValueError, TypeError, IndexError)) and _ours(prim):
                # NumPy's words about the user's shapes: one line, no NumPy traceback, the
                # class NumPy raised (a ValueError, a TypeError...)
                raise like_numpy_error(e)(f"{prim.name}: {e} (at {user_location()})") from None
            # a shape rule that fails (a user's defprim): say which, keep its traceback
            raise DualgpuError(
                f"the shape rule (abstract_eval) of primitive {prim.name!r} raised "
                f"{type(e).__name__}: {e} (applied at {user_location()}); fix the rule, or "
                "the arguments it was given (the cause is chained below)") from e
        multiple = prim.multiple_results
        outs = [Var(a) for a in (out_avals if multiple else [out_avals])]
        source = self.rule_source or user_location()
        self.eqns.append(Eqn(prim, atoms, dict(params), outs, source=source))
        if prim.has(Flag.IGNORES_VALUES):  # fill_like: every element is the value
            self.fills[outs[0].id] = params["value"]
        elif prim.has(Flag.SELECTS):  # a uniform input gives a uniform output
            src = atoms[0]
            if not isinstance(src, Literal) and src.id in self.fills:
                self.fills[outs[0].id] = self.fills[src.id]
        tracers = [Tracer(v, self) for v in outs]
        return tracers if multiple else tracers[0]


def _ours(prim: Primitive) -> bool:
    """True for a primitive whose shape rule is dualgpu's own (not a user's defprim)."""
    module = getattr(prim.abstract_eval, "__module__", None) or ""
    return module.split(".")[0] == "dualgpu"


# the traces running on each thread (``thread_state.builders``, innermost last); read
# directly by the fast path of cached calls, which must not call out of its module
thread_state = threading.local()


def bind(prim: Primitive, args: Sequence[Any], params: dict) -> Any:
    if getattr(SUBSTITUTIONS, "pairs", None):
        args = [substitute(a) for a in args]
    builder: GraphBuilder | None = None
    for a in args:
        if isinstance(a, Tracer) and a._builder is not builder:
            # the innermost trace records (it reads an enclosing trace's values as captures)
            if builder is None or _encloses(a._builder, builder):
                builder = a._builder
    if builder is None:
        result = prim.impl(namespace_of(args), *args, **params)
        if args and all(isinstance(a, _SCALAR_TYPES) and not isinstance(a, np.generic)
                        for a in args) and isinstance(result, (np.generic, np.ndarray)):
            # Python scalars in, Python scalar out: keeps NumPy's weak typing for literals
            result = result.item() if np.ndim(result) == 0 else result
        return result
    if not builder.alive:
        dead = next(a for a in args if isinstance(a, Tracer) and a._builder is builder)
        raise EscapedTracerError(
            f"{prim.name} was applied at {user_location()} to {dead!r}, whose trace has finished:"
            " it escaped its function (a global, a list...). Return the value from it instead.")
    fold = prim.rules.get("fold")
    if fold is not None:  # an exact identity on literals and fills (rules/folding.py)
        folded = fold(*args, **params)
        if folded is not None:
            return folded
    return builder.record(prim, args, params)


def _encloses(inner: GraphBuilder, outer: GraphBuilder) -> bool:
    """True when ``outer`` is a trace enclosing ``inner``."""
    b = inner.parent
    while b is not None:
        if b is outer:
            return True
        b = b.parent
    return False




class Concretize:
    """The protocol of a trace's ``concretize`` (:func:`trace_to_graph`): told the trace's
    builder and input variables when it starts, then asked for the Python value of each
    traced value the function converts (``kind``: ``"bool"``, ``"int"``, ``"index"``,
    ``"float"``, ``"complex"``, ``"item"``; and ``"repr"``, ``"hash"``, whose answer is not
    used): the value, or :data:`UNDECIDED`; it may raise to trace again."""

    def begin(self, builder: GraphBuilder, inputs: list[Var]) -> None:
        raise NotImplementedError

    def __call__(self, tracer: Tracer, kind: str) -> Any:
        raise NotImplementedError




_MATH_HINT = ("math-module functions (math.sin, math.exp, ...) take Python floats: use "
              "their NumPy counterparts (np.sin, np.exp, ...), which trace.")


class Tracer:
    """A stand-in for an array while a function is traced. Supports the ndarray interface."""

    __slots__ = ("_var", "_builder", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, var: Var, builder: GraphBuilder):
        self._var = var
        self._builder = builder

    # ------------------------------------------------------------ properties
    @property
    def aval(self) -> Aval:
        return self._var.aval

    @property
    def fill_value(self) -> Any:
        return self._builder.fills.get(self._var.id)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._var.aval.shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        return self._var.aval.dtype

    @property
    def ndim(self) -> int:
        return len(self._var.aval.shape)

    @property
    def size(self) -> int:
        return self._var.aval.size

    # T, mT, real, imag, the operators and the ndarray methods are written below: each
    # calls the NumPy function of its name from the module dualgpu.frontend registers
    # (register_front_end; this module is a leaf: it records, it knows no op)

    @property
    def device(self) -> Any:
        """The array-API device: ``"cpu"`` for NumPy traces, the current CUDA device for
        CuPy ones (so ``xp.asarray(c, device=x.device)`` traces)."""
        return self._builder.backend.default_device()

    def __len__(self) -> int:
        if not self.shape:
            raise UnsupportedOpError(f"len() of a 0-d traced array at {user_location()}")
        return self.shape[0]

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        if self._builder.concretize is not None:  # a scalar argument's: may become static
            self._builder.concretize(self, "repr")
        return f"Tracer<{self._var.aval.str_short()}>"

    # ------------------------------------------------------------ refusals
    __bool__ = no_concrete(
        "bool() (an `if`, `while`, `and`/`or` or assert)",
        "Use np.where(cond, a, b) to select values instead of branching on them.", kind="bool")
    __float__ = no_concrete("float() (or a math-module function; try x.astype(float))",
                             "Keep the value as an array; " + _MATH_HINT, float("nan"), "float")
    __int__ = no_concrete("int()", "Shapes are static: use x.shape (or try x.astype(int)).",
                           0, "int")
    __index__ = no_concrete("int()", "Shapes are static: use x.shape instead of values.",
                             kind="index")
    __complex__ = no_concrete("complex() (or a cmath-module function)",
                               "Keep the value as an array (try x.astype(complex)); "
                               + _MATH_HINT, complex("nan"), "complex")
    item = no_concrete(".item()", "Keep the value as an array.", kind="item")
    tolist = no_concrete(".tolist()", "Keep the value as an array.")
    get = no_concrete(".get() (a device-to-host copy)", "Return the value instead.")

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        if _sparse_probe():
            # scipy.sparse's A @ x probes x with np.asanyarray and returns NotImplemented
            # for a 0-d object array, so that our __rmatmul__ runs (sparse support).
            box = np.empty((), dtype=object)
            box[()] = self
            return box
        if executing(sys._getframe(1), STORE_SUBSCR):
            raise store_error(user_location())
        if executing(sys._getframe(1), LOAD_SUBSCR):
            raise index_error(user_location())
        raise _conversion_error(sys._getframe(1))

    def __setitem__(self, key: Any, value: Any) -> None:
        raise UnsupportedOpError(
            f"in-place assignment x[...] = v on a traced value at {user_location()} is not "
            "supported: write into a copy the function makes (y = np.copy(x); y[0] = v, or "
            "into np.zeros_like(x)), or build the new array with np.where or np.concatenate.")

    def __hash__(self) -> int:
        if self._builder.concretize is not None:  # a scalar argument's: may become static
            self._builder.concretize(self, "hash")
        return id(self)

    # ------------------------------------------------------------ NumPy protocols
    # (the handlers are installed by dualgpu.frontend.namespace: install_protocol_handlers)
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return _PROTOCOLS["ufunc"](ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return _PROTOCOLS["function"](func, args, kwargs)

    def __array_namespace__(self, api_version: str | None = None) -> Any:
        return _PROTOCOLS["namespace"](self._builder.xp)

    def __cupy_override_elementwise_kernel__(self, kernel: Any, *args: Any, **kwargs: Any) -> Any:
        # CuPy's ufuncs (recent versions) hand a call on a foreign object to this hook
        return _PROTOCOLS["cupy_kernel"](kernel, args, kwargs)

    # ------------------------------------------------------------ the ndarray interface
    # Each operator and method calls the NumPy-compatible function of that name (``np`` here
    # is dualgpu.frontend.numpy, registered from above at import: the core records equations and
    # knows no op).
    def __add__(self, other: Any) -> Any: return _np().add(self, other)
    def __radd__(self, other: Any) -> Any: return _np().add(other, self)
    def __sub__(self, other: Any) -> Any: return _np().subtract(self, other)
    def __rsub__(self, other: Any) -> Any: return _np().subtract(other, self)
    def __mul__(self, other: Any) -> Any: return _np().multiply(self, no_matrix(other, self))
    def __rmul__(self, other: Any) -> Any: return _np().multiply(no_matrix(other, self), self)
    def __truediv__(self, other: Any) -> Any: return _np().true_divide(self, other)
    def __rtruediv__(self, other: Any) -> Any: return _np().true_divide(other, self)
    def __pow__(self, other: Any) -> Any:
        # NumPy's operator squares for the exponent 2 (bool ** 2 is int8, np.power's int64)
        if type(other) is int and other == 2 and self.dtype.kind == "b":
            return _np().square(self)
        return _np().power(self, other)

    def __rpow__(self, other: Any) -> Any: return _np().power(other, self)
    def __matmul__(self, other: Any) -> Any: return _np().matmul(self, other)
    def __rmatmul__(self, other: Any) -> Any: return _np().matmul(other, self)
    def __floordiv__(self, other: Any) -> Any: return _np().floor_divide(self, other)
    def __rfloordiv__(self, other: Any) -> Any: return _np().floor_divide(other, self)
    def __mod__(self, other: Any) -> Any: return _np().remainder(self, other)
    def __rmod__(self, other: Any) -> Any: return _np().remainder(other, self)
    def __lt__(self, other: Any) -> Any: return _np().less(self, other)
    def __le__(self, other: Any) -> Any: return _np().less_equal(self, other)
    def __gt__(self, other: Any) -> Any: return _np().greater(self, other)
    def __ge__(self, other: Any) -> Any: return _np().greater_equal(self, other)
    def __eq__(self, other: Any) -> Any: return _np().equal(self, other)
    def __ne__(self, other: Any) -> Any: return _np().not_equal(self, other)
    def __and__(self, other: Any) -> Any: return _np().bitwise_and(self, other)
    def __rand__(self, other: Any) -> Any: return _np().bitwise_and(other, self)
    def __or__(self, other: Any) -> Any: return _np().bitwise_or(self, other)
    def __ror__(self, other: Any) -> Any: return _np().bitwise_or(other, self)
    def __xor__(self, other: Any) -> Any: return _np().bitwise_xor(self, other)
    def __rxor__(self, other: Any) -> Any: return _np().bitwise_xor(other, self)
    def __lshift__(self, other: Any) -> Any: return _np().left_shift(self, other)
    def __rlshift__(self, other: Any) -> Any: return _np().left_shift(other, self)
    def __rshift__(self, other: Any) -> Any: return _np().right_shift(self, other)
    def __rrshift__(self, other: Any) -> Any: return _np().right_shift(other, self)
    def __neg__(self) -> Any: return _np().negative(self)
    def __pos__(self) -> Any: return self
    def __abs__(self) -> Any: return _np().absolute(self)
    def __invert__(self) -> Any: return _np().invert(self)
    def __getitem__(self, key: Any) -> Any:  # a traced slice bound: its number (or refused)
        parts = key if type(key) is tuple else (key,)
        bounds = [(k.start, k.stop, k.step) if type(k) is slice else () for k in parts]
        if any(isinstance(b, Tracer) for bs in bounds for b in bs):
            key = tuple(slice(*(b.__index__() if isinstance(b, Tracer) else b for b in bs))
                        if bs else k for k, bs in zip(parts, bounds))
        return _np().getitem(self, key)

    T = property(lambda self: _np().transpose(self))
    mT = property(lambda self: _np().swapaxes(self, -1, -2))
    real = property(lambda self: _np().real(self))  # x itself for real dtypes
    imag = property(lambda self: _np().imag(self))  # zeros for real dtypes

    def sum(self, *a: Any, **k: Any) -> Any: return _np().sum(self, *a, **k)
    def mean(self, *a: Any, **k: Any) -> Any: return _np().mean(self, *a, **k)
    def max(self, *a: Any, **k: Any) -> Any: return _np().max(self, *a, **k)
    def min(self, *a: Any, **k: Any) -> Any: return _np().min(self, *a, **k)
    def prod(self, *a: Any, **k: Any) -> Any: return _np().prod(self, *a, **k)
    def var(self, *a: Any, **k: Any) -> Any: return _np().var(self, *a, **k)
    def std(self, *a: Any, **k: Any) -> Any: return _np().std(self, *a, **k)
    def all(self, *a: Any, **k: Any) -> Any: return _np().all(self, *a, **k)
    def any(self, *a: Any, **k: Any) -> Any: return _np().any(self, *a, **k)
    def cumsum(self, *a: Any, **k: Any) -> Any: return _np().cumsum(self, *a, **k)
    def cumprod(self, *a: Any, **k: Any) -> Any: return _np().cumprod(self, *a, **k)
    def ravel(self, *a: Any, **k: Any) -> Any: return _np().ravel(self, *a, **k)
    def flatten(self, *a: Any, **k: Any) -> Any: return _np().flatten(self, *a, **k)
    def squeeze(self, *a: Any, **k: Any) -> Any: return _np().squeeze(self, *a, **k)
    def swapaxes(self, *a: Any, **k: Any) -> Any: return _np().swapaxes(self, *a, **k)
    def repeat(self, *a: Any, **k: Any) -> Any: return _np().repeat(self, *a, **k)
    def diagonal(self, *a: Any, **k: Any) -> Any: return _np().diagonal(self, *a, **k)
    def take(self, *a: Any, **k: Any) -> Any: return _np().take(self, *a, **k)
    def trace(self, *a: Any, **k: Any) -> Any: return _np().trace(self, *a, **k)
    def clip(self, *a: Any, **k: Any) -> Any: return _np().clip(self, *a, **k)
    def dot(self, *a: Any, **k: Any) -> Any: return _np().dot(self, *a, **k)
    def astype(self, *a: Any, **k: Any) -> Any: return _np().astype(self, *a, **k)
    def copy(self, *a: Any, **k: Any) -> Any: return _np().copy(self, *a, **k)
    def conj(self, *a: Any, **k: Any) -> Any: return _np().conj(self, *a, **k)
    def conjugate(self, *a: Any, **k: Any) -> Any: return _np().conjugate(self, *a, **k)
    def argsort(self, *a: Any, **k: Any) -> Any: return _np().argsort(self, *a, **k)
    def argmax(self, *a: Any, **k: Any) -> Any: return _np().argmax(self, *a, **k)
    def argmin(self, *a: Any, **k: Any) -> Any: return _np().argmin(self, *a, **k)

    def reshape(self, *shape: Any, order: str = "C") -> Any:
        """``x.reshape(2, 3)`` and ``x.reshape((2, 3))``, as ndarray's."""
        dims = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return _np().reshape(self, dims, order=order)

    def transpose(self, *axes: Any) -> Any:
        """``x.transpose()``, ``x.transpose(1, 0)`` and ``x.transpose((1, 0))``, as ndarray's."""
        perm = axes[0] if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)) \
            else axes
        return _np().transpose(self, perm if perm != () else None)


def _conversion_error(frame: FrameType | None) -> TracerControlFlowError:
    """The error for ``np.asarray(tracer)``, naming the user's line; when a NumPy function
    written in Python made the conversion, it is named too (np.vectorize: use dg.vmap)."""
    library = None
    while frame is not None and (_inside_library(frame) or _inside_dualgpu(frame)):
        if library is None and _inside_library(frame):
            library = frame
        frame = frame.f_back
    where = ("<unknown location>" if frame is None
             else f"{frame.f_code.co_filename}:{frame.f_lineno}")
    hint = "Use dualgpu-supported NumPy functions on traced values instead."
    inside = ""
    if library is not None:
        # the outermost frame of the library call names the function the user called
        outer = library
        while outer.f_back is not None and _inside_library(outer.f_back):
            outer = outer.f_back
        name = outer.f_code.co_name
        owner = outer.f_locals.get("self")
        if owner is not None and name.startswith("__"):
            name = type(owner).__name__
        inside = f" inside {outer.f_globals.get('__name__', '?').split('.')[0]}'s {name}"
        if name in ("vectorize", "_vectorize_call", "frompyfunc"):
            hint = ("This np.vectorize was not reached by the trace (one made in a traced "
                    "function, or held in a global, a closure or an attribute of an object, "
                    "calls its function on whole arrays), so it calls its function on each "
                    "concrete element, which cannot trace: apply the function to whole "
                    "arrays (it may work as is), or map it over an axis with dg.vmap(f).")
    return TracerControlFlowError(
        f"a traced value was converted to a concrete NumPy array{inside} at {where} "
        f"(np.asarray, np.array or a C extension). {hint}")


def _inside_library(frame: FrameType) -> bool:
    name = str(frame.f_globals.get("__name__", ""))
    return name.split(".")[0] in ("numpy", "cupy", "cupyx", "scipy")


def _inside_dualgpu(frame: FrameType) -> bool:
    return str(frame.f_globals.get("__name__", "")).split(".")[0] == "dualgpu"


def _sparse_probe() -> bool:
    """True when the caller of ``__array__`` is scipy.sparse's operator dispatch."""
    frame = sys._getframe(2)
    return (frame is not None
            and str(frame.f_globals.get("__name__", "")).startswith("scipy.sparse"))


def _not_installed(*args: Any, **kwargs: Any) -> Any:
    raise DualgpuError("internal: the NumPy protocol handlers are not installed "
                       "(import dualgpu, not dualgpu.core alone)")


_PROTOCOLS: dict[str, Any] = {"ufunc": _not_installed, "function": _not_installed,
              "namespace": _not_installed, "cupy_kernel": _not_installed,
              "numpy": None}


def _np() -> Any:  # the module dualgpu.frontend.numpy
    """The NumPy-compatible functions the Tracer's operators and methods call."""
    return _PROTOCOLS["numpy"]


def register_front_end(module: ModuleType) -> None:
    """Make ``module`` (:mod:`dualgpu.frontend.numpy`, registered by :mod:`dualgpu.frontend`)
    the functions the Tracer's operators and methods call."""
    _PROTOCOLS["numpy"] = module


def install_protocol_handlers(*, ufunc: Callable[..., Any], function: Callable[..., Any],
                              namespace: Callable[..., Any],
                              cupy_kernel: Callable[..., Any] | None = None) -> None:
    """Route NumPy's ``__array_ufunc__``/``__array_function__``/``__array_namespace__``
    (and CuPy's ``__cupy_override_elementwise_kernel__``) on tracers to the given handlers
    (:mod:`dualgpu.frontend.namespace` does, at import)."""
    _PROTOCOLS.update(ufunc=ufunc, function=function, namespace=namespace)
    if cupy_kernel is not None:
        _PROTOCOLS["cupy_kernel"] = cupy_kernel


# ---------------------------------------------------------------------------- tracing


def current_builder() -> GraphBuilder | None:
    """The innermost trace running on this thread, if any."""
    stack = getattr(thread_state, "builders", None)
    return stack[-1] if stack else None


def trace_to_graph(fn: Callable, avals: Sequence[Aval], xp: ModuleType, *, name: str | None = None,
                   static: dict | None = None, input_names: Sequence[str] | None = None,
                   captured: list[Tracer] | None = None,
                   concretize: Concretize | None = None) -> tuple[Graph, Any]:
    """Trace ``fn`` on fresh tracers with the given avals.

    ``static`` maps positions to concrete (non-traced) arguments. Returns the graph and the
    output structure (a tuple tree with ``None`` leaves), flattened outputs in graph.outputs.
    With a ``captured`` list, traced values of enclosing traces that ``fn`` reads become
    extra graph inputs (after the others) and are appended to the list; without it, such
    reads raise :class:`EscapedTracerError`. ``concretize`` answers the conversions of traced
    values to Python values (:class:`Concretize`); without it they raise
    :class:`TracerControlFlowError`.
    """
    builder = GraphBuilder(xp, parent=current_builder())
    builder.captured = captured
    builder.concretize = concretize
    static = static or {}
    n = len(avals) + len(static)
    args: list[Any] = [None] * n
    tracers = []
    it = iter(avals)
    for i in range(n):
        if i in static:
            args[i] = static[i]
        else:
            t = builder.new_input(next(it))
            tracers.append(t)
            args[i] = t
    if concretize is not None:
        concretize.begin(builder, [t._var for t in tracers])
    stack = thread_state.__dict__.setdefault("builders", [])
    stack.append(builder)
    try:
        out = fn(*args)
        builder.raise_deferred()
        leaves, tree = flatten_outputs(out)
        outs = [builder.atom(leaf, "output") for leaf in leaves]
    except Exception as e:
        if builder.deferred_error is not None and e is not builder.deferred_error:
            builder.raise_deferred(e)
        raise
    finally:
        builder.alive = False
        builder.concretize = None  # (it refers to the builder: no cycle keeps the consts)
        stack.pop()
    inputs = [t._var for t in tracers] + list(builder.captured_vars.values())
    names = list(input_names) if input_names else None
    if names and builder.captured_vars:
        names += [f"outer{i}" for i in range(len(builder.captured_vars))]
    fn_name: str = getattr(fn, "__name__", "f")
    title = name or fn_name
    graph = Graph(inputs, outs, builder.eqns, name=title, input_names=names, xp=xp)
    return graph, tree


def flatten_outputs(out: Any) -> tuple[list, Any]:
    """Flatten a (possibly nested) tuple/list of arrays; return leaves and a structure."""
    leaves: list = []

    def expand(o: Any) -> tuple[tuple[type | None, Any], tuple[Any, ...]]:
        if isinstance(o, (tuple, list)):
            return (type(o), None), tuple(o)
        return (None, o), ()

    def combine(tag: tuple[type | None, Any], subtrees: tuple[Any, ...]) -> Any:
        kind, leaf = tag
        if kind is not None:
            return (kind, subtrees)
        leaves.append(leaf)
        return None

    return leaves, postorder(out, expand, combine)  # no recursion: any nesting depth


TRACER_TYPES.append(Tracer)  # the encoder refuses tracers as parameters with a hint
