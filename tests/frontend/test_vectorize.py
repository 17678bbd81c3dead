"""``np.vectorize`` on traced values: the function called once on the broadcast arguments
(NumPy's values, dtypes and shapes; derivatives through it), wherever the vectorized
function was made (in the traced function, a global, a closure, a default, an object's
attribute, as a decorator), and clear refusals where that cannot equal NumPy's per-element
calls (ops that are not elementwise, branches on values, ``signature=``)."""
from __future__ import annotations

import numpy as np
import pytest
from numpy import vectorize

import dualgpu as dg

X = np.array([-1.0, 2.0, 0.5])
PAIR = np.vectorize(lambda a, b: (a + b, a * b))
SCALED = np.vectorize(lambda t, w: w * t ** 2, excluded={"w"})
AS_ARRAY = np.vectorize(lambda t: np.asarray(t) * 2.0 + np.float64(1.0))


@np.vectorize
def softplus(t):
    return np.log1p(np.exp(t))


def _closure():
    square = np.vectorize(lambda t: t * t)
    return lambda x: square(x) + 1.0


class Model:
    def __init__(self):
        self.act = np.vectorize(lambda t, c: np.where(t > 0, t, c * t), excluded={1})

    def __call__(self, x):
        return self.act(x, 0.1)


CASES = {
    "made inside": lambda x: np.vectorize(lambda a, b: a * b + np.sin(a))(x, 2.0),
    "decorator": lambda x: softplus(x),
    "two outputs, broadcast": lambda x: PAIR(x[:, None], x)[1],
    "excluded keyword": lambda x: SCALED(x, w=3.0),
    "closure": _closure(),
    "default argument": lambda x, f=np.vectorize(np.tanh): f(x) * 2,  # noqa: B008
    "object attribute": Model(),
    "otypes float32": lambda x: np.vectorize(lambda t: t * 2, otypes=[np.float32])(x),
    "constant result": lambda x: np.vectorize(lambda t: 1.0)(x) * x,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_dtypes_and_derivatives(name):
    f = CASES[name]
    want, got = f(X), dg.jit(f)(X)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-6 if want.dtype == np.float32 else 1e-14)
    if want.dtype == np.float64:   # (float32 values: central differences too coarse)
        dg.testing.check_grads(lambda x: np.sum(f(x) ** 2), (X,), order=2)


def test_without_traced_arguments_it_is_numpys():
    f = np.vectorize(lambda t, s: t if s > 0 else -t)   # branches: fine on concrete values
    np.testing.assert_array_equal(dg.jit(lambda x: x + f(np.array([1.0, 2.0]), -1.0))(X[:2]),
                                  X[:2] + [-1.0, -2.0])


def test_random_draws_per_element_as_numpys():
    """A draw of the arguments' shape, or with traced parameters, is one number per element
    as NumPy's per-element calls draw (a scalar draw, shared by every element where NumPy
    draws each anew, is refused: test_refusals)."""
    rng = np.random.default_rng(0)
    f = lambda x: np.vectorize(lambda t: t + rng.normal(size=np.shape(t)))(x)
    g = lambda x: np.vectorize(lambda t: rng.normal(t, 1e-3))(x)
    noise = dg.jit(f)(np.zeros(4))
    assert noise.shape == (4,) and len(set(noise.tolist())) == 4
    np.testing.assert_allclose(dg.jit(g)(np.arange(4.0)), np.arange(4.0), atol=1e-2)


def test_a_vectorized_function_transformed_directly():
    """dg.jit / dg.jacfwd / dg.vmap of the np.vectorize object itself: the front end's (they
    ran NumPy's __call__ on the traced values: refused)."""
    vf = np.vectorize(lambda t: t ** 2 + np.sin(t))
    np.testing.assert_allclose(dg.jit(vf)(X), vf(X), rtol=1e-14)
    np.testing.assert_allclose(dg.jacfwd(vf)(X), np.diag(2 * X + np.cos(X)), rtol=1e-14)
    np.testing.assert_allclose(dg.vmap(vf)(X[:, None]), vf(X[:, None]), rtol=1e-14)


def test_the_function_of_a_global_vectorize_is_rebound():
    """A np.vectorize made outside the trace calls its function rebound, as one made inside
    does: np.asarray there is the front end's (NumPy's converted the traced value:
    refused)."""
    np.testing.assert_allclose(dg.jit(lambda x: AS_ARRAY(x))(X), AS_ARRAY(X), rtol=1e-14)
    np.testing.assert_allclose(dg.grad(lambda x: np.sum(AS_ARRAY(x) ** 2))(X),
                               4 * (2 * X + 1), rtol=1e-14)


def test_the_class_imported_from_numpy():
    """``from numpy import vectorize`` (the class held in a global, not reached through
    ``np.``) is the front end's in a traced function (it was NumPy's: refused)."""
    f = lambda x: vectorize(lambda t, c: c * t ** 2, excluded={1})(x, 3.0)
    np.testing.assert_allclose(dg.jit(f)(X), f(X), rtol=1e-14)
    np.testing.assert_allclose(dg.grad(lambda x: np.sum(f(x)))(X), 6 * X, rtol=1e-14)


def test_only_excluded_arguments_traced():
    """The vectorized arguments concrete, an excluded one traced (a parameter): NumPy's
    values and the derivative in the parameter (it raised StopIteration)."""
    grid = np.array([0.0, 1.0, 2.0])
    f = np.vectorize(lambda t, p: np.exp(-p * t), excluded={"p"})
    g = np.vectorize(lambda t, p: p[0] * t + p[1], excluded={1})
    np.testing.assert_allclose(dg.jit(lambda p: f(grid, p=p))(0.5), f(grid, p=0.5),
                               rtol=1e-14)
    np.testing.assert_allclose(dg.grad(lambda p: np.sum(f(grid, p=p)))(0.5),
                               -np.sum(grid * np.exp(-0.5 * grid)), rtol=1e-14)
    p = np.array([2.0, -1.0])
    np.testing.assert_allclose(dg.jit(lambda p: g(grid, p))(p), g(grid, p), rtol=1e-14)
    np.testing.assert_allclose(dg.jacfwd(lambda p: g(grid, p))(p),
                               np.stack([grid, np.ones(3)], axis=1), rtol=1e-14)


@pytest.mark.parametrize("call, error, match", [
    (lambda x: np.vectorize(lambda t: t - t.mean())(x), dg.UnsupportedOpError,
     "must compute elementwise; it applied reduce_sum"),
    (lambda x: np.vectorize(lambda t: t[::-1])(x), dg.UnsupportedOpError, "getitem"),
    (lambda x: np.vectorize(lambda t: t if t > 0 else -t)(x), dg.TracerControlFlowError,
     "neither branch on a value.*np.where"),
    (lambda x: np.vectorize(lambda t: float(t))(x), dg.TracerControlFlowError,
     "Python number"),
    (lambda x: np.vectorize(np.sum, signature="(n)->()")(x), dg.UnsupportedOpError,
     "dg.vmap"),
    (lambda x: np.vectorize(lambda a, b: a + b)(x, np.ones(2)), dg.ShapeMismatchError,
     "do not broadcast"),
    (lambda x: np.vectorize(lambda t: t + np.random.normal())(x), dg.UnsupportedOpError,
     "one draw shared by every element"),
    (lambda x: np.vectorize(lambda t: (t, t), otypes=[float])(x), dg.InvalidArgumentError,
     "otypes"),
])
def test_refusals(call, error, match):
    with pytest.raises(error, match=match):
        dg.jit(call)(X)
