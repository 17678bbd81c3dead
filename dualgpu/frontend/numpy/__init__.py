"""The ``numpy`` namespace of traced values: what a traced function calls for ``np.<name>``
(and ``cupy.<name>``, ``xp.<name>``), under NumPy's names. ``linalg`` and ``fft`` are its
submodules, as NumPy's.

Each function normalises NumPy's arguments and binds ops; each also computes at once on
concrete arrays. The functions live in modules by topic (``elementwise``, ``reductions``,
``shapes``, ``joining``, ``indexing``, ``products``, ``sorting``, ``numerics``, ...); this
module only imports them. Names that are Python builtins (``sum``, ``max``, ``min``,
``abs``, ``round``, ``all``, ``any``, ``pow``) are bound here only, so that no module body
shadows a builtin.

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
from ...oplib.argmax import argmax, argmin
from ...oplib.searchsorted import searchsorted
from . import fft, linalg
from .arguments import (
    array,
    asarray,
)
from .construction import (
    full,
    full_like,
    linspace,
    logspace,
)
from .elementwise import (
    absolute,
    add,
    angle,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    bitwise_and,
    bitwise_invert,
    bitwise_left_shift,
    bitwise_not,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    cbrt,
    ceil,
    clip,
    conj,
    conjugate,
    copysign,
    cos,
    cosh,
    deg2rad,
    degrees,
    digamma,
    divide,
    e,
    equal,
    erf,
    erfc,
    exp,
    exp2,
    expit,
    expm1,
    fabs,
    fill_like,
    float_power,
    floor,
    floor_divide,
    fmax,
    fmin,
    fmod,
    frexp,
    gammaln,
    greater,
    greater_equal,
    heaviside,
    hypot,
    inf,
    invert,
    isfinite,
    isinf,
    isnan,
    ldexp,
    left_shift,
    less,
    less_equal,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logaddexp2,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    logistic,
    maximum,
    minimum,
    multiply,
    nan,
    nan_to_num,
    negative,
    nextafter,
    not_equal,
    pi,
    polygamma,
    power,
    rad2deg,
    radians,
    real_if_close,
    reciprocal,
    remainder,
    right_shift,
    rint,
    round_,
    sign,
    signbit,
    sin,
    sinc,
    sinh,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    true_divide,
    trunc,
)
from .elementwise import (
    absolute as abs,
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
from .indexing import (
    diag,
    newaxis,
    select,
    take,
    tril,
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
