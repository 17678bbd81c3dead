"""Graph -> text (one line per equation, with shapes and dtypes), networkx and DOT."""
from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import DualgpuError
from .indexing import key_to_source
from .ir import Atom, Eqn, Graph, Literal, Var


class Namer:
    """Short names for variables: inputs a, b, c..., then t0, t1, ...; constants c0, c1..."""

    def __init__(self, graph: Graph):
        self.names: dict[int, str] = {}
        labels = graph.input_names or []
        for i, v in enumerate(graph.inputs):
            self.names[v.id] = labels[i] if i < len(labels) else _letters(i)
        for i, c in enumerate(graph.consts):
            self.names[c.id] = f"c{i}"
        self.count = 0

    def __call__(self, a: Atom) -> str:
        if isinstance(a, Literal):
            return _literal(a.value)
        name = self.names.get(a.id)
        if name is None:
            name = self.names[a.id] = f"t{self.count}"
            self.count += 1
        return name


def _letters(i: int) -> str:
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(ord("a") + r) + s
    return s


def _literal(v: Any) -> str:
    if isinstance(v, float):
        return repr(v)
    return repr(v)


def param_str(k: str, v: Any) -> str:
    if isinstance(v, np.dtype):
        v = v.name
    if k == "key":
        return "[" + key_to_source(v, [f"i{j}" for j in range(8)]) + "]"
    return f"{k}={v}"


def format_graph(graph: Graph) -> str:
    """A readable listing: a header with the inputs, one line per equation, the outputs.

    Example::

        >>> print(format_graph(dg.trace(lambda x: np.sum(np.sin(x) ** 2), np.ones(3))))
        { lambda x:float64[3] .
          t0:float64[3] = sin x
          t1:float64[3] = multiply t0 t0
          t2:float64[] = reduce_sum t1 axes=(0,)
          in ( t2 ) }
    """
    name = Namer(graph)
    ins = " ".join(f"{name(v)}:{v.aval.str_short()}" for v in graph.inputs)
    lines = [f"{{ lambda {ins} ."]
    consts = graph.consts
    if consts:
        lines.append("  consts " + " ".join(
            f"{name(c)}:{c.aval.str_short()}" for c in consts))
    for eqn in graph.eqns:
        outs = " ".join(f"{name(v)}:{v.aval.str_short()}" for v in eqn.outs)
        args = " ".join(name(a) for a in eqn.inputs)
        params = " ".join(param_str(k, v) for k, v in eqn.params.items())
        lines.append(f"  {outs} = {eqn.prim.name} {args}" + (f" {params}" if params else ""))
    lines.append("  in ( " + " ".join(name(a) for a in graph.outputs) + " ) }")
    return "\n".join(lines)


def to_networkx(graph: Graph) -> Any:  # a networkx.DiGraph
    import networkx as nx

    g = nx.DiGraph(name=graph.name)
    name = Namer(graph)
    for v in graph.inputs:
        g.add_node(name(v), kind="input", shape=tuple(v.shape), dtype=v.dtype.name)
    for c in graph.consts:
        g.add_node(name(c), kind="const", shape=tuple(c.shape), dtype=c.dtype.name)
    for i, eqn in enumerate(graph.eqns):
        node = f"eqn{i}:{eqn.prim.name}"
        g.add_node(node, kind="eqn", prim=eqn.prim.name,
                   params={k: str(v) for k, v in eqn.params.items()})
        for a in eqn.inputs:
            if isinstance(a, Var):
                g.add_edge(name(a), node)
        for v in eqn.outs:
            g.add_node(name(v), kind="var", shape=tuple(v.shape), dtype=v.dtype.name)
            g.add_edge(node, name(v))
    for i, a in enumerate(graph.outputs):
        if isinstance(a, Var):
            g.nodes[name(a)]["output"] = i
    return g


