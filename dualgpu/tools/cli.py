"""The ``dualgpu`` command line: ``demo``, ``inspect``, ``export`` and ``bench``.

Examples::

    dualgpu demo                                   # the three user scenarios (docs/faq.md)
    dualgpu inspect model.py:loss --arg float64[11] --arg float64[10,4] --arg float64[4] --hvp
    dualgpu inspect model.py:loss --arg float32[3,4] --grad --format python
    dualgpu export model.py:loss --arg float64[11] --arg float64[10,4] --hvp -o loss_hvp.py
    dualgpu export model.py:loss --arg float64[11] --arg float64[10,4] --hvp --backend cupy
    dualgpu bench                                  # benchmarks/run.py, with a progress bar
                                                   # (new bench-<time>.* files; --out DIR)

Bad input (a missing file or function, a bad ``--arg`` spec, example arguments too large to
allocate, a user module that exits or fails at import, a function that raises while being
traced, an op without a rule, any :class:`dualgpu.DualgpuError`) prints one line to stderr
and exits with status 2.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import inspect as _inspect
import io
import math
import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

import dualgpu as dg

from .. import __version__
from ..api.export import cupy_build
from ..backends.cupy import cupy_available
from ..codegen.cuda import plan_source
from ..errors import DualgpuError
from ..fusion import plan_graph
from ..transforms.index_bounds import with_index_bounds

EXIT_BAD_INPUT = 2
# The example arguments of `inspect` are allocated: refuse shapes that need more than this.
MAX_EXAMPLE_BYTES = 1 << 30


class CliError(Exception):
    """Bad command-line input: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line (and still exit 2)."""

    def error(self, message: str):
        raise CliError(f"{message} (see '{self.prog} --help')")


# ----------------------------------------------------------------------------- arg specs
_SPEC = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\[\s*([0-9,\s]*)\]\s*$")


def parse_spec(spec: str) -> tuple[np.dtype, tuple[int, ...]]:
    """``"float32[3,4]"`` -> ``(dtype('float32'), (3, 4))``; ``"float64[]"`` is a scalar.

    Example::

        >>> parse_spec("float64[5]")
        (dtype('float64'), (5,))
    """
    m = _SPEC.match(spec)
    if not m:
        raise CliError(f"bad --arg spec {spec!r}: expected DTYPE[DIMS], e.g. float64[5] or "
                       "float32[3,4] (float64[] for a scalar)")
    name, dims = m.groups()
    try:
        dtype = np.dtype(name)
    except TypeError:
        raise CliError(f"bad --arg spec {spec!r}: unknown dtype {name!r}") from None
    if dtype.kind not in "biufc":
        raise CliError(f"bad --arg spec {spec!r}: dtype {name} is not numeric")
    parts = [p.strip() for p in dims.split(",")] if dims.strip() else []
    if any(not p for p in parts):
        raise CliError(f"bad --arg spec {spec!r}: empty dimension")
    bad = next((p for p in parts if not p.isdigit()), None)
    if bad is not None:
        raise CliError(f"bad --arg spec {spec!r}: dimension {bad!r} is not a non-negative "
                       "integer (separate dimensions with commas)")
    dims = tuple(int(p) for p in parts)
    if any(d > np.iinfo(np.intp).max for d in dims):
        raise CliError(f"bad --arg spec {spec!r}: a dimension is too large")
    return dtype, dims


_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def parse_arg(spec: str) -> Any:
    """One ``--arg``: ``DTYPE[DIMS]`` (an example array, see :func:`parse_spec`) or a plain
    number, passed as it is (a static argument: an int such as ``3`` or a float ``0.5``).

    Example::

        >>> parse_arg("3"), parse_arg("-0.5"), parse_arg("float32[2]")
        (3, -0.5, (dtype('float32'), (2,)))
    """
    text = spec.strip()
    if _NUMBER.match(text):
        return int(text) if re.fullmatch(r"[+-]?\d+", text) else float(text)
    return parse_spec(spec)


def example_bytes(dtype: np.dtype, shape: tuple[int, ...]) -> int:
    """Bytes of an example array of this dtype and shape (exact, no overflow)."""
    return math.prod(shape) * np.dtype(dtype).itemsize


def _human(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def example_array(dtype: np.dtype, shape: tuple[int, ...], seed: int):
    """A reproducible example value: standard normal floats, small integers, booleans."""
    rng = np.random.default_rng(seed)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0, 3, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# ----------------------------------------------------------------------------- loading
def load_function(target: str) -> Callable:
    """``"path/to/file.py:func"`` (or ``file.py:Class.method``) -> the function object."""
    path, sep, name = target.rpartition(":")
    if not sep or not path or not name:
        raise CliError(f"expected FILE.py:FUNCTION, got {target!r}")
    if not os.path.isfile(path):
        raise CliError(f"no such file: {path}")
    mod_name = "_dualgpu_inspect_" + re.sub(r"\W", "_", os.path.splitext(
        os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise CliError(f"cannot load {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the user's module failed to import
        raise CliError(f"cannot import {path}: {type(e).__name__}: {_one_line(e)}") from None
    except SystemExit as e:  # the user's module called sys.exit() (or exit()) at import
        raise CliError(f"cannot import {path}: it called sys.exit({e.code!r}) while being "
                       "imported (guard its script part with if __name__ == '__main__':)"
                       ) from None
    finally:
        if sys.path and sys.path[0] == folder:
            sys.path.pop(0)
    obj: Any = module
    for part in name.split("."):
        try:
            found = part.isidentifier() and hasattr(obj, part)
        except Exception:  # a property of the user's object raised
            found = False
        if not found:
            raise CliError(f"{path} has no function {name!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise CliError(f"{path}:{name} is not a function (it is a {type(obj).__name__})")
    return obj


# ----------------------------------------------------------------------------- commands
def _example_call(ns: argparse.Namespace, fn, cuda: bool = False) -> tuple:
    """The transformed function (``--grad``/``--hvp``) and example arguments of ``--arg``."""
    specs = [parse_arg(s) for s in ns.arg]
    if not specs:
        raise CliError("give the example arguments with --arg DTYPE[DIMS], one per argument")
    mode = "hvp" if ns.hvp else "grad" if ns.grad else None
    arrays = [s for s in specs if isinstance(s, tuple)]
    need = sum(example_bytes(dt, shape) for dt, shape in arrays)
    if mode and 0 <= ns.argnum < len(specs) and not isinstance(specs[ns.argnum], tuple):
        raise CliError(f"--argnum {ns.argnum} names the static argument {specs[ns.argnum]!r}: "
                       "differentiate an array argument (DTYPE[DIMS])")
    if mode == "hvp" and 0 <= ns.argnum < len(specs):
        need += example_bytes(*specs[ns.argnum])  # the direction v
    if need > MAX_EXAMPLE_BYTES:
        raise CliError(f"the example arguments ({', '.join(ns.arg)}) need {_human(need)}, more "
                       f"than the {_human(MAX_EXAMPLE_BYTES)} the CLI allocates; the program "
                       "depends only on the shapes' structure: use smaller shapes")
    args = [example_array(spec[0], spec[1], seed=i) if isinstance(spec, tuple) else spec
            for i, spec in enumerate(specs)]
    if ns.batch_axes is not None and mode != "hvp":
        raise CliError("--batch-axes goes with --hvp")
    if mode and not 0 <= ns.argnum < len(args):
        raise CliError(f"--argnum {ns.argnum} is out of range for {len(args)} argument(s)")
    if cuda:
        args = [_to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    target = fn
    if mode == "grad":
        target = dg.grad(fn, argnums=ns.argnum)
    elif mode == "hvp":
        target = dg.hvp(fn, argnums=ns.argnum, batch_axes=_batch_axes(ns.batch_axes))
        x = args[ns.argnum]
        v = example_array(np.dtype(x.dtype), tuple(x.shape), seed=len(args))
        args = args + [_to_device(v) if cuda else v]
    return target, args


def _run_user_code(ns: argparse.Namespace, thunk):
    """``thunk()``, with the user's function failing or exiting as one CLI error."""
    try:
        return thunk()
    except (dg.DualgpuError, MemoryError):
        raise
    except Exception as e:  # the user's function failed while being traced
        raise CliError(f"{ns.target} failed while being traced or compiled: {type(e).__name__}: "
                       f"{_one_line(e)}") from e
    except SystemExit as e:
        raise CliError(f"{ns.target} called sys.exit({e.code!r}) while being traced") from None


