"""Call-sequence fuzzer: random *sequences of calls* of transformed functions, checked
against freshly built programs.

The program fuzzer (tests/helpers/fuzz_programs.py) checks that one program is right. This one
checks the invariant of the cache: **a cached call returns exactly what a freshly built
program returns**, whatever happened before it: calls with other shapes and dtypes, the
same array object passed in two positions, arrays inside lists/tuples/dicts with new
values, static arguments that compare equal but are not the same (``0.0``/``-0.0``,
``1``/``1.0``/``True``, ``nan``), arrays mutated in place, fresh closures whose ids are
reused, new transform objects around the same function, composed transforms (``vmap`` of
an HVP over a stack of directions among them), ``dg.clear_cache()`` and
``dg.set_cache_size(2)`` in the middle; pullbacks (``dg.vjp``) and ``dg.linearize``'s
``f_jvp`` called later in the sequence, after their point, the arrays their function
closed over or the values it reads were changed (in place or reassigned).

A sequence is plain data (:class:`Seq`, a list of steps) built from a seed
(:func:`generate`), so every failure is reproducible, shrinkable (:func:`shrink`, a
deterministic delta-debug over the steps) and printable as Python-ish text
(:meth:`Seq.text`).

Oracle (:func:`check`): run the sequence once with caching, recording a copy of every
result; then recompute every call alone: ``dg.clear_cache()``, new transform objects (and
new closures, rebuilt from their recipe), copies of the argument values as they were at the
call (for a pullback or an ``f_jvp``: a fresh ``vjp`` or ``linearize`` on the values and in
the world of the call that made it, applied to the cotangent or tangents of its call).
The two must be equal exactly: same pytree structure and container types, same leaf types,
dtypes and shapes, bitwise-equal values (NaN == NaN, and -0.0 != 0.0). Besides:

* no result shares memory with an input or with another result (``np.shares_memory``);
* a transform composed with ``jit`` gives what it gives without the ``jit`` (to rounding),
  ``grad(x -> <grad f(x), w>)`` gives ``hvp(f)(x, w)``, and ``vmap(hvp(f))(x, V)`` gives
  one ``hvp(f)(x, V[i])`` per direction (to rounding);
* no call raises: every generated call is valid under the documented API (second wave:
  composable transforms, pytrees, ``has_aux``, keyword arguments).

Failure classes (the ``kind`` of a :class:`Failure`): ``stale`` (cached result differs from
a fresh build), ``structure`` (different pytree structure / type / dtype / shape),
``error`` (the call raised), ``alias-input``, ``alias-result``, ``compose`` (composition
differs from its reference), ``pytree`` (a derivative's structure does not mirror the
differentiated arguments, JAX's convention: ``grad(f)(params_dict, X)`` is a dict...).
"""
from __future__ import annotations

import copy
import math
import random
import traceback
import types
import zlib
from collections import namedtuple
from dataclasses import dataclass, field

import fuzz_programs as fp
import numpy as np
import scipy.sparse as sp

import dualgpu as dg
from dualgpu.runtime.executor import DEFAULTS

# =========================================================================== helpers


def static_code(c) -> float:
    """A number that depends on a static value's type, repr (sign of zero, nan) and
    structure: functions multiply by it, so a cache that confuses two static values that
    compare equal returns a visibly wrong result."""
    text = f"{type(c).__name__}:{c!r}"
    return 0.25 + (zlib.crc32(text.encode()) % 1000) / 400.0


def weights(shape, salt) -> np.ndarray:
    """A deterministic constant array (no random state to print)."""
    n = int(np.prod(shape, dtype=np.int64))
    return np.cos(np.arange(n, dtype=np.float64) * 0.37 + float(salt)).reshape(shape)


def tree_leaves(x) -> list:
    if isinstance(x, (tuple, list)):
        return [leaf for item in x for leaf in tree_leaves(item)]
    if isinstance(x, dict):
        return [leaf for k in sorted(x) for leaf in tree_leaves(x[k])]
    return [x]


def tree_map(fn, x):
    if isinstance(x, (tuple, list)):
        return type(x)(tree_map(fn, i) for i in x)
    if isinstance(x, dict):
        return {k: tree_map(fn, v) for k, v in x.items()}
    return fn(x)


def tree_wsum(out, salt):
    """``sum_leaves <leaf, weights(leaf.shape)>``: a scalar from any pytree output."""
    total = 0.0
    for j, leaf in enumerate(tree_leaves(out)):
        total = total + np.sum(leaf * weights(tuple(leaf.shape), salt + j))
    return total


def sumw(fn, salt):
    """``x -> <fn(x), w>``: makes any function scalar so that ``grad`` can take it."""

    def reduced(*args, **kwargs):
        return tree_wsum(fn(*args, **kwargs), salt)

    return reduced


def snapshot(x):
    """A deep copy of argument values (arrays copied with their dtype and shape)."""
    if isinstance(x, np.ndarray):
        return np.array(x, copy=True)
    if isinstance(x, CSR):
        return CSR(*(snapshot(i) for i in x))
    if isinstance(x, (tuple, list)):
        return type(x)(snapshot(i) for i in x)
    if isinstance(x, dict):
        return {k: snapshot(v) for k, v in x.items()}
    return copy.copy(x)


def short(x, n=5) -> str:
    try:
        flat = np.concatenate([np.ravel(np.asarray(leaf, dtype=np.float64))
                               for leaf in tree_leaves(x)] or [np.zeros(0)])
    except (TypeError, ValueError):
        return repr(x)[:80]
    body = np.array2string(flat[:n], precision=6, separator=", ")
    return body[:-1] + ", ...]" if flat.size > n else body


def structure(x):
    """The pytree structure and the leaf types, dtypes and shapes of a result."""
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, tuple(structure(i) for i in x))
    if isinstance(x, dict):
        return ("dict", tuple((k, structure(x[k])) for k in sorted(x, key=repr)))
    if isinstance(x, (np.ndarray, np.generic)):
        return (type(x).__name__, np.dtype(x.dtype).str, tuple(np.shape(x)))
    return (type(x).__name__,)


