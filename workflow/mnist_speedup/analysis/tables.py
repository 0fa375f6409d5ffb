"""Every table of the report from the run records: the aggregate rule's work, and a partial
report's while a call still runs (mnist_speedup/partial.py), through the same code."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from types import SimpleNamespace

import pandas as pd

from mnist_speedup.analysis import aggregate, checks, drift, headline, parity, replication, scaling, stats, tta, twins
from mnist_speedup.analysis import frameworks as pairs_of
from mnist_speedup.records import bundle
from mnist_speedup.spec import run


@dataclass(frozen=True)
class Settings:
    """What the tables depend on beyond the records (the aggregate rule's params)."""

    baseline: str
    target_accuracy: float
    parity_margin: float
    replication: bool = False
    prices: dict = field(default_factory=dict)
    #: whether the devices were found by `devices: auto`, and why no GPU was (config/sources.py's `shown`)
    devices_auto: bool = False
    no_gpu_reason: str | None = None
    #: the folders of extra_runs merged unsigned although trusted_keys is set (allow_unsigned_folders)
    unsigned_folders: tuple = ()


def csv_text(table: pd.DataFrame) -> str:
    """A table as CSV that reads back exactly: every text quoted, so that no character in it (a carriage
    return from a record's text, say) can split its row."""
    return table.to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC)


def make(runs, settings: Settings, extra_runs=(), calibration_files=(), cut=()) -> dict:
    """{table name: DataFrame} for every table in report/outputs.py's registry (``runs``: this machine's
    records; ``cut``: the attempts of its runs the time budget cut, records/attempts.py)."""
    summary, curves = aggregate.load_runs(runs, extra_runs, calibration_files, len(cut))
    baseline = aggregate.baseline_device(summary, settings.baseline)
    aggregate.check_like_with_like(summary, baseline)
    # under replication's stopping rule the intervals are wider (mnist_speedup/analysis/replication.py)
    level = replication.INTERVAL_LEVEL if settings.replication else stats.CI_LEVEL
    speedup = aggregate.speedup_table(summary, baseline, settings.prices, level)
    per_run = tta.per_run(curves, settings.target_accuracy)
    summary = summary.merge(per_run, on=run.RUN_KEY)
    tta_table = tta.table(summary, per_run, baseline, settings.target_accuracy, settings.prices)
    verdicts = parity.table(summary, baseline, settings.target_accuracy, settings.parity_margin)
    speedup, tta_table = parity.apply(speedup, tta_table, verdicts)
    made = {
        "summary": summary,
        "speedup": speedup,
        "time_to_accuracy": tta_table,
        "best_against_best": tta.best_against_best(tta_table, per_run, baseline),
        "curves": curves,
        "drift": drift.table(summary),
        "time_budget": aggregate.cut_runs(list(cut)),
    }
    return made | derived(made, baseline, settings, level, bundle.dropped(extra_runs))


def derived(made: dict, baseline: str, settings: Settings, level: float, dropped=()) -> dict:
    """The numbers the report shows beyond the main tables, each computed here once (never while
    rendering): framework pairs, each framework's own speedup, twin speedups, the geometric means across
    workloads, the warnings (the bundles left out among them: ``dropped``, records/bundle.py's), the seeds'
    mean learning curves, which device is the baseline, and the headline's choice (analysis/headline.py)."""
    summary, margin = made["summary"], settings.parity_margin
    shown = {"devices_auto": settings.devices_auto, "no_gpu_reason": settings.no_gpu_reason}
    found = checks.warnings(SimpleNamespace(**made), baseline, shown) + checks.unsigned(settings.unsigned_folders)
    found += checks.dropped_bundles(dropped)
    return {
        "framework_pairs": pairs_of.pairs(summary, settings.target_accuracy, margin),
        "within_framework": pairs_of.within(summary, baseline, settings.target_accuracy, margin),
        "twins": twins.table(summary, settings.target_accuracy, margin),
        "geometric_means": scaling.geometric_mean(summary, baseline, level),
        "warnings": pd.DataFrame({"warning": found}, columns=["warning"]),
        "mean_curves": tta.mean_curves(made["curves"]),
        "baseline": pd.DataFrame({"baseline": [baseline]}),
        "headline": headline.table(made["speedup"], baseline),
    }
