"""How the speedup changes with the work per step: a summary across workloads.

Each workload at each batch size is one point, placed by its FLOPs per
training step (where each device's interval lies against 1, in words, is
the report's: report/crossover.py). Per device and batch size:
- :func:`geometric_mean`: the geometric mean of the speedups across the
  workloads with its 95% interval, on the log scale by the delta method
  (paired by block where the runs were), the workloads' variances summed
  with Welch-Satterthwaite degrees of freedom. It is a summary of *these*
  workloads, never a property of the device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from mnist_speedup.analysis import compare
from mnist_speedup.analysis.stats import CI_LEVEL


@dataclass
class LogRatio:
    """log(speedup) of one workload with its variance and degrees of freedom."""

    log: float
    var: float
    df: float


def log_ratio(base: pd.DataFrame, runs: pd.DataFrame, column: str = "steady_epoch_mean_s") -> LogRatio | None:
    """log(mean base / mean device) by the delta method: paired by block
    where the design allows (the covariance of the block means cancels shared
    drift), unpaired (Welch) otherwise. None with fewer than 2 runs a side."""
    if len(base) < 2 or len(runs) < 2:
        return None
    if compare.paired_design(base, runs):
        b, d = compare.by_block(base, runs, column)
        n, mb, md = len(b), b.mean(), d.mean()
        cov = np.cov(b, d, ddof=1)
        var = (cov[0, 0] / mb**2 + cov[1, 1] / md**2 - 2 * cov[0, 1] / (mb * md)) / n
        return LogRatio(math.log(mb / md), max(var, 0.0), n - 1)
    b, d = base[column].to_numpy(), runs[column].to_numpy()
    vb, vd = b.var(ddof=1) / (len(b) * b.mean() ** 2), d.var(ddof=1) / (len(d) * d.mean() ** 2)
    var = vb + vd
    df = var**2 / (vb**2 / (len(b) - 1) + vd**2 / (len(d) - 1)) if var > 0 else len(b) + len(d) - 2
    return LogRatio(math.log(b.mean() / d.mean()), var, df)


def combine(parts: list[LogRatio], level: float = CI_LEVEL) -> tuple[float, float, float]:
    """(geometric mean, low, high) of the ratios whose logs are ``parts``."""
    w = len(parts)
    mean = sum(p.log for p in parts) / w
    var = sum(p.var for p in parts) / w**2
    if var == 0:
        return math.exp(mean), math.exp(mean), math.exp(mean)
    df = var**2 / sum((p.var / w**2) ** 2 / p.df for p in parts if p.var > 0)
    half = sps.t.ppf(0.5 + level / 2, df) * math.sqrt(var)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def geometric_mean(summary: pd.DataFrame, baseline: str, level: float = CI_LEVEL) -> pd.DataFrame:
    """Per device and batch size: the geometric mean speedup across the
    workloads (each with its own baseline runs) and its interval at ``level``
    (the speedups' own: wider under replication)."""
    rows = []
    for bs, at_bs in summary.groupby("batch_size", sort=True):
        for device, runs in at_bs[at_bs.device != baseline].groupby("device", sort=True):
            parts = []
            for workload, mine in runs.groupby("workload", sort=True):
                base = at_bs[(at_bs.device == baseline) & (at_bs.workload == workload)]
                parts.append(log_ratio(base, mine))
            if len(parts) < 2 or any(p is None for p in parts):
                continue
            g, lo, hi = combine(parts, level)
            rows.append(
                {
                    "batch_size": bs,
                    "device": device,
                    "workloads": len(parts),
                    "geomean_speedup": g,
                    "geomean_ci_low": lo,
                    "geomean_ci_high": hi,
                }
            )
    return pd.DataFrame(
        rows, columns=["batch_size", "device", "workloads", "geomean_speedup", "geomean_ci_low", "geomean_ci_high"]
    )
