"""Every table of the report from the run records: the aggregate rule's work, and a partial
report's while a call still runs (report/partial.py), through the same code."""

from __future__ import annotations

from dataclasses import dataclass, field

from mnist_speedup.analysis import aggregate, drift, parity, replication, stats, tta
from mnist_speedup.spec import run


@dataclass(frozen=True)
class Settings:
    """What the tables depend on beyond the records (the aggregate rule's params)."""

    baseline: str
    target_accuracy: float
    parity_margin: float
    replication: bool = False
    prices: dict = field(default_factory=dict)


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
    return {
        "summary": summary,
        "speedup": speedup,
        "time_to_accuracy": tta_table,
        "best_against_best": tta.best_against_best(tta_table, per_run, baseline),
        "curves": curves,
        "drift": drift.table(summary),
        "time_budget": aggregate.cut_runs(list(cut)),
    }
