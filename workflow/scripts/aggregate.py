"""Merge every run record into summary.csv and speedup.csv."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from mnist_speedup import aggregate
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    summary = aggregate.load_runs(snakemake.input.runs, snakemake.params.extra_runs, snakemake.input.calibration)
    baseline = aggregate.baseline_device(summary, snakemake.params.baseline)
    speedup = aggregate.speedup_table(summary, baseline)
    summary.to_csv(snakemake.output.summary, index=False)
    speedup.to_csv(snakemake.output.speedup, index=False)
    log(speedup[["batch_size", "device", "n", "speedup", "speedup_ci_low", "speedup_ci_high"]].to_string())
