"""One call's arguments, analysed: which leaves are traced inputs, which are static, and the
exact cache key of the program they call for.

Arguments are pytrees (:mod:`dualgpu.base.tree`). Array leaves (NumPy, CuPy, SciPy/cupyx sparse)
become inputs of the traced graph; in differentiated arguments, Python and NumPy scalars are
converted to arrays and become inputs too. With ``trace_scalars`` (every transform),
floating and complex scalars of the other arguments are inputs as well, as in JAX: a Python
``float`` or ``complex`` as a weakly typed 0-d value (``Aval.weak``), a NumPy scalar as a
0-d array of its dtype; a new value then reuses the program. With ``trace_ints``, Python
ints (within int64) are weakly typed 0-d inputs too: a step counter does not key the
program. Such scalars are *tentative* (``tentative``: the ints, and the floats with
``tentative_floats``): when a trace needs one's value as a Python number (a shape, a loop
count, a list index), :meth:`Signature.restatic` makes it static for that signature. Every
other leaf (bools, strings, the leaves of ``static`` arguments) is static and keyed by its
exact value (``-0.0`` is not ``0.0``, ``1`` is not ``True``) or, when it has no value type
we know, by identity; a random generator by its type (each call draws from the one it is
given: :mod:`dualgpu.frontend.numpy.random`). The key also holds the pytree structure and
which inputs alias each other, so two calls share a program only when a fresh build would
give the same one.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextvars import ContextVar
from typing import Any

import numpy as np

from ..backends import array_backend, backend_for_xp, backend_of
from ..backends.base import Backend
from ..base import tree as pytree
from ..base.cache import WeakIdentityKey, identity_key
from ..base.names import function_name
from ..core.ir import Aval
from ..core.trace import Tracer
from ..errors import (
    ArgumentTypeError,
    BackendMismatchError,
    DualgpuError,
    IntegerInputError,
    InvalidArgumentError,
)
from ..frontend.numpy.random import is_source, source_type
from ..frontend.scipy.sparse import SparseArgs, is_sparse

_NUMBERS = (int, float, complex)
_TRACED_SCALARS = (float, complex, np.floating, np.complexfloating)
_BY_VALUE = (bool, int, str, bytes, type(None), type(Ellipsis), range)


def _defines(t: type, name: str) -> bool:
    """Whether class ``t`` or one of its bases other than ``object`` defines ``name``."""
    return any(name in vars(k) for k in t.__mro__ if k is not object)


def static_key(x: Any, weak: list, by_equality: bool = False) -> tuple:
    """An exact, hashable key for a static value. Identity keys that are weak are appended to
    ``weak`` (their death must evict the entries that hold them). With ``by_equality`` (the
    leaves of ``static_argnums``, as JAX keys them), a hashable object of a class that defines
    its own ``__eq__`` is keyed by equality, not identity: an equal new instance reuses the
    program."""
    t = type(x)
    if t is float:
        return (float, x.hex())  # -0.0 and 0.0 differ; every nan is one key
    if t is complex:
        return (complex, x.real.hex(), x.imag.hex())
    if t in _BY_VALUE:
        return (t, x)
    if isinstance(x, np.generic):
        return (t, x.dtype.str, x.tobytes())
    if t is tuple or t is list or t is frozenset:
        return (t, tuple(static_key(i, weak) for i in x))
    if t is slice:
        return (slice, static_key(x.start, weak), static_key(x.stop, weak),
                static_key(x.step, weak))
    if t is np.dtype or isinstance(x, type):
        return ("type", x)
    if by_equality and _defines(t, "__eq__") and t.__hash__ is not None:
        hash(x)  # an error of the class's own __hash__ propagates, as in JAX
        return ("eq", t, x)
    k = identity_key(x)
    if isinstance(k, WeakIdentityKey):
        weak.append(k)
    return ("id", k)


def _is_dense_array(x: Any) -> bool:
    if type(x) is np.ndarray:
        return True
    b = array_backend(x)
    return b is not None and not b.is_sparse(x)


class Signature:
    """The analysis of one call ``fn(*args, **kwargs)``.

    ``inputs`` are the traced input arrays (or tracers), in leaf order; ``avals`` their
    abstract values; ``diff`` flags the differentiated ones; ``key`` is the exact cache key.
    ``traced`` is True when some argument is a tracer of an enclosing trace (the call is
    then inlined into that trace, never cached).
    """

    __slots__ = ("args", "kwargs", "arg_trees", "kw_tree", "leaves", "input_pos", "inputs",
                 "diff", "arg_of_input", "sparse", "backend", "traced", "key", "weak",
                 "avals", "argnums", "int_inputs", "scalar_inputs", "what", "dask", "tentative",
                 "options", "by_identity")
    args: tuple
    kwargs: dict
    arg_trees: tuple[pytree.TreeDef, ...]
    kw_tree: pytree.TreeDef | None
    leaves: list
    input_pos: list[int]
    inputs: list
    diff: list[bool]
    arg_of_input: list[int]
    sparse: SparseArgs
    backend: Backend
    traced: bool
    key: tuple
    weak: list
    by_identity: list[tuple[str, Any]]
    avals: list[Aval]
    argnums: tuple[int, ...]
    int_inputs: frozenset[int]
    scalar_inputs: tuple[tuple[int, bool], ...]
    what: str
    dask: bool
    tentative: frozenset[int]
    options: dict[str, Any]

    def __init__(self, args: tuple, kwargs: dict, argnums: tuple[int, ...], what: str,
                 allow_int: bool = False, trace_scalars: bool = False,
                 static: tuple[Sequence[int], Sequence[str]] = ((), ()),
                 trace_ints: bool = False, tentative_floats: bool = False,
                 static_leaves: frozenset[int] = frozenset()):
        self.options = {"allow_int": allow_int, "trace_scalars": trace_scalars,
                        "static": static, "trace_ints": trace_ints,
                        "tentative_floats": tentative_floats, "static_leaves": static_leaves}
        self.tentative = frozenset()
        self.args = args
        self.kwargs = kwargs
        self.argnums = argnums
        self.what = what
        for i in argnums:
            if i < 0:
                raise ArgumentTypeError(f"{what}: argnums {tuple(argnums)} must be resolved "
                                        "to non-negative positions here; pass argnums "
                                        "counted from the front")
            if i >= len(args):
                raise ArgumentTypeError(f"argnums names argument {i}, but {what} has only "
                                        f"{len(args)} positional argument(s)")
        # a call on Dask arrays runs per chunk (runtime/dask.py): decided here, once per
        # signature, and nothing else of the call is analysed
        self.dask = any(map(is_dask_array, args)) or any(map(is_dask_array, kwargs.values()))
        self.by_identity = []
        if self.dask:
            return
        leaves: list = []
        arg_trees: list[pytree.TreeDef] = []
        owner: list = []  # per leaf: its argument's position (-1 for keyword arguments)
        for i, a in enumerate(args):
            n0 = len(leaves)
            arg_trees.append(pytree._flatten(a, leaves, None))
            owner.extend([i] * (len(leaves) - n0))
        kw_tree = None
        static_leaf: list = [i in static[0] for i in owner]
        if kwargs:
            kw_tree = pytree._flatten(kwargs, leaves, None)
            owner.extend([-1] * kw_tree.num_leaves)
            for name in pytree._dict_keys(kwargs):
                static_leaf += [name in static[1]] * len(pytree.leaves(kwargs[name]))
        self.arg_trees = tuple(arg_trees)
        for i in argnums:
            if arg_trees[i].num_leaves == 0:
                raise DualgpuError(f"argument {i} of {what} is differentiated but holds no "
                                   f"arrays ({arg_trees[i]}): there is nothing to differentiate")
        self.kw_tree = kw_tree
        diff_args = set(argnums)
        weak: list = []
        # (label, object): leaves keyed by identity (a set, a user object), whose contents
        # and the attributes the function names are guarded like a closure's (guards.py)
        by_identity: list[tuple[str, Any]] = []

        def static_value(leaf: Any, i: int, j: int, by_equality: bool = False) -> tuple:
            key = static_key(leaf, weak, by_equality)
            if key[0] == "id":  # what the trace reads from it is guarded (guards.py)
                by_identity.append((_static_name(i, kwargs, j - len(owner)), leaf))
            return ("v", key)

        keys: list[tuple] = []
        inputs: list = []
        input_pos: list[int] = []
        diff: list[bool] = []
        arg_of_input: list[int] = []
        int_inputs: list[int] = []
        # (input index, weakly typed): traced non-array scalars
        scalar_inputs: list[tuple[int, bool]] = []
        tentative: list[int] = []  # traced scalars a trace may make static
        sparse = SparseArgs()
        backends: list[Backend | None] = []
        traced = False
        key: tuple
        for j, (leaf, i) in enumerate(zip(leaves, owner)):
            d = i in diff_args
            if isinstance(leaf, np.ndarray):
                if type(leaf) is not np.ndarray:
                    leaf = _plain_array(leaf, i, what)
            elif SHAPES_ONLY.get() and _shape_only(leaf):  # a call inside dg.eval_shape
                leaf = shape_stand_in(leaf)
            if static_leaf[j]:
                if isinstance(leaf, Tracer) or _is_dense_array(leaf) or is_sparse(leaf):
                    raise ArgumentTypeError(
                        f"{what}: {_static_name(i, kwargs, j - len(owner))} is static "
                        f"(static_argnums / static_argnames), but holds a "
                        f"{type(leaf).__name__}: a static argument is a hashable Python "
                        "value (a number, string, tuple), keyed by its value. Pass an array "
                        "as an ordinary argument (it becomes an input of the program)")
                keys.append(static_value(leaf, i, j, by_equality=True))
                continue
            if j in static_leaves:  # a scalar a trace needed the value of (restatic)
                keys.append(("v", static_key(leaf, weak)))
                continue
            if isinstance(leaf, Tracer):
                traced = True
                backends.append(backend_for_xp(leaf._builder.xp))
                key = ("a", leaf.shape, leaf.dtype.str, d)
                if leaf.aval.weak:  # the enclosing trace's Python number: weak here too
                    scalar_inputs.append((len(inputs), True))
                    key += (True,)
            elif is_sparse(leaf):
                data, skey = sparse.add(len(inputs), leaf)
                backends.append(array_backend(leaf))
                key = ("s", skey, d)
                leaf = data
            elif _is_dense_array(leaf):
                backends.append(array_backend(leaf))
                key = ("a", tuple(leaf.shape), leaf.dtype.str, d)
            elif d and (isinstance(leaf, np.generic) or (isinstance(leaf, _NUMBERS)
                                                         and (type(leaf) is not bool
                                                              or allow_int))):
                # a Python int is an integer, as in JAX (refused unless allow_int; a bool
                # with allow_int too: its gradient is a float0 zero)
                leaf = np.asarray(leaf, dtype=leaf.dtype if isinstance(leaf, np.generic)
                                  else np.result_type(leaf, 0.0 if type(leaf) is float
                                                      else leaf))
                key = ("c", leaf.dtype.str)  # converted to an array on the call's backend
            elif trace_scalars and isinstance(leaf, _TRACED_SCALARS):
                # as JAX: a Python float is a weakly typed 0-d input (promotes as the
                # literal would), a NumPy scalar a 0-d array of its dtype
                scalar_inputs.append((len(inputs), not isinstance(leaf, np.generic)))
                if tentative_floats:
                    tentative.append(len(inputs))
                leaf = np.asarray(leaf)
                key = ("t", leaf.dtype.str, scalar_inputs[-1][1])
            elif trace_ints and type(leaf) is int and _INT64_MIN <= leaf <= _INT64_MAX:
                # a weakly typed int64 input (int32 + n stays int32, as NumPy 2's rule for
                # a Python int), tentatively
                scalar_inputs.append((len(inputs), True))
                tentative.append(len(inputs))
                # keyed by the integer dtypes that hold it: a program that casts it to one
                # is for the values that fit (the others are static: NumPy's own rules)
                key = ("t", "<i8", True, int_range(leaf))
                leaf = np.asarray(leaf, dtype=np.int64)
            else:
                if _shape_only(leaf):
                    raise ArgumentTypeError(
                        f"argument {i} of {what} is a {type(leaf).__name__} (a shape and a "
                        "dtype, no values), which is not a valid argument of a call, as in "
                        "JAX; its outputs' shapes are dg.eval_shape(f, ...) (or "
                        "f.eval_shape(...) of a jit function f)")
                if d:
                    raise ArgumentTypeError(
                        f"argument {i} of {what} is differentiated, but "
                        f"{'it' if arg_trees[i].is_leaf else 'a leaf of it'} is a "
                        f"{type(leaf).__name__}: differentiated arguments hold arrays or "
                        "numbers (pytrees of them; register a class of yours with "
                        "dg.tree_util.register_dataclass or register_pytree_node)")
                # a random generator is drawn from at every call: keyed by its type only
                if is_source(leaf):
                    keys.append(("r", source_type(leaf)))
                    continue
                keys.append(static_value(leaf, i, j))
                continue
            if d:
                dt = np.dtype(leaf.dtype)
                if dt.kind not in "fc" and allow_int:
                    d = False  # not differentiated: its gradient is a float0 zero
                    int_inputs.append(len(inputs))
                elif dt.kind not in "fc":
                    raise IntegerInputError(
                        f"argument {i} of {what} has dtype {dt}: only floating-point inputs "
                        "can be differentiated; convert it with .astype(float) (or pass "
                        "allow_int=True for a float0 zero gradient, as JAX)")
            keys.append(key)
            inputs.append(leaf)
            input_pos.append(j)
            diff.append(d)
            arg_of_input.append(i)
        self.backend = backend_of_all(backends, what)
        if self.backend.on_device:  # converted scalars live on the call's device
            inputs = [self.backend.to_device(a) if type(a) is np.ndarray else a
                      for a in inputs]
        self.leaves = leaves
        self.inputs = inputs
        self.input_pos = input_pos
        self.diff = diff
        self.arg_of_input = arg_of_input
        self.int_inputs = frozenset(int_inputs)
        self.scalar_inputs = tuple(scalar_inputs)
        self.tentative = frozenset(tentative)
        self.sparse = sparse
        self.traced = traced
        self.weak = weak
        self.by_identity = by_identity
        self.avals = [Aval(tuple(a.shape), np.dtype(a.dtype)) for a in inputs]
        for k, weakly in scalar_inputs:
            self.avals[k] = self.avals[k]._replace(weak=weakly)
        self.key = (self.backend.name, self.arg_trees, kw_tree, tuple(keys),
                    alias_pattern(inputs))

    def restatic(self, inputs: Iterable[int]) -> None:
        """Make the tentative scalar ``inputs`` (input indices) static, keyed by their
        values, in place (a trace needed their values as Python numbers), with those made
        static before."""
        leaves = frozenset(self.input_pos[k] for k in inputs if k in self.tentative)
        options = dict(self.options)
        options["static_leaves"] = options["static_leaves"] | leaves
        again = Signature(self.args, self.kwargs, self.argnums, self.what, **options)
        for name in Signature.__slots__:
            setattr(self, name, getattr(again, name))

    def layout(self) -> Signature:
        """This signature without the call's values: what shaping the results needs, safe to
        keep (it holds no user arrays). Only for signatures without sparse arguments."""
        new = Signature.__new__(Signature)
        for name in Signature.__slots__:
            setattr(new, name, getattr(self, name))
        # a layout holds no values: reading one is an error (None has no items)
        new.args = new.kwargs = None  # type: ignore[assignment]
        new.leaves = new.inputs = new.weak = None  # type: ignore[assignment]
        return new

    # ------------------------------------------------------------------------------ use
    def rebuild(self, values: Iterable[Any],
                replace: dict[int, Any] | None = None) -> tuple[tuple, dict]:
        """``(args, kwargs)`` with the traced inputs replaced by ``values`` (and the leaves
        of ``replace`` by its values)."""
        leaves = list(self.leaves)
        for j, v in zip(self.input_pos, values):
            leaves[j] = v
        for j, v in (replace or {}).items():
            leaves[j] = v
        it = iter(leaves)
        args = tuple(pytree._build(t, it) for t in self.arg_trees)
        kwargs = pytree._build(self.kw_tree, it) if self.kw_tree is not None else {}
        return args, kwargs

    def arg_of_leaf(self, j: int) -> int | str:
        """The argument (position, or ``"keyword"``) leaf ``j`` belongs to."""
        n = 0
        for i, t in enumerate(self.arg_trees):
            n += t.num_leaves
            if j < n:
                return i
        return "keyword"

    def diff_inputs(self) -> list[int]:
        """Graph-input indices of the differentiated leaves (in leaf order)."""
        return [k for k, d in enumerate(self.diff) if d]

    def number_sequence(self) -> tuple[str, Any] | None:
        """The first list or tuple of Python numbers, a float among them, given as a
        positional argument (or inside one: a dict's entry, a list's item), as ``(its name,
        it)``: a pytree of scalars, traced leaf by leaf as JAX does, where the function may
        have expected an array."""
        for i, a in enumerate(self.args):
            found = _number_sequence(a, f"argument {i}")
            if found is not None:
                return found
        return None

    def per_argument(self, values: Iterable[Any], arg: int, repackage: bool = True,
                     int_prefix: tuple[int, ...] = ()) -> Any:
        """Results for the differentiated leaves (in leaf order) regrouped as argument
        ``arg``'s pytree (sparse leaves come back sparse); an integer leaf (``allow_int``)
        gets float0 zeros of shape ``int_prefix + its shape`` (a Jacobian block's)."""
        picked = []
        it = iter(values)
        for k, d in enumerate(self.diff):
            if k in self.int_inputs and self.arg_of_input[k] == arg:
                picked.append(np.zeros(tuple(int_prefix) + tuple(self.avals[k].shape),
                                       dtype=FLOAT0))
            if not d:
                continue
            v = next(it)
            if self.arg_of_input[k] == arg:
                if repackage and self.sparse:
                    v = self.sparse.repackage(k, v)
                picked.append(v)
        return pytree.unflatten(self.arg_trees[arg], picked)

    def input_names(self, fn: Any) -> list[str] | None:
        """Readable graph-input names from ``fn``'s parameter names, when they exist."""
        try:
            import inspect

            params = list(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            return None
        if any(i >= len(params) or i < 0 for i in self.arg_of_input):
            return None
        starts = np.cumsum([0] + [t.num_leaves for t in self.arg_trees])
        paths = [pytree.leaf_paths(t) for t in self.arg_trees]  # p['W1'], x[0], s.a
        names = [function_name(params[i]) + paths[i][j - starts[i]]
                 for i, j in zip(self.arg_of_input, self.input_pos)]
        return names if len(set(names)) == len(names) else None


_INT64_MIN, _INT64_MAX = -2 ** 63, 2 ** 63 - 1
_INT_DTYPES = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                          np.uint32, np.int64, np.uint64))
_INT_BOUNDS = tuple((int(np.iinfo(t).min), int(np.iinfo(t).max)) for t in _INT_DTYPES)
_FITS_ALL = (1 << len(_INT_DTYPES)) - 1


