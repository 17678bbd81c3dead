"""Weighted averages and covariances: ``average``, ``cov`` and ``corrcoef``, written as NumPy
writes them (the same operations in the same order, so the same values and dtypes) with the
ops of the other modules; differentiable in the data and in traced weights."""
from __future__ import annotations

import warnings

import numpy as np

from ...core.axes import check_axis as _check_axis
from ...errors import (
    ArgumentTypeError,
    AxisError,
    InvalidArgumentError,
    ShapeMismatchError,
    UnsupportedOpError,
    user_location,
)
from ...lax import (
    add,
    astype,
    broadcast_to,
    diagonal,
    imag,
    less_equal,
    multiply,
    real,
    reshape,
    sqrt,
    squeeze,
    subtract,
    transpose,
    true_divide,
    where,
)
from ...lax import dtype_of as _dtype
from ...lax import is_tracer as _is_tracer
from ...lax import shape_of as _shape
from .arguments import as_array, holds_tracer, host_value, is_complex
from .elementwise import clip, conj
from .introspection import result_type
from .joining import atleast_2d, concatenate
from .products import matmul
from .reductions import mean, sum_


def _weights(weights, a, axis):
    """NumPy's ``_weights_are_valid``: weights of ``a``'s shape, or 1-D (N-D) along
    ``axis``, reshaped to broadcast against ``a``."""
    wgt = as_array(weights)
    if _shape(a) == _shape(wgt):
        return wgt
    if axis is None:
        raise ArgumentTypeError(f"np.average: axis must be specified when shapes of a "
                                f"{_shape(a)} and weights {_shape(wgt)} differ "
                                f"(at {user_location()})")
    if _shape(wgt) != tuple(_shape(a)[ax] for ax in axis):
        raise ShapeMismatchError(f"np.average: the shape of weights {_shape(wgt)} must be "
                                 f"consistent with the shape of a {_shape(a)} along axis "
                                 f"{axis} (at {user_location()})")
    wgt = transpose(wgt, tuple(int(i) for i in np.argsort(axis)))
    return reshape(wgt, tuple(s if ax in axis else 1 for ax, s in enumerate(_shape(a))))


def average(a, axis=None, weights=None, returned=False, *, keepdims=np._NoValue):
    """``np.average``: the mean, or with ``weights`` (constant or traced) the weighted mean,
    along ``axis``; ``returned=True`` also gives the sum of the weights (broadcast to the
    result's shape). Constant weights summing to zero are refused as NumPy refuses them;
    traced weights cannot be checked before the program runs: a zero sum gives inf or nan
    there.

    >>> dg.grad(lambda w: np.average(np.array([1.0, 3.0]), weights=w))(np.array([1.0, 1.0]))
    array([-0.5,  0.5])
    """
    a = as_array(a)
    if axis is not None:  # NumPy's normalize_axis_tuple: the order given is kept
        axis = tuple(_check_axis(ax, len(_shape(a)), "average")
                     for ax in (axis if isinstance(axis, (tuple, list)) else (axis,)))
        if len(set(axis)) != len(axis):
            raise AxisError(f"np.average: repeated axis in {axis} (at {user_location()})")
    kd = {} if keepdims is np._NoValue else {"keepdims": keepdims}
    if weights is None:
        avg = mean(a, axis, **kd)
        scl = np.asarray(_dtype(avg).type(int(np.prod(_shape(a))) / int(np.prod(_shape(avg)))))
    else:
        wgt = _weights(weights, a, axis)
        if _dtype(a).kind in "biu":
            result_dtype = result_type(a, wgt, "f8")
        else:
            result_dtype = result_type(a, wgt)
        scl = sum_(wgt, axis=axis, dtype=result_dtype, **kd)
        if not _is_tracer(scl) and np.any(host_value(scl) == 0.0):
            raise InvalidArgumentError(f"np.average: weights sum to zero, can't be "
                                       f"normalized (at {user_location()})")
        weighted = multiply(astype(a, result_dtype), astype(wgt, result_dtype))
        avg = true_divide(sum_(weighted, axis=axis, **kd), scl)
    if returned:
        if _shape(scl) != _shape(avg):
            scl = broadcast_to(scl, _shape(avg))
        return avg, scl
    return avg


