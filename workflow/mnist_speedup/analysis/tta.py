"""Time to accuracy: how much faster a device *trains* the model.

A run's time to target is the sum of its epoch clocks, warm-up epochs
included (they are real training from the initial weights, as in MLPerf),
up to and including the first epoch whose validation accuracy is at or
above ``target_accuracy``. Setup, tracing and evaluation are not in it.
It is computed here, from the per-epoch accuracies that every run records,
so that changing the target never reruns training.

A device/batch-size pair where some run did not reach the target gets no
speedup: averaging over the runs that happened to reach it would flatter
the device.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from mnist_speedup.analysis import compare, stats
from mnist_speedup.spec.run import RUN_KEY, SETTING
from mnist_speedup.words import percent


def time_to_target(epoch_s, val_accuracy, target: float) -> tuple[bool, int | None, float | None]:
    """(reached, epochs to target, seconds to target) of one run."""
    elapsed = 0.0
    for epoch, (seconds, accuracy) in enumerate(zip(epoch_s, val_accuracy), start=1):
        elapsed += seconds
        if accuracy >= target:
            return True, epoch, elapsed
    return False, None, None


def per_run(curves: pd.DataFrame, target: float) -> pd.DataFrame:
    """One row per run: target_reached, epochs_to_target, time_to_target_s."""
    rows = []
    for (workload, bs, device, seed), run in curves.groupby(RUN_KEY, sort=True):
        run = run.sort_values("epoch")
        reached, epochs, seconds = time_to_target(run.epoch_s, run.val_accuracy, target)
        rows.append(
            {
                "workload": workload,
                "device": device,
                "batch_size": bs,
                "seed": seed,
                "target_reached": reached,
                "epochs_to_target": epochs,
                "time_to_target_s": seconds,
            }
        )
    return pd.DataFrame(rows)


def censored_message(runs: pd.DataFrame, who: str, target: float, epochs: int) -> str:
    missed = int((~runs.target_reached).sum())
    return (
        f"{missed} of {len(runs)} runs of {who} did not reach {percent(target)} in {epochs} epochs: "
        "add epochs or lower target_accuracy"
    )


def _censored(target: float, epochs: int):
    """Why two groups of runs have no time-to-target ratio, if they have none."""

    def reason(base: pd.DataFrame, runs: pd.DataFrame) -> str | None:
        for who, group in (("the baseline", base), ("this device", runs)):
            if group.empty:
                return stats.NO_BASELINE
            if not group.target_reached.all():
                return censored_message(group, who, target, epochs)
        return None

    return reason


def _row(workload, bs, device, runs: pd.DataFrame, r: stats.Ratio) -> dict:
    reached = runs[runs.target_reached]
    return {
        "workload": workload,
        "batch_size": bs,
        "device": device,
        "runs": len(runs),
        "runs_reached": len(reached),
        "time_to_target_s_mean": reached.time_to_target_s.mean() if runs.target_reached.all() else math.nan,
        "time_to_target_s_std": reached.time_to_target_s.std(ddof=1) if runs.target_reached.all() else math.nan,
        "epochs_to_target_mean": reached.epochs_to_target.mean() if runs.target_reached.all() else math.nan,
        "tta_speedup": r.estimate,
        "tta_speedup_ci_low": r.low,
        "tta_speedup_ci_high": r.high,
        "tta_ci_method": r.method_words,
        "tta_note": r.reason,
    }


def table(summary: pd.DataFrame, runs: pd.DataFrame, baseline: str, target: float, prices: dict | None = None):
    """Per workload, batch size and device: runs that reached the target,
    mean/SD of time to target, mean epochs to it, the speedup over the
    baseline at the same workload and batch size, and each device's best
    batch size (per workload) marked."""
    prices = prices or {}
    info = summary[[*RUN_KEY, "machine_key", "origin", "device_label", "epochs"]]
    runs = runs.merge(info, on=RUN_KEY)
    out = []
    for (workload, bs), at_bs in runs.groupby(SETTING, sort=True):
        base = at_bs[at_bs.device == baseline]
        for device, group in at_bs.groupby("device", sort=True):
            itself = device == baseline
            r = compare.compare(
                group if itself else base,
                group,
                "time_to_target_s",
                baseline_itself=itself,
                refuse=_censored(target, int(group.epochs.iloc[0])),
            )
            row = _row(workload, bs, device, group, r)
            base_price = prices.get(base.device_label.iloc[0]) if len(base) else None
            row |= compare.cost(
                row["time_to_target_s_mean"], r, prices.get(group.device_label.iloc[0]), base_price, "cost_to_target"
            )
            out.append(row)
    df = pd.DataFrame(out)
    df["best_batch_size"] = False
    for _, rows in df.groupby(["workload", "device"]):
        finite = rows.dropna(subset=["time_to_target_s_mean"])
        if not finite.empty:
            df.loc[finite.time_to_target_s_mean.idxmin(), "best_batch_size"] = True
    return df


def best_against_best(table_df: pd.DataFrame, runs: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Per workload, each device at its own best batch size against the
    baseline at its own best batch size (unpaired: the batch sizes differ)."""
    out = []
    for workload, rows in table_df.groupby("workload", sort=True):
        out += _best_of_workload(rows, runs[runs.workload == workload], baseline)
    return pd.DataFrame(out)


def _best_of_workload(table_df: pd.DataFrame, runs: pd.DataFrame, baseline: str) -> list[dict]:
    best = table_df[table_df.best_batch_size].set_index("device")
    if baseline not in best.index:
        return []
    base_bs = best.loc[baseline, "batch_size"]
    base_runs = runs[(runs.device == baseline) & (runs.batch_size == base_bs)]
    out = []
    for device, row in best.iterrows():
        if device == baseline:
            continue
        dev_runs = runs[(runs.device == device) & (runs.batch_size == row.batch_size)]
        r = compare.compare(base_runs, dev_runs, "time_to_target_s", paired=False)
        out.append(
            {
                "workload": row.workload,
                "device": device,
                "device_batch_size": row.batch_size,
                "baseline_batch_size": base_bs,
                "time_to_target_s_mean": row.time_to_target_s_mean,
                "baseline_time_to_target_s_mean": best.loc[baseline, "time_to_target_s_mean"],
                "tta_speedup": r.estimate,
                "tta_speedup_ci_low": r.low,
                "tta_speedup_ci_high": r.high,
                "tta_ci_method": r.method_words,
                "tta_note": r.reason,
            }
        )
    return out


def mean_curves(curves: pd.DataFrame) -> pd.DataFrame:
    """Per workload, device, batch size and epoch: mean cumulative time and
    the mean validation accuracy with its 95% t-interval over seeds."""
    rows = []
    for (workload, device, bs, epoch), g in curves.groupby(["workload", "device", "batch_size", "epoch"], sort=True):
        lo, hi = stats.mean_ci(g.val_accuracy)
        rows.append(
            {
                "workload": workload,
                "device": device,
                "batch_size": bs,
                "epoch": epoch,
                "cumulative_s": g.cumulative_s.mean(),
                "val_accuracy": g.val_accuracy.mean(),
                "ci_low": lo,
                "ci_high": hi,
                "n": len(g),
            }
        )
    out = pd.DataFrame(rows)
    if not out.empty:
        out["ci_low"] = np.where(out.ci_low.isna(), out.val_accuracy, out.ci_low)
        out["ci_high"] = np.where(out.ci_high.isna(), out.val_accuracy, out.ci_high)
    return out
