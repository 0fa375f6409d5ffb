"""One registry of the report's outputs: every figure and table, once.

An entry gives its name (the rule's output name and the file's stem), its
caption file (``workflow/report/<caption>.rst``, Snakemake's HTML report and
the Markdown report read the same words), its report category, and for a
figure the function that draws it. The rules (rules/outputs.smk), the rule
scripts (scripts/figure.py, scripts/aggregate.py) and the report's figures
section read it; figures are numbered by their place here. A new figure is
one entry and its caption file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Drawing:
    """What every figure is drawn from (the aggregated tables and the settings)."""

    summary: pd.DataFrame
    speedup: pd.DataFrame
    curves: pd.DataFrame
    baseline: str
    options: dict
    target: float
    labels: dict
    main_workload: str


def _speedup(d: Drawing):
    from mnist_speedup.report import figure

    main = d.main_workload  # the speedup figure shows one workload (the first listed)
    return figure.draw(d.summary[d.summary.workload == main], d.speedup[d.speedup.workload == main], d.baseline,
                       d.options, d.curves[d.curves.workload == main], d.target, d.labels)  # fmt: skip


def _timeline(d: Drawing):
    from mnist_speedup.report import figure

    return figure.draw_timeline(d.summary, d.baseline, d.options, d.labels)


def _scaling(d: Drawing):
    from mnist_speedup.report import figure

    types = {w: json.loads(spec)["type"] for w, spec in zip(d.summary.workload, d.summary.workload_spec)}
    return figure.draw_scaling(d.speedup, d.baseline, types, d.options, d.labels)


@dataclass(frozen=True)
class Figure:
    name: str
    caption: str
    alt: str
    draw: Callable[[Drawing], object]
    #: drawn only where the config lists at least this many workloads
    min_workloads: int = 1
    category: str = "Figure"


@dataclass(frozen=True)
class Table:
    name: str
    #: None: written for the report and the user, not shown in Snakemake's HTML report
    caption: str | None = None
    #: the HTML report's label; ``{interval}`` is filled in with the speedup's interval words
    label: str = ""
    category: str = "Tables"


FIGURES = (
    Figure("speedup", "figure", "speedup figure", _speedup),
    Figure("timeline", "timeline", "timeline", _timeline),
    Figure("scaling", "scaling", "scaling", _scaling, min_workloads=2),
)
TABLES = (
    Table("summary", "summary", "one row per run"),
    Table("speedup", "speedup", "speedup with {interval}"),
    Table("time_to_accuracy", "time_to_accuracy", "time to accuracy"),
    Table("best_against_best"),
    Table("curves"),
    Table("drift"),
)


def figures(n_workloads: int) -> tuple[Figure, ...]:
    """The figures a config with ``n_workloads`` workloads draws, in order."""
    return tuple(f for f in FIGURES if n_workloads >= f.min_workloads)
