"""Pictures of graphs: DOT text, Graphviz rendering, and rich display in Jupyter."""
import shutil

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.core import pprint

HAS_DOT = shutil.which("dot") is not None


def _graph():
    return dg.trace(dg.hvp(lambda x: np.sum(np.sin(x) ** 2)), np.ones(3), np.ones(3))


def test_to_dot_and_networkx_agree():
    g = _graph()
    dot = g.to_dot()
    assert dot.startswith('digraph "') and dot.rstrip().endswith("}")
    nxg = g.nx
    # DOT draws one edge per operand (networkx merges repeated ones) and literal operands
    operands = sum(len(e.inputs) for e in g.eqns) + sum(len(e.outs) for e in g.eqns)
    assert dot.count("->") == operands >= nxg.number_of_edges()
    assert sum(1 for _, d in nxg.nodes(data=True) if d["kind"] == "eqn") == len(g.eqns)


def _edges_into(dot, label):
    """The edges into the first op box whose label starts with ``label``."""
    node = next(line.split()[0] for line in dot.splitlines()
                if "shape=box" in line and f'label="{label}' in line)
    return [line for line in dot.splitlines() if f"-> {node}" in line]


def test_pictures_show_operands_params_roles_and_a_legend():
    f = lambda x: np.sum(1.0 - x[1:] * x[1:])  # noqa: E731
    x = np.ones(4)
    dot = dg.trace(dg.grad_and_hvp(f, return_value=True), x, x).to_dot()
    assert 'label="1.0"' in dot                              # the literal of 1.0 - ...
    assert 'label="getitem\\n[1:]"' in dot                  # the slice is shown
    assert len(_edges_into(dot, "multiply")) == 2           # t * t: two operands
    assert '[label="0"]' in dot and '[label="1"]' in dot    # numbered by position
    for role in ("= value", "= grad x", "= H·v x"):
        assert role in dot
    assert "cluster_legend" in dot


def test_long_programs_run_left_to_right_and_plans_draw_kernels():
    from dualgpu.fusion import plan_graph

    def steps(x):
        for _ in range(20):
            x = x + 0.1 * np.sin(x)
        return np.sum(x)

    g = dg.trace(dg.grad(steps), np.ones(8))
    assert "rankdir=LR" in g.to_dot()
    assert "rankdir=TB" in _graph().to_dot()
    dot = g.to_dot(plan=plan_graph(g))
    assert "subgraph cluster_kernel" in dot and 'label="kernel' in dot


def test_parameter_text_is_escaped():
    g = dg.trace(lambda x: np.sum(np.reshape(x, (2, 2))), np.ones(4))
    g.name = 'a"b\nc'
    dot = g.to_dot()
    # one line: the quote is escaped and the newline is a DOT line break, not a raw newline
    assert dot.splitlines()[0] == 'digraph "a\\"b\\nc" {'


def test_render_dot_text_needs_no_graphviz(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    path = tmp_path / "g.dot"
    assert _graph().render(str(path)) == str(path)
    assert path.read_text().startswith("digraph")


def test_render_without_graphviz_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(dg.DualgpuError, match="Graphviz"):
        _graph().render(str(tmp_path / "g.svg"))


def test_notebook_display_without_graphviz(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    g = _graph()
    assert g._repr_svg_() is None              # Jupyter falls back to _repr_html_
    html = g._repr_html_()
    assert html.startswith("<pre>") and "x_dot" in html


def test_quotes_in_names_are_escaped():
    def f(x):
        return np.sum(x)

    f.__name__ = 'we"ird'
    dot = dg.trace(f, np.ones(2)).to_dot()
    assert dot.startswith('digraph "we\\"ird"')


@pytest.mark.skipif(not HAS_DOT, reason="needs Graphviz's dot")
def test_render_svg_and_png(tmp_path):
    g = _graph()
    svg = tmp_path / "g.svg"
    g.render(str(svg))
    assert "<svg" in svg.read_text()
    png = tmp_path / "g.png"
    g.render(str(png))
    assert png.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(dg.DualgpuError, match="format"):
        g.render(str(tmp_path / "g.notaformat"))


@pytest.mark.skipif(not HAS_DOT, reason="needs Graphviz's dot")
def test_notebook_display_with_graphviz():
    g = _graph()
    svg = g._repr_svg_()
    assert svg.startswith("<svg") and "</svg>" in svg
    html = g._repr_html_()
    assert "<svg" in html and "<pre>" in html      # picture above the listing


def test_large_graphs_display_as_text(monkeypatch):
    monkeypatch.setattr(pprint, "SVG_MAX_EQNS", 2)
    g = _graph()
    assert g._repr_svg_() is None
    assert g._repr_html_().startswith("<pre>")


def _long_hvp():
    """An HVP program of about 66 equations (a small MLP loss)."""
    def loss(w, X):
        h = np.cos(X @ w[:12].reshape(3, 4))
        return np.mean((np.sin(h) @ w[12:16] - 1.0) ** 2) + 0.1 * np.sum(w ** 2)

    return dg.trace(dg.hvp(loss), np.ones(16), np.ones((5, 3)), np.ones(16))


def _size(dot):
    import re

    w, h = re.search(r'graph \[size="([0-9.]+),([0-9.]+)"\]', dot).groups()
    return float(w), float(h)


def test_pictures_are_sized_to_the_graph():
    small = _graph()
    assert _size(small.to_dot()) == (9.0, 14.0)          # a page: small graphs fit it
    g = _long_hvp()
    assert len(g.eqns) > 40 and "rankdir=LR" in g.to_dot()
    w, h = _size(g.to_dot())
    # room along the edges for every op and value at a readable scale, not a 9-inch strip
    assert w >= 0.8 * len(g.eqns) and h >= 14.0


def test_literal_operands_are_drawn_as_constants():
    dot = dg.trace(lambda x: np.sum(1.5 - x * x), np.ones(3)).to_dot()
    literal = next(line for line in dot.splitlines() if 'label="1.5"' in line)
    legend = next(line for line in dot.splitlines() if 'label="constant' in line)
    fill = 'fillcolor="{}"'.format(pprint._COLORS["const"])
    assert fill in literal and fill in legend
    assert "style=filled" in literal and "plaintext" not in dot


@pytest.mark.skipif(not HAS_DOT, reason="needs Graphviz's dot")
def test_a_long_program_renders_readably(tmp_path):
    import re

    svg = tmp_path / "hvp.svg"
    g = _long_hvp()
    g.render(str(svg))
    w, h = (float(v) for v in re.search(r'width="([0-9.]+)pt" height="([0-9.]+)pt"',
                                         svg.read_text()).groups())
    assert h >= 150 and w >= 20 * len(g.eqns)  # points: not a 648x110 (864x147 px) strip
