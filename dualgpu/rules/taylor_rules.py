"""What an op's Taylor rule works with (Taylor mode of any order,
:mod:`dualgpu.transforms.taylor`).

Every value ``y`` that depends on the differentiated inputs carries its *series*: a list
``[c_1, ..., c_K]`` of its normalized Taylor coefficients along a curve ``x(t)`` of the
inputs, ``y(x(t)) = y + c_1 t + c_2 t**2 + ... + c_K t**K + O(t**(K+1))`` (so
``c_k = y_k / k!`` for JAX's ``y_k``, the k-th derivative; normalized coefficients make a
product a Cauchy sum). ``None`` is a symbolic zero, for a whole series or one coefficient.
With ``mode.size`` set, every coefficient carries a leading axis of ``R`` *directions*
(``R`` curves propagated together, through the ops' vmap rules).

A Taylor rule is ``rule(eqn, values, series, mode) -> [series of each output]``
(``values``: the operands in the new trace; ``series``: theirs, ``None`` for an operand
without one; ``mode``: a :class:`Mode`). The ops attach their rules with
``defrules(prim, taylor=rule)`` beside their derivatives; linear ops, elementwise ops with
partials and every other op are handled by the interpreter.

Example (an op without derivatives: ``stop_gradient``)::

    def _stop_taylor(eqn, values, series, mode):
        return [None]
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .. import lax
from ..core.ir import Eqn
from .batching_rules import lift as _lift
from .common import add_any

# the ops this module's helpers equip belong to the block that calls them (op.sites)
RULE_KIT = True
# (*) mypy cannot type lax's elementwise ops (lax.__getattr__ finds them) within the op
# layer's import cycle


class Mode:
    """The propagation: ``order`` (``K``, the coefficients carried) and ``size`` (``R``, the
    leading direction axis of every coefficient, or None for none)."""

    def __init__(self, order: int, size: int | None, batch_rule, cache: dict | None = None):
        self.order = order
        self.size = size
        self.batch_rule = batch_rule  # prim -> its vmap rule (transforms.vmap.rule_for)
        # the interpreter's graphs of one build (derivatives of partials, nested JVPs), by
        # op, parameters and operand types: an op met again reuses them
        self.cache = {} if cache is None else cache

    @property
    def lead(self) -> tuple:
        return () if self.size is None else (self.size,)

    def apply(self, eqn, args, flags, **params) -> list:
        """``eqn``'s op applied to ``args`` of which those flagged are coefficients (with the
        direction axis when there is one); ``params`` replace the equation's."""
        if params:
            eqn = Eqn(eqn.prim, eqn.inputs, {**eqn.params, **params}, eqn.outs, eqn.source)
        if self.size is None or not any(flags):
            return bind_all(eqn, args)
        outs, out_flags = self.batch_rule(eqn.prim)(eqn, list(args), list(flags), self.size)
        return [o if b else lax.broadcast_to(o, (self.size,) + tuple(v.shape))
                for o, b, v in zip(outs, out_flags, eqn.outs)]

    def lift(self, c, rank: int):
        """A coefficient ready to broadcast against values of rank ``rank`` (its direction
        axis, if any, kept in front)."""
        if c is None or self.size is None:
            return c
        return _lift(c, rank)

    def fit(self, c, shape, dtype):
        """A coefficient shaped ``lead + shape`` in ``dtype``."""
        if c is None:
            return None
        full = self.lead + tuple(shape)
        if tuple(np.shape(c)) != full:
            c = lax.broadcast_to(c, full)
        if c.dtype != dtype and np.dtype(dtype).kind in "fc":
            c = lax.astype(c, dtype)
        return c


def bind_all(eqn, args, **params) -> list:
    out = eqn.prim.bind(*args, **{**eqn.params, **params})
    return list(out) if eqn.prim.multiple_results else [out]


# ------------------------------------------------------------------------------ series
def mul(a, b):
    """``a * b`` with symbolic zeros."""
    if a is None or b is None:
        return None
    return lax.multiply(a, b)


def cauchy(a: list, b: list, k: int, lo: int = 0):
    """The t**k coefficient of the product of two series ``a``, ``b`` given with their
    values (``a[0]``, ``b[0]``), the terms ``a[i] * b[k - i]`` for ``lo <= i <= k - lo``."""
    out = None
    for i in range(lo, k - lo + 1):
        out = add_any(out, mul(a[i], b[k - i]))
    return out


