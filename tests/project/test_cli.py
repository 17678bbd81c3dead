"""The ``dualgpu`` command line: inspect formats, demo, bench, and every error path (exit
status 2, one line on stderr, no traceback)."""
import os
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest

import dualgpu as dg
import dualgpu.tools.cli
from dualgpu.backends.cupy import cupy_available
from dualgpu.tools.cli import main, parse_spec

ROOT = Path(__file__).resolve().parents[2]

MODEL = textwrap.dedent('''
    import numpy as np

    def loss(x):
        return np.sum(np.sin(x) ** 2)

    def two(w, X):
        return np.mean(np.tanh(X @ w) ** 2)

    def unsupported(x):
        return np.sum(np.packbits(x > 0))

    def branchy(x):
        if np.sum(x) > 0:
            return np.sum(x)
        return -np.sum(x)

    def broken(x):
        return x.no_such_method()

    class Model:
        @staticmethod
        def energy(x):
            return np.sum(x ** 4)

    NOT_A_FUNCTION = 3
''')


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    return str(path)


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, out, err):
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("dualgpu")
    assert "Traceback" not in err


# ------------------------------------------------------------------------------ inspect
def test_inspect_text(capsys, model):
    code, out, _ = run_cli(capsys, "inspect", f"{model}:loss", "--arg", "float64[5]")
    assert code == 0
    assert out.startswith("{ lambda x:float64[5] .")
    assert "sin x" in out and "reduce_sum" in out


def test_inspect_two_args_grad(capsys, model):
    code, out, _ = run_cli(capsys, "inspect", f"{model}:two", "--arg", "float32[3]",
                           "--arg", "float32[4,3]", "--grad")
    assert code == 0
    assert "w:float32[3] X:float32[4,3]" in out
    assert "float32[3]" in out.strip().splitlines()[-2]  # the gradient's shape


def test_inspect_hvp_text_and_python(capsys, model):
    code, out, _ = run_cli(capsys, "inspect", f"{model}:loss", "--arg", "float64[5]", "--hvp")
    assert code == 0 and "x_dot:float64[5]" in out
    code, out, _ = run_cli(capsys, "inspect", f"{model}:loss", "--arg", "float64[5]",
                           "--hvp", "--format", "python")
    assert code == 0
    assert out.startswith("def ") and "x_dot" in out and "return" in out
    compile(out, "<generated>", "exec")  # the printed program is valid Python


def test_inspect_python_of_plain_function(capsys, model):
    code, out, _ = run_cli(capsys, "inspect", f"{model}:loss", "--arg", "float64[5]",
                           "--format", "python")
    assert code == 0 and "xp.sin" in out


def test_inspect_dot(capsys, model):
    code, out, _ = run_cli(capsys, "inspect", f"{model}:two", "--arg", "float64[3]",
                           "--arg", "float64[4,3]", "--grad", "--argnum", "1",
                           "--format", "dot")
    assert code == 0
    assert out.startswith("digraph") and out.rstrip().endswith("}") and "->" in out


def test_inspect_per_instance_hvp(capsys, tmp_path):
    path = tmp_path / "particles.py"
    path.write_text("import numpy as np\n\ndef f(x, mu):\n"
                    "    return np.exp(-np.sum((x - mu[:, None, None, :]) ** 2, axis=0))\n")
    code, out, _ = run_cli(capsys, "inspect", f"{path}:f", "--arg", "float32[3,4,4,4]",
                           "--arg", "float32[3,4]", "--hvp", "--batch-axes", "1,2,3")
    assert code == 0 and "x_dot:float32[3,4,4,4]" in out
    out = run_cli(capsys, "inspect", f"{path}:f", "--arg", "float32[3,4,4,4]",
                  "--arg", "float32[3,4]", "--hvp")
    assert_one_line_error(*out)
    assert "NonScalarOutputError" in out[2]
    out = run_cli(capsys, "inspect", f"{path}:f", "--arg", "float32[3,4,4,4]",
                  "--arg", "float32[3,4]", "--hvp", "--batch-axes", "a,b")
    assert_one_line_error(*out)
    out = run_cli(capsys, "inspect", f"{path}:f", "--arg", "float32[3,4,4,4]",
                  "--arg", "float32[3,4]", "--grad", "--batch-axes", "1")
    assert_one_line_error(*out)


