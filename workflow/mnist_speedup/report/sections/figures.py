"""The figures, each with its caption: the caption's words come from its
one source, ``workflow/report/<figure>.rst`` (also Snakemake's HTML report
caption); the report adds the numbers of this run."""

from __future__ import annotations

from pathlib import Path

from mnist_speedup.report.format import esc
from mnist_speedup.words import percent

CAPTIONS = Path(__file__).resolve().parents[3] / "report"


def caption_text(name: str) -> str:
    """The caption of figure ``name`` as one paragraph."""
    return " ".join((CAPTIONS / f"{name}.rst").read_text(encoding="utf-8").split())


def speedup_caption(report) -> str:
    t, baseline = report.tables, report.baseline
    n = t.summary.groupby(["workload", "device", "batch_size"]).size()
    runs = f"{n.min()}" if n.min() == n.max() else f"{n.min()}-{n.max()}"
    methods = sorted(set(t.speedup[t.speedup.device != baseline].ci_method))
    devices = t.summary.device.nunique()
    shown = f" Workload: {esc(report.workloads[report.main_workload])}." if len(report.workloads) > 1 else ""
    return (
        f"**Figure 1.** {caption_text('figure')}{shown} Here: {devices} device{'s' if devices != 1 else ''}, {runs} runs each, "
        f"speedup over {esc(baseline)} ({esc('; '.join(methods) or 'no interval')}); target "
        f"{percent(report.target)}."
    )


def render(report) -> list[str]:
    figures = report.figures
    parts = ["## Figures", ""]
    parts += [f"![speedup figure]({f})" for f in figures["speedup"] if f.endswith(".png")]
    parts += ["", speedup_caption(report), ""]
    parts += [f"![timeline]({f})" for f in figures["timeline"] if f.endswith(".png")]
    parts += ["", f"**Figure 2.** {caption_text('timeline')}", ""]
    if figures.get("scaling"):
        parts += [f"![scaling]({f})" for f in figures["scaling"] if f.endswith(".png")]
        parts += ["", f"**Figure 3.** {caption_text('scaling')}", ""]
    parts += ["Files: " + ", ".join(f"`{f}`" for fs in figures.values() for f in fs), ""]
    return parts
