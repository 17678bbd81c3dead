"""The Backend protocol: everything dualgpu asks of an array library, as named members.

The code above ``backends/`` never asks *which* library an array belongs to; it asks its
backend what it can do (``backend.runs_fused_kernels``, ``backend.on_device``) or has it
do it (``backend.to_device(a)``, ``backend.stable_sort(x, axis)``). The NumPy backend
(:mod:`.numpy`) and the CuPy backend (:mod:`.cupy`) implement every member of
:data:`MEMBERS`; :func:`missing_members` names those a backend class lacks.
"""
from __future__ import annotations

from typing import Any

MEMBERS = (
    # what it is
    "name", "export_target",
    # its modules
    "xp", "special", "linalg", "sparse", "sparse_linalg",
    # capabilities the layers above read
    "on_device", "runs_fused_kernels", "runs_host_kernels", "replays_cuda_graphs",
    "checks_indices",
    # what it does
    "is_array", "is_sparse", "to_device", "to_host", "as_arrays", "device_of",
    "default_device", "synchronize", "stable_sort", "stable_argsort", "scatter_add",
    "linear_operator_class", "matmul_precision", "keep_freed_memory",
)
"""The members every backend defines (its class, or a class between it and :class:`Backend`)."""


class Backend:
    """What dualgpu needs from an array library; a backend subclasses it and defines every
    member of :data:`MEMBERS`.

    What it is:

    * ``name`` -- ``"numpy"``, ``"cupy"``: part of every program's cache key, and what
      messages print;
    * ``export_target`` -- the module ``dg.export`` writes by default for arrays of this
      backend (``"numpy"`` or ``"cupy"``).

    Its modules: ``xp`` (the NumPy-compatible namespace that evaluates primitives eagerly
    and that generated Python calls), ``special`` (``scipy.special``'s functions),
    ``sparse`` (``scipy.sparse``'s matrices), ``sparse_linalg`` (``scipy.sparse.linalg``:
    ``LinearOperator``, ``cg``).

    Capabilities (booleans the layers above read):

    * ``on_device`` -- its arrays live in device memory: host (NumPy) arrays that reach
      one of its programs (converted scalar arguments, closed-over constants, Dask
      parameters) are moved there with :meth:`to_device`, and host programs refuse its
      arrays;
    * ``runs_fused_kernels`` -- with ``dg.config["fuse"]`` the executor runs the
      fused-kernel plan (:mod:`dualgpu.codegen.launcher`);
    * ``runs_host_kernels`` -- with ``dg.config["host_kernel"]`` a tiny program may run as
      one kernel compiled for the host CPU (:mod:`dualgpu.codegen.host`);
    * ``replays_cuda_graphs`` -- the executor runs programs under a
      :class:`~dualgpu.backends.cuda_graphs.CudaGraphRunner` (capture and replay) and under
      the program's :meth:`matmul_precision`;
    * ``checks_indices`` -- its gathers and scatters raise ``IndexError`` for an index out
      of range (NumPy's); where they do not (CuPy's wrap around), the executor, with
      ``dg.config["check_indices"]``, has the programs that read index arrays they receive
      return those arrays' bounds too, and checks them after each call
      (:mod:`dualgpu.transforms.index_bounds`).

    Anything else is a method, below. Example::

        >>> from dualgpu.backends import backend_of
        >>> b = backend_of([np.ones(3)])
        >>> b.name, b.on_device, b.default_device()
        ('numpy', False, 'cpu')
        >>> b.stable_argsort(np.array([2.0, 1.0, 2.0]), 0)
        array([1, 0, 2])
    """

    name: str
    export_target: str
    xp: Any
    special: Any
    linalg: Any
    sparse: Any
    sparse_linalg: Any
    on_device: bool
    runs_fused_kernels: bool
    runs_host_kernels: bool
    replays_cuda_graphs: bool
    checks_indices: bool

    def _missing(self, member: str):
        return NotImplementedError(f"the {type(self).__name__} backend does not define "
                                   f"Backend.{member}")

    def is_array(self, x) -> bool:
        """Whether ``x`` is a dense array of this backend."""
        raise self._missing("is_array")

    def is_sparse(self, x) -> bool:
        """Whether ``x`` is a sparse matrix of this backend."""
        raise self._missing("is_sparse")

    def to_device(self, a):
        """The host (NumPy) array ``a`` as an array of this backend (``a`` itself on the
        host)."""
        raise self._missing("to_device")

    def to_host(self, a):
        """The array ``a`` of this backend as a NumPy array (a copy from the device)."""
        raise self._missing("to_host")

    def as_arrays(self, values: list) -> list:
        """A program's results as arrays of this backend (where a library returns scalars
        for 0-d values, they become 0-d arrays)."""
        raise self._missing("as_arrays")

    def device_of(self, a):
        """The array-API device of array ``a``."""
        raise self._missing("device_of")

    def default_device(self):
        """The array-API device new arrays go to (what ``Tracer.device`` returns)."""
        raise self._missing("default_device")

    def synchronize(self) -> None:
        """Wait until the work queued on the current device is done (for timing)."""
        raise self._missing("synchronize")

    def stable_sort(self, x, axis: int):
        """``x`` sorted along ``axis``, equal elements in their order (NumPy's stable
        order)."""
        raise self._missing("stable_sort")

    def stable_argsort(self, x, axis: int):
        """The int64 permutation that stably sorts ``x`` along ``axis``."""
        raise self._missing("stable_argsort")

    def scatter_add(self, out, key, values):
        """``out[key] += values`` with repeated indices accumulating; returns ``out``."""
        raise self._missing("scatter_add")

    def linear_operator_class(self):
        """The ``LinearOperator`` class of this library (HessianOperator subclasses it)."""
        raise self._missing("linear_operator_class")

    def matmul_precision(self, precision: str):
        """A context manager under which this library's own float32 products run at
        ``precision`` (``dg.config["matmul_precision"]``)."""
        raise self._missing("matmul_precision")

    def keep_freed_memory(self) -> None:
        """Have the memory the library's arrays free stay in the process for the next ones
        (``dg.config["keep_freed_memory"]``), where the library does not already."""
        raise self._missing("keep_freed_memory")


def missing_members(cls: type) -> list[str]:
    """The members of :data:`MEMBERS` that backend class ``cls`` does not define (a member
    only :class:`Backend` declares is missing).

    Example::

        >>> from dualgpu.backends.numpy import NumpyBackend
        >>> missing_members(NumpyBackend)
        []
        >>> class Half(Backend):
        ...     name = "half"
        >>> "xp" in missing_members(Half)
        True
    """
    own = [k for k in cls.__mro__ if k not in (Backend, object)]
    return [m for m in MEMBERS if not any(m in vars(k) for k in own)]
