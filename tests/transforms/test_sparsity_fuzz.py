"""Sparsity patterns on random programs (tests/helpers/fuzz_programs.py): the detected Hessian
pattern
of each program's loss holds every nonzero of the dense Hessian and of central differences of
the gradient, and the Jacobian pattern of a single-output program every nonzero of central
differences, at the program's random point (a pattern never misses a nonzero)."""
from __future__ import annotations

import fuzz_programs as fp
import numpy as np
from hypothesis import HealthCheck, given, settings

import dualgpu as dg
from dualgpu.transforms.sparsity import hessian_pattern, jacobian_pattern

EXAMPLES = 30


def _central(fn, args, i, eps):
    x = np.asarray(args[i], dtype=np.float64)
    cols = []
    for j in range(x.size):
        step = np.zeros(x.size)
        step[j] = eps
        hi, lo = list(args), list(args)
        hi[i] = x + step.reshape(x.shape)
        lo[i] = x - step.reshape(x.shape)
        cols.append((np.ravel(fn(*hi)) - np.ravel(fn(*lo))) / (2 * eps))
    return np.stack(cols, axis=1)


def _missed(pattern, values, tol):
    values = np.asarray(values)
    scale = max(1.0, float(np.abs(values).max(initial=0.0)))
    return np.argwhere((np.abs(values) > tol * scale) & ~pattern.toarray()).tolist()


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(fp.programs())
def test_patterns_of_random_programs_hold_every_nonzero(program):
    f, loss = program.functions()
    args = program.args()
    single = len(program.outputs()) == 1
    for i in range(len(args)):
        n = int(np.size(args[i]))
        hess = hessian_pattern(dg.trace(loss, *args), [i])
        dense = np.reshape(dg.hessian(loss, argnums=i)(*args), (n, n))
        assert not _missed(hess, dense, 0.0), program.source()
        diffs = _central(dg.grad(loss, argnums=i), args, i, 1e-5)
        assert not _missed(hess, diffs, 1e-5), program.source()
        if single:
            jac = jacobian_pattern(dg.trace(f, *args), [i])
            assert not _missed(jac, _central(f, args, i, 1e-6), 1e-6), program.source()
