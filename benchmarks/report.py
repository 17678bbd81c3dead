"""Rows, the ratio table, the performance targets, JSON and the PNG plot.

A :class:`Row` is one implementation on one case of one workload. Within a case the row
marked ``reference`` (the hand-fused kernel, where there is one) is the denominator of the
ratio column. :data:`TARGETS` states the performance bar (docs/performance.md) as checks over rows.
"""
from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field


@dataclass
class Row:
    """One measurement (or one skipped implementation) of one case of one workload."""

    workload: str
    case: str
    impl: str
    status: str = "skipped"           # "ok" or "skipped"
    time_us: float | None = None      # median per call
    rel_err: float | None = None      # against the workload's float64 reference
    note: str = ""
    reference: bool = False           # the denominator of this case's ratios
    metric: str = "per call"
    timing: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    ratio: float | None = None        # time / reference time, filled by the report
    first_call_s: float | None = None  # build + first call, wall seconds to its result

    def describe(self) -> str:
        if self.status != "ok":
            return f"skipped: {self.note}"
        err = "" if self.rel_err is None else f"  rel err {self.rel_err:.1e}"
        note = f"  {self.note}" if self.note else ""
        return f"{fmt_us(self.time_us)}{err}{note}"


def fmt_us(us: float | None) -> str:
    if us is None or not math.isfinite(us):
        return "-"
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1e4:
        return f"{us / 1e3:.1f} ms"
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.1f} us"


# ------------------------------------------------------------------------------ targets
@dataclass
class Target:
    """One row of the performance bar, evaluated over the measured rows."""

    workload: str
    what: str
    goal: str
    evaluate: Callable[[list[Row]], tuple[str, bool | None]]


def _find(rows, workload, case, impl) -> Row | None:
    for r in rows:
        if r.workload == workload and r.case == case and r.impl == impl and r.status == "ok":
            return r
    return None


def _ratio_target(workload, case, impl, ref_impl, limit, ref_case=None):
    """``impl``'s time on ``case`` over ``ref_impl``'s (on ``ref_case``, default the same
    case: HVP over gradient takes the gradient's case)."""
    def evaluate(rows):
        a = _find(rows, workload, case, impl)
        b = _find(rows, workload, ref_case or case, ref_impl)
        if a is None or b is None:
            return "not measured", None
        ratio = a.time_us / b.time_us
        return f"{ratio:.2f}x ({fmt_us(a.time_us)} vs {fmt_us(b.time_us)})", ratio <= limit
    return evaluate


def _abs_target(workload, case, impl, limit_us):
    def evaluate(rows):
        a = _find(rows, workload, case, impl)
        if a is None:
            return "not measured", None
        return fmt_us(a.time_us), a.time_us <= limit_us
    return evaluate


def _peak_target(workload, case, impl, ref_impl, limit, ref_case=None):
    """Peak memory of ``impl`` on ``case`` over ``ref_impl``'s (on ``ref_case``, default
    the same case)."""
    def evaluate(rows):
        a = _find(rows, workload, case, impl)
        b = _find(rows, workload, ref_case or case, ref_impl)
        pa, pb = (r.extra.get("peak_MB") if r is not None else None for r in (a, b))
        if not isinstance(pa, (int, float)) or not isinstance(pb, (int, float)) or not pb:
            return "not measured", None
        return f"{pa / pb:.2f}x ({pa:.0f} vs {pb:.0f} MB)", pa / pb <= limit
    return evaluate


