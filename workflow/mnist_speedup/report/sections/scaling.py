"""Scaling: where one device overtakes another as the work per step grows,
and the geometric mean across the workloads (only with several workloads)."""

from __future__ import annotations

import pandas as pd

from mnist_speedup import words
from mnist_speedup.report.crossover import crossover
from mnist_speedup.report.format import ci, esc, table, times


def crossovers(report) -> list[str]:
    """One sentence per device (and batch size, where there are several)."""
    sp, names, baseline = report.tables.speedup, report.names, report.baseline
    several = sp.batch_size.nunique() > 1
    out = []
    for (device, bs), rows in sp[sp.device != baseline].groupby(["device", "batch_size"], sort=True):
        sentence = crossover(rows, esc(names[device]), esc(names[baseline]))
        out.append(f"At batch size {bs}: {sentence}" if several else sentence)
    return out


def _geomean(report) -> list[str]:
    level = report.tables.speedup.get("ci_level", pd.Series(dtype=float)).max()
    level = level if level == level else words.CI_LEVEL  # NaN: no interval anywhere
    g = report.tables.geomeans  # analysis/scaling.py, through the aggregation's geometric_means table
    if g.empty:
        return []
    n = int(g.workloads.max())
    rows = pd.DataFrame(
        {
            "batch size": g.batch_size,
            "device": g.device.map(report.names),
            f"geometric mean across these {n} workloads": g.geomean_speedup.map(times),
            words.ci_name(level): [ci(lo, hi) for lo, hi in zip(g.geomean_ci_low, g.geomean_ci_high)],
        }
    )
    return [
        f"A summary across these {n} workloads (not a property of the device: other networks give other "
        "numbers): the geometric mean of the per-epoch speedups, its interval from each workload's on the log "
        "scale (delta method, paired by block where the runs were; Welch-Satterthwaite degrees of freedom).",
        "",
        table(rows),
        "",
    ]


def render(report) -> list[str]:
    if len(report.workloads) < 2 or report.tables.speedup.device.nunique() < 2:
        return []
    return [
        "## Scaling with the work per step",
        "",
        "Each workload at each batch size is placed by its FLOPs per training step; a device is faster "
        "(slower) than the baseline where its 95% interval lies wholly above (below) 1.",
        "",
        *[f"- {s}" for s in crossovers(report)],
        "",
        *_geomean(report),
    ]