def test_inspect_dotted_name_and_scalar_spec(capsys, model):
    code, out, _ = run_cli(capsys, "inspect", f"{model}:Model.energy", "--arg", "float64[]",
                           "--hvp")
    assert code == 0 and "float64[]" in out


@pytest.mark.skipif(cupy_available(), reason="checks the text generated without a GPU")
def test_inspect_cuda_without_gpu(capsys, model):
    """The code generator is pure Python: --format cuda works on a machine without a GPU and
    prints the same plan and kernels as the fusion planner and CUDA emitter give."""
    from dualgpu.codegen.cuda import plan_source
    from dualgpu.fusion import plan_graph

    code, out, _ = run_cli(capsys, "inspect", f"{model}:loss", "--arg", "float32[1000]",
                           "--hvp", "--format", "cuda")
    assert code == 0
    assert "generated without a GPU" in out and 'extern "C" __global__' in out
    assert "# fusion plan of" in out
    fn = dualgpu.tools.cli.load_function(f"{model}:loss")
    x = dualgpu.tools.cli.example_array(np.dtype("float32"), (1000,), seed=0)
    v = dualgpu.tools.cli.example_array(np.dtype("float32"), (1000,), seed=1)
    want = plan_source(plan_graph(dg.trace(dg.hvp(fn), x, v)))
    assert want.strip() in out


@pytest.mark.skipif(not cupy_available(), reason="needs CuPy and a CUDA device")
def test_inspect_cuda_with_gpu(capsys, model):
    code, out, _ = run_cli(capsys, "inspect", f"{model}:loss", "--arg", "float32[1000]",
                           "--hvp", "--format", "cuda")
    assert code == 0 and out.strip()


# ------------------------------------------------------------------------------ errors
BAD_SPECS = ["float64[5", "float64", "foo[3]", "float64[a]", "float64[3,,4]", "object[2]",
             "[3]", "float64[-1]", "float64[3 4]", "float64[1,]",
             "float64[99999999999999999999999999999999999999,0]"]


@pytest.mark.parametrize("spec", BAD_SPECS)
def test_bad_shape_spec(capsys, model, spec):
    out = run_cli(capsys, "inspect", f"{model}:loss", "--arg", spec)
    assert_one_line_error(*out)
    assert "spec" in out[2]


@pytest.mark.parametrize("argv, needle", [
    (["inspect", "/no/such/file.py:loss", "--arg", "float64[5]"], "no such file"),
    (["inspect", "{model}:nope", "--arg", "float64[5]"], "no function 'nope'"),
    (["inspect", "{model}:NOT_A_FUNCTION", "--arg", "float64[5]"], "not a function"),
    (["inspect", "{model}", "--arg", "float64[5]"], "FILE.py:FUNCTION"),
    (["inspect", "{model}:loss"], "--arg"),
    (["inspect", "{model}:unsupported", "--arg", "float64[5]"], "UnsupportedOpError"),
    (["inspect", "{model}:branchy", "--arg", "float64[5]"], "TracerControlFlowError"),
    (["inspect", "{model}:loss", "--arg", "int64[5]", "--grad"], "IntegerInputError"),
    (["inspect", "{model}:two", "--arg", "float64[3]", "--arg", "float64[4,3]", "--hvp",
      "--argnum", "5"], "out of range"),
    (["inspect", "{model}:two", "--arg", "float64[3]", "--arg", "float64[5,2]"],
     "inner dimensions"),
    (["inspect", "{model}:loss", "--arg", "float64[3]", "--arg", "float64[3]"],
     "cannot take these arguments"),
    (["inspect", "{model}:broken", "--arg", "float64[3]"], "AttributeError"),
    (["inspect", "{model}:loss", "--arg", "float64[5]", "--format", "svg"], "invalid choice"),
    (["inspect", "{model}:loss", "--arg", "float64[5]", "--grad", "--hvp"], "not allowed"),
    (["frobnicate"], "invalid choice"),
    ([], "choose a command"),
])
def test_error_paths(capsys, model, argv, needle):
    argv = [a.replace("{model}", model) for a in argv]
    out = run_cli(capsys, *argv)
    assert_one_line_error(*out)
    assert needle in out[2]