_LONG = 30  # programs longer than this are laid out left to right
# Graphviz scales a drawing larger than the graph's "size" down to it: pictures fit a page
# (inches, width x height) unless the graph is large, and are never scaled below _MIN_SCALE
# of their estimated natural extent (a long program is not drawn as an unreadable strip).
_PAGE = (9.0, 14.0)
_MIN_SCALE = 0.7
# the inches a rank (a step along the edges) and a node beside another take, by direction
_RANK_STEP = {"TB": 1.1, "LR": 1.7}
_NODE_STEP = {"TB": 1.4, "LR": 0.85}
_COLORS = {"input": "#c8e6c9", "const": "#fff9c4", "output": "#bbdefb", "var": "white",
           "op": "#eeeeee"}


def _dot_text(text: str) -> str:
    """Text as the inside of a DOT string: a name or a value is data, quoted and escaped;
    a newline becomes a line break of the label, other control characters a space."""
    out = str(text).replace("\\", "\\\\").replace('"', '\\"')
    out = "".join(c if c.isprintable() or c == "\n" else " " for c in out)
    return out.replace("\n", "\\n")


def _op_label(eqn: Eqn, limit: int = 48) -> str:
    """The op and its parameters, one per line, each cut to ``limit`` characters."""
    lines = [eqn.prim.name]
    for k, v in eqn.params.items():
        text = param_str(k, v)
        lines.append(text if len(text) <= limit else text[:limit - 1] + "…")
    return "\n".join(lines)


def _ranks(graph: Graph) -> tuple[int, int]:
    """(depth, breadth) of the layered drawing: how many ranks (values and ops alternate
    along the edges) and the most nodes on one rank (literal operands and the legend
    included)."""
    level: dict[int, int] = {}
    per_rank: dict[int, int] = {0: len(graph.inputs) + len(graph.consts) + 4}  # + the legend
    depth = 1
    for eqn in graph.eqns:
        ins = [a for a in eqn.inputs if not isinstance(a, Literal)]
        at = 1 + max((level.get(a.id, 0) for a in ins), default=0)
        per_rank[at] = per_rank.get(at, 0) + 1
        lits = len(eqn.inputs) - len(ins)
        if lits:
            per_rank[at - 1] = per_rank.get(at - 1, 0) + lits
        for v in eqn.outs:
            level[v.id] = at + 1
            per_rank[at + 1] = per_rank.get(at + 1, 0) + 1
        depth = max(depth, at + 2)
    return depth, max(per_rank.values())


def figure_size(graph: Graph) -> tuple[float, float]:
    """The bound (width, height, inches) a picture of ``graph`` is drawn within: a page for
    small graphs; for larger ones, their estimated extent (rank by rank) at no less than
    ``_MIN_SCALE``, so that the text stays readable.

    >>> figure_size(dg.trace(np.sin, np.ones(2)))
    (9.0, 14.0)
    """
    rank = "LR" if len(graph.eqns) > _LONG else "TB"
    depth, breadth = _ranks(graph)
    along = depth * _RANK_STEP[rank] * _MIN_SCALE
    across = breadth * _NODE_STEP[rank] * _MIN_SCALE
    w, h = (along, across) if rank == "LR" else (across, along)
    return round(max(_PAGE[0], w), 1), round(max(_PAGE[1], h), 1)