def bitwise_equal(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind not in "fc":
        return bool(np.array_equal(a, b))
    return bool(np.array_equal(a, b, equal_nan=True)
                and np.array_equal(np.signbit(a.real), np.signbit(b.real)))


def close(a, b, rtol=1e-9, atol=1e-11, inputs=()) -> bool:
    """Equal to rounding: ``rtol`` relative to each leaf's largest element (float64); 2e-5
    when a leaf, or an input it was computed from, is float32."""
    la, lb = tree_leaves(a), tree_leaves(b)
    if len(la) != len(lb):
        return False
    if any(np.asarray(x).dtype == np.float32 for x in la + lb + tree_leaves(inputs)):
        rtol, atol = max(rtol, 2e-5), max(atol, 1e-6)
    for x, y in zip(la, lb):
        x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        if x.shape != y.shape:
            return False
        finite = np.abs(y[np.isfinite(y)])
        scale = float(np.max(finite, initial=0.0))
        if not np.allclose(x, y, rtol=rtol, atol=atol + rtol * scale, equal_nan=True):
            return False
    return True


def fmt_value(v) -> str:
    if isinstance(v, float) and math.isnan(v):
        return "float('nan')"
    if isinstance(v, np.generic):
        return f"np.{type(v).__name__}({fmt_value(v.item())})"
    if isinstance(v, tuple):
        return "(" + ", ".join(fmt_value(i) for i in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


# =========================================================================== functions
# Hand-made functions. Each has signature variants: a list of argument kinds
#   ("a", shape)  an array;  ("list"|"tuple", [shapes]), ("dict", {key: shape}) containers
#   ("s",)        a static value (drawn from STATIC_VALUES)
#   ("f",)        a Python float used as a number (traced by jit; FLOAT_VALUES)
# and optionally keyword arguments (static, drawn from their own lists).


def h_sin(x):
    return np.sum(np.sin(x) * x + 0.5 * x ** 2)


def h_two(x, y):
    return np.sum(np.tanh(x) * y ** 2 + np.cos(x * y))


def h_vec(x, y):
    """A vector output (jit, jvp, vjp; reduced by sumw for grad)."""
    return np.sin(x) * y + x ** 3


def h_static(x, c):
    k = static_code(c)
    return np.sum(np.sin(x) * k + k * k * x ** 2)


def h_static2(c, x, d):
    k = static_code(c) - 2.0 * static_code(d)
    return np.sum(np.cos(x * k) + x ** 2)


def h_scalar(x, c):
    """A float argument used as a value: jit traces it (a weakly typed 0-d input)."""
    return np.sum(np.sin(x) * c + c * c * x ** 2) + c


def h_list(x, wb):
    w, b = wb[0], wb[1]
    return np.sum(np.tanh(x @ w + b) ** 2) + np.sum(w ** 2) * 0.1


def h_dict(params, xs):
    return np.sum(np.tanh(xs @ params["W"] + params["b"]) ** 2) + np.sum(params["W"] ** 2)


def h_nested(tree, x):
    """tree = {"a": [A, B], "c": (C,)}: nested containers."""
    a, b = tree["a"]
    (c,) = tree["c"]
    return np.sum(np.sin(a * x) * b) + np.sum(c ** 3) * np.sum(x)


def h_kw(x, *, scale=1.0, power=2):
    return scale * np.sum(np.sin(x) ** power) + np.sum(x ** 2)


def h_aux(x, w):
    z = np.tanh(x @ w)
    return np.sum(z ** 2), {"z": z, "s": np.sum(z)}


A = "a"
HAND = {
    # name: (function, variants, kwargs choices, output: "scalar" | "any" | "aux")
    "h_sin": (h_sin, [[(A, (3,))], [(A, (2, 3))], [(A, ())], [(A, (4,))]], {}, "scalar"),
    "h_two": (h_two, [[(A, (3,)), (A, (3,))], [(A, (2, 2)), (A, (2, 2))]], {}, "scalar"),
    "h_vec": (h_vec, [[(A, (3,)), (A, (3,))], [(A, (2, 3)), (A, (3,))]], {}, "any"),
    "h_static": (h_static, [[(A, (3,)), ("s",)], [(A, (2, 2)), ("s",)]], {}, "scalar"),
    "h_static2": (h_static2, [[("s",), (A, (3,)), ("s",)]], {}, "scalar"),
    "h_scalar": (h_scalar, [[(A, (3,)), ("f",)], [(A, (2, 2)), ("f",)]], {}, "scalar"),
    "h_list": (h_list, [[(A, (2, 3)), ("list", [(3, 2), (2,)])],
                        [(A, (2, 3)), ("tuple", [(3, 2), (2,)])]], {}, "scalar"),
    "h_dict": (h_dict, [[("dict", {"W": (3, 2), "b": (2,)}), (A, (4, 3))]], {}, "scalar"),
    "h_nested": (h_nested, [[("nest", None), (A, (2,))]], {}, "scalar"),
    "h_kw": (h_kw, [[(A, (3,))], [(A, (2, 2))]],
             {"scale": [0.5, 2.0, -0.0, 0.0, 1, True], "power": [1, 2, 3]}, "scalar"),
    "h_aux": (h_aux, [[(A, (2, 3)), (A, (3, 2))]], {}, "aux"),
}
CAPTURED_FNS = ["h_gact", "h_gcoef", "h_gmode", "h_gknobs", "h_gtable", "h_gmod", "h_gdefault",
                "h_gcell", "h_gcall", "h_gmat", "h_gidx"]
NESTED_SHAPES = {"a": ("list", [(2,), (2,)]), "c": ("tuple", [(3,)])}

FLOAT_VALUES = [0.0, -0.0, 0.5, 1.0, 2.5, -1.25, float("nan"), 1e-300]
STATIC_VALUES = [0.0, -0.0, 1.0, 1, True, 2, 2.0, False, float("nan"), (1, 2), (1.0, 2.0),
                 (True,), (1,), None, "a", 0.5]

def _captured(c):
    w = weights((3,), c)  # an array constant captured by the closure
    return lambda x: np.sum(np.tanh(x * w) * c)


STATIC_GROUPS = [[0.0, -0.0], [1, 1.0, True], [0, 0.0, -0.0, False], [float("nan"), 1.0],
                 [(1,), (1.0,), (True,)], [(1, 2), (1.0, 2.0)], [2, 2.0, np.float64(2.0)],
                 [np.float64(-0.0), np.float64(0.0), -0.0], [None, 0, ""]]

# closures: recipe name -> (maker(const) -> fresh function, variants, output)
CLOSURES = {
    "scale": (lambda c: (lambda x: np.sum(np.sin(x) * c + x ** 2)),
              [[(A, (3,))], [(A, (2, 3))]], "scalar"),
    "shift": (lambda c: (lambda x, y: np.sum((x - c) ** 2 * y + np.sin(y))),
              [[(A, (3,)), (A, (3,))]], "scalar"),
    "captured": (lambda c: _captured(c),
                 [[(A, (3,))], [(A, (2, 3))]], "scalar"),
    "vec": (lambda c: (lambda x: np.sin(x * c) + c),
            [[(A, (3,))], [(A, (2, 2))]], "any"),
}
VIEWS = {"transpose": lambda x: x.T, "reshape": lambda x: x.reshape(-1),
         "identity": lambda x: x, "pair": lambda x: (np.sin(x), np.sin(x))}
CLOSURES["view"] = (lambda c: VIEWS[c], [[(A, (2, 3))]], "any")  # not drawn by the generator
CLOSURE_SOURCES = {
    "view": "{'transpose': lambda x: x.T, 'reshape': lambda x: x.reshape(-1), 'identity': "
            "lambda x: x, 'pair': lambda x: (np.sin(x), np.sin(x))}[c]",
    "scale": "lambda x: np.sum(np.sin(x) * c + x ** 2)",
    "shift": "lambda x, y: np.sum((x - c) ** 2 * y + np.sin(y))",
    "captured": "(lambda w: lambda x: np.sum(np.tanh(x * w) * c))(weights((3,), c))",
    "vec": "lambda x: np.sin(x * c) + c",
}
CLOSURE_CONSTS = [0.5, 1.0, -0.0, 0.0, 2.0, 1, 3.0, -1.5]

# --------------------------------------------------------------------------- captured values
# What the h_g* functions read from outside their arguments. A ("set", target, i) step
# reassigns one place (a global, an object's or a class's attribute, an item of a dict or a
# list, a module attribute, a default argument, a closure cell, a dg.config switch) to
# choice i of CAPTURED[target]; the oracle's fresh build sees the same choices (the world of
# the call, recorded with it).


def _cube(v):
    return v ** 3


def _softsign(v):
    return v / (1.0 + v * v)


class Knobs:
    offset = 0.0  # a class attribute

    def __init__(self, scale, power):
        self.scale, self.power = scale, power


G_ACT = np.tanh
G_COEF = (1.0, 2.0)
G_MODE = "sin"
G_KNOBS = Knobs(1.0, 2)
G_TABLE = {"k": 1.0}
G_ITEMS = [2.0]
gmod = types.ModuleType("gmod")  # a user module
gmod.factor = 1.0


def _make_cell():
    k = 1.0

    def h_gcell(x):
        return np.sum(np.sin(x * k))

    def set_k(v):
        nonlocal k
        k = v

    return h_gcell, set_k


h_gcell, _set_cell = _make_cell()


def h_gact(x):
    return np.sum(G_ACT(x) * x)


def h_gcoef(x):
    return np.sum(G_COEF[0] * x + G_COEF[1] * x ** 2)


def h_gmode(x):
    if G_MODE == "sin":
        return np.sum(np.sin(x))
    if G_MODE == "cube":
        return np.sum(x ** 3)
    return np.sum(np.exp(x * 0.5))


def h_gknobs(x):
    return G_KNOBS.scale * np.sum(np.sin(x) ** G_KNOBS.power) + G_KNOBS.offset * np.sum(x)


def h_gtable(x):
    return G_TABLE["k"] * np.sum(x ** 2) + G_ITEMS[0] * np.sum(np.sin(x))


def h_gmod(x):
    return gmod.factor * np.sum(np.cos(x))


def h_gdefault(x, fn=np.tanh):
    return np.sum(fn(x) * x)


# changed IN PLACE by "set" steps (never reassigned): every transform's program reads it
G_MATRICES = [np.array([[1.0, 0.0], [0.0, 3.0], [2.0, 0.0]]),
              np.array([[1.0, 5.0], [0.0, 3.0], [2.0, -1.0]]), -np.ones((3, 2))]
G_MAT = G_MATRICES[0].copy()


def h_gmat(x):
    return np.sum((x @ G_MAT) ** 3)


# index arrays changed IN PLACE by "set" steps: the programs read them (gathers)
G_INDICES = [np.array([0, 1, 2]), np.array([2, 2, 0]), np.array([1, 0, 1])]
G_IDX = G_INDICES[0].copy()


def h_gidx(x):
    return np.sum(np.sin(x)[..., G_IDX] * x[..., G_IDX] ** 2)


def _g_helper(v):
    return G_ACT(v) * G_COEF[1]


def h_gcall(x):
    """Reads the captured values through a helper it calls."""
    return np.sum(_g_helper(x) + x ** 2)


_CONFIG_DEFAULTS = {"fuse": True, "recompute": True, "stack_gemms": "auto",
                    "host_kernel": False, "host_interpreter": DEFAULTS["host_interpreter"]}


def _set_config(choice):
    dg.config.update({**_CONFIG_DEFAULTS, **choice})


def _set_global(name):
    def setter(value):
        globals()[name] = value
    return setter


def _set_knobs(params):
    global G_KNOBS
    G_KNOBS = Knobs(*params)


def _set_attr(get_obj, name):
    def setter(value):
        setattr(get_obj(), name, value)
    return setter


def _set_item(container, key):
    def setter(value):
        container[key] = value
    return setter


def _set_defaults(value):
    h_gdefault.__defaults__ = value


# target -> (choices (index 0 is the start), setter, how a step prints: format of the value)
CAPTURED = {
    "config": ([{}, {"fuse": False}, {"recompute": False}, {"stack_gemms": True},
                {"host_kernel": True}, {"host_interpreter": False}], _set_config,
               "dg.config.update({v})"),
    "G_ACT": ([np.tanh, np.sin, _cube, _softsign, np.tanh], _set_global("G_ACT"),
              "G_ACT = {v}"),
    "G_COEF": ([(1.0, 2.0), (3.0, 0.0), (3, 0), (True, 2), (1.0, -0.0), (1.0, 2.0)],
               _set_global("G_COEF"), "G_COEF = {v}"),
    "G_MODE": (["sin", "cube", "exp"], _set_global("G_MODE"), "G_MODE = {v}"),
    "G_KNOBS": ([(1.0, 2), (2.0, 3), (0.5, 2), (1, 2)], _set_knobs, "G_KNOBS = Knobs{v}"),
    "G_KNOBS.scale": ([None, 0.5, 2.0, -1.0, 1], _set_attr(lambda: G_KNOBS, "scale"),
                      "G_KNOBS.scale = {v}"),
    "Knobs.offset": ([0.0, 1.5, -0.0, 2], _set_attr(lambda: Knobs, "offset"),
                     "Knobs.offset = {v}"),
    "G_TABLE['k']": ([1.0, 2.0, -0.5, 1], _set_item(G_TABLE, "k"), "G_TABLE['k'] = {v}"),
    "G_ITEMS[0]": ([2.0, 0.0, -1.0], _set_item(G_ITEMS, 0), "G_ITEMS[0] = {v}"),
    "gmod.factor": ([1.0, 3.0, -2.0, 1], _set_attr(lambda: gmod, "factor"),
                    "gmod.factor = {v}"),
    "h_gdefault.__defaults__": ([(np.tanh,), (np.cos,), (_softsign,)], _set_defaults,
                                "h_gdefault.__defaults__ = {v}"),
    "h_gcell.k": ([1.0, -2.0, 0.5], _set_cell, "k = {v}  # h_gcell's closure cell"),
    "G_MAT[...]": (G_MATRICES, lambda value: G_MAT.__setitem__(Ellipsis, value),
                   "G_MAT[...] = G_MATRICES[{i}]  # in place"),
    "G_IDX[...]": (G_INDICES, lambda value: G_IDX.__setitem__(Ellipsis, value),
                   "G_IDX[...] = G_INDICES[{i}]  # in place"),
}

# what each h_g* function reads (besides dg.config): the places a set step changes
READS = {"h_gact": ("G_ACT",), "h_gcoef": ("G_COEF",), "h_gmode": ("G_MODE",),
         "h_gknobs": ("G_KNOBS", "G_KNOBS.scale", "Knobs.offset"),
         "h_gtable": ("G_TABLE['k']", "G_ITEMS[0]"), "h_gmod": ("gmod.factor",),
         "h_gdefault": ("h_gdefault.__defaults__",), "h_gcell": ("h_gcell.k",),
         "h_gcall": ("G_ACT", "G_COEF"), "h_gmat": ("G_MAT[...]",), "h_gidx": ("G_IDX[...]",)}

# --------------------------------------------------------------------------- sparse transforms
# The "sparse" family: dg.sparse_hessian, dg.sparse_jacobian (fwd, rev, auto) and the two
# patterns, on functions whose pattern depends on what they read: a dict argument (an item
# decides whether entries couple, a list inside it by how far), globals, and captured arrays
# changed IN PLACE (a matrix in a product, an index array). A result is compared as its CSR
# arrays (shape, indptr, indices, data: bitwise), and against the dense dg.hessian /
# dg.jacobian (the values to rounding; a pattern must cover the dense nonzeros).
CSR = namedtuple("CSR", "shape indptr indices data")
S_N = 6
S_MATRICES = [np.eye(S_N), np.eye(S_N) + 0.5 * np.eye(S_N, k=1),
              np.eye(S_N) - np.eye(S_N, k=-2), np.diag(np.arange(S_N) % 2 * 1.0),
              np.eye(S_N)[::-1] + np.eye(S_N)]
S_ORDERS = [np.arange(S_N), np.array([1, 0, 3, 2, 5, 4]), np.arange(S_N)[::-1],
            np.array([0, 0, 1, 1, 2, 2])]
S_MATRIX = S_MATRICES[0].copy()   # changed in place by "set" steps (never reassigned)
S_ORDER = S_ORDERS[0].copy()
S_COUPLE = False
S_SHIFT = 1


def s_cfg(x, cfg):
    energy = cfg["scale"] * np.sum(np.sin(x) ** 2)
    if cfg["couple"]:
        energy = energy + np.sum(x * np.roll(x, cfg["shift"][0]) ** 2)
    return energy


def s_cfgv(x, cfg):
    out = np.sin(x) * cfg["scale"]
    return out + x * np.roll(x, cfg["shift"][0]) if cfg["couple"] else out


def s_mat(x):
    return np.sum(x * (S_MATRIX @ x) ** 2)


def s_matv(x):
    return S_MATRIX @ np.sin(x) + x ** 2


def s_order(x):
    return np.sum(x * x[S_ORDER] ** 2)


def s_orderv(x):
    return x[S_ORDER] * np.cos(x)


def s_glob(x):
    coupling = np.sum(x * np.roll(x, S_SHIFT) ** 2) if S_COUPLE else 0.0
    return np.sum(np.sin(x) ** 2) + coupling


def s_kw(x, *, k=1, c=1.0):
    return c * np.sum(x[k:] * x[:-k] ** 2)


def s_kwv(x, *, k=1, c=1.0):
    return c * x[k:] * x[:-k]


SPARSE_FNS = {  # name: (function, variants, keyword choices, output)
    "s_cfg": (s_cfg, [[(A, (S_N,)), ("cfg",)], [(A, (5,)), ("cfg",)]], {}, "scalar"),
    "s_cfgv": (s_cfgv, [[(A, (S_N,)), ("cfg",)]], {}, "vector"),
    "s_mat": (s_mat, [[(A, (S_N,))]], {}, "scalar"),
    "s_matv": (s_matv, [[(A, (S_N,))]], {}, "vector"),
    "s_order": (s_order, [[(A, (S_N,))]], {}, "scalar"),
    "s_orderv": (s_orderv, [[(A, (S_N,))]], {}, "vector"),
    "s_glob": (s_glob, [[(A, (S_N,))], [(A, (5,))]], {}, "scalar"),
    "s_kw": (s_kw, [[(A, (S_N,))], [(A, (5,))]], {"k": [1, 2, 3], "c": [0.5, 2.0]}, "scalar"),
    "s_kwv": (s_kwv, [[(A, (S_N,))]], {"k": [1, 2], "c": [0.5, 2.0]}, "vector"),
}


def _set_in_place(get_array):
    def setter(value):
        get_array()[...] = value
    return setter


SPARSE_CAPTURED = {
    "S_MATRIX[...]": (S_MATRICES, _set_in_place(lambda: S_MATRIX),
                      "S_MATRIX[...] = S_MATRICES[{i}]  # in place"),
    "S_ORDER[...]": (S_ORDERS, _set_in_place(lambda: S_ORDER),
                     "S_ORDER[...] = S_ORDERS[{i}]  # in place"),
    "S_COUPLE": ([False, True], _set_global("S_COUPLE"), "S_COUPLE = {v}"),
    "S_SHIFT": ([1, 2, -1], _set_global("S_SHIFT"), "S_SHIFT = {v}"),
}
SPARSE_KINDS = {"scalar": ("sparse_hessian", "sparse_hessian", "hessian_sparsity"),
                "vector": ("sparse_jacobian", "sparse_jacobian", "jacobian_sparsity")}


def as_csr_parts(res):
    """A sparse result as its CSR arrays (the arrays themselves: the alias checks see
    them); anything else as it is."""
    if sp.issparse(res):
        res = res.tocsr()
        return CSR(np.array(res.shape), res.indptr, res.indices, res.data)
    return res


def sparse_reference(step, args, extra, fresh) -> str | None:
    """What is wrong with a fresh sparse result against the dense derivative (None: right):
    a matrix equals it to rounding, a pattern covers its nonzeros."""
    t = step[2]
    if step[0] != "call" or t[0] not in SPARSE_KINDS["scalar"] + SPARSE_KINDS["vector"]:
        return None
    f = build(t[1], None)
    dense_of = dg.hessian if t[0] in SPARSE_KINDS["scalar"] else dg.jacobian
    dense = np.asarray(dense_of(f, argnums=t[2])(*args, **extra))
    got = sp.csr_matrix((fresh.data, fresh.indices, fresh.indptr), shape=tuple(fresh.shape))
    dense = dense.reshape(got.shape)
    if t[0].endswith("sparsity"):
        missed = np.argwhere((dense != 0) & ~got.toarray())
        return f"the pattern misses the dense nonzero {tuple(missed[0])}" if len(missed) else None
    if not close(got.toarray(), dense, inputs=args):
        return f"{short(got.toarray())} but the dense derivative is {short(dense)}"
    return None


# every captured place a "set" step may change (the sparse family's only in that family)
ALL_CAPTURED = {**CAPTURED, **SPARSE_CAPTURED}
# applied in this order (a new G_KNOBS first, then its scale)
START_WORLD = {target: 0 for target in ALL_CAPTURED}


def apply_world(world: dict) -> None:
    """Sets every captured place to the choice ``world`` names."""
    for target, (choices, setter, _) in ALL_CAPTURED.items():
        value = choices[world.get(target, 0)]
        if value is not None:
            setter(value)


for _name in CAPTURED_FNS:
    HAND[_name] = (globals()[_name], [[(A, (3,))], [(A, (2, 3))]], {}, "scalar")


def value_text(v) -> str:
    if callable(v) and hasattr(v, "__name__"):
        return ("np." if isinstance(v, np.ufunc) else "") + v.__name__
    if isinstance(v, tuple):
        return "(" + ", ".join(value_text(i) for i in v) + ("," if len(v) == 1 else "") + ")"
    return fmt_value(v)

# --------------------------------------------------------------------------- programs
_POOLS: dict = {}
_CURRENT: dict = {}  # the programs of the sequence being checked (index -> Program)


def pool(n: int = 40) -> list:
    """Programs from the program fuzzer (deterministic: hypothesis derandomized), without
    sparse ops, that the library runs (jit, grad and hvp) on their own; one pool per size."""
    if n in _POOLS:
        return _POOLS[n]
    from hypothesis import HealthCheck, Phase, given, settings

    found: list = []

    @settings(max_examples=3 * n, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(fp.programs(max_nodes=6, max_inputs=2, sparse=False))
    def collect(prog):
        if len(found) < 2 * n and prog not in found:
            found.append(prog)

    collect()
    kept = []
    for prog in found:
        if len(kept) >= n:
            break
        if _program_runs(prog):
            kept.append(prog)
    _POOLS[n] = kept
    return kept


def _program_runs(prog) -> bool:
    try:
        with np.errstate(all="ignore"):
            f, loss = prog.functions()
            args = tuple(np.asarray(a) for a in prog.args())
            out = dg.jit(f)(*args)
            g = dg.grad(loss, argnums=tuple(range(len(args))))(*args)
            h = dg.hvp(loss)(*args, args[0])
        return all(np.all(np.isfinite(leaf)) for leaf in tree_leaves((out, g, h)))
    except Exception:  # noqa: BLE001 - a program the library cannot run belongs to the
        return False  # program fuzzer's reports, not to this one


# =========================================================================== sequences
# FnSpec: ("hand", name) | ("closure", name, const) | ("prog", index, "f"|"loss")
# TSpec (a transform tree):
#   ("fn", FnSpec) | ("jit", T) | ("grad"|"value_and_grad", T, argnums, has_aux)
#   | ("hvp"|"grad_and_hvp", T, argnums) | ("sumw", T, salt)
#   | ("vmap", ("hvp", T, argnums), in_axes)   k directions at once: in_axes is None for
#                                             every argument and 0 for the stacked direction
# Expr (an argument): ("arr", name) | ("list"|"tuple", [Expr]) | ("dict", [(k, Expr)])
#   | ("val", python value)
# Steps:
#   ("new", name, shape, dtype, seed, base)   base None or (program index, input index)
#   ("mutate", name, seed)                    name[...] = new values, in place
#   ("clear",) | ("cache_size", n)
#   ("set", target, i)                        a captured place := CAPTURED[target][0][i]
#   ("call", cid, tspec, obj, args, kwargs)   obj: an int (transform object reused across
#                                             calls with the same obj) or None (new object)
#   ("jvp", cid, tspec, obj, primals, tangents)
#   ("vjp", cid, tspec, obj, primals, pid)    keeps pullback pid (pending)
#   ("pull", cid, pid, salt[, "jit"])         pullback pid applied to ct_like(out, salt)
#   ("lin", cid, tspec, obj, primals, lid)    dg.linearize: keeps f_jvp lid (pending)
#   ("fjvp", cid, lid, tangents[, "jit"])     f_jvp lid applied to the tangents
#   (with "jit": dg.jit of the pullback or f_jvp, a new jit object, called)


CALLS = ("call", "jvp", "vjp", "lin")  # the steps that call a transform
LATER = ("pull", "fjvp")  # the steps that call what a vjp or a linearize returned


@dataclass
class Seq:
    seed: int
    family: str
    steps: list
    programs: dict = field(default_factory=dict)  # pool index -> Program (for printing)

    def text(self, marks: dict | None = None) -> str:
        marks = marks or {}
        lines = [f"# call sequence: family {self.family!r}, seed {self.seed}"]
        for i, prog in sorted(self.programs.items()):
            lines.append(f"# P{i} = {prog!r}")
            lines += ["#   " + s for s in prog.source().splitlines()[:14]]
        recipes = sorted({t[1][1] for s in self.steps if s[0] in CALLS
                          for t in _fn_specs(s[2]) if t[1][0] == "closure"})
        for name in recipes:
            lines.append(f"make_{name} = lambda c: {CLOSURE_SOURCES[name]}")
        objs: dict = {}
        for step in self.steps:
            line = step_text(step, objs)
            if step[0] in CALLS + LATER and step[1] in marks:
                line += "    # <-- " + marks[step[1]]
            lines.append(line)
        return "\n".join(lines)


def _fn_specs(t):
    return [t] if t[0] == "fn" else _fn_specs(t[1])


def fn_text(spec) -> str:
    if spec[0] in ("hand", "sparse"):
        return spec[1]
    if spec[0] == "closure":
        return f"make_{spec[1]}({fmt_value(spec[2])})"
    return f"P{spec[1]}.{spec[2]}"


def t_text(t) -> str:
    k = t[0]
    if k == "fn":
        return fn_text(t[1])
    if k == "jit":
        static = static_positions(t)
        return f"dg.jit({t_text(t[1])}" + (f", static_argnums={static})" if static else ")")
    if k == "sumw":
        return f"sumw({t_text(t[1])}, salt={t[2]})"
    if k == "vmap":
        return f"dg.vmap({t_text(t[1])}, in_axes={t[2]!r})"
    if k == "sparse_jacobian":
        return f"dg.sparse_jacobian({t_text(t[1])}, mode={t[3]!r})"
    opts = ""
    if t[2] != 0:
        opts += f", argnums={t[2]!r}"
    if len(t) > 3 and t[3]:
        opts += ", has_aux=True"
    return f"dg.{k}({t_text(t[1])}{opts})"


def e_text(e) -> str:
    k = e[0]
    if k == "arr":
        return e[1]
    if k == "val":
        return fmt_value(e[1])
    if k == "list":
        return "[" + ", ".join(e_text(i) for i in e[1]) + "]"
    if k == "tuple":
        return "(" + ", ".join(e_text(i) for i in e[1]) + ("," if len(e[1]) == 1 else "") + ")"
    if k == "dict":
        return "{" + ", ".join(f"{key!r}: {e_text(v)}" for key, v in e[1]) + "}"
    raise ValueError(k)


def step_text(step, objs) -> str:
    k = step[0]
    if k == "new":
        _, name, shape, dtype, seed, base = step
        dt = "" if dtype == "float64" else f", dtype=np.{dtype}"
        if base is not None:
            return f"{name} = near(P{base[0]}.args()[{base[1]}], seed={seed}{dt})"
        return f"{name} = rand({shape!r}, seed={seed}{dt})"
    if k == "mutate":
        return f"{step[1]}[...] = rand({step[1]}.shape, seed={step[2]})  # in place"
    if k == "set":
        choices, _, form = ALL_CAPTURED[step[1]]
        return form.format(v=value_text(choices[step[2]]), i=step[2])
    if k == "cfg":
        return f"{step[1]} = {{'couple': {step[2]}, 'scale': {step[3]!r}, 'shift': [{step[4]}]}}"
    if k == "cfgset":
        where = "['shift'][0]" if step[2] == "shift" else f"[{step[2]!r}]"
        return f"{step[1]}{where} = {step[3]!r}  # in place"
    if k == "clear":
        return "dg.clear_cache()"
    if k == "cache_size":
        return f"dg.set_cache_size({step[1]})"
    if k == "pull":
        return (f"r{step[1]} = {_jitted(step, f'pb{step[2]}')}(ct_like(out{step[2]}, "
                f"salt={step[3]}))")
    if k == "fjvp":
        return (f"r{step[1]} = {_jitted(step, f'fj{step[2]}')}"
                f"({', '.join(e_text(a) for a in step[3])})")
    cid, tspec, obj = step[1], step[2], step[3]
    prefix = ""
    if obj is None:
        fn = t_text(tspec)
    else:
        fn = f"t{obj}"
        if obj not in objs:
            objs[obj] = tspec
            prefix = f"{fn} = {t_text(tspec)}\n"
    if k == "call":
        args = [e_text(a) for a in step[4]] + [f"{key}={fmt_value(v)}" for key, v in step[5]]
        return prefix + f"r{cid} = {fn}({', '.join(args)})"
    if k == "jvp":
        prim = "".join(e_text(a) + ", " for a in step[4])
        tan = "".join(e_text(a) + ", " for a in step[5])
        return prefix + f"r{cid} = dg.jvp({fn}, ({prim.rstrip(' ')}), ({tan.rstrip(' ')}))"
    if k == "vjp":
        return prefix + (f"out{step[5]}, pb{step[5]} = dg.vjp({fn}, "
                         f"{', '.join(e_text(a) for a in step[4])})  # r{cid} = out{step[5]}")
    if k == "lin":
        return prefix + (f"out{step[5]}, fj{step[5]} = dg.linearize({fn}, "
                         f"{', '.join(e_text(a) for a in step[4])})  # r{cid} = out{step[5]}")
    raise ValueError(k)


def _jitted(step, name: str) -> str:
    return f"dg.jit({name})" if step[-1] == "jit" else name


def later(step, fn):
    """The pullback or ``f_jvp`` a ``pull`` or ``fjvp`` step calls: ``fn``, or a new
    ``dg.jit`` of it."""
    return dg.jit(fn) if step[-1] == "jit" else fn


# =========================================================================== running


class Invalid(Exception):
    """The (shrunk) sequence is not well formed: an undefined name, say."""


def make_fn(spec):
    if spec[0] == "hand":
        return HAND[spec[1]][0]
    if spec[0] == "closure":
        return CLOSURES[spec[1]][0](spec[2])
    if spec[0] == "sparse":
        return SPARSE_FNS[spec[1]][0]
    prog = _CURRENT[spec[1]]
    f, loss = prog.functions()  # a new function object each time
    return f if spec[2] == "f" else loss


def static_positions(t) -> tuple:
    """The positions of the static-value arguments ``("s",)`` of the function under ``t``:
    ``jit`` traces floats, so a function that needs their value marks them static (JAX's
    ``static_argnums``); the other transforms keep them static by themselves."""
    spec = _fn_specs(t)[0][1]
    if spec[0] != "hand":
        return ()
    return tuple(sorted({i for variant in HAND[spec[1]][1]
                         for i, kind in enumerate(variant) if kind[0] == "s"}))


def build(t, fns: dict | None = None):
    """A transform object for spec ``t``; ``fns`` (when given) reuses function objects."""
    k = t[0]
    if k == "fn":
        if fns is None:
            return make_fn(t[1])
        key = repr(t[1])  # exact: ("closure", "vec", 0.0) == ("closure", "vec", -0.0)
        if key not in fns:
            fns[key] = make_fn(t[1])
        return fns[key]
    inner = build(t[1], fns)
    if k == "jit":
        return dg.jit(inner, static_argnums=static_positions(t))
    if k == "sumw":
        return sumw(inner, t[2])
    if k == "vmap":
        return dg.vmap(inner, in_axes=t[2])
    if k == "sparse_jacobian":
        return dg.sparse_jacobian(inner, argnums=t[2], mode=t[3])
    if k in ("grad", "value_and_grad"):
        kw = {"has_aux": True} if t[3] else {}
        return getattr(dg, k)(inner, argnums=t[2], **kw)
    return getattr(dg, k)(inner, argnums=t[2])


def resolve(e, env):
    k = e[0]
    if k == "arr":
        if e[1] not in env:
            raise Invalid(f"undefined {e[1]}")
        return env[e[1]]
    if k == "val":
        return e[1]
    if k in ("list", "tuple"):
        items = [resolve(i, env) for i in e[1]]
        return items if k == "list" else tuple(items)
    if k == "dict":
        return {key: resolve(v, env) for key, v in e[1]}
    raise Invalid(k)


def rand(shape, seed, dtype="float64"):
    rng = np.random.default_rng(seed)
    return np.array(rng.uniform(-1.2, 1.2, size=shape), dtype=dtype)


def near(base, seed, dtype="float64"):
    rng = np.random.default_rng(seed)
    return np.array(np.asarray(base) + 0.03 * rng.standard_normal(np.shape(base)), dtype=dtype)


def ct_like(out, salt):
    return tree_map(lambda leaf: weights(np.shape(leaf), salt).astype(
        np.asarray(leaf).dtype), out)


@dataclass
class Failure:
    kind: str  # stale | structure | error | alias-input | alias-result | compose | pytree
    cid: int        # the call (r<cid>) where it shows
    message: str

    def line(self) -> str:
        return f"[{self.kind}] r{self.cid}: {self.message}"


@dataclass
class Record:
    cid: int
    step: tuple
    args: object          # snapshot of the arguments at the call (values, for the oracle)
    result: object = None  # a copy of the result
    error: str | None = None
    world: dict = field(default_factory=dict)  # the captured places' choices at the call


def _invoke(step, obj, args, kwargs, pending, pid_out):
    """Runs one call step with transform object ``obj``: returns the result."""
    k = step[0]
    if k == "call":
        return as_csr_parts(obj(*args, **kwargs))
    if k == "jvp":
        return dg.jvp(obj, tuple(args), tuple(kwargs))
    if k == "vjp":
        out, pb = dg.vjp(obj, *args)
        pending[step[5]] = pb
        pid_out[step[5]] = out
        return out
    if k == "lin":
        out, f_jvp = dg.linearize(obj, *args)
        pending[step[5]] = f_jvp
        pid_out[step[5]] = out
        return out
    raise ValueError(k)


def _err(e) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    where = f" (at {tb[-1].filename.split('/')[-1]}:{tb[-1].lineno})" if tb else ""
    return f"{type(e).__name__}: {str(e)[:160]}{where}"


def run_cached(seq: Seq):
    """Runs the sequence with caching; returns the records, alias failures and the
    results' original objects."""
    env: dict = {}
    objs: dict = {}
    fns: dict = {}
    pending: dict = {}
    pid_out: dict = {}
    pid_args: dict = {}
    records: list[Record] = []
    failures: list[Failure] = []
    originals: list = []  # (cid, leaf) for the alias check
    world = dict(START_WORLD)
    pid_world: dict = {}
    for step in seq.steps:
        k = step[0]
        if k == "set":
            world[step[1]] = step[2]
            if step[1] == "G_KNOBS":
                world["G_KNOBS.scale"] = 0  # a new object: its own scale
            choices, setter, _ = ALL_CAPTURED[step[1]]
            setter(choices[step[2]])
            continue
        if k == "cfg":
            env[step[1]] = {"couple": step[2], "scale": step[3], "shift": [step[4]]}
            continue
        if k == "cfgset":
            if step[1] not in env:
                raise Invalid(step[1])
            if step[2] == "shift":
                env[step[1]]["shift"][0] = step[3]   # the list inside the dict, in place
            else:
                env[step[1]][step[2]] = step[3]
            continue
        if k == "new":
            _, name, shape, dtype, seed, base = step
            if base is not None:
                env[name] = near(np.asarray(_CURRENT[base[0]].args()[base[1]]), seed, dtype)
            else:
                env[name] = rand(shape, seed, dtype)
            continue
        if k == "mutate":
            if step[1] not in env:
                raise Invalid(step[1])
            arr = env[step[1]]
            arr[...] = rand(arr.shape, step[2], arr.dtype)
            continue
        if k == "clear":
            dg.clear_cache()
            continue
        if k == "cache_size":
            dg.set_cache_size(step[1])
            continue
        cid = step[1]
        if k == "pull":
            pid, salt = step[2], step[3]
            if pid not in pid_out:
                raise Invalid(f"pb{pid}")
            if pending.get(pid) is None:
                continue  # its vjp call failed (reported there)
            rec = Record(cid, step, pid_args[pid] + (salt,), world=pid_world[pid])
            records.append(rec)
            try:
                ct = ct_like(pid_out[pid], salt)
                res = later(step, pending[pid])(ct)
            except Exception as e:  # noqa: BLE001 - recorded; a failure of the library
                rec.error = _err(e)
                continue
            rec.result = snapshot(res)
            originals.append((cid, res))
            continue
        if k == "fjvp":
            lid = step[2]
            if lid not in pid_out:
                raise Invalid(f"fj{lid}")
            tangents = [resolve(a, env) for a in step[3]]
            if pending.get(lid) is None:
                continue  # its linearize call failed (reported there)
            # the oracle: a fresh linearize on the values (and in the world) of that call
            rec = Record(cid, step, pid_args[lid] + (snapshot(tangents),), world=pid_world[lid])
            records.append(rec)
            try:
                with np.errstate(all="ignore"):
                    res = later(step, pending[lid])(*tangents)
            except Exception as e:  # noqa: BLE001 - recorded; a failure of the library
                rec.error = _err(e)
                continue
            rec.result = snapshot(res)
            originals.append((cid, res))
            if any(isinstance(leaf, np.ndarray) and _shares(leaf, t)
                   for leaf in tree_leaves(res) for t in tree_leaves(tangents)
                   if isinstance(t, np.ndarray)):
                failures.append(Failure("alias-input", cid,
                                        "the result shares memory with a tangent"))
            continue
        tspec, obj_id = step[2], step[3]
        args = [resolve(a, env) for a in step[4]]
        if k == "call":
            extra = dict(step[5])
        elif k == "jvp":
            extra = [resolve(a, env) for a in step[5]]
        else:
            extra = {}
        rec = Record(cid, step, snapshot((args, extra)), world=dict(world))
        records.append(rec)
        if k in ("vjp", "lin"):
            pid_args[step[5]] = (tspec, rec.args[0])
            pid_world[step[5]] = rec.world  # the pullback is the program of its vjp call
            pending[step[5]] = None
            pid_out[step[5]] = None
        try:
            if obj_id is None:
                obj = build(tspec, None)  # new transform objects (and closures) for this call
            else:
                if obj_id not in objs:
                    objs[obj_id] = build(tspec, fns)
                obj = objs[obj_id]
            with np.errstate(all="ignore"):
                res = _invoke(step, obj, args, extra, pending, pid_out)
        except Exception as e:  # noqa: BLE001 - recorded; a failure of the library
            rec.error = _err(e)
            continue
        finally:
            obj = None  # a new closure is freed after its call (as in user code): ids repeat
        rec.result = snapshot(res)
        originals.append((cid, res))
        inputs = [leaf for leaf in tree_leaves((args, list(extra.values())
                                                if isinstance(extra, dict) else extra))
                  if isinstance(leaf, np.ndarray)]
        inputs += [v for v in env.values() if isinstance(v, np.ndarray)]
        for leaf in tree_leaves(res):
            if isinstance(leaf, np.ndarray) and any(_shares(leaf, a) for a in inputs):
                failures.append(Failure("alias-input", cid,
                                        "the result shares memory with an input array"))
                break
    # results never share memory with each other (leaves that share memory with an input
    # are reported as alias-input already)
    seen = []
    arrays = [v for v in env.values() if isinstance(v, np.ndarray)]
    for cid, res in originals:
        for leaf in tree_leaves(res):
            if not isinstance(leaf, np.ndarray) or any(_shares(leaf, a) for a in arrays):
                continue
            other = next((c for c, prev in seen if _shares(leaf, prev)), None)
            if other is not None:
                failures.append(Failure("alias-result", cid,
                                        f"a result shares memory with a result of r{other}"
                                        if other != cid else
                                        "two leaves of the result share memory"))
                break
            seen.append((cid, leaf))
    return records, failures


def _shares(a, b) -> bool:
    return bool(np.may_share_memory(a, b) and np.shares_memory(a, b))


def run_fresh(rec: Record):
    """The oracle: the call alone, on a cleared cache, with new transform objects and
    closures, on copies of the argument values the call saw."""
    dg.clear_cache()
    step = rec.step
    with np.errstate(all="ignore"):
        if step[0] == "pull":
            tspec, args, salt = rec.args
            out, pb = dg.vjp(build(tspec, None), *snapshot(args))
            return later(step, pb)(ct_like(out, salt))
        if step[0] == "fjvp":
            tspec, args, tangents = rec.args
            _, f_jvp = dg.linearize(build(tspec, None), *snapshot(args))
            return later(step, f_jvp)(*snapshot(tangents))
        args, extra = snapshot(rec.args)
        obj = build(step[2], None)
        if step[0] == "call":
            return as_csr_parts(obj(*args, **extra))
        if step[0] == "jvp":
            return dg.jvp(obj, tuple(args), tuple(extra))
        if step[0] == "lin":
            return dg.linearize(obj, *args)[0]
        return dg.vjp(obj, *args)[0]


def strip_jit(t):
    if t[0] == "jit":
        return strip_jit(t[1])
    if t[0] == "fn":
        return t
    return (t[0], strip_jit(t[1])) + tuple(t[2:])


def reference(step, args, extra):
    """A second way to compute a composed call (None when there is none): the same
    transform without its ``jit`` layers (plain Python when nothing is left); for
    ``grad(x -> <grad f(x), w>)``, ``hvp(f)(x, w)``."""
    if step[0] != "call":
        return None
    t = step[2]
    if (t[0] == "grad" and t[1][0] == "sumw" and t[1][1][0] == "grad" and t[3] is False
            and t[1][1][3] is False and t[2] == t[1][1][2] and isinstance(t[2], int)
            and isinstance(args[t[2]], np.ndarray)):
        f = build(t[1][1][1], None)
        w = weights(args[t[2]].shape, t[1][2]).astype(args[t[2]].dtype)
        return dg.hvp(f, argnums=t[2])(*args, w, **extra)
    inner = t[1] if t[0] == "jit" and t[1][0] == "vmap" else t
    if inner[0] == "vmap":   # k directions at once == one HVP per direction, stacked
        one = build(strip_jit(inner[1]), None)
        return np.stack([one(*args[:-1], np.array(v), **extra) for v in args[-1]])
    s = strip_jit(t)
    if s == t:
        return None
    return build(s, None)(*args, **extra)


def check(seq: Seq, checks=("stale", "error", "alias", "compose")) -> list[Failure]:
    """Runs ``seq`` with caching, then every call alone on a fresh build; the failures.
    ``checks`` picks the classes besides ``error``, which is always checked (a call that
    raised leaves nothing to check, so no selection of checks passes on raising calls)."""
    size = dg.config["cache_size"]
    _CURRENT.clear()
    _CURRENT.update(seq.programs)
    try:
        apply_world(START_WORLD)
        dg.clear_cache()
        records, failures = run_cached(seq)
        dg.set_cache_size(size)
        if "alias" not in checks:
            failures = []
        for rec in records:
            failures += _check_record(rec, checks)
    finally:
        apply_world(START_WORLD)
        dg.set_cache_size(size)
        dg.clear_cache()
    return failures


def _check_record(rec: Record, checks) -> list[Failure]:
    out = []
    apply_world(rec.world)  # the fresh build and the reference see what the call saw
    try:
        fresh = run_fresh(rec)
        fresh_error = None
    except Invalid:
        raise
    except Exception as e:  # noqa: BLE001 - a failure of the library
        fresh, fresh_error = None, _err(e)
    if rec.error or fresh_error:
        # always a failure, whatever ``checks`` names: a call that raised has no result the
        # other checks could look at, so "alias" alone would pass on calls that all raise
        if rec.error and fresh_error:
            msg = f"raises {rec.error}"
        elif rec.error:
            msg = f"raises {rec.error}; a fresh build does not"
        else:
            msg = f"a fresh build raises {fresh_error}; the cached call did not"
        return [Failure("error", rec.cid, msg)]
    if "stale" in checks:
        if structure(rec.result) != structure(fresh):
            out.append(Failure("structure", rec.cid,
                               f"result {_struct_text(rec.result)}, a fresh build gives "
                               f"{_struct_text(fresh)}"))
        elif not all(bitwise_equal(a, b) for a, b in zip(tree_leaves(rec.result),
                                                          tree_leaves(fresh))):
            diff = max(float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)),
                                    initial=0.0))
                       for a, b in zip(tree_leaves(rec.result), tree_leaves(fresh)))
            out.append(Failure("stale", rec.cid,
                               f"differs from a fresh build (max |diff| {diff:.3g}): "
                               f"got {short(rec.result)}, fresh {short(fresh)}"))
    if "stale" in checks and rec.step[0] == "call":
        want = expected_shape(rec.step, rec.args[0])
        if want is not None and tree_shape(fresh) != want:
            out.append(Failure("pytree", rec.cid,
                               f"result {_struct_text(fresh)}: JAX's conventions give the "
                               f"structure {want}"))
    if "compose" in checks and rec.step[0] == "call":
        args, extra = snapshot(rec.args)
        try:
            with np.errstate(all="ignore"):
                ref = reference(rec.step, args, extra)
        except Exception as e:  # noqa: BLE001
            out.append(Failure("error", rec.cid, f"its reference raises {_err(e)}"))
            return out
        try:
            with np.errstate(all="ignore"):
                wrong = sparse_reference(rec.step, args, extra, fresh)
        except Exception as e:  # noqa: BLE001
            wrong = f"its dense reference raises {_err(e)}"
        if wrong is not None:
            out.append(Failure("compose", rec.cid, wrong))
        if ref is not None and not close(fresh, ref, inputs=args):
            out.append(Failure("compose", rec.cid,
                               f"a fresh build gives {short(fresh)}, but the reference "
                               f"({_ref_name(rec.step[2])}) gives {short(ref)}"))
    return out


