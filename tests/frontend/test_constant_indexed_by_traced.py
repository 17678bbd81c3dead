"""A closed-over NumPy array indexed by integer arrays computed from traced values (issue 37
item 5): the gather of a semi-Lagrangian advection step. The derivative flows through the
field when it is traced, never through the indices. An array the function makes with NumPy
is gathered so too; one an object holds gets an error that says indexing."""
import numpy as np
import pytest

import dualgpu as dg
from dualgpu.errors import TracerControlFlowError

N = 6
FIELD = np.random.default_rng(0).standard_normal((N, N))
V = np.random.default_rng(1).uniform(-3, 3, (2, N, N))


def advect(f, vx, vy, dt=0.3):
    """Bilinear semi-Lagrangian advection of ``f`` along ``(vx, vy)``."""
    ii, jj = np.meshgrid(np.arange(N), np.arange(N), indexing="ij")
    x = np.clip(ii - dt * vx, 0, N - 1.001)
    y = np.clip(jj - dt * vy, 0, N - 1.001)
    i0 = np.floor(x).astype(int)
    j0 = np.floor(y).astype(int)
    s, t = x - i0, y - j0
    return ((1 - s) * ((1 - t) * f[i0, j0] + t * f[i0, j0 + 1])
            + s * ((1 - t) * f[i0 + 1, j0] + t * f[i0 + 1, j0 + 1]))


def loss_of_velocity(v):
    return np.sum(advect(FIELD, v[0], v[1]) ** 2)   # FIELD: a global, not traced


def loss_of_both(v, f):
    return np.sum(advect(f, v[0], v[1]) ** 2)


def test_a_global_field_gathered_at_traced_indices_has_the_right_gradient():
    assert np.isclose(dg.jit(loss_of_velocity)(V), loss_of_velocity(V), rtol=1e-13)
    dg.testing.check_vjp_fd(loss_of_velocity, (V,))
    # the same gather of a traced field: its gradient too (none through the indices)
    gv, gf = dg.grad(loss_of_both, argnums=(0, 1))(V, FIELD)
    np.testing.assert_allclose(gv, dg.grad(loss_of_velocity)(V), rtol=1e-12)
    dg.testing.check_vjp_fd(lambda f: loss_of_both(V, f), (FIELD,))


def test_a_closed_over_array_stays_numpys_array_everywhere_else():
    table = np.arange(8.0)

    def f(x):
        i = np.floor(x).astype(int)
        plain = (table * 2, np.concatenate([table, table]), table[1:3], table.T)
        return np.sum(x * table[i]), plain

    out, plain = dg.jit(f)(np.array([0.5, 3.5]))
    assert out == 0.5 * 0 + 3.5 * 3
    assert all(type(p) is np.ndarray for p in plain)
    np.testing.assert_array_equal(plain[2], [1.0, 2.0])


def test_an_array_made_inside_the_function_is_gathered_at_traced_indices_too():
    def f(x):  # autograd's wing.py: the smoke made with np.zeros, assigned to, advected
        smoke = np.zeros(5)
        smoke[1:3] = 1.0
        z = np.linspace(0.0, 1.0, 5)
        i = np.floor(x).astype(int)
        return np.sum(x * smoke[i] + x ** 2 * z[i])

    x = np.array([0.5, 1.5, 3.25])
    np.testing.assert_allclose(dg.grad(f)(x), [0.0, 1.75, 4.875], rtol=1e-14)
    assert dg.jit(f)(x) == pytest.approx(f(x), rel=1e-14)


class _Table:
    def __init__(self):
        self.values = np.arange(4.0)


def test_an_array_held_by_an_object_and_indexed_so_says_indexing():
    table = _Table()

    def f(x):  # an object's attribute: NumPy's own array, not seen by the trace
        return np.sum(table.values[np.floor(x).astype(int)])

    with pytest.raises(TracerControlFlowError, match=r"indexed with a traced index.*np\.take"):
        dg.grad(f)(np.array([0.5, 1.5]))
