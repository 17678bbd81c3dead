"""One block per op: every built-in op is declared, and given each of its rules, flags and
lowerings, in one module of the op layer (dualgpu/ops/), so that reading that module's block
tells everything the op does; the rule kits (dualgpu/rules/) only provide helpers."""
import subprocess
import sys

import dualgpu as dg
from dualgpu.core.primitives import REGISTRY


def _built_in_ops():
    # the ops registered by importing dualgpu, in a fresh interpreter (tests declare more)
    names = subprocess.run(
        [sys.executable, "-c", "import dualgpu, sys; from dualgpu.core.primitives import "
         "REGISTRY; sys.stdout.write(' '.join(REGISTRY))"],
        capture_output=True, text=True, check=True).stdout.split()
    return [REGISTRY[n] for n in names]


def test_every_built_in_op_is_one_block_of_the_op_layer():
    ops = _built_in_ops()
    assert len(ops) > 100
    scattered = {p.name: sorted(p.sites) for p in ops
                 if len(p.sites) != 1 or not next(iter(p.sites)).startswith("dualgpu.ops.")}
    assert scattered == {}


def test_the_rule_kits_hold_no_op():
    kits = {m for p in _built_in_ops() for m in p.sites if m.startswith("dualgpu.rules")}
    assert kits == set()


def test_an_op_equipped_by_a_kit_helper_belongs_to_its_caller():
    from dualgpu.rules.common import deflinear

    prim = dg.defprim("block_probe_double", lambda xp, x: 2 * x,
                      lambda avals: avals[0])
    prim.custom = True  # not a built-in op (the registry test's census)
    try:
        deflinear(prim, lambda g, x: 2 * g)
        assert prim.sites == {__name__}
    finally:
        del REGISTRY["block_probe_double"]


def test_the_rule_kits_import_no_op_family_when_loading():
    # the op layer loads in one order (dualgpu/ops/__init__.py): a kit that imported a
    # family at module level could be asked for a helper before it defined it
    import ast
    from pathlib import Path

    kits = Path(dg.__file__).parent / "rules"
    found = []
    for path in sorted(kits.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ops") \
                    and node.level == 2 or isinstance(node, ast.ImportFrom) and \
                    node.level == 2 and node.module is None and any(
                        a.name == "ops" for a in node.names) and path.name != "__init__.py":
                found.append(f"{path.name}:{node.lineno}")
    assert found == []
