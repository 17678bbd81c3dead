"""Every result is a fresh, writeable array (issue 23): never a read-only broadcast view (the
gradient of ``sum(x)`` is a fill of ones), never an input, never a closed-over constant, and
writing into a result does not change the next call's result (the cached fast path
included). A fuzz over small programs -- constant outputs, broadcasts, outputs equal to
inputs, views -- and every transform that returns arrays."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

W = np.linspace(-1.0, 1.0, 3)          # a closed-over constant


# Bodies: x (3,) -> (3,) or a scalar; each a shape of result the programs can hand out.
VECTOR_BODIES = {
    "x": lambda x: x,
    "x * 2.0": lambda x: x * 2.0,
    "ones_like": lambda x: np.ones_like(x),
    "broadcast scalar": lambda x: np.broadcast_to(np.sum(x), (3,)),
    "broadcast literal": lambda x: np.broadcast_to(1.5, (3,)),
    "constant W": lambda x: W,
    "W * x": lambda x: W * x,
    "view x[::-1]": lambda x: x[::-1],
    "x ** 3": lambda x: x ** 3,
    "sin": lambda x: np.sin(x),
}
SCALAR_BODIES = {
    "sum": lambda x: np.sum(x),
    "sum 2x": lambda x: np.sum(x * 2.0),
    "mean": lambda x: np.mean(x),
    "constant": lambda x: np.sum(W),
    "linear W": lambda x: np.sum(W * x),
    "cubic": lambda x: np.sum(x ** 3),
    "sin": lambda x: np.sum(np.sin(x)),
}


def _transforms():
    """(name, maker(body, is_scalar) -> call(x, v) returning the results, or None)."""
    return {
        "jit": lambda b, s: (lambda x, v: dg.jit(b)(x)),
        "jvp": lambda b, s: (lambda x, v: dg.jvp(b, (x,), (v,))),
        "vjp pullback": lambda b, s: (lambda x, v: dg.vjp(b, x)[1](
            1.0 if s else v)),
        "vmap": lambda b, s: (lambda x, v: dg.vmap(b)(np.stack([x, v]))),
        "jacfwd": lambda b, s: (lambda x, v: dg.jacfwd(b)(x)),
        "jacrev": lambda b, s: (lambda x, v: dg.jacrev(b)(x)),
        "grad": lambda b, s: (lambda x, v: dg.grad(b)(x)) if s else None,
        "value_and_grad": lambda b, s: (lambda x, v: dg.value_and_grad(b)(x)) if s else None,
        "hvp": lambda b, s: (lambda x, v: dg.hvp(b)(x, v)) if s else None,
        "grad_and_hvp": lambda b, s: (lambda x, v: dg.grad_and_hvp(b)(x, v)) if s else None,
        "hessian": lambda b, s: (lambda x, v: dg.hessian(b)(x)) if s else None,
        "hessp": lambda b, s: (lambda x, v: dg.hessp(b)(x, v)) if s else None,
        "laplacian": lambda b, s: (lambda x, v: dg.laplacian(b)(x)),
        "weighted laplacian": lambda b, s: (lambda x, v: dg.laplacian(
            b, sigma=np.ones((np.size(x), 2)))(x)),
        "biharmonic": lambda b, s: (lambda x, v: dg.biharmonic(b)(x)),
        "hessian_diag": lambda b, s: (lambda x, v: dg.hessian_diag(b)(x)),
        "jit of grad": lambda b, s: (lambda x, v: dg.jit(dg.grad(b))(x)) if s else None,
    }


def _cases():
    out = []
    for tname, make in _transforms().items():
        for bodies, scalar in ((VECTOR_BODIES, False), (SCALAR_BODIES, True)):
            for bname, body in bodies.items():
                call = make(body, scalar)
                if call is not None:
                    out.append(pytest.param(call, id=f"{tname}-{bname}"))
    return out


def _arrays(result) -> list:
    if isinstance(result, (tuple, list)):
        return [a for r in result for a in _arrays(r)]
    if isinstance(result, dict):
        return [a for r in result.values() for a in _arrays(r)]
    return [result] if isinstance(result, np.ndarray) else []


def _check_fresh(result, sources) -> None:
    arrays = _arrays(result)
    assert arrays, "the call returned no arrays"
    for i, a in enumerate(arrays):
        assert a.flags.writeable, f"result {i} is read-only"
        assert not any(s == 0 and n > 1 for s, n in zip(a.strides, a.shape)), \
            f"result {i} is a broadcast view (strides {a.strides})"
        for s in sources:
            assert not np.shares_memory(a, s), f"result {i} shares memory with an input"
        for j in range(i):
            assert not np.shares_memory(a, arrays[j]), f"results {j} and {i} share memory"


@pytest.mark.parametrize("call", _cases())
def test_results_are_fresh_writeable_arrays(call):
    x, v = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.25, -0.5])
    x0, v0, w0 = x.copy(), v.copy(), W.copy()
    first = call(x, v)
    _check_fresh(first, [x, v, W])
    kept = [a.copy() for a in _arrays(first)]
    for a in _arrays(first):
        a[...] = np.nan                   # write into every result
    for _ in range(2):                    # the fresh build, then the cached fast path
        again = call(x, v)
        _check_fresh(again, [x, v, W])
        for a, k in zip(_arrays(again), kept):
            np.testing.assert_array_equal(a, k)
        for a in _arrays(again):
            a[...] = np.nan
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(v, v0)
    np.testing.assert_array_equal(W, w0)


def test_gradient_of_a_sum_can_be_scaled_in_place():
    """The report of issue 23: ``g *= 0.1`` on the gradient of sum(x) failed."""
    g = dg.grad(lambda x: np.sum(x))(np.ones(3))
    g *= 0.1
    np.testing.assert_allclose(g, 0.1)
    h = dg.grad(lambda x: np.sum(x))(np.ones(3))   # the cached program is unchanged
    np.testing.assert_array_equal(h, np.ones(3))


def _chain(ops):
    def prog(a):
        for op in ops:
            a = op(a)
        return a

    return prog


def _calls(prog, x) -> list:
    return [lambda: dg.jit(prog)(x), lambda: dg.grad(lambda y: np.sum(prog(y)))(x),
            lambda: dg.jvp(prog, (x,), (x,)),
            lambda: dg.hvp(lambda y: np.sum(prog(y) ** 2))(x, x)]


def test_random_programs_return_fresh_results():
    """A small fuzz: random chains of ops ending in an output that is the input, a
    constant, a broadcast or a computed value, jitted and differentiated."""
    rng = np.random.default_rng(23)
    unary = [lambda a: a * 2.0, np.sin, lambda a: a[::-1], lambda a: np.broadcast_to(
        np.sum(a), a.shape), lambda a: a + W, lambda a: np.ones_like(a), lambda a: a,
             lambda a: np.reshape(a, (3, 1))[:, 0], lambda a: 0.0 * a]
    for trial in range(40):
        prog = _chain([unary[k] for k in rng.integers(0, len(unary),
                                                       size=rng.integers(1, 4))])
        x = rng.standard_normal(3)
        for call in _calls(prog, x):
            first = call()
            _check_fresh(first, [x, W])
            kept = [r.copy() for r in _arrays(first)]
            for r in _arrays(first):
                r[...] = -7.0
            for r, k in zip(_arrays(call()), kept):
                np.testing.assert_array_equal(r, k, err_msg=f"trial {trial}")
