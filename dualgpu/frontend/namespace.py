"""The tracing namespace and the rebinding of traced functions.

:func:`rebind_function` returns a copy of a function whose references to ``numpy``,
``cupy``, ``cupyx``, ``scipy`` (and to functions imported from ``numpy``, ``cupy``,
``cupyx``, ``scipy.special``, ``scipy.linalg`` and ``scipy.signal``) point at a
:class:`TracingNamespace`, recursively through the plain Python functions it calls. Calls on
concrete values fall through to the real library; calls on traced values go to the function
of the same dotted name in :mod:`dualgpu.frontend`, a package laid out like the libraries
(``np.linalg.norm`` -> ``frontend.numpy.linalg.norm``, ``cupyx.scipy.special.expit`` ->
``frontend.scipy.special.expit``), and a function with no rule raises
:class:`UnsupportedOpError`. A scipy.stats distribution (``scipy.stats.norm``, an imported
``norm``, a frozen ``norm(0, 2)``) is a :class:`DistributionStandIn` whose methods dispatch
the same way, to ``frontend.scipy.stats``. ``numpy.random``, ``cupy.random``, Python's
``random`` and random generators are stand-ins whose draws become inputs of the program,
drawn again at every call (:mod:`dualgpu.frontend.numpy.random`). A module of the user's
(``import helper``) is seen through a :class:`UserModule`, so that the functions the traced
function reaches through it are rebound too.
"""
from __future__ import annotations

import functools
import threading
import types
from typing import Any

import numpy as np

from ..core.trace import Tracer, current_builder, install_protocol_handlers
from ..errors import RandomInTraceError, in_stdlib, user_location
from . import methods
from .constant_array import (
    WRITERS,
    ConstantArray,
    holds_written,
    made_in_trace,
    made_like,
    resolved,
    resolving,
    ufunc_at,
)
from .dispatch import (
    call_front_end,
    contains_tracer,
    cupy_kernel_handler,
    function_handler,
    integers_made_concrete,
    lookup,
    mirror_path,
    no_rule,
    scipy_path,
    special_path,
    ufunc_handler,
)
from .math_module import math_replacement
from .numpy.functional import vectorize
from .numpy.joining import Concatenator
from .numpy.random import RandomStandIn, is_random_module, stand_in_for
from .scipy import sparse_numpy
from .scipy import stats as stats_frontend
from .scipy.sparse import SparseValue, is_sparse, scipys
from .scipy.sparse_construct import SparseClass, is_sparse_class

_TRACED_ROOTS = ("numpy", "cupy", "cupyx", "scipy")


# NumPy's index-trick objects (not callables): their traced counterparts
_INDEX_TRICKS = {"r_": False, "c_": True}  # name -> stacks columns


class TracingNamespace(types.ModuleType):
    """Stands in for an array module (or submodule) inside a traced function."""

    def __init__(self, real, path: str = ""):
        super().__init__(getattr(real, "__name__", "module"))
        self._real = real
        self._path = path

    def __getattr__(self, name: str) -> Any:
        real_attr = getattr(self._real, name)
        path = f"{self._path}.{name}"
        if isinstance(real_attr, types.ModuleType):
            ns = (stand_in_for(real_attr) if is_random_module(real_attr)
                  else TracingNamespace(real_attr, mirror_path(real_attr.__name__)))
            object.__setattr__(self, name, ns)
            return ns
        if _is_distribution(real_attr):
            stand_in = DistributionStandIn(real_attr, f"{self._path}.{name}")
            object.__setattr__(self, name, stand_in)
            return stand_in
        if real_attr is np.vectorize:
            return vectorize  # (a class) ours calls the function on whole arrays
        if name in _INDEX_TRICKS and self._path == "numpy":
            trick = Concatenator(real_attr, columns=_INDEX_TRICKS[name])
            object.__setattr__(self, name, trick)
            return trick
        if is_sparse_class(real_attr):  # csr_matrix((traced data, indices, indptr))
            constructor = SparseClass(real_attr)
            object.__setattr__(self, name, constructor)
            return constructor
        if not callable(real_attr) or isinstance(real_attr, type) or _is_dualgpu_function(
                real_attr):  # dualgpu's own, set on the module (autograd's make_diagonal)
            return real_attr
        ours = lookup(path)
        if ours is None and hasattr(real_attr, "reduce") and hasattr(real_attr, "nin"):
            # a ufunc under another name (np.acos is arccos, np.mod is remainder)
            canonical = getattr(real_attr, "__name__", "").removeprefix("cupy_")
            ours = lookup(f"{path.rpartition('.')[0]}.{canonical}")
        wrapper = _dispatcher(real_attr, ours, f"{getattr(self._real, '__name__', '')}.{name}")
        object.__setattr__(self, name, wrapper)
        return wrapper

    def __repr__(self) -> str:
        return f"<dualgpu tracing namespace for {getattr(self._real, '__name__', '?')}>"


