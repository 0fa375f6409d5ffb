"""Draw every figure of the registry (report/outputs.py) that this config has, from the aggregated tables."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
import pandas as pd

from mnist_speedup.report import drawings, figure, outputs
from mnist_speedup.rulescript import logged
from mnist_speedup.spec import devices

with logged(snakemake) as log:
    summary = pd.read_csv(snakemake.input.summary)
    speedup = pd.read_csv(snakemake.input.speedup)
    curves = pd.read_csv(snakemake.input.mean_curves)  # the aggregation's means over seeds
    baseline = pd.read_csv(snakemake.input.baseline).baseline.iloc[0]  # resolved once, by the aggregation
    labels = devices.labels_of(summary)
    drawing = drawings.Drawing(
        summary=summary,
        speedup=speedup,
        curves=curves,
        baseline=baseline,
        options=snakemake.params.figure,
        target=snakemake.params.target,
        labels=labels,
        main_workload=snakemake.params.main_workload,
    )
    for entry in (f for f in outputs.FIGURES if hasattr(snakemake.output, f.name)):  # this config's figures
        stem = Path(getattr(snakemake.output, entry.name)[0]).with_suffix("")
        for path in figure.save(
            drawings.draw(entry, drawing), stem, drawing.options["formats"], drawing.options["dpi"]
        ):
            log(f"wrote {path}")
