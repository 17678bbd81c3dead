"""dg.config is never left without a switch (issue 23): ``del``, ``pop`` and ``clear`` restore
defaults, ``setdefault`` returns the value, ``update`` checks every entry before setting any
(and ``|=`` goes through it), ``popitem`` and unknown keys are refused with a DualgpuError;
the next call works and sees the switches as set."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.api import differentiation as api
from dualgpu.runtime.executor import DEFAULTS


@pytest.fixture(autouse=True)
def restore_config():
    saved = dict(dg.config)
    yield
    dict.update(dg.config, saved)
    dg.set_cache_size(saved["cache_size"])
    dg.clear_cache()


def _next_call_works():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(dg.grad(lambda a: np.sum(a ** 3))(x), 3 * x ** 2)
    np.testing.assert_allclose(dg.jit(lambda a: np.sin(a) * 2)(x), np.sin(x) * 2)


def test_del_and_pop_restore_the_default():
    dg.config["fuse"] = False
    del dg.config["fuse"]
    assert dg.config["fuse"] is True and set(dg.config) == set(DEFAULTS)
    _next_call_works()
    dg.config["recompute"] = False
    assert dg.config.pop("recompute") is False
    assert dg.config["recompute"] is True
    assert dg.config.pop("recompute", None) is True
    _next_call_works()


def test_clear_restores_every_default():
    dg.config.update(fuse=False, stack_gemms=True, host_kernel=False)
    dg.config.clear()
    assert dict(dg.config) == DEFAULTS
    _next_call_works()


def test_setdefault_returns_the_value_and_adds_nothing():
    dg.config["tiny_kernel"] = False
    assert dg.config.setdefault("tiny_kernel", True) is False
    assert dg.config["tiny_kernel"] is False
    with pytest.raises(dg.DualgpuError, match="no switch 'fusee'.*fuse"):
        dg.config.setdefault("fusee", True)
    assert "fusee" not in dg.config
    _next_call_works()


@pytest.mark.parametrize("call", [
    lambda: dg.config.popitem(),
    lambda: dg.config.pop("nope"),
    lambda: dg.config.__delitem__("nope"),
    lambda: dg.config.update({"fuse": False, "nope": 1}),
    lambda: dg.config.update({"fuse": False, "recompute": "yes"}),
    lambda: dg.config.update(fuse=False, cuda_graph_outputs=np.array(["copy", "reuse"])),
    lambda: dg.config.update(3),
    lambda: dg.config.__ior__({"fuse": False, "nope": 1}),
], ids=["popitem", "pop unknown", "del unknown", "update unknown key", "update bad value",
        "update array value", "update not a mapping", "|= unknown key"])
def test_refused_mutations_change_nothing(call):
    before = dict(dg.config)
    with pytest.raises(dg.DualgpuError, match="dg.config"):
        call()
    assert dict(dg.config) == before   # fuse=False of the same update was not applied
    _next_call_works()


def test_or_assign_sets_checked_switches():
    cfg = dg.config
    cfg |= {"recompute": False}
    assert cfg is dg.config and dg.config["recompute"] is False
    _next_call_works()


def test_cache_size_set_through_config_bounds_the_cache():
    dg.config["cache_size"] = 3
    assert api.cache_info()["maxsize"] == 3
    dg.config.update(cache_size=5)
    assert api.cache_info()["maxsize"] == 5
    del dg.config["cache_size"]
    assert api.cache_info()["maxsize"] == DEFAULTS["cache_size"]