def _dispatcher(real, ours, qualname: str):
    # a function that calls the user's (odeint): ours in a trace, traced arguments or not
    functions = getattr(ours, "calls_functions", False)

    numpy_function = qualname.split(".")[0] in ("numpy", "cupy")
    # a sparse matrix SciPy makes in a trace is seen as a closed-over one (scipys)
    seen = scipys if qualname.split(".")[0] in ("scipy", "cupyx") else _same

    @functools.wraps(real)
    def call(*args, **kwargs):
        if args and isinstance(args[0], ConstantArray) and real in WRITERS:
            return WRITERS[real](*args, **kwargs)  # np.copyto, np.fill_diagonal
        if isinstance(target := kwargs.get("out"), ConstantArray) and hasattr(real, "nin"):
            return target.__array_ufunc__(real, "__call__", *args, **kwargs)  # its writes
        if holds_written(args, kwargs):  # an array made here, written with traced values
            args, kwargs = resolved(args), resolved(kwargs)
        if numpy_function and (made := made_like(real, args, kwargs)) is not None:
            return made  # np.empty_like(y): an array that takes traced writes
        if numpy_function and any(isinstance(a, SparseValue) for a in args):
            return sparse_numpy.call(real, qualname, args, kwargs)  # what NumPy does with one
        if not contains_tracer(args, kwargs) and not (functions and current_builder()) \
                and not (ours is not None and any(isinstance(a, SparseValue) for a in args)):
            out = seen(real(*args, **kwargs))  # (a SparseValue, traced or not, is only ours)
            # an array made inside a traced function (np.zeros, then assigned to) is indexed
            # by traced indices as a global one is
            if type(out) is np.ndarray and current_builder() is not None and out.ndim > 0 \
                    and out.dtype.kind in "biufc":
                return made_in_trace(out, args)
            return out
        if ours is None:  # np.zeros(n) of a traced n: n read as Python reads it, or no rule
            return integers_made_concrete(call, args, kwargs, qualname)
        args = tuple(resolving(a) for a in args)  # odeint(rhs, ...): rhs's arrays read
        kwargs = {k: resolving(v) for k, v in kwargs.items()}
        return call_front_end(ours, qualname, args, kwargs)

    if hasattr(real, "reduce") and hasattr(real, "nin"):  # a ufunc: keep np.add.reduce & co
        for method in ("reduce", "accumulate", "reduceat", "outer", "at"):
            if hasattr(real, method):
                setattr(call, method, _ufunc_method(real, method))
        for attr in ("nin", "nout", "nargs", "identity", "ntypes", "types", "signature"):
            if hasattr(real, attr):
                setattr(call, attr, getattr(real, attr))
    call.__wrapped_by_dualgpu__ = real  # type: ignore[attr-defined]  # what a module keeps
    return call


def _same(x):
    return x


def _ufunc_method(real, method: str):
    bound = getattr(real, method)

    @functools.wraps(bound)
    def call(*args, **kwargs):
        if method == "at" and args and isinstance(args[0], ConstantArray):
            return ufunc_at(real, *args, **kwargs)  # np.add.at(g, idx, v): traced v too
        if holds_written(args, kwargs):
            args, kwargs = resolved(args), resolved(kwargs)
        if not contains_tracer(args, kwargs):
            return bound(*args, **kwargs)
        return ufunc_handler(real, method, args, kwargs)

    return call


# ------------------------------------------------------------------- scipy.stats
def _is_distribution(obj) -> bool:
    """A distribution of scipy.stats, frozen or not (an instance with a density or mass)."""
    return (not isinstance(obj, type)
            and (type(obj).__module__ or "").startswith("scipy.stats.")
            and any(hasattr(obj, m) for m in ("logpdf", "logpmf")))