def cmd_inspect(ns: argparse.Namespace) -> int:
    fn = load_function(ns.target)
    on_gpu = ns.format == "cuda" and cupy_available()
    target, args = _example_call(ns, fn, cuda=on_gpu)
    if ns.format == "cuda" and not on_gpu:
        text = _run_user_code(ns, lambda: _cuda_without_gpu(target, args))
    elif ns.format in ("text", "dot"):
        graph = _run_user_code(ns, lambda: dg.trace(target, *args))
        text = str(graph) if ns.format == "text" else graph.to_dot()
    else:
        text = _run_user_code(ns, lambda: dg.source(target, *args))
    print(text.rstrip())
    return 0


def _cuda_without_gpu(target, args) -> str:
    """The fusion plan and CUDA kernels of ``target``, generated on the CPU (the code
    generator is pure Python): traced on NumPy arrays with the switches a CuPy build uses."""
    with cupy_build():
        graph = dg.trace(target, *args)
    checked = with_index_bounds(graph) if dg.config["check_indices"] else None
    if checked is not None:   # CuPy's gathers wrap: the program returns its index bounds
        graph = checked.graph
    plan = plan_graph(graph, recompute=dg.config["recompute"])
    return ("// generated without a GPU (no CuPy here): the plan and kernels a CuPy call of "
            "these shapes runs\n" + plan_source(plan))



