"""scipy.special's gamma-family composites and Bessel functions on traced values (issue 37):
values against SciPy at ordinary and edge points, the derivatives the registry table does
not see (the composites beta, multigammaln, gammasgn), and the refused derivatives in a
Bessel function's order. The Bessel ops' derivatives are rows of tests/ops/test_registry.py."""
import numpy as np
import pytest
import scipy.special

import dualgpu as dg
from dualgpu.errors import DualgpuError

EDGES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, -2.0, -0.5, -1.5, -2.5, 0.5,
                  1.0, 2.5, 7.0, 171.5, -1e300])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gammasgn_is_scipys_with_a_zero_derivative(dtype):
    with np.errstate(over="ignore"):
        x = EDGES.astype(dtype)
    got = dg.jit(scipy.special.gammasgn)(x)
    np.testing.assert_array_equal(got, scipy.special.gammasgn(x))
    assert got.dtype == scipy.special.gammasgn(x).dtype
    assert not np.any(dg.grad(lambda x: np.sum(scipy.special.gammasgn(x)))(x))


def _multigammaln_of(d):
    return lambda a: scipy.special.multigammaln(a, d)


def test_beta_and_multigammaln_values_and_derivatives():
    a = np.array([1.3, -0.5, 2.5, 30.0, -1.7, 0.2])
    b = np.array([2.0, 1.7, -1.5, 40.0, -0.3, 3.0])
    np.testing.assert_allclose(dg.jit(scipy.special.beta)(a, b), scipy.special.beta(a, b),
                               rtol=1e-13)  # -1.7 + -0.3: a pole of Gamma(a + b), beta 0
    dg.testing.check_grads(scipy.special.beta, (a[:3], b[:3]), order=2)  # symmetric in a, b
    zeros = np.array([-0.0, 0.5])  # -0, a pole, is +0's: +inf (was -inf)
    np.testing.assert_array_equal(dg.jit(scipy.special.beta)(zeros, zeros[::-1]),
                                  scipy.special.beta(zeros, zeros[::-1]))
    x = np.array([4.3, 2.2, 1.6])
    for d in (1, 3):
        multigammaln = _multigammaln_of(d)
        want = [scipy.special.multigammaln(v, d) if v > (d - 1) / 2 else np.nan for v in x]
        np.testing.assert_allclose(dg.jit(multigammaln)(x), want, rtol=1e-14)
    dg.testing.check_grads(multigammaln, (x[:2],), order=2)


BESSEL = {"j0": (), "j1": (), "y0": (), "y1": (), "jn": (2, -3), "jv": (0.5, 2, -1.25),
          "yn": (0, 3, -2), "iv": (0.5, 2, -1.25), "ive": (0.5, 3, -2)}


@pytest.mark.parametrize("name", sorted(BESSEL))
def test_bessel_functions_are_scipys(name):
    fn = getattr(scipy.special, name)
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -2.5, 0.3, 2.4048, 7.0, 700.0])
    for order in BESSEL[name] or (None,):
        call = (lambda x: fn(x)) if order is None else (lambda o: lambda x: fn(o, x))(order)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(dg.jit(call)(x), call(x), err_msg=f"order {order}")


@pytest.mark.parametrize("name,order", [("jv", "v"), ("jn", "v"), ("yn", "n"), ("iv", "v"),
                                        ("ive", "v")])
def test_a_bessel_derivative_in_the_order_is_refused(name, order):
    fn = getattr(scipy.special, name)
    with pytest.raises(DualgpuError, match=rf"{name if name != 'jn' else 'jv'}\({order}, x\): "
                                           rf"no derivative in the order {order}") as info:
        dg.grad(lambda v: fn(v, 1.5))(2.0)
    assert f"{__file__}:" in str(info.value)  # the user's line, not contextlib's
    assert np.isfinite(dg.grad(lambda x: fn(2.0, x))(1.5))  # in x: defined


def test_incomplete_beta_and_gamma_refusals_name_the_users_line():
    for refused in (lambda a: scipy.special.betainc(a, 3.0, 0.5),
                    lambda a: scipy.special.gammainc(a, 0.5)):
        with pytest.raises(DualgpuError, match="no derivative in a") as info:
            dg.grad(refused)(2.0)
        assert f"{__file__}:" in str(info.value)


