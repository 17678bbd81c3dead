"""HIPS/autograd's own test suite run against dualgpu through an adapter (issue 13's measure).

autograd's tests are written against ``autograd.numpy`` (NumPy with derivatives),
``autograd.grad``/``jacobian``/... and ``autograd.test_util.check_grads``. This script
installs an ``autograd`` package of our own in ``sys.modules`` -- ``autograd.numpy`` *is*
NumPy, the transforms are dualgpu's, and ``check_grads`` is dualgpu's (values against
NumPy, then :func:`dualgpu.testing.check_grads`: JVP against central differences, VJP by
the inner-product identity and against differences, and the HVP) -- and runs the test files
with pytest, in this process. No autograd code is used or needed.

Getting the tests (MIT licence; they are not in the ``autograd`` wheel, and they are not
vendored here): clone them into the git-ignored folder ``benchmarks/peer/``::

    git clone https://github.com/HIPS/autograd benchmarks/peer/autograd
    PYTHONPATH=. python -m benchmarks.peer_suite            # or --tests DIR, -v, --json OUT

The numbers in ``benchmarks/NOTES.md`` were measured on autograd commit ``bff107b``.

What is in scope (dualgpu's purpose: derivatives of real-valued NumPy programs, to second
order). Files: ``IN_SCOPE_FILES`` -- NumPy functions, ufuncs and statistics, linear
algebra, scalar and binary operators, Jacobians and nested transforms. The other files test
autograd itself (its boxes, vector spaces, ``primitive``/``defvjp``, containers, tracer,
wrappers) or areas outside dualgpu's scope today (complex FFTs, ``scipy.stats``/``signal``/
``integrate``). Within the files, a ``check_grads`` call whose differentiated arguments or
outputs are complex is not run (autograd's holomorphic/complex conventions differ from
JAX's, which dualgpu follows); a test all of whose checks were complex ones is counted out of
scope. A failure whose error is one of ``DESIGN_DIFFERENCES`` (random draws a program cannot
make again at every call, autograd-only functions, complex eigenvalues) is
reported apart and counted only in the strict rate. Every other test counts: it passes or
it fails, with the error, grouped in the report.
This script is not part of ``make test`` (it needs the downloaded files).
"""
from __future__ import annotations

import argparse
import builtins
import collections
import functools
import json
import shutil
import sys
import tempfile
import types
from pathlib import Path

import numpy as np

import dualgpu as dg

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TESTS = ROOT / "benchmarks" / "peer" / "autograd" / "tests"
IN_SCOPE_FILES = ("test_numpy.py", "test_systematic.py", "test_linalg.py",
                  "test_scalar_ops.py", "test_binary_ops.py", "test_truediv.py",
                  "test_jacobian.py", "test_graphs.py")
SUPPORT_FILES = ("numpy_utils.py", "conftest.py")


# ------------------------------------------------------------------------------ the adapter
class Tally:
    """``check_grads`` calls of the running test: run, and not run (complex)."""

    def __init__(self):
        self.checked = 0
        self.complex = 0


TALLY = Tally()


def _leaves(tree):
    if isinstance(tree, (builtins.tuple, builtins.list)):
        return [leaf for t in tree for leaf in _leaves(t)]
    if isinstance(tree, builtins.dict):
        return [leaf for k in sorted(tree) for leaf in _leaves(tree[k])]
    return [] if tree is None else [tree]


def _is_complex(tree) -> bool:
    return any(np.iscomplexobj(leaf) for leaf in _leaves(tree))


def _argnums(argnum):
    return builtins.tuple(argnum) if isinstance(argnum, (builtins.tuple, builtins.list)) \
        else (argnum,)


def check_grads(fun, argnum=0, modes=None, order=2):
    """autograd's ``check_grads(fun, argnum, modes, order)(*args, **kwargs)``, by dualgpu."""
    def check(*args, **kwargs):
        f = functools.partial(fun, **kwargs) if kwargs else fun
        nums = _argnums(argnum)
        want = f(*args)  # plain NumPy (the function is not traced here)
        if _is_complex([args[i] for i in nums]) or _is_complex(want):
            TALLY.complex += 1
            return
        got = dg.jit(f)(*args)
        for g, w in zip(_leaves(got), _leaves(want), strict=True):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-7, atol=1e-10)
        modes_ = builtins.tuple(modes or ("fwd", "rev"))
        dg.testing.check_grads(f, builtins.tuple(args), order=min(order, 2), modes=modes_,
                               argnums=nums)
        if order > 2:
            _check_beyond_second(f, args, nums, order, modes_)
        TALLY.checked += 1

    return check