def tree_shape(x):
    """Containers (type, keys) with the leaves' shapes: what JAX's pytree conventions fix."""
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, tuple(tree_shape(i) for i in x))
    if isinstance(x, dict):
        return ("dict", tuple((k, tree_shape(x[k])) for k in sorted(x, key=repr)))
    return tuple(np.shape(x))


def expected_shape(step, args):
    """The result structure JAX's conventions give a derivative call (None: not checked):
    grad mirrors the differentiated arguments (a tuple of them for a tuple argnums)."""
    if step[0] != "call":
        return None
    t = step[2]
    while t[0] == "jit" and t[1][0] != "fn":
        t = t[1]
    if t[0] not in ("grad", "value_and_grad", "hvp", "grad_and_hvp"):
        return None
    am = t[2]
    fargs = args[:-1] if t[0] in ("hvp", "grad_and_hvp") else args
    g = (tuple(tree_shape(fargs[i]) for i in am) if isinstance(am, tuple)
         else tree_shape(fargs[am]))
    g = ("tuple", g) if isinstance(am, tuple) else g
    if t[0] == "grad":
        return None if t[3] else g  # has_aux: (grad, aux), aux unchecked
    if t[0] == "value_and_grad":
        return None if t[3] else ("tuple", ((), g))
    if t[0] == "hvp":
        return g
    return ("tuple", (g, g))


