"""How the speedup changes with the work per step: crossovers and a summary.

Each workload at each batch size is one point, placed by its FLOPs per
training step. Per device and batch size:
- :func:`crossover`: the sizes where the device's 95% interval lies wholly
  above 1 (faster than the baseline), wholly below 1 (slower), or holds 1
  (cannot be told apart), as one sentence that names the smallest size
  from which it is faster and the largest up to which it is slower;
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
from mnist_speedup.spec.workloads import flop_words

ABOVE, BELOW, APART, UNKNOWN = "+", "-", "0", "?"


def side(low: float, high: float) -> str:
    """Where a 95% interval lies against 1."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return UNKNOWN
    return ABOVE if low > 1 else BELOW if high < 1 else APART


def _segments(rows: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Consecutive sizes (by FLOPs per step) whose intervals lie on one side."""
    sides = [side(lo, hi) for lo, hi in zip(rows.speedup_ci_low, rows.speedup_ci_high)]
    out, start = [], 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or sides[i] != sides[start]:
            out.append((sides[start], rows.iloc[start:i]))
            start = i
    return out


def _span(seg: pd.DataFrame, first: bool, last: bool) -> str:
    lo, hi = flop_words(seg.flops_per_step.iloc[0]), flop_words(seg.flops_per_step.iloc[-1])
    if first and last:
        return f"at all {len(seg)} sizes, {lo} to {hi} per step"
    if last:
        return f"from {lo} per step up"
    if first:
        return f"up to {hi} per step"
    return f"at {lo} per step" if lo == hi else f"from {lo} to {hi} per step"


def _range(seg: pd.DataFrame) -> str:
    lo, hi = seg.speedup.min(), seg.speedup.max()
    return f"{lo:.2f}×" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}×-{hi:.2f}×"


def crossover(rows: pd.DataFrame, who: str, base: str) -> str:
    """One device's sentence over the sizes in ``rows`` (its speedup rows
    at one batch size, any order)."""
    rows = rows.sort_values("flops_per_step")
    segments = _segments(rows)
    if len(segments) == 1 and segments[0][0] in (APART, UNKNOWN):
        lo, hi = flop_words(rows.flops_per_step.iloc[0]), flop_words(rows.flops_per_step.iloc[-1])
        why = "cannot be told apart" if segments[0][0] == APART else "have no interval"
        return f"{who} and {base} {why} at any of these sizes ({lo} to {hi} per step)."
    parts = []
    for i, (kind, seg) in enumerate(segments):
        span = _span(seg, i == 0, i == len(segments) - 1)
        if kind == ABOVE:
            parts.append(f"{who} is faster than {base} {span} ({_range(seg)})")
        elif kind == BELOW:
            parts.append(f"{who} is slower than {base} {span} ({_range(seg)})")
        else:
            verb = "cannot be told apart" if kind == APART else "have no interval"
            parts.append(f"{span} they {verb}" if parts else f"{who} and {base} {verb} {span}")
    return "; ".join(parts) + "."


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
            rows.append({"batch_size": bs, "device": device, "workloads": len(parts), "geomean_speedup": g,
                         "geomean_ci_low": lo, "geomean_ci_high": hi})  # fmt: skip
    return pd.DataFrame(rows, columns=["batch_size", "device", "workloads", "geomean_speedup", "geomean_ci_low",
                                       "geomean_ci_high"])  # fmt: skip