class DistributionStandIn:
    """Stands in for a scipy.stats distribution (``norm``, or frozen: ``norm(0, 2)``) inside
    a traced function: a method called on traced values is the front end's of that name
    (:mod:`dualgpu.frontend.scipy.stats`), on concrete values SciPy's; freezing with traced
    parameters gives the front end's frozen distribution."""

    def __init__(self, real, label: str):
        self._real = real
        self._ours = stats_frontend.counterpart(real)
        self._label = label

    def __getattr__(self, name: str) -> Any:
        real_attr = getattr(self._real, name)
        if _is_distribution(real_attr):  # a frozen distribution's .dist
            return DistributionStandIn(real_attr, _distribution_label(real_attr))
        if not callable(real_attr) or name.startswith("_"):
            return real_attr
        if name == "rvs":  # draws: refused as numpy.random's are
            return _refusing(f"{self._label}.rvs")
        ours = getattr(self._ours, name) if name in getattr(self._ours, "methods", ()) else None
        return _dispatcher(real_attr, ours, f"{self._label}.{name}")

    def __call__(self, *args, **kwargs):
        if not contains_tracer(args, kwargs):
            ans = self._real(*args, **kwargs)  # frozen (or a gaussian_kde's values)
            return DistributionStandIn(ans, f"{self._label}(...)") if _is_distribution(
                ans) else ans
        if self._ours is None:
            raise no_rule(self._label)
        return self._ours(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<dualgpu stand-in for {self._label} inside a traced function>"


# ------------------------------------------------------------------- random numbers
def _refusing(name: str):
    def call(*args, **kwargs):
        raise RandomInTraceError(
            f"{name} was called inside a traced function (at {user_location()}): its draws "
            "would be frozen into the compiled program as constants. Draw the random numbers "
            "outside the traced function and pass them in as arguments (or draw them with "
            "np.random or a Generator, which a program draws again at every call).")

    call.__name__ = name.rpartition(".")[2] or name
    call.__qualname__ = name
    return call


_namespaces: dict[int, TracingNamespace] = {}
_lock = threading.Lock()


def _namespace_for_module(mod):
    with _lock:
        ns = _namespaces.get(id(mod))
        if ns is None:
            ns = TracingNamespace(mod, mirror_path(mod.__name__))
            _namespaces[id(mod)] = ns
        return ns


def _is_array_module(obj) -> bool:
    return (isinstance(obj, types.ModuleType)
            and obj.__name__.split(".")[0] in _TRACED_ROOTS
            and not obj.__name__.startswith("scipy.optimize"))


def _is_array_function(obj) -> bool:
    """A function or ufunc that lives in numpy/cupy/cupyx/scipy.special/scipy.linalg."""
    if isinstance(obj, np.ufunc):
        return True
    mod = getattr(obj, "__module__", None) or ""
    root = mod.split(".")[0]
    if root in ("cupy", "cupyx"):
        return callable(obj) and not isinstance(obj, type)
    if root == "scipy":
        return (scipy_path(obj, "") is not None and callable(obj)
                and not isinstance(obj, type))
    if root == "numpy" and isinstance(obj, types.BuiltinFunctionType):
        # np.asarray, np.array...: C functions that no NumPy protocol dispatches, reached
        # without the module (from numpy import asarray; jvp(np.asarray, ...))
        return lookup("numpy." + obj.__name__) is not None
    return False


class UserModule(types.ModuleType):
    """A module of the user's (``import helper``) seen from a traced function: what the
    function reads of it is replaced as its own globals are (``helper.density(x)`` calls a
    rebound copy, whose ``scipy.stats`` and ``np.random`` calls trace); writes go to the
    module itself."""

    def __init__(self, real: types.ModuleType, memo: dict):
        super().__init__(real.__name__)
        object.__setattr__(self, "_real", real)
        object.__setattr__(self, "_memo", memo)

    def __getattr__(self, name: str) -> Any:
        return _replacement(getattr(self._real, name), self._memo)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._real, name, _original(value))
        shared = _active_copies().get(id(vars(self._real)))
        if shared is not None:  # what its rebound functions read, too
            shared.copy[name] = shared.base[name] = value

    def __repr__(self) -> str:
        return f"<dualgpu view of {self._real!r} inside a traced function>"


