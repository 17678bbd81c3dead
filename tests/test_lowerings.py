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
from dualgpu.codegen.cuda import plan_source, region_kernels
from dualgpu.codegen.tiny import tiny_program_kernel, tiny_refusal
from dualgpu.fusion import plan_graph

GOLDEN = Path(__file__).parent / "golden"


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
