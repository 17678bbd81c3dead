"""The adapter of benchmarks/peer_suite.py (autograd's test API on dualgpu) on a small test
file of our own: hermetic (autograd's tests are not needed). A wrong derivative must fail
its check, complex-only tests are out of scope, and design differences are counted apart."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import dualgpu as dg
from benchmarks import peer_suite

PEER_TESTS = '''
import autograd.numpy as np
import autograd.numpy.random as npr
from autograd import grad, jacobian
from autograd.test_util import check_grads, combo_check


def test_passes():
    check_grads(lambda x, y: np.tanh(x) * y ** 2, (0, 1), order=3)(npr.randn(3), npr.randn(3))
    combo_check(np.sum, [0])([npr.randn(2, 3)], axis=[None, 0], keepdims=[True, False])
    assert np.allclose(jacobian(np.sin)(np.zeros(2)), np.eye(2))


def test_complex_only():
    check_grads(np.sin)(npr.randn(3) + 0.5j)


def test_wrong_derivative():
    check_grads(lambda x: WRONG(x))(npr.randn(3))


def test_size_one_output():  # autograd's grad takes an output of size 1
    assert grad(lambda x: np.sum(x ** 2, keepdims=True))(np.ones(3)).shape == (3,)


def test_autograd_only():
    np.make_diagonal(npr.randn(3), axis1=0, axis2=1)
'''


@pytest.fixture
def restore_modules():
    saved = {k: v for k, v in sys.modules.items() if k.startswith("autograd")}
    yield
    for k in [k for k in sys.modules if k.startswith("autograd")]:
        del sys.modules[k]
    sys.modules.update(saved)


def test_adapter_counts_passes_failures_and_scope(tmp_path, restore_modules):
    wrong = dg.custom_op("peer_adapter_wrong_sin", lambda xp, x: xp.sin(x),
                         vjp=lambda g, p, ans: (2.0 * g,),  # not cos(x): must be caught
                         jvp=lambda p, t: (np.sin(p[0]), t[0]))
    (tmp_path / "test_peer_fake.py").write_text(PEER_TESTS)
    import builtins
    builtins.WRONG = wrong
    try:
        out = peer_suite.run(tmp_path, files=("test_peer_fake.py",))
    finally:
        del builtins.WRONG
    kinds = {k.split("::")[-1]: v for k, v in out["failures"].items()}
    assert set(kinds) == {"test_wrong_derivative", "test_autograd_only"}
    assert "has no attribute" in kinds["test_autograd_only"]
    assert out["counts"] == {"pass": 2, "fail": 1, "complex only (out of scope)": 1,
                             "design difference": 1}
    assert out["pass_rate"] == pytest.approx(2 / 3) and out["strict_pass_rate"] == 0.5
