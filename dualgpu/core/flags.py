"""Properties of primitives, which passes ask about instead of op names (tinygrad's
``GroupOp`` sets).

>>> from dualgpu.ops.shape import reshape
>>> from dualgpu.core.flags import Flag
>>> reshape.has(Flag.VIEW), reshape.has(Flag.LIBRARY)
(True, False)
"""
from __future__ import annotations


class Flag:
    """Properties of primitives that passes ask about (never a primitive's name).

    ``prim.has(Flag.VIEW)``; an op's ``kind`` (elementwise, reduction, scan, shape, library,
    generic) is one of its flags too.
    """

    ELEMENTWISE = "elementwise"  # pointwise over broadcast operands; a C form for kernels
    REDUCTION = "reduction"      # reduces over static ``axes``; ``prim.monoid`` says how
    SCAN = "scan"                # cumulative along one axis
    SHAPE = "shape"              # moves or selects elements (reshape, getitem, pad, ...)
    LIBRARY = "library"          # a library call on plain arrays (BLAS, LAPACK, sparse)
    VIEW = "view"                # inside a kernel: relabels axes, moves no data
    SELECTS = "selects"          # every output element is an element of the first input
    LINEAR = "linear"            # linear in its floating inputs (the JVP is the op itself)
    MULTILINEAR = "multilinear"  # linear in each operand of ``prim.linear_operands`` apart
    #                              (a product: multiply, matmul, einsum, the sparse products)
    IGNORES_VALUES = "ignores_values"  # reads only the shape and dtype of its input
    CONDITION = "condition"      # its first operand is a condition, read as bool (C: where)
    CASTS = "casts"              # its C form casts its operand, read in its own dtype
    INDICES_OF_AXIS = "indices_of_axis"  # its output holds indices in [0, n) of its input's
                                 # ``axis`` (n its length): in range wherever that axis is
    ADDITIVE = "additive"        # binary elementwise, ``±a ± b``: each operand shifts the
    #                              other (add, subtract: a bias added to a product's output)
