"""A misspelled keyword gets the one it meant (difflib), in a TypeError: dg's functions,
dg.config's switches, NumPy's keywords in traced functions."""
import numpy as np
import pytest

import dualgpu as dg

x = np.array([0.5, -1.0, 2.0])


@pytest.mark.parametrize("call, words", [
    (lambda: dg.grad(np.sum, argnm=0), "dg.grad() got an unexpected keyword argument 'argnm' "
                                       "(did you mean 'argnums'?)"),
    (lambda: dg.hvp(np.sum, argnum=0, has_au=True), "(did you mean 'has_aux'?)"),  # autograd's
    (lambda: dg.jvp(np.sin, (x,), (x,), has_auxx=True), "(did you mean 'has_aux'?)"),
    (lambda: dg.vmap(np.sin, in_axis=0), "(did you mean 'in_axes'?)"),
    (lambda: dg.grad(lambda v: np.sum(v, axsi=0))(x), "numpy.sum() got an unexpected keyword "
                                                      "argument 'axsi' (did you mean 'axis'?)"),
    (lambda: dg.grad(lambda v: np.mean(v, keepdim=True))(x), "(did you mean 'keepdims'?)"),
    (lambda: dg.grad(lambda v: np.sum(np.exp(v, wher=True)))(x), "(did you mean 'where'?)"),
    (lambda: dg.grad(lambda v: np.linalg.norm(v, ordd=2))(x), "(did you mean 'ord'?)"),
])
def test_misspelled_keyword_suggests_the_right_one(call, words):
    with pytest.raises(dg.ArgumentTypeError) as info:
        call()
    assert words in str(info.value) and isinstance(info.value, TypeError)


def test_config_switch_misspelled():
    with pytest.raises(KeyError, match="did you mean 'cuda_graphs'"):
        dg.config["cuda_graph"]
    with pytest.raises(dg.InvalidArgumentError, match="did you mean 'cuda_graphs'"):
        dg.config["cuda_graph"] = False
    assert "cuda_graph" not in dg.config


def test_a_users_own_keyword_error_is_left_alone():
    def g(v, scale=1.0):
        return v * scale

    with pytest.raises(TypeError) as info:
        dg.grad(lambda v: np.sum(g(v, scal=2.0)))(x)
    assert not isinstance(info.value, dg.DualgpuError) and "g() got an unexpected" in str(
        info.value)