def int_range(value: int) -> int:
    """The integer dtypes that hold the Python int ``value``, as a bit mask over
    :data:`_INT_DTYPES` (a weakly typed int cast to a dtype that cannot hold it would wrap,
    where NumPy raises or compares exactly).

    >>> int_range(3) == int_range(100), int_range(3) == int_range(200), int_range(-1) & 2
    (True, False, 0)
    """
    if 0 <= value < 128:
        return _FITS_ALL
    return sum(1 << i for i, (lo, hi) in enumerate(_INT_BOUNDS) if lo <= value <= hi)


def int_range_holds(mask: int, dtype: Any) -> bool:
    """Whether every int of the range ``mask`` (:func:`int_range`) fits ``dtype`` (an
    integer dtype)."""
    dtype = np.dtype(dtype)
    return dtype not in _INT_DTYPES or bool(mask >> _INT_DTYPES.index(dtype) & 1)


def int_range_bound(mask: int) -> int:
    """The largest magnitude of an int in the range ``mask`` (:func:`int_range`): that of
    the narrowest dtype holding them all.

    >>> int_range_bound(int_range(3)), int_range_bound(int_range(200))
    (128, 255)
    """
    held = [max(-lo, hi) for i, (lo, hi) in enumerate(_INT_BOUNDS) if mask >> i & 1]
    return min(held, default=2 ** 63)