def _check_beyond_second(f, args, nums, order, modes):
    """Orders above 2 (autograd's tests ask for 3): the HVP of ``sum(f * ybar)`` in a random
    direction, as a function of the arguments, checked to order ``order - 2``."""
    rng = np.random.default_rng(0)
    ybars = [rng.standard_normal(np.shape(leaf)) for leaf in _leaves(f(*args))]

    def scalar(*a):
        return builtins.sum(np.sum(leaf * yb) for leaf, yb in zip(_leaves(f(*a)), ybars))

    many = len(nums) > 1
    v = builtins.tuple(rng.standard_normal(np.shape(args[i])) for i in nums)
    h = dg.hvp(scalar, argnums=nums if many else nums[0])
    dg.testing.check_grads(lambda *a: h(*a, v if many else v[0]), builtins.tuple(args),
                           order=min(order - 2, 2), modes=modes, argnums=nums)


def combo_check(fun, *args, **kwargs):
    """autograd's ``combo_check``: ``check_grads`` over every combination of the values."""
    import itertools

    def combos(*arg_lists, **kwarg_lists):
        keys = builtins.list(kwarg_lists)
        for values in itertools.product(*arg_lists):
            for kw in itertools.product(*(kwarg_lists[k] for k in keys)):
                check_grads(fun, *args, **kwargs)(*values, **builtins.dict(zip(keys, kw)))

    return combos


def scalar_close(a, b, tol=1e-6):
    return abs(a - b) < tol or abs(a - b) / abs(a + b) < tol


def check_equivalent(a, b):
    for x, y in zip(_leaves(a), _leaves(b), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6)


def _nums(argnum):
    return builtins.tuple(argnum) if isinstance(argnum, builtins.list) else argnum


def grad(fun, argnum=0):
    return dg.grad(fun, argnums=_nums(argnum))


def value_and_grad(fun, argnum=0):
    return dg.value_and_grad(fun, argnums=_nums(argnum))


def elementwise_grad(fun, argnum=0):
    return dg.grad(lambda *a, **k: np.sum(fun(*a, **k)), argnums=_nums(argnum))


def jacobian(fun, argnum=0):
    return dg.jacobian(fun, argnums=_nums(argnum))


def hessian(fun, argnum=0):
    return dg.hessian(fun, argnums=argnum)


def hessian_tensor_product(fun, argnum=0):
    return dg.hvp(fun, argnums=argnum)


def make_vjp(fun, argnum=0):
    def at(*args):
        ans, pullback = dg.vjp(lambda x: fun(*args[:argnum], x, *args[argnum + 1:]),
                               args[argnum])
        return (lambda g: pullback(g)[0]), ans

    return at


def make_jvp(fun, argnum=0):
    def at(*args):
        def push(v):
            return dg.jvp(lambda x: fun(*args[:argnum], x, *args[argnum + 1:]),
                          (args[argnum],), (v,))

        return push

    return at


def install_adapter() -> None:
    """``autograd``, ``autograd.numpy`` (NumPy itself), ``autograd.numpy.random`` and
    ``autograd.test_util`` in ``sys.modules``."""
    pkg = types.ModuleType("autograd")
    pkg.__path__ = []
    for name in ("grad", "value_and_grad", "elementwise_grad", "jacobian", "hessian",
                 "hessian_tensor_product", "make_vjp", "make_jvp"):
        setattr(pkg, name, globals()[name])
    pkg.hessian_vector_product = hessian_tensor_product
    pkg.deriv = elementwise_grad
    pkg.tuple, pkg.list, pkg.dict = builtins.tuple, builtins.list, builtins.dict
    pkg.isinstance = builtins.isinstance
    pkg.numpy = np
    test_util = types.ModuleType("autograd.test_util")
    for name in ("check_grads", "combo_check", "scalar_close", "check_equivalent"):
        setattr(test_util, name, globals()[name])
    pkg.test_util = test_util
    sys.modules.update({"autograd": pkg, "autograd.numpy": np,
                        "autograd.numpy.random": np.random,
                        "autograd.numpy.linalg": np.linalg,
                        "autograd.test_util": test_util})


