"""Every workload of issue 40 with its peers, side by side in one process (``make bench-peers``).

``python -m benchmarks.side_by_side [--quick] [--only SECTION ...] [--out DIR] [--write-docs]``

Sections (``--only``), each the rows of one line or two of the table:

* ``laplacian``: the per-point Laplacian of the tanh MLP 50-768-768-512-512-1 at 1024 points
  (``laplacian.py``'s network): dualgpu against folx, jet-for-pytorch (collapsed Taylor
  mode), JAX nested ``trace(hessian)`` and the forward Laplacian written in ``jax.numpy``;
  JAX and folx at ``precision="highest"`` (full float32, like dualgpu's rows);
* ``biharmonic``: the same network at D = 5: ``dg.biharmonic`` against jet-for-pytorch's
  collapsed ``bilaplacian`` and, without ``--quick`` (its compile takes 70-95 s), JAX
  nested; our own collapsed Taylor build (``dg.differential_operator``) is shown beside them;
* ``mlp``: the MLP 784-512-10 HVP, batch 4096, batch-major and feature-major
  (``mlp_layouts.py``), float32 against JAX ``"highest"`` and TF32 against JAX's default;
* ``dense_tiny``: the tiny Dense(10->1) HVP against the hand-fused one-launch kernel;
* ``particles``: the per-particle grad + HVP at N = 10^6 (``scenario2.py``) against the
  hand-fused kernel and JAX;
* ``curvature`` (GGN and K-FAC against curvlinops) and ``sparse`` (sparse Hessians and
  Jacobians against asdex): the rows of their issues, measured here too; ``sparse`` only
  without ``--quick`` or when named.

The CPU line of the issue (2 cores, NumPy) is ``make bench-cpu``'s, on the 2-core machine.

Every row is checked against the workload's float64 reference before it is timed (a wrong
result is reported as WRONG and never counts as the best peer) and records its median time,
its peak device memory and its first call (build + first call, to its result). The table
(:data:`LINES`) gives for each line dualgpu's row, the fastest correct peer of the same run,
the ratio and the goal with its verdict. It goes to ``--out`` (default the git-ignored
``benchmarks/peer/results/``) as ``peers-<UTC time>.{md,json,log}``; ``--write-docs``
also puts it into ``docs/performance.md`` between the markers of its section, and
``--docs-from PEERS.md`` puts there the table of a run made elsewhere (on the GPU machine,
whose copy of the docs does not come back). Without a GPU
(or with ``--cpu``) the tiny CPU sizes run, with the peers that import: a harness check,
on which goals are not judged.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections.abc import Callable, Sequence

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")   # before any jax import

import numpy as np  # noqa: E402

from . import (  # noqa: E402
    curvature,
    dense_tiny,
    laplacian,
    mlp,
    mlp_layouts,
    scenario2,
    sparse_derivatives,
    taylor,
    taylor_peers,
)
from .common import (  # noqa: E402
    PEER_SITE,
    ROOT,
    Context,
    converted_sets,
    n_input_sets,
    to_jax,
    to_torch,
    torch_clock,
)
from .mlp import cupy_peak, jax_peak, torch_peak  # noqa: E402
from .report import Report, Row, environment, fmt_us  # noqa: E402
from .run import fresh_base, gpu_available, open_log, run_workloads  # noqa: E402

RESULTS = os.path.join(PEER_SITE, "results")
DOCS = os.path.join(ROOT, "docs", "performance.md")
BEGIN, END = "<!-- bench-peers:begin -->", "<!-- bench-peers:end -->"
LAPLACIAN_D, BIHARMONIC_D = 50, 5
TINY_D = 3


# ------------------------------------------------------------------------------ sections
def _network(ctx: Context, d: int):
    hidden = taylor.TINY_HIDDEN if ctx.tiny else laplacian.HIDDEN
    points = taylor.TINY_POINTS if ctx.tiny else laplacian.POINTS
    return laplacian.make_inputs(ctx.xp, d, hidden, points)


def _jax_rows(ctx: Context, ref, args, case: str, rows_spec) -> list[Row]:
    jax_inputs = converted_sets(ctx, [args], to_jax)
    return [laplacian._measure(ctx, ref, workload="laplacian", case=case, impl=impl,
                               build=build, inputs=lambda b=before: (b(), jax_inputs())[1],
                               extra=jax_peak(lambda: jax_inputs()[0]), tol=1e-3)
            for impl, build, before in rows_spec]


def _jet_row(ctx: Context, ref, args, workload: str, case: str, operator: str) -> Row:
    sets = converted_sets(ctx, [args], to_torch)
    impl = "jet-for-pytorch (collapsed Taylor)"
    return laplacian._measure(
        ctx, ref, workload=workload, case=case, impl=impl,
        build=lambda: taylor_peers.build_jet(ctx, sets, operator),
        inputs=lambda: (taylor_peers.import_jet(ctx), sets())[1], clock=lambda: torch_clock(ctx),
        extra=torch_peak(ctx, sets), tol=1e-3)


def laplacian_section(ctx: Context) -> list[Row]:
    """The per-point Laplacian at d = 50: dualgpu, folx, jet-for-pytorch, JAX."""
    d = TINY_D if ctx.tiny else LAPLACIAN_D
    args = _network(ctx, d)
    ref = laplacian.reference(ctx.xp, args)
    case = "per-point Laplacian"
    inputs = [args]
    rows = []
    for precision, impl in (("float32", "dualgpu"), ("tf32x3", "dualgpu (tf32x3)")):
        with laplacian.dualgpu_precision(precision):
            rows.append(laplacian._measure(ctx, ref, workload="laplacian", case=case,
                                           impl=impl, build=lambda: laplacian.build_dualgpu(ctx),
                                           inputs=inputs, extra=cupy_peak(ctx, inputs),
                                           tol=1e-3))
    rows += _jax_rows(ctx, ref, args, case, (
        ("folx (precision=highest)", lambda: taylor_peers.build_folx_laplacian(ctx),
         taylor_peers.import_folx),
        ("jax nested (precision=highest)",
         lambda: laplacian.build_jax_nested(ctx, "highest"), lambda: None),
        ("jax forward-Laplacian (precision=highest)",
         lambda: laplacian.build_jax_forward(ctx, "highest"), lambda: None)))
    rows.append(_jet_row(ctx, ref, args, "laplacian", case, "laplacian"))
    return rows


def biharmonic_section(ctx: Context) -> list[Row]:
    """The biharmonic at D = 5: dualgpu, jet-for-pytorch, our collapsed Taylor build, and
    JAX nested at full sizes without ``--quick``."""
    import dualgpu as dg

    D = 2 if ctx.tiny else BIHARMONIC_D
    args = _network(ctx, D)
    ref = dg.biharmonic(laplacian.u, batch_axes=0)(*(a.astype(np.float64) for a in args))
    case = "per-point biharmonic"
    inputs = [args]
    common = dict(workload="biharmonic", case=case, inputs=inputs, tol=1e-3,
                  extra=cupy_peak(ctx, inputs))
    with laplacian.dualgpu_precision("float32"):
        rows = [laplacian._measure(ctx, ref, impl="dualgpu", build=taylor.build_biharmonic,
                                   **common),
                laplacian._measure(ctx, ref, impl="dualgpu collapsed Taylor (order 4)",
                                   build=lambda: taylor.build_collapsed_taylor(ctx.xp, D),
                                   **common)]
    rows.append(_jet_row(ctx, ref, args, "biharmonic", case, "bilaplacian"))
    if not ctx.quick or ctx.tiny:
        jax_inputs = converted_sets(ctx, [args], to_jax)
        rows.append(laplacian._measure(
            dataclasses.replace(ctx, impl_timeout_s=max(ctx.impl_timeout_s,
                                                        taylor.JAX_COMPILE_S)),
            ref, workload="biharmonic", case=case, impl="jax nested (precision=highest)",
            build=lambda: taylor.build_jax_biharmonic(ctx, "highest"), inputs=jax_inputs,
            extra=jax_peak(lambda: jax_inputs()[0]), tol=1e-3))
    return rows


def mlp_section(ctx: Context) -> list[Row]:
    """The MLP HVP in both layouts (MSE loss), float32 and TF32, JAX at both precisions."""
    dims = mlp.TINY if ctx.tiny else mlp.FULL
    set_bytes = 4 * (2 * dims.n_params + dims.batch * (dims.d_in + dims.d_out))
    base = mlp.make_inputs(ctx.xp, dims, n_input_sets(set_bytes))
    ref = mlp_layouts.reference(ctx.xp, dims, "mse", *base[0])
    rows: list[Row] = []
    for layout in mlp_layouts.LAYOUTS:
        rows += mlp_layouts.case_rows(ctx, dims, layout, "mse", base, ref)
    return rows


def particles_section(ctx: Context) -> list[Row]:
    """The per-particle grad + HVP at N = 10^6 (216 particles on the CPU)."""
    n = 216 if ctx.tiny else 100**3
    return scenario2.bench_case(ctx, "particles", f"N={n}", n)


SECTIONS: dict[str, Callable[[Context], list[Row]]] = {
    "laplacian": laplacian_section,
    "biharmonic": biharmonic_section,
    "mlp": mlp_section,
    "dense_tiny": dense_tiny.run,
    "particles": particles_section,
    "curvature": curvature.run,
    "sparse": sparse_derivatives.run,
}
NOT_QUICK = ("sparse",)


# ------------------------------------------------------------------------------ the table
@dataclasses.dataclass(frozen=True)
class Goal:
    """``ours`` at most ``ratio`` times the time of ``against`` (a peer's impl; None: the
    best peer), and a first call of at most ``first_call_s`` seconds, where given."""

    text: str
    against: str | None = None
    ratio: float | None = None
    first_call_s: float | None = None


@dataclasses.dataclass(frozen=True)
class Line:
    """One line of the table: dualgpu's row ``ours`` on ``case`` of ``workload`` (the first
    case starting with it) against the rows ``peers``; ``own``: other dualgpu rows shown
    beside the peers, never counted as one."""

    what: str
    workload: str
    case: str
    ours: str
    peers: tuple[str, ...]
    goal: Goal | None = None
    own: tuple[str, ...] = ()


_JAX_HI = "jax (precision=highest)"
LINES = (
    Line("per-point Laplacian, tanh MLP 50-768-768-512-512-1, 1024 points", "laplacian",
         "per-point Laplacian", "dualgpu",
         ("folx (precision=highest)", "jet-for-pytorch (collapsed Taylor)",
          "jax forward-Laplacian (precision=highest)", "jax nested (precision=highest)"),
         Goal("<= 0.7x folx", "folx (precision=highest)", 0.7),
         own=("dualgpu (tf32x3)",)),
    Line("per-point biharmonic, same MLP at D = 5", "biharmonic", "per-point biharmonic",
         "dualgpu", ("jet-for-pytorch (collapsed Taylor)", "jax nested (precision=highest)"),
         Goal("keep <= 0.3x best peer; first call <= 0.5 s", None, 0.3, 0.5),
         own=("dualgpu collapsed Taylor (order 4)",)),
    *(Line(f"MLP 784-512-10 HVP, batch 4096, {layout}", "mlp_layouts", f"{layout} mse",
           "dualgpu", (_JAX_HI, "torch.func"), Goal("<= 0.8x JAX (highest)", _JAX_HI, 0.8))
      for layout in mlp_layouts.LAYOUTS),
    *(Line(f"same, TF32, {layout}", "mlp_layouts", f"{layout} mse", "dualgpu (tf32)",
           ("jax",), Goal("<= 0.9x JAX (default)", "jax", 0.9))
      for layout in mlp_layouts.LAYOUTS),
    Line("tiny Dense(10->1) HVP, batch 4 (latency)", "dense_tiny", "B=", "dualgpu",
         ("hand-fused", "jax jit", "torch.func"), Goal("<= 1.0x hand-fused", "hand-fused", 1.0)),
    Line("per-particle grad+HVP, N = 10^6", "particles", "N=", "dualgpu",
         ("hand-fused", "jax jit(jvp(grad))", "torch.func"),
         Goal("<= 1.1x hand-fused", "hand-fused", 1.1)),
    Line("GGN product, MLP 784-512-10", "curvature", "ggn", "dualgpu",
         ("curvlinops", _JAX_HI), Goal("<= 0.5x curvlinops", "curvlinops", 0.5)),
    Line("K-FAC factors, MLP 784-512-10", "curvature", "kfac", "dualgpu", ("curvlinops",),
         Goal("<= 0.5x curvlinops", "curvlinops", 0.5)),
    Line("sparse Hessian, chained Rosenbrock", "sparse_derivatives", "rosenbrock n=",
         "dualgpu sparse_hessian", ("asdex", "jax colored floor")),
    Line("sparse Hessian, 2-D Poisson energy", "sparse_derivatives", "poisson ",
         "dualgpu sparse_hessian", ("asdex", "jax colored floor")),
    Line("sparse Jacobian, Brusselator", "sparse_derivatives", "brusselator n=",
         "dualgpu sparse_jacobian", ("asdex",)),
)


def _find(rows: list[Row], workload: str, case: str, impl: str) -> Row | None:
    for r in rows:
        if r.workload == workload and r.case.startswith(case) and r.impl == impl:
            return r
    return None


def wrong(row: Row) -> bool:
    return row.note.startswith("WRONG")


def cell(row: Row | None, name: bool = False, rows: Sequence[Row] = ()) -> str:
    """``time, peak MB, first call s`` of a row (its impl first when ``name``), or why not
    (a skipped row that refers to the row before it in ``rows`` gives that row's reason)."""
    if row is None:
        return "not measured"
    head = f"{row.impl} " if name else ""
    if row.status != "ok":
        why = row.note
        if "the row above" in why and row in rows and rows.index(row) > 0:
            why = rows[rows.index(row) - 1].note or why
        return f"{head}skipped ({why[:90]})"
    if wrong(row):
        return f"{head}WRONG (rel err {row.rel_err:.1e})"
    parts = [fmt_us(row.time_us).replace(" us", " µs")]
    peak = row.extra.get("peak_MB")
    if isinstance(peak, (int, float)):
        parts.append(f"{peak:.0f} MB" if peak >= 10 else f"{peak:.2g} MB")
    if row.first_call_s is not None:
        parts.append(f"first call {row.first_call_s:.2f} s")
    return head + ", ".join(parts)


def _usable(row: Row | None) -> bool:
    return row is not None and row.status == "ok" and not wrong(row) and bool(row.time_us)


def line_cells(line: Line, rows: list[Row], judged: bool) -> dict:
    """The cells of one line: ours, the best peer, the others, the ratio, goal, verdict."""
    ours = _find(rows, line.workload, line.case, line.ours)
    peers = [r for r in (_find(rows, line.workload, line.case, p) for p in line.peers)
             if r is not None]
    own = [r for r in (_find(rows, line.workload, line.case, o) for o in line.own)
           if r is not None]
    usable = [r for r in peers if _usable(r)]
    best = min(usable, key=lambda r: r.time_us) if usable else None
    ratio = ours.time_us / best.time_us if _usable(ours) and best else None
    goal = line.goal
    verdict, ratio_text = "—", "—" if ratio is None else f"{ratio:.2f}× {best.impl}"
    if goal is not None:
        against = best if goal.against is None else _find(rows, line.workload, line.case,
                                                           goal.against)
        if against is not best and _usable(ours) and _usable(against):
            ratio_text += f"; {ours.time_us / against.time_us:.2f}× {against.impl}"
        verdict = judge(goal, ours, against) if judged else "n/a (tiny CPU sizes)"
    return {"what": line.what, "ours": cell(ours), "best": cell(best, name=True),
            "others": "; ".join([cell(r, True, rows) for r in peers if r is not best]
                                + [cell(r, True, rows) for r in own]) or "—",
            "ratio": ratio_text, "goal": goal.text if goal else "— (its issue's)",
            "verdict": verdict}


def judge(goal: Goal, ours: Row | None, against: Row | None) -> str:
    if not _usable(ours):
        return "not measured"
    misses = []
    if goal.ratio is not None:
        if not _usable(against):
            return "not measured (no peer)"
        if ours.time_us / against.time_us > goal.ratio:
            misses.append("ratio")
    if goal.first_call_s is not None and (ours.first_call_s or 0.0) > goal.first_call_s:
        misses.append("first call")
    return "met" if not misses else "NOT met (" + ", ".join(misses) + ")"


def markdown_table(rows: list[Row], judged: bool, lines=LINES) -> str:
    """The table of docs/performance.md: one line per :data:`LINES` entry that was run."""
    head = ("| workload | dualgpu | best peer (same run) | other peers | ratio | goal "
            "| verdict |\n|---|---|---|---|---|---|---|")
    ran = {r.workload for r in rows}
    body = [line_cells(line, rows, judged) for line in lines if line.workload in ran]
    return "\n".join([head] + [
        f"| {c['what']} | {c['ours']} | {c['best']} | {c['others']} | {c['ratio']} "
        f"| {c['goal']} | {c['verdict']} |" for c in body])


def rewrite_docs(path: str, text: str) -> None:
    """Replace what stands between :data:`BEGIN` and :data:`END` in ``path`` by ``text``."""
    with open(path) as fh:
        doc = fh.read()
    if doc.count(BEGIN) != 1 or doc.count(END) != 1 or doc.index(BEGIN) > doc.index(END):
        raise SystemExit(f"{path}: expected one {BEGIN} ... {END} pair")
    head, rest = doc.split(BEGIN)
    _, tail = rest.split(END)
    with open(path, "w") as fh:
        fh.write(f"{head}{BEGIN}\n{text.strip()}\n{END}{tail}")


# ------------------------------------------------------------------------------ main
def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.side_by_side",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="1.5 s of timed calls a row, no JAX nested biharmonic, no sparse "
                        "section unless named")
    p.add_argument("--only", action="append", choices=sorted(SECTIONS), metavar="SECTION",
                   help=f"run only this section (repeatable): {', '.join(SECTIONS)}")
    p.add_argument("--cpu", action="store_true", help="tiny CPU sizes even with a GPU")
    p.add_argument("--out", default=RESULTS, help="folder for the table, JSON and log "
                   "(default: %(default)s, git-ignored)")
    p.add_argument("--write-docs", action="store_true",
                   help=f"also write the table into {os.path.relpath(DOCS, ROOT)}")
    p.add_argument("--docs-from", metavar="PEERS.md",
                   help="write the table of an earlier run (its peers-<time>.md, brought back "
                        "from the GPU machine) into the docs and exit, running nothing")
    p.add_argument("--impl-timeout", type=float, default=120.0,
                   help="seconds allowed for one implementation (build, check, timing)")
    p.add_argument("--budget", type=float, default=None,
                   help="seconds of timed calls per row (default 3, quick 1.5)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.docs_from:
        with open(args.docs_from) as fh:
            rewrite_docs(DOCS, fh.read())
        print(f"wrote the table of {args.docs_from} into {DOCS}")
        return 0
    gpu = gpu_available() and not args.cpu
    os.makedirs(args.out, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    base = fresh_base(args.out, stamp, prefix="peers")
    log, debug, log_file = open_log(base + ".log")
    ctx = Context(gpu=gpu, quick=args.quick, compile=False, tiny=not gpu,
                  impl_timeout_s=args.impl_timeout,
                  budget_s=args.budget or (1.5 if args.quick else 3.0), log=log, debug=debug)
    if not gpu:
        log("no CuPy/CUDA device (or --cpu): the tiny CPU sizes, goals not judged")
    names = args.only or [n for n in SECTIONS if not (args.quick and n in NOT_QUICK)]
    report = Report(env={"gpu": "pending"}, args={"quick": args.quick, "only": names,
                                                  "gpu": gpu, "budget_s": ctx.budget_s})
    t0 = time.perf_counter()
    run_workloads(ctx, {n: SECTIONS[n] for n in names}, report, base + ".json")
    report.env = environment(gpu)
    report.sections["total"] = round(time.perf_counter() - t0, 2)
    command = "python -m benchmarks.side_by_side " + " ".join(argv if argv is not None
                                                              else sys.argv[1:])
    table = (f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on "
             f"{report.env.get('gpu', 'the CPU (tiny sizes)')} (`{command.strip()}`, "
             f"{report.sections['total']:.0f} s; "
             + ", ".join(f"{k} {v}" for k, v in report.env["versions"].items() if v)
             + "): median time, peak device memory, first call (build + first call).\n\n"
             + markdown_table(report.rows, judged=gpu))
    with open(base + ".md", "w") as fh:
        fh.write(table + "\n")
    report.write_json(base + ".json")
    log("\n" + report.table() + "\n\n" + table)
    if args.write_docs:
        rewrite_docs(DOCS, table)
        log(f"wrote the table into {DOCS}")
    log(f"total {report.sections['total']:.1f} s; wrote {base}.md, .json and .log")
    log_file.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
