"""Dask arrays through per-instance programs: ``hvp`` / ``grad_and_hvp`` / ``laplacian`` with
``batch_axes`` given a ``dask.array.Array`` of NumPy or CuPy chunks run their compiled program
once per chunk.

Chunks split only batch axes (the other axes are rechunked to one chunk), so every chunk is a
set of whole instances and, the function being separable (proved on one chunk's shapes), each
chunk's result is exactly what the transform gives on that chunk's arrays. The chunks' library
(their ``meta``) decides the backend: CuPy chunks give Dask arrays of CuPy chunks, and NumPy
parameters go to the device once (one task whose result every chunk shares). Parameters go
whole to every chunk unless an axis of theirs follows a chunked batch axis (``mu`` of shape
``(3, n3)`` in ``x - mu[:, None, None, :]``): found by tracing with that axis one longer, such a
parameter is chunked along with it.

Dask stays optional: ``api.Transformed.__call__`` recognises a Dask array by its type's module
name and hands the call here; only then is dask imported. CuPy is reached through
:mod:`dualgpu.backends`, and only for CuPy chunks.
"""
from __future__ import annotations

import itertools
import operator
from typing import Any

import numpy as np

from ..backends import NUMPY, array_backend, backend_named
from ..backends.base import Backend
from ..base.cache import PROGRAMS
from ..errors import BackendMismatchError, DualgpuError, RandomInTraceError, SeparabilityError
from .executor import generation
from .signature import is_dask_array
from .tracing import Traced

DASK_KINDS = ("hvp", "grad_and_hvp", "laplacian")  # per-instance programs that take Dask arrays
_DIRECTIONAL = ("hvp", "grad_and_hvp")              # the last argument is the direction v
_MOST_PROBES = 64                                   # parameter-axis guesses tried per batch axis
# entries of the one cache: (PLAN, transform's spec, function, (shapes, dtypes, chunks,
# static values)) -> (followers, chunk outputs)
PLAN = "dask plan"
# a Transformed (dualgpu.runtime.transformed, the layer above), a Dask array
Transform = Any
DaskArray = Any


def chunk_backend(x: DaskArray) -> Backend:
    """The backend of a Dask array's chunks (from its ``meta``): NumPy or CuPy."""
    b = array_backend(getattr(x, "_meta", None))
    if b is None:
        raise DualgpuError(f"a Dask array of {type(getattr(x, '_meta', None)).__name__} "
                           "chunks; dualgpu takes NumPy or CuPy chunks")
    return b


