"""Shared pytest configuration: the ``gpu`` marker skips cleanly without CuPy or a device;
``--fuzz-long`` turns the fuzzer's bounded CI budget into a long campaign (``make fuzz``)."""
from __future__ import annotations

import pytest


def pytest_addoption(parser):
    parser.addoption("--fuzz-long", action="store_true", default=False,
                     help="run the long fuzzing campaign (make fuzz)")


def _gpu_available() -> bool:
    from dualgpu.backends.cupy import cupy_available

    return cupy_available()


def pytest_collection_modifyitems(config, items):
    if not any("gpu" in item.keywords for item in items):
        return
    if _gpu_available():
        return
    skip = pytest.mark.skip(reason="needs CuPy and a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def fuzz_long(request) -> bool:
    return request.config.getoption("--fuzz-long")
