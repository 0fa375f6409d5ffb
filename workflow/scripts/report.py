"""Write results/<experiment>/report.md, and its findings for the HTML report."""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
import pandas as pd

from mnist_speedup import atomic
from mnist_speedup.analysis import aggregate, replication
from mnist_speedup.report import markdown
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    inp, out = snakemake.input, Path(snakemake.output.markdown)
    tables = markdown.Tables(
        summary=pd.read_csv(inp.summary),
        speedup=pd.read_csv(inp.speedup),
        tta=pd.read_csv(inp.time_to_accuracy),
        best=pd.read_csv(inp.best_against_best) if Path(inp.best_against_best).stat().st_size > 1 else pd.DataFrame(),
        drift=pd.read_csv(inp.drift),
        cut=pd.read_csv(inp.time_budget),
    )
    environments = {
        device: json.loads(Path(rows.path.iloc[0]).read_text())["environment"]
        for device, rows in tables.summary.groupby("device")
    }
    figures = {
        name: [os.path.relpath(f, out.parent) for f in getattr(inp, f"figure_{name}")]
        for name in snakemake.params.figures
    }
    baseline = aggregate.baseline_device(tables.summary, snakemake.params.baseline)
    rep = snakemake.params.replication
    stop = None
    if rep and inp.replication:
        measured = json.loads(Path(inp.replication[0]).read_text(encoding="utf-8"))
        stop = replication.reason(measured, rep["ci_half_width"], rep["max_seeds"])
    made = markdown.Report(
        tables,
        baseline,
        snakemake.params.config,
        figures,
        environments,
        snakemake.params.main_workload,
        stop,
    )
    atomic.write_text(out, markdown.render(made))
    atomic.write_text(snakemake.output.findings, markdown.findings_html(made))
    log(f"wrote {out} and {snakemake.output.findings}")
