"""Every test in tests/gpu is a GPU test."""
import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "/tests/gpu/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.gpu)


@pytest.fixture(autouse=True)
def _restore_switches():
    """Every GPU test leaves ``dg.config`` as it found it (tests flip graphs, precision,
    tiny kernels)."""
    from dualgpu.executor import config

    saved = dict(config)
    yield
    config.update(saved)
