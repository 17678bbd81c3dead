"""The user's source lines are recognised by where the package is, never by a word in a path:
a user's file under a folder named ``dualgpu`` (the folder ``git clone`` makes for this
repository) or ``mydualgpu_project`` keeps its annotations in ``dg.export``'s modules (the
NumPy one and the CuPy one, written by the plan writer) and in error messages."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import dualgpu as dg

USER_SCRIPT = '''\
import numpy as np


def loss(x):
    y = np.exp(x) * 3.0
    return np.sum(y * y)


def pick(x, i):
    return x[i] * 2.0
'''


def _load(path):
    spec = importlib.util.spec_from_file_location(f"user_script_{abs(hash(str(path)))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(params=["dualgpu", "mydualgpu_project"])
def user_module(request, tmp_path):
    folder = tmp_path / request.param
    folder.mkdir()
    path = folder / "model.py"
    path.write_text(USER_SCRIPT)
    return _load(path), str(path)


@pytest.mark.parametrize("backend", ["numpy", "cupy"])
def test_a_users_file_under_a_folder_named_like_the_package_keeps_its_lines(user_module,
                                                                            backend):
    module, path = user_module
    source = dg.export(dg.grad(module.loss), np.ones(4), backend=backend)
    assert f"{path}:5" in source and f"{path}:6" in source


def test_a_users_file_under_a_folder_named_like_the_package_is_named_in_errors(user_module):
    module, path = user_module
    with pytest.raises(dg.IndexOutOfBoundsError, match=f"{path}:10"):
        dg.jit(module.pick)(np.ones(3), np.array([3]))
