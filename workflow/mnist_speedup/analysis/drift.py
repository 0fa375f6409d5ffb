"""Drift: did the machine change speed over the workflow run?

For each device and batch size, the steady-state epoch time of its runs is
regressed on the run's start time. The relative change over the run is
slope x (last start - first start) / mean time, with a 95% t-interval
from the slope's standard error (n - 2 df). The same is done for the
device's matrix-multiply rate that every run probes before its epochs, so
that a slower device is told apart from a slower training loop.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from mnist_speedup.analysis import placing
from mnist_speedup.analysis.stats import CI_LEVEL


def relative_change(x, y, level: float = CI_LEVEL) -> tuple[float, float, float]:
    """(change, low, high) of y over the span of x, relative to mean(y);
    NaN with fewer than 3 points or no spread in x."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(x) < 3 or np.ptp(x) == 0:
        return (math.nan, math.nan, math.nan)
    fit = sps.linregress(x, y)
    scale = np.ptp(x) / y.mean()
    half = sps.t.ppf(0.5 + level / 2, len(x) - 2) * fit.stderr * scale
    change = fit.slope * scale
    return (change, change - half, change + half)


def table(summary: pd.DataFrame) -> pd.DataFrame:
    """Per workload, batch size and device: drift of the epoch time and of the
    probed device rate over the run."""
    df = summary.assign(start_s=placing.start_seconds(summary))
    rows = []
    for (workload, bs, device), runs in df.groupby(["workload", "batch_size", "device"], sort=True):
        change, low, high = relative_change(runs.start_s, runs.steady_epoch_mean_s)
        rate, rate_low, rate_high = relative_change(runs.start_s, runs.probe_flops_per_s)
        rows.append(
            {
                "workload": workload,
                "batch_size": bs,
                "device": device,
                "n": len(runs),
                "span_s": np.ptp(runs.start_s),
                "epoch_time_drift": change,
                "epoch_time_drift_ci_low": low,
                "epoch_time_drift_ci_high": high,
                "device_rate_drift": rate,
                "device_rate_drift_ci_low": rate_low,
                "device_rate_drift_ci_high": rate_high,
            }
        )
    return pd.DataFrame(rows)