def _ref_name(t) -> str:
    s = strip_jit(t)
    return t_text(s) if s != t else "hvp(f)(x, w)"


def _struct_text(x) -> str:
    def walk(x):
        if isinstance(x, (tuple, list)):
            inner = ", ".join(walk(i) for i in x)
            return f"({inner},)" if isinstance(x, tuple) else f"[{inner}]"
        if isinstance(x, dict):
            return "{" + ", ".join(f"{k!r}: {walk(v)}" for k, v in x.items()) + "}"
        if isinstance(x, np.ndarray):
            return f"{x.dtype}{list(x.shape)}"
        return type(x).__name__
    return walk(x)[:200]


# =========================================================================== generating
FAMILIES = ("arrays", "static", "closures", "containers", "compose", "mixed", "captured",
            "sparse")


class Gen:
    """Builds one random sequence of a family from a seed."""

    def __init__(self, seed: int, family: str, n_programs: int = 40, alias: bool = True):
        self.alias = alias  # False: never the same array object in two positions
        self.force_new = False  # True: every array of the call is a new one
        self.rnd = random.Random(seed * 7919 + FAMILIES.index(family))
        # static values that compare (or hash) equal but are not the same: mostly these
        self.static_group = self.rnd.choice(STATIC_GROUPS)
        self.seed = seed
        self.family = family
        self.steps: list = []
        self.arrays: dict = {}   # name -> (shape, dtype, base)
        self.n_arr = 0
        self.n_call = 0
        self.n_obj = 0
        self.n_pid = 0
        self.objs: list = []     # (obj id, tspec, variant)
        # (pid, "vjp" | "lin", primals, dtype): pullbacks and f_jvps to call later
        self.pending: list = []
        self.programs: dict = {}
        self.n_programs = n_programs
        self.cfgs: list = []     # names of the dict arguments of the sparse family

    # ---------------------------------------------------------------- arrays
    def new_array(self, shape, dtype="float64", base=None) -> str:
        name = f"a{self.n_arr}"
        self.n_arr += 1
        self.steps.append(("new", name, tuple(shape), dtype, self.rnd.randrange(10 ** 6),
                           base))
        self.arrays[name] = (tuple(shape), dtype, base)
        return name

    def pick_array(self, shape, dtype, base, taken) -> str:
        """An array for one position: often one already passed (same object), sometimes
        one passed in another position of this call (aliasing), sometimes new."""
        if self.force_new:
            return self.new_array(shape, dtype, base)
        same = [n for n, (s, d, b) in self.arrays.items() if s == shape and d == dtype
                and (base is None or b == base)]
        r = self.rnd.random()
        in_call = [n for n in taken if n in same]
        if not self.alias:
            same = [n for n in same if n not in taken]
        if in_call and r < 0.45 and self.alias:
            return self.rnd.choice(in_call)
        if same and r < 0.7:
            return self.rnd.choice(same)
        return self.new_array(shape, dtype, base)

    def arg_expr(self, kind, dtype, base, taken):
        k = kind[0]
        if k == A:
            name = self.pick_array(kind[1], dtype, base, taken)
            taken.append(name)
            return ("arr", name)
        if k == "f":
            return ("val", self.rnd.choice(FLOAT_VALUES))
        if k == "s":
            if self.rnd.random() < 0.85:
                return ("val", self.rnd.choice(self.static_group))
            return ("val", self.rnd.choice(STATIC_VALUES))
        if k in ("list", "tuple"):
            return (k, [self.arg_expr((A, s), dtype, None, taken) for s in kind[1]])
        if k == "dict":
            return ("dict", [(key, self.arg_expr((A, s), dtype, None, taken))
                             for key, s in kind[1].items()])
        if k == "nest":
            return ("dict", [(key, self.arg_expr(v, dtype, None, taken))
                             for key, v in NESTED_SHAPES.items()])
        if k == "cfg":   # one dict object, passed again after items changed in place
            if self.cfgs and self.rnd.random() < 0.75:
                return ("arr", self.rnd.choice(self.cfgs))
            return ("arr", self.new_cfg())
        raise ValueError(k)

    def new_cfg(self) -> str:
        name = f"cfg{len(self.cfgs)}"
        self.cfgs.append(name)
        self.steps.append(("cfg", name, self.rnd.random() < 0.5, self.rnd.choice([1.0, 0.5]),
                           self.rnd.choice([1, 2, -1])))
        return name

    def like_expr(self, e, dtype):
        """A direction with the structure of argument ``e`` (new arrays)."""
        k = e[0]
        if k == "arr":
            shape = self.arrays[e[1]][0]
            if self.alias and not self.force_new and self.rnd.random() < 0.4:  # aliasing
                return e
            return ("arr", self.new_array(shape, dtype))
        if k in ("list", "tuple"):
            return (k, [self.like_expr(i, dtype) for i in e[1]])
        if k == "dict":
            return ("dict", [(key, self.like_expr(v, dtype)) for key, v in e[1]])
        raise ValueError(k)

    # ---------------------------------------------------------------- functions
    def fn_choices(self):
        fam = self.family
        arrays_only = ["h_sin", "h_two", "h_vec"]
        if fam == "arrays":
            return arrays_only * 2 + ["prog"] * 3
        if fam == "static":
            return ["h_static", "h_static2", "h_scalar", "h_sin"]
        if fam == "closures":
            return ["closure"] * 4 + ["h_sin"]
        if fam == "containers":
            return ["h_list", "h_dict", "h_nested", "h_kw", "h_aux"]
        if fam == "compose":
            return ["h_sin", "h_two", "h_vec", "prog", "h_list", "h_dict", "closure"]
        if fam == "captured":
            return CAPTURED_FNS * 2 + ["h_sin", "prog"]
        return list(HAND) + ["prog"] * 3 + ["closure"] * 2

    def draw_fn(self):
        """(FnSpec, variants, kwargs choices, output kind, dtype, base program)"""
        name = self.rnd.choice(self.fn_choices())
        if name == "prog":
            i = self.rnd.randrange(self.n_programs)
            prog = pool(self.n_programs)[i % len(pool(self.n_programs))]
            i = pool(self.n_programs).index(prog)
            self.programs[i] = prog
            out = self.rnd.choice(["loss", "loss", "f"])
            variants = [[(A, tuple(s)) for s in prog.inputs]]
            return ("prog", i, out), variants, {}, "scalar" if out == "loss" else "any"
        if name == "closure":
            rec = self.rnd.choice(sorted(set(CLOSURES) - {"view"}))
            _, variants, out = CLOSURES[rec]
            return ("closure", rec, self.rnd.choice(CLOSURE_CONSTS)), variants, {}, out
        fn, variants, kw, out = HAND[name]
        return ("hand", name), variants, kw, out

    def diff_positions(self, variant):
        return [i for i, k in enumerate(variant) if k[0] not in ("s", "f")]

    def draw_argnums(self, variant):
        pos = self.diff_positions(variant)
        r = self.rnd.random()
        if r < 0.5 or len(pos) == 1:
            return pos[0] if self.rnd.random() < 0.7 else self.rnd.choice(pos)
        if r < 0.75:
            return self.rnd.choice(pos)
        k = self.rnd.randint(1, len(pos))
        nums = self.rnd.sample(pos, k)
        return tuple(nums)

    def draw_transform(self, fnspec, out, variant):
        """A transform spec valid for the function's output kind."""
        base = ("fn", fnspec)
        am = self.draw_argnums(variant)
        compose = self.family in ("compose", "mixed") and self.rnd.random() < (
            0.8 if self.family == "compose" else 0.25)
        if out == "aux":
            kind = self.rnd.choice(["grad", "value_and_grad"])
            t = (kind, base, am, True)
            if compose and self.rnd.random() < 0.5:
                t = ("jit", t)
            return t, "call"
        if out == "any":
            choice = self.rnd.choice(["jit", "jvp", "vjp", "lin", "sumw-grad", "sumw-hvp"])
            if choice == "jit":
                return ("jit", base), "call"
            if choice in ("jvp", "vjp", "lin"):
                inner = ("jit", base) if compose and self.rnd.random() < 0.5 else base
                return inner, choice
            red = ("sumw", base, self.rnd.randrange(5))
            if choice == "sumw-grad":
                return ("grad", red, am, False), "call"
            return ("hvp", red, am if isinstance(am, int) else am[:1]), "call"
        kinds = ["jit", "grad", "value_and_grad", "hvp", "grad_and_hvp", "jvp", "vjp", "lin"]
        kind = self.rnd.choice(kinds)
        single = am if isinstance(am, int) else am[0]
        if self.family == "captured" and self.rnd.random() < 0.4:
            # the dense derivatives that multiply a captured matrix by their basis
            return (self.rnd.choice(["hessian", "jacfwd", "jacrev"]), base, single), "call"
        if not compose:
            if kind == "jit":
                return ("jit", base), "call"
            if kind in ("jvp", "vjp", "lin"):
                return base, kind
            if kind in ("hvp", "grad_and_hvp"):
                if isinstance(am, tuple):
                    am = tuple(dict.fromkeys(am))
                if kind == "hvp" and isinstance(am, int) and self.rnd.random() < 0.35:
                    return self.vmapped_hvp(base, am, variant), "call"
                return (kind, base, am), "call"
            return (kind, base, am, False), "call"
        # composed transforms
        pattern = self.rnd.choice(["jit-outer", "jit-inner", "grad-grad", "jvp-grad",
                                   "vjp-grad", "hvp-grad", "jit-hvp-jit", "jit-jit",
                                   "vmap-hvp", "jit-vmap-hvp", "lin-grad"])
        uniq = am if isinstance(am, int) else tuple(dict.fromkeys(am))
        if pattern == "jit-outer":
            inner = self.rnd.choice([("grad", base, am, False),
                                     ("value_and_grad", base, am, False),
                                     ("hvp", base, uniq), ("grad_and_hvp", base, uniq)])
            return ("jit", inner), "call"
        if pattern == "jit-inner":
            k2 = self.rnd.choice(["grad", "value_and_grad", "hvp", "grad_and_hvp"])
            if k2 in ("hvp", "grad_and_hvp"):
                return (k2, ("jit", base), uniq), "call"
            return (k2, ("jit", base), am, False), "call"
        if pattern == "grad-grad":
            red = ("sumw", ("grad", base, single, False), self.rnd.randrange(5))
            outer = self.rnd.choice(["grad", "value_and_grad"])
            return (outer, red, single, False), "call"
        if pattern == "hvp-grad":
            red = ("sumw", ("grad", base, single, False), self.rnd.randrange(5))
            return ("hvp", red, single), "call"
        if pattern in ("jvp-grad", "vjp-grad", "lin-grad"):
            return ("grad", base, single, False), pattern[:3]
        if pattern == "jit-hvp-jit":
            return ("jit", ("hvp", ("jit", base), single)), "call"
        if pattern == "vmap-hvp":   # over the HVP of a jitted function
            return self.vmapped_hvp(("jit", base), single, variant), "call"
        if pattern == "jit-vmap-hvp":
            return ("jit", self.vmapped_hvp(base, single, variant)), "call"
        return ("jit", ("jit", base)), "call"

    def vmapped_hvp(self, base, am: int, variant):
        """``vmap(hvp(f, argnums=am), in_axes=(None, ..., None, 0))``: the direction is a
        stack of directions (drawn by :meth:`call`); a plain HVP when the argument is not
        an array."""
        if variant[am][0] != A:
            return ("hvp", base, am)
        return ("vmap", ("hvp", base, am), (None,) * len(variant) + (0,))

    # ---------------------------------------------------------------- calls
    def call(self, tspec, how, variant, kwchoices, obj, dtype, base_prog):
        cid = self.n_call
        self.n_call += 1
        taken: list = []
        bases = [None] * len(variant)
        if base_prog is not None:
            bases = [(base_prog, j) for j in range(len(variant))]
        args = [self.arg_expr(k, dtype, b, taken) for k, b in zip(variant, bases)]
        if how == "call":
            am = _argnums_of(tspec)
            if tspec_outer(tspec) == "vmap":   # k directions shaped like the argument
                k = self.rnd.randint(1, 4)
                shape = self.arrays[args[am][1]][0]
                args.append(("arr", self.new_array((k,) + shape, dtype)))
                kwchoices = {}  # vmap maps keyword arguments along axis 0
            elif tspec_outer(tspec) in ("hvp", "grad_and_hvp"):
                if isinstance(am, int):
                    v = self.like_expr(args[am], dtype)
                else:
                    v = ("tuple", [self.like_expr(args[i], dtype) for i in am])
                args.append(v)
            kwargs = []
            for key, values in sorted(kwchoices.items()):
                if self.rnd.random() < 0.7:
                    kwargs.append((key, self.rnd.choice(values)))
            self.steps.append(("call", cid, tspec, obj, args, kwargs))
        elif how == "jvp":
            tangents = [self.like_expr(a, dtype) for a in args]
            self.steps.append(("jvp", cid, tspec, obj, args, tangents))
        else:   # vjp or linearize: what it returns is called later (or at once)
            pid = self.n_pid
            self.n_pid += 1
            self.steps.append((how, cid, tspec, obj, args, pid))
            self.pending.append((pid, how, args, dtype, tspec))
            if self.rnd.random() < 0.5:
                self.pull(len(self.pending) - 1)

    def pull(self, k: int, keep: bool = False):
        """Calls pending pullback or ``f_jvp`` ``k`` (kept pending with ``keep``: called
        again later)."""
        pid, how, args, dtype, _ = self.pending[k] if keep else self.pending.pop(k)
        cid = self.n_call
        self.n_call += 1
        jit = ("jit",) if self.rnd.random() < 0.25 else ()
        if how == "vjp":
            self.steps.append(("pull", cid, pid, self.rnd.randrange(7)) + jit)
        else:   # new tangents, or the arrays of the point themselves (aliasing)
            self.steps.append(("fjvp", cid, pid, [self.like_expr(a, dtype) for a in args])
                              + jit)

    def set_target(self) -> str:
        """The captured place a ``set`` step changes: often one that the function of a
        pending pullback or ``f_jvp`` reads (they must keep the values of their call)."""
        read = sorted({target for entry in self.pending for t in _fn_specs(entry[4])
                       if t[1][0] == "hand" for target in READS.get(t[1][1], ())})
        if read and self.rnd.random() < 0.6:
            return self.rnd.choice(read)
        return self.rnd.choice(sorted(CAPTURED))

    def mutation(self):
        """A ``mutate`` step: often of an array a pending pullback or ``f_jvp`` holds (its
        point: they must keep the values of their call)."""
        held = sorted({n for entry in self.pending for e in entry[2] for n in _names(e)})
        names = held if held and self.rnd.random() < 0.5 else sorted(self.arrays)
        if names:
            self.steps.append(("mutate", self.rnd.choice(names), self.rnd.randrange(10 ** 6)))

    def generate_sparse(self, n_steps) -> Seq:
        """The sparse family: one or two sparse transforms called between changes of what
        their pattern depends on (dict items in place, globals, captured arrays in place),
        of the arguments' values and shapes, and of the cache."""
        rnd = self.rnd
        entries = []
        for _ in range(rnd.randint(1, 2)):
            name = rnd.choice(sorted(SPARSE_FNS))
            _, variants, kw, out = SPARSE_FNS[name]
            kind = rnd.choice(SPARSE_KINDS[out])
            tspec = (kind, ("fn", ("sparse", name)), 0)
            if kind == "sparse_jacobian":
                tspec += (rnd.choice(["fwd", "rev", "auto"]),)
            entries.append((tspec, variants, kw))
        for _ in range(n_steps):
            r = rnd.random()
            if r < 0.2:
                target = rnd.choice(sorted(SPARSE_CAPTURED))
                self.steps.append(("set", target,
                                   rnd.randrange(len(SPARSE_CAPTURED[target][0]))))
            elif r < 0.3 and self.cfgs:
                key = rnd.choice(["couple", "couple", "shift", "scale"])
                value = {"couple": rnd.random() < 0.5, "shift": rnd.choice([1, 2, -1]),
                         "scale": rnd.choice([1.0, 0.5, 2.0])}[key]
                self.steps.append(("cfgset", rnd.choice(self.cfgs), key, value))
            elif r < 0.34:
                self.steps.append(("clear",))
            elif r < 0.37:
                self.steps.append(("cache_size", rnd.choice([1, 2])))
            elif r < 0.43 and self.arrays:
                self.steps.append(("mutate", rnd.choice(sorted(self.arrays)),
                                   rnd.randrange(10 ** 6)))
            else:
                tspec, variants, kw = rnd.choice(entries)
                obj = None if rnd.random() < 0.3 else self._obj_for(tspec)
                dtype = "float32" if rnd.random() < 0.15 else "float64"
                self.call(tspec, "call", rnd.choice(variants), kw, obj, dtype, None)
        return Seq(self.seed, self.family, self.steps, {})

    def generate(self, n_steps) -> Seq:
        if self.family == "sparse":
            return self.generate_sparse(n_steps)
        rnd = self.rnd
        entries = []
        for _ in range(rnd.randint(1, 3)):
            fnspec, variants, kw, out = self.draw_fn()
            variant = rnd.choice(variants)
            tspec, how = self.draw_transform(fnspec, out, variant)
            if how in ("jvp", "vjp", "lin") and any(k[0] in ("s", "f") for k in variant):
                continue  # jvp/vjp differentiate every argument: arrays only
            entries.append((fnspec, variants, variant, kw, tspec, how))
        if not entries:
            entries.append((("hand", "h_sin"), HAND["h_sin"][1], [(A, (3,))], {},
                            ("grad", ("fn", ("hand", "h_sin")), 0, False), "call"))
        p_set = {"captured": 0.3, "mixed": 0.06}.get(self.family, 0.0)
        for _ in range(n_steps):
            if p_set and rnd.random() < p_set:
                target = self.set_target()
                first = 1 if CAPTURED[target][0][0] is None else 0
                self.steps.append(("set", target,
                                   rnd.randrange(first, len(CAPTURED[target][0]))))
                continue
            r = rnd.random()
            if r < 0.06:
                self.steps.append(("clear",))
                continue
            if r < 0.09:
                self.steps.append(("cache_size", rnd.choice([1, 2, 3])))
                continue
            if r < 0.17:
                self.mutation()
                continue
            if r < 0.24 and self.pending:
                self.pull(rnd.randrange(len(self.pending)), keep=rnd.random() < 0.3)
                continue
            fnspec, variants, variant, kw, tspec, how = rnd.choice(entries)
            if fnspec[0] != "prog" and rnd.random() < 0.25:
                variant = rnd.choice(variants)  # interleave shapes
                if how == "call" and _argnums_bad(tspec, variant):
                    variant = variants[0]
            if fnspec[0] == "closure" and rnd.random() < 0.5:
                # a fresh closure with another constant: the same recipe, a new object
                fnspec = ("closure", fnspec[1], rnd.choice(CLOSURE_CONSTS))
                tspec = _replace_fn(tspec, fnspec)
                obj = None
            else:
                obj = None if rnd.random() < 0.3 else self._obj_for(tspec)
            dtype = "float32" if rnd.random() < 0.12 else "float64"
            base_prog = fnspec[1] if fnspec[0] == "prog" else None
            self.call(tspec, how, variant, kw, obj, dtype, base_prog)
            if obj is not None and rnd.random() < 0.3:
                # the same call again at once, every array new (same shapes): a cache that
                # matched arguments by identity, or kept the first call's values, shows here
                self.force_new = True
                self.call(tspec, how, variant, kw, obj, dtype, base_prog)
                self.force_new = False
        while self.pending:
            self.pull(0)
        return Seq(self.seed, self.family, self.steps, dict(self.programs))

    def _obj_for(self, tspec):
        for oid, t in self.objs:  # by repr: -0.0 == 0.0, but they are other closures
            if repr(t) == repr(tspec) and self.rnd.random() < 0.8:
                return oid
        oid = self.n_obj
        self.n_obj += 1
        self.objs.append((oid, tspec))
        return oid


