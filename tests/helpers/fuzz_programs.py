"""Random programs over the registry, as data, and their derivative checks.

A :class:`Program` is a list of input shapes, a seed for the input values and a list of nodes
``(op, operands, params)``. Node ``k`` of a program with ``n`` inputs has index ``n + k``;
operands index earlier inputs or nodes. ``program.source()`` is plain NumPy code that can be
pasted into a regression test (``tests/api/test_regressions.py``)::

    def f(x0, x1):
        v2 = np.sin(x0)
        v3 = v2 + x1
        return v3

    def loss(x0, x1):
        return np.sum(f(x0, x1) * np.cos(np.arange(6.0).reshape((2, 3)) * 0.71 + 0.3))

The generator (:func:`programs`, a hypothesis strategy) evaluates every node on the concrete
inputs while it builds the program, so it only applies an op where its inputs are inside its
domain, away from kinks (abs, max, where, ...) and with moderate magnitudes; when a value is
outside an op's domain it wraps the operand (``log(x*x+0.5)``, ``arcsin(0.9*tanh(x))``...).

:func:`check_program` runs jit, jvp, vjp, grad, hvp and grad_and_hvp on a program and
compares them with NumPy and central finite differences in float64. A mismatch against one
finite-difference step is confirmed with several steps before it counts as a failure, so
that rounding noise is not reported as a bug.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse
import scipy.special as special  # noqa: F401  (used by generated sources)
from hypothesis import strategies as st

import dualgpu as dg

# --------------------------------------------------------------------------- programs


@dataclass(frozen=True)
class Program:
    """A random program: inputs, node list and the seed of the input values."""

    inputs: tuple
    nodes: tuple
    seed: int = 0

    # node = (op, operands, params-as-sorted-tuple); params are re-made into a dict
    def outputs(self) -> list:
        """Indices of the values ``f`` returns: every node that no later node uses."""
        n = len(self.inputs)
        used = {i for _, operands, _ in self.nodes for i in operands}
        outs = [n + k for k in range(len(self.nodes)) if n + k not in used]
        return outs or [n + len(self.nodes) - 1]

    def source(self) -> str:
        n = len(self.inputs)
        names = [f"x{i}" for i in range(n)]
        args = ", ".join(names)
        lines = [f"def f({args}):"]
        for k, (op, operands, params) in enumerate(self.nodes):
            expr = OPS[op].emit([names[i] for i in operands], dict(params))
            names.append(f"v{n + k}")
            lines.append(f"    {names[-1]} = {expr}")
        outs = self.outputs()
        values = self.values()
        lines.append(f"    return {', '.join(names[i] for i in outs)}")
        lines += ["", "", f"def loss({args}):"]
        if len(outs) == 1:
            lines.append(f"    {names[outs[0]]} = f({args})")
        else:
            lines.append(f"    {', '.join(names[i] for i in outs)} = f({args})")
        terms = [f"np.sum({names[i]} * {weight_source(np.shape(values[i]), round(0.3 + j, 2))})"
                 for j, i in enumerate(outs)]
        if len(terms) == 1:
            lines.append(f"    return {terms[0]}")
        else:
            lines.append("    return (" + "\n            + ".join(terms) + ")")
        return "\n".join(lines) + "\n"

    def args(self) -> tuple:
        rng = np.random.default_rng(self.seed)
        return tuple(rng.uniform(-1.5, 1.5, size=s) if s else np.float64(rng.uniform(-1.5, 1.5))
                     for s in self.inputs)

    def functions(self):
        """``(f, loss)`` compiled from :meth:`source`."""
        ns = namespace()
        exec(compile(self.source(), "<fuzz program>", "exec"), ns)  # test code only
        return ns["f"], ns["loss"]

    def values(self) -> list:
        """The value of every input and node, computed eagerly with NumPy."""
        ns = namespace()
        vals = [np.asarray(a) for a in self.args()]
        names = [f"x{i}" for i in range(len(self.inputs))]
        for i, v in enumerate(vals):
            ns[names[i]] = v
        for k, (op, operands, params) in enumerate(self.nodes):
            expr = OPS[op].emit([names[i] for i in operands], dict(params))
            name = f"v{len(self.inputs) + k}"
            ns[name] = np.asarray(eval(expr, ns))  # test code only
            names.append(name)
            vals.append(ns[name])
        return vals

    def __str__(self) -> str:
        return (f"Program(inputs={self.inputs!r}, seed={self.seed}, nodes={self.nodes!r})\n"
                + self.source())


def namespace() -> dict:
    return {"np": np, "special": special, "dg": dg, "scipy": scipy}


def weight_source(shape: tuple, salt: float) -> str:
    """Source of a deterministic constant array of ``shape`` (no random state to paste)."""
    n = int(np.prod(shape, dtype=np.int64))
    base = f"np.arange({n}.0)"
    if shape != (n,):
        base += f".reshape({tuple(shape)!r})"
    return f"np.cos({base} * 0.71 + {salt!r})"


def sparse_source(m: int, n: int, seed: int, fmt: str = "csr") -> str:
    return (f"scipy.sparse.random({m}, {n}, density=0.5, format={fmt!r}, "
            f"random_state={seed})")


# --------------------------------------------------------------------------- op table


@dataclass
class Op:
    """How to generate and print one kind of node.

    ``make(draw, ctx, a)`` returns ``(operands, params)`` for a node whose first operand is
    node ``a``, or None when the op does not fit there; ``emit(names, params)`` prints it.
    """

    name: str
    make: object
    emit: object
    group: str = "elementwise"


OPS: dict[str, Op] = {}


def _op(name, group="elementwise"):
    def deco(factory):
        make, emit = factory()
        OPS[name] = Op(name, make, emit, group)
        return factory

    return deco


@dataclass
class Context:
    values: list
    sparse_ok: bool = False
    notes: list = field(default_factory=list)


def _finite(v) -> bool:
    return bool(np.all(np.isfinite(v)))


def _absmax(v) -> float:
    return float(np.max(np.abs(v))) if np.size(v) else 0.0


def _absmin(v) -> float:
    return float(np.min(np.abs(v))) if np.size(v) else 1.0


# unary elementwise ops: name -> (template, domain predicate, fallback template)
# the fallback keeps the operand inside the domain whatever its value
UNARY = {
    "sin": ("np.sin({0})", None, None),
    "cos": ("np.cos({0})", None, None),
    "tanh": ("np.tanh({0})", None, None),
    "arctan": ("np.arctan({0})", None, None),
    "arcsinh": ("np.arcsinh({0})", None, None),
    "negative": ("-{0}", None, None),
    "square": ("np.square({0})", lambda v: _absmax(v) < 30, "np.square(np.tanh({0}))"),
    "pow2": ("{0} ** 2", lambda v: _absmax(v) < 30, "np.tanh({0}) ** 2"),
    "pow3": ("{0} ** 3", lambda v: _absmax(v) < 8, "np.sin({0}) ** 3"),
    "pow_half": ("{0} ** 0.5", lambda v: v.min() > 0.1, "({0} * {0} + 1.0) ** 1.5"),
    "pow_neg": ("np.power({0}, -1.5)", lambda v: v.min() > 0.2,
                "np.power({0} * {0} + 0.5, -0.5)"),
    "rpow": ("2.0 ** {0}", lambda v: v.max() < 6, "2.0 ** np.tanh({0})"),
    "exp": ("np.exp({0})", lambda v: v.max() < 4, "np.exp(np.tanh({0}))"),
    "exp2": ("np.exp2({0})", lambda v: v.max() < 5, "np.exp2(np.cos({0}))"),
    "expm1": ("np.expm1({0})", lambda v: v.max() < 4, "np.expm1(np.sin({0}))"),
    "sinh": ("np.sinh({0})", lambda v: _absmax(v) < 4, "np.sinh(np.tanh({0}))"),
    "cosh": ("np.cosh({0})", lambda v: _absmax(v) < 4, "np.cosh(np.sin({0}))"),
    "log": ("np.log({0})", lambda v: v.min() > 0.1, "np.log({0} * {0} + 0.5)"),
    "log2": ("np.log2({0})", lambda v: v.min() > 0.1, "np.log2({0} * {0} + 1.0)"),
    "log10": ("np.log10({0})", lambda v: v.min() > 0.1, "np.log10(np.exp(np.tanh({0})))"),
    "log1p": ("np.log1p({0})", lambda v: v.min() > -0.8, "np.log1p({0} * {0})"),
    "sqrt": ("np.sqrt({0})", lambda v: v.min() > 0.1, "np.sqrt({0} * {0} + 0.25)"),
    "cbrt": ("np.cbrt({0})", lambda v: _absmin(v) > 0.1, "np.cbrt({0} * {0} + 1.0)"),
    "reciprocal": ("np.reciprocal({0})", lambda v: _absmin(v) > 0.2,
                   "np.reciprocal({0} * {0} + 1.0)"),
    "rdiv": ("2.0 / {0}", lambda v: _absmin(v) > 0.2, "2.0 / (1.5 + np.sin({0}))"),
    "abs": ("np.abs({0})", lambda v: _absmin(v) > 0.02, None),
    "fabs": ("np.fabs({0})", lambda v: _absmin(v) > 0.02, None),
    "arcsin": ("np.arcsin({0})", lambda v: _absmax(v) < 0.9, "np.arcsin(0.9 * np.tanh({0}))"),
    "arccos": ("np.arccos({0})", lambda v: _absmax(v) < 0.9, "np.arccos(0.9 * np.tanh({0}))"),
    "arctanh": ("np.arctanh({0})", lambda v: _absmax(v) < 0.9,
                "np.arctanh(0.9 * np.tanh({0}))"),
    "arccosh": ("np.arccosh({0})", lambda v: v.min() > 1.1, "np.arccosh({0} * {0} + 1.5)"),
    "tan": ("np.tan({0})", lambda v: _absmax(v) < 1.2, "np.tan(0.5 * np.tanh({0}))"),
    "erf": ("special.erf({0})", None, None),
    "erfc": ("special.erfc({0})", None, None),
    "expit": ("special.expit({0})", None, None),
    "gammaln": ("special.gammaln({0})", lambda v: v.min() > 0.2,
                "special.gammaln({0} * {0} + 0.5)"),
    "sigmoid": ("dg.nn.sigmoid({0})", None, None),
    "softplus": ("dg.nn.softplus({0})", lambda v: _absmax(v) < 30, None),
    "gelu": ("dg.nn.gelu({0})", None, None),
    "silu": ("dg.nn.silu({0})", None, None),
    "relu": ("dg.nn.relu({0})", lambda v: _absmin(v) > 0.02, None),
    "leaky_relu": ("dg.nn.leaky_relu({0}, 0.1)", lambda v: _absmin(v) > 0.02, None),
    "elu": ("dg.nn.elu({0})", lambda v: _absmin(v) > 0.02 and v.max() < 30, None),
    "selu": ("dg.nn.selu({0})", lambda v: _absmin(v) > 0.02 and v.max() < 30, None),
    "mish": ("dg.nn.mish({0})", lambda v: _absmax(v) < 30, None),
    "logit": ("dg.nn.logit({0})", lambda v: v.min() > 0.05 and v.max() < 0.95,
              "dg.nn.logit(0.05 + 0.9 * dg.nn.sigmoid({0}))"),
    "xlogy_self": ("dg.nn.xlogy({0}, {0})", lambda v: v.min() > 0.1,
                   "dg.nn.xlogy({0}, {0} * {0} + 1.0)"),
    "hard_tanh": ("dg.nn.hard_tanh({0})",
                  lambda v: np.min(np.abs(np.abs(v) - 1.0)) > 0.02, None),
    "mod_scalar": ("{0} % 0.7",
                   lambda v: np.min(np.abs(v / 0.7 - np.round(v / 0.7))) > 0.03, None),
    "acos_alias": ("np.acos({0})", lambda v: _absmax(v) < 0.9, "np.acos(0.9 * np.tanh({0}))"),
    "mul_scalar": ("{0} * 1.7", None, None),
    "rmul_scalar": ("-0.6 * {0}", None, None),
    "add_scalar": ("{0} + 0.3", None, None),
    "rsub_scalar": ("0.5 - {0}", None, None),
    "div_scalar": ("{0} / 3.0", None, None),
    "clip": ("np.clip({0}, -0.5, 0.7)",
             lambda v: np.min(np.minimum(np.abs(v + 0.5), np.abs(v - 0.7))) > 0.02, None),
    "where_pos": ("np.where({0} > 0.1, {0} * {0}, np.sin({0}))",
                  lambda v: np.min(np.abs(v - 0.1)) > 0.02, None),
    "method_clip": ("{0}.clip(-1.0, 1.0)",
                    lambda v: np.min(np.minimum(np.abs(v + 1), np.abs(v - 1))) > 0.02, None),
}


def _unary_op(name, template, ok, fallback):
    def make(draw, ctx, a):
        v = ctx.values[a]
        if ok is None or ok(v):
            return (a,), (("wrap", False),)
        if fallback is None:
            return None
        return (a,), (("wrap", True),)

    def emit(names, params, template=template, fallback=fallback):
        return (fallback if params["wrap"] else template).format(names[0])

    OPS[name] = Op(name, make, emit, "unary")


for _n, (_t, _ok, _fb) in UNARY.items():
    _unary_op(_n, _t, _ok, _fb)


def _broadcasts(s1, s2) -> bool:
    try:
        np.broadcast_shapes(s1, s2)
        return True
    except ValueError:
        return False


def _pick_partner(draw, ctx, a, pred=None):
    shape_a = np.shape(ctx.values[a])
    cands = [b for b in range(len(ctx.values))
             if _broadcasts(shape_a, np.shape(ctx.values[b]))
             and (pred is None or pred(ctx.values[a], ctx.values[b]))]
    if not cands:
        return None
    return draw(st.sampled_from(cands))


# binary elementwise: name -> (template, predicate on (a, b) broadcast values)
def _gap(a, b):
    return float(np.min(np.abs(a - b))) if np.size(a - b) else 1.0


BINARY = {
    "add": ("{0} + {1}", None),
    "subtract": ("{0} - {1}", None),
    "multiply": ("{0} * {1}", None),
    "np_add": ("np.add({0}, {1})", None),
    "np_multiply": ("np.multiply({0}, {1})", None),
    "divide": ("{0} / {1}", lambda a, b: _absmin(b) > 0.2),
    "divide_safe": ("{0} / ({1} * {1} + 1.0)", None),
    "np_divide": ("np.divide({0}, {1})", lambda a, b: _absmin(b) > 0.2),
    "maximum": ("np.maximum({0}, {1})", lambda a, b: _gap(a, b) > 0.02),
    "minimum": ("np.minimum({0}, {1})", lambda a, b: _gap(a, b) > 0.02),
    "fmax": ("np.fmax({0}, {1})", lambda a, b: _gap(a, b) > 0.02),
    "fmin": ("np.fmin({0}, {1})", lambda a, b: _gap(a, b) > 0.02),
    "hypot": ("np.hypot({0}, {1})", lambda a, b: float(np.min(a * a + b * b)) > 0.01),
    "arctan2": ("np.arctan2({0}, {1})",
                lambda a, b: float(np.min(a * a + b * b)) > 0.01
                and not np.any((np.abs(a) < 0.05) & (b < 0))),
    "logaddexp": ("np.logaddexp({0}, {1})", None),
    "power": ("np.power({0}, {1})",
              lambda a, b: a.min() > 0.2 and _absmax(b * np.log(a)) < 5),
    "power_op": ("({0} * {0} + 0.5) ** {1}", lambda a, b: _absmax(b) < 3),
    "copysign": ("np.copysign({0}, {1})", lambda a, b: _absmin(a) > 0.02 and _absmin(b) > 0.02),
    "where_gt": ("np.where({0} > {1}, {0}, {1} * 2.0)", lambda a, b: _gap(a, b) > 0.02),
    "where_lt": ("np.where({0} < {1}, np.sin({0}), {1})", lambda a, b: _gap(a, b) > 0.02),
}


def _binary_op(name, template, pred):
    def make(draw, ctx, a):
        def ok(va, vb):
            try:
                va2, vb2 = np.broadcast_arrays(va, vb)
            except ValueError:
                return False
            return pred is None or bool(pred(va2, vb2))

        b = _pick_partner(draw, ctx, a, ok)
        if b is None:
            return None
        if draw(st.booleans()) and ok(ctx.values[b], ctx.values[a]):
            a, b = b, a
        return (a, b), ()

    def emit(names, params, template=template):
        return template.format(*names)

    OPS[name] = Op(name, make, emit, "binary")


for _n, (_t, _p) in BINARY.items():
    _binary_op(_n, _t, _p)


# --------------------------------------------------------------------------- reductions
def _draw_axis(draw, nd, allow_none=True, allow_tuple=True):
    choices = []
    if allow_none:
        choices.append("none")
    if nd >= 1:
        choices.append("int")
    if nd >= 2 and allow_tuple:
        choices.append("tuple")
    if not choices:
        return None, False
    kind = draw(st.sampled_from(choices))
    if kind == "none":
        return None, True
    if kind == "int":
        ax = draw(st.integers(0, nd - 1))
        return (ax - nd if draw(st.booleans()) else ax), True
    axes = draw(st.lists(st.integers(0, nd - 1), min_size=2, max_size=nd, unique=True))
    return tuple(ax - nd if draw(st.booleans()) else ax for ax in axes), True


def _reduced_axes(axis, nd):
    if axis is None:
        return tuple(range(nd))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted(a % nd for a in axes))


REDUCTIONS = {
    "sum": "np.sum({0}{axis}{keepdims})",
    "mean": "np.mean({0}{axis}{keepdims})",
    "max": "np.max({0}{axis}{keepdims})",
    "min": "np.min({0}{axis}{keepdims})",
    "amax": "np.amax({0}{axis}{keepdims})",
    "prod": "np.prod({0}{axis}{keepdims})",
    "method_sum": "{0}.sum({axis_pos}{keepdims})",
    "method_mean": "{0}.mean({axis_pos}{keepdims})",
    "method_max": "{0}.max({axis_pos}{keepdims})",
    "var": "np.var({0}{axis}{keepdims})",
    "std": "np.std({0}{axis}{keepdims})",
    "norm": "np.linalg.norm({0}{axis}{keepdims})",
    "logsumexp": "dg.nn.logsumexp({0}{axis}{keepdims})",
    "add_reduce": "np.add.reduce({0}{axis}{keepdims})",
}


def _reduction_ok(name, v, axes):
    if not axes:
        return name not in ("std", "norm") or _absmin(v) > 0.05
    moved = np.moveaxis(v, axes, tuple(range(-len(axes), 0)))
    flat = moved.reshape(moved.shape[:v.ndim - len(axes)] + (-1,))
    if name in ("max", "min", "amax", "method_max"):
        if flat.shape[-1] < 2:
            return True
        s = np.sort(flat, axis=-1)
        gap = (s[..., -1] - s[..., -2]) if name != "min" else (s[..., 1] - s[..., 0])
        return float(np.min(gap)) > 0.02
    if name == "prod":
        return flat.shape[-1] <= 8 and _absmax(v) < 4
    if name == "std":
        return float(np.min(np.var(flat, axis=-1))) > 0.05
    if name == "norm":
        return float(np.min(np.sum(flat * flat, axis=-1))) > 0.05
    return True


def _reduction_op(name, template):
    def make(draw, ctx, a):
        v = ctx.values[a]
        nd = v.ndim
        axis, ok = _draw_axis(draw, nd, allow_tuple=name not in ("norm",))
        if not ok:
            return None
        if name == "norm" and axis is None and nd > 1:
            return None
        keepdims = draw(st.booleans())
        if not _reduction_ok(name, v, _reduced_axes(axis, nd)):
            return None
        return (a,), (("axis", axis), ("keepdims", keepdims))

    def emit(names, params, template=template):
        axis, keepdims = params["axis"], params["keepdims"]
        return template.format(
            names[0], axis="" if axis is None else f", axis={axis!r}",
            axis_pos="" if axis is None else f"{axis!r}",
            keepdims="" if not keepdims else ", keepdims=True").replace("(, ", "(")

    OPS[name] = Op(name, make, emit, "reduction")


for _n, _t in REDUCTIONS.items():
    _reduction_op(_n, _t)


@_op("cumsum", "reduction")
def _cumsum():
    def make(draw, ctx, a):
        v = ctx.values[a]
        if v.ndim == 0:
            return None
        return (a,), (("axis", draw(st.integers(-v.ndim, v.ndim - 1))),)

    return make, lambda names, p: f"np.cumsum({names[0]}, axis={p['axis']})"


@_op("cumprod", "reduction")
def _cumprod():
    def make(draw, ctx, a):
        v = ctx.values[a]
        if v.ndim == 0 or _absmax(v) > 3:
            return None
        axis = draw(st.integers(-v.ndim, v.ndim - 1))
        if v.shape[axis] > 5:
            return None
        return (a,), (("axis", axis),)

    return make, lambda names, p: f"np.cumprod({names[0]}, axis={p['axis']})"


@_op("softmax", "reduction")
def _softmax():
    def make(draw, ctx, a):
        v = ctx.values[a]
        if v.ndim == 0:
            return None
        return (a,), (("axis", draw(st.integers(-v.ndim, v.ndim - 1))),
                      ("log", draw(st.booleans())))

    def emit(names, p):
        fn = "log_softmax" if p["log"] else "softmax"
        return f"dg.nn.{fn}({names[0]}, axis={p['axis']})"

    return make, emit


# --------------------------------------------------------------------------- shape ops
def _factorizations(n):
    out = [(n,)]
    for d in range(2, n):
        if n % d == 0:
            out.append((d, n // d))
            for e in range(2, n // d):
                if (n // d) % e == 0:
                    out.append((d, e, n // d // e))
    out.append((1, n))
    out.append((n, 1))
    return out


@_op("reshape", "shape")
def _reshape():
    def make(draw, ctx, a):
        v = ctx.values[a]
        if v.size == 0 or v.size > 64:
            return None
        shape = draw(st.sampled_from(_factorizations(v.size)))
        if len(shape) > 1 and draw(st.booleans()):
            i = draw(st.integers(0, len(shape) - 1))
            shape = shape[:i] + (-1,) + shape[i + 1:]
        return (a,), (("shape", shape), ("method", draw(st.booleans())))

    def emit(names, p):
        if p["method"]:
            return f"{names[0]}.reshape{p['shape']!r}" if len(p["shape"]) > 1 else \
                f"{names[0]}.reshape({p['shape'][0]})"
        return f"np.reshape({names[0]}, {p['shape']!r})"

    return make, emit


@_op("transpose", "shape")
def _transpose():
    def make(draw, ctx, a):
        v = ctx.values[a]
        if v.ndim < 2:
            return None
        kind = draw(st.sampled_from(["T", "perm", "swap", "moveaxis", "method"]))
        perm = tuple(draw(st.permutations(range(v.ndim))))
        return (a,), (("kind", kind), ("perm", perm))

    def emit(names, p):
        x, perm = names[0], p["perm"]
        if p["kind"] == "T":
            return f"{x}.T"
        if p["kind"] == "perm":
            return f"np.transpose({x}, {perm!r})"
        if p["kind"] == "method":
            return f"{x}.transpose{perm!r}" if len(perm) > 1 else f"{x}.transpose()"
        if p["kind"] == "swap":
            return f"np.swapaxes({x}, {perm[0]}, {perm[1] - len(perm)})"
        return f"np.moveaxis({x}, {perm[0]}, {perm[1]})"

    return make, emit


@_op("expand", "shape")
def _expand():
    def make(draw, ctx, a):
        v = ctx.values[a]
        if v.ndim >= 4:
            return None
        kind = draw(st.sampled_from(["expand_dims", "none_index", "squeeze", "ravel",
                                     "broadcast_to", "flip", "tile", "repeat", "pad",
                                     "atleast_2d"]))
        ax = draw(st.integers(-v.ndim - 1, v.ndim)) if v.ndim else 0
        if kind == "squeeze" and 1 not in v.shape:
            return None
        if kind in ("flip", "repeat") and v.ndim == 0:
            return None
        if kind in ("flip", "repeat"):
            ax = draw(st.integers(-v.ndim, v.ndim - 1))
        if v.size > 48 and kind in ("broadcast_to", "tile", "repeat", "pad"):
            return None
        return (a,), (("kind", kind), ("axis", ax), ("n", draw(st.integers(1, 3))))

    def emit(names, p):
        x, kind, ax, n = names[0], p["kind"], p["axis"], p["n"]
        if kind == "expand_dims":
            return f"np.expand_dims({x}, {ax})"
        if kind == "none_index":
            return f"{x}[None]" if ax == 0 else f"{x}[..., None]"
        if kind == "squeeze":
            return f"np.squeeze({x})"
        if kind == "ravel":
            return f"np.ravel({x})" if ax % 2 else f"{x}.ravel()"
        if kind == "broadcast_to":
            return f"np.broadcast_to({x}, ({n},) + {x}.shape)"
        if kind == "flip":
            return f"np.flip({x}, axis={ax})" if n != 3 else f"np.flip({x})"
        if kind == "tile":
            return f"np.tile({x}, {n})"
        if kind == "repeat":
            return f"np.repeat({x}, {n}, axis={ax})"
        if kind == "pad":
            return f"np.pad({x}, {n % 2 + 1})"
        return f"np.atleast_2d({x})"

    return make, emit


@_op("concatenate", "shape")
def _concatenate():
    def make(draw, ctx, a):
        va = ctx.values[a]
        if va.ndim == 0:
            return None
        kind = draw(st.sampled_from(["concatenate", "stack"]))
        if kind == "stack":
            cands = [b for b, vb in enumerate(ctx.values) if vb.shape == va.shape]
            axis = draw(st.integers(-va.ndim - 1, va.ndim))
        else:
            axis = draw(st.integers(-va.ndim, va.ndim - 1))
            cands = [b for b, vb in enumerate(ctx.values) if vb.ndim == va.ndim and all(
                vb.shape[i] == va.shape[i] for i in range(va.ndim) if i != axis % va.ndim)]
        b = draw(st.sampled_from(cands))
        return (a, b), (("kind", kind), ("axis", axis))

    def emit(names, p):
        return f"np.{p['kind']}([{names[0]}, {names[1]}], axis={p['axis']})"

    return make, emit


# --------------------------------------------------------------------------- indexing
def _draw_slice(draw, n):
    step = draw(st.sampled_from([None, 1, 2, -1, -2, 3]))
    start = draw(st.one_of(st.none(), st.integers(-n, n)))
    stop = draw(st.one_of(st.none(), st.integers(-n - 1, n)))
    return slice(start, stop, step)


def _slice_source(s: slice) -> str:
    start = "" if s.start is None else str(s.start)
    stop = "" if s.stop is None else str(s.stop)
    text = f"{start}:{stop}"
    if s.step is not None:
        text += f":{s.step}"
    return text


def _idx_source(idx) -> str:
    return f"np.array({list(map(int, idx))!r})"


@_op("getitem", "indexing")
def _getitem():
    def make(draw, ctx, a):
        v = ctx.values[a]
        if v.ndim == 0:
            return None
        kind = draw(st.sampled_from(["slices", "int", "ellipsis_int", "array", "array_axis1",
                                     "two_arrays", "mask", "take", "array_2d"]))
        if kind == "slices":
            k = draw(st.integers(1, v.ndim))
            key = tuple(_slice_source(_draw_slice(draw, v.shape[i])) for i in range(k))
            text = ", ".join(key)
        elif kind == "int":
            i = draw(st.integers(-v.shape[0], v.shape[0] - 1))
            text = f"{i}"
        elif kind == "ellipsis_int":
            i = draw(st.integers(-v.shape[-1], v.shape[-1] - 1))
            text = f"..., {i}"
        elif kind in ("array", "take", "array_2d"):
            idx = draw(st.lists(st.integers(-v.shape[0], v.shape[0] - 1), min_size=1,
                                max_size=6))
            if kind == "take":
                ax = draw(st.integers(0, v.ndim - 1))
                idx = draw(st.lists(st.integers(0, v.shape[ax] - 1), min_size=1, max_size=5))
                return (a,), (("kind", "take"), ("text", f"{_idx_source(idx)}, axis={ax}"))
            if kind == "array_2d" and len(idx) % 2 == 0:
                text = f"{_idx_source(idx)}.reshape(2, {len(idx) // 2})"
            else:
                text = _idx_source(idx)
        elif kind == "array_axis1":
            if v.ndim < 2:
                return None
            idx = draw(st.lists(st.integers(0, v.shape[1] - 1), min_size=1, max_size=5))
            s = _slice_source(_draw_slice(draw, v.shape[0]))
            text = f"{s}, {_idx_source(idx)}"
        elif kind == "two_arrays":
            if v.ndim < 2:
                return None
            k = draw(st.integers(1, 4))
            i0 = draw(st.lists(st.integers(0, v.shape[0] - 1), min_size=k, max_size=k))
            i1 = draw(st.lists(st.integers(-v.shape[1], v.shape[1] - 1), min_size=k,
                               max_size=k))
            text = f"{_idx_source(i0)}, {_idx_source(i1)}"
        else:  # constant boolean mask
            if v.size > 32:
                return None
            bits = draw(st.lists(st.booleans(), min_size=v.size, max_size=v.size))
            if not any(bits):
                return None
            text = f"np.array({bits!r}).reshape({v.shape!r})"
        try:
            res = eval(f"v[{text}]", {"np": np, "v": v})
        except IndexError:
            return None
        if np.size(res) == 0:
            return None
        return (a,), (("kind", "index"), ("text", text))

    def emit(names, p):
        if p["kind"] == "take":
            return f"np.take({names[0]}, {p['text']})"
        return f"{names[0]}[{p['text']}]"

    return make, emit


# --------------------------------------------------------------------------- linear algebra
@_op("matmul_const", "linalg")
def _matmul_const():
    def make(draw, ctx, a):
        v = ctx.values[a]
        if v.ndim == 0:
            return None
        side = draw(st.sampled_from(["right", "left"]))
        n = draw(st.integers(1, 4))
        if side == "right":
            k = v.shape[-1]
            wshape = (k, n) if draw(st.booleans()) or v.ndim == 1 else (k,)
        else:
            k = v.shape[-2] if v.ndim >= 2 else v.shape[0]
            wshape = (n, k) if draw(st.booleans()) else (k,)
        return (a,), (("side", side), ("wshape", wshape),
                      ("fn", draw(st.sampled_from(["@", "matmul", "dot"]))))

    def emit(names, p):
        w = weight_source(p["wshape"], 0.5)
        x, y = (names[0], w) if p["side"] == "right" else (w, names[0])
        if p["fn"] == "@":
            return f"{x} @ {y}"
        return f"np.{p['fn']}({x}, {y})"

    return make, emit


@_op("matmul", "linalg")
def _matmul():
    def make(draw, ctx, a):
        va = ctx.values[a]
        if va.ndim == 0:
            return None
        cands = []
        for b, vb in enumerate(ctx.values):
            if vb.ndim == 0:
                continue
            try:
                np.matmul(va, vb)
                cands.append(b)
            except ValueError:
                pass
        if not cands:
            return None
        return (a, draw(st.sampled_from(cands))), ()

    return make, lambda names, p: f"{names[0]} @ {names[1]}"


_LETTERS = "abcdefgh"


@_op("einsum", "linalg")
def _einsum():
    def make(draw, ctx, a):
        va = ctx.values[a]
        binary = draw(st.booleans())
        sizes = {}
        sa = ""
        for d in va.shape:
            # reuse a letter of the same size sometimes (a diagonal)
            same = [c for c, s in sizes.items() if s == d and c in sa]
            if same and draw(st.integers(0, 4)) == 0:
                sa += draw(st.sampled_from(same))
            else:
                c = _LETTERS[len(sizes)]
                sizes[c] = d
                sa += c
        specs = [sa]
        operands = [a]
        if binary:
            b = draw(st.sampled_from(range(len(ctx.values))))
            vb = ctx.values[b]
            if vb.ndim > 3:
                return None
            sb = ""
            for d in vb.shape:
                same = [c for c, s in sizes.items() if s == d and c not in sb]
                if same and draw(st.booleans()):
                    sb += draw(st.sampled_from(same))
                else:
                    c = _LETTERS[len(sizes)]
                    sizes[c] = d
                    sb += c
            specs.append(sb)
            operands.append(b)
        letters = sorted(set("".join(specs)))
        out = draw(st.lists(st.sampled_from(letters), unique=True, max_size=3)) \
            if letters else []
        spec = ",".join(specs) + "->" + "".join(out)
        try:
            res = np.einsum(spec, *[ctx.values[i] for i in operands])
        except ValueError:
            return None
        if res.size > 64:
            return None
        return tuple(operands), (("spec", spec),)

    return make, lambda names, p: f"np.einsum({p['spec']!r}, {', '.join(names)})"


@_op("contract", "linalg")
def _contract():
    def make(draw, ctx, a):
        va = ctx.values[a]
        kind = draw(st.sampled_from(["outer", "inner", "vdot", "tensordot", "trace",
                                     "dot_self"]))
        if kind == "trace":
            if va.ndim < 2:
                return None
            return (a,), (("kind", kind),)
        if kind == "dot_self":
            if va.ndim != 1:
                return None
            return (a,), (("kind", kind),)
        cands = []
        for b, vb in enumerate(ctx.values):
            try:
                if kind == "outer":
                    ok = va.size * vb.size <= 64
                elif kind == "inner":
                    ok = va.ndim >= 1 and vb.ndim >= 1 and va.shape[-1] == vb.shape[-1] and \
                        va.ndim + vb.ndim <= 5
                elif kind == "vdot":
                    ok = va.size == vb.size
                else:
                    ok = va.ndim >= 1 and vb.ndim >= 1 and va.shape[-1] == vb.shape[0]
            except IndexError:
                ok = False
            if ok:
                cands.append(b)
        if not cands:
            return None
        return (a, draw(st.sampled_from(cands))), (("kind", kind),)

    def emit(names, p):
        kind = p["kind"]
        if kind == "trace":
            return f"np.trace({names[0]})"
        if kind == "dot_self":
            return f"{names[0]}.dot({names[0]})"
        if kind == "tensordot":
            return f"np.tensordot({names[0]}, {names[1]}, axes=1)"
        return f"np.{kind}({names[0]}, {names[1]})"

    return make, emit


def _spd_source(x: str, m: int) -> str:
    return f"({x} @ {x}.T + 2.0 * np.eye({m}))"


@_op("decomposition", "linalg")
def _decomposition():
    def make(draw, ctx, a):
        v = ctx.values[a]
        if v.ndim != 2 or v.shape[0] > 4 or _absmax(v) > 10:
            return None
        kind = draw(st.sampled_from(["inv", "det", "slogdet", "solve", "cholesky"]))
        return (a,), (("kind", kind), ("m", v.shape[0]))

    def emit(names, p):
        x, m = names[0], p["m"]
        M = _spd_source(x, m)
        return {"inv": f"np.linalg.inv({M})", "det": f"np.linalg.det({M})",
                "slogdet": f"np.linalg.slogdet({M})[1]",
                "solve": f"np.linalg.solve({M}, {x})",
                "cholesky": f"np.linalg.cholesky({M})"}[p["kind"]]

    return make, emit


@_op("sparse", "sparse")
def _sparse():
    def make(draw, ctx, a):
        if not ctx.sparse_ok:
            return None
        v = ctx.values[a]
        if v.ndim not in (1, 2):
            return None
        kind = draw(st.sampled_from(["A@x", "x@A", "A@x.T", "(A@x.T).T", "A.T@x",
                                     "A.dot(x)", "(2A)@x", "(A.multiply(W))@x"]))
        fmt = draw(st.sampled_from(["csr", "csc"]))
        m = draw(st.integers(1, 5))
        seed = draw(st.integers(0, 99))
        if kind in ("A@x", "A.dot(x)", "(2A)@x", "(A.multiply(W))@x"):
            shape = (m, v.shape[0])
        elif kind == "A.T@x":
            shape = (v.shape[0], m)
        elif kind == "x@A":
            shape = (v.shape[-1], m)
        else:
            if v.ndim != 2:
                return None
            shape = (m, v.shape[1])
        return (a,), (("kind", kind), ("shape", shape), ("fmt", fmt), ("seed", seed))

    def emit(names, p):
        A = sparse_source(*p["shape"], p["seed"], p["fmt"])
        x = names[0]
        W = weight_source(p["shape"], 0.9)
        return {"A@x": f"{A} @ {x}", "x@A": f"{x} @ {A}", "A@x.T": f"{A} @ {x}.T",
                "(A@x.T).T": f"({A} @ {x}.T).T", "A.T@x": f"{A}.T @ {x}",
                "A.dot(x)": f"{A}.dot({x})", "(2A)@x": f"({A} * 2.0) @ {x}",
                "(A.multiply(W))@x": f"{A}.multiply({W}) @ {x}"}[p["kind"]]

    return make, emit


# --------------------------------------------------------------------------- generator
GROUP_WEIGHTS = {"unary": 8, "binary": 6, "reduction": 3, "shape": 3, "indexing": 3,
                 "linalg": 3, "sparse": 1}


def _ops_by_group():
    groups: dict[str, list[str]] = {}
    for name, op in OPS.items():
        groups.setdefault(op.group, []).append(name)
    return groups


@st.composite
def programs(draw, max_nodes: int = 8, max_inputs: int = 3, sparse: bool | None = None):
    """A hypothesis strategy of :class:`Program`."""
    n_inputs = draw(st.integers(1, max_inputs))
    base = draw(st.lists(st.integers(1, 4), min_size=0, max_size=3))
    shapes = []
    for _ in range(n_inputs):
        # a shape that broadcasts with the base: a suffix, with some sides replaced by 1
        k = draw(st.integers(0, len(base)))
        s = tuple(base[len(base) - k:])
        s = tuple(1 if draw(st.integers(0, 4)) == 0 else d for d in s)
        shapes.append(s)
    seed = draw(st.integers(0, 2 ** 16))
    prog = Program(tuple(shapes), (), seed)
    ctx = Context(prog.values(), sparse_ok=True if sparse is None else sparse)
    groups = _ops_by_group()
    weighted = [g for g, w in GROUP_WEIGHTS.items() if g in groups for _ in range(w)]
    # op choices come from a seeded random stream: hypothesis's own draws favour the first
    # names of every list
    import random

    rnd = random.Random(draw(st.integers(0, 2 ** 32 - 1)))
    nodes = []
    n_nodes = rnd.randint(2, max_nodes)
    attempts = 0
    while len(nodes) < n_nodes and attempts < 4 * max_nodes:
        attempts += 1
        group = rnd.choice(weighted)
        name = rnd.choice(sorted(groups[group]))
        last = len(ctx.values) - 1
        used = {i for _, operands, _ in nodes for i in operands}
        unused = [i for i in range(len(ctx.values)) if i not in used]
        # prefer values nothing uses yet, then recent ones: programs are deep and connected
        a = rnd.choice([last, rnd.choice(unused), rnd.randint(0, last)])
        made = OPS[name].make(draw, ctx, a)
        if made is None:
            continue
        operands, params = made
        node = (name, tuple(operands), tuple(params))
        try:
            with np.errstate(all="raise"):
                value = np.asarray(eval(  # test code only
                    OPS[name].emit([f"_v{i}" for i in operands], dict(params)),
                    {**namespace(), **{f"_v{i}": ctx.values[i] for i in operands}}))
        except (ValueError, FloatingPointError, IndexError, TypeError, ZeroDivisionError):
            continue
        if not _finite(value) or _absmax(value) > 1e3 or value.size == 0 or value.size > 256:
            continue
        if value.dtype.kind != "f":
            continue
        nodes.append(node)
        ctx.values.append(value)
    if not nodes:
        nodes.append(("sin", (0,), (("wrap", False),)))
    return Program(prog.inputs, tuple(nodes), seed)


# --------------------------------------------------------------------------- checking
@dataclass
class Outcome:
    failures: list = field(default_factory=list)   # (check, message)
    skipped: list = field(default_factory=list)    # (check, why): finite differences unusable

    @property
    def ok(self) -> bool:
        return not self.failures


def _flat(x):
    if isinstance(x, (tuple, list)):
        return np.concatenate([_flat(y) for y in x]) if x else np.zeros(0)
    return np.asarray(x, dtype=np.float64).ravel()


def _close(got, want, rtol=1e-5, atol=1e-6) -> bool:
    """Elementwise ``|got - want| <= atol + rtol |want|``, or within ``rtol`` of the largest
    element (finite-difference error scales with the whole array, not each element)."""
    got, want = _flat(got), _flat(want)
    if got.shape != want.shape:
        return False
    if not want.size:
        return True
    same_nan = np.isnan(got) & np.isnan(want)
    if np.any(np.isnan(got) != np.isnan(want)):
        return False
    got, want = got[~same_nan], want[~same_nan]
    if not want.size:
        return True
    err = np.abs(got - want)
    if np.all(err <= atol + rtol * np.abs(want)):
        return True
    return bool(np.max(err) <= atol + rtol * float(np.max(np.abs(want))))


def _fd(fun, eps):
    return (_flat(fun(eps)) - _flat(fun(-eps))) / (2 * eps)


def _confirm(name, got, fun, outcome, rtol=1e-5, atol=1e-6):
    """Compare ``got`` with central differences of ``fun(s)`` at several steps.

    Passes if any step agrees; a failure needs the steps to agree among themselves (the
    function is smooth there) and all disagree with ``got``.
    """
    ests = []
    for eps in (1e-5, 1e-4, 1e-6, 1e-3, 3e-5):
        est = _fd(fun, eps)
        if _close(got, est, rtol, atol):
            return
        ests.append(est)
    spread = max(float(np.max(np.abs(_flat(e) - _flat(ests[0])))) for e in ests[:3])
    diff = float(np.max(np.abs(_flat(got) - _flat(ests[0]))))
    if diff > 20 * spread + 1e-7:
        outcome.failures.append((name, f"max |AD - FD| = {diff:.3g} (FD spread {spread:.2g})"
                                       f"\n  AD {_flat(got)[:6]}\n  FD {_flat(ests[0])[:6]}"))
    else:
        outcome.skipped.append((name, f"finite differences unstable (spread {spread:.2g})"))


def _guard(name, outcome, fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - every crash of the library is a finding
        tb = traceback.format_exc(limit=-4)
        outcome.failures.append((name, f"{type(e).__name__}: {e}\n{tb}"))


def check_program(prog: Program, hvp: bool = True, float32: bool = True) -> Outcome:
    """Run every transform on ``prog`` and compare with NumPy / finite differences."""
    outcome = Outcome()
    f, loss = prog.functions()
    args = prog.args()
    rng = np.random.default_rng(prog.seed + 1)
    ts = tuple(rng.standard_normal(np.shape(a)) for a in args)
    us = tuple(rng.standard_normal(np.shape(a)) for a in args)
    want = f(*args)
    want_loss = float(loss(*args))

    def shifted(fun, direction, s, i=None):
        if i is None:
            return fun(*[a + s * t for a, t in zip(args, direction)])
        b = list(args)
        b[i] = args[i] + s * direction[i]
        return fun(*b)

    def check_jit():
        got = dg.jit(f)(*args)
        if not _close(got, want, 1e-10, 1e-12):
            outcome.failures.append(("jit", f"jit(f) != f\n  got  {_flat(got)[:6]}\n"
                                            f"  want {_flat(want)[:6]}"))

    def check_jvp():
        out, out_dot = dg.jvp(f, args, ts)
        if not _close(out, want, 1e-10, 1e-12):
            outcome.failures.append(("jvp-primal", "jvp's primal output != f"))
        try:
            dg.testing.check_jvp(f, args)
        except AssertionError:
            ts0 = tuple(np.random.default_rng(0).standard_normal(np.shape(a)) for a in args)
            _, got = dg.jvp(f, args, ts0)
            _confirm("jvp", got, lambda s: shifted(f, ts0, s), outcome)
        del out_dot

    def check_vjp():
        try:
            dg.testing.check_vjp(f, args, rtol=1e-8, atol=1e-9)
        except AssertionError as e:
            outcome.failures.append(("vjp", str(e)))

    def check_grad():
        argnums = tuple(range(len(args)))
        value, grads = dg.value_and_grad(loss, argnums=argnums)(*args)
        if not _close(value, want_loss, 1e-10, 1e-12):
            outcome.failures.append(("value", f"value_and_grad value {value} != {want_loss}"))
        got = sum(float(np.sum(g * t)) for g, t in zip(grads, ts))
        if not _close(got, _fd(lambda s: shifted(loss, ts, s), 1e-5)):
            _confirm("grad", got, lambda s: shifted(loss, ts, s), outcome)
        g0 = dg.grad(loss)(*args)
        if not _close(g0, grads[0], 1e-12, 1e-12):
            outcome.failures.append(("grad-argnums", "grad(argnums=0) != grad(argnums=(0,...))[0]"))

    def check_hvp(i):
        g = dg.grad(loss, argnums=i)
        hv = dg.hvp(loss, argnums=i)(*args, ts[i])
        gh_g, gh_hv = dg.grad_and_hvp(loss, argnums=i)(*args, ts[i])
        if not (_close(gh_g, g(*args), 1e-12, 1e-12) and _close(gh_hv, hv, 1e-12, 1e-12)):
            outcome.failures.append((f"grad_and_hvp[{i}]", "grad_and_hvp != (grad, hvp)"))
        _confirm(f"hvp[{i}]", hv, lambda s: shifted(g, ts, s, i), outcome, rtol=1e-4,
                 atol=1e-5)
        # symmetry: <u, H t> == <t, H u>
        hu = dg.hvp(loss, argnums=i)(*args, us[i])
        lhs, rhs = float(np.sum(us[i] * hv)), float(np.sum(ts[i] * hu))
        if abs(lhs - rhs) > 1e-7 * max(1.0, abs(lhs), abs(rhs)):
            outcome.failures.append((f"hvp-symmetry[{i}]", f"<u,Ht>={lhs!r} <t,Hu>={rhs!r}"))

    def check_float32():
        """float32 inputs give float32 derivatives, close to the float64 ones."""
        a32 = tuple(np.asarray(a, dtype=np.float32) for a in args)
        t32 = tuple(np.asarray(t, dtype=np.float32) for t in ts)
        g32 = dg.grad(loss, argnums=0)(*a32)
        hv32 = dg.hvp(loss, argnums=0)(*a32, t32[0])
        out32, dot32 = dg.jvp(f, a32, t32)
        g64 = dg.grad(loss, argnums=0)(*args)
        hv64 = dg.hvp(loss, argnums=0)(*args, ts[0])
        _, dot64 = dg.jvp(f, args, ts)
        def dtypes(x):
            return [np.asarray(leaf).dtype for leaf in
                    (x if isinstance(x, (tuple, list)) else (x,))]

        numpy_out = dtypes(f(*a32))  # NumPy's own promotion decides the output dtypes
        for name, got, ref, want_dt in (
                ("grad", g32, g64, [np.dtype(np.float32)]),
                ("hvp", hv32, hv64, [np.dtype(np.float32)]),
                ("jvp", dot32, dot64, numpy_out), ("jvp-primal", out32, want, numpy_out)):
            if dtypes(got) != want_dt:
                outcome.failures.append((f"float32-{name}",
                                         f"dtypes {dtypes(got)}, NumPy gives {want_dt}"))
            elif not _close(got, ref, 2e-2, 2e-3):
                outcome.skipped.append((f"float32-{name}", "float32 rounding"))

    _guard("jit", outcome, check_jit)
    _guard("jvp", outcome, check_jvp)
    _guard("vjp", outcome, check_vjp)
    _guard("grad", outcome, check_grad)
    if hvp:
        for i in range(len(args)):
            _guard(f"hvp[{i}]", outcome, lambda i=i: check_hvp(i))
    if float32:
        _guard("float32", outcome, check_float32)
    return outcome


def describe(prog: Program, outcome: Outcome) -> str:
    lines = [str(prog)]
    for name, msg in outcome.failures:
        lines.append(f"  FAIL {name}: {msg}")
    return "\n".join(lines)


def op_names() -> list:
    return sorted(OPS)


__all__ = ["Program", "programs", "check_program", "Outcome", "describe", "OPS",
           ]


# --------------------------------------------------------------------------- CuPy vs NumPy
def _to_numpy(x):
    if isinstance(x, (tuple, list)):
        return type(x)(_to_numpy(y) for y in x)
    return x.get() if hasattr(x, "get") else np.asarray(x)


def check_program_backend(prog: Program, xp) -> Outcome:
    """Every transform of ``prog`` on ``xp`` arrays (CuPy: fused kernels) gives the NumPy
    answer (float64, up to the order of summation)."""
    outcome = Outcome()
    f, loss = prog.functions()
    args = prog.args()
    rng = np.random.default_rng(prog.seed + 1)
    ts = tuple(rng.standard_normal(np.shape(a)) for a in args)
    dargs = tuple(xp.asarray(a) for a in args)
    dts = tuple(xp.asarray(t) for t in ts)

    def same(name, got, want):
        got = _to_numpy(got)
        if not _close(got, want, 1e-9, 1e-12):
            outcome.failures.append((name, f"{xp.__name__} != numpy\n  got  {_flat(got)[:6]}"
                                           f"\n  want {_flat(want)[:6]}"))

    def run_all():
        same("jit", dg.jit(f)(*dargs), dg.jit(f)(*args))
        same("jvp", dg.jvp(f, dargs, dts), dg.jvp(f, args, ts))
        same("value_and_grad", dg.value_and_grad(loss, argnums=tuple(range(len(args))))(*dargs),
             dg.value_and_grad(loss, argnums=tuple(range(len(args))))(*args))
        for i in range(len(args)):
            same(f"grad_and_hvp[{i}]",
                 dg.grad_and_hvp(loss, argnums=i, return_value=True)(*dargs, dts[i]),
                 dg.grad_and_hvp(loss, argnums=i, return_value=True)(*args, ts[i]))
            same(f"hvp[{i}]", dg.hvp(loss, argnums=i)(*dargs, dts[i]),
                 dg.hvp(loss, argnums=i)(*args, ts[i]))

    def run_float32():
        a32 = tuple(np.asarray(a, dtype=np.float32) for a in args)
        t32 = ts[0].astype(np.float32)
        d32 = tuple(xp.asarray(a) for a in a32)
        for name, t in (("grad", dg.grad(loss)), ("hvp", dg.hvp(loss))):
            extra = () if name == "grad" else (t32,)
            got = t(*d32, *(xp.asarray(e) for e in extra))
            ref = t(*a32, *extra)
            if got.dtype != ref.dtype:
                outcome.failures.append((f"float32-{name}", f"{got.dtype} != {ref.dtype}"))
            elif not _close(_to_numpy(got), ref, 1e-3, 1e-4):
                outcome.failures.append((f"float32-{name}",
                                         f"{xp.__name__} != numpy\n  got  "
                                         f"{_flat(_to_numpy(got))[:6]}\n  want {_flat(ref)[:6]}"))

    _guard(xp.__name__, outcome, run_all)
    _guard(f"{xp.__name__}-float32", outcome, run_float32)
    return outcome
