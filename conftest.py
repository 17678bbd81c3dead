"""pytest configuration of the docstring examples (``--doctest-modules`` on ``dualgpu/``):
every example sees ``np`` and ``dg`` (and ``cp`` where CuPy runs); examples that use CuPy skip
without CuPy and a CUDA device."""
from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest
from _pytest.doctest import DoctestItem

import dualgpu as dg
from dualgpu.backends.cupy import cupy_available


def _uses_cupy(item: DoctestItem) -> bool:
    return any("cupy" in ex.source or "cp." in ex.source for ex in item.dtest.examples)


def pytest_configure(config):
    """Kernels compiled for the host (``dg.config["host_kernel"]``) go to a directory of this
    run, not ~/.cache/dualgpu, unless DUALGPU_CACHE_DIR says where."""
    if not os.environ.get("DUALGPU_CACHE_DIR"):
        os.environ["DUALGPU_CACHE_DIR"] = tempfile.mkdtemp(prefix="dualgpu_cache_")


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="a CuPy example: needs CuPy and a CUDA device")
    gpu = None
    for item in items:
        if isinstance(item, DoctestItem) and _uses_cupy(item):
            gpu = cupy_available() if gpu is None else gpu
            if not gpu:
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def _doctest_names(doctest_namespace):
    doctest_namespace["np"] = np
    doctest_namespace["dg"] = dg
    if cupy_available():
        import cupy

        doctest_namespace["cp"] = cupy


@pytest.fixture(autouse=True)
def _doctest_leaves_no_trace(request):
    """An example that registers an op or flips a switch leaves the registry, the program
    cache and ``dg.config`` as it found them."""
    if not isinstance(request.node, DoctestItem):
        yield
        return
    from dualgpu.core.primitives import NON_DIFFERENTIABLE, REGISTRY, bump_registry_version
    from dualgpu.ops.elementwise import ELEMENTWISE

    registry, non_diff, config = dict(REGISTRY), set(NON_DIFFERENTIABLE), dict(dg.config)
    elementwise = dict(ELEMENTWISE)
    yield
    REGISTRY.clear()
    REGISTRY.update(registry)
    ELEMENTWISE.clear()
    ELEMENTWISE.update(elementwise)
    NON_DIFFERENTIABLE.clear()
    NON_DIFFERENTIABLE.update(non_diff)
    dict.update(dg.config, config)
    bump_registry_version()
    dg.clear_cache()
