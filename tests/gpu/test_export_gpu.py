"""dg.export for CuPy on the GPU: the exported modules of the design's scenarios (per-particle
value, gradient and HVP; the Dense(10->1) HVP; an MLP HVP with dict parameters and a
closed-over constant), run in a Python where ``import dualgpu`` fails, match dualgpu on
CuPy arrays to 1e-12 in float64, and refuse a wrong shape and a non-contiguous argument
clearly. The CPU half (the text, and its launch plan run on a fake cupy) is
tests/api/test_export_cupy.py."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dualgpu as dg

cp = pytest.importorskip("cupy")

from export_scenarios import scenarios  # noqa: E402

# the top-level argument given a Fortran-ordered copy and a wrong shape (a 2-D+ array)
BAD_ARG = {"particles": 0, "dense": 1, "mlp": 1}

SCRIPT = textwrap.dedent("""
    import importlib
    import pickle
    import sys

    import cupy
    import numpy as np

    try:
        import dualgpu
        sys.exit("dualgpu was importable")
    except ImportError:
        pass


    def dev(t):
        if isinstance(t, dict):
            return {k: dev(v) for k, v in t.items()}
        if isinstance(t, (tuple, list)):
            return type(t)(dev(v) for v in t)
        return cupy.asarray(t) if isinstance(t, np.ndarray) else t


    def host(t):
        if isinstance(t, dict):
            return {k: host(v) for k, v in t.items()}
        if isinstance(t, (tuple, list)):
            return type(t)(host(v) for v in t)
        assert isinstance(t, cupy.ndarray), type(t)
        return cupy.asnumpy(t)


    def message(fn, args):
        try:
            fn(*args)
        except ValueError as e:
            return str(e)
        return None


    with open("cases.pkl", "rb") as fh:
        cases = pickle.load(fh)
    results = {}
    for name, (args, k) in cases.items():
        fn = importlib.import_module("m_" + name).exported
        args = dev(args)
        out = host(fn(*args))
        again = host(fn(*args))
        fortran = list(args)
        fortran[k] = cupy.asfortranarray(args[k])
        short = list(args)
        short[k] = cupy.ascontiguousarray(args[k][..., :-1])
        results[name] = {"out": out, "again": again,
                         "noncontiguous": message(fn, fortran),
                         "shape": message(fn, short)}
    with open("results.pkl", "wb") as fh:
        pickle.dump(results, fh)
""")


def _device(tree):
    if isinstance(tree, dict):
        return {k: _device(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(_device(v) for v in tree)
    return cp.asarray(tree) if isinstance(tree, np.ndarray) else tree


def _host(tree):
    if isinstance(tree, dict):
        return {k: _host(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(_host(v) for v in tree)
    return cp.asnumpy(tree)


def test_exported_modules_match_dualgpu_on_cupy(tmp_path):
    cases = scenarios()
    want = {}
    for name, (fn, args) in cases.items():
        on_device = _device(args)
        text = dg.export(fn, *on_device, name="exported")  # CuPy arguments: a CuPy module
        assert "cupy.RawModule(code=_CUDA)" in text and "import dualgpu" not in text
        (tmp_path / f"m_{name}.py").write_text(text)
        want[name] = _host(fn(*on_device))
    with open(tmp_path / "cases.pkl", "wb") as fh:
        pickle.dump({name: (args, BAD_ARG[name]) for name, (_, args) in cases.items()}, fh)
    shadow = tmp_path / "shadow" / "dualgpu"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('dualgpu is not installed here')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "shadow"),
                                                        str(tmp_path)]))
    res = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stderr[-4000:]
    with open(tmp_path / "results.pkl", "rb") as fh:
        got = pickle.load(fh)
    for name in cases:
        leaves, wanted = dg.tree.leaves(got[name]["out"]), dg.tree.leaves(want[name])
        assert len(leaves) == len(wanted), name
        for g, w, again in zip(leaves, wanted, dg.tree.leaves(got[name]["again"])):
            assert g.dtype == w.dtype == np.float64 and g.shape == w.shape, name
            scale = float(np.max(np.abs(w))) if w.size else 1.0
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12 * scale, err_msg=name)
            np.testing.assert_array_equal(g, again, err_msg=name)
        assert "is not C-contiguous" in (got[name]["noncontiguous"] or ""), name
        assert "this module was exported for float64[" in (got[name]["shape"] or ""), name
