"""The view through which a traced function sees a NumPy array it reads (a global, a closure
cell, a default value) or makes (``np.zeros(n)``): :class:`ConstantArray`."""
from __future__ import annotations

import numpy as np

from ..core.trace import Tracer
from . import numpy as dnp


class ConstantArray(np.ndarray):
    """A NumPy array a traced function reads (a global, a closure cell, a default value) or
    makes (``np.zeros(n)``, any NumPy call on constants), seen through this view while it is
    traced: NumPy's array in every way (same memory, same
    results, plain arrays out), except that indexing it with traced indices gathers
    (``field[i, j]`` with ``i``, ``j`` computed from traced values, as in semi-Lagrangian
    advection), where NumPy's indexing would ask the indices for concrete numbers."""

    _dualgpu_view_of_constant = True  # what the tracer stores is constant_value()

    def constant_value(self) -> np.ndarray:
        """The array a trace keeps: the user's own one (a view of it for views of this)."""
        original = self.__dict__.get("original")
        return original if original is not None else self.view(np.ndarray)

    def __getitem__(self, key):
        plain = self.view(np.ndarray)
        if isinstance(key, Tracer) or (type(key) is tuple
                                       and any(isinstance(k, Tracer) for k in key)):
            return dnp.getitem(plain, key)
        return plain[key]

    def __array_wrap__(self, array, context=None, return_scalar=False):
        if return_scalar and array.ndim == 0:
            return array[()]
        return array.view(np.ndarray)
