"""Dask arrays through per-instance programs: ``hvp`` / ``grad_and_hvp`` / ``laplacian`` with
``batch_axes`` given a ``dask.array.Array`` run their compiled program once per chunk.

Chunks split only batch axes (the other axes are rechunked to one chunk), so every chunk is a
set of whole instances and, the function being separable (proved on one chunk's shapes), each
chunk's result is exactly what the transform gives on that chunk's NumPy arrays. Arguments that
are not Dask arrays (parameters such as ``mu``) go whole, once, to every chunk.

Dask stays optional: ``api.Transformed.__call__`` recognises a Dask array by its type's module
name and hands the call here; only then is dask imported.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .errors import DualgpuError

DASK_KINDS = ("hvp", "grad_and_hvp", "laplacian")  # per-instance programs that take Dask arrays
_DIRECTIONAL = ("hvp", "grad_and_hvp")              # the last argument is the direction v


def is_dask_array(x) -> bool:
    """Whether ``x`` is a ``dask.array.Array``, without importing dask."""
    t = type(x)
    return t.__name__ == "Array" and t.__module__.startswith("dask.")


def has_dask_array(args: tuple, kwargs: dict) -> bool:
    return any(is_dask_array(a) for a in args) or any(map(is_dask_array, kwargs.values()))


def call(t, args: tuple, kwargs: dict):
    """Run the transform ``t`` (a ``Transformed``) over Dask arrays; see the module docstring."""
    import dask  # lazy: dask is an optional extra, and `import dualgpu` must not import it
    import dask.array as da

    what = t.__name__
    _check_supported(t, kwargs)
    axes = [i for i, a in enumerate(args) if is_dask_array(a)]
    directional = t.kind in _DIRECTIONAL
    if directional and len(args) < 2:
        raise DualgpuError(f"{what} needs the arguments followed by the direction v")
    argnum = t.argnums[0]
    chunked = (argnum, len(args) - 1) if directional else (argnum,)
    others = [i for i in axes if i not in chunked]
    if others:
        raise DualgpuError(
            f"{what}: argument {others[0]} is a Dask array; only the differentiated argument "
            f"(argnums={argnum}){' and the direction v' if directional else ''} may be. "
            "Pass parameters as NumPy arrays: they go whole to every chunk")
    x = args[argnum]
    template = x if is_dask_array(x) else args[-1]
    x = _rechunked(da.asarray(x, chunks=template.chunks), t.batch_axes, what, dask)
    blocks = [x] + [da.asarray(args[-1]).rechunk(x.chunks)] if directional else [x]
    if directional and blocks[1].shape != x.shape:
        raise DualgpuError(f"{what}: the direction has shape {blocks[1].shape}, the "
                           f"differentiated argument {x.shape}; give v the same shape")
    params = dask.delayed(tuple(None if i in chunked else a for i, a in enumerate(args)),
                          pure=True)
    outs = _chunk_outputs(t, args, chunked, blocks)  # also proves separability, on one chunk
    run = _ChunkCall(t, chunked)
    meta = np.empty((0,) * x.ndim, outs[-1][1])
    raw = da.map_blocks(run, *blocks, params, dtype=meta.dtype, meta=meta)
    results = []
    for k, (shape, dtype) in enumerate(outs):
        if shape == ():  # the value of a sum over instances: one per chunk, then reduced
            sums = raw.map_blocks(_value_block, k, x.ndim, chunks=(1,) * x.ndim,
                                  dtype=dtype, meta=np.empty((0,) * x.ndim, dtype))
            results.append(sums.sum())
        elif len(shape) == x.ndim:
            results.append(raw.map_blocks(operator.itemgetter(k), dtype=dtype,
                                          meta=np.empty((0,) * x.ndim, dtype)))
        else:  # one value per instance (the Laplacian): kept 1-long along the other axes
            batch = sorted(a % x.ndim for a in t.batch_axes)
            if shape != tuple(b.chunksize[a] for a in batch for b in blocks[:1]):
                raise DualgpuError(f"{what}: with Dask arrays, f must return one value per "
                                   f"instance, with the batch axes {tuple(batch)} in order")
            chunks = tuple(x.chunks[a] if a in batch else (1,) for a in range(x.ndim))
            kept = raw.map_blocks(_expanded, k, tuple(batch), x.ndim, chunks=chunks,
                                  dtype=dtype, meta=np.empty((0,) * x.ndim, dtype))
            results.append(kept[tuple(slice(None) if a in batch else 0
                                      for a in range(x.ndim))])
    return results[0] if len(results) == 1 else tuple(results)


def _check_supported(t, kwargs: dict) -> None:
    what = t.__name__
    if t.kind not in DASK_KINDS or getattr(t, "batch_axes", None) is None:
        raise DualgpuError(
            f"{what} was given a Dask array; only per-instance programs (dg.hvp, "
            "dg.grad_and_hvp, dg.laplacian with batch_axes=...) take Dask arrays for now. "
            "Compute the Dask array to NumPy first (x.compute()), or use batch_axes")
    if kwargs:
        raise DualgpuError(f"{what}: with Dask arrays, pass every argument by position")
    if t.has_aux or t.argnums_tuple:
        raise DualgpuError(f"{what}: with Dask arrays, argnums must be one int and has_aux "
                           "False for now")


def _rechunked(x, batch_axes: tuple, what: str, dask):
    """``x`` with one chunk along every non-batch axis; an error if those chunks grow past
    dask's ``array.chunk-size``."""
    batch = {a % x.ndim for a in batch_axes}
    split = [a for a in range(x.ndim) if a not in batch and len(x.chunks[a]) > 1]
    if not split:
        return x
    biggest = x.dtype.itemsize * int(np.prod(
        [x.shape[a] if a not in batch else max(x.chunks[a]) for a in range(x.ndim)]))
    limit = dask.utils.parse_bytes(dask.config.get("array.chunk-size"))
    if biggest > limit:
        raise DualgpuError(
            f"{what}: chunks may split only batch axes {tuple(sorted(batch))}, and axes "
            f"{tuple(split)} are chunked; one chunk along them makes chunks of "
            f"{biggest / 2 ** 20:.0f} MiB, above dask's array.chunk-size "
            f"({limit / 2 ** 20:.0f} MiB). Chunk the batch axes finer, or raise "
            "array.chunk-size (dask.config.set({'array.chunk-size': ...}))")
    return x.rechunk({a: -1 for a in split})