def _names(e):
    if e[0] == "arr":
        return [e[1]]
    if e[0] in ("list", "tuple"):
        return [n for i in e[1] for n in _names(i)]
    if e[0] == "dict":
        return [n for _, v in e[1] for n in _names(v)]
    return []


def tspec_outer(t):
    return t[0] if t[0] != "jit" else tspec_outer(t[1]) if t[1][0] != "fn" else "jit"


def _argnums_of(t):
    if t[0] in ("jit", "vmap"):
        return _argnums_of(t[1])
    if t[0] in ("grad", "value_and_grad", "hvp", "grad_and_hvp"):
        return t[2]
    return None


def _argnums_bad(t, variant):
    am = _argnums_of(t)
    nums = [] if am is None else [am] if isinstance(am, int) else list(am)
    return any(i >= len(variant) or variant[i][0] in ("s", "f") for i in nums)


def _replace_fn(t, fnspec):
    if t[0] == "fn":
        return ("fn", fnspec)
    return (t[0], _replace_fn(t[1], fnspec)) + tuple(t[2:])


def generate(seed: int, family: str = "mixed", n_steps: int | None = None,
             n_programs: int = 40, alias: bool = True) -> Seq:
    rnd = random.Random(seed)
    n = n_steps if n_steps is not None else rnd.randint(4, 12)
    return Gen(seed, family, n_programs, alias).generate(n)


