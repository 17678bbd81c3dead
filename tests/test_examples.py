"""Every examples/*.py runs to completion (exit status 0) on the CPU within its time limit."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))
TIMEOUT_S = 120


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("MPLBACKEND", "Agg")
    return env


def test_there_are_examples():
    names = {p.name for p in EXAMPLES}
    for want in ("dense_newton_cg.py", "newton_cg_mlp.py", "hessian_eigs.py",
                 "cubic_newton.py", "particles.py"):
        assert want in names


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(path, tmp_path):
    try:
        done = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=_env(),
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{path.name} took more than {TIMEOUT_S} s")
    assert done.returncode == 0, (
        f"{path.name} exited with {done.returncode}\n--- stdout\n{done.stdout[-3000:]}"
        f"\n--- stderr\n{done.stderr[-3000:]}")
    assert "FAILED" not in done.stdout
    assert "Traceback" not in done.stderr
