"""The options JAX users reach for, with JAX's documented semantics: has_aux on the
Jacobians and the Hessian, allow_int, negative argnums, vmap's axis_size and out_axes=None,
hessian of tuple argnums and pytrees, HessianOperator of a pytree, holomorphic.
Reference values are closed forms or finite differences (dg.testing)."""
import numpy as np
import pytest

import dualgpu as dg

x = np.array([0.5, -1.0, 2.0])
y = np.array([1.5, 0.25])


def cubic(a, b):
    """sum(a**2) * sum(b**3)."""
    return np.sum(a ** 2) * np.sum(b ** 3)


def cubic_hessian_blocks(a, b):
    """The closed-form blocks [[Haa, Hab], [Hba, Hbb]] of ``cubic``."""
    sa, sb = np.sum(a ** 2), np.sum(b ** 3)
    haa = 2 * sb * np.eye(a.size)
    hab = np.outer(2 * a, 3 * b ** 2)
    hbb = np.diag(6 * b) * sa
    return [[haa, hab], [hab.T, hbb]]


# ------------------------------------------------------------------------------ has_aux
@pytest.mark.parametrize("jac", [dg.jacfwd, dg.jacrev, dg.jacobian])
def test_jacobians_with_has_aux_return_the_jacobian_and_aux(jac):
    J, aux = jac(lambda v: (np.sin(v) * v[0], {"norm": np.sum(v ** 2)}), has_aux=True)(x)
    want = np.diag(np.cos(x) * x[0])
    want[:, 0] += np.sin(x)
    np.testing.assert_allclose(J, want)
    np.testing.assert_allclose(aux["norm"], np.sum(x ** 2))


def test_hessian_with_has_aux():
    H, aux = dg.hessian(lambda v: (np.sum(v ** 3), v * 2), has_aux=True)(x)
    np.testing.assert_allclose(H, np.diag(6 * x))
    np.testing.assert_allclose(aux, 2 * x)


def test_has_aux_without_a_pair_is_a_type_error():
    with pytest.raises(TypeError, match="pair"):
        dg.jacrev(lambda v: v ** 2, has_aux=True)(x)


# ------------------------------------------------------------------------------ hessian
def test_hessian_of_tuple_argnums_is_nested_blocks():
    H = dg.hessian(cubic, argnums=(0, 1))(x, y)
    want = cubic_hessian_blocks(x, y)
    assert isinstance(H, tuple) and all(isinstance(row, tuple) for row in H)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(H[i][j], want[i][j], rtol=1e-12)