def test_multigammaln_refuses_a_dimension_that_is_not_a_positive_int():
    for d in (0, 2.0, True):
        with pytest.raises(DualgpuError, match="d must be a positive Python int"):
            dg.jit(_multigammaln_of(d))(np.array(3.0))


def test_entropies_are_scipys_with_derivatives():
    """entr, rel_entr and kl_div on traced values: SciPy's values at every edge (0, -0,
    negatives, NaN, inf, tiny), derivatives against differences (order 2)."""
    import warnings

    import scipy.special as ss

    edges = np.array([2.0, 0.5, 0.0, -0.0, -1.0, np.nan, np.inf, 1e-300])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(dg.jit(ss.entr)(edges), ss.entr(edges))
        X, Y = np.meshgrid(edges, np.r_[edges[::-1], -np.inf])
        for fn in (ss.rel_entr, ss.kl_div):
            np.testing.assert_allclose(dg.jit(fn)(X, Y), fn(X, Y), rtol=1e-14)
    x, y = np.array([0.3, 1.7]), np.array([0.9, 0.4])
    dg.testing.check_grads(lambda x: np.sum(ss.entr(x)), (x,), order=2)
    for fn in (ss.rel_entr, ss.kl_div):
        dg.testing.check_grads(lambda x, y, fn=fn: np.sum(fn(x, y)), (x, y), order=2)


def test_a_scipy_ufunc_without_a_rule_is_named_by_its_path():
    import scipy.special as ss

    with pytest.raises(dg.UnsupportedOpError, match=r"scipy\.special\.spence has no"):
        dg.grad(lambda x: np.sum(ss.spence(x)))(np.ones(3))


def test_a_library_special_op_holds_the_dtype_its_graph_declares():
    """SciPy's loops gave yn of 0 and float32 (ld->d), gammainc of float32 and 2.0 and j0 of
    float16 as float64: the program held float64 where its graph said float32 or float16
    (eval_shape, and every op after it, disagreed with the run)."""
    from dualgpu.ops import special_functions as ops

    for f, x in [(lambda x: np.concatenate([ops.yn.bind(0, x), x]), np.ones(2, np.float32)),
                 (lambda x: ops.gammainc.bind(x, 2.0) * x, np.ones(2, np.float32)),
                 (lambda x: ops.j0.bind(x), np.ones(2, np.float16))]:
        assert dg.jit(f)(x).dtype == dg.jit(f).eval_shape(x).dtype == x.dtype


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
def test_scipy_special_functions_take_scipys_dtypes(dtype):
    """Each in the dtype of SciPy's loop for its operands (rel_entr of float32 was float64,
    y0 of float32 float64, beta of float32 and 2.0 float32, multigammaln of float32
    float32, jv of float16 float16)."""
    sp = scipy.special
    calls = [sp.y0, sp.j1, lambda x: sp.yn(1, x), lambda x: sp.jv(1.5, x),
             lambda x: sp.ive(x, x), lambda x: sp.gammainc(x, 2.0),
             lambda x: sp.gammainc(np.float32(2.0), x), sp.erfinv, sp.entr,
             lambda x: sp.rel_entr(x, x), lambda x: sp.kl_div(2.0, x),
             lambda x: sp.beta(x, 2.0), lambda x: sp.multigammaln(x + 2, 2)]
    x = np.array([0.5, 1.0]).astype(dtype)
    with np.errstate(all="ignore"):
        for call in calls:
            assert dg.jit(call)(x).dtype == np.asarray(call(x)).dtype, call


@pytest.mark.parametrize("call", [scipy.special.entr, lambda z: scipy.special.kl_div(z, z),
                                  scipy.special.y0, lambda z: scipy.special.gammainc(2.0, z),
                                  lambda z: scipy.special.multigammaln(z, 2)])
def test_complex_values_scipy_has_no_loop_for_are_refused(call):
    """entr, rel_entr and kl_div of complex values were computed (SciPy raises); y0,
    gammainc, multigammaln... raised a raw TypeError when run."""
    with pytest.raises(dg.ArgumentTypeError, match="SciPy has no loop for these types"):
        dg.jit(call)(np.array([0.5 + 1j, 2.0]))