TARGETS: list[Target] = [
    Target("scenario2", "value+grad+HVP, N=1M", "<= 1.25x hand-fused",
           _ratio_target("scenario2", "N=1M", "dualgpu", "hand-fused", 1.25)),
    Target("scenario2", "value+grad+HVP, N=8M", "<= 1.25x hand-fused",
           _ratio_target("scenario2", "N=8M", "dualgpu", "hand-fused", 1.25)),
    Target("mlp", "MLP 784-512-10 HVP, float32", "<= 0.8x JAX (highest)",
           _ratio_target("mlp", "hvp", "dualgpu", "jax (precision=highest)", 0.8)),
    Target("mlp", "MLP 784-512-10 HVP, tf32", "<= 1.0x JAX (default precision)",
           _ratio_target("mlp", "hvp", "dualgpu (tf32)", "jax", 1.0)),
    Target("mlp", "MLP 784-512-10 HVP / gradient", "<= 1.6",
           _ratio_target("mlp", "hvp", "dualgpu", "dualgpu", 1.6, ref_case="grad")),
    Target("mlp", "MLP 784-512-10 HVP peak memory", "<= 2x its gradient",
           _peak_target("mlp", "hvp", "dualgpu", "dualgpu", 2.0, ref_case="grad")),
    *(target
      for layout in ("batch-major", "feature-major") for loss in ("mse", "sigmoid-sum")
      for target in (
          Target("mlp_layouts", f"MLP HVP {layout} {loss}, float32", "<= 0.8x JAX (highest)",
                 _ratio_target("mlp_layouts", f"{layout} {loss}", "dualgpu",
                               "jax (precision=highest)", 0.8)),
          Target("mlp_layouts", f"MLP HVP {layout} {loss}, tf32",
                 "<= 1.0x JAX (default precision)",
                 _ratio_target("mlp_layouts", f"{layout} {loss}", "dualgpu (tf32)", "jax",
                               1.0)))),
    Target("dense_tiny", "Dense(10->1) HVP, batch 4", "<= 20 us per call",
           _abs_target("dense_tiny", "B=4", "dualgpu", 20.0)),
    Target("sparse", "grad sum(tanh(x@A)), nnz 2M", "<= 400 us",
           _abs_target("sparse", "nnz=2M", "dualgpu", 400.0)),
    Target("overhead", "first call of the MLP HVP", "< 1 s",
           _abs_target("overhead", "first call", "dualgpu", 1e6)),
    Target("overhead", "host time of a cached call", "< 30 us",
           _abs_target("overhead", "cached call", "dualgpu", 30.0)),
    Target("laplacian", "per-point Laplacian, d=50, float32", "<= 0.5x JAX nested (highest)",
           _ratio_target("laplacian", "d=50", "dualgpu", "jax nested (precision=highest)",
                         0.5)),
    Target("laplacian", "per-point Laplacian, d=50, float32",
           "<= 0.9x JAX forward-Laplacian (highest)",
           _ratio_target("laplacian", "d=50", "dualgpu",
                         "jax forward-Laplacian (precision=highest)", 0.9)),
    Target("laplacian", "per-point Laplacian, d=50, tf32", "<= 0.25x JAX nested (highest)",
           _ratio_target("laplacian", "d=50", "dualgpu (tf32)",
                         "jax nested (precision=highest)", 0.25)),
    Target("laplacian", "per-point Laplacian, d=50, peak memory", "<= 0.6x JAX nested",
           _peak_target("laplacian", "d=50", "dualgpu", "jax nested (precision=highest)",
                        0.6)),
    Target("laplacian", "per-point Laplacian, d=50, peak memory, chunk_size=25",
           "<= 0.6x JAX nested",
           _peak_target("laplacian", "d=50", "dualgpu (chunk_size=25)",
                        "jax nested (precision=highest)", 0.6)),
    Target("laplacian", "k=16 HVP directions, MLP 784-512-10", "<= 4x one direction",
           _ratio_target("laplacian", "k=16 HVPs", "dualgpu vmap(hvp) (k=16)",
                         "dualgpu hvp (k=1)", 4.0)),
    *(target
      for D in (5, 10)
      for target in (
          Target("taylor", f"biharmonic D={D}, float32", "<= 0.3x JAX nested (highest)",
                 _ratio_target("taylor", f"biharmonic D={D}", "dualgpu",
                               "jax nested (precision=highest)", 0.3)),
          Target("taylor", f"biharmonic D={D}, peak memory", "<= 0.3x JAX nested (highest)",
                 _peak_target("taylor", f"biharmonic D={D}", "dualgpu",
                              "jax nested (precision=highest)", 0.3)),
          Target("taylor", f"biharmonic D={D}, peak memory, memory_budget=1 GiB",
                 "<= 0.3x JAX nested (highest)",
                 _peak_target("taylor", f"biharmonic D={D}", "dualgpu (memory_budget=1 GiB)",
                              "jax nested (precision=highest)", 0.3)))),
    Target("taylor", "weighted Laplacian D=50, rank 50", "<= 1.1x dualgpu laplacian",
           _ratio_target("taylor", "weighted Laplacian D=50", "dualgpu laplacian(sigma, rank 50)",
                         "dualgpu laplacian (no sigma)", 1.1)),
    Target("taylor", "jet order 4, MLP D=10, float32", "<= 1.0x JAX jet (highest)",
           _ratio_target("taylor", "jet order 4, D=10", "dualgpu", "jax jet (precision=highest)",
                         1.0)),
    Target("taylor", "jet order 4, MLP D=10, tf32", "<= 1.0x JAX jet (default)",
           _ratio_target("taylor", "jet order 4, D=10", "dualgpu (tf32)", "jax jet", 1.0)),
    Target("curvature", "GGN product, MLP 784-512-10, float32", "<= 1.0x JAX by hand (highest)",
           _ratio_target("curvature", "ggn", "dualgpu", "jax (precision=highest)", 1.0)),
    Target("curvature", "GGN product, MLP 784-512-10, tf32", "<= 1.0x JAX by hand (default)",
           _ratio_target("curvature", "ggn", "dualgpu (tf32)", "jax", 1.0)),
    Target("curvature", "GGN product / gradient", "<= 1.5",
           _ratio_target("curvature", "ggn", "dualgpu", "dualgpu", 1.5, ref_case="grad")),
    Target("curvature", "GGN product vs curvlinops", "<= 0.5x",
           _ratio_target("curvature", "ggn", "dualgpu", "curvlinops", 0.5)),
    Target("curvature", "K-FAC factors / gradient", "<= 1.2",
           _ratio_target("curvature", "kfac", "dualgpu", "dualgpu", 1.2, ref_case="grad")),
    Target("curvature", "K-FAC factors vs curvlinops", "<= 0.5x",
           _ratio_target("curvature", "kfac", "dualgpu", "curvlinops", 0.5)),
]


