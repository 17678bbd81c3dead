"""Graph -> text (one line per equation, with shapes and dtypes), networkx and DOT."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np

from .errors import DualgpuError
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
        from .rules.shape import key_to_source

        return "[" + key_to_source(v, [f"i{j}" for j in range(8)]) + "]"
    return f"{k}={v}"


def format_graph(graph: Graph) -> str:
    """A readable listing: a header with the inputs, one line per equation, the outputs.

    Example (``dg.trace(lambda x: np.sum(np.sin(x) ** 2), x)``)::

        { lambda a:float64[3] .
          t0:float64[3] = sin a
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
    lines = [f'digraph "{graph.name}" {{', "  rankdir=TB;", '  node [fontname="Helvetica"];']
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


def render(graph: Graph, path: str) -> str:
    """Write a picture of the graph through Graphviz's ``dot``; returns ``path``."""
    exe = shutil.which("dot")
    if exe is None:
        raise DualgpuError("rendering needs Graphviz's 'dot' program on PATH "
                           "(apt-get install graphviz); graph.to_dot() gives the text")
    fmt = path.rsplit(".", 1)[-1] if "." in path else "svg"
    subprocess.run([exe, f"-T{fmt}", "-o", path], input=to_dot(graph).encode(), check=True)
    return path


