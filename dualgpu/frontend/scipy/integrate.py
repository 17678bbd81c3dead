"""``scipy.integrate.odeint`` of traced values: a right-hand side of traced parameters (its
``args``, or values it closes over) or a traced initial state.

What it computes: the classic fourth-order Runge-Kutta method at a fixed step, chosen when
the function is traced from the tolerances and the output times (not from the solution,
which a trace does not see): at most ``h = (rtol + atol) ** (1/4)`` (RK4's global error
grows as ``h**4``, and SciPy's error bound is ``rtol * |y| + atol``: so SciPy's default
tolerances give ``h = 0.013``, ``rtol=1e-4`` about 0.1), at most SciPy's ``hmax`` when it is
given, and a whole number of steps between consecutive output times (at most ``mxstep``,
500 by default). Derivatives are those of these steps (the discrete adjoint, by reverse
mode through them), exact for the discrete solution; they match the derivatives of the
exact solution to the method's accuracy. SciPy's LSODA adapts its steps to the solution;
the two agree to about the tolerance for smooth, non-stiff problems measured in units of
time near 1. A stiff problem needs small steps here (``hmax`` or a smaller tolerance).
When nothing is traced (the state, the parameters and what the right-hand side returns),
it is SciPy's own ``odeint``.

    >>> from scipy.integrate import odeint
    >>> def decay(y, t, k):
    ...     return -k * y
    >>> t = np.linspace(0.0, 1.0, 3)
    >>> g = dg.grad(lambda k: odeint(decay, np.array([1.0]), t, args=(k,), rtol=1e-6)[-1, 0])
    >>> round(float(g(2.0)), 6), round(-float(np.exp(-2.0)), 6)  # d/dk exp(-k t) at t = 1
    (-0.135335, -0.135335)
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import InvalidArgumentError, UnsupportedOpError, user_location
from ...lax import is_tracer
from ..numpy.arguments import asarray
from ..numpy.joining import stack
from ..numpy.shapes import ravel

DEFAULT_TOLERANCE = 1.49012e-8   # SciPy's rtol and atol


def _traced(x) -> bool:
    if is_tracer(x):
        return True
    return isinstance(x, (list, tuple)) and any(_traced(v) for v in x)


def odeint(func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None, mu=None,
           rtol=None, atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0, ixpr=0, mxstep=0,
           mxhnil=0, mxordn=12, mxords=5, printmessg=0, tfirst=False):
    """``scipy.integrate.odeint(func, y0, t, args)`` of traced values: the state at the times
    ``t`` (rows) by classic RK4 at a fixed step of at most ``(rtol + atol) ** (1/4)`` (and
    ``hmax``), differentiated through its steps; SciPy's own when nothing is traced.

    ``Dfun`` and LSODA's own options are not needed (the derivatives are traced)."""
    if not isinstance(args, tuple):
        args = (args,)
    if _traced(t):
        raise UnsupportedOpError(
            f"scipy.integrate.odeint with traced output times t (at {user_location()}): the "
            "times fix the program's steps; pass them as a concrete array")
    times = np.asarray(t, dtype=np.float64)
    if times.ndim != 1 or times.size == 0:
        raise UnsupportedOpError(f"scipy.integrate.odeint: t must be a 1-D array of times, "
                                 f"got shape {times.shape} (at {user_location()})")
    steps = np.diff(times)
    if np.any(steps > 0) and np.any(steps < 0):  # SciPy refuses them too
        raise InvalidArgumentError(
            "scipy.integrate.odeint: the values in t must be monotonically increasing or "
            f"monotonically decreasing, got {times.tolist()!r:.80} (at {user_location()})")

    def rhs(y, s):
        dy = func(s, y, *args) if tfirst else func(y, s, *args)
        return ravel(asarray(dy))

    if not (_traced(y0) or _traced(args)) and not is_tracer(
            rhs(np.ravel(np.asarray(y0, dtype=np.float64)), float(times[0]))):
        import scipy.integrate  # nothing is traced: SciPy's own (LSODA)

        return scipy.integrate.odeint(func, y0, t, args, Dfun, col_deriv, full_output, ml,
                                      mu, rtol, atol, tcrit, h0, hmax, hmin, ixpr, mxstep,
                                      mxhnil, mxordn, mxords, printmessg, tfirst)
    if full_output:
        raise UnsupportedOpError(
            f"scipy.integrate.odeint(full_output=True) of traced values (at {user_location()}):"
            " LSODA's report has no counterpart for the fixed steps taken here")
    tol = (DEFAULT_TOLERANCE if rtol is None else float(np.min(rtol))) + (
        DEFAULT_TOLERANCE if atol is None else float(np.min(atol)))  # for states near 1
    h = tol ** 0.25 if tol > 0 else 1e-3
    if hmax:
        h = min(h, abs(float(hmax)))
    limit = int(mxstep) if mxstep else 500
    y = ravel(asarray(y0)).astype(np.float64) if _traced(y0) else np.ravel(
        np.asarray(y0, dtype=np.float64))  # SciPy's state is float64
    states = [y]
    for t_from, t_to in zip(times[:-1], times[1:]):
        n = min(max(1, math.ceil(abs(t_to - t_from) / h - 1e-9)), limit)
        step = (t_to - t_from) / n
        for i in range(n):
            y = _rk4_step(rhs, y, float(t_from + i * step), float(step))
        states.append(y)
    return stack([asarray(s) for s in states])


# called in a trace even when no argument is traced (its function may close over one)
odeint.calls_functions = True  # type: ignore[attr-defined]


def _rk4_step(rhs, y, s, h):
    k1 = rhs(y, s)
    k2 = rhs(y + (0.5 * h) * k1, s + 0.5 * h)
    k3 = rhs(y + (0.5 * h) * k2, s + 0.5 * h)
    k4 = rhs(y + h * k3, s + h)
    return y + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
