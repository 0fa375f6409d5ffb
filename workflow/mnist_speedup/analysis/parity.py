"""Convergence parity: does a device train the network as well as the baseline?

In the manner of MLPerf's convergence checks, per workload and batch size,
each device against the baseline:
- epochs to the target accuracy, by a one-sided Welch t-test at 5% (does
  the device need more?). A run that misses the target counts as never
  reaching it: more misses than the baseline is a FAIL outright, and a
  missed run otherwise counts as one epoch past the last. Where both
  variances are zero, any difference in the means counts;
- the final validation accuracy must lie within ``parity_margin`` of the
  baseline's (a device may be better, not worse).
A FAIL keeps its per-epoch speedup, but no training speedup is quoted for
it: a faster setting counts only if it trains as well.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from mnist_speedup.spec.run import SETTING
from mnist_speedup.words import percent

LEVEL = 0.05
PASS, FAIL = "PASS", "FAIL"


def _epochs(runs: pd.DataFrame) -> np.ndarray:
    """Epochs to target, a missed run counted as one past the last epoch."""
    return np.where(runs.target_reached.astype(bool), runs.epochs_to_target, runs.epochs + 1).astype(float)


def slower_to_converge(base: np.ndarray, dev: np.ndarray, level: float = LEVEL) -> tuple[bool, float]:
    """(the device needs more epochs, one-sided p) by Welch's t-test."""
    if dev.mean() <= base.mean():
        return False, 1.0
    vb = base.var(ddof=1) / len(base) if len(base) > 1 else 0.0
    vd = dev.var(ddof=1) / len(dev) if len(dev) > 1 else 0.0
    if vb + vd == 0:  # no spread at all: any difference counts
        return True, 0.0
    t = (dev.mean() - base.mean()) / math.sqrt(vb + vd)
    parts = [v**2 / (len(x) - 1) for v, x in ((vb, base), (vd, dev)) if len(x) > 1 and v > 0]
    df = (vb + vd) ** 2 / sum(parts) if parts else 1.0
    p = float(sps.t.sf(t, df))
    return p < level, p


def verdict(base: pd.DataFrame, runs: pd.DataFrame, target: float, margin: float) -> tuple[str, str]:
    """(PASS or FAIL, the reason) of one device's runs against the baseline's."""
    missed, base_missed = int((~runs.target_reached.astype(bool)).sum()), int((~base.target_reached.astype(bool)).sum())
    if missed > base_missed:
        return FAIL, (
            f"{missed} of {len(runs)} runs never reached {percent(target)} validation accuracy "
            f"(baseline: {base_missed} of {len(base)})"
        )
    dev_epochs, base_epochs = _epochs(runs), _epochs(base)
    slower, p = slower_to_converge(base_epochs, dev_epochs)
    if slower:
        return FAIL, (
            f"needs more epochs to {percent(target)} ({dev_epochs.mean():.1f} against {base_epochs.mean():.1f}; "
            f"one-sided Welch p = {p:.3f})"
        )
    gap = runs.val_accuracy.mean() - base.val_accuracy.mean()
    if gap < -margin:
        return FAIL, (
            f"final validation accuracy {runs.val_accuracy.mean():.2%} is {-gap * 100:.2f} points below the "
            f"baseline's {base.val_accuracy.mean():.2%} (margin {margin * 100:.2f})"
        )
    if missed == len(runs) and base_missed == len(base):
        epochs = f"neither reached {percent(target)} in {int(runs.epochs.iloc[0])} epochs, so only the final accuracy compares"
    else:
        epochs = f"{dev_epochs.mean():.1f} epochs to {percent(target)} against {base_epochs.mean():.1f}"
    return PASS, f"{epochs}; final validation accuracy {gap * 100:+.2f} points"


def table(summary: pd.DataFrame, baseline: str, target: float, margin: float) -> pd.DataFrame:
    """Per workload, batch size and device: ``parity`` (PASS/FAIL, empty for
    the baseline or without baseline runs) and ``parity_reason``."""
    rows = []
    for (workload, bs), at in summary.groupby(SETTING, sort=True):
        base = at[at.device == baseline]
        for device, runs in at.groupby("device", sort=True):
            if device == baseline or base.empty:
                parity, reason = "", "the baseline itself" if device == baseline else "no baseline runs"
            else:
                parity, reason = verdict(base, runs, target, margin)
            rows.append(
                {"workload": workload, "batch_size": bs, "device": device, "parity": parity, "parity_reason": reason}
            )
    return pd.DataFrame(rows, columns=[*SETTING, "device", "parity", "parity_reason"])


def apply(speedup: pd.DataFrame, tta_table: pd.DataFrame, verdicts: pd.DataFrame):
    """The speedup and time-to-accuracy tables with a ``parity`` column; a
    FAIL keeps its per-epoch speedup but loses its time-to-accuracy speedup
    (and cost ratio), with the reason as the note."""
    key = [*SETTING, "device"]
    speedup = speedup.merge(verdicts, on=key, how="left")
    tta_table = tta_table.merge(verdicts, on=key, how="left")
    failed = tta_table.parity == FAIL
    for column in (
        "tta_speedup",
        "tta_speedup_ci_low",
        "tta_speedup_ci_high",
        "cost_ratio",
        "cost_ratio_ci_low",
        "cost_ratio_ci_high",
    ):
        if column in tta_table:
            tta_table.loc[failed, column] = math.nan
    tta_table.loc[failed, "tta_note"] = "did not train to the same quality: " + tta_table.loc[failed, "parity_reason"]
    return speedup, tta_table
