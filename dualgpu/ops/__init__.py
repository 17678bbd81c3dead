"""The op declarations: for every primitive its implementation, shape rule, Python form and
(for elementwise ops) C expression. Derivatives live in :mod:`dualgpu.rules`."""
from . import (  # noqa: F401
    convolution,
    decompositions,
    elementwise,
    products,
    reductions,
    shape,
    sorting,
    sparse,
)
