"""The fusion planner: split a (transformed) graph into fused-kernel regions and library calls.

A *region* is a set of equations that one generated CUDA kernel evaluates. Every value of a
region is a function of a point of the region's *domain* (an iteration shape ``X``): a value
records, for each of its own axes, the domain axis that indexes it (``None`` for axes of
size 1). Domain axes are counted from the right (``-1`` is the last), so the domain may grow
by NumPy broadcasting while the region is built.

A region may reduce over a set of *loop axes* ``R`` of its domain. The kernel then runs one
thread per point of the remaining *thread axes* and loops over ``R`` inside the thread: the
pre-reduction chain runs in loop 0, the reduction results feed the per-thread chain after
it, and values broadcast back over ``R`` (the keepdims + broadcast_to of a gradient) run in
loop 1, and so on. A reduction of a per-thread value over *all* thread axes (the ``sum`` of
a loss) is a *grid reduction*: each block writes a partial result, and a second small kernel
finishes it. The transpose of a slice (``scatter_add`` of a key of slices, an op whose kernel
lowering is ``padded_read``) is read in the kernel straight from its input's memory, zero
outside the slices; with recomputation, it evaluates its input's elementwise equations at
its shifted index instead (:class:`~dualgpu.fusion.regions.Cone`). Everything else (matmul,
einsum, solves, sparse ops, gathers, other scatters, views of graph inputs) runs as a library
call on plain arrays.

Example (scenario 2 of the design, ``x`` of shape ``(3, n, n, n)``)::

    >>> f = lambda x, mu: np.exp(-np.sum((x - mu[:, None, None, :]) ** 2, axis=0))
    >>> x, mu = np.ones((3, 4, 4, 4)), np.zeros((3, 4))
    >>> plan = plan_graph(dg.trace(dg.grad_and_hvp(f, batch_axes=(1, 2, 3),
    ...                                            return_value=True), x, mu, x))
    >>> plan.kernel_count()   # the fused pass and the finish of the value's sum
    2
    >>> print(plan.describe())
    # fusion plan of jvp_vjp_<lambda>: 1 fused region(s), 2 generated kernel(s), 1 library call(s)
    [0] library: t0:float64[3,1,1,4] = getitem mu [:, None, None, :]
    [1] kernel region 0: domain (3,4,4,4), one thread per 64 points, loop over axes (0,) ...
          t1:float64[3,4,4,4] = subtract x t0
    ...
          reads: x t0 x_dot; writes: t11 t22 t23

``emulate(plan, args)`` evaluates a plan with NumPy the way the kernels do (point by point of
each region's domain), which is how the planner is tested without a GPU.
``concat_slots(plan, writes_into)`` finds the concatenations whose inputs a runner can
compute straight into their ranges of the output (the flat gradient of a parameter vector).
"""
from .emulate import emulate, emulate_region, run_library_step
from .inplace import ConcatSlots, concat_slots
from .plan import plan_graph
from .regions import (
    KERNEL_DTYPES,
    LOOP_MAX,
    LOOP_MIN_THREADS,
    ROLLED_LOOPS_MAX,
    UNROLL_MAX,
    LibraryStep,
    Plan,
    Region,
    fusible,
    is_reduction,
    is_reshape,
    is_view,
    memory_profile,
    padded_read,
    reads_no_values,
)

__all__ = ["KERNEL_DTYPES", "LOOP_MAX", "LOOP_MIN_THREADS", "ROLLED_LOOPS_MAX",
           "UNROLL_MAX", "ConcatSlots", "LibraryStep", "Plan", "Region", "concat_slots",
           "emulate", "emulate_region", "fusible", "is_reduction", "is_reshape", "is_view",
           "memory_profile",
           "padded_read", "reads_no_values", "plan_graph", "run_library_step"]
