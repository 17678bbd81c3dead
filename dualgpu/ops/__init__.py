"""The op layer: every op in one block of one module of this package -- its declaration
(implementation, shape rule, Python form, C expression, flags), its rules for every
interpreter that does not derive them from its flags (jvp, vjp, vmap, separability, the
forward Laplacian, Taylor mode, sparsity, folding) and its lowerings -- grouped by family.

Rules are written with the op constructors of :mod:`dualgpu.lax` and the rule kits of
:mod:`dualgpu.rules`, which call the ops back when a rule runs; so the three import one
another as modules, never names, and importing this package first (``dualgpu/__init__.py``
does) loads them in one order: lax, then the families, each taking the kits it uses.
"""
from .. import lax  # noqa: F401, I001  (first: see above)
from . import (  # noqa: F401
    convolution,
    decompositions,
    linalg,
    casts,
    elementwise,
    fft,
    logical,
    matrix_functions,
    products,
    reductions,
    shape,
    sorting,
    sparse,
    special_functions,
)