def test_hessian_of_a_pytree_follows_jax_nesting_and_matches_differences():
    p = {"a": x, "b": y}
    H = dg.hessian(lambda p: cubic(p["a"], p["b"]))(p)
    want = cubic_hessian_blocks(x, y)
    for i, ki in enumerate("ab"):
        for j, kj in enumerate("ab"):
            assert H[ki][kj].shape == p[ki].shape + p[kj].shape
            np.testing.assert_allclose(H[ki][kj], want[i][j], rtol=1e-12)
    # the a-a block against central differences of the (closed-form) gradient in a
    eps = 1e-6
    grad_a = lambda a: 2 * a * np.sum(y ** 3)  # noqa: E731
    fd = np.stack([(grad_a(x + eps * e) - grad_a(x - eps * e)) / (2 * eps)
                   for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(H["a"]["a"], fd, rtol=1e-6)


def test_hessian_of_one_array_is_unchanged():
    np.testing.assert_allclose(dg.hessian(lambda v: np.sum(v ** 4))(x), np.diag(12 * x ** 2))


# ------------------------------------------------------------------------------ argnums
def test_negative_argnums_count_from_the_end():
    g = dg.grad(cubic, argnums=-1)(x, y)
    np.testing.assert_allclose(g, np.sum(x ** 2) * 3 * y ** 2)
    ga, gb = dg.grad(cubic, argnums=(-2, -1))(x, y)
    np.testing.assert_allclose(ga, 2 * x * np.sum(y ** 3))
    J = dg.jacfwd(lambda a, b: a * np.sum(b), argnums=-1)(x, y)
    np.testing.assert_allclose(J, np.outer(x, np.ones(2)))
    hv = dg.hvp(cubic, argnums=-1)(x, y, np.ones(2))
    np.testing.assert_allclose(hv, 6 * y * np.sum(x ** 2))
    H = dg.hessian(cubic, argnums=-2)(x, y)
    np.testing.assert_allclose(H, cubic_hessian_blocks(x, y)[0][0])


def test_argnums_out_of_range_is_a_type_error():
    with pytest.raises(TypeError, match="argnums"):
        dg.grad(cubic, argnums=-3)(x, y)
    with pytest.raises(TypeError, match="argnums"):
        dg.grad(cubic, argnums=2)(x, y)


# ------------------------------------------------------------------------------ allow_int
def test_integer_arguments_are_refused_unless_allow_int():
    with pytest.raises(TypeError, match="allow_int"):
        dg.grad(lambda v: np.sum(v * 1.0))(np.arange(3))
    with pytest.raises(TypeError, match="allow_int"):
        dg.grad(lambda n: n * 2.0)(3)                 # a Python int is an integer, as JAX
    ga, gn = dg.grad(lambda v, n: np.sum(v ** 2) * n, argnums=(0, 1), allow_int=True)(x, 3)
    np.testing.assert_allclose(ga, 6 * x)
    assert gn.dtype == dg.float0 and gn.shape == ()
    value, g = dg.value_and_grad(lambda k: np.sum(k * 2.0), allow_int=True)(np.arange(3))
    assert value == 6.0 and g.dtype == dg.float0 and g.shape == (3,)


# ------------------------------------------------------------------------------ vmap
def test_vmap_axis_size_maps_a_function_of_unmapped_arguments():
    out = dg.vmap(lambda w: w * 2.0, in_axes=None, axis_size=4)(x)
    np.testing.assert_allclose(out, np.tile(2 * x, (4, 1)))
    out = dg.vmap(lambda a, w: a * w, in_axes=(0, None), axis_size=2)(np.ones((2, 3)), x)
    np.testing.assert_allclose(out, np.stack([x, x]))
    with pytest.raises(ValueError, match="the `axis_size` argument was 3"):
        dg.vmap(np.sin, axis_size=3)(np.ones((2, 2)))
    with pytest.raises(ValueError, match="axis_size"):
        dg.vmap(np.sin, in_axes=None)(x)
    with pytest.raises(TypeError, match="axis_size"):
        dg.vmap(np.sin, axis_size=2.0)


def test_vmap_out_axes_none_returns_an_unmapped_result_once():
    X = np.stack([x, 2 * x])
    per, shared = dg.vmap(lambda a, w: (a * w, np.sum(w ** 2)), in_axes=(0, None),
                          out_axes=(0, None))(X, x)
    np.testing.assert_allclose(per, X * x)
    np.testing.assert_allclose(shared, np.sum(x ** 2))


# ------------------------------------------------------------------------------ HessianOperator
def test_hessian_operator_of_a_pytree_acts_on_the_raveled_vector():
    p = {"a": x, "b": y}
    H = dg.HessianOperator(lambda p: cubic(p["a"], p["b"]), p)
    assert H.shape == (5, 5)
    blocks = cubic_hessian_blocks(x, y)
    dense = np.block(blocks)
    np.testing.assert_allclose(H @ np.eye(5), dense, rtol=1e-12)
    v = np.linspace(-1, 1, 5)
    np.testing.assert_allclose(H @ v, dense @ v, rtol=1e-12)
    back = H.unravel(np.arange(5.0))
    np.testing.assert_allclose(back["a"], [0.0, 1.0, 2.0])
    np.testing.assert_allclose(back["b"], [3.0, 4.0])
    with pytest.raises(TypeError, match="floating-point"):
        dg.HessianOperator(lambda p: np.sum(p["a"]), {"a": np.arange(2)})


# ------------------------------------------------------------------------------ holomorphic
def test_holomorphic_jacobians_and_complex_inputs():
    z = np.array([1 + 2j, -0.5j])
    np.testing.assert_allclose(dg.jacfwd(lambda z: z ** 3, holomorphic=True)(z),
                               np.diag(3 * z ** 2))
    np.testing.assert_allclose(dg.grad(lambda z: np.sum(np.sin(z)), holomorphic=True)(z),
                               np.cos(z))
    with pytest.raises(TypeError, match="holomorphic=True"):
        dg.jacfwd(lambda z: z ** 2)(z)                # complex inputs, as JAX: a TypeError
    with pytest.raises(TypeError, match="holomorphic=True"):
        dg.jacrev(lambda z: z ** 2)(z)                # complex outputs of reverse mode
    with pytest.raises(TypeError, match="holomorphic=True"):
        dg.grad(lambda v: np.sum(v ** 2), holomorphic=True)(x)   # real inputs
    # hessian is jacfwd(jacrev): a real function of a complex input is refused, as by JAX
    # (it returned the columns of the real directions only, H @ 1j differing from the hvp)
    with pytest.raises(TypeError, match="holomorphic=True"):
        dg.hessian(lambda z: np.sum(np.real(z) ** 2 * np.imag(z)))(z)
    np.testing.assert_allclose(dg.hessian(lambda z: np.sum(z ** 3), holomorphic=True)(z),
                               np.diag(6 * z))
    # jvp and vjp take complex values as they are (JAX has no holomorphic switch there)
    out, t = dg.jvp(lambda z: z ** 2, (z,), (np.ones(2, complex),))
    np.testing.assert_allclose(t, 2 * z)