def call(t: Transform, args: tuple, kwargs: dict) -> Any:
    """Run the transform ``t`` (a ``Transformed``) over Dask arrays; see the module docstring."""
    import dask  # lazy: dask is an optional extra, and `import dualgpu` must not import it
    import dask.array as da

    what = t.__name__
    _check_supported(t, kwargs)
    directional = t.kind in _DIRECTIONAL
    if directional and len(args) < 2:
        raise DualgpuError(f"{what} needs the arguments followed by the direction v")
    argnum = t.argnums[0]
    chunked: tuple[int, ...] = (argnum, len(args) - 1) if directional else (argnum,)
    backend = _backend(args, chunked, what)
    x = args[argnum]
    template = x if is_dask_array(x) else args[-1]
    x = _on(backend, _rechunked(da.asarray(x, chunks=template.chunks), t.batch_axes, what,
                                dask))
    blocks = [x]
    if directional:
        v = _on(backend, da.asarray(args[-1]).rechunk(x.chunks))
        if v.shape != x.shape:
            raise DualgpuError(f"{what}: the direction has shape {v.shape}, the "
                               f"differentiated argument {x.shape}; give v the same shape")
        blocks.append(v)
    key = _plan_key(backend, blocks, args, chunked)
    key = None if key is None else (PLAN, t.spec, t._fn_key, key)
    hit = None if key is None else PROGRAMS.get(key)
    if hit is not None:  # the same shapes and chunks: no tracing on this call
        follow, outs = hit
    else:
        if not backend.on_device:  # before any program is built on mixed arrays
            _no_device_parameters(tuple(None if i in chunked else a
                                        for i, a in enumerate(args)), what)
        _whole(t, args, chunked, blocks, backend)  # the proof on the whole arrays' shapes
        follow, outs = _followers(t, args, chunked, x, backend, what), None
    index = tuple(f"i{a}" for a in range(x.ndim))
    pairs: list = [p for b in blocks for p in (b, index)]
    for i, axes in follow.items():  # parameters chunked along with the batch axes they follow
        p = _on(backend, da.asarray(args[i]))
        p = p.rechunk(tuple(x.chunks[axes[k]] if k in axes else -1 for k in range(p.ndim)))
        blocks.append(p)
        pairs += [p, tuple(f"i{axes[k]}" if k in axes else f"p{i}_{k}" for k in range(p.ndim))]
    chunked = chunked + tuple(follow)
    whole = tuple(None if i in chunked else a for i, a in enumerate(args))
    refused = [i for i, a in enumerate(whole) if is_dask_array(a)]
    if refused:
        raise DualgpuError(
            f"{what}: argument {refused[0]} is a Dask array that follows no chunked batch "
            f"axis of the differentiated argument (argnums={argnum}); only the "
            f"differentiated argument{', the direction v' if directional else ''} and "
            "parameters with an axis along a chunked batch axis may be Dask arrays. Pass it "
            "as a NumPy or CuPy array: it goes whole to every chunk")
    if backend.on_device:  # NumPy parameters go to the device once; every chunk shares them
        params = dask.delayed(_on_device, pure=True)(backend.name, whole)
    else:
        _no_device_parameters(whole, what)
        params = dask.delayed(whole, pure=True)
    if outs is None:
        outs = _chunk_outputs(t, args, chunked, blocks, follow, backend)  # proofs per chunk
        if key is not None:
            PROGRAMS.put(key, (follow, outs))
    xp = backend.xp
    meta = lambda dtype: xp.empty((0,) * x.ndim, dtype)  # noqa: E731
    raw = da.blockwise(_ChunkCall(t, chunked), index, *pairs, params, None, concatenate=True,
                       dtype=outs[-1][1], meta=meta(outs[-1][1]))
    results = []
    for k, (shape, dtype) in enumerate(outs):
        if shape == ():  # the value of a sum over instances: one per chunk, then reduced
            sums = raw.map_blocks(_value_block, k, x.ndim, chunks=(1,) * x.ndim,
                                  dtype=dtype, meta=meta(dtype))
            results.append(sums.sum())
        elif len(shape) == x.ndim:
            results.append(raw.map_blocks(operator.itemgetter(k), dtype=dtype,
                                          meta=meta(dtype)))
        else:  # one value per instance (the Laplacian): kept 1-long along the other axes
            batch = sorted(a % x.ndim for a in t.batch_axes)
            if shape != tuple(x.chunksize[a] for a in batch):
                raise DualgpuError(f"{what}: with Dask arrays, f must return one value per "
                                   f"instance, with the batch axes {tuple(batch)} in order")
            chunks = tuple(x.chunks[a] if a in batch else (1,) for a in range(x.ndim))
            kept = raw.map_blocks(_expanded, k, tuple(batch), x.ndim, chunks=chunks,
                                  dtype=dtype, meta=meta(dtype))
            results.append(kept[tuple(slice(None) if a in batch else 0
                                      for a in range(x.ndim))])
    return results[0] if len(results) == 1 else tuple(results)


def _plan_key(backend: Backend, blocks: list, args: tuple,
              chunked: tuple[int, ...]) -> tuple | None:
    """What the plan of a call (followers, chunk outputs) depends on, or None when an
    argument is neither an array nor a hashable value."""
    key: list = [backend.name, generation[0]]  # bumped by dg.clear_cache()
    key += [(b.chunks, b.dtype.str) for b in blocks]
    for i, a in enumerate(args):
        if hasattr(a, "shape") and hasattr(a, "dtype"):
            key.append((i in chunked, type(a).__name__, a.shape, a.dtype.str))
        else:
            try:
                hash(a)
            except TypeError:
                return None
            key.append((type(a), a))
    return tuple(key)


