"""Activations and losses, written in registry ops (so they trace, differentiate to any
order, and fuse on the GPU). Each also works on concrete NumPy/CuPy arrays.

Example::

    >>> import numpy as np, dualgpu as dg
    >>> dg.nn.softplus(np.array([-1000.0, 0.0, 1000.0]))
    array([0.00000000e+00, 6.93147181e-01, 1.00000000e+03])
"""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from ..errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    ShapeMismatchError,
    UnsupportedOpError,
    user_location,
)
from ..lax import astype, dtype_of, is_tracer, shape_of
from . import numpy as dnp
from .numpy.arguments import arraylike

__all__ = ["sigmoid", "log_sigmoid", "tanh", "relu", "leaky_relu", "elu", "selu", "gelu",
           "silu", "swish", "softplus", "mish", "hard_tanh", "softmax", "log_softmax",
           "logsumexp", "xlogy", "logit", "mse", "cross_entropy",
           "binary_cross_entropy_with_logits"]


def sigmoid(x):
    """Logistic sigmoid ``1 / (1 + exp(-x))``; like NumPy's functions it takes lists.

    >>> dg.nn.sigmoid([0.0, 2.0])
    array([0.5       , 0.88079708])
    """
    return dnp.logistic(arraylike(x))


def log_sigmoid(x):
    """``log(sigmoid(x))`` as ``-softplus(-x)``, stable for any ``x`` (SciPy's
    ``log_expit``): ``log(sigmoid(40))`` is 0 where the value is -4.2e-18, and
    ``log(sigmoid(-800))`` is -inf (its gradient NaN) where the value is -800.

    >>> dg.nn.log_sigmoid(np.array([-800.0, 40.0]))
    array([-8.00000000e+02, -4.24835426e-18])
    """
    return lax.negative(softplus(lax.negative(arraylike(x))))


def tanh(x):
    return lax.tanh(x)


def relu(x):
    """``max(x, 0)``; the derivative at 0 is 0 (as in JAX and PyTorch)."""
    return dnp.where(lax.greater(x, 0), x, 0.0)


def leaky_relu(x, negative_slope: float = 0.01):
    return dnp.where(lax.greater(x, 0), x, lax.multiply(negative_slope, x))


def elu(x, alpha: float = 1.0):
    safe = dnp.where(lax.greater(x, 0), 0.0, x)
    return dnp.where(lax.greater(x, 0), x, lax.multiply(alpha, lax.expm1(safe)))


_SELU_ALPHA = 1.6732632423543772
_SELU_SCALE = 1.0507009873554805


def selu(x):
    return lax.multiply(_SELU_SCALE, elu(x, _SELU_ALPHA))


def gelu(x, approximate: bool = False):
    """Gaussian error linear unit ``x * Phi(x)``; ``approximate=True`` is the tanh form
    ``x * (1 + tanh(u)) / 2``. Both are written without ``1 + erf`` or ``1 + tanh``, which
    cancel for negative ``x`` (``1 + erf(-7)`` is 0 where Phi(-10) is 7.6e-24): as
    ``x * erfc(-x / sqrt(2)) / 2`` and ``x * logistic(2u)``.

    >>> f"{float(dg.nn.gelu(np.array(-10.0))):.6e}"     # -10 * scipy.special.ndtr(-10)
    '-7.619853e-23'
    """
    if approximate:
        inner = lax.multiply(math.sqrt(2 / math.pi),
                             lax.add(x, lax.multiply(0.044715, dnp.power(x, 3))))
        return lax.multiply(x, dnp.logistic(lax.multiply(2.0, inner)))
    return lax.multiply(lax.multiply(0.5, x),
                        dnp.erfc(lax.multiply(x, -1 / math.sqrt(2))))


def silu(x):
    """``x * sigmoid(x)`` (also called swish)."""
    x = arraylike(x)
    return lax.multiply(x, dnp.logistic(x))


swish = silu


def softplus(x):
    """``log(1 + exp(x))``, stable for any ``|x|``."""
    return lax.logaddexp(x, 0.0)


def mish(x):
    return lax.multiply(x, lax.tanh(softplus(x)))


def hard_tanh(x, lo: float = -1.0, hi: float = 1.0):
    return dnp.clip(arraylike(x), lo, hi)


def logsumexp(x, axis=None, b=None, keepdims: bool = False, return_sign: bool = False):
    """``log(sum(b * exp(x)))`` along ``axis``, stable for any ``|x|`` (SciPy's signature;
    weights ``b`` broadcast against ``x``; ``return_sign`` is refused on traced values).

    >>> float(logsumexp(np.log(np.array([1.0, 3.0])), b=np.array([2.0, 0.5])))
    1.252762968495368
    """
    if return_sign:
        raise UnsupportedOpError("logsumexp(return_sign=True) is not supported on traced "
                                 "values: the sign is piecewise constant; take b > 0")
    x = arraylike(x)
    if b is not None and not isinstance(b, (int, float)):  # a Python number stays weak
        x, b = dnp.broadcast_arrays(x, arraylike(b))
    m = dnp.stop_gradient(dnp.max(x, axis=axis, keepdims=True))
    m = dnp.where(lax.isfinite(m), m, 0.0)
    e = lax.exp(lax.subtract(x, m))
    s = dnp.sum(e if b is None else lax.multiply(b, e), axis=axis, keepdims=True)
    out = lax.add(lax.log(s), m)
    if not keepdims:
        out = dnp.squeeze(out, axis=_axes_tuple(axis, len(shape_of(x))))
    return out


