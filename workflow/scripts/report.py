"""Write results/report.md."""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
import pandas as pd

from mnist_speedup import aggregate, atomic, report
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    out = Path(snakemake.output[0])
    summary = pd.read_csv(snakemake.input.summary)
    speedup = pd.read_csv(snakemake.input.speedup)
    baseline = aggregate.baseline_device(summary, snakemake.params.baseline)
    environments = {
        device: json.loads(Path(rows.path.iloc[0]).read_text())["environment"]
        for device, rows in summary.groupby("device")
    }
    figures = [os.path.relpath(f, out.parent) for f in snakemake.input.figures]
    text = report.render(summary, speedup, baseline, snakemake.params.config, figures, environments)
    atomic.write_text(out, text)
    log(f"wrote {out}")