def _is_user_module(obj) -> bool:
    """A module of the user's own code (not a library's: not installed, not the standard
    library's)."""
    if not isinstance(obj, types.ModuleType) or isinstance(obj, (UserModule,
                                                                   TracingNamespace)):
        return False
    root = obj.__name__.split(".")[0]
    path = getattr(obj, "__file__", None) or ""
    return bool(path) and root not in _TRACED_ROOTS + ("dualgpu",) and not in_stdlib(path) \
        and not any(part in path for part in ("site-packages", "dist-packages"))


def _replacement(obj, memo):
    if isinstance(obj, (TracingNamespace, DistributionStandIn)):
        return obj  # a function made in a trace, rebound again by a nested transform
    if type(obj) is np.ndarray and obj.ndim > 0 and obj.dtype.kind in "biufc":
        view = obj.view(ConstantArray)
        view.original = obj
        return view
    if is_sparse(obj):  # a closed-over sparse matrix: products with tracers bind spmm
        return SparseValue.constant(obj)
    if is_sparse_class(obj):  # from scipy.sparse import csr_matrix
        return SparseClass(obj)
    if _is_distribution(obj):  # from scipy.stats import norm; a frozen one closed over
        return DistributionStandIn(obj, _distribution_label(obj))
    owner = getattr(obj, "__self__", None)
    if isinstance(obj, types.MethodType) and _is_distribution(owner):  # pdf = norm.pdf
        return getattr(DistributionStandIn(owner, _distribution_label(owner)), obj.__name__)
    draws = stand_in_for(obj)  # np.random, a generator: drawn again at every call
    if draws is not None:
        return draws
    if _is_array_module(obj):
        return _namespace_for_module(obj)
    if obj is np.vectorize or isinstance(obj, np.vectorize):  # from numpy import vectorize,
        return vectorize.of(obj, lambda f: _replacement(f, memo))  # or one made outside
    if isinstance(obj, types.FunctionType) and _is_user_function(obj):
        return _rebind(obj, memo)
    if isinstance(obj, types.MethodType) and isinstance(obj.__func__, types.FunctionType):
        _reach(obj.__self__, memo)  # model.loss held in a global: bound to the object
        rebound = _replacement(obj.__func__, memo)
        return obj if rebound is obj.__func__ else types.MethodType(rebound, obj.__self__)
    if isinstance(obj, functools.partial):
        return _rebound_partial(obj, memo)
    if methods.is_user_class(obj if isinstance(obj, type) else type(obj)):
        _reach(obj, memo)  # a class or object of the user's: its methods rebound in the call
        return obj
    if _is_user_module(obj):
        return UserModule(obj, memo)
    if _is_array_function(obj):
        name = getattr(obj, "__name__", None)
        if name:
            mod = getattr(obj, "__module__", "") or ""
            if mod.split(".")[0] == "cupy":
                name = name.removeprefix("cupy_")  # CuPy's ufuncs: cp.tanh is 'cupy_tanh'
            path = scipy_path(obj, name) or special_path(obj) or "numpy." + name
            ours = lookup(path)  # (SciPy's ufuncs have no __module__: named by their path)
            return _dispatcher(obj, ours, f"{mod}.{name}" if mod else path)
    if type(obj) is tuple and obj:  # (f, g) in a closure: helpers[0](x) sees tracers too
        replaced = _replaced_values(obj, memo)
        return obj if replaced is None else replaced
    if type(obj) in (list, dict) and obj:  # [f, g], {"relu": f}: as tuples are
        return _replaced_container(obj, memo)
    math_refusal = math_replacement(obj)
    if math_refusal is not None:
        return math_refusal
    return obj


def _distribution_label(obj) -> str:
    dist = getattr(obj, "dist", None)
    name = getattr(dist if dist is not None else obj, "name", None)
    name = name or type(obj).__name__.removesuffix("_gen").removesuffix("_frozen")
    return f"scipy.stats.{name}" + ("(...)" if dist is not None or "_frozen" in
                                     type(obj).__name__ else "")


def _is_dualgpu_function(fn) -> bool:
    """A function of dualgpu's (public, not a closure): it takes traced values as it is."""
    mod = getattr(fn, "__module__", None) or ""
    return mod.split(".")[0] == "dualgpu" and "<locals>" not in getattr(fn, "__qualname__", "")


