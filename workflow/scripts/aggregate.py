"""Merge every run record into the tidy tables of the report."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from mnist_speedup import atomic
from mnist_speedup.analysis import aggregate, drift, parity, replication, stats, tta
from mnist_speedup.report import outputs
from mnist_speedup.rulescript import logged
from mnist_speedup.spec import run

with logged(snakemake) as log:
    params, out = snakemake.params, snakemake.output
    summary, curves = aggregate.load_runs(snakemake.input.runs, params.extra_runs, snakemake.input.calibration)
    baseline = aggregate.baseline_device(summary, params.baseline)
    aggregate.check_like_with_like(summary, baseline)
    # under replication's stopping rule the intervals are wider (mnist_speedup/analysis/replication.py)
    level = replication.INTERVAL_LEVEL if params.replication else stats.CI_LEVEL
    speedup = aggregate.speedup_table(summary, baseline, params.prices, level)
    per_run = tta.per_run(curves, params.target_accuracy)
    summary = summary.merge(per_run, on=run.RUN_KEY)
    tta_table = tta.table(summary, per_run, baseline, params.target_accuracy, params.prices)
    verdicts = parity.table(summary, baseline, params.target_accuracy, params.parity_margin)
    speedup, tta_table = parity.apply(speedup, tta_table, verdicts)
    tables = {
        "summary": summary,
        "speedup": speedup,
        "time_to_accuracy": tta_table,
        "best_against_best": tta.best_against_best(tta_table, per_run, baseline),
        "curves": curves,
        "drift": drift.table(summary),
    }
    for entry in outputs.TABLES:  # the registry's tables, each written once
        atomic.write_text(getattr(out, entry.name), tables[entry.name].to_csv(index=False))
    log(
        speedup[
            ["workload", "batch_size", "device", "n", "speedup", "speedup_ci_low", "speedup_ci_high", "ci_method"]
        ].to_string()
    )
    log(
        tta_table[["workload", "batch_size", "device", "runs_reached", "tta_speedup", "parity", "tta_note"]].to_string()
    )
