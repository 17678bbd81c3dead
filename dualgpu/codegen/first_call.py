"""The first call of a fused CUDA program: its kernels compiled ahead, together.

A kernel is specialised on the layouts of the arrays it reads, known for certain only when
they arrive. But most are known before the run: the arguments' and constants' own layouts,
and C-contiguous ones for the values the program makes (a kernel, product or sum writes a
new C-contiguous array or range of one; a reshape of a C-contiguous value is one too).
:func:`predicted_layouts` gives them, and the launcher compiles every kernel they
determine as a few NVRTC modules at once (:func:`compile_modules`) before the first step:
NVRTC costs ~50 ms a compile however small the text (the biharmonic's 35 kernels: 1.69 s one
by one, 0.56 s as one module, H100). A kernel is looked up by the layouts of the arrays it
is given, so a wrong prediction costs a compile at its step, never a value.

Example::

    >>> from dualgpu.fusion import plan_graph
    >>> g = dg.trace(lambda x: np.sin(x).reshape(6) @ np.ones(6), np.ones((2, 3)))
    >>> layouts = predicted_layouts(plan_graph(g), {g.inputs[0].id: Layout.of(np.ones((2, 3)))})
    >>> [(lay.shape, lay.strides) for lay in layouts.values()]
    [((2, 3), (24, 8)), ((2, 3), (24, 8)), ((6,), (8,)), ((), ())]
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from ..core.flags import Flag
from ..fusion import Region

MODULE_THREADS = 4   # NVRTC compiles of the first call's modules at once


class Layout(NamedTuple):
    """What a kernel's specialisation reads of an array: shape, byte strides, dtype."""

    shape: tuple
    strides: tuple
    dtype: np.dtype

    @classmethod
    def of(cls, a) -> Layout:
        return cls(tuple(a.shape), tuple(a.strides), np.dtype(a.dtype))

    @classmethod
    def new(cls, v) -> Layout:
        """A new C-contiguous array of the value ``v``."""
        dtype = np.dtype(v.dtype)
        strides, acc = [], dtype.itemsize
        for n in reversed(tuple(v.shape)):
            strides.append(acc)
            acc *= n
        return cls(tuple(v.shape), tuple(reversed(strides)), dtype)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize


def predicted_layouts(plan, known: dict) -> dict:
    """``{var id: Layout}`` of the values the steps of ``plan`` read, from ``known`` (the
    arguments' and constants' layouts by var id): what each step makes, C-contiguous; a
    view other than a reshape of a C-contiguous value is left out (not predicted)."""
    layouts = dict(known)
    for step in plan.steps:
        if isinstance(step, Region):
            made = step.outputs
        elif not step.eqn.prim.has(Flag.VIEW):
            made = step.eqn.outs
        else:
            src = layouts.get(getattr(step.eqn.inputs[0], "id", None))
            contiguous = src is not None and src.strides == Layout.new(step.eqn.inputs[0]).strides
            made = step.eqn.outs if step.eqn.prim.name == "reshape" and contiguous else []
        layouts.update((v.id, Layout.new(v)) for v in made)
    return layouts


def compile_modules(cp, sources: dict) -> dict:
    """``{name: function}`` of the kernels ``{name: source}``, compiled as up to
    :data:`MODULE_THREADS` NVRTC modules of about equal text at once, on the current device
    (NVRTC releases the GIL; the text of one module compiles on one core)."""
    parts: list = [[] for _ in range(max(1, min(MODULE_THREADS, len(sources) // 4)))]
    sizes = [0] * len(parts)
    for name, text in sorted(sources.items(), key=lambda kv: -len(kv[1])):
        i = sizes.index(min(sizes))
        parts[i].append(name)
        sizes[i] += len(text)
    device = cp.cuda.Device().id

    def compiled(names: list) -> dict:
        with cp.cuda.Device(device):
            module = cp.RawModule(code="\n".join(sources[n] for n in names))
            return {n: module.get_function(n) for n in names}

    if len(parts) == 1:
        return compiled(parts[0])
    with ThreadPoolExecutor(len(parts)) as pool:
        return {n: f for got in pool.map(compiled, parts) for n, f in got.items()}
