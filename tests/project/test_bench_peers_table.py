"""The table of ``make bench-peers`` (benchmarks/side_by_side.py) from rows made by hand: the
best peer is the fastest *correct* one, goals are judged on ratio and first call, and the
table is written between the markers of docs/performance.md and nowhere else."""
from __future__ import annotations

import pytest

from benchmarks import side_by_side as sbs
from benchmarks.report import Row


def _row(impl, us, note="", status="ok", first=1.0, peak=100.0):
    return Row("laplacian", "per-point Laplacian", impl, status=status, time_us=us,
               rel_err=0.5 if note.startswith("WRONG") else 1e-7, note=note,
               first_call_s=first, extra={"peak_MB": peak})


def test_best_peer_is_the_fastest_correct_one_and_goals_are_judged():
    rows = [_row("dualgpu", 3000.0, first=0.4, peak=315.0),
            _row("folx (precision=highest)", 4000.0, first=22.0),
            _row("jet-for-pytorch (collapsed Taylor)", 1000.0, note="WRONG: rel err 5e-01"),
            _row("jax nested (precision=highest)", None, status="skipped",
                 note="jax not importable (ModuleNotFoundError)")]
    (line,) = [x for x in sbs.LINES if x.workload == "laplacian"]
    cells = sbs.line_cells(line, rows, judged=True)
    assert cells["ours"] == "3.00 ms, 315 MB, first call 0.40 s"
    assert cells["best"].startswith("folx (precision=highest) 4.00 ms")
    assert "jet-for-pytorch (collapsed Taylor) WRONG (rel err 5.0e-01)" in cells["others"]
    assert "jax nested (precision=highest) skipped (jax not importable" in cells["others"]
    assert cells["ratio"] == "0.75× folx (precision=highest)"
    assert cells["verdict"] == "NOT met (ratio)"                 # goal: <= 0.7x folx
    rows[0].time_us = 2000.0
    assert sbs.line_cells(line, rows, judged=True)["verdict"] == "met"
    assert sbs.line_cells(line, rows, judged=False)["verdict"] == "n/a (tiny CPU sizes)"
    slow_first = sbs.Goal("first call", None, None, first_call_s=0.3)
    assert sbs.judge(slow_first, rows[0], None) == "NOT met (first call)"
    table = sbs.markdown_table(rows, judged=True)
    assert table.count("\n") == 2 and "| per-point Laplacian, tanh MLP" in table


def test_the_table_goes_between_the_markers(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text(f"# Performance\nbefore\n{sbs.BEGIN}\nold table\n{sbs.END}\nafter\n")
    sbs.rewrite_docs(str(doc), "| new | table |\n")
    assert doc.read_text() == (f"# Performance\nbefore\n{sbs.BEGIN}\n| new | table |\n"
                               f"{sbs.END}\nafter\n")
    doc.write_text("no markers\n")
    with pytest.raises(SystemExit, match="expected one"):
        sbs.rewrite_docs(str(doc), "x")
    assert open(sbs.DOCS).read().count(sbs.BEGIN) == 1      # the real page has its markers