# ------------------------------------------------------------------------------ environment
def _version(module: str) -> str | None:
    try:
        mod = __import__(module)
    except Exception:  # noqa: BLE001
        return None
    return getattr(mod, "__version__", "?")


def environment(gpu: bool) -> dict:
    """GPU name, driver, CUDA and library versions, and the float32 matmul modes in use."""
    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "versions": {m: _version(m) for m in
                     ("dualgpu", "numpy", "scipy", "cupy", "jax", "jaxlib", "torch",
                      "matplotlib")},
        "CUPY_TF32": os.environ.get("CUPY_TF32", "0"),
    }
    if gpu:
        try:
            import cupy

            props = cupy.cuda.runtime.getDeviceProperties(0)
            name = props["name"]
            env["gpu"] = name.decode() if isinstance(name, bytes) else name
            env["sm_count"] = props.get("multiProcessorCount")
            env["cuda_driver_api"] = cupy.cuda.runtime.driverGetVersion()
            env["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
        except Exception as exc:  # noqa: BLE001
            env["gpu"] = f"unknown ({exc})"
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem",
                 "--format=csv,noheader"], capture_output=True, text=True, timeout=10)
            env["nvidia_smi"] = out.stdout.strip()
        except Exception as exc:  # noqa: BLE001
            env["nvidia_smi"] = f"unavailable ({type(exc).__name__})"
        if "torch" in sys.modules:
            import torch

            env["torch_allow_tf32_matmul"] = torch.backends.cuda.matmul.allow_tf32
    return env


