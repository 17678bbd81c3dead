"""A missing or half-installed CuPy is one CupyImportError naming the missing module and the
fix, never a raw ModuleNotFoundError from inside CuPy."""
import importlib.util
import sys

import pytest

import dualgpu as dg
from dualgpu.backends.cupy import CupyBackend


def _fake_cupy(tmp_path, monkeypatch, body: str):
    """A package ``cupy`` (and ``cupyx``) on sys.path whose import runs ``body``."""
    for pkg in ("cupy", "cupyx"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text(body)
        monkeypatch.delitem(sys.modules, pkg, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))


def test_half_installed_cupy_names_the_missing_module(tmp_path, monkeypatch):
    _fake_cupy(tmp_path, monkeypatch, "import _dualgpu_test_missing_dependency\n")
    with pytest.raises(dg.CupyImportError) as info:
        CupyBackend()
    message = str(info.value)
    assert "'_dualgpu_test_missing_dependency' that CuPy imports is missing" in message
    assert "pip install --force-reinstall" in message and "cupy.show_config()" in message
    assert isinstance(info.value, ImportError)
    assert isinstance(info.value.__cause__, ModuleNotFoundError)  # the original, chained


def test_missing_cupy_says_how_to_install_it(monkeypatch):
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("CuPy is installed here: the other message (test above)")
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy fails as when not installed
    with pytest.raises(dg.CupyImportError, match="pip install cupy-cuda12x"):
        CupyBackend()