def to_dot(graph: Graph, plan: Any = None) -> str:
    """DOT text: values as ellipses (inputs green, constants yellow, outputs blue and named
    by their role: value, grad, H·v), ops as boxes with their parameters, literal operands as
    constants (yellow, labelled by their value), one edge per operand (``t0 * t0`` has two,
    numbered by position) and a legend. Long programs run left to right, in a picture sized
    to the graph (:func:`figure_size`); with a fusion ``plan``, the ops each generated
    kernel evaluates are drawn in one cluster.

    >>> dot = dg.trace(lambda x: np.sum(1.0 - x * x), np.ones(3)).to_dot()
    >>> dot.count('label="1.0"'), dot.count("-> n")   # the literal; x * x has 2 edges
    (1, 8)
    """
    name = Namer(graph)
    title = _dot_text(graph.name)
    rank = "LR" if len(graph.eqns) > _LONG else "TB"
    width, height = figure_size(graph)
    lines = [f'digraph "{title}" {{', f"  rankdir={rank};",
             f'  graph [size="{width},{height}"];',
             '  node [fontname="Helvetica", fontsize=11];',
             '  edge [fontname="Helvetica", fontsize=9, color="#555555"];']
    ids: dict[tuple[Any, ...], str] = {}
    roles = _output_roles(graph, name)

    def node(key: tuple[Any, ...], label: str, shape: str, kind: str) -> str:
        if key in ids:
            return ids[key]
        ids[key] = f"n{len(ids)}"
        color = _COLORS["output"] if key in roles else _COLORS[kind]
        if key in roles:
            label = f"{label}\n= {roles[key]}"
        lines.append(f'  {ids[key]} [shape={shape}, style=filled, fillcolor="{color}", '
                     f'label="{_dot_text(label)}"];')
        return ids[key]

    def value(a: Var, kind: str) -> str:
        return node(("v", a.id), f"{name(a)}\n{a.aval.str_short()}", "ellipse", kind)

    for v in graph.inputs:
        value(v, "input")
    for c in graph.consts:
        value(c, "const")
    ops = []
    for k, eqn in enumerate(graph.eqns):
        op = node(("e", k), _op_label(eqn), "box", "op")
        ops.append(op)
        numbered = len(eqn.inputs) > 1
        for pos, a in enumerate(eqn.inputs):
            src = (node(("lit", k, pos), _literal(a.value), "ellipse", "const")
                   if isinstance(a, Literal) else value(a, "var"))
            label = f' [label="{pos}"]' if numbered else ""
            lines.append(f"  {src} -> {op}{label};")
        for v in eqn.outs:
            lines.append(f"  {op} -> {value(v, 'var')};")
    if plan is not None:
        lines += _plan_clusters(graph, plan, ops)
    lines += _legend()
    lines.append("}")
    return "\n".join(lines)


def _output_roles(graph: Graph, name: Namer) -> dict[tuple[str, int], str]:
    """Value key -> the role of that output (``graph.output_names`` or ``out i``)."""
    names = getattr(graph, "output_names", None) or []
    roles: dict[tuple[str, int], str] = {}
    for i, a in enumerate(graph.outputs):
        if isinstance(a, Var):
            role = names[i] if i < len(names) else f"out {i}"
            key = ("v", a.id)
            roles[key] = f"{roles[key]}, {role}" if key in roles else role
    return roles


def _plan_clusters(graph: Graph, plan: Any, ops: list[str]) -> list[str]:
    index = {id(e): k for k, e in enumerate(graph.eqns)}
    lines = []
    for r in plan.regions:
        members = [ops[index[id(e)]] for e in r.eqns if id(e) in index]
        if not members:
            continue
        lines.append(f"  subgraph cluster_kernel{r.index} {{")
        lines.append(f'    label="kernel {r.index}"; style=dashed; color="#1565c0";')
        lines.append("    " + "; ".join(members) + ";")
        lines.append("  }")
    return lines


def _legend() -> list[str]:
    entries = [("input", "ellipse", "input"), ("constant, literal", "ellipse", "const"),
               ("op (params)", "box", "op"), ("output", "ellipse", "output")]
    lines = ["  subgraph cluster_legend {", '    label="legend"; style=dotted; fontsize=9;']
    for i, (text, shape, kind) in enumerate(entries):
        lines.append(f'    legend{i} [shape={shape}, style=filled, fillcolor="{_COLORS[kind]}", '
                     f'label="{text}", fontsize=9];')
    lines.append("  }")
    return lines


def _dot_program() -> str:
    exe = shutil.which("dot")
    if exe is None:
        raise DualgpuError("rendering needs Graphviz's 'dot' program on PATH "
                           "(apt-get install graphviz, brew install graphviz or conda install "
                           "graphviz); graph.to_dot() gives the DOT text without it")
    return exe