def cmd_export(ns: argparse.Namespace) -> int:
    fn = load_function(ns.target)
    target, args = _example_call(ns, fn)
    text = _run_user_code(ns, lambda: dg.export(target, *args, name=ns.name,
                                                backend=ns.backend))
    if ns.output in (None, "-"):
        print(text.rstrip())
        return 0
    try:
        with open(ns.output, "w") as fh:
            fh.write(text)
    except OSError as e:
        raise CliError(f"cannot write {ns.output}: {e.strerror or e}") from None
    print(f"wrote {ns.output}", file=sys.stderr)
    return 0


def _batch_axes(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(a) for a in text.split(","))
    except ValueError:
        raise CliError(f"bad --batch-axes {text!r}: expected integers such as 1,2,3") from None


def _to_device(a):
    import cupy

    return cupy.asarray(a)


def cmd_demo(ns: argparse.Namespace) -> int:
    from .demo import run

    return run(use_gpu=False if ns.cpu else None, show_source=not ns.no_source)


class ProgressBar:
    """A one-line text progress bar on stderr: ``bar(done, total, label)``."""

    def __init__(self, stream=None, width: int = 30):
        self.stream = stream or sys.stderr
        self.width = width
        self.start = time.perf_counter()

    def __call__(self, done: int, total: int, label: str = "") -> None:
        frac = done / total if total else 1.0
        fill = int(round(frac * self.width))
        bar = "#" * fill + "-" * (self.width - fill)
        took = time.perf_counter() - self.start
        end = "\n" if done >= total else ""
        self.stream.write(f"\r[{bar}] {done}/{total} {took:5.1f}s {label[:40]:<40}{end}")
        self.stream.flush()


BENCH_USAGE = "usage: dualgpu bench [HARNESS OPTIONS]"
BENCH_MISSING = ("the benchmark harness (benchmarks/run.py) ships with dualgpu's source "
                 "repository, not with the installed package: in a source checkout, run "
                 "'dualgpu bench' (or 'make bench') from the repository root")


