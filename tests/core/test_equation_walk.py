"""One equation walk (core/interpret.py) for every interpreter: what each records carries
the user's line, and the enclosing trace's line is restored afterwards, on error too."""
import pathlib
import re

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.core.interpret import eval_graph, walk
from dualgpu.core.trace import current_builder
from dualgpu.transforms import hvp_graph, jvp_graph, vjp_graph
from dualgpu.transforms.laplacian import curvature_graph
from dualgpu.transforms.taylor import jet_graph
from dualgpu.transforms.vmap import batch_graph

PACKAGE = pathlib.Path(dg.__file__).parent


def f(x):
    return np.sum(np.sin(x) * x)


G = dg.trace(f, np.ones(3))
INTERPRETERS = {
    "eval": lambda: eval_graph(G, [np.ones(3)]),
    "jvp": lambda: jvp_graph(G),
    "vjp": lambda: vjp_graph(G),
    "hvp": lambda: hvp_graph(G, [0]),
    "vmap": lambda: batch_graph(G, [0], 2),
    "laplacian": lambda: curvature_graph(G, [True]),
    "taylor": lambda: jet_graph(G, [True], 3),
}


@pytest.mark.parametrize("name", list(INTERPRETERS))
def test_each_interpreter_leaves_the_enclosing_line_as_it_was(name):
    seen = []

    def outer(x):
        builder = current_builder()
        builder.rule_source = "outer.py:1"
        INTERPRETERS[name]()
        seen.append(builder.rule_source)
        return x * 2

    g = dg.trace(outer, np.ones(3))
    assert seen == ["outer.py:1"]
    assert g.eqns[-1].source == "outer.py:1"  # recorded after the walk: the outer line


def test_a_walk_that_fails_restores_the_enclosing_line():
    def failing(eqn, values, states):
        if eqn.prim.name == "multiply":
            raise RuntimeError("a rule failed")
        return [eqn.prim.bind(*values, **eqn.params)], [None]

    def outer(x):
        builder = current_builder()
        builder.rule_source = "outer.py:7"
        with pytest.raises(RuntimeError):
            walk(G, [x], {}, failing)
        assert builder.rule_source == "outer.py:7"
        return x + 1

    g = dg.trace(outer, np.ones(3))
    assert g.eqns[-1].source == "outer.py:7"


def test_derived_equations_carry_the_users_line():
    jv = jvp_graph(G)
    lines = {e.source for e in G.eqns}
    assert {e.source for e in jv.eqns} <= lines, "a jvp equation lost its user line"


def test_no_module_walks_the_equations_setting_lines_itself():
    """Only the walk (core/interpret.py) and the tracer set the line of what is recorded."""
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in ("core/interpret.py", "core/trace.py"):
            continue
        assert not re.search(r"\.rule_source\s*=", path.read_text()), rel


def test_no_module_imports_another_modules_private_names():
    """The seam is public: a module imports no ``_name`` of another dualgpu module."""
    import ast

    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (
                    node.level > 0 or (node.module or "").startswith("dualgpu")):
                private = [a.name for a in node.names
                           if a.name.startswith("_") and not a.name.startswith("__")]
                assert not private, (path.relative_to(PACKAGE).as_posix(), node.module, private)