def _is_user_function(fn) -> bool:
    mod = getattr(fn, "__module__", None) or ""
    root = mod.split(".")[0]
    if root == "dualgpu":  # dualgpu's closure around the user's function (testing's fixed
        code = getattr(fn, "__code__", None)  # arguments), a docstring example's function
        return "<locals>" in getattr(fn, "__qualname__", "") or \
            getattr(code, "co_filename", "").startswith("<doctest")
    return root not in _TRACED_ROOTS + ("builtins", "functools")


def _rebind(fn: types.FunctionType, memo: dict):
    if id(fn) in memo:
        return memo[id(fn)]
    code = fn.__code__
    shared = _shared_globals(fn.__globals__, memo)
    # Insert a placeholder first so that recursion through globals terminates.
    clone_box: list = []
    memo[id(fn)] = _LazyFunction(clone_box)
    for name in _all_names(code):
        if name in shared.copy and name not in shared.replaced:
            value = shared.copy[name]
            rep = _replacement(value, memo)
            if rep is not value:
                shared.replace(name, rep)
    closure = fn.__closure__
    new_closure = None
    if closure:
        cells = []
        any_cell = False
        for cell in closure:
            try:
                val = cell.cell_contents
            except ValueError:
                cells.append(cell)
                continue
            rep = _replacement(val, memo)
            if rep is not val:
                any_cell = True
                cells.append(types.CellType(rep))
            else:
                cells.append(cell)
        if any_cell:
            new_closure = tuple(cells)
    # default values too: def f(x, act=cp.tanh) (CuPy's ufuncs do not dispatch on tracers)
    defaults = _replaced_values(fn.__defaults__ or (), memo)
    kwdefaults = _replaced_values(tuple((fn.__kwdefaults__ or {}).values()), memo)
    # every user function reached is a copy on its module's shared globals, even one that
    # needs no replacement: what one of them assigns to a global, the others read
    clone = types.FunctionType(code, shared.copy,
                               fn.__name__, fn.__defaults__ if defaults is None else defaults,
                               new_closure if new_closure is not None else closure)
    clone.__kwdefaults__ = (fn.__kwdefaults__ if kwdefaults is None
                            else dict(zip(fn.__kwdefaults__ or {}, kwdefaults)))
    clone.__dict__.update(fn.__dict__)
    clone.__wrapped_by_dualgpu__ = fn  # type: ignore[attr-defined]  # a marker
    memo[id(fn)] = clone
    clone_box.append(clone)
    return clone


def _replaced_values(values: tuple, memo: dict) -> tuple | None:
    """``values`` with array modules and functions replaced, or None when none is."""
    replaced = tuple(_replacement(v, memo) for v in values)
    return None if all(r is v for r, v in zip(replaced, values)) else replaced


def _replaced_container(obj: list | dict, memo: dict) -> Any:
    """A copy of the list or dict ``obj`` with its functions (and modules) replaced, or
    ``obj`` itself when it holds none (ufuncs aside): a list of arrays, a dict the function
    writes to (a cache), stays the user's own object. A copy is a snapshot: what the traced code
    writes to it is not seen outside."""
    key = ("container", id(obj))
    if key in memo:  # seen (or being replaced: a list holding itself)
        return memo[key]
    memo[key] = obj
    values = list(obj.values()) if type(obj) is dict else obj
    # a ufunc stays itself (it dispatches on tracers; a table of ufuncs reads their methods)
    replaced = [v if isinstance(v, np.ufunc) else _replacement(v, memo) for v in values]
    if all(r is v or isinstance(r, ConstantArray) for r, v in zip(replaced, values)):
        return obj
    out = dict(zip(obj, replaced)) if type(obj) is dict else replaced
    memo[key] = out
    return out


class _LazyFunction:
    """Placeholder for a function being rebound (for recursive references)."""

    def __init__(self, box):
        self._box = box

    def __call__(self, *args, **kwargs):
        return self._box[0](*args, **kwargs)


