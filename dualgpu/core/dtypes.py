"""Dtype rules shared by the op declarations: NumPy promotion with weak Python scalars, the
floating and real types an op gives.

>>> import numpy as np
>>> from dualgpu.core.dtypes import float_dtype, real_dtype
>>> float_dtype(np.int32), real_dtype(np.complex64)
(dtype('float64'), dtype('float32'))
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

_WEAK_EXAMPLE = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}


def promote(avals: Iterable[Any]) -> np.dtype[Any]:  # Avals (ir.py is a layer above)
    """NumPy's result type; weak (Python scalar) operands promote as Python scalars do."""
    return np.result_type(*[promotion_operand(a) for a in avals])


def promotion_operand(aval: Any) -> Any:
    """What stands for ``aval`` in ``np.result_type``: its dtype, or a Python scalar of its
    kind when it is weakly typed (a traced Python number promotes as one)."""
    return _WEAK_EXAMPLE[aval.dtype.kind] if aval.weak else aval.dtype


def is_float(dtype: DTypeLike) -> bool:
    return np.dtype(dtype).kind in "fc"


def float_dtype(dtype: DTypeLike) -> np.dtype[Any]:
    """The floating type an op like exp gives for ``dtype`` (ints become float64)."""
    dtype = np.dtype(dtype)
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def real_dtype(dtype: DTypeLike) -> np.dtype[Any]:
    """The real type of ``dtype``'s values: float32 for complex64, float64 for complex128;
    other dtypes unchanged."""
    dtype = np.dtype(dtype)
    return np.empty(0, dtype).real.dtype if dtype.kind == "c" else dtype
