"""The separability proof of ``batch_axes`` with one value in several operands (issue 35,
item 2).

``np.einsum("id,jd->i", p, p)`` couples instances (output ``i`` reads every row ``j``), but
the rules told operands apart by their variable: the second ``p`` was judged as the first,
whose instance axis the output keeps, and the batched transforms returned one wrong value
per point. The rules now see each operand by its position.

The property test draws random multi-operand programs over a batched argument (one value
in several operands, transposes, contractions over and along the instance axes,
broadcasting, joins, ``where``) and for each either the proof refuses, or it accepts and
then (a) changing one instance's input changes no other instance's output (NumPy), (b) the
dense Jacobian (``dg.jacfwd``) has no block between different instances and (c) the
batched Laplacian and Hessian diagonal equal central second differences of ``f`` on each
instance. CI runs ``CI_EXAMPLES`` fixed programs; ``--fuzz-long`` (or
``DUALGPU_SEPARABILITY_EXAMPLES``) a longer campaign.
"""
from __future__ import annotations

import itertools
import os
import re
import string
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

import dualgpu as dg
from dualgpu.transforms.separability import check_separable

HERE = os.path.basename(__file__)
CI_EXAMPLES = 100
LONG_EXAMPLES = int(os.environ.get("DUALGPU_SEPARABILITY_EXAMPLES", "3000"))
RNG = np.random.default_rng(35)
P43 = RNG.standard_normal((4, 3))


def _transforms():
    """Every batched transform, as a call on ``(f, x)``."""
    return {
        "laplacian": lambda f, x: dg.laplacian(f, batch_axes=(0,))(x),
        "hessian_diag": lambda f, x: dg.hessian_diag(f, batch_axes=(0,))(x),
        "hvp": lambda f, x: dg.hvp(f, batch_axes=(0,))(x, np.ones_like(x)),
        "biharmonic": lambda f, x: dg.biharmonic(f, batch_axes=(0,))(x),
    }


TRANSFORMS = _transforms()

