"""Merge run records (from this machine and others) into tidy tables."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from . import model, records, stats

CV_WARN = 0.05  # coefficient of variation above which a machine is called noisy
ACCURACY_TOLERANCE = 0.01  # 1 percentage point


def summary_row(record: dict, path, origin: str) -> dict:
    t, q, f, env = record["timing"], record["quality"], record["flops"], record["environment"]
    spec = record["device_spec"]
    steady = t["epoch_s"][record["warmup_epochs"] :]
    return {
        "host": env["hostname"],
        "device_label": record["device"],
        "device_type": spec["type"],
        "threads": spec.get("threads"),
        "gpu_index": spec.get("index"),
        "gpu_name": env.get("gpu_name"),
        "cpu_model": env.get("cpu_model"),
        "batch_size": record["batch_size"],
        "seed": record["seed"],
        "epochs": record["epochs"],
        "warmup_epochs": record["warmup_epochs"],
        "samples_per_epoch": record["samples_per_epoch"],
        "input_pipeline": record.get("input_pipeline"),
        "deterministic": record.get("deterministic"),
        "learning_rate": record.get("learning_rate"),
        "first_epoch_s": t["first_epoch_s"],
        "steady_epoch_mean_s": t["steady_epoch_mean_s"],
        "steady_epoch_std_s": t.get("steady_epoch_std_s"),
        "epoch_cv": stats.cv(steady),
        "samples_per_s": t["samples_per_s"],
        "step_ms_median": t.get("step_ms_median"),
        "achieved_flops_per_s": f["achieved_per_s"],
        "final_train_loss": q["final_train_loss"],
        "val_accuracy": q["val_accuracy"],
        "test_accuracy": q["test_accuracy"],
        "tensorflow": env.get("tensorflow"),
        "python": env.get("python"),
        "started_at": record.get("started_at"),
        "origin": origin,
        "path": str(path),
    }


def load_calibration(paths) -> pd.DataFrame:
    """One row per (host, device label, batch size) with the calibrated rate."""
    rows = []
    for path in paths:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            for bs, result in data["mlp_shapes"].items():
                rows.append(
                    {
                        "host": data["environment"]["hostname"],
                        "device_label": data["device"],
                        "batch_size": int(bs),
                        "calibrated_flops_per_s": float(result["flops_per_s_median"]),
                        "square_flops_per_s": float(data["square"]["flops_per_s_median"]),
                    }
                )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise records.RecordError(
                f"{path}: not a readable calibration record ({type(exc).__name__}: {exc}). "
                "Fix: delete it and run snakemake again."
            ) from None
    columns = ["host", "device_label", "batch_size", "calibrated_flops_per_s", "square_flops_per_s"]
    return pd.DataFrame(rows, columns=columns).drop_duplicates(["host", "device_label", "batch_size"], keep="last")


def load_runs(local_files, extra_dirs=(), calibration_files=()) -> pd.DataFrame:
    """Read and check every record; label devices uniquely across hosts;
    attach each device's calibrated matrix-multiply rate."""
    rows = [summary_row(records.load(p), p, "local") for p in local_files]
    calibration = list(calibration_files)
    for folder in extra_dirs:
        rows += [summary_row(records.load(p), p, str(folder)) for p in records.run_files(folder)]
        calibration += records.calibration_files(folder)
    if not rows:
        raise records.RecordError("no run records to aggregate")
    df = pd.DataFrame(rows)
    df = df.merge(load_calibration(calibration), on=["host", "device_label", "batch_size"], how="left")
    df["fraction_of_calibrated"] = df.achieved_flops_per_s / df.calibrated_flops_per_s
    hosts_per_label = df.groupby("device_label")["host"].nunique()
    shared = set(hosts_per_label[hosts_per_label > 1].index)
    df.insert(
        0,
        "device",
        [f"{lab}@{host}" if lab in shared else lab for lab, host in zip(df.device_label, df.host)],
    )
    dupes = df[df.duplicated(["device", "batch_size", "seed"], keep=False)]
    if not dupes.empty:
        raise records.RecordError(
            "the same device, batch size and seed appears more than once: "
            + ", ".join(sorted(set(dupes.path)))
            + ". Fix: remove the duplicate copies from extra_runs."
        )
    return df.sort_values(["batch_size", "device", "seed"]).reset_index(drop=True)