def _number_sequence(x: Any, name: str, depth: int = 0) -> tuple[str, Any] | None:
    # with a float in it: a list of ints is static (a shape, axes), not traced
    if isinstance(x, (list, tuple)) and x and all(
            isinstance(v, _NUMBERS) and not isinstance(v, bool) for v in x) and any(
            isinstance(v, (float, complex)) for v in x):
        return name, x
    if depth < 8 and isinstance(x, (list, tuple, dict)):
        items = x.items() if isinstance(x, dict) else enumerate(x)
        for k, v in items:
            found = _number_sequence(v, f"{name}[{k!r}]", depth + 1)
            if found is not None:
                return found
    return None


# True while dg.eval_shape traces: a call inside it may take a ShapeDtypeStruct (JAX's)
SHAPES_ONLY: ContextVar[bool] = ContextVar("dualgpu_shapes_only", default=False)


def shape_stand_in(leaf: Any) -> Any:
    """An argument leaf given by its shape and dtype only (a ShapeDtypeStruct, JAX's): a
    zero-strided array of zeros, nothing allocated; other leaves as they are."""
    if hasattr(leaf, "shape") and hasattr(leaf, "dtype") and not hasattr(leaf, "__array__") \
            and not hasattr(leaf, "__array_namespace__"):
        return np.broadcast_to(np.zeros((), np.dtype(leaf.dtype)), tuple(leaf.shape))
    return leaf