def _check_supported(t: Transform, kwargs: dict) -> None:
    what = t.__name__
    if t.kind not in DASK_KINDS or getattr(t, "batch_axes", None) is None:
        raise DualgpuError(
            f"{what} was given a Dask array; only per-instance programs (dg.hvp, "
            "dg.grad_and_hvp, dg.laplacian with batch_axes=...) take Dask arrays for now. "
            "Compute the Dask array to NumPy first (x.compute()), or use batch_axes")
    if getattr(t, "sigma", None) is not None or getattr(t, "random", None) is not None:
        raise DualgpuError(f"{what}: with Dask arrays, the weighted and randomized "
                           "Laplacians (sigma=, method='hutchinson') are not supported yet; "
                           "compute the Dask array to NumPy first (x.compute())")
    if kwargs:
        raise DualgpuError(f"{what}: with Dask arrays, pass every argument by position")
    if t.has_aux or t.argnums_tuple:
        raise DualgpuError(f"{what}: with Dask arrays, argnums must be one int and has_aux "
                           "False for now")


def _backend(args: tuple, chunked: tuple[int, ...], what: str) -> Backend:
    """The chunks' backend: CuPy when the differentiated argument or the direction is a Dask
    array of CuPy chunks, else NumPy."""
    found: list[Backend | None] = [chunk_backend(args[i]) for i in chunked
                                   if is_dask_array(args[i])]
    found += [array_backend(args[i]) for i in chunked if not is_dask_array(args[i])]
    device = [b for b in found if b is not None and b.on_device]
    return device[0] if device else NUMPY


def _on(backend: Backend, x: DaskArray) -> DaskArray:
    """The Dask array ``x`` with chunks of ``backend``'s library (CuPy chunks stay CuPy; NumPy
    chunks go to the device chunk by chunk when the backend is CuPy)."""
    if not backend.on_device or chunk_backend(x).on_device:
        return x
    xp = backend.xp
    return x.map_blocks(xp.asarray, dtype=x.dtype, meta=xp.empty((0,) * x.ndim, x.dtype))


def _no_device_parameters(params: tuple, what: str) -> None:
    for i, p in enumerate(params):
        b = array_backend(p)
        if b is not None and b.on_device:
            raise BackendMismatchError(
                f"{what}: argument {i} is a CuPy array and the chunks are NumPy; give the "
                "Dask arrays CuPy chunks (x.map_blocks(cupy.asarray)) or the parameter as "
                "NumPy (p.get())")


def _on_device(backend_name: str, params: tuple) -> tuple:
    """The parameters with every NumPy array moved to the device of the backend called
    ``backend_name`` (a task: it names its backend, which then need not be pickled)."""
    backend = backend_named(backend_name)
    return tuple(backend.to_device(p) if isinstance(p, np.ndarray) else p for p in params)


def _rechunked(x: DaskArray, batch_axes: tuple[int, ...], what: str,
               dask: Any) -> DaskArray:
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


def _placeholder(backend: Backend, shape: tuple[int, ...], dtype: Any) -> Any:
    """An array of ``shape`` that costs one element (a broadcast zero): tracing reads only
    shapes and dtypes."""
    xp = backend.xp
    return xp.broadcast_to(xp.zeros((), dtype), tuple(shape))


def _stand_ins(args: tuple, backend: Backend, shapes: dict[int, tuple[int, ...]]) -> list:
    """``args`` for a trace on ``backend``: the arguments named in ``shapes`` (position ->
    shape), Dask arrays and arrays of the other library become placeholders."""
    out = []
    for i, a in enumerate(args):
        if i in shapes:
            a = _placeholder(backend, shapes[i], a.dtype)
        elif is_dask_array(a) or (isinstance(a, np.ndarray) and backend.on_device):
            a = _placeholder(backend, a.shape, a.dtype)
        out.append(a)
    return out


