"""Every examples/*.py runs to completion (exit status 0) on the CPU within its time limit."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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


def _run(name, tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "examples" / name)], cwd=tmp_path,
                          env=_env(), capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_particles_prints_the_whole_refusal(tmp_path):
    out = _run("particles.py", tmp_path)
    refusal = " ".join(out[out.index("coupled function refused"):].split())
    assert "reduce_sum" in refusal and refusal.endswith("or drop batch_axes.")
    assert "..." not in refusal


def test_matmul_precision_on_the_cpu_prints_no_timings(tmp_path):
    from dualgpu.backends.cupy import cupy_available

    if cupy_available():
        pytest.skip("a GPU is present: the example times it")
    out = _run("matmul_precision.py", tmp_path)
    assert " ms" not in out and "no timings" in out
    assert out.count("relative error") == 3


def test_every_example_is_in_the_docs_table():
    table = (ROOT / "docs" / "index.md").read_text()
    missing = [p.name for p in EXAMPLES if f"`{p.name}`" not in table]
    assert not missing, f"docs/index.md's examples table lacks {missing}"
