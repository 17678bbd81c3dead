"""The sparsity rules over the whole registry: for every row of tests/ops/test_registry.py's
``SPECS``, the detected Jacobian pattern holds every nonzero of the Jacobian at random points
(central differences, and the dense ``dg.jacobian`` that the registry test checks against
them), and the detected Hessian pattern every nonzero of the Hessian of a random weighting
of the outputs (central differences of the gradient, and the dense ``dg.hessian``).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_registry import _SETTINGS, SPECS

import dualgpu as dg
from dualgpu.frontend import numpy as dnp
from dualgpu.transforms.sparsity import hessian_pattern, jacobian_pattern

EXAMPLES = 4
NAMES = sorted(n for n, s in SPECS.items())


def _differentiable_args(args) -> list[int]:
    return [i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f" and np.size(a)]


def _central_jacobian(f, args, i, eps=1e-6) -> np.ndarray:
    x = np.asarray(args[i], dtype=np.float64)
    cols = []
    for j in range(x.size):
        step = np.zeros(x.size)
        step[j] = eps
        hi = list(args)
        lo = list(args)
        hi[i] = x + step.reshape(x.shape)
        lo[i] = x - step.reshape(x.shape)
        cols.append((np.ravel(f(*hi)) - np.ravel(f(*lo))) / (2 * eps))
    return np.stack(cols, axis=1)


def _missed(pattern, values, tol) -> list:
    values = np.asarray(values)
    hit = np.abs(values) > tol * max(1.0, float(np.abs(values).max(initial=0.0)))
    return np.argwhere(hit & ~pattern.toarray()).tolist()


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=EXAMPLES, **_SETTINGS)
@given(data=st.data())
def test_patterns_hold_every_nonzero(name, data):
    s = SPECS[name]
    f, args = s.build(data, np.float64)
    out = f(*args)
    if not isinstance(out, np.ndarray | np.generic) or np.asarray(out).dtype.kind != "f":
        return   # tuples, integer and complex outputs: the sparse transforms refuse them
    if any(np.asarray(a).dtype.kind == "c" for a in args):
        return
    weights = np.random.default_rng(0).standard_normal(np.shape(out))

    def scalarized(*a):
        return dnp.sum(dnp.multiply(f(*a), weights))

    for i in _differentiable_args(args):
        graph = dg.trace(f, *args)
        jac = jacobian_pattern(graph, [i])
        m, n = np.size(out), np.size(args[i])
        assert jac.shape == (m, n)
        dense = np.reshape(dg.jacobian(f, argnums=i)(*args), (m, n))
        assert not _missed(jac, dense, 0.0), (name, i)
        if s.kind == "diff":
            assert not _missed(jac, _central_jacobian(f, args, i), 1e-6), (name, i)
        hess = hessian_pattern(dg.trace(scalarized, *args), [i])
        assert hess.shape == (n, n)
        dense_h = np.reshape(dg.hessian(scalarized, argnums=i)(*args), (n, n))
        assert not _missed(hess, dense_h, 0.0), (name, i)
        if s.kind == "diff" and s.order == 2:
            grad = dg.grad(scalarized, argnums=i)
            assert not _missed(hess, _central_jacobian(grad, args, i, eps=1e-5), 1e-5), (name, i)