def _traces(t: Transform, args: tuple, backend: Backend,
            shapes: dict[int, tuple[int, ...]]) -> bool:
    """Whether the program builds with the arguments at these shapes (a separability error
    says nothing about shapes, so it is raised)."""
    try:
        t.graph(*_stand_ins(args, backend, shapes))
    except SeparabilityError:
        raise
    except Exception:  # noqa: BLE001  (any failure to build means "not at these shapes")
        return False
    return True


def _followers(t: Transform, args: tuple, chunked: tuple[int, ...], x: DaskArray,
               backend: Backend, what: str) -> dict[int, dict[int, int]]:
    """``{position: {parameter axis: batch axis}}`` for the parameters with an axis along a
    chunked batch axis of ``x``.

    A parameter can follow batch axis ``a`` (length ``L``) only through an axis of length
    ``L``. When the program no longer builds with ``a`` one longer, the smallest set of such
    parameter axes that, one longer too, makes it build again is the answer; none, or two
    equally small sets, is an error.
    """
    batch = sorted(a % x.ndim for a in t.batch_axes)
    split = [a for a in batch if len(x.chunks[a]) > 1]
    found: dict[int, dict[int, int]] = {}
    for a in split:
        n = x.shape[a]
        options = [[(i, k) for k, s in enumerate(p.shape) if s == n]
                   for i, p in enumerate(args)
                   if i not in chunked and hasattr(p, "shape") and hasattr(p, "dtype")]
        options = [o for o in options if o]  # per parameter: its axes of length n
        if not options:
            continue
        longer = tuple(n + 1 if b == a else s for b, s in enumerate(x.shape))
        base: dict[int, tuple[int, ...]] = dict.fromkeys(chunked, longer)
        if _traces(t, args, backend, base):
            continue
        fits: list[list[tuple[int, int]]] = []
        guesses = itertools.product(*[[None] + o for o in options])
        for guess in sorted(itertools.islice(guesses, _MOST_PROBES),
                            key=lambda g: sum(c is not None for c in g)):
            picked = [c for c in guess if c is not None]
            if fits and len(picked) > len(fits[0]):
                break
            shapes = dict(base)
            for i, k in picked:
                shapes[i] = tuple(n + 1 if j == k else s for j, s in enumerate(args[i].shape))
            if _traces(t, args, backend, shapes):
                fits.append(picked)
        if len(fits) != 1:
            why = ("no parameter axis of that length makes it build again" if not fits else
                   f"more than one choice of parameter axes does ({fits[0]} and {fits[1]})")
            raise DualgpuError(
                f"{what}: batch axis {a} is chunked, and the program does not build with that "
                f"axis one longer ({n + 1}), so a parameter or a constant follows it; {why}. "
                f"Chunk only other batch axes (chunks={{{a}: -1}}), or pass the parameter so "
                "that it broadcasts (length 1) along that axis")
        for i, k in fits[0]:
            found.setdefault(i, {})[k] = a
    return found


def _whole(t: Transform, args: tuple, chunked: tuple[int, ...], blocks: list,
           backend: Backend) -> None:
    """Build the program on the whole arrays' shapes, which runs the separability proof on
    them: a function that couples instances is refused whatever the chunks (a chunk of one
    instance has nothing to couple, and its program alone would prove nothing)."""
    stand_ins = _stand_ins(args, backend, {i: tuple(b.shape) for i, b in zip(chunked, blocks)})
    sig = t._analysed(stand_ins, {}, "graph")
    traced = Traced(t.fn, sig, None)
    if traced.draws:
        raise RandomInTraceError(
            f"{t.__name__}: with Dask arrays, the function draws random numbers "
            f"({traced.draws[0].label}), which each chunk's call would draw again, in no set "
            "order; draw them outside and pass them in as arguments")
    t.build(traced, sig)