def _run_dot(graph: Graph, fmt: str, path: str | None = None) -> bytes:
    cmd = [_dot_program(), f"-T{fmt}"] + (["-o", path] if path else [])
    try:
        done = subprocess.run(cmd, input=to_dot(graph).encode(), capture_output=True,
                              timeout=60)
    except subprocess.TimeoutExpired:
        raise DualgpuError(f"Graphviz took over 60 s to lay out {len(graph.eqns)} "
                           "equations; render a smaller graph") from None
    if done.returncode != 0:
        msg = " ".join(done.stderr.decode(errors="replace").split())
        raise DualgpuError(f"Graphviz failed to render format {fmt!r}: {msg}")
    return done.stdout


def render(graph: Graph, path: str) -> str:
    """Write a picture of the graph through Graphviz's ``dot``; returns ``path``.

    The format is the file suffix (``svg``, ``png``, ``pdf``...); ``.dot``/``.gv`` write the
    DOT text itself and need no Graphviz.

    Example::

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "graph.dot")   # .svg with Graphviz
        >>> dg.trace(lambda x: np.sin(x), np.ones(2)).render(path) == path
        True
    """
    fmt = path.rsplit(".", 1)[-1].lower() if "." in path else "svg"
    if fmt in ("dot", "gv"):
        with open(path, "w") as fh:
            fh.write(to_dot(graph) + "\n")
        return path
    _run_dot(graph, fmt, path)
    return path


# Graphs beyond this many equations are shown as text in notebooks (layout gets slow).
SVG_MAX_EQNS = 400


def to_svg(graph: Graph) -> str | None:
    """SVG text of the graph through Graphviz, or ``None`` when ``dot`` is not installed,
    fails, or the graph is too large to lay out quickly (``SVG_MAX_EQNS``)."""
    if shutil.which("dot") is None or len(graph.eqns) > SVG_MAX_EQNS:
        return None
    try:
        svg = _run_dot(graph, "svg").decode()
    except DualgpuError:
        return None
    start = svg.find("<svg")  # drop the XML prolog and DOCTYPE: embeddable in HTML
    return svg[start:] if start >= 0 else svg


def to_html(graph: Graph) -> str:
    """HTML for notebooks: the picture (when Graphviz is available) above the listing."""
    import html

    listing = f"<pre>{html.escape(format_graph(graph))}</pre>"
    svg = to_svg(graph)
    if svg is None:
        return listing
    return f"<div>{svg}<details><summary>listing</summary>{listing}</details></div>"


def _install_on_graph() -> None:
    """The printer's views of a graph, as its methods."""
    def _str(self: Graph) -> str:
        return format_graph(self)

    def _repr_html_(self: Graph) -> str:
        """Jupyter: the picture (Graphviz installed) above the listing, else the listing."""
        return to_html(self)

    def _repr_svg_(self: Graph) -> str | None:
        """Jupyter: an SVG picture when Graphviz's ``dot`` is installed (else None, and
        Jupyter falls back to ``_repr_html_``)."""
        return to_svg(self)

    def nx(self: Graph) -> Any:
        """The graph as a ``networkx.DiGraph``: a node per variable and per equation."""
        return to_networkx(self)

    def _to_dot(self: Graph, plan: Any = None) -> str:
        """DOT text for Graphviz (``dot -Tsvg``); ``plan``: a fusion plan whose kernels are
        drawn as clusters."""
        return to_dot(self, plan)

    def _render(self: Graph, path: str) -> str:
        """Render through the Graphviz ``dot`` program to ``path`` (format from the
        suffix)."""
        return render(self, path)

    views: dict[str, Callable[..., Any] | property] = {
        "__str__": _str, "_repr_html_": _repr_html_, "_repr_svg_": _repr_svg_,
        "nx": property(nx), "to_dot": _to_dot, "render": _render}
    for name, view in views.items():  # setattr: ir.py declares them for the type checker
        setattr(Graph, name, view)


_install_on_graph()
