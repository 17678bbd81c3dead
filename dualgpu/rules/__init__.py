"""Derivative rules, attached to the ops of :mod:`dualgpu.ops` and written in registry ops
(:mod:`dualgpu.lax`) so that transforms compose. Importing this package attaches every
rule."""
from . import (  # noqa: F401
    convolution,
    decompositions,
    elementwise,
    folding,
    products,
    reductions,
    shape,
    sorting,
    sparse,
)