def _load_bench():
    """``benchmarks.run`` of the current folder (a source checkout), or None."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        import benchmarks.run as bench
    except ImportError:
        return None
    return bench


def _bench_help(bench) -> None:
    """``dualgpu bench --help``: what the command does, then the harness's own options
    (under this command's name, not ``python -m benchmarks.run``)."""
    print(f"{BENCH_USAGE}\n\nRuns benchmarks/run.py of a source checkout with a progress bar; "
          "every option is passed on to it.")
    if bench is None:
        print(f"\nNot available here: {BENCH_MISSING}.")
        return
    parse = getattr(bench, "parse_args", None)
    if parse is None:
        return
    text = io.StringIO()
    try:
        with contextlib.redirect_stdout(text):
            parse(["--help"])
    except SystemExit:
        pass
    # the harness's description and options, without its usage block (its program name)
    _usage, _, rest = text.getvalue().partition("\n\n")
    print("\n" + rest.replace("python -m benchmarks.run", "dualgpu bench").rstrip())


def cmd_bench(ns: argparse.Namespace) -> int:
    bench = _load_bench()
    argv = list(ns.bench_args)
    if "-h" in argv or "--help" in argv:
        _bench_help(bench)
        return 0
    if bench is None:
        raise CliError(f"no benchmarks here: {BENCH_MISSING}")
    main = getattr(bench, "main", None)
    if main is None:
        raise CliError("benchmarks.run has no main()")
    if not {"--latest", "--no-latest"} & set(argv):
        # new timestamped files only: latest.* in benchmarks/results/ are tracked (the
        # reference results), which `make bench` updates on purpose
        argv.append("--no-latest")
    kwargs: dict[str, Any] = {}
    try:
        params: Mapping[str, Any] = _inspect.signature(main).parameters
    except (TypeError, ValueError):
        params = {}
    if "progress" in params:
        kwargs["progress"] = ProgressBar()
    if params and next(iter(params)) not in ("progress",):
        result = main(argv, **kwargs)
    else:
        result = main(**kwargs)
    return int(result or 0)


# ----------------------------------------------------------------------------- main
def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="dualgpu", description="Second-order automatic differentiation of "
                "NumPy/CuPy programs: demo, graph inspection, export and benchmarks.")
    p.add_argument("--version", action="version", version=f"dualgpu {__version__}")
    p.add_argument("--traceback", action="store_true",
                   help="show the full Python traceback on errors (for bug reports)")
    sub = p.add_subparsers(dest="command", metavar="{demo,inspect,export,bench}",
                           parser_class=_Parser)

    d = sub.add_parser("demo", help="run the three user scenarios, checked against finite "
                       "differences")
    d.add_argument("--cpu", action="store_true", help="use NumPy even when a GPU is present")
    d.add_argument("--no-source", action="store_true",
                   help="do not print the traced graph and generated source")
    d.set_defaults(run=cmd_demo)

    i = sub.add_parser("inspect", help="print the traced graph or generated program of a "
                       "function", description="Trace FILE.py:FUNC on example arguments of "
                       "the given dtypes and shapes and print the graph (or its derivative).")
    i.add_argument("target", metavar="FILE.py:FUNC")
    i.add_argument("--arg", action="append", default=[], metavar="DTYPE[DIMS]",
                   help="one example argument, e.g. float64[5] or float32[3,4], or a number "
                   "passed as it is (a static argument, e.g. 3 or 0.5); repeat for each "
                   "argument in order")
    what = i.add_mutually_exclusive_group()
    what.add_argument("--grad", action="store_true", help="the gradient program")
    what.add_argument("--hvp", action="store_true",
                      help="the Hessian-vector product program (forward-over-reverse)")
    i.add_argument("--argnum", type=int, default=0,
                   help="which argument --grad/--hvp differentiate (default 0)")
    i.add_argument("--batch-axes", metavar="AXES",
                   help="with --hvp: the instance axes of a function returning one value "
                   "per instance, e.g. 1,2,3 (the per-instance HVP)")
    i.add_argument("--format", choices=("text", "dot", "python", "cuda"), default="text",
                   help="text: the graph listing; dot: Graphviz DOT; python: generated "
                   "NumPy source; cuda: the fusion plan and CUDA kernels (generated on the CPU "
                   "when there is no GPU)")
    i.set_defaults(run=cmd_inspect)

    e = sub.add_parser("export", help="write a standalone module (NumPy or CuPy only, no "
                       "dualgpu needed) computing a function or its derivative",
                       description="Trace FILE.py:FUNC (or its --grad/--hvp) on example "
                       "arguments and write a module that computes it without dualgpu.")
    e.add_argument("target", metavar="FILE.py:FUNC")
    e.add_argument("--arg", action="append", default=[], metavar="DTYPE[DIMS]",
                   help="one example argument, e.g. float64[5], or a number (a static "
                   "argument); repeat for each argument")
    ewhat = e.add_mutually_exclusive_group()
    ewhat.add_argument("--grad", action="store_true", help="the gradient")
    ewhat.add_argument("--hvp", action="store_true", help="the Hessian-vector product")
    e.add_argument("--argnum", type=int, default=0,
                   help="which argument --grad/--hvp differentiate (default 0)")
    e.add_argument("--batch-axes", metavar="AXES", help="with --hvp: the instance axes")
    e.add_argument("--name", default=None, help="the exported function's name")
    e.add_argument("--backend", choices=("numpy", "cupy"), default="numpy",
                   help="numpy: a module importing NumPy; cupy: a module importing CuPy, "
                   "with the generated CUDA kernels embedded (written without a GPU)")
    e.add_argument("-o", "--output", default=None, metavar="OUT.py",
                   help="where to write the module (default: standard output)")
    e.set_defaults(run=cmd_export)

    b = sub.add_parser("bench", help="run benchmarks/run.py with a progress bar")
    b.add_argument("bench_args", nargs="*", metavar="ARGS",
                   help="arguments passed on to benchmarks.run")
    b.set_defaults(run=cmd_bench)
    return p


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dualgpu`` script; returns the exit status.

    Example::

        >>> import pathlib, tempfile
        >>> model = pathlib.Path(tempfile.mkdtemp()) / "model.py"
        >>> _ = model.write_text("import numpy as np\\ndef loss(x):\\n    return np.sum(x ** 2)\\n")
        >>> main(["inspect", f"{model}:loss", "--arg", "float64[3]", "--grad"])
        { lambda x:float64[3] .
          t0:float64[3] = multiply x x
          t1:float64[] = reduce_sum t0 axes=(0,)
          t2:float64[3] = add x x
          in ( t1 t2 ) }
        0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    show_tb = "--traceback" in argv  # accepted anywhere, before or after the command
    argv = [a for a in argv if a != "--traceback"]
    try:
        # everything after `bench` goes to benchmarks.run untouched (argparse's REMAINDER
        # would refuse arguments that look like options)
        words = [a for a in argv if not a.startswith("-")]
        rest: list[str] = []
        if words and words[0] == "bench":
            at = argv.index("bench")
            argv, rest = argv[:at + 1], argv[at + 1:]
        ns = build_parser().parse_args(argv)
        if ns.command == "bench":
            ns.bench_args = rest
        if ns.command is None:
            raise CliError("choose a command: demo, inspect, export or bench "
                           "(see 'dualgpu --help')")
        return ns.run(ns)
    except (CliError, DualgpuError) as e:
        if show_tb:
            raise
        kind = "" if isinstance(e, CliError) else f"{type(e).__name__}: "
        print(f"dualgpu: error: {kind}{_one_line(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError as e:
        if show_tb:
            raise
        print(f"dualgpu: error: out of memory ({_one_line(e)}); use smaller --arg shapes",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("dualgpu: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `dualgpu demo | head`: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