def _chunk_outputs(t: Transform, args: tuple, chunked: tuple[int, ...], blocks: list,
                   follow: dict[int, dict[int, int]], backend: Backend) -> list[tuple]:
    """``(shape, dtype)`` of each result of one chunk, from the programs built on every
    distinct shape of the chunks (building one runs the separability proof on those
    shapes: an array of the whole length of a batch axis that does not follow the chunks
    is caught here, not in a task)."""
    x = blocks[0]
    what = t.__name__
    graph: Any = None
    for lengths in itertools.product(*[sorted(set(c)) for c in x.chunks]):
        shapes = {i: lengths for i in chunked if i not in follow}
        for i, axes in follow.items():
            shapes[i] = tuple(lengths[axes[k]] if k in axes else s
                              for k, s in enumerate(args[i].shape))
        try:
            built = t.graph(*_stand_ins(args, backend, shapes))
        except DualgpuError as e:
            error = SeparabilityError if isinstance(e, SeparabilityError) else DualgpuError
            raise error(
                f"{what}: f is separable on the whole arrays (shape {tuple(x.shape)}), but "
                f"not on a chunk of shape {lengths}: {e}. An array that f reads with the "
                "whole length of a chunked batch axis (a closed-over array or a constant) "
                "does not follow the chunks: pass it to f as an argument (it is then "
                "chunked along), or do not chunk that batch axis") from None
        if lengths == tuple(x.chunksize):  # the largest chunk's: the one results hold
            graph = built
    n = {"hvp": 1, "laplacian": 1}.get(t.kind, 3 if getattr(t, "return_value", False) else 2)
    dtype = x.dtype
    return [(tuple(o.shape), o.dtype) if hasattr(o, "shape") else ((), dtype)
            for o in graph.outputs[len(graph.outputs) - n:]]


def _fill(args: tuple, chunked: tuple[int, ...], blocks: list) -> list:
    filled = list(args)
    for i, b in zip(chunked, blocks):
        filled[i] = b
    return filled


class _ChunkCall:
    """The task run on each chunk: the transform on the chunk's arrays (and the chunks of
    the parameters that follow a batch axis)."""

    def __init__(self, t: Transform, chunked: tuple[int, ...]):
        self.t, self.chunked = t, chunked
        self.__name__ = f"dualgpu-{t.__name__}"

    # the transform holds a lock: name it rather than pickle it
    def __dask_tokenize__(self) -> tuple:
        return ("dualgpu", id(self.t), self.t.spec, self.chunked)

    # for processes and distributed: rebuild the transform over there
    def __reduce__(self) -> tuple:
        t = self.t
        options = {"return_value": t.return_value} if t.kind == "grad_and_hvp" else {}
        return _rebuilt, (type(t), t.fn, t.argnums[0], t.batch_axes, options, self.chunked)

    def __call__(self, *blocks_and_params: Any) -> tuple:
        *blocks, params = blocks_and_params
        out: Any = self.t(*_fill(params, self.chunked, blocks))
        return out if isinstance(out, tuple) else (out,)


def _rebuilt(cls: type, fn: Any, argnum: int, batch_axes: tuple[int, ...], options: dict,
             chunked: tuple[int, ...]) -> _ChunkCall:
    return _ChunkCall(cls(fn, argnums=argnum, batch_axes=batch_axes, **options), chunked)


def _value_block(results: tuple, k: int, ndim: int) -> Any:
    r = results[k]
    return r.reshape((1,) * ndim) if hasattr(r, "reshape") else np.reshape(r, (1,) * ndim)


def _expanded(results: tuple, k: int, batch: tuple[int, ...], ndim: int) -> Any:
    r = results[k]
    shape = [1] * ndim
    for a, s in zip(batch, r.shape):
        shape[a] = s
    return r.reshape(tuple(shape))