def baseline_device(df: pd.DataFrame, baseline_label: str) -> str:
    """The summary's device name of the configured baseline (qualified by
    this machine's host if other machines share the label)."""
    local = df[(df.device_label == baseline_label) & (df.origin == "local")]
    if local.empty:
        local = df[df.device_label == baseline_label]
    if local.empty:
        raise records.RecordError(f"no runs of the baseline device {baseline_label!r}")
    return local.device.iloc[0]


def speedup_table(df: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Per batch size and device: epoch-time statistics and the speedup
    over ``baseline`` with Fieller's 95% interval."""
    out = []
    for bs, at_bs in df.groupby("batch_size", sort=True):
        base = at_bs[at_bs.device == baseline].steady_epoch_mean_s.to_numpy()
        for device, runs in at_bs.groupby("device", sort=True):
            t = runs.steady_epoch_mean_s.to_numpy()
            row = {
                "batch_size": bs,
                "device": device,
                "device_type": runs.device_type.iloc[0],
                "host": runs.host.iloc[0],
                "baseline": baseline,
                "n": len(t),
                "epoch_s_mean": t.mean(),
                "epoch_s_std": t.std(ddof=1) if len(t) > 1 else math.nan,
                "cv_seeds": stats.cv(t),
                "cv_epochs": runs.epoch_cv.mean(),
                "samples_per_s_mean": runs.samples_per_s.mean(),
                "achieved_flops_per_s": runs.achieved_flops_per_s.mean(),
                "calibrated_flops_per_s": runs.calibrated_flops_per_s.mean(),
                "test_accuracy_mean": runs.test_accuracy.mean(),
                "baseline_n": len(base),
                "baseline_epoch_s_mean": base.mean() if len(base) else math.nan,
            }
            row["fraction_of_calibrated"] = row["achieved_flops_per_s"] / row["calibrated_flops_per_s"]
            # the throughput this device would reach if a step ran at its calibrated rate
            row["bound_samples_per_s"] = row["calibrated_flops_per_s"] / (model.training_step_flops(bs) / bs)
            if len(base) == 0:
                ratio = stats.Ratio(math.nan, math.nan, math.nan, math.nan)
            elif device == baseline:
                ratio = stats.Ratio(1.0, 1.0, 1.0, math.inf)
            else:
                ratio = stats.fieller_ratio(base, t)
            row.update(speedup=ratio.estimate, speedup_ci_low=ratio.low, speedup_ci_high=ratio.high)
            cv_base = stats.cv(base) if len(base) else math.nan
            row["seeds_for_5pct_ci"] = math.nan if device == baseline else stats.seeds_needed(cv_base, row["cv_seeds"])
            row["ci_method"] = stats.CI_METHOD
            out.append(row)
    return pd.DataFrame(out)


def accuracy_flags(df: pd.DataFrame, baseline: str, tolerance: float = ACCURACY_TOLERANCE) -> pd.DataFrame:
    """Per seed and batch size, test accuracy of each device against the
    baseline's; ``flag`` marks differences above ``tolerance``."""
    base = df[df.device == baseline][["batch_size", "seed", "test_accuracy"]]
    merged = df.merge(base, on=["batch_size", "seed"], suffixes=("", "_baseline"))
    merged["difference"] = merged.test_accuracy - merged.test_accuracy_baseline
    merged["flag"] = merged.difference.abs() > tolerance
    return merged[["batch_size", "seed", "device", "test_accuracy", "test_accuracy_baseline", "difference", "flag"]]
