"""What an array is, for traced and concrete values alike: ``shape``, ``ndim``, ``size``,
``result_type``, ``iscomplexobj``, ``isscalar``."""
from __future__ import annotations

import numpy as np

from ...core.axes import check_axis as _check_axis
from ...core.dtypes import promotion_operand
from ...lax import dtype_of as _dtype
from ...lax import is_tracer as _is_tracer
from ...lax import shape_of as _shape


def shape(a) -> tuple:
    return _shape(a)


def ndim(a) -> int:
    return len(_shape(a))


def size(a, axis=None) -> int:
    s = _shape(a)
    return int(np.prod(s, dtype=np.int64)) if axis is None else s[_check_axis(axis, len(s),
                                                                                "size")]


def result_type(*arrays_and_dtypes):
    # a traced Python number (weakly typed) promotes as the number
    return np.result_type(*[promotion_operand(a.aval) if _is_tracer(a) else a
                            for a in arrays_and_dtypes])


def iscomplexobj(x) -> bool:
    return _dtype(x).kind == "c"


def isscalar(x) -> bool:
    return False if _is_tracer(x) else np.isscalar(x)
