"""What every op has, interpreter by interpreter: the op x interpreter matrix of
docs/op_matrix.md (``make op-matrix`` writes it; tests/ops/test_op_matrix.py checks that the
file is current and that no built-in op lacks what it needs).

Each cell is ``(how, detail)``: ``how`` is ``"own"`` (a rule or a lowering the op declares),
``"flag"`` (the interpreter's rule for the op's kind), ``"fallback"`` (a generic way that is
exact but slower: the per-example loop, the nested JVP), ``"refused"`` (a clear error, the
reason in ``detail``) or ``"n/a"``.

Example::

    >>> cells = coverage(dg.REGISTRY["matmul"])
    >>> cells["vmap"], cells["laplacian"][0]
    (('own', ''), 'own')
    >>> coverage(dg.REGISTRY["sin"])["vmap"]
    ('flag', 'elementwise')
    >>> cells["tiny"], cells["library"]   # its lowerings (deflowering in dualgpu/ops/products.py)
    (('own', 'matmul'), ('own', 'gemm'))
"""
from __future__ import annotations

from ..core.flags import Flag
from ..core.primitives import NON_DIFFERENTIABLE, REGISTRY, Primitive
from ..transforms.laplacian import rule_kind
from ..transforms.sparsity import rule_kind as sparsity_rule_kind
from ..transforms.taylor import rule_kind as taylor_rule_kind
from ..transforms.vmap import rule_for

INTERPRETERS = ("jvp", "vjp", "vmap", "separability", "laplacian", "taylor", "sparsity", "kernel",
                "tiny", "view", "library", "export")
_KINDS = (Flag.ELEMENTWISE, Flag.REDUCTION, Flag.SCAN)


def _kind(prim: Primitive) -> str | None:
    return next((k for k in _KINDS if prim.has(k)), None)


def _derivative(prim: Primitive, rule) -> tuple[str, str]:
    if prim.name in NON_DIFFERENTIABLE:
        return ("n/a", "not differentiable")
    if prim.partials is not None:
        return ("flag", "partials")
    if rule is None:
        return ("refused", "no rule")
    return ("own", "")


def _vmap(prim: Primitive) -> tuple[str, str]:
    if prim.rule("vmap") is not None:
        return ("own", "")
    if rule_for(prim).__name__ == "loop_rule":
        return ("fallback", "per-example loop")
    return ("flag", _kind(prim) or "")


def _separability(prim: Primitive) -> tuple[str, str]:
    if prim.rule("separability") is not None:
        return ("own", "")
    if prim.has(Flag.IGNORES_VALUES):
        return ("flag", "ignores values")
    kind = _kind(prim)
    if kind is not None:
        return ("flag", kind)
    return ("refused", "couples instances (no rule)")


def _laplacian(prim: Primitive) -> tuple[str, str]:
    if prim.name in NON_DIFFERENTIABLE:
        return ("n/a", "not differentiable")
    kind = rule_kind(prim)
    return {"own": ("own", ""), "linear": ("flag", "linear"), "partials": ("flag", "partials"),
            "fallback": ("fallback", "nested JVP")}[kind]


def _taylor(prim: Primitive) -> tuple[str, str]:
    if prim.name in NON_DIFFERENTIABLE:
        return ("n/a", "not differentiable")
    kind = taylor_rule_kind(prim)
    return {"own": ("own", ""), "linear": ("flag", "linear"), "partials": ("flag", "partials"),
            "fallback": ("fallback", "nested JVP")}[kind]


def _sparsity(prim: Primitive) -> tuple[str, str]:
    kind = sparsity_rule_kind(prim)
    if kind is None:
        return ("refused", "no sparsity rule")
    if kind == "no derivative":
        return ("n/a", "not differentiable")
    return ("own", "") if kind == "own" else ("flag", kind)


def _kernel(prim: Primitive) -> tuple[str, str]:
    if prim.has(Flag.ELEMENTWISE):
        return ("own", "C form") if prim.has_c_form else ("refused", "no C form: a "
                                                             "library call")
    if prim.has(Flag.LIBRARY):
        return ("n/a", "library call")
    form = prim.lowering("kernel")
    if form is not None:
        return ("own", form.replace("_", " ") + " (of slices)")
    kind = next((k for k in (Flag.REDUCTION, Flag.SCAN, Flag.VIEW) if prim.has(k)), None)
    return ("flag", kind) if kind is not None else ("n/a", "library call")


def _is_reshape(prim: Primitive) -> bool:
    return prim.has(Flag.VIEW) and not prim.has(Flag.ELEMENTWISE)


