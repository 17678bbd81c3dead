"""Tracebacks of errors raised through dualgpu show the user's frames and at most one of
dualgpu's (the raise point), as JAX's; DUALGPU_TRACEBACK=full shows them all."""
import os
import re
import sys
import traceback

import numpy as np
import pytest

import dualgpu as dg

LIBRARY = os.path.dirname(dg.__file__) + os.sep


def _mismatched_matmul(a, b):
    return (a @ b).sum()


def _printed(exc: BaseException, capsys) -> str:
    capsys.readouterr()
    sys.excepthook(type(exc), exc, exc.__traceback__)  # what Python prints at the top level
    return capsys.readouterr().err


def _library_frames(text: str) -> int:
    return len([f for f in re.findall(r'File "([^"]+)"', text) if f.startswith(LIBRARY)])


def _raise_through_grad():
    dg.grad(_mismatched_matmul)(np.ones((2, 3)), np.ones((4, 5)))


def test_library_frames_hidden_at_top_level(capsys, monkeypatch):
    monkeypatch.delenv("DUALGPU_TRACEBACK", raising=False)
    with pytest.raises(dg.DualgpuError) as info:
        _raise_through_grad()
    assert _library_frames("".join(traceback.format_tb(info.tb))) > 5
    text = _printed(info.value, capsys)
    assert _library_frames(text) <= 1
    # the user's frames stay: the call, and the line of the traced function at fault
    assert "_raise_through_grad" in text and "_mismatched_matmul" in text
    assert "inner dimensions differ" in text and "DUALGPU_TRACEBACK=full" in text


def test_causes_kept_and_filtered(capsys, monkeypatch):
    monkeypatch.delenv("DUALGPU_TRACEBACK", raising=False)
    with pytest.raises(RuntimeError) as info:
        try:
            _raise_through_grad()
        except dg.DualgpuError as e:
            raise RuntimeError("the user's wrapper") from e
    text = _printed(info.value, capsys)
    assert isinstance(info.value.__cause__, dg.DualgpuError)
    assert "direct cause" in text and "inner dimensions differ" in text
    assert _library_frames(text) <= 1


def test_full_traceback_on_request(capsys, monkeypatch):
    monkeypatch.setenv("DUALGPU_TRACEBACK", "full")
    with pytest.raises(dg.DualgpuError) as info:
        _raise_through_grad()
    assert _library_frames(_printed(info.value, capsys)) > 5


def test_ipython_shows_the_short_traceback(monkeypatch):
    """In IPython/Jupyter (which does not call sys.excepthook) the same frames are hidden."""
    monkeypatch.delenv("DUALGPU_TRACEBACK", raising=False)
    shown = []

    class Shell:
        custom_exceptions = ()

        def set_custom_exc(self, types, handler):
            self.custom_exceptions, self.handler = types, handler

        def showtraceback(self, exc_tuple, tb_offset=None):
            shown.append(exc_tuple[2])

    shell = Shell()
    monkeypatch.setitem(sys.modules, "IPython", type(sys)("IPython"))
    sys.modules["IPython"].get_ipython = lambda: shell
    dg.errors.install_traceback_filter()
    with pytest.raises(dg.DualgpuError) as info:
        _raise_through_grad()
    shell.handler(shell, info.type, info.value, info.tb, tb_offset=None)
    text = "".join(traceback.format_tb(shown[0]))
    assert _library_frames(text) <= 1 and "_mismatched_matmul" in text