def square(a: list, k: int, lo: int = 0):
    """The t**k coefficient of ``a * a``: ``cauchy(a, a, k, lo)`` with each symmetric pair
    of terms taken once and doubled."""
    out = None
    for i in range(lo, (k + 1) // 2):
        term = mul(a[i], a[k - i])
        if term is not None:
            out = add_any(out, lax.multiply(2.0, term))  # type: ignore[misc]  # (*)
    if k % 2 == 0 and k // 2 >= lo:
        out = add_any(out, mul(a[k // 2], a[k // 2]))
    return out


def lifted(series, mode, rank):
    """A series ``[c_1..c_K]`` (or None) as ``[None, c_1, ..., c_K]`` with each coefficient
    lifted to rank ``rank`` (index = the power of t; the value slot left empty)."""
    K = mode.order
    if series is None:
        return [None] * (K + 1)
    return [None] + [mode.lift(c, rank) for c in series]


def finish(cs, ans, mode):
    """Coefficients ``[c_1..c_K]`` of output ``ans``, fitted to its shape and dtype; None
    when all are zero or ``ans`` is not floating."""
    if ans.dtype.kind not in "fc" or all(c is None for c in cs):
        return None
    return [mode.fit(c, tuple(ans.shape), ans.dtype) for c in cs]


# ------------------------------------------------------------------------------ products
def multilinear_rule(eqn, values, series, mode, linear=None):
    """An op linear in each operand at ``linear`` (default: all the floating ones) --
    multiply, matmul, einsum, the sparse products: ``c_k(op(A, B, ..)) = sum over
    i + j + .. = k of op(A_i, B_j, ..)`` (``A_0`` the value), the Leibniz rule."""
    if linear is None:
        linear = range(len(values))
    act = [i for i in linear if series[i] is not None]
    K = mode.order
    outs: list = [None] * K
    for k in range(1, K + 1):
        for split in _compositions(k, len(act)):
            args, flags, zero = list(values), [False] * len(values), False
            for i, p in zip(act, split):
                if p:
                    c = series[i][p - 1]
                    if c is None:
                        zero = True
                        break
                    args[i], flags[i] = c, mode.size is not None
            if not zero:
                outs[k - 1] = add_any(outs[k - 1], mode.apply(eqn, args, flags)[0])
    ans = bind_all(eqn, values)[0]
    return [finish(outs, ans, mode)]


def _compositions(k: int, n: int):
    """The ways to write ``k`` as an ordered sum of ``n`` parts ``>= 0``."""
    for cut in itertools.product(range(k + 1), repeat=n):
        if sum(cut) == k:
            yield cut


# ------------------------------------------------------------------------------ recurrences
def unary_recurrence(step, first: bool = False):
    """A rule for a unary elementwise op ``y = f(x)`` given by its ODE as a recurrence:
    ``step(x, y, k)`` returns ``y_k`` from the lifted series ``x = [x_0, x_1..x_K]`` and
    ``y = [y_0, y_1..y_(k-1)]`` (O(K**2) products per value, as JAX's ``jet`` rules).
    ``first``: ``step(x, y, k, d)`` also gets ``d = f'(x_0)`` from the op's declared
    partial, for ODEs whose right-hand side at ``t = 0`` cancels in the tails (tanh's
    ``1 - y**2`` is 0 from ``|x| ~ 19`` on, and off by ``eps / f'`` long before, where the
    partial is written without the cancellation)."""
    def rule(eqn, values, series, mode):
        ans = bind_all(eqn, values)[0]
        if series[0] is None or values[0].dtype.kind not in "fc":
            return [None]
        rank = len(ans.shape)
        x = lifted(series[0], mode, rank)
        x[0] = values[0]
        y = [ans]
        extra = (eqn.prim.partials[0](values[0], ans),) if first else ()
        for k in range(1, mode.order + 1):
            y.append(step(x, y, k, *extra))
        return [finish(y[1:], ans, mode)]

    return rule


def _weighted(x, y, k, lo=1):
    """``sum_{j=lo}^{k} j x_j y_(k-j)``."""
    out = None
    for j in range(lo, k + 1):
        term = mul(x[j], y[k - j])
        if term is not None:
            out = add_any(out, term if j == 1 else lax.multiply(float(j), term))
    return out


def _over(a, k):
    return None if a is None else lax.multiply(1.0 / k, a)


def exp_step(x, y, k):        # y' = y x'
    return _over(_weighted(x, y, k), k)


def expm1_step(x, y, k, d):   # y' = (y + 1) x', y_0 + 1 = d = exp(x_0)
    z = [d] + y[1:]
    return _over(_weighted(x, z, k), k)


def log_step(x, y, k):        # x y' = x'  ->  y_k = (x_k - 1/k sum_{j<k} j y_j x_(k-j)) / x_0
    s = None
    for j in range(1, k):
        s = add_any(s, mul(lax.multiply(float(j), y[j]) if y[j] is not None else None,
                           x[k - j]))
    num = x[k] if s is None else (lax.negative(_over(s, k)) if x[k] is None
                                  else lax.subtract(x[k], _over(s, k)))
    return None if num is None else lax.true_divide(num, x[0])


def log1p_step(x, y, k):
    z = [lax.add(x[0], 1.0)] + x[1:]
    return log_step(z, y, k)


def sqrt_step(x, y, k):       # y * y = x  ->  y_k = (x_k - sum_{0<i<k} y_i y_(k-i)) / (2 y_0)
    s = square(y + [None], k, lo=1) if k > 1 else None
    num = x[k] if s is None else (lax.negative(s) if x[k] is None else lax.subtract(x[k], s))
    return None if num is None else lax.true_divide(num, lax.multiply(2.0, y[0]))


def reciprocal_step(x, y, k):  # x y = 1  ->  y_k = -sum_{1<=i<=k} x_i y_(k-i) / x_0
    s = None
    for i in range(1, k + 1):
        s = add_any(s, mul(x[i], y[k - i]))
    return None if s is None else lax.negative(lax.true_divide(s, x[0]))


def _odd_square(y, m, sign):
    """``[1 + sign * y**2]_m`` (the t**m coefficient)."""
    sq = square(y, m)
    if m == 0:
        return lax.add(1.0, sq) if sign > 0 else lax.subtract(1.0, sq)
    if sq is None:
        return None
    return sq if sign > 0 else lax.negative(sq)


def tanh_step(x, y, k, d):    # y' = (1 - y**2) x', 1 - y_0**2 = d = tanh'(x_0)
    z = [d] + [_odd_square(y, m, -1) for m in range(1, k)]
    return _over(_weighted(x, z, k), k)


def tan_step(x, y, k):        # y' = (1 + y**2) x'
    z = [_odd_square(y, m, +1) for m in range(k)]
    return _over(_weighted(x, z, k), k)


def logistic_step(x, y, k, d):  # y' = y (1 - y) x', y_0 (1 - y_0) = d = y_0 logistic(-x_0)
    z = [d]
    for m in range(1, k):
        sq = square(y, m)
        z.append(y[m] if sq is None else (lax.negative(sq) if y[m] is None
                                          else lax.subtract(y[m], sq)))
    return _over(_weighted(x, z, k), k)


def sin_cos_rule(which: str):
    """sin and cos together: ``s' = c x'``, ``c' = -s x'``; sinh and cosh likewise
    (``c' = s x'``)."""
    hyperbolic = which in ("sinh", "cosh")

    def rule(eqn, values, series, mode):
        first, second = (lax.sinh, lax.cosh) if hyperbolic else (lax.sin, lax.cos)
        ans = bind_all(eqn, values)[0]
        if series[0] is None:
            return [None]
        x = lifted(series[0], mode, len(ans.shape))
        x[0] = values[0]
        s, c = [first(values[0])], [second(values[0])]
        for k in range(1, mode.order + 1):
            sk, ck = _over(_weighted(x, c, k), k), _over(_weighted(x, s, k), k)
            s.append(sk)
            c.append(ck if ck is None or hyperbolic else lax.negative(ck))
        return [finish((s if which in ("sin", "sinh") else c)[1:], ans, mode)]

    return rule


def divide_rule(eqn, values, series, mode):
    """``q = a / b``: ``q b = a``, ``q_k = (a_k - sum_{1<=i<=k} b_i q_(k-i)) / b_0``."""
    ans = bind_all(eqn, values)[0]
    rank = len(ans.shape)
    a = lifted(series[0], mode, rank)
    b = lifted(series[1], mode, rank)
    q = [ans]
    for k in range(1, mode.order + 1):
        s = None
        for i in range(1, k + 1):
            s = add_any(s, mul(b[i], q[k - i]))
        num = a[k] if s is None else (lax.negative(s) if a[k] is None
                                      else lax.subtract(a[k], s))
        q.append(None if num is None else lax.true_divide(num, values[1]))
    return [finish(q[1:], ans, mode)]


def unary_derivatives_rule(derivative):
    """A unary op whose m-th derivative is known in closed form, ``derivative(x, m, eqn)``
    (polygamma: polygamma of order n + m): Faà di Bruno, ``y_k = sum_m f^(m)(x_0) / m!
    [(x - x_0)**m]_k``."""
    def rule(eqn, values, series, mode):
        ans = bind_all(eqn, values)[0]
        if series[0] is None:
            return [None]
        d = lifted(series[0], mode, len(ans.shape))
        out = faa_di_bruno(d, lambda m: derivative(values[0], m, eqn), mode.order)
        return [finish(out[1:], ans, mode)]

    return rule


def faa_di_bruno(d, derivative, K):
    """``[None, y_1..y_K]`` of ``y = f(x)`` from the lifted series ``d`` of ``x`` (its
    value slot empty) and the derivatives ``derivative(m)`` of ``f`` at ``x_0``:
    ``y_k = sum_m f^(m) / m! [(x - x_0)**m]_k``."""
    power, out = d, [None] * (K + 1)
    for m in range(1, K + 1):
        f = lax.multiply(1.0 / math.factorial(m), derivative(m))
        for k in range(m, K + 1):
            out[k] = add_any(out[k], mul(f, power[k]))
        power = [None] + [cauchy(power, d, k, lo=1) for k in range(1, K + 1)]
    return out


def power_rule(eqn, values, series, mode):
    """``x ** y``. A constant exponent: Faà di Bruno with ``d^m/dx^m x**p = p (p-1) ..
    (p-m+1) x**(p-m)`` (0 where the falling factorial is: exact at ``x = 0`` for integer
    powers). A differentiated exponent: ``exp(y log x)``, the series of log, a Cauchy
    product and the series of exp (``log x`` taken as 0 at a constant ``x = 0``, as the
    partial does; where a differentiated ``x`` is 0, the series of ``x(t) ** y_0``: the
    exponent's terms do not enter, as the partial in ``y`` is 0 there). Exact where the
    declared partials are not smooth (``y * x**(y-1)`` is taken as 0 at ``y == 0``, so
    that nested JVPs of ``power`` are off at that point from the third order on)."""
    x, y = values
    ans = bind_all(eqn, values)[0]
    rank, K = len(ans.shape), mode.order
    if series[0] is not None:
        d = lifted(series[0], mode, rank)

        def derivative(m):
            c = y
            for i in range(1, m):
                c = lax.multiply(c, lax.subtract(y, float(i)))
            return lax.where(lax.equal(c, 0), 0.0,
                             lax.multiply(c, lax.power(x, lax.subtract(y, float(m)))))

        in_x = faa_di_bruno(d, derivative, K)   # the exponent held at y_0
        if series[1] is None:
            return [finish(in_x[1:], ans, mode)]
    elif series[1] is None:
        return [None]
    zero = lax.equal(x, 0)
    if series[0] is None:
        lx = [lax.log(lax.where(zero, 1.0, x))] + [None] * K
    else:
        xs = lifted(series[0], mode, rank)
        xs[0] = lax.where(zero, 1.0, x)      # x == 0 is taken from in_x below
        lx = [lax.log(xs[0])]
        for k in range(1, K + 1):
            lx.append(log_step(xs, lx, k))
    ys = lifted(series[1], mode, rank)
    ys[0] = y
    z = [lax.multiply(y, lx[0])] + [cauchy(ys, lx, k) for k in range(1, K + 1)]
    e = [ans]
    for k in range(1, K + 1):
        e.append(exp_step(z, e, k))
    if series[0] is not None:
        # where x == 0, log x is -inf: the exponent's series are taken not to enter there
        # (power's partial in y is 0 at x == 0, the documented convention), so the
        # coefficients are those of x(t) ** y_0 -- exact when the exponent's terms are 0
        e = [None] + [None if a is None and b is None else
                      lax.where(zero, 0.0 if a is None else a, 0.0 if b is None else b)
                      for a, b in zip(in_x[1:], e[1:])]
    return [finish(e[1:], ans, mode)]


# ------------------------------------------------------------------------------ per op
def coefficientwise(apply):
    """A rule for an op applied to each coefficient alone (``apply(eqn, c, mode)``, a
    coefficient in, one out; None for an output that carries none): casts, complex parts,
    padding with zeros."""
    def rule(eqn, values, series, mode):
        ans = bind_all(eqn, values)[0]
        if series[0] is None:
            return [None]
        return [finish([None if c is None else apply(eqn, c, mode) for c in series[0]],
                       ans, mode)]

    return rule


def where_rule(eqn, values, series, mode):
    """``where(c, x, y)``: the coefficients selected like the values."""
    cond, x, y = values
    ans = bind_all(eqn, values)[0]
    rank = len(ans.shape)
    sx, sy = lifted(series[1], mode, rank), lifted(series[2], mode, rank)
    out = []
    for k in range(1, mode.order + 1):
        if sx[k] is None and sy[k] is None:
            out.append(None)
            continue
        out.append(lax.where(cond, 0.0 if sx[k] is None else sx[k],
                             0.0 if sy[k] is None else sy[k]))
    return [finish(out, ans, mode)]


def stop_rule(eqn, values, series, mode):
    return [None]