class _SharedGlobals:
    """The globals that the rebound copies of one module's functions share: a copy of the
    module's dict with some names replaced (``np`` by its tracing namespace, arrays by
    constants, functions by their rebound copies).

    Inside the traced code, globals behave as in the plain function: every rebound function
    of the module reads and assigns the same copy (``global calls; calls += 1``), and what
    the code assigned or deleted is written back to the module (the user's own objects, not
    their stand-ins) when the outermost rebound call returns (:func:`_writing_back`)."""

    MARK = "__dualgpu_globals__"

    def __init__(self, real: dict):
        self.real = real
        # a key of its own first (what a nested rebinding finds): comparing two copies with
        self.copy: dict = {self.MARK: self}  # == (a coverage tool's) stops at it, not arrays
        self.copy.update(real)
        self.replaced: dict[str, Any] = {}
        self.base = dict(self.copy)  # what the copy held when the call started

    def replace(self, name: str, rep: Any) -> None:
        if self.copy.get(name, _ABSENT) is self.base.get(name, _ABSENT):  # (one assigned in
            self.base[name] = rep  # the trace, then rebound by a nested one, is written back)
        self.copy[name] = self.replaced[name] = rep

    def refresh(self) -> None:
        """Before an outermost call: the module's current values, replacements kept."""
        for name in [k for k in self.copy if k not in self.real and k != self.MARK]:
            del self.copy[name]
        for name, value in self.real.items():
            if name not in self.replaced:
                self.copy[name] = value
        self.base = dict(self.copy)

    def write_back(self) -> None:
        """After it: what the traced code assigned or deleted, into the module."""
        for name, value in self.copy.items():
            if value is not self.base.get(name, _ABSENT) and name != self.MARK:
                self.real[name] = _original(value)
        for name, value in self.base.items():
            if name not in self.copy and self.real.get(name, _ABSENT) is _original(value):
                del self.real[name]
        self.base = dict(self.copy)


def _original(value: Any) -> Any:
    """What the module holds for a value of the traced code's: the user's own function for
    its rebound copy (which ran on stale globals), the object a stand-in or view is of."""
    if isinstance(value, ConstantArray):
        return value.constant_value()
    if isinstance(value, (TracingNamespace, DistributionStandIn, RandomStandIn, UserModule)):
        return value._real
    if isinstance(value, SparseClass):
        return value.cls
    if isinstance(value, SparseValue) and value.original is not None:
        return value.original
    if isinstance(value, _LazyFunction):
        return _original(value._box[0]) if value._box else value
    while isinstance(value, (types.FunctionType, functools.partial)) and hasattr(
            value, "__wrapped_by_dualgpu__"):
        value = value.__wrapped_by_dualgpu__  # (a copy of a copy, by a nested transform)
    if isinstance(value, types.MethodType) and value.__func__ is not _original(value.__func__):
        return types.MethodType(_original(value.__func__), value.__self__)
    if type(value) in (tuple, list, dict):  # (f, g), a dict of activations: their copies
        items = list(value.values()) if type(value) is dict else value
        originals = [_original(v) for v in items]
        if all(o is v for o, v in zip(originals, items)):
            return value
        return dict(zip(value, originals)) if type(value) is dict else type(value)(originals)
    return value


_ABSENT = object()
_active = threading.local()  # .copies: id(module dict) -> the _SharedGlobals in use


def _active_copies() -> dict[int, _SharedGlobals]:
    copies = getattr(_active, "copies", None)
    if copies is None:
        copies = _active.copies = {}
    return copies


def _shared_globals(real: dict, memo: dict) -> _SharedGlobals:
    """The shared globals of a module for this rebinding: the ones a running traced call
    uses (a rule or an inner function rebound during the trace), else new ones."""
    key = ("globals", id(real))
    shared = memo.get(key)
    if shared is None:
        owner = real.get(_SharedGlobals.MARK)  # a function made or rebound in this trace
        if isinstance(owner, _SharedGlobals) and _active_copies().get(id(owner.real)) is owner:
            real = owner.real  # rebound again by a nested transform: the same globals
        shared = _active_copies().get(id(real))
        if shared is None:
            shared = _SharedGlobals(real)
            if (late := getattr(_active, "late", None)) is not None:  # first reached in a
                _active_copies()[id(real)] = shared  # traced call (helper.f): in use, and
                late.append(shared)                  # written back, as the others
        memo[key] = shared
    return shared