def _sample_weights(fweights, aweights, n):
    """NumPy's checks of ``cov``'s frequency and analytic weights; the product of those
    given (None if neither). Frequencies are integers (no derivative): traced ones are
    refused; traced analytic weights are differentiable (their signs cannot be checked)."""
    w = None
    if fweights is not None:
        if _is_tracer(fweights) or holds_tracer(fweights):
            raise UnsupportedOpError(f"np.cov: traced fweights are not supported (integer "
                                     f"frequencies have no derivative); pass them as "
                                     f"constants (at {user_location()})")
        fweights = host_value(fweights).astype(float)
        if not np.all(fweights == np.around(fweights)):
            raise ArgumentTypeError(f"np.cov: fweights must be integer "
                                    f"(at {user_location()})")
        _check_sample_weights("fweights", fweights, n)
        if np.any(fweights < 0):
            raise InvalidArgumentError(f"np.cov: fweights cannot be negative "
                                       f"(at {user_location()})")
        w = fweights
    if aweights is not None:
        aweights = as_array(aweights)
        aweights = astype(aweights, np.float64)
        _check_sample_weights("aweights", aweights, n)
        if not _is_tracer(aweights) and np.any(host_value(aweights) < 0):
            raise InvalidArgumentError(f"np.cov: aweights cannot be negative "
                                       f"(at {user_location()})")
        w = aweights if w is None else multiply(w, aweights)
    return w, aweights


def _check_sample_weights(name, w, n):
    if len(_shape(w)) > 1:
        raise ShapeMismatchError(f"np.cov: cannot handle multidimensional {name} "
                                 f"(at {user_location()})")
    if _shape(w)[0] != n:
        raise ShapeMismatchError(f"np.cov: incompatible numbers of samples ({n}) and {name} "
                                 f"({_shape(w)[0]}) (at {user_location()})")


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """``np.cov``: the covariance matrix of the rows (``rowvar``) or columns of ``m`` (and
    ``y``), with ``bias``/``ddof`` and frequency (constant) and analytic (constant or
    traced) weights, as NumPy computes it; differentiable in ``m``, ``y`` and
    ``aweights``.

    >>> dg.grad(lambda x: np.cov(x))(np.array([1.0, 2.0, 4.0]))
    array([-1.33333333, -0.33333333,  1.66666667])
    """
    if ddof is not None and ddof != int(ddof):
        raise InvalidArgumentError(f"np.cov: ddof must be integer, got {ddof!r} "
                                   f"(at {user_location()})")
    m = as_array(m)
    if len(_shape(m)) > 2:
        raise ShapeMismatchError(f"np.cov: m has more than 2 dimensions ({_shape(m)}) "
                                 f"(at {user_location()})")
    if y is not None:
        y = as_array(y)
        if len(_shape(y)) > 2:
            raise ShapeMismatchError(f"np.cov: y has more than 2 dimensions ({_shape(y)}) "
                                     f"(at {user_location()})")
    if dtype is None:
        dtype = result_type(m, np.float64) if y is None else result_type(m, y, np.float64)
    X = atleast_2d(astype(m, dtype))
    if not rowvar and len(_shape(m)) != 1:
        X = transpose(X)
    if _shape(X)[0] == 0:
        return np.array([]).reshape(0, 0)
    if y is not None:
        y = atleast_2d(astype(y, dtype))
        if not rowvar and _shape(y)[0] != 1:
            y = transpose(y)
        X = concatenate((X, y), axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    w, aweights = _sample_weights(fweights, aweights, _shape(X)[1])
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        fact = _shape(X)[1] - ddof
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = subtract(w_sum, ddof)
    else:
        fact = subtract(w_sum, true_divide(multiply(ddof, sum_(multiply(w, aweights))), w_sum))
    if not _is_tracer(fact):
        if fact <= 0:
            warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
            fact = 0.0
    else:  # NumPy's 0 (a warning and inf/nan) where there are no degrees of freedom
        fact = where(less_equal(fact, 0), 0.0, fact)
    X = subtract(X, avg[:, None])
    X_T = transpose(X) if w is None else transpose(multiply(X, w))
    c = matmul(X, conj(X_T))
    c = multiply(c, true_divide(1, fact))
    return squeeze(c)


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """``np.corrcoef``: ``cov`` divided by the outer product of the standard deviations,
    clipped to [-1, 1] as NumPy's (real and imaginary parts of complex values apart)."""
    c = cov(x, y, rowvar, dtype=dtype)
    if len(_shape(c)) != 2:  # one variable: NumPy's c / c (nan where c is 0, nan or inf)
        return true_divide(c, c)
    stddev = sqrt(real(diagonal(c)))
    c = true_divide(c, stddev[:, None])
    c = true_divide(c, stddev[None, :])
    if not is_complex(c):
        return clip(c, -1, 1)
    return add(clip(real(c), -1, 1), multiply(clip(imag(c), -1, 1), 1j))
