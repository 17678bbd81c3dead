"""Shared pytest configuration: the ``gpu`` marker skips cleanly without CuPy or a device;
``--fuzz-long`` turns the fuzzer's bounded CI budget into a long campaign (``make fuzz``)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

# tests live in folders by layer (core, ops, frontend, transforms, codegen, runtime, api,
# sparse_ad, fuzz, project, gpu); their shared helpers (fuzz_programs, tiny_harness, ...) in
# tests/helpers, and some test modules share cases (test_registry's SPECS): every folder's
# modules and the repository's packages (benchmarks) are importable from any of them. tests/
# itself is not put on the path: its folders' names would shadow packages of those names.
_TESTS = Path(__file__).resolve().parent
for _path in [_TESTS.parent] + sorted(p for p in _TESTS.iterdir() if p.is_dir()
                                      and not p.name.startswith((".", "_"))):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


def pytest_addoption(parser):
    parser.addoption("--fuzz-long", action="store_true", default=False,
                     help="run the long fuzzing campaign (make fuzz)")
    parser.addoption("--calls-seeds", default=None, metavar="START:STOP",
                     help="seed range of the long call-sequence campaign (default 0:10000, "
                          "or DUALGPU_CALLS_SEEDS); split it across processes to run in "
                          "parallel or to resume")


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


@pytest.fixture
def calls_seeds(request) -> tuple[int, int]:
    """The seed range of the long call-sequence campaign (tests/runtime/test_call_sequences.py)."""
    import os

    text = (request.config.getoption("--calls-seeds")
            or os.environ.get("DUALGPU_CALLS_SEEDS") or "0:10000")
    start, stop = (int(part) for part in text.split(":"))
    return start, stop


@pytest.fixture
def host_kernel_restored():
    """``dg.config["host_kernel"]`` as it was before the test, and no program built under
    the test's setting left in the cache."""
    import dualgpu as dg

    before = dg.config["host_kernel"]
    yield
    dg.config["host_kernel"] = before
    dg.clear_cache()
