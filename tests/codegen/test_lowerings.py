"""An op owns its lowerings (issue 24): the code generators and the planner ask the op
(``prim.lowering(kind)``, ``prim.has(Flag.X)``) how it is lowered, never its identity.

* the generated text of programs that use every lowering an op declares (the tiny kernel,
  the region kernels, the plan) is pinned by golden files (tests/golden/lowerings_*.txt): the
  move onto the ops changed no byte of it;
* an op declared by a user with the same lowering as a built-in op is lowered as that op
  (a permutation view, a condition operand, a cast): the generators hold no list of ops;
* the memory profile of a plan whose library steps index with new axes (``mu[:, None]``).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.codegen.c_source import eqn_c_expr
from dualgpu.codegen.cuda import plan_source, region_kernels
from dualgpu.codegen.tiny import tiny_program_kernel, tiny_refusal
from dualgpu.core.flags import Flag
from dualgpu.core.primitives import REGISTRY, deflowering, defprim
from dualgpu.fusion import memory_profile, plan_graph
from dualgpu.ops.elementwise import elementwise

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def lowering_program(x, w):
    """A product, its views (transpose, slice, new axis, broadcast), a where, a cast to
    bool, an einsum and a concatenation."""
    h = np.tanh(x @ w)
    m = np.where(h > 0, h, 0.5 * h)
    keep = (m * 3).astype(bool)
    e = np.einsum("ij,ij->i", m, h)
    b = np.broadcast_to(e[:, None], m.shape)
    c = np.concatenate([m, b * keep], axis=0)
    return np.sum(c ** 2) + np.sum(m.T[:, 1:] * 2.0)


def _programs():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 3)), rng.standard_normal((3, 5))
    return {"jit": dg.trace(dg.jit(lowering_program), x, w),
            "jvp": dg.trace(lambda x, w, x_dot, w_dot: dg.jvp(lowering_program, (x, w),
                                                               (x_dot, w_dot)), x, w, x, w),
            "grad_and_hvp": dg.trace(dg.grad_and_hvp(lowering_program, argnums=(0, 1),
                                                     return_value=True), x, w, (x, w))}


def _text(graph) -> str:
    plan = plan_graph(graph)
    kernels = {r.index: region_kernels(r) for r in plan.regions}
    tiny = tiny_program_kernel(graph)
    return "\n".join([str(graph), plan.describe(), plan_source(plan, kernels),
                      tiny.source if tiny is not None else f"tiny: {tiny_refusal(graph)}"])


@pytest.mark.parametrize("name", ["jit", "jvp", "grad_and_hvp"])
def test_generated_text_of_every_lowering_is_unchanged(name):
    text = _text(_programs()[name])
    path = GOLDEN / f"lowerings_{name}.txt"
    if os.environ.get("DUALGPU_UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"missing {path}: run with DUALGPU_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{path.name} changed; review it, then update it"


# ------------------------------------------------------------------ a user's op, lowered alike
@pytest.fixture
def probe_ops():
    """Ops a test declares, taken out of the registry afterwards."""
    from dualgpu.ops.elementwise import ELEMENTWISE

    made = []
    yield made
    for prim in made:
        REGISTRY.pop(prim.name, None)
        ELEMENTWISE.pop(prim.name, None)


def _renamed(kernel, graph) -> str:
    return kernel.source.replace(kernel.name, "K")


def test_a_users_op_declared_a_permutation_view_is_one_in_the_tiny_kernel(probe_ops):
    from dualgpu.ops.shape import transpose

    flip = defprim("lowering_probe_flip", lambda xp, x, perm: xp.transpose(x, perm),
                   transpose.abstract_eval, arity=1)
    probe_ops.append(flip)
    deflowering(flip, view="permute")
    x = np.ones((3, 5))
    ours = dg.trace(lambda x: np.sin(flip(x, perm=(1, 0))) @ x, x)
    builtin = dg.trace(lambda x: np.sin(x.T) @ x, x)
    assert tiny_refusal(ours) is None
    assert _renamed(tiny_program_kernel(ours), ours) == \
        _renamed(tiny_program_kernel(builtin), builtin)
    # as a library step, the CuPy runner gets a view: no bytes of its own
    assert memory_profile(plan_graph(dg.trace(lambda x: flip(x, perm=(1, 0)), x))) == \
        memory_profile(plan_graph(dg.trace(lambda x: x.T, x)))


def test_a_users_op_declared_a_gemm_is_grouped_with_the_products(probe_ops):
    from dualgpu.codegen.launcher import _writes_into, product_groups
    from dualgpu.ops.products import matmul

    product = defprim("lowering_probe_product", lambda xp, a, b: xp.matmul(a, b),
                      matmul.abstract_eval, kind=Flag.LIBRARY, arity=2)
    probe_ops.append(product)
    deflowering(product, library="gemm")
    x, w = np.ones((8, 4)), np.ones((4, 2))
    plan = plan_graph(dg.trace(lambda x, w, v: (product(x, w), product(x, v)), x, w, w))
    assert product_groups(plan.steps) == {0: (0, 1)}
    assert all(_writes_into(step) for step in plan.steps)


def test_a_users_select_with_a_condition_operand_reads_it_as_bool(probe_ops):
    from dualgpu.ops.elementwise import where

    select = elementwise("lowering_probe_select", None, 3, c="({0} ? {1} : {2})",
                         impl=lambda xp, c, x, y: xp.where(c, x, y),
                         abstract_eval=where.abstract_eval, flags=(Flag.CONDITION,))
    probe_ops.append(select)
    for c, x in [(np.ones(3), np.ones(3, np.float32)), (np.ones(3, np.int32), np.ones(3, bool))]:
        ours = dg.trace(lambda c, x: select(c, x, x), c, x).eqns[-1]
        builtin = dg.trace(lambda c, x: np.where(c, x, x), c, x).eqns[-1]
        assert eqn_c_expr(ours, ["c", "x", "x"]) == eqn_c_expr(builtin, ["c", "x", "x"])
        assert eqn_c_expr(ours, ["c", "x", "x"]).startswith("(((bool)c) ?")


def test_a_users_cast_reads_its_operand_in_its_own_dtype(probe_ops):
    from dualgpu.ops.elementwise import convert_element_type

    cast = elementwise("lowering_probe_cast", None, 1, c="(({dtype}){0})",
                       impl=lambda xp, x, dtype: xp.asarray(x).astype(dtype),
                       abstract_eval=convert_element_type.abstract_eval, flags=(Flag.CASTS,))
    probe_ops.append(cast)
    for x, dtype, c_type in [(np.ones(3), np.dtype(bool), "bool"),
                             (np.ones(3, np.int64), np.dtype(np.float32), "float")]:
        ours = dg.trace(lambda x, dtype=dtype: cast(x, dtype=dtype), x).eqns[-1]
        builtin = dg.trace(lambda x, dtype=dtype: x.astype(dtype), x).eqns[-1]
        assert eqn_c_expr(ours, ["x"]) == eqn_c_expr(builtin, ["x"]) == f"(({c_type})x)"


def test_deflowering_refuses_an_unknown_kind_or_form(probe_ops):
    from dualgpu.ops.shape import transpose

    probe = defprim("lowering_probe_refused", lambda xp, x: x, transpose.abstract_eval)
    probe_ops.append(probe)
    with pytest.raises(dg.DualgpuError, match="no lowering kind is named 'shader'.*view"):
        deflowering(probe, shader="permute")
    with pytest.raises(dg.DualgpuError, match="'rotate'.*view.*permute, broadcast, index"):
        deflowering(probe, view="rotate")
    assert probe.lowering("view") is None


def test_the_op_matrix_shows_each_ops_lowerings():
    from dualgpu.tools.op_matrix import coverage

    cells = {name: coverage(REGISTRY[name]) for name in
             ("transpose", "matmul", "reduce_sum", "concatenate", "sin", "reshape", "cumsum")}
    assert cells["transpose"]["view"] == ("own", "permute")
    assert cells["transpose"]["tiny"] == ("own", "view")
    assert cells["matmul"]["tiny"] == ("own", "matmul")
    assert cells["matmul"]["library"] == ("own", "gemm")
    assert cells["reduce_sum"]["library"] == ("own", "sum_as_gemm")
    assert cells["concatenate"]["library"] == ("own", "concat_in_place")
    assert cells["sin"]["tiny"] == ("flag", "elementwise")
    assert cells["reshape"]["tiny"] == ("flag", "view")
    assert cells["cumsum"]["tiny"][0] == "refused"
    assert cells["sin"]["library"][0] == "n/a"


# ------------------------------------------------------------------ the memory profile
def test_memory_profile_of_a_plan_indexing_with_new_axes():
    """``mu[:, None, None, :]`` is a library step the CuPy runner gets as a view (its key
    holds new axes); the only value written is the output of the one region."""
    f = lambda x, mu: np.exp(-np.sum((x - mu[:, None, None, :]) ** 2, axis=0))  # noqa: E731
    plan = plan_graph(dg.trace(f, np.ones((3, 4, 4, 4)), np.ones((3, 4))))
    assert plan.library_steps[0].eqn.prim.name == "getitem"
    prof = memory_profile(plan)
    assert prof["materialised"] == prof["peak"] == 4 * 4 * 4 * 8
    assert prof["large"] == [(4, 4, 4)]


def test_a_memory_budget_on_a_program_indexing_with_new_axes():
    """``dg.laplacian(memory_budget=...)`` sizes its chunks on the plan's memory profile,
    which failed with a TypeError on ``x[:, None]``. f = (sum x²)², so Δf = (8 + 4n) sum x²."""
    f = lambda x: np.sum((x[:, None] * x[None, :]) ** 2)  # noqa: E731
    x = np.random.default_rng(0).standard_normal(6)
    want = (8 + 4 * x.size) * np.sum(x ** 2)
    np.testing.assert_allclose(dg.laplacian(f, memory_budget=1000)(x), want, rtol=1e-12)
