"""Check every run record before aggregation; a refusal leaves the last good tables untouched."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from mnist_speedup import atomic
from mnist_speedup.analysis import aggregate
from mnist_speedup.records import attempts
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    params = snakemake.params
    runs, cut = attempts.split(snakemake.input.attempts)
    summary, _ = aggregate.load_runs(runs, params.extra_runs, snakemake.input.calibration, len(cut))
    aggregate.check_like_with_like(summary, aggregate.baseline_device(summary, params.baseline))
    aggregate.check_against_config(summary, params.devices, params.workloads)
    checked = dict(zip(summary.path, summary.record_sha256))
    atomic.write_text(snakemake.output[0], json.dumps({"records": checked}, indent=1, sort_keys=True) + "\n")
    log(f"{len(checked)} run records checked")
