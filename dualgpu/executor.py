"""Turn a graph into a callable for one backend: generated Python on NumPy; on CuPy the
fused-kernel plan of :mod:`dualgpu.codegen.cuda` (with CUDA-graph replay where safe).

Switches (see docs/gpu.md), read when a program is built (``fuse``) or called (the rest)::

    dg.config["fuse"] = False                 # CuPy runs the generated Python, op by op
    dg.config["cuda_graphs"] = False          # no CUDA-graph capture and replay
    dg.config["cuda_graph_outputs"] = "reuse" # replay returns its static output buffers
    dg.config["cuda_graph_max_bytes"] = 1 << 22  # larger programs (inputs + outputs) run
                                                 # eagerly: replay would copy them
"""
from __future__ import annotations

import numpy as np

from .codegen.python import compile_python, generate_python
from .ir import Graph

# Global switches (see docs/gpu.md).
config = {"fuse": True, "cuda_graphs": True, "cuda_graph_outputs": "copy",
          "cuda_graph_max_bytes": 1 << 22, "cache_size": 256}


class Executable:
    """A compiled program: ``exe(*arrays) -> list of arrays``; ``exe.source`` shows it.

    On CuPy with ``config["fuse"]``, ``exe.plan`` is the fusion plan
    (:class:`dualgpu.fusion.Plan`); ``exe.graph_runner`` replays it as a CUDA graph.

    Example::

        exe = Executable(dg.trace(lambda x: np.sin(x) * 2, x), backend_of([x]))
        exe(x)      # [array(...)]
    """

    def __init__(self, graph: Graph, backend):
        self.graph = graph
        self.backend = backend
        self.plan = None
        self.graph_runner = None
        if backend.is_cupy and config["fuse"]:
            from .codegen.cuda import compile_fused

            self._fn, self.source = compile_fused(graph, backend)
            self.plan = self._fn.plan
        else:
            self._fn = compile_python(graph, backend.xp)
            self.source = self._fn.__dualgpu_source__
        if backend.is_cupy:
            from .backends.cupy import CudaGraphRunner

            self.graph_runner = CudaGraphRunner(self._fn)

    def __call__(self, *arrays):
        if self.graph_runner is not None and config["cuda_graphs"]:
            reuse = config.get("cuda_graph_outputs") == "reuse"
            return list(self.graph_runner(arrays, reuse, config.get("cuda_graph_max_bytes")))
        outs = self._fn(*arrays)
        if not self.backend.is_cupy:
            outs = [np.asarray(o) if not isinstance(o, np.ndarray) else o for o in outs]
        return list(outs)


def python_source(graph: Graph) -> str:
    return generate_python(graph)[0]
