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
    from dualgpu.runtime.executor import config

    saved = dict(config)
    yield
    config.update(saved)


@pytest.fixture(params=["fused", "graphs", "python"])
def path(request):
    """Each of a program's three GPU paths: fused kernels replayed as CUDA graphs ("graphs"),
    fused kernels launched one by one ("fused"), and the plain CuPy Python program."""
    import dualgpu as dg
    from dualgpu.runtime.executor import config

    config["fuse"] = request.param != "python"
    config["cuda_graphs"] = request.param == "graphs"
    dg.clear_cache()
    yield request.param
    dg.clear_cache()  # the switches come back with _restore_switches