def _chunk_outputs(t, args: tuple, chunked: tuple, blocks: list) -> list[tuple]:
    """``(shape, dtype)`` of each result of one chunk, from the program built on the first
    chunk's shapes (building it runs the separability proof)."""
    first = [np.zeros(tuple(c[0] for c in b.chunks), b.dtype) for b in blocks]
    graph = t.graph(*_fill(args, chunked, first))
    n = {"hvp": 1, "laplacian": 1}.get(t.kind, 3 if getattr(t, "return_value", False) else 2)
    ref = first[0]
    return [(tuple(o.shape), o.dtype) if hasattr(o, "shape") else ((), ref.dtype)
            for o in graph.outputs[len(graph.outputs) - n:]]


def _fill(args: tuple, chunked: tuple, blocks) -> list:
    args = list(args)
    for i, b in zip(chunked, blocks):
        args[i] = b
    return args


class _ChunkCall:
    """The task run on each chunk: the transform on the chunk's NumPy arrays."""

    def __init__(self, t, chunked: tuple):
        self.t, self.chunked = t, chunked
        self.__name__ = f"dualgpu-{t.__name__}"

    def __dask_tokenize__(self):  # the transform holds a lock: name it rather than pickle it
        return ("dualgpu", id(self.t), self.t.spec, self.chunked)

    def __reduce__(self):  # for the processes scheduler: rebuild the transform over there
        t = self.t
        options = {"return_value": t.return_value} if t.kind == "grad_and_hvp" else {}
        return _rebuilt, (type(t), t.fn, t.argnums[0], t.batch_axes, options, self.chunked)

    def __call__(self, *blocks_and_params) -> tuple:
        *blocks, params = blocks_and_params
        out: Any = self.t(*_fill(params, self.chunked, blocks))
        return out if isinstance(out, tuple) else (out,)


def _rebuilt(cls, fn, argnum: int, batch_axes: tuple, options: dict, chunked: tuple):
    return _ChunkCall(cls(fn, argnums=argnum, batch_axes=batch_axes, **options), chunked)


def _value_block(results: tuple, k: int, ndim: int):
    return np.reshape(results[k], (1,) * ndim)


def _expanded(results: tuple, k: int, batch: tuple, ndim: int):
    return np.expand_dims(results[k], tuple(a for a in range(ndim) if a not in batch))
