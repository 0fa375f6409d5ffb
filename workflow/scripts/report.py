"""Write results/<experiment>/report.md, and its findings for the HTML report."""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
import pandas as pd

from mnist_speedup import atomic
from mnist_speedup.analysis import replication
from mnist_speedup.records import run_record as records
from mnist_speedup.report import explorer, markdown, outputs
from mnist_speedup.rulescript import logged


def read_table(path) -> pd.DataFrame:
    """A table the aggregation wrote (a file of no columns, as pandas writes an empty one, is empty)."""
    return pd.read_csv(path) if Path(path).stat().st_size > 1 else pd.DataFrame()


with logged(snakemake) as log:
    inp, out = snakemake.input, Path(snakemake.output.markdown)
    made = {name: read_table(getattr(inp, name)) for name in outputs.REPORT_TABLES}
    tables = markdown.Tables.of(made)
    environments = {  # through the strict reader, as every record is read
        device: records.load(rows.path.iloc[0])["environment"] for device, rows in tables.summary.groupby("device")
    }
    figures = {
        name: [os.path.relpath(f, out.parent) for f in getattr(inp, f"figure_{name}")]
        for name in snakemake.params.figures
    }
    baseline = made["baseline"].baseline.iloc[0]  # resolved once, by the aggregation
    rep, stop = snakemake.params.replication, None
    if rep and inp.replication:  # why replication stopped: the last round's measurement, in words
        measured = json.loads(Path(inp.replication[0]).read_text(encoding="utf-8"))
        stop = replication.reason(measured, rep["ci_half_width"], rep["max_seeds"])
    report = markdown.Report(
        tables,
        baseline,
        snakemake.params.config,
        figures,
        environments,
        snakemake.params.main_workload,
        stop,
    )
    atomic.write_text(out, markdown.render(report))
    atomic.write_text(snakemake.output.findings, markdown.findings_html(report))
    made["curves"] = read_table(inp.curves)
    page = explorer.explorer_html(made, baseline, snakemake.params.palette, snakemake.params.experiment)
    atomic.write_text(snakemake.output.explorer, page)
    log(f"wrote {out}, {snakemake.output.findings} and {snakemake.output.explorer}")
