"""Draw the speedup and timeline figures from the aggregated tables."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
import pandas as pd

from mnist_speedup import aggregate, figure, tta
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    summary = pd.read_csv(snakemake.input.summary)
    speedup = pd.read_csv(snakemake.input.speedup)
    curves = tta.mean_curves(pd.read_csv(snakemake.input.curves))
    baseline = aggregate.baseline_device(summary, snakemake.params.baseline)
    labels = aggregate.device_labels(summary)
    options = snakemake.params.figure
    drawings = {
        "speedup": figure.draw(summary, speedup, baseline, options, curves, snakemake.params.target, labels),
        "timeline": figure.draw_timeline(summary, baseline, options, labels),
    }
    for name, fig in drawings.items():
        stem = Path(getattr(snakemake.output, name)[0]).with_suffix("")
        for path in figure.save(fig, stem, options["formats"], options["dpi"]):
            log(f"wrote {path}")
