"""Turn a graph into a callable for one backend: generated Python on NumPy; on CuPy the
fused-kernel plan of :mod:`dualgpu.codegen.cuda` (with CUDA-graph replay where safe)."""
from __future__ import annotations

import numpy as np

from .codegen.python import compile_python, generate_python
from .ir import Graph

# Global switches (see docs/gpu.md).
config = {"fuse": True, "cuda_graphs": True, "cache_size": 256}


class Executable:
    """A compiled program: ``exe(*arrays) -> list of arrays``; ``exe.source`` shows it."""

    def __init__(self, graph: Graph, backend):
        self.graph = graph
        self.backend = backend
        if backend.is_cupy and config["fuse"]:
            from .codegen.cuda import compile_fused

            self._fn, self.source = compile_fused(graph, backend)
        else:
            self._fn = compile_python(graph, backend.xp)
            self.source = self._fn.__dualgpu_source__

    def __call__(self, *arrays):
        outs = self._fn(*arrays)
        if not self.backend.is_cupy:
            outs = [np.asarray(o) if not isinstance(o, np.ndarray) else o for o in outs]
        return list(outs)


def python_source(graph: Graph) -> str:
    return generate_python(graph)[0]
