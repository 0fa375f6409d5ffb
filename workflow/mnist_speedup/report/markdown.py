"""The Markdown report: what was found first, then the evidence.

The report is an ordered list of sections (:data:`SECTIONS`), one module
each under ``sections/``, each with ``render(report) -> list[str]``. A new
section is one file plus one entry in that list. Formatting helpers live in
:mod:`.format`; every value from a record or the config is escaped once,
where it enters Markdown.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import pandas as pd

from mnist_speedup.report.format import esc
from mnist_speedup.report.sections import (
    accuracy,
    budget,
    configuration,
    drift,
    efficiency,
    environment,
    figures,
    frameworks,
    header,
    headline,
    modes,
    numerics,
    resources,
    scaling,
    speedup,
    time_to_accuracy,
    warnings,
)
from mnist_speedup.spec import devices, schema

SECTIONS = (
    headline,
    header,
    budget,
    warnings,
    speedup,
    scaling,
    time_to_accuracy,
    resources,
    efficiency,
    numerics,
    modes,
    frameworks,
    drift,
    accuracy,
    figures,
    environment,
    configuration,
)
TITLE = "# MNIST training speedup report"


def _empty() -> pd.DataFrame:
    return pd.DataFrame()


@dataclass
class Tables:
    """The aggregation's tables (analysis/tables.py): every number the report shows is in one of them."""

    summary: pd.DataFrame
    speedup: pd.DataFrame
    tta: pd.DataFrame
    best: pd.DataFrame
    drift: pd.DataFrame
    #: the runs a time budget cut (none: no budget, or every run fitted)
    cut: pd.DataFrame = dataclasses.field(default_factory=_empty)
    pairs: pd.DataFrame = dataclasses.field(default_factory=_empty)
    within: pd.DataFrame = dataclasses.field(default_factory=_empty)
    twins: pd.DataFrame = dataclasses.field(default_factory=_empty)
    geomeans: pd.DataFrame = dataclasses.field(default_factory=_empty)
    warnings: pd.DataFrame = dataclasses.field(default_factory=_empty)
    headline: pd.DataFrame = dataclasses.field(default_factory=_empty)

    #: each field's table in the registry (report/outputs.py)
    NAMES = {
        "summary": "summary",
        "speedup": "speedup",
        "tta": "time_to_accuracy",
        "best": "best_against_best",
        "drift": "drift",
        "cut": "time_budget",
        "pairs": "framework_pairs",
        "within": "within_framework",
        "twins": "twins",
        "geomeans": "geometric_means",
        "warnings": "warnings",
        "headline": "headline",
    }

    @classmethod
    def of(cls, made: dict) -> Tables:
        """From the registry's tables by name (the aggregation's, or those read back from its CSV files)."""
        return cls(**{field: made[name] for field, name in cls.NAMES.items()})


@dataclass
class Report:
    """What every section reads: the tables, the baseline, the shown
    config, the figure files and each device's full environment."""

    tables: Tables
    baseline: str
    config: dict
    figures: dict[str, list[str]]
    environments: dict
    #: the workload the speedup figure shows (default: the first label)
    main_workload: str | None = None
    #: why replication stopped (None: replication off)
    replication: str | None = None

    def __post_init__(self):
        self.names = devices.labels_of(self.tables.summary)
        #: each workload label with its network in words, e.g. ``MLP 784-800-800-10``
        self.workloads = dict(zip(self.tables.summary.workload, self.tables.summary.workload_words))
        if self.main_workload not in self.workloads:
            self.main_workload = min(self.workloads)
        self.warnings = [esc(w, line_start=True) for w in self.tables.warnings.get("warning", pd.Series(dtype=object))]

    @property
    def target(self) -> float:
        return self.config.get("target_accuracy", schema.default("target_accuracy"))


def render(report: Report) -> str:
    parts = [TITLE, ""]
    for section in SECTIONS:
        parts += section.render(report)
    return "\n".join(parts)


def _inline_html(text: str) -> str:
    """Report text (already escaped by :func:`esc`: HTML-escaped, Markdown's characters backslash-escaped)
    with the report's own bits of Markdown (bold, code) as HTML, and the escapes' backslashes gone."""
    text = re.sub(r"(?<!\\)\*\*(.+?)(?<!\\)\*\*", r"<strong>\1</strong>", text)
    text = re.sub(r"(?<!\\)`([^`]+?)(?<!\\)`", r"<code>\1</code>", text)
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)


def findings_html(report: Report) -> str:
    """What the report found, for `snakemake --report`: the headline, the
    header and every warning, as one small self-contained HTML page."""
    items = "".join(f"<li>{_inline_html(x)}</li>" for x in headline.sentences(report))
    header_text = " ".join(_inline_html(x) for x in header.render(report) if x)
    warned = "".join(f"<li>{_inline_html(x)}</li>" for x in report.warnings)
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Findings</title></head><body>'
        f"<h1>What this run found</h1><ul>{items}</ul><p>{header_text}</p>"
        + (f"<h2>Warnings</h2><ul>{warned}</ul>" if warned else "<h2>Warnings</h2><p>None.</p>")
        + "<p>The full report, with every table, is results/&lt;experiment&gt;/report.md.</p></body></html>\n"
    )