def _writing_back(fn, memo: dict):
    """``fn`` (a rebound copy) called with its modules' shared globals in use, refreshed
    before and written back after, unless an enclosing call already uses them."""
    shared = [v for k, v in memo.items() if type(k) is tuple and k[0] == "globals"]

    def rebind(value):
        return _replacement(value, memo)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        # the user's objects it is given or reached, and their classes: methods rebound
        reached = memo.get(("reached",), []) + [a for a in (*args, *kwargs.values())
                                             if not isinstance(a, Tracer)]
        with methods.rebinding(rebind, _original, reached):
            return _call_writing_back(fn, shared, args, kwargs)

    return call


def _call_writing_back(fn, shared: list, args: tuple, kwargs: dict):
    active = _active_copies()
    entered = [sg for sg in shared if id(sg.real) not in active]
    if outermost := getattr(_active, "late", None) is None:
        _active.late = []
    for sg in entered:
        sg.refresh()
        active[id(sg.real)] = sg
    try:
        return fn(*args, **kwargs)
    finally:
        if outermost:
            entered += _active.late
            _active.late = None
        held = getattr(_active, "held", None)
        for sg in entered:
            del active[id(sg.real)]
            held.append(sg) if held is not None else sg.write_back()


class HeldWrites:
    """The write-backs of the traced calls made in its ``with``, kept until :meth:`commit`:
    a retried trace (its scalars made static) assigns the globals of the one that stands."""

    def __enter__(self) -> HeldWrites:
        self.outer: list | None = getattr(_active, "held", None)
        self.kept: list[_SharedGlobals] = []
        _active.held = self.kept
        return self

    def __exit__(self, *exc) -> None:
        _active.held = self.outer

    def commit(self) -> None:
        for sg in self.kept:
            self.outer.append(sg) if self.outer is not None else sg.write_back()
        self.kept = []


def _all_names(code) -> set:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _all_names(const)
    return names


def rebind_function(fn):
    """A copy of ``fn`` that sees tracing namespaces instead of array modules (and whose
    call rebinds the methods of the user's classes it reaches: :mod:`.methods`)."""
    memo: dict = {}
    return _writing_back(_rebound_callable(fn, memo), memo)


def _rebound_callable(fn, memo: dict):
    if isinstance(fn, types.MethodType) and isinstance(fn.__self__, np.vectorize):
        return _replacement(fn.__self__, memo)  # dg.jit(np.vectorize(f)): __call__, bound
    if isinstance(fn, functools.partial):
        args = _replaced_values(fn.args, memo) or fn.args
        values = _replaced_values(tuple(fn.keywords.values()), memo)
        keywords = fn.keywords if values is None else dict(zip(fn.keywords, values))
        return functools.partial(_rebound_callable(fn.func, memo), *args, **keywords)
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType) \
            and not _is_distribution(fn.__self__):  # (not a generator's: rng.normal)
        _reach(fn.__self__, memo)
        return types.MethodType(_rebound_callable(fn.__func__, memo), fn.__self__)
    if isinstance(fn, types.FunctionType) and (_is_user_function(fn)
                                               or not _is_array_function(fn)):
        return _rebind(fn, memo)
    # a library's function (scipy.stats.norm.logpdf, scipy.special.expit; SciPy's functions
    # written in Python too, scipy.linalg.solve: its stand-in, as when the user's code calls
    # it, not SciPy's source traced; callables of other kinds: NumPy protocols still see the
    # tracers)
    return _replacement(fn, memo)


def _rebound_partial(fn: functools.partial, memo: dict):
    """A partial held in a global (or reached from one): of the rebound function, with its
    arguments replaced; the partial itself when nothing is."""
    rebound = _rebound_callable(fn, memo)
    if rebound.func is fn.func and all(a is b for a, b in zip(rebound.args, fn.args)) and all(
            rebound.keywords[k] is v for k, v in fn.keywords.items()):
        return fn
    rebound.__wrapped_by_dualgpu__ = fn  # type: ignore[attr-defined]  # what is written back
    return rebound


def _reach(obj, memo: dict) -> None:
    """``obj``'s classes get their methods rebound in the call of ``memo``'s rebinding
    (now if it runs, else when it does: :func:`_writing_back`)."""
    memo.setdefault(("reached",), []).append(obj)
    methods.reach(obj)


def array_namespace(xp):
    """The array-API namespace of traced values: the tracing namespace of their library."""
    return _namespace_for_module(xp)


install_protocol_handlers(ufunc=ufunc_handler, function=function_handler,
                          namespace=array_namespace, cupy_kernel=cupy_kernel_handler)