def _axes_tuple(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    return (axis,) if isinstance(axis, int) else tuple(axis)


def log_softmax(x, axis=-1):
    return lax.subtract(x, logsumexp(x, axis=axis, keepdims=True))


def softmax(x, axis=-1):
    return lax.exp(log_softmax(x, axis=axis))


def xlogy(x, y):
    """``x * log(y)``, zero where ``x == 0`` (also for ``y`` 0, negative or inf, as SciPy).

    Derivatives are JAX's where they are finite: ``log(y)`` in ``x`` and ``x / y`` in ``y``,
    also at ``x == 0`` (``d/dx xlogy(0, 2) = log 2``); at ``x == 0`` with ``y`` not a
    positive finite number they are 0 (JAX gives -inf/NaN there)."""
    x, y = scipy_float(x, y)
    y_ok = lax.logical_and(lax.greater(y, 0), lax.isfinite(y))
    safe_y = dnp.where(lax.logical_and(lax.equal(x, 0), lax.logical_not(y_ok)), 1.0, y)
    return lax.multiply(x, lax.log(safe_y))


def scipy_float(*xs):
    """The arguments in the floating type of SciPy's loops: float32 stays, float16 and
    integers become float64 (SciPy's special functions have no half-precision loops)."""
    dt = _RESULT_TYPE(*[dtype_of(x) if hasattr(x, "dtype") else x for x in xs])
    target = dt if dt in (np.float32, np.float64) or dt.kind == "c" else np.dtype(np.float64)
    return [astype(x, target) if hasattr(x, "dtype") and dtype_of(x) != target
            else x for x in xs]


_EXP, _RESULT_TYPE = np.exp, np.result_type  # bound at import: traced dualgpu functions
# see ``np`` rebound


def exp_float(x):
    """``x`` in the floating type ``np.exp`` gives it (int8: float16, int64: float64)."""
    x = arraylike(x)
    dt = dtype_of(x)
    if dt.kind in "fc":
        return x
    return astype(x, _EXP.resolve_dtypes((dt, None))[1])


def scipy_softmax(x, axis=None):
    """``scipy.special.softmax``: over every element by default (``axis=None``, SciPy's
    default; :func:`softmax` takes the last axis); integers in ``np.exp``'s float type."""
    return softmax(exp_float(x), axis=axis)


def scipy_log_softmax(x, axis=None):
    """``scipy.special.log_softmax``: over every element by default, as SciPy."""
    return log_softmax(exp_float(x), axis=axis)


def logit(p):
    (p,) = scipy_float(p)
    return lax.subtract(lax.log(p), lax.log1p(lax.negative(p)))


def mse(pred, target):
    """Mean squared error."""
    d = lax.subtract(pred, target)
    return dnp.mean(lax.multiply(d, d))


def cross_entropy(logits, labels):
    """Mean cross-entropy of integer ``labels`` (shape (n,)) under ``logits`` (shape (n, k)).

    Labels must lie in ``[0, k)``: concrete ones outside raise :class:`DualgpuError` (a
    negative label would otherwise pick a class from the end); traced labels (an argument
    of the traced function) outside raise :class:`~dualgpu.errors.IndexOutOfBoundsError`
    when the program runs (a negative label reported as the index ``k``); on CuPy with
    ``dg.config["check_indices"] = False``, whose gathers do not check their indices, they
    give a NaN loss.

    >>> round(float(dg.nn.cross_entropy(np.log([[0.25, 0.75]]), [1])), 12)  # -log(0.75)
    0.287682072452
    """
    import numpy as np

    logits, labels = arraylike(logits), arraylike(labels)
    shape, label_shape = shape_of(logits), shape_of(labels)
    if len(shape) != 2 or label_shape != shape[:1]:
        raise ShapeMismatchError(f"nn.cross_entropy: expected logits of shape (n, k) and "
                                 f"labels of shape (n,), got {shape} and {label_shape} "
                                 f"(at {user_location()})")
    if np.dtype(dtype_of(labels)).kind not in "iu":
        raise ArgumentTypeError(f"nn.cross_entropy: labels must be integer class indices, got "
                                f"dtype {dtype_of(labels)}; pass labels.astype(int) "
                                f"(at {user_location()})")
    n, k = shape
    outside = lax.logical_or(lax.less(labels, 0), lax.greater_equal(labels, k))
    if not is_tracer(labels):
        bad = np.flatnonzero(_to_host(outside))
        if bad.size:
            i = int(bad[0])
            raise InvalidArgumentError(
                f"nn.cross_entropy: labels must lie in [0, {k}) (one class per column of "
                f"logits), got labels[{i}] = {int(_to_host(labels)[i])} ({bad.size} out of "
                f"range, at {user_location()}); remap the labels or widen the logits")
        return lax.negative(dnp.mean(dnp.getitem(log_softmax(logits, axis=-1),
                                                 (np.arange(n), labels))))
    # a negative label is sent out of range (to k): the gather raises on it as on a label
    # >= k (on CuPy from the index bounds); unchecked, CuPy's wraps and the NaN marks the loss
    picked = dnp.getitem(log_softmax(logits, axis=-1),
                         (np.arange(n), dnp.where(lax.less(labels, 0), k, labels)))
    return lax.negative(dnp.mean(dnp.where(outside, np.nan, picked)))


def _to_host(a):
    """A concrete NumPy or CuPy array as a NumPy array (labels are small)."""
    import numpy as np

    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def binary_cross_entropy_with_logits(logits, targets):
    """Mean of ``softplus(z) - t*z``: stable for any logit."""
    return dnp.mean(lax.subtract(softplus(logits), lax.multiply(targets, logits)))
