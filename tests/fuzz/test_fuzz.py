"""Program fuzzer: random programs over the registry, every transform checked against NumPy
and finite differences (the generator and the checks live in tests/helpers/fuzz_programs.py).

CI runs a bounded budget (deterministic programs, at most ``CI_PROGRAMS`` or ``CI_SECONDS``);
``pytest tests/fuzz/test_fuzz.py --fuzz-long`` (``make fuzz``) runs a campaign of
``DUALGPU_FUZZ_PROGRAMS`` programs (default 10,000), records every failure instead of
stopping at the first, and prints a summary line. ``DUALGPU_FUZZ_REPORT=path`` also writes
the failing programs to a file.
"""
from __future__ import annotations

import os
import time
from collections import Counter

import fuzz_programs as fp
import numpy as np
from hypothesis import HealthCheck, Phase, given, settings

CI_PROGRAMS = 150
CI_SECONDS = 70.0
LONG_PROGRAMS = int(os.environ.get("DUALGPU_FUZZ_PROGRAMS", "10000"))


def test_generated_source_matches_values():
    """The printed source computes what the generator evaluated, node by node."""

    @settings(max_examples=30, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(fp.programs())
    def run(prog):
        f, loss = prog.functions()
        values = prog.values()
        outs = f(*prog.args())
        outs = outs if isinstance(outs, tuple) else (outs,)
        for i, out in zip(prog.outputs(), outs):
            np.testing.assert_allclose(out, values[i], rtol=1e-13, atol=0)
        assert np.isfinite(loss(*prog.args()))
        compile(prog.source(), "<check>", "exec")

    run()


def test_program_is_data():
    """A program is plain data: equal programs print the same source, and the repr
    round-trips (so that a failing program can be pasted into a regression test)."""
    prog = fp.Program(inputs=((3,), (2, 3)), seed=5, nodes=(
        ("sin", (0,), (("wrap", False),)),
        ("add", (2, 1), ()),
        ("sum", (3,), (("axis", -1), ("keepdims", True))),
    ))
    again = eval(repr(prog), {"Program": fp.Program})
    assert again == prog and again.source() == prog.source()
    assert "v3 = v2 + x1" in prog.source()
    assert fp.check_program(prog).ok


def test_fuzz(fuzz_long, capsys):
    """Random programs: jit, jvp, vjp, grad, hvp and grad_and_hvp against NumPy and
    finite differences."""
    n_programs = LONG_PROGRAMS if fuzz_long else CI_PROGRAMS
    budget = float("inf") if fuzz_long else CI_SECONDS
    stats: Counter = Counter()
    failures: list[str] = []
    seen: set = set()
    start = time.monotonic()

    def write_report():
        summary = (f"dualgpu fuzz: {stats['programs']} programs tried ({stats['nodes']} nodes),"
                   f" {len(failures)} failures, {stats['skipped checks']} checks skipped "
                   f"(finite differences unstable), "
                   f"{time.monotonic() - start:.0f} s")
        report_path = os.environ.get("DUALGPU_FUZZ_REPORT")
        if report_path:
            with open(report_path, "w") as fh:
                fh.write(summary + "\n\n" + "\n\n".join(failures))
        return summary

    # hypothesis repeats some small programs: ask for more examples than the target and
    # count distinct programs only (the long campaign stops at the target)
    @settings(max_examples=int(n_programs * 1.3) if fuzz_long else n_programs,
              deadline=None, database=None,
              derandomize=not fuzz_long, suppress_health_check=list(HealthCheck),
              phases=[Phase.generate] if fuzz_long else
              [Phase.explicit, Phase.generate, Phase.shrink], print_blob=not fuzz_long)
    @given(fp.programs())
    def run(prog):
        if time.monotonic() - start > budget and not stats["failing"]:
            return  # the CI budget is spent (a shrink in progress runs to its end)
        key = (prog.inputs, prog.nodes, prog.seed)
        if fuzz_long and (key in seen or stats["programs"] >= n_programs):
            return
        seen.add(key)
        stats["programs"] += 1
        stats["nodes"] += len(prog.nodes)
        with np.errstate(all="ignore"):
            outcome = fp.check_program(prog)
        stats["skipped checks"] += len(outcome.skipped)
        if fuzz_long and stats["programs"] % 250 == 0:
            write_report()
        if outcome.ok:
            return
        report = fp.describe(prog, outcome)
        if not fuzz_long:
            stats["failing"] += 1
            raise AssertionError("fuzzer found a failing program:\n" + report)
        failures.append(report)

    run()
    summary = write_report()
    with capsys.disabled():
        print("\n" + summary)
    if fuzz_long:
        assert stats["programs"] >= n_programs * 0.95, summary
    assert not failures, summary + "\n\n" + "\n\n".join(failures[:10])
