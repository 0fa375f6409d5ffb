"""Merge every run record into the tidy tables of the report."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from mnist_speedup import atomic
from mnist_speedup.analysis import tables
from mnist_speedup.records import attempts
from mnist_speedup.report import outputs
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    params, out = snakemake.params, snakemake.output
    settings = tables.Settings(
        params.baseline,
        params.target_accuracy,
        params.parity_margin,
        params.replication,
        params.prices,
        params.devices_auto,
        params.no_gpu_reason,
        tuple(params.unsigned_folders),
    )
    runs, cut = attempts.split(snakemake.input.attempts)  # the finished runs' records, the cut runs' attempts
    made = tables.make(runs, settings, params.extra_runs, snakemake.input.calibration, cut)
    for entry in outputs.TABLES:  # the registry's tables, each written once
        atomic.write_text(getattr(out, entry.name), tables.csv_text(made[entry.name]))
    columns = ["workload", "batch_size", "device", "n", "speedup", "speedup_ci_low", "speedup_ci_high", "ci_method"]
    log(made["speedup"][columns].to_string())
    columns = ["workload", "batch_size", "device", "runs_reached", "tta_speedup", "parity", "tta_note"]
    log(made["time_to_accuracy"][columns].to_string())