# =========================================================================== shrinking


def _still_fails(seq: Seq, kinds: set, checks) -> bool:
    try:
        fails = check(seq, checks)
    except Invalid:
        return False
    return any(f.kind in kinds for f in fails)


def shrink(seq: Seq, failures: list[Failure], checks, max_runs: int = 60) -> Seq:
    """Deterministic delta-debug: drop steps (chunks, then single steps) while a failure
    of the same kind remains."""
    kinds = {failures[0].kind}
    steps = list(seq.steps)
    runs = 0
    chunk = max(1, len(steps) // 2)
    while chunk >= 1 and runs < max_runs:
        i = len(steps) - chunk
        progressed = False
        while i >= 0 and runs < max_runs:
            cand = steps[:i] + steps[i + chunk:]
            runs += 1
            if cand and _still_fails(Seq(seq.seed, seq.family, cand, seq.programs), kinds,
                                     checks):
                steps = cand
                progressed = True
            i -= chunk
        if not progressed:
            chunk //= 2
    used = {p for s in steps if s[0] in CALLS for p in _progs_in(s[2])}
    used |= {s[5][0] for s in steps if s[0] == "new" and s[5] is not None}
    return Seq(seq.seed, seq.family, steps, {i: p for i, p in seq.programs.items() if i in used})


def _progs_in(t):
    if t[0] == "fn":
        return [t[1][1]] if t[1][0] == "prog" else []
    return _progs_in(t[1])


def failure_key(seq: Seq, failure: Failure) -> tuple:
    """Groups failures of a campaign into likely-distinct bugs: the class, the call's kind
    and transform chain (``jit/grad/fn``), the error's type and message head."""
    step = next((s for s in seq.steps if s[0] in CALLS + LATER
                 and s[1] == failure.cid), None)
    chain = ""
    if step is not None and step[0] not in LATER:
        t, parts = step[2], []
        while t[0] != "fn":
            parts.append(t[0])
            t = t[1]
        chain = step[0] + ":" + "/".join(parts + [t[1][0]])
    elif step is not None:
        chain = step[0]
    detail = failure.message.split(" (at ")[0][:70] if failure.kind == "error" else ""
    return (failure.kind, chain, detail)


def report(seq: Seq, failures: list[Failure], shrunk: Seq | None = None,
           shrunk_failures: list[Failure] | None = None) -> str:
    """A short readable report: the failure lines and the (shrunk) sequence, with the
    failing calls marked."""
    show, fails = (shrunk, shrunk_failures) if shrunk is not None else (seq, failures)
    marks: dict = {}
    for f in fails:
        marks.setdefault(f.cid, f"FAIL [{f.kind}]")
    head = [f"{len(failures)} failure(s) in sequence seed={seq.seed} family={seq.family!r}"
            f" ({len(seq.steps)} steps" + (f", shrunk to {len(shrunk.steps)}" if shrunk
                                            is not None else "") + ")"]
    head += ["  " + f.line() for f in fails[:6]]
    return "\n".join(head) + "\n" + show.text(marks)


HELPERS_TEXT = ("# helpers (tests/helpers/fuzz_calls.py): h_* functions (HAND); rand(shape, seed) "
                "uniform(-1.2, 1.2); near(x, seed) = x + 0.03 N(0,1); sumw(f, salt)(*a) = "
                "sum_leaves <f(*a), weights(shape, salt)>; ct_like(out, salt) = weights like out")
