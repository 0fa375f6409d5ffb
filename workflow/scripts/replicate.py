"""Measure one replication round: the widest speedup interval at its seeds."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from mnist_speedup import atomic
from mnist_speedup.analysis import aggregate, replication
from mnist_speedup.records import attempts
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    summary, _ = aggregate.load_runs(attempts.split(snakemake.input.attempts)[0])
    baseline = aggregate.baseline_device(summary, snakemake.params.baseline)
    speedup = aggregate.speedup_table(summary, baseline, level=replication.INTERVAL_LEVEL)
    seeds = sorted(int(s) for s in summary.seed.unique())
    measured = replication.measure(speedup, baseline, seeds, int(snakemake.wildcards.round))
    atomic.write_text(snakemake.output[0], json.dumps(measured, indent=1, sort_keys=True) + "\n")
    log.console(f"replication round {measured['round']}: {replication.progress(measured)}")
