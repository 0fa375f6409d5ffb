"""The figures, each with its caption: the caption's words come from its
one source, ``workflow/report/<figure>.rst`` (also Snakemake's HTML report
caption); the report adds the numbers of this run."""

from __future__ import annotations

from pathlib import Path

from mnist_speedup.report import outputs
from mnist_speedup.report.format import esc
from mnist_speedup.words import percent

CAPTIONS = Path(__file__).resolve().parents[3] / "report"
#: the explorer's page (report/explorer.py), beside report.md
EXPLORER = "explorer.html"


def caption_text(name: str) -> str:
    """The caption of figure ``name`` as one paragraph."""
    return " ".join((CAPTIONS / f"{name}.rst").read_text(encoding="utf-8").split())


def speedup_details(report) -> str:
    """The speedup figure's caption, after its words: what this run drew."""
    t, baseline = report.tables, report.baseline
    n = t.summary.groupby(["workload", "device", "batch_size"]).size()
    runs = f"{n.min()}" if n.min() == n.max() else f"{n.min()}-{n.max()}"
    methods = sorted(set(t.speedup[t.speedup.device != baseline].ci_method))
    devices = t.summary.device.nunique()
    shown = f" Workload: {esc(report.workloads[report.main_workload])}." if len(report.workloads) > 1 else ""
    return (
        f"{shown} Here: {devices} device{'s' if devices != 1 else ''}, {runs} runs each, "
        f"speedup over {esc(baseline)} ({esc('; '.join(methods) or 'no interval')}); target "
        f"{percent(report.target)}."
    )


#: what a figure's caption adds about this run, after the caption file's words
DETAILS = {"speedup": speedup_details}


def render(report) -> list[str]:
    """Each figure the report has, numbered by its place in the registry."""
    parts = ["## Figures", ""]
    shown = [f for f in outputs.FIGURES if report.figures.get(f.name)]
    for number, entry in enumerate(shown, 1):
        parts += [f"![{entry.alt}]({f})" for f in report.figures[entry.name] if f.endswith(".png")]
        details = DETAILS[entry.name](report) if entry.name in DETAILS else ""
        parts += ["", f"**Figure {number}.** {caption_text(entry.caption)}{details}", ""]
    parts += ["Files: " + ", ".join(f"`{f}`" for fs in report.figures.values() for f in fs), ""]
    parts += [
        f"Every run behind these numbers, to filter and hover: [the explorer]({EXPLORER}) (one page, offline).",
        "",
    ]
    return parts
