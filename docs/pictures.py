"""Regenerate the pictures of docs/concepts.md (needs Graphviz's ``dot``):

    PYTHONPATH=. python docs/pictures.py
"""
import subprocess
from pathlib import Path

import numpy as np

import dualgpu as dg

IMG = Path(__file__).resolve().parent / "img"

PIPELINE = """digraph pipeline {
  rankdir=LR; node [fontname="Helvetica", shape=box, style="rounded,filled", fillcolor="#eeeeee"];
  f [label="your function\\n(NumPy / CuPy code)", fillcolor="#c8e6c9"];
  g [label="Graph\\n(one line per op)"];
  t [label="transforms\\njvp, vjp, hvp = jvp(vjp)\\nsimplify, separability"];
  py [label="Python source\\n(NumPy)", fillcolor="#bbdefb"];
  cu [label="fused CUDA kernels\\n+ cuBLAS / cuSPARSE calls\\n(CuPy)", fillcolor="#bbdefb"];
  r [label="rule registry\\npartials, JVP, VJP, C expr", shape=note, fillcolor="#fff9c4"];
  f -> g [label=" trace"]; g -> t; r -> t [style=dashed]; t -> py [label=" codegen"];
  t -> cu [label=" fusion + codegen"];
}
"""


def f(x):
    return np.sum(np.sin(x) ** 2)


def main():
    IMG.mkdir(exist_ok=True)
    x = np.ones(3)
    dg.trace(f, x).render(str(IMG / "trace_f.svg"))
    dg.trace(dg.hvp(f), x, x).render(str(IMG / "hvp_f.svg"))
    dg.trace(dg.laplacian(f), x).render(str(IMG / "laplacian_f.svg"))
    subprocess.run(["dot", "-Tsvg", "-o", str(IMG / "pipeline.svg")], input=PIPELINE.encode(),
                   check=True)


if __name__ == "__main__":
    main()
