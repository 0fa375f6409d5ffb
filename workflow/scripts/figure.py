"""Draw the speedup, timeline and (with several workloads) scaling figures from the aggregated tables."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
import pandas as pd

from mnist_speedup.analysis import aggregate, tta
from mnist_speedup.report import figure
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    summary = pd.read_csv(snakemake.input.summary)
    speedup = pd.read_csv(snakemake.input.speedup)
    curves = tta.mean_curves(pd.read_csv(snakemake.input.curves))
    baseline = aggregate.baseline_device(summary, snakemake.params.baseline)
    labels = aggregate.device_labels(summary)
    options = snakemake.params.figure
    # the speedup figure shows one workload (the first listed); scaling shows them all
    main = snakemake.params.main_workload
    drawings = {
        "speedup": figure.draw(
            summary[summary.workload == main],
            speedup[speedup.workload == main],
            baseline,
            options,
            curves[curves.workload == main],
            snakemake.params.target,
            labels,
        ),
        "timeline": figure.draw_timeline(summary, baseline, options, labels),
    }
    if hasattr(snakemake.output, "scaling"):
        drawings["scaling"] = figure.draw_scaling(speedup, baseline, options, labels)
    for name, fig in drawings.items():
        stem = Path(getattr(snakemake.output, name)[0]).with_suffix("")
        for path in figure.save(fig, stem, options["formats"], options["dpi"]):
            log(f"wrote {path}")
