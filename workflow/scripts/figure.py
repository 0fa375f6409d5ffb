"""Draw the publication figure from the aggregated tables."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
import pandas as pd

from mnist_speedup import aggregate, figure
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    summary = pd.read_csv(snakemake.input.summary)
    speedup = pd.read_csv(snakemake.input.speedup)
    baseline = aggregate.baseline_device(summary, snakemake.params.baseline)
    options = snakemake.params.figure
    fig = figure.draw(summary, speedup, baseline, options)
    stem = Path(snakemake.output[0]).with_suffix("")
    for path in figure.save(fig, stem, options["formats"], options["dpi"]):
        log(f"wrote {path}")