def test_module_that_fails_to_import(capsys, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import numpy as np\nraise RuntimeError('boom at import')\n")
    out = run_cli(capsys, "inspect", f"{bad}:f", "--arg", "float64[2]")
    assert_one_line_error(*out)
    assert "boom at import" in out[2]
    syntax = tmp_path / "syntax.py"
    syntax.write_text("def f(x:\n")
    out = run_cli(capsys, "inspect", f"{syntax}:f", "--arg", "float64[2]")
    assert_one_line_error(*out)
    assert "SyntaxError" in out[2]


def test_traceback_flag_reraises(model):
    import dualgpu as dg

    with pytest.raises(dg.UnsupportedOpError):
        main(["--traceback", "inspect", f"{model}:unsupported", "--arg", "float64[5]"])


def test_parse_spec():
    import numpy as np

    assert parse_spec("float32[3,4]") == (np.dtype("float32"), (3, 4))
    assert parse_spec(" float64[ 5 ] ") == (np.dtype("float64"), (5,))
    assert parse_spec("float64[]") == (np.dtype("float64"), ())
    assert parse_spec("int32[2]") == (np.dtype("int32"), (2,))


# ------------------------------------------------------------------------------ subprocess
def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def test_subprocess_error_is_one_line_and_status_2(model, tmp_path):
    done = subprocess.run([sys.executable, "-m", "dualgpu", "inspect", f"{model}:unsupported",
                           "--arg", "float64[5]"], capture_output=True, text=True,
                          env=_env(), cwd=tmp_path, timeout=60)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_subprocess_inspect_ok(model, tmp_path):
    done = subprocess.run([sys.executable, "-m", "dualgpu", "inspect", f"{model}:loss",
                           "--arg", "float64[5]", "--grad"], capture_output=True, text=True,
                          env=_env(), cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "lambda" in done.stdout


def test_help_and_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    assert "inspect" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert "dualgpu" in capsys.readouterr().out


# ------------------------------------------------------------------------------ demo, bench
def test_demo_command(capsys):
    code, out, _ = run_cli(capsys, "demo", "--cpu")
    assert code == 0
    assert "Scenario 1" in out and "Scenario 2" in out and "Scenario 3" in out
    assert "FAILED" not in out
    assert "def " in out  # the generated derivative source
    assert "lambda" in out  # the traced graph
    # what it checked, how many, and the time it took (it said "all checks passed (0.0 s)")
    last = re.search(r"all (\d+) checks passed on NumPy \(CPU\): the gradients.*; "
                     r"([\d.]+) (ms|s) to trace, compile and run", out)
    assert last and int(last[1]) >= 10 and float(last[2]) > 0


def test_bench_without_benchmarks_package(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "benchmarks.run", None)  # import fails
    out = run_cli(capsys, "bench")
    assert_one_line_error(*out)
    assert "benchmarks" in out[2]


def test_bench_runs_benchmarks_with_a_progress_bar(capsys, monkeypatch):
    calls = {}

    def fake_main(argv=None, progress=None):
        calls["argv"] = argv
        for i in range(3):
            progress(i + 1, 3, f"workload {i}")
        return 0

    pkg = types.ModuleType("benchmarks")
    run = types.ModuleType("benchmarks.run")
    run.main = fake_main
    pkg.run = run
    monkeypatch.setitem(sys.modules, "benchmarks", pkg)
    monkeypatch.setitem(sys.modules, "benchmarks.run", run)
    code, out, err = run_cli(capsys, "bench", "--quick")
    assert code == 0
    assert calls["argv"] == ["--quick", "--no-latest"]  # never the tracked latest.* files
    assert "3/3" in err and "#" in err
    run_cli(capsys, "bench", "--latest")
    assert calls["argv"] == ["--latest"]  # unless asked for


def test_demo_skips_scenario_3_cleanly_when_sparse_is_refused(capsys, monkeypatch):
    import dualgpu as dg
    import dualgpu.tools.demo as demo

    def refused(x, A):
        raise dg.UnsupportedOpError("sparse matmul has no rule\n(yet)")

    monkeypatch.setattr(demo, "sparse_loss", refused)
    lines = []
    report = demo.Report(lines.append)
    demo.scenario_sparse(np, report)
    assert report.failed == 0
    assert lines[-1] == "scenario 3: skipped (UnsupportedOpError: sparse matmul has no rule (yet))"


# ------------------------------------------------------------------------------ hostile input
@pytest.mark.parametrize("spec", ["float64[100000000000]", "float32[30000,30000]",
                                  "float64[4000000000,4000000000]"])
def test_huge_shapes_are_refused_before_allocating(capsys, model, spec):
    out = run_cli(capsys, "inspect", f"{model}:loss", "--arg", spec, "--hvp")
    assert_one_line_error(*out)
    assert "smaller shapes" in out[2] and ("GiB" in out[2] or "PiB" in out[2])


def test_out_of_memory_is_one_line(capsys, model, monkeypatch):
    import dualgpu.tools.cli as cli

    def no_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 8.00 GiB")

    monkeypatch.setattr(cli, "example_array", no_memory)
    out = run_cli(capsys, "inspect", f"{model}:loss", "--arg", "float64[5]")
    assert_one_line_error(*out)
    assert "out of memory" in out[2]


@pytest.mark.parametrize("body", ["import sys\nsys.exit(7)\n", "raise SystemExit('bye')\n",
                                  "exit()\n"])
def test_module_that_exits_at_import(capsys, tmp_path, body):
    path = tmp_path / "exits.py"
    path.write_text(body)
    out = run_cli(capsys, "inspect", f"{path}:f", "--arg", "float64[2]")
    assert_one_line_error(*out)
    assert str(path) in out[2] and "sys.exit" in out[2]


def test_subprocess_module_that_exits_at_import(tmp_path):
    path = tmp_path / "exits.py"
    path.write_text("import sys\nsys.exit(7)\n")
    done = subprocess.run([sys.executable, "-m", "dualgpu", "inspect", f"{path}:f",
                           "--arg", "float64[2]"], capture_output=True, text=True,
                          env=_env(), cwd=tmp_path, timeout=60)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "exits.py" in done.stderr
    assert "Traceback" not in done.stderr


def test_function_that_exits_or_raises_while_traced(capsys, tmp_path):
    path = tmp_path / "fns.py"
    path.write_text("import sys\n\ndef exits(x):\n    sys.exit(3)\n\n"
                    "def raises(x):\n    raise ValueError('bad\\nvalue')\n")
    out = run_cli(capsys, "inspect", f"{path}:exits", "--arg", "float64[2]")
    assert_one_line_error(*out)
    assert "sys.exit(3)" in out[2]
    out = run_cli(capsys, "inspect", f"{path}:raises", "--arg", "float64[2]", "--grad")
    assert_one_line_error(*out)
    assert "ValueError: bad value" in out[2]


@pytest.mark.parametrize("target, needle", [
    ("{model}:", "FILE.py:FUNCTION"), (":loss", "FILE.py:FUNCTION"),
    ("{model}:a..b", "no function"), ("{model}:1abc", "no function"),
    ("{dir}:loss", "no such file"), ("{txt}:loss", "not a Python file"),
])
def test_bad_targets(capsys, model, tmp_path, target, needle):
    txt = tmp_path / "notes.txt"
    txt.write_text("hello\n")
    target = target.replace("{model}", model).replace("{dir}", str(tmp_path))
    target = target.replace("{txt}", str(txt))
    out = run_cli(capsys, "inspect", target, "--arg", "float64[3]")
    assert_one_line_error(*out)
    assert needle in out[2]


def test_static_number_arguments(capsys, tmp_path):
    model = tmp_path / "powers.py"
    model.write_text("import numpy as np\ndef f(x, k, s):\n    return s * np.sum(x ** k)\n")
    code, out, _ = run_cli(capsys, "inspect", f"{model}:f", "--arg", "float64[4]", "--arg",
                           "3", "--arg", "0.5", "--grad", "--format", "python")
    assert code == 0 and "def vjp_f(x, k, s)" in out  # Python numbers: inputs (issue 37)
    bad = run_cli(capsys, "inspect", f"{model}:f", "--arg", "float64[4]", "--arg", "3",
                  "--arg", "0.5", "--grad", "--argnum", "1")
    assert_one_line_error(*bad)
    assert "static" in bad[2]


# ------------------------------------------------------------------------------ newcomer frictions
def test_usage_and_no_command_message_name_export(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "{demo,inspect,export,bench}" in capsys.readouterr().out
    out = run_cli(capsys)
    assert_one_line_error(*out)
    assert "export" in out[2]


def test_traceback_flag_after_the_command_reraises(model):
    with pytest.raises(dg.UnsupportedOpError):
        main(["inspect", f"{model}:unsupported", "--arg", "float64[5]", "--traceback"])


def _fake_harness(monkeypatch, calls):
    import argparse

    def parse_args(argv=None):
        p = argparse.ArgumentParser(prog="python -m benchmarks.run",
                                    description="Drive the benchmarks.")
        p.add_argument("--quick", action="store_true", help="fewer sizes")
        return p.parse_args(argv)

    def fake_main(argv=None, progress=None):
        calls.append(argv)
        return 0

    pkg = types.ModuleType("benchmarks")
    run = types.ModuleType("benchmarks.run")
    run.main, run.parse_args = fake_main, parse_args
    pkg.run = run
    monkeypatch.setitem(sys.modules, "benchmarks", pkg)
    monkeypatch.setitem(sys.modules, "benchmarks.run", run)


def test_bench_help_is_the_commands_own(capsys, monkeypatch):
    calls = []
    _fake_harness(monkeypatch, calls)
    code, out, _ = run_cli(capsys, "bench", "--help")
    assert code == 0 and calls == []  # the harness did not run
    assert out.startswith("usage: dualgpu bench")
    assert "python -m benchmarks.run" not in out
    assert "--quick" in out and "fewer sizes" in out  # the harness's options


def test_bench_without_harness_says_where_it_is(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "benchmarks.run", None)  # an installed copy: no harness
    out = run_cli(capsys, "bench")
    assert_one_line_error(*out)
    assert "source" in out[2] and "repository root" in out[2]
    code, text, _ = run_cli(capsys, "bench", "--help")
    assert code == 0 and "usage: dualgpu bench" in text and "source" in text


def test_demo_says_where_the_command_is(capsys, monkeypatch, tmp_path):
    import dualgpu.tools.demo as demo

    venv_bin = tmp_path / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "dualgpu").write_text("#!/bin/sh\n")
    monkeypatch.setattr(demo.shutil, "which", lambda name: None)  # not on PATH
    monkeypatch.setattr(demo.sys, "executable", str(venv_bin / "python"))
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(capsys, "demo", "--cpu", "--no-source")
    assert code == 0
    last = out.strip().splitlines()[-1]
    assert ".venv/bin/dualgpu" in last and "not on PATH" in last and "activate" in last
