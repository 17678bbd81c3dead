"""What the evaluations of :mod:`dualgpu.frontend.numpy.polynomial` share: NumPy's handling of
the coefficients and points (``c`` at least 1-D, integers as float64, one axis of ``c`` per
axis of an array ``x`` when ``tensor``) Clenshaw's loop (:func:`clenshaw`) and
``_valnd`` (the ``2d`` and ``3d`` forms)."""
from __future__ import annotations

import numpy as np

from ....errors import ShapeMismatchError, user_location
from ....lax import astype, reshape
from ....lax import dtype_of as _dtype
from ....lax import is_tracer as _is_tracer
from ....lax import shape_of as _shape
from ..arguments import as_array


def prepare(c, x, tensor):
    """NumPy's first lines of every ``<basis>val``: the coefficients (at least 1-D, bools
    and integers as float64) and the points (a list or tuple an array; a Python number
    left as it is), ``c`` given one trailing axis per axis of an array ``x`` if
    ``tensor``."""
    c = as_array(c)
    if len(_shape(c)) == 0:
        c = reshape(c, (1,))
    if _dtype(c).char in "?bBhHiIlLqQpP":
        c = astype(c, np.float64)
    if isinstance(x, (tuple, list)):
        x = as_array(x)
    if (_is_tracer(x) or hasattr(x, "ndim") and not np.isscalar(x)) and tensor:
        c = reshape(c, _shape(c) + (1,) * len(_shape(x)))
    return c, x


def clenshaw(c, step):
    """NumPy's Clenshaw loop, shared by every ``<basis>val`` but ``polyval``: the pair
    ``(c0, c1)`` from the last two coefficients down, ``step(ck, c0, c1, nd)`` giving the
    next one (``nd`` counting down from ``len(c) - 1``, each family's own formula, in
    NumPy's order of operations); ``(c[0], 0)`` or ``(c[0], c[1])`` for one or two."""
    if len(c) == 1:
        return c[0], 0
    if len(c) == 2:
        return c[0], c[1]
    c0, c1 = c[-2], c[-1]
    for i in range(3, len(c) + 1):
        c0, c1 = step(c[-i], c0, c1, len(c) + 2 - i)
    return c0, c1


def valnd(val_f, c, *args):
    """NumPy's ``polyutils._valnd``: the first points with ``tensor=True``, the others
    with ``tensor=False``; the points must all have one shape."""
    args = [as_array(a) for a in args]
    shape0 = _shape(args[0])
    if not all(_shape(a) == shape0 for a in args[1:]):
        names = {2: "x, y", 3: "x, y, z"}.get(len(args), "the ordinates")
        raise ShapeMismatchError(f"{val_f.__name__}{len(args)}d: {names} are incompatible (shapes "
                                 f"{[_shape(a) for a in args]}) (at {user_location()})")
    c = val_f(args[0], c)
    for xi in args[1:]:
        c = val_f(xi, c, tensor=False)
    return c