# ------------------------------------------------------------------------------ the run
class Collector:
    """A pytest plugin: the outcome of every test, with the adapter's tally."""

    def __init__(self):
        self.results: dict[str, dict] = {}

    def pytest_runtest_setup(self, item):
        TALLY.checked = TALLY.complex = 0

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":
            if report.nodeid in self.results and report.when == "teardown":
                return
            error = ""
            if report.failed:
                crash = getattr(report.longrepr, "reprcrash", None)
                error = crash.message if crash is not None else str(report.longrepr)
            self.results[report.nodeid] = dict(
                outcome=report.outcome, checked=TALLY.checked, complex=TALLY.complex,
                error=error.splitlines()[0][:200] if error else "")


# Failures that are differences of design, not gaps: reported apart, in the strict rate only.
DESIGN_DIFFERENCES = {
    "RandomInTraceError": "draws random numbers where a compiled program cannot draw them "
                          "again at every call (refused, docs/limitations.md)",
    "has no attribute": "calls an autograd-only function (np.make_diagonal, np.linalg._dot)",
    "complex eigenvalues": "a real matrix with complex eigenvalues (complex values)",
}


def classify(result: dict) -> str:
    if result["outcome"] == "skipped":
        return "skipped"
    if result["outcome"] == "failed":
        for key in DESIGN_DIFFERENCES:
            if key in result["error"]:
                return "design difference"
        return "fail"
    if result["checked"] == 0 and result["complex"] > 0:
        return "complex only (out of scope)"
    return "pass"


def run(tests_dir: Path, verbose: bool = False, files=IN_SCOPE_FILES) -> dict:
    """Run ``files`` of ``tests_dir`` (with the support files there) through the adapter."""
    if not tests_dir.is_dir():
        raise SystemExit(f"{tests_dir} does not exist; see the docstring of "
                         "benchmarks/peer_suite.py for how to get autograd's tests")
    import pytest

    install_adapter()
    with tempfile.TemporaryDirectory() as tmp:
        for name in builtins.tuple(files) + SUPPORT_FILES:
            if (tests_dir / name).exists() or name in files:
                shutil.copy(tests_dir / name, Path(tmp) / name)
        ini = Path(tmp) / "pytest.ini"
        ini.write_text("[pytest]\n")
        collector = Collector()
        sys.path.insert(0, tmp)
        try:
            pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-c", str(ini),
                         "--rootdir", tmp, "-W", "ignore", tmp] + ([] if verbose else
                                                                   ["--no-summary", "-qq"]),
                        plugins=[collector])
        finally:
            sys.path.remove(tmp)
    kinds = collections.Counter(classify(r) for r in collector.results.values())
    in_scope = kinds["pass"] + kinds["fail"]
    strict = in_scope + kinds["design difference"]
    failures = {k: r["error"] for k, r in collector.results.items()
                if classify(r) in ("fail", "design difference")}
    return dict(counts=dict(kinds), in_scope=in_scope,
                pass_rate=kinds["pass"] / in_scope if in_scope else 0.0,
                strict_pass_rate=kinds["pass"] / strict if strict else 0.0, failures=failures)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=Path, default=DEFAULT_TESTS,
                        help="autograd's tests/ folder (default: %(default)s)")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("-v", "--verbose", action="store_true", help="pytest's report too")
    args = parser.parse_args(argv)
    out = run(args.tests, args.verbose)
    by_error = collections.defaultdict(list)
    for nodeid, error in sorted(out["failures"].items()):
        by_error[error].append(nodeid.split("::")[-1])
    for error, names in sorted(by_error.items(), key=lambda kv: -len(kv[1])):
        design = next((why for key, why in DESIGN_DIFFERENCES.items() if key in error), None)
        label = f"DESIGN ({design})" if design else "FAIL"
        print(f"{label} x{len(names)}: {error}\n    {' '.join(names)}")
    print(f"counts: {out['counts']}")
    print(f"in scope: {out['in_scope']}, passed: {out['counts'].get('pass', 0)} "
          f"({100 * out['pass_rate']:.1f}%); counting the design differences as failures: "
          f"{100 * out['strict_pass_rate']:.1f}%")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
