"""The op x interpreter matrix (dualgpu/tools/op_matrix.py, docs/op_matrix.md): the checked-in page
is current, and no built-in op lacks what its kind needs. This one table replaces the
per-interpreter completeness tests: a new op shows in the page (regenerate it with
``make op-matrix``), and one that falls back or is refused where it must not fails here."""
from __future__ import annotations

from pathlib import Path

import pytest

from dualgpu.tools.op_matrix import INTERPRETERS, builtin_ops, coverage, matrix_markdown

PAGE = Path(__file__).resolve().parents[2] / "docs" / "op_matrix.md"
OPS = builtin_ops()


def test_the_page_is_current():
    assert PAGE.read_text() == matrix_markdown(), (
        "docs/op_matrix.md is out of date: run `make op-matrix` and read the diff")


@pytest.mark.parametrize("name", sorted(OPS))
def test_no_builtin_op_lacks_a_rule(name):
    cells = coverage(OPS[name])
    assert set(cells) == set(INTERPRETERS)
    for interpreter in ("jvp", "vjp"):   # differentiable ops have both derivatives
        assert cells[interpreter][0] != "refused", (name, interpreter, cells[interpreter])
    assert cells["vmap"][0] != "fallback", f"{name} is batched by the per-example loop"
    assert cells["export"] != ("refused", "no standalone function"), (
        f"{name} is called as ops.{name} in generated source but has no defstandalone")
    if OPS[name].kind == "elementwise" and cells["kernel"][0] == "refused":
        # only where CUDA or C has no function (digamma, polygamma, betainc, gammainc, the
        # inverse error functions, Bessel's of real order), its values are not SciPy's to the
        # ulp (gamma; j0, j1, yn: hundreds of ulps at large x, 0 for NaN at inf), or values
        # are complex
        assert name in {"digamma", "polygamma", "betainc", "gammainc", "gammaincc", "gamma",
                        "erfinv", "erfcinv", "i0", "i1", "j0", "j1", "jv", "yn", "iv", "ive",
                        "real", "imag", "conj"}, name


def test_a_users_op_is_not_in_the_matrix():
    import numpy as np

    import dualgpu as dg
    from dualgpu.core.primitives import REGISTRY, same_as_first

    dg.defprim("matrix_probe_op", lambda xp, x: x, same_as_first)
    try:
        assert "matrix_probe_op" not in builtin_ops()
        assert coverage(REGISTRY["matrix_probe_op"])["vmap"] == ("fallback", "per-example loop")
        assert np.array_equal(dg.vmap(lambda x: REGISTRY["matrix_probe_op"](x))(np.ones(2)),
                              np.ones(2))
    finally:
        del REGISTRY["matrix_probe_op"]


def test_linear_and_multilinear_rules_are_flags_of_the_op():
    """deflinear and defmultilinear state the op's property as a flag (the interpreters ask
    the flag, never the op's name): every op whose JVP they made carries it."""
    from dualgpu.core.flags import Flag
    from dualgpu.core.primitives import REGISTRY

    for name, prim in REGISTRY.items():
        made_by = getattr(prim.jvp, "__qualname__", "").split(".")[0]
        if made_by == "deflinear":
            assert prim.has(Flag.LINEAR), name
        if made_by == "defmultilinear":
            assert prim.has(Flag.MULTILINEAR), name
    assert REGISTRY["multiply"].has(Flag.MULTILINEAR)
    assert REGISTRY["matmul"].has(Flag.MULTILINEAR)