def _shape_only(x: Any) -> bool:
    """A ShapeDtypeStruct (dualgpu's or JAX's, by its class's name: the api layer and JAX
    are above this one): an argument of eval_shape, not of a call."""
    return type(x).__name__ == "ShapeDtypeStruct" and hasattr(x, "shape")


def _static_name(i: int, kwargs: dict, kw_leaf: int) -> str:
    """The static argument a leaf belongs to: ``argument i`` or ``keyword argument k``."""
    if i >= 0:
        return f"argument {i}"
    for name in pytree._dict_keys(kwargs):
        kw_leaf -= len(pytree.leaves(kwargs[name]))
        if kw_leaf < 0:
            return f"keyword argument {name!r}"
    return "a keyword argument"


FLOAT0 = np.dtype([("float0", np.void, 0)])  # JAX's dtype of integer inputs' gradients


def _plain_array(x: np.ndarray, i: int, what: str) -> np.ndarray:
    """An ndarray subclass as a plain array, or a refusal where its semantics differ
    (``np.matrix``'s ``*`` is a matrix product; masked arrays carry a mask)."""
    if isinstance(x, np.ma.MaskedArray):  # JAX's words, and its ValueError
        raise InvalidArgumentError(
            f"argument {i} of {what} is a MaskedArray: numpy masked arrays are not supported "
            "as direct inputs (their mask would be dropped); pass np.asarray(x) after filling "
            "or dropping the masked values")
    if isinstance(x, np.matrix):
        raise DualgpuError(
            f"argument {i} of {what} is a {type(x).__name__}, whose operators differ from "
            "ndarray's; pass np.asarray(x) (masked arrays: fill or drop the masked values)")
    return np.asarray(x)


