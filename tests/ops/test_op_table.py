"""docs/api.md's table of supported NumPy/SciPy names is the one docs/op_table.py generates
from the registry and the NumPy-compatible namespace (run ``python docs/op_table.py`` to
regenerate it)."""
import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "op_table.py"


def _module():
    spec = importlib.util.spec_from_file_location("op_table", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_op_table_is_current():
    mod = _module()
    assert mod.current() == mod.table(), "docs/api.md's op table is stale: run " \
                                         "python docs/op_table.py"


def test_the_table_says_which_library_functions_are_supported_or_refused():
    text = _module().table()
    for name in ("np.sort", "np.linalg.eigh", "np.linalg.svd", "np.interp", "np.r_",
                 "scipy.special.digamma", "np.fft.fftshift", "np.fft.rfft", "np.nanmean"):
        assert f"| `{name}` | supported" in text, name