# ------------------------------------------------------------------------------ report
class Report:
    """Collects rows; prints the ratio and target tables; writes JSON and a PNG."""

    def __init__(self, env: dict | None = None, args: dict | None = None):
        self.env = env or {}
        self.args = args or {}
        self.rows: list[Row] = []
        self.sections: dict[str, float] = {}   # workload -> wall seconds

    def add(self, rows: list[Row]) -> None:
        self.rows.extend(rows)

    def fill_ratios(self) -> None:
        refs = {(r.workload, r.case): r for r in self.rows
                if r.reference and r.status == "ok" and r.time_us}
        for r in self.rows:
            ref = refs.get((r.workload, r.case))
            r.ratio = (r.time_us / ref.time_us) if (ref and r.status == "ok") else None

    def targets(self) -> list[dict]:
        """The performance bar, row by row; only a GPU run at full sizes can meet or miss it."""
        out = []
        for t in TARGETS:
            measured, met = t.evaluate(self.rows)
            if not self.args.get("gpu", False):
                measured, met = "CPU harness run (tiny sizes)", None
            verdict = "n/a" if met is None else ("met" if met else "NOT met")
            out.append({"workload": t.workload, "what": t.what, "goal": t.goal,
                        "measured": measured, "verdict": verdict})
        return out

    def table(self) -> str:
        self.fill_ratios()
        head = (f"{'workload':<10} {'case':<13} {'impl':<24} {'time':>10} {'x ref':>7} "
                f"{'rel err':>8}  note")
        lines = [head, "-" * len(head)]
        absent: dict[str, int] = {}  # a peer not installed: one line, not one row per case
        for r in self.rows:
            missing = _not_installed(r)
            if missing:
                absent[missing] = absent.get(missing, 0) + 1
                continue
            ratio = "-" if r.ratio is None else f"{r.ratio:.2f}"
            err = "-" if r.rel_err is None else f"{r.rel_err:.1e}"
            time = fmt_us(r.time_us) if r.status == "ok" else "skipped"
            extra = "; ".join(f"{k}={_fmt_extra(v)}" for k, v in r.extra.items())
            note = "; ".join(x for x in (r.note, extra) if x)
            ref = " (ref)" if r.reference else ""
            lines.append(f"{r.workload:<10} {r.case:<13} {(r.impl + ref):<24} {time:>10} "
                         f"{ratio:>7} {err:>8}  {note}")
        if absent:
            lines.append("not installed here (their rows left out): " + ", ".join(
                f"{lib} ({n} rows)" for lib, n in sorted(absent.items())))
        return "\n".join(lines)

    def targets_table(self) -> str:
        """The performance targets, met or not, as judged by this run."""
        rows = self.targets()
        head = f"{'target':<42} {'goal':<26} {'measured':<48} verdict"
        lines = [head, "-" * len(head)]
        for t in rows:
            lines.append(f"{t['what']:<42} {t['goal']:<26} {t['measured']:<48} "
                         f"{t['verdict']}")
        return "\n".join(lines)

    def as_dict(self) -> dict:
        self.fill_ratios()
        return {"env": self.env, "args": self.args, "sections_s": self.sections,
                "rows": [asdict(r) for r in self.rows], "targets": self.targets()}

    def write_json(self, path: str) -> str:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w") as fh:
            json.dump(self.as_dict(), fh, indent=1, default=_json_default)
        return path

    def plot(self, path: str) -> str | None:
        """Bar chart of every case (log time) and the scenario-2 sweep; None without
        matplotlib."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except Exception:  # noqa: BLE001
            return None
        self.fill_ratios()
        ok = [r for r in self.rows if r.status == "ok" and r.time_us]
        sweep = [r for r in ok if r.workload == "sweep"]
        bars = [r for r in ok if r.workload != "sweep"]
        fig, axes = plt.subplots(1, 2, figsize=(16, 7),
                                 gridspec_kw={"width_ratios": [2, 1]})
        ax = axes[0]
        labels = [f"{r.workload}/{r.case}/{r.impl}" for r in bars]
        ax.barh(range(len(bars)), [r.time_us for r in bars],
                color=[_color(r.impl) for r in bars])
        ax.set_yticks(range(len(bars)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("median time per call (us, log)")
        ax.set_title(f"dualgpu vs peers - {self.env.get('gpu', 'CPU')}")
        ax = axes[1]
        for impl in sorted({r.impl for r in sweep}):
            pts = sorted((r.extra.get("N", 0), r.time_us) for r in sweep if r.impl == impl)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=impl,
                    color=_color(impl))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("particles N")
        ax.set_ylabel("us per value+grad+HVP")
        ax.set_title("scenario 2 sweep")
        if sweep:
            ax.legend(fontsize=8)
        fig.tight_layout()
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path


_COLORS = (("dualgpu", "tab:blue"), ("jax", "tab:green"), ("torch.compile", "tab:orange"),
           ("torch", "tab:red"), ("hand-fused", "black"))


def _color(impl: str) -> str:
    for key, color in _COLORS:
        if impl.startswith(key):
            return color
    return "tab:gray"


def _fmt_extra(v) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def _json_default(o):
    try:
        return float(o)
    except Exception:  # noqa: BLE001
        return str(o)


def _not_installed(row: Row) -> str | None:
    """The library a skipped row needed and could not import (``jax``, ``torch``), or None."""
    note = row.note or ""
    if row.status == "skipped" and " not importable (" in note:
        return note.split(" not importable (", 1)[0]
    return None
