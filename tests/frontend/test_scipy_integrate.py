"""scipy.integrate.odeint of traced values (frontend/scipy/integrate.py): fixed-step RK4,
its values against SciPy's LSODA to the tolerance, its derivatives against central
differences of SciPy's solution, reached by the module path and by name."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

scipy_integrate = pytest.importorskip("scipy.integrate")
from scipy.integrate import odeint  # noqa: E402  (after the skip)

T = np.array([0.0, 0.4, 1.0])
Y0 = np.array([1.0, 0.0])


def oscillator(y, t, omega, damping):
    """A damped, driven oscillator: y = (position, velocity)."""
    return np.stack([y[1], -omega ** 2 * y[0] - damping * y[1] + 0.3 * np.sin(t)])


def _scipy(p, y0=Y0):
    return scipy_integrate.odeint(oscillator, y0, T, args=(p[0], p[1]), rtol=1e-11,
                                  atol=1e-11)


def test_values_and_derivatives_in_the_parameters_and_the_initial_state():
    p = np.array([1.3, 0.4])

    def by_path(p, y0):
        return scipy_integrate.odeint(oscillator, y0, T, args=(p[0], p[1]), rtol=1e-4)

    got = dg.jit(by_path)(p, Y0)   # steps of at most 1e-4 ** (1/4) = 0.1
    np.testing.assert_allclose(got, _scipy(p), atol=1e-5)
    loss = lambda p, y0: np.sum(by_path(p, y0) ** 2)  # noqa: E731
    g_p, g_y0 = dg.grad(loss, argnums=(0, 1))(p, Y0)
    h = 1e-5
    fd_p = [(np.sum(_scipy(p + h * e) ** 2) - np.sum(_scipy(p - h * e) ** 2)) / (2 * h)
            for e in np.eye(2)]
    fd_y0 = [(np.sum(_scipy(p, Y0 + h * e) ** 2) - np.sum(_scipy(p, Y0 - h * e) ** 2))
             / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(g_p, fd_p, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(g_y0, fd_y0, rtol=1e-4, atol=1e-5)


def test_a_right_hand_side_closing_over_a_traced_value_by_name():
    def final(k):   # nothing traced among odeint's arguments: k is in the closure
        return odeint(lambda y, t: -k * y, np.array([1.0, 2.0]), [0.0, 1.0], rtol=1e-4)[-1]

    np.testing.assert_allclose(dg.jit(final)(0.7), np.exp(-0.7) * np.array([1.0, 2.0]),
                               rtol=1e-5)
    np.testing.assert_allclose(dg.jacfwd(final)(0.7), -np.exp(-0.7) * np.array([1.0, 2.0]),
                               rtol=1e-5)
    # tfirst=True: func(t, y)
    g = dg.grad(lambda k: odeint(lambda t, y: -k * y * t, np.array([1.0]), [0.0, 1.0],
                                 rtol=1e-4, tfirst=True)[-1, 0])(2.0)
    np.testing.assert_allclose(g, -0.5 * np.exp(-1.0), rtol=1e-4)
    # a list of traced values as the initial state, a list as the derivative
    g = dg.grad(lambda y0: odeint(lambda y, t: [-y[0], -y[1]], [y0, 2 * y0], [0.0, 1.0],
                                  rtol=1e-4)[-1, 1])(1.0)
    np.testing.assert_allclose(g, 2 * np.exp(-1.0), rtol=1e-4)


def test_untraced_calls_are_scipys_and_traced_times_are_refused():
    p = np.array([1.3, 0.4])
    got = dg.jit(lambda y0: y0 * np.sum(odeint(oscillator, Y0, T, args=(1.3, 0.4))))(1.0)
    assert got == np.sum(scipy_integrate.odeint(oscillator, Y0, T, args=(1.3, 0.4)))
    with pytest.raises(dg.UnsupportedOpError, match="traced output times"):
        dg.grad(lambda s: odeint(oscillator, Y0, s * T, args=tuple(p))[-1, 0])(1.0)
    # times that go back and forth: SciPy refuses them, so does the traced odeint (it
    # integrated back and forth silently)
    with pytest.raises(dg.InvalidArgumentError, match="monotonically"):
        dg.grad(lambda k: odeint(lambda y, t: -k * y, [1.0], [0.0, 1.0, 0.5])[-1, 0])(1.0)