def check_plain_values(x: Any, what: str) -> None:
    """Refuse a tangent, direction or cotangent whose values would be misread: a masked
    array (the mask would be dropped or carried through) or an object array (its entries
    are cast, ``None`` silently becoming NaN)."""
    if isinstance(x, (np.matrix, np.ma.MaskedArray)):
        raise DualgpuError(
            f"the {what} is a {type(x).__name__}, whose operators differ from ndarray's; "
            "pass np.asarray(x) (masked arrays: fill or drop the masked values first, e.g. "
            "x.filled(0.0))")
    dtype = getattr(x, "dtype", None)
    if dtype is not None and np.dtype(dtype).kind == "O":
        raise DualgpuError(
            f"the {what} has dtype object; pass a numeric array, e.g. "
            "np.asarray(ct, dtype=float) (entries such as None are not numbers)")


def float_point(x: Any, what: str, name: str, purpose: str = "differentiated") -> Any:
    """``x`` as a floating-point (or complex) array to differentiate at: arrays pass, Python
    and NumPy scalars become arrays; a bool, an integer dtype, a sparse matrix or anything
    that is no array is an error naming ``name`` (``purpose`` says what only floating-point
    values can be).

    >>> float_point(2.0, "dg.hvp_operator", "x")
    array(2.)
    """
    if isinstance(x, (bool, np.bool_)):
        raise IntegerInputError(f"{what}: {name} is a bool; pass a floating-point array")
    if isinstance(x, (int, float)) and not isinstance(x, np.generic):
        return np.asarray(float(x))
    if isinstance(x, np.generic):
        x = np.asarray(x)
    b = array_backend(x)
    if b is None or b.is_sparse(x):
        raise ArgumentTypeError(f"{what}: {name} must be a NumPy or CuPy array (or a float), got "
                                f"{type(x).__name__}" + ("; use np.asarray(x)"
                                                    if isinstance(x, (list, tuple)) else ""))
    if np.dtype(x.dtype).kind not in "fc":
        raise IntegerInputError(f"{what}: {name} has dtype {np.dtype(x.dtype)}: only "
                                f"floating-point values can be {purpose}; convert it with "
                                ".astype(float)")
    return x


def backend_of_all(backends: Iterable[Backend | None], what: str) -> Backend:
    found: Backend | None = None
    for b in backends:
        if found is not None and b is not found:
            raise BackendMismatchError(
                f"the arguments of {what} mix NumPy and CuPy arrays; move them to one "
                "library first (cupy.asarray(x) or x.get())")
        found = b
    return found or backend_of([])


def is_dask_array(x: Any) -> bool:
    """Whether ``x`` is a ``dask.array.Array``, without importing dask."""
    t = type(x)
    return t.__name__ == "Array" and t.__module__.startswith("dask.")


def alias_pattern(inputs: Sequence[Any]) -> tuple[int, ...] | None:
    """For each input, the first input that is the same object — None when none alias."""
    ids = [id(a) for a in inputs]
    if len(set(ids)) == len(ids):
        return None
    first: dict[int, int] = {}
    return tuple(first.setdefault(i, k) for k, i in enumerate(ids))


def class_call(cls: type) -> Any:
    """The ``__call__`` a class defines (or inherits), as found on its MRO."""
    for k in cls.__mro__:
        if "__call__" in k.__dict__:
            return k.__dict__["__call__"]
    return None
