"""The one check every GPU test module starts with: CuPy and a CUDA device, or the module is
skipped (``cp = cupy_or_skip()`` at the top of the module)."""
from __future__ import annotations

import pytest


def cupy_or_skip():
    """The ``cupy`` module when it imports and sees a device; else skips the calling module."""
    cp = pytest.importorskip("cupy")
    try:
        cp.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - CuPy without a device
        pytest.skip("no CUDA device", allow_module_level=True)
    return cp
