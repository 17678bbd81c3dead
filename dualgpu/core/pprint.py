"""Graph -> text (one line per equation, with shapes and dtypes), networkx and DOT."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np

from ..errors import DualgpuError
from .indexing import key_to_source
from .ir import Graph, Literal, Var


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

    def __call__(self, a) -> str:
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


def _literal(v) -> str:
    if isinstance(v, float):
        return repr(v)
    return repr(v)


def _param_str(k, v) -> str:
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
        params = " ".join(_param_str(k, v) for k, v in eqn.params.items())
        lines.append(f"  {outs} = {eqn.prim.name} {args}" + (f" {params}" if params else ""))
    lines.append("  in ( " + " ".join(name(a) for a in graph.outputs) + " ) }")
    return "\n".join(lines)


def to_networkx(graph: Graph):
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


def to_dot(graph: Graph) -> str:
    """DOT text: variables as ellipses (inputs green, outputs blue), equations as boxes."""
    g = to_networkx(graph)
    title = graph.name.replace("\\", "\\\\").replace('"', '\\"')
    lines = [f'digraph "{title}" {{', "  rankdir=TB;", '  node [fontname="Helvetica"];']
    ids = {n: f"n{i}" for i, n in enumerate(g.nodes)}
    for n, data in g.nodes(data=True):
        if data["kind"] == "eqn":
            lines.append(f'  {ids[n]} [shape=box, style=filled, fillcolor="#eeeeee", '
                         f'label="{data["prim"]}"];')
        else:
            shape = ",".join(str(d) for d in data["shape"])
            color = {"input": "#c8e6c9", "const": "#fff9c4"}.get(data["kind"], "white")
            if "output" in data:
                color = "#bbdefb"
            lines.append(f'  {ids[n]} [shape=ellipse, style=filled, fillcolor="{color}", '
                         f'label="{n}\\n{data["dtype"]}[{shape}]"];')
    for u, v in g.edges:
        lines.append(f"  {ids[u]} -> {ids[v]};")
    lines.append("}")
    return "\n".join(lines)


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
    def _str(self) -> str:
        return format_graph(self)

    def _repr_html_(self) -> str:
        """Jupyter: the picture (Graphviz installed) above the listing, else the listing."""
        return to_html(self)

    def _repr_svg_(self) -> str | None:
        """Jupyter: an SVG picture when Graphviz's ``dot`` is installed (else None, and
        Jupyter falls back to ``_repr_html_``)."""
        return to_svg(self)

    def nx(self):
        """The graph as a ``networkx.DiGraph``: a node per variable and per equation."""
        return to_networkx(self)

    def _to_dot(self) -> str:
        """DOT text for Graphviz (``dot -Tsvg``)."""
        return to_dot(self)

    def _render(self, path: str) -> str:
        """Render through the Graphviz ``dot`` program to ``path`` (format from the
        suffix)."""
        return render(self, path)

    Graph.__str__ = _str
    Graph._repr_html_ = _repr_html_
    Graph._repr_svg_ = _repr_svg_
    Graph.nx = property(nx)
    Graph.to_dot = _to_dot
    Graph.render = _render


_install_on_graph()