# ------------------------------------------------------------------ one value, two operands
# each couples instances through a value that is two operands of one op
COUPLED = {
    "einsum of p with itself": (lambda p: np.einsum("id,jd->i", p, p), "einsum"),
    "tensordot of p with itself": (
        lambda p: np.sum(np.tensordot(p, p, axes=([1], [1])), axis=1), "einsum"),
    "inner of p with itself": (lambda p: np.sum(np.inner(p, p), axis=0), "einsum"),
    "square p @ p": (lambda p: np.sum(p[:, :3] @ p[:, :3], axis=1), "matmul"),
    "square dot(p, p)": (lambda p: np.sum(np.dot(p[:, :3], p[:, :3]), axis=1), "matmul"),
    "einsum over the instance axis of the second operand": (
        lambda p: np.einsum("ij,ji->i", p[:, :3], p[:, :3]), "einsum"),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
@pytest.mark.parametrize("case", sorted(COUPLED))
def test_one_value_as_two_operands_is_refused(case, name):
    """Before: accepted, laplacian returned [24. 24. 24. 24.] for the einsum of a (4, 3)
    argument of ones, the sum over every point."""
    f, op = COUPLED[case]
    x = np.ones((3, 3)) if "square" in case or "second operand" in case else np.ones((4, 3))
    with pytest.raises(dg.SeparabilityError) as info:
        TRANSFORMS[name](f, x)
    msg = str(info.value)
    assert re.search(rf"^{name}\(batch_axes=\(0,\)\): {op} at \S*{HERE}:\d+ couples "
                     "different instances: .*operand 2", msg), msg


def test_the_message_names_the_operand_and_the_label():
    with pytest.raises(dg.SeparabilityError, match=r"sums over an instance axis \(it "
                       r"contracts label 'j' of operand 2, 'jd', which the output 'i' lacks"):
        dg.laplacian(lambda p: np.einsum("id,jd->i", p, p), batch_axes=(0,))(P43)


# ------------------------------------------------------------------ separable, accepted
SEPARABLE = {
    "einsum keeping the instance label": lambda p: np.einsum("id,id->i", p, np.sin(p)),
    "p * p": lambda p: np.sum(p * np.tanh(p), axis=1),
    "p @ constant, then its rows": lambda p: np.sum((p @ np.ones((3, 2))) ** 2, axis=1),
    "batched matmul with a vector": lambda p: np.sum(
        np.sin(p[:, :, None] * p[:, None, :]) @ np.arange(1.0, 4.0), axis=1),
    "matmul of per-instance matrices": lambda p: np.einsum(
        "iab,iab->i", p[:, :, None] * p[:, None, :], p[:, :, None] @ p[:, None, :]),
    "concatenation along coordinates": lambda p: np.sum(
        np.concatenate([p, p ** 2], axis=1) ** 2, axis=1),
    "where with its own condition": lambda p: np.sum(np.where(p > 0, p ** 3, np.sin(p)),
                                                     axis=1),
}


@pytest.mark.parametrize("case", sorted(SEPARABLE))
def test_separable_products_of_one_value_are_accepted(case):
    """``(B, n, k) @ (k,)``: before, the proof put the instances on the output's last axis
    and refused a separable function ('returns shape (4,)' for an output of shape (4,))."""
    f = SEPARABLE[case]
    hd = dg.hessian_diag(f, batch_axes=(0,))(P43)
    np.testing.assert_allclose(hd, _second_differences(f, P43, (0,)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dg.laplacian(f, batch_axes=(0,))(P43), hd.sum(axis=1),
                               rtol=1e-10, atol=1e-10)


def test_batched_matmul_with_a_vector_keeps_the_instance_axis():
    """Before: a raw ``ValueError: -1 is not in list`` from the transpose after it."""
    def f(p):
        return np.sum((p[:, :, None] * p[:, None, :] @ np.ones(3)).T ** 2, axis=0)

    np.testing.assert_allclose(dg.laplacian(f, batch_axes=(0,))(P43),
                               _second_differences(f, P43, (0,)).sum(axis=1), rtol=1e-5)


# ------------------------------------------------------------------ random programs
@dataclass(frozen=True)
class Program:
    """A random program over one batched argument of shape ``shape``: ``nodes`` (op name,
    operand indices into the values, parameters), constants from ``seed``, and ``out``: the
    value returned and its axes that become the output's (the others are summed)."""

    shape: tuple
    batch_axes: tuple
    nodes: tuple
    out: tuple
    seed: int = 0

    def function(self):
        consts = np.random.default_rng(self.seed)

        def const(shape):
            return consts.uniform(0.5, 1.5, size=shape)

        made = [(op, ins, params, const(params[0]) if op in CONST_OPS else None)
                for op, ins, params in self.nodes]

        def f(p):
            values = [p]
            for op, ins, params, c in made:
                args = [values[i] for i in ins]
                values.append(OPS[op](c, *params)(*args) if c is not None
                              else OPS[op](*params)(*args))
            v, axes = values[self.out[0]], self.out[1]
            v = np.moveaxis(v, axes, tuple(range(len(axes))))
            return np.sum(v, axis=tuple(range(len(axes), v.ndim)))
        return f

    def source(self) -> str:
        lines = [f"p: shape {self.shape}, batch_axes={self.batch_axes}, seed {self.seed}"]
        for k, (op, ins, params) in enumerate(self.nodes):
            operands = ", ".join(f"v{i}" for i in ins)
            lines.append(f"v{k + 1} = {op}({', '.join(map(repr, params))})({operands})")
        lines.append(f"return v{self.out[0]} summed but for axes {self.out[1]}")
        return "\n".join(lines)


def _binary(fn):
    return lambda: fn


OPS = {
    "tanh": lambda: np.tanh, "sin": lambda: np.sin, "square": lambda: np.square,
    "transpose": lambda perm: lambda a: np.transpose(a, perm),
    "expand": lambda axis: lambda a: np.expand_dims(a, axis),
    "flip": lambda axis: lambda a: np.flip(a, axis),
    "reshape": lambda shape: lambda a: np.reshape(a, shape),
    "slice": lambda axis, start, step: lambda a: a[(slice(None),) * axis + (
        slice(start, None, step),)],
    "sum": lambda axis: lambda a: np.sum(a, axis=axis),
    "multiply": _binary(np.multiply), "add": _binary(np.add),
    "matmul": _binary(np.matmul), "dot": _binary(np.dot), "outer": _binary(np.outer),
    "inner": _binary(np.inner), "kron": _binary(np.kron),
    "einsum": lambda spec: lambda *xs: np.einsum(spec, *xs),
    "tensordot": lambda axes: lambda a, b: np.tensordot(a, b, axes=axes),
    "concatenate": lambda axis: lambda a, b: np.concatenate([a, b], axis=axis),
    "stack": lambda axis: lambda a, b: np.stack([a, b], axis=axis),
    "where": lambda: lambda c, a, b: np.where(c > 0, a, b),
    # with a constant of the shape that is their first parameter
    "times_const": lambda c, shape: lambda a: a * c,
    "matmul_const": lambda c, shape: lambda a: a @ c,
    "const_matmul": lambda c, shape: lambda a: c @ a,
}
CONST_OPS = {"times_const", "matmul_const", "const_matmul"}
ARITY = {"where": 3, "multiply": 2, "add": 2, "matmul": 2, "dot": 2, "outer": 2, "inner": 2,
         "kron": 2, "tensordot": 2, "concatenate": 2, "stack": 2}
PRODUCTS = ("einsum", "tensordot", "matmul", "dot", "inner", "outer", "kron")
WEIGHTED = sorted(OPS) + [op for op in PRODUCTS for _ in range(2)]  # products thrice
MAX_SIZE, MAX_NDIM = 256, 4


def _params(draw, op: str, shapes: list) -> tuple:
    """Parameters of ``op`` on operands of ``shapes`` (NumPy refuses the invalid ones)."""
    a = shapes[0]
    nd = len(a)
    if op == "transpose":
        return (tuple(draw(st.permutations(range(nd)))),)
    if op == "expand":
        return (draw(st.integers(0, nd)),)
    if op in ("flip", "sum"):
        return (draw(st.integers(0, max(nd - 1, 0))),)
    if op == "reshape":   # two neighbouring axes merged, or one split in two
        i = draw(st.integers(0, max(nd - 1, 0)))
        if nd >= 2 and draw(st.booleans()):
            return (a[:i] + (a[i] * a[i + 1],) + a[i + 2:] if i + 1 < nd else (-1,),)
        divisors = [q for q in range(2, a[i]) if a[i] % q == 0] if nd else []
        q = draw(st.sampled_from(divisors)) if divisors else 1
        return (a[:i] + (q, a[i] // q) + a[i + 1:] if nd else (1,),)
    if op == "slice":
        return (draw(st.integers(0, max(nd - 1, 0))), draw(st.integers(0, 1)),
                draw(st.sampled_from((1, 2, -1))))
    if op in ("concatenate", "stack"):
        return (draw(st.integers(0, max(nd - (op == "concatenate"), 0))),)
    if op == "einsum":
        return (_einsum_spec(draw, shapes),)
    if op == "tensordot":
        pairs = [(i, j) for i, x in enumerate(a) for j, y in enumerate(shapes[1]) if x == y]
        chosen = draw(st.lists(st.sampled_from(pairs), max_size=2, unique_by=(
            lambda q: q[0], lambda q: q[1]))) if pairs else []
        return (([i for i, _ in chosen], [j for _, j in chosen]),)
    if op == "times_const":   # a constant that broadcasts: some axes 1, maybe one more axis
        shape = tuple(1 if draw(st.booleans()) else d for d in a)
        return ((draw(st.sampled_from((2, 3))),) + shape if draw(st.booleans()) else shape,)
    if op == "matmul_const":
        return ((a[-1] if nd else 1, draw(st.integers(1, 3))),)
    if op == "const_matmul":
        return ((draw(st.integers(1, 3)), a[-2] if nd >= 2 else (a[0] if nd else 1)),)
    return ()


def _einsum_spec(draw, shapes: list) -> str:
    """Labels for each operand: an axis reuses a label of the same length (in another
    operand, or the same one: a diagonal) or takes a new one; the output keeps a subset."""
    letters, lengths, specs = iter(string.ascii_lowercase), {}, []
    for shape in shapes:
        spec = ""
        for d in shape:
            same = sorted(lab for lab, n in lengths.items() if n == d)
            if same and draw(st.booleans()):
                lab = draw(st.sampled_from(same))
            else:
                lab = next(letters)
                lengths[lab] = d
            spec += lab
        specs.append(spec)
    kept = draw(st.lists(st.sampled_from(sorted(lengths)), unique=True, max_size=3)
                ) if lengths else []
    return ",".join(specs) + "->" + "".join(kept)


def _shape_of(op: str, params: tuple, shapes: list):
    """The shape ``op`` gives, or None when NumPy refuses it or it is too large."""
    if op in ("sum", "flip", "slice") and not shapes[0]:
        return None    # NumPy takes axis 0 of a 0-d array; dualgpu refuses it
    zeros = [np.zeros(s) for s in shapes]
    try:
        fn = (OPS[op](np.zeros(params[0]), *params) if op in CONST_OPS else OPS[op](*params))
        with np.errstate(all="ignore"):
            out = np.shape(fn(*zeros))
    except (ValueError, IndexError, TypeError):
        return None
    if np.prod(out, dtype=np.int64) > MAX_SIZE or len(out) > MAX_NDIM or 0 in out:
        return None
    return out


@st.composite
def programs(draw, max_nodes: int = 5):
    two = draw(st.integers(0, 3)) == 0
    n = [draw(st.integers(2, 3)) for _ in range(2 if two else 1)]
    d = draw(st.integers(2, 3))
    if two:
        shape, batch_axes = (n[0], d, n[1]), (0, 2)
    else:
        batch_axes = (draw(st.integers(0, 1)),)
        shape = (n[0], d) if batch_axes == (0,) else (d, n[0])
    shapes = [shape]
    nodes = []
    for _ in range(draw(st.integers(1, max_nodes)) * 3):
        if len(nodes) == max_nodes:
            break
        op = draw(st.sampled_from(WEIGHTED))
        last = len(shapes) - 1      # the newest value first, then the same value again
        ins = [draw(st.one_of(st.just(last), st.integers(0, last)))]
        arity = draw(st.integers(1, 3)) if op == "einsum" else ARITY.get(op, 1)
        for _ in range(arity - 1):
            ins.append(draw(st.one_of(st.just(ins[0]), st.integers(0, last))))
        operand_shapes = [shapes[i] for i in ins]
        params = _params(draw, op, operand_shapes)
        out = _shape_of(op, params, operand_shapes)
        if out is not None:
            nodes.append((op, tuple(ins), params))
            shapes.append(out)
    # the returned value: one whose axes can hold the instances, newest first
    for v in sorted(range(len(shapes)), key=lambda i: (i != len(shapes) - 1, -i)):
        fits = [axes for axes in itertools.permutations(range(len(shapes[v])), len(n))
                if all(shapes[v][q] == k for q, k in zip(axes, n))]
        if fits:
            return Program(shape, batch_axes, tuple(nodes), (v, draw(st.sampled_from(fits))),
                           draw(st.integers(0, 2 ** 16)))
    raise AssertionError("the argument itself always holds the instances")


def _second_differences(f, x, batch_axes, h=1e-4):
    """Central second differences of ``f`` along every coordinate of ``x``, each read at
    the output of the instance that coordinate belongs to: the per-instance Hessian
    diagonal, shaped like ``x``."""
    base = f(x)
    out = np.zeros(x.shape)
    for c in np.ndindex(x.shape):
        step = np.zeros(x.shape)
        step[c] = h
        inst = tuple(c[a] for a in batch_axes)
        out[c] = (f(x + step)[inst] - 2 * base[inst] + f(x - step)[inst]) / h ** 2
    return out


def _instances(x, batch_axes):
    """``x`` with its instance axes first, as (instances, coordinates)."""
    k = len(batch_axes)
    moved = np.moveaxis(x, batch_axes, tuple(range(k)))
    return moved.reshape(int(np.prod(moved.shape[:k])), -1)


def _check_accepted(prog: Program, f, x) -> None:
    """``f`` proved separable: no instance's output depends on another instance's input,
    and the batched transforms equal the per-instance differences."""
    base = f(x)
    scale = max(1.0, float(np.max(np.abs(base))))
    n_inst = base.size
    # (a) changing instance j's input moves only output j
    for j in range(n_inst):
        moved = _instances(x, prog.batch_axes).copy()
        moved[j] = RNG.standard_normal(moved.shape[1])
        y = f(_unmove(moved, x.shape, prog.batch_axes)).ravel() - base.ravel()
        others = np.delete(y, j)
        assert np.all(np.abs(others) <= 1e-12 * scale), (
            f"accepted, but changing instance {j} moves others by {others}:\n{prog.source()}")
    # (b) the dense Jacobian has no block between instances
    jac = np.asarray(dg.jacfwd(f)(x)).reshape(n_inst, *x.shape)
    blocks = np.stack([_instances(jac[i], prog.batch_axes) for i in range(n_inst)])
    off = blocks * (1 - np.eye(n_inst))[:, :, None]
    assert np.all(np.abs(off) <= 1e-12 * scale), (
        f"accepted, but the Jacobian couples instances:\n{prog.source()}")
    # (c) the batched transforms are the per-instance ones
    diff = _second_differences(f, x, prog.batch_axes)
    hd = dg.hessian_diag(f, batch_axes=prog.batch_axes)(x)
    np.testing.assert_allclose(hd, diff, rtol=1e-4, atol=1e-4 * scale, err_msg=prog.source())
    lap = dg.laplacian(f, batch_axes=prog.batch_axes)(x)
    np.testing.assert_allclose(lap, np.sum(_instances(diff, prog.batch_axes), axis=1).reshape(
        lap.shape), rtol=1e-4, atol=1e-4 * scale, err_msg=prog.source())


def _unmove(moved, shape, batch_axes):
    k = len(batch_axes)
    lead = tuple(shape[a] for a in batch_axes)
    rest = tuple(s for q, s in enumerate(shape) if q not in batch_axes)
    return np.moveaxis(moved.reshape(lead + rest), tuple(range(k)), batch_axes)


# the issue's programs, run first: p (4, 3) and p (3, 3)
ISSUE = [Program((4, 3), (0,), (("einsum", (0, 0), ("id,jd->i",)),), (1, (0,))),
         Program((4, 3), (0,), (("tensordot", (0, 0), (([1], [1]),)),), (1, (0,))),
         Program((3, 3), (0,), (("matmul", (0, 0), ()),), (1, (0,)))]


def test_random_programs_are_refused_or_separable(fuzz_long, capsys):
    """Every random program is refused by the proof, or accepted and then separable with
    the right per-instance results; both outcomes occur (the test is not vacuous)."""
    outcomes: Counter = Counter()

    @settings(max_examples=LONG_EXAMPLES if fuzz_long else CI_EXAMPLES, deadline=None,
              database=None, derandomize=not fuzz_long, print_blob=True,
              suppress_health_check=list(HealthCheck),
              phases=[Phase.explicit, Phase.generate, Phase.shrink])
    @given(programs())
    @example(ISSUE[0])
    @example(ISSUE[1])
    @example(ISSUE[2])
    def run(prog):
        f = prog.function()
        x = np.random.default_rng(prog.seed).standard_normal(prog.shape)
        try:
            check_separable(dg.trace(f, x), [0], prog.batch_axes, what="laplacian")
        except dg.SeparabilityError:
            outcomes["refused"] += 1
            return
        outcomes["accepted"] += 1
        _check_accepted(prog, f, x)

    run()
    with capsys.disabled():
        print(f"\nseparability fuzz: {dict(outcomes)}")
    assert outcomes["refused"] and outcomes["accepted"], outcomes
