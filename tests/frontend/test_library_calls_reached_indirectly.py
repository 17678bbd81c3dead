"""SciPy's functions (which have no NumPy protocol to dispatch on tracers) and random draws
trace wherever the traced function reaches them: through a module of the user's
(``helper.density(x)``), or as the transformed function itself (``dg.grad(norm.pdf)``)."""
from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

import dualgpu as dg

scipy_stats = pytest.importorskip("scipy.stats")

HELPER = '''
import numpy as np
import scipy.stats

SCALE = 2.0
rng = np.random.default_rng(0)


def density(x):
    return scipy.stats.norm.pdf(x, 0.5, SCALE)


def noisy(x):
    return x * rng.normal(size=x.shape)
'''


@pytest.fixture
def helper(tmp_path, monkeypatch):
    (tmp_path / "dg_user_helper.py").write_text(HELPER)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("dg_user_helper")
    yield module
    sys.modules.pop("dg_user_helper", None)


def test_scipy_through_a_module_of_the_users(helper):
    x = np.array([0.3, -1.2])
    g = dg.grad(lambda x: np.sum(helper.density(x)))(x)
    z = (x - 0.5) / 2.0
    np.testing.assert_allclose(g, -z / 2.0 * scipy_stats.norm.pdf(x, 0.5, 2.0), rtol=1e-13)
    helper.SCALE = 1.0   # the module's global, read again: the program is built anew
    np.testing.assert_allclose(dg.jit(lambda x: helper.density(x))(x),
                               scipy_stats.norm.pdf(x, 0.5, 1.0), rtol=1e-14)
    helper.rng = np.random.default_rng(3)   # its generator: drawn at every call
    got = [dg.jit(lambda x: helper.noisy(x))(x) for _ in range(2)]
    twin = np.random.default_rng(3)
    np.testing.assert_array_equal(got, [x * twin.normal(size=2) for _ in range(2)])


@pytest.mark.parametrize("method", ["pdf", "logpdf", "cdf"])
def test_a_distributions_method_as_the_transformed_function(method):
    fn = getattr(scipy_stats.norm, method)
    x = np.array([0.2, 1.5])
    h = 1e-6
    fd = (fn(x + h) - fn(x - h)) / (2 * h)
    np.testing.assert_allclose(dg.elementwise_grad(fn)(x), fd, rtol=1e-6)
    np.testing.assert_allclose(dg.grad(fn)(0.2), fd[0], rtol=1e-6)


def test_scipys_python_functions_as_the_transformed_function():
    """SciPy's functions written in Python (scipy.linalg.solve, scipy.special.logsumexp,
    scipy.signal.convolve) given to a transform are their stand-ins, as when the user's
    code calls them: SciPy's own source was traced (a TracerControlFlowError at its
    np.asarray, an UnsupportedOpError at asarray_chkfinite)."""
    import scipy.linalg
    import scipy.signal
    import scipy.special

    A, b = np.array([[2.0, 0.3], [0.1, 1.5]]), np.array([0.5, 1.5])
    np.testing.assert_allclose(dg.jit(scipy.linalg.solve)(A, b), np.linalg.solve(A, b))
    np.testing.assert_allclose(dg.grad(scipy.special.logsumexp)(b), np.exp(b) / np.exp(b).sum())
    np.testing.assert_allclose(dg.grad(scipy.linalg.det)(A),
                               np.linalg.det(A) * np.linalg.inv(A).T)
    np.testing.assert_allclose(dg.jit(scipy.signal.convolve)(b, A[0]),
                               scipy.signal.convolve(b, A[0]))


def _full_of(shape, value):   # a helper calling a function NumPy does not dispatch
    return np.full(shape, value)


HELPERS = (_full_of, (np.tanh,))


def test_functions_held_in_tuples_are_rebound_too():
    """A function reached through a tuple (a global, a closure cell, a default) sees
    tracers as one reached by its name does (before: np.full of a traced value, called
    through HELPERS[0], ran NumPy's own full and failed)."""
    x = np.array([1.0, 2.0, 3.0])

    def f(x, acts=(np.sin,)):
        filled = HELPERS[0]((3,), np.sum(x))
        return np.sum(filled * x) + np.sum(HELPERS[1][0](x)) + np.sum(acts[0](x))

    want = 2 * np.sum(x) + (1 - np.tanh(x) ** 2) + np.cos(x)
    np.testing.assert_allclose(dg.grad(f)(x), want, rtol=1e-12)
    np.testing.assert_allclose(dg.jit(f)(x), f(x), rtol=1e-12)


HELPER_LIST = [_full_of]
HELPER_DICT = {"full": _full_of, "act": np.tanh}
LOG: list = []


def test_functions_held_in_lists_and_dicts_are_rebound_too():
    """As tuples: a list or dict (a global, a closure cell) holding functions; one holding
    none (a log the function appends to) stays the user's own object."""
    x = np.array([1.0, 2.0, 3.0])
    local = {"full": _full_of}

    def f(x):
        LOG.append(1)
        filled = HELPER_LIST[0]((3,), np.sum(x)) + HELPER_DICT["full"]((3,), np.sum(x))
        return np.sum(filled * x) + np.sum(HELPER_DICT["act"](x)) + \
            np.sum(local["full"]((3,), np.sum(x)) * x)

    want = 6 * np.sum(x) + (1 - np.tanh(x) ** 2)
    np.testing.assert_allclose(dg.grad(f)(x), want, rtol=1e-12)
    np.testing.assert_allclose(dg.jit(f)(x), f(x), rtol=1e-12)
    assert len(LOG) == 3  # the traces appended to the global list itself


def test_a_function_made_inside_a_trace_is_rebound_again_by_a_nested_transform():
    # the inner function's globals are the outer trace's (scipy.stats already a tracing
    # namespace): rebinding them again keeps the stand-ins, not stand-ins of stand-ins
    a = np.array([2.0, 3.0])

    def outer(x):
        return np.sum(dg.grad(lambda y: np.sum(scipy_stats.gamma.cdf(y, a)
                                               + scipy_stats.norm.logpdf(y)
                                               + np.random.default_rng(0).normal() * 0))(x))

    x = np.array([1.5, 2.0])
    # d²/dx² P(a, x) = x**(a-2) e^-x (a - 1 - x) / Gamma(a); d²/dx² log N(x) = -1
    expected = x ** (a - 2) * np.exp(-x) * (a - 1 - x) / np.array([1.0, 2.0]) - 1
    np.testing.assert_allclose(dg.grad(outer)(x), expected, rtol=1e-12)


def test_a_function_of_dualgpus_set_on_numpy_is_called_as_it_is(monkeypatch):
    # autograd.numpy's make_diagonal, which NumPy lacks, reached as np.make_diagonal (as
    # tests/corpus gives it to autograd programs): no rule is looked up for it
    from dualgpu.autograd_compat import make_diagonal

    monkeypatch.setattr(np, "make_diagonal", make_diagonal, raising=False)
    f = lambda d: np.sum(np.make_diagonal(d ** 2, 0, -1, -2))
    np.testing.assert_allclose(dg.grad(f)(np.array([1.0, 3.0])), [2.0, 6.0], rtol=1e-15)
