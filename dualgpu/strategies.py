"""Hypothesis strategies for property tests of derivatives (``dg.testing.strategies``).

Example::

    >>> from hypothesis import given, settings
    >>> from dualgpu.testing import strategies as dst
    >>> @settings(max_examples=10, deadline=None)
    ... @given(dst.arrays(shape=dst.shapes(), low=-2, high=2))
    ... def test_tanh(x):
    ...     dg.testing.check_grads(np.tanh, (x,))
    >>> test_tanh()
"""
from __future__ import annotations

import numpy as np

try:
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError:  # pragma: no cover - hypothesis is a test extra
    st = hnp = None  # type: ignore[assignment]  # the strategies then refuse to run


def _need():
    if st is None:
        raise ImportError("dualgpu.testing.strategies needs hypothesis "
                          "(in a clone of dualgpu: pip install '.[test]')")


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 1, max_side: int = 4):
    """Array shapes."""
    _need()
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def broadcastable_shapes(num_shapes: int = 2, max_dims: int = 3, max_side: int = 4):
    """A tuple of ``num_shapes`` shapes that broadcast together."""
    _need()
    return hnp.mutually_broadcastable_shapes(num_shapes=num_shapes, max_dims=max_dims,
                                             max_side=max_side).map(lambda r: r.input_shapes)


def arrays(shape, low: float = -2.0, high: float = 2.0, dtype=np.float64,
           avoid: tuple = ()):
    """Float arrays with elements in ``[low, high]``, kept at least 0.05 away from each
    point in ``avoid`` (kinks and poles, where finite differences are meaningless)."""
    _need()
    elements = st.floats(low, high, allow_nan=False, allow_infinity=False, width=64)
    if avoid:
        elements = elements.filter(lambda v: all(abs(v - a) > 0.05 for a in avoid))
    shape_st = shape if isinstance(shape, st.SearchStrategy) else st.just(tuple(shape))
    return shape_st.flatmap(lambda s: hnp.arrays(np.float64, s, elements=elements)).map(
        lambda a: a.astype(dtype))
