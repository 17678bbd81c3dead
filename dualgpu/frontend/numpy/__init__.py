"""The ``numpy`` namespace of traced values: what a traced function calls for ``np.<name>``
(and ``cupy.<name>``, ``xp.<name>``), under NumPy's names. ``linalg``, ``fft`` and
``polynomial`` are its submodules, as NumPy's.

Each function normalises NumPy's arguments and binds ops; each also computes at once on
concrete arrays. The functions live in modules by topic (``elementwise``, ``reductions``,
``shapes``, ``joining``, ``indexing``, ``products``, ``sorting``, ``numerics``,
``statistics``, ``functional``, ...); this module only imports them. Names that are Python
builtins (``sum``, ``max``, ``min``, ``abs``, ``round``, ``all``, ``any``, ``pow``) are
bound here only, so that no module body shadows a builtin.

    >>> from dualgpu.frontend import numpy as dnp
    >>> dg.grad(lambda x: dnp.sum(dnp.sin(x)))(np.array([0.0]))
    array([1.])
"""
from ...lax import (
    astype,
    broadcast_to,
    diagonal,
    expand_dims,
    eye,
    flip,
    getitem,
    imag,
    moveaxis,
    ones_like,
    pad,
    put_along_axis_add,
    ravel,
    real,
    reshape,
    squeeze,
    stop_gradient,
    swapaxes,
    take_along_axis,
    transpose,
    where,
    zeros_like,
)
from ...lax import (
    ravel as flatten,
)
from ...ops.sorting import argmax, argmin, searchsorted
from . import fft, linalg, polynomial
from .arguments import (
    array,
    asarray,
)
from .construction import (
    full,
    full_like,
    geomspace,
    linspace,
    logspace,
    meshgrid,
)
from .elementwise import UFUNCS as _UFUNCS
from .elementwise import (
    angle,
    clip,
    conj,
    conjugate,
    deg2rad,
    degrees,
    digamma,
    e,
    erf,
    erfc,
    expit,
    fabs,
    fill_like,
    float_power,
    frexp,
    gammaln,
    i0,
    inf,
    logaddexp2,
    logical_xor,
    logistic,
    nan,
    nan_to_num,
    pi,
    polygamma,
    power,
    rad2deg,
    radians,
    real_if_close,
    round_,
    sinc,
)
from .elementwise import (
    power as pow,
)
from .elementwise import (
    round_ as around,
)
from .elementwise import (
    round_ as round,
)
from .functional import (
    apply_along_axis,
    piecewise,
    vectorize,
)
from .histograms import histogram, histogram_bin_edges
from .indexing import (
    bincount,
    diag,
    newaxis,
    select,
    take,
    tril,
    trim_zeros,
    triu,
)
from .introspection import (
    iscomplexobj,
    isscalar,
    ndim,
    result_type,
    shape,
    size,
)
from .joining import (
    append,
    array_split,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    block,
    c_,
    column_stack,
    concatenate,
    dsplit,
    dstack,
    hsplit,
    hstack,
    r_,
    row_stack,
    split,
    stack,
    vsplit,
    vstack,
)
from .numerics import (
    convolve,
    correlate,
    diff,
    ediff1d,
    gradient,
    interp,
    polyfit,
    polyval,
    trapezoid,
    trapz,
    unwrap,
    vander,
)
from .products import (
    cross,
    dot,
    einsum,
    inner,
    kron,
    matmul,
    outer,
    tensordot,
    trace,
    vdot,
)
from .reductions import (
    all_ as all,
)
from .reductions import (
    amax,
    amin,
    count_nonzero,
    cumprod,
    cumsum,
    mean,
    nancumprod,
    nancumsum,
    nanmax,
    nanmean,
    nanmin,
    nanprod,
    nanstd,
    nansum,
    nanvar,
    prod,
    ptp,
    std,
    var,
)
from .reductions import (
    amax as max,
)
from .reductions import (
    amin as min,
)
from .reductions import (
    any_ as any,
)
from .reductions import (
    sum_ as sum,
)
from .shapes import (
    broadcast_arrays,
    copy,
    fliplr,
    flipud,
    repeat,
    roll,
    rollaxis,
    rot90,
    tile,
)
from .sorting import (
    argpartition,
    argsort,
    median,
    partition,
    percentile,
    quantile,
    sort,
)
from .statistics import (
    average,
    corrcoef,
    cov,
)

# NumPy's functions of the elementwise ops that none of the modules above writes out: derived
# from the ops' declaration rows (numpy_functions in elementwise.py), under NumPy's names
globals().update({name: f for name, f in _UFUNCS.items() if name not in globals()})

