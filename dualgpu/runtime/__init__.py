"""The runtime: the stages of a call of a transformed function, apart from the build.

* :mod:`~dualgpu.runtime.signature` -- the call's arguments analysed: pytrees, shapes,
  dtypes, static values, aliasing (the cache key), and the quick key of plain calls;
* :mod:`~dualgpu.runtime.guards` -- what a trace read outside its arguments, checked on
  every cached call;
* :mod:`~dualgpu.runtime.program_cache` -- the one cache of programs, its entries
  (compiled or inlined, with their guards) and statistics;
* :mod:`~dualgpu.runtime.transformed` -- :class:`Transformed`: a call through those stages
  (and the fast path of a call seen before), the seam every public transform is written
  against, with :mod:`~dualgpu.runtime.tracing` (the function traced) and
  :mod:`~dualgpu.runtime.checks` (the checks of outputs and arguments);
* :mod:`~dualgpu.runtime.dask` -- calls on Dask arrays, run per chunk.

The build a cache miss runs (trace, transform, plan, compile) lives below: :mod:`dualgpu.core`,
:mod:`dualgpu.transforms`, :mod:`dualgpu.fusion`, :mod:`dualgpu.codegen`,
:mod:`dualgpu.runtime.executor`.
"""