def _tiny(prim: Primitive) -> tuple[str, str]:
    if prim.lowering("view") is not None:
        return ("own", "view")
    if _is_reshape(prim):
        return ("flag", "view")
    form = prim.lowering("tiny")
    if form is not None:
        return ("own", form)
    if prim.has(Flag.REDUCTION):
        return ("flag", "reduction")
    if prim.has(Flag.ELEMENTWISE):
        return ("flag", "elementwise") if prim.has_c_form else ("refused", "no C form")
    return ("refused", "no tiny form")


def _view(prim: Primitive) -> tuple[str, str]:
    form = prim.lowering("view")
    if form is not None:
        return ("own", form)
    return ("flag", "reshape") if _is_reshape(prim) else ("n/a", "")


def _library(prim: Primitive) -> tuple[str, str]:
    form = prim.lowering("library")
    return ("own", form) if form is not None else ("n/a", "")


def _export(prim: Primitive) -> tuple[str, str]:
    refused = prim.standalone_refused.get("numpy")
    if refused is not None:
        return ("refused", refused)
    if prim.standalone:
        cupy = prim.standalone_refused.get("cupy")
        return ("own", "function" + (f"; CuPy refused: {cupy}" if cupy else ""))
    py = prim.py
    if py is None or (isinstance(py, str) and py.startswith("ops.")):
        return ("refused", "no standalone function")
    return ("flag", "inline")


def coverage(prim: Primitive) -> dict[str, tuple[str, str]]:
    """The cell of ``prim`` for each interpreter of :data:`INTERPRETERS`."""
    return {"jvp": _derivative(prim, prim.jvp), "vjp": _derivative(prim, prim.vjp),
            "vmap": _vmap(prim), "separability": _separability(prim), "laplacian": _laplacian(prim),
            "taylor": _taylor(prim), "sparsity": _sparsity(prim), "kernel": _kernel(prim),
            "tiny": _tiny(prim),
            "view": _view(prim), "library": _library(prim), "export": _export(prim)}


def builtin_ops() -> dict[str, Primitive]:
    """The registry's ops, without the users' (custom ops, defprim of a test)."""
    return {n: p for n, p in REGISTRY.items()
            if not getattr(p, "custom", False) and p.impl.__module__.startswith("dualgpu.")}


def _cell(how: str, detail: str) -> str:
    mark = {"own": "own", "flag": "by flag", "fallback": "fallback", "refused": "refused",
            "n/a": "–"}[how]
    if how == "n/a":
        return detail or mark
    return f"{mark}: {detail}" if detail else mark


def matrix_markdown() -> str:
    """docs/op_matrix.md: one row per built-in op, one column per interpreter."""
    ops = builtin_ops()
    lines = [
        "# Ops and interpreters",
        "",
        "Generated by `make op-matrix` (`dualgpu/tools/op_matrix.py`); "
        "tests/ops/test_op_matrix.py fails when it is out of date. Each cell says how an "
        "interpreter handles the op: **own** "
        "(a rule the op declares, beside its derivatives in `dualgpu/rules/` or its "
        "declaration in `dualgpu/ops/`), **by flag** (the interpreter's rule for the op's "
        "kind), **fallback** (exact but generic: vmap's per-example loop, the Laplacian's "
        "nested JVP, Taylor mode's nested JVPs along the curve), **refused** (a clear error, "
        "with the reason) or – (does not apply).",
        "",
        "Interpreters: `jvp`, `vjp` (derivatives), `vmap` (batching), `separability` (the "
        "proof behind `batch_axes`), `laplacian` (the forward Laplacian and Hessian diagonal), "
        "`taylor` (Taylor mode of any order: `dg.jet`, `dg.differential_operator`), "
        "`sparsity` (the Jacobian and Hessian patterns of `dg.sparse_jacobian`), "
        "`kernel` (the fused GPU kernels), `tiny` (a tiny program as one kernel), `view` "
        "(strides over the input's memory, in kernels and as a CuPy library step), `library` "
        "(the CuPy launcher's own way to run the op as a library step; – : its "
        "implementation), `export` (`dg.export`'s standalone module). The forms of `tiny`, "
        "`view` and `library` an op declares are its lowerings (`deflowering` beside the "
        "op in `dualgpu/ops/`).",
        "",
        "| op | kind | " + " | ".join(INTERPRETERS) + " |",
        "|" + "---|" * (len(INTERPRETERS) + 2),
    ]
    for name in sorted(ops):
        cells = coverage(ops[name])
        row = [f"`{name}`", ops[name].kind] + [_cell(*cells[i]) for i in INTERPRETERS]
        lines.append("| " + " | ".join(row) + " |")
    totals = {i: sum(coverage(p)[i][0] == "fallback" for p in ops.values())
              for i in INTERPRETERS}
    lines += ["", f"{len(ops)} ops. Fallbacks: "
              + ", ".join(f"{i} {n}" for i, n in totals.items() if n) + "."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # make op-matrix
    import sys

    sys.stdout.write(matrix_markdown())
