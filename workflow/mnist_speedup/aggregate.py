"""Merge run records (from this machine and others) into tidy tables."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from . import model, records, stats, tta

CV_WARN = 0.05  # coefficient of variation above which a machine is called noisy
ACCURACY_TOLERANCE = 0.01  # 1 percentage point

#: what must be equal for two runs to be compared at all
HYPERPARAMETERS = (
    "epochs",
    "warmup_epochs",
    "learning_rate",
    "adam",
    "input_pipeline",
    "deterministic",
    "train_samples",
    "steps_per_call",
    "data_digest",
)
#: what may differ, with a warning: part of a speedup may be the software
SOFTWARE = ("tensorflow", "tensorlayer", "keras", "numpy", "python", "training_code")


def _energy_per_epoch(record: dict):
    return (record.get("energy") or {}).get("joules_per_epoch")


def summary_row(record: dict, path, origin: str) -> dict:
    t, q, f, env = record["timing"], record["quality"], record["flops"], record["environment"]
    spec, loop = record["device_spec"], record["loop"]
    steady = t["epoch_s"][record["warmup_epochs"] :]
    overhead = record.get("host_overhead") or {}
    per_call = overhead.get("per_call_s")
    return {
        "host": env["hostname"],
        "machine_id": env.get("machine_id"),
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
        "adam": json.dumps(record.get("adam"), sort_keys=True),
        "train_samples": record.get("train_samples"),
        "steps_per_call": record.get("steps_per_call"),  # the setting: an integer or `epoch`
        "steps_per_call_effective": loop["steps_per_call"],
        "calls_per_epoch": loop["calls_per_epoch"],
        "loop": loop.get("description"),
        "first_epoch_s": t["first_epoch_s"],
        "steady_epoch_mean_s": t["steady_epoch_mean_s"],
        "steady_epoch_std_s": t.get("steady_epoch_std_s"),
        "epoch_cv": stats.cv(steady),
        "samples_per_s": t["samples_per_s"],
        "step_ms_median": t.get("step_ms_median"),
        "host_overhead_per_call_s": per_call,
        "host_share_of_one_call_step": overhead.get("share_of_one_call_step"),
        "host_share_of_timed_epoch": (
            per_call * loop["calls_per_epoch"] / t["steady_epoch_mean_s"] if per_call is not None else None
        ),
        "achieved_flops_per_s": f["achieved_per_s"],
        "probe_flops_per_s": (record.get("device_rate_probe") or {}).get("flops_per_s_median"),
        "host_peak_rss_bytes": record["memory"].get("host_peak_rss_bytes"),
        "gpu_peak_bytes": record["memory"].get("gpu_peak_bytes"),
        "energy_j_per_epoch": _energy_per_epoch(record),
        "mean_watts": record["energy"].get("mean_watts"),
        "energy_source": record["energy"].get("source"),
        "energy_reason": record["energy"].get("reason"),
        "final_train_loss": q["final_train_loss"],
        "val_accuracy": q["val_accuracy"],
        "test_accuracy": q["test_accuracy"],
        "tensorflow": env.get("tensorflow"),
        "tensorlayer": env.get("tensorlayer"),
        "keras": env.get("keras"),
        "numpy": env.get("numpy"),
        "python": env.get("python"),
        "training_code": record.get("training_code"),
        "data_digest": record.get("data_digest"),
        "started_at": record.get("started_at"),
        "finished_at": record.get("finished_at"),
        "origin": origin,
        "path": str(path),
        "record_sha256": record.get(records.DIGEST_FIELD),
    }


def epoch_rows(record: dict, device_label: str) -> list[dict]:
    """One row per epoch: the convergence curve of one run."""
    elapsed = np.cumsum(record["timing"]["epoch_s"])
    return [
        {
            "device_label": device_label,
            "host": record["environment"]["hostname"],
            "machine_id": record["environment"].get("machine_id"),
            "batch_size": record["batch_size"],
            "seed": record["seed"],
            "epoch": i + 1,
            "epoch_s": s,
            "cumulative_s": float(c),
            "val_accuracy": acc,
            "val_loss": loss,
        }  # fmt: skip
        for i, (s, c, acc, loss) in enumerate(
            zip(
                record["timing"]["epoch_s"],
                elapsed,
                record["quality"]["epoch_val_accuracy"],
                record["quality"].get("epoch_val_loss") or [math.nan] * record["epochs"],
            )
        )
    ]


def load_calibration(paths) -> pd.DataFrame:
    """One row per (host, device label, batch size) with the calibrated rate."""
    rows = []
    for path in paths:
        try:
            data = records.parse(Path(path).read_text(encoding="utf-8"))
            records.check_digest(data, str(path))
            records.check_names(data, str(path))
            for bs, result in data["mlp_shapes"].items():
                if not all(
                    math.isfinite(v) and v > 0
                    for v in (float(result["flops_per_s_median"]), float(data["square"]["flops_per_s_median"]))
                ):
                    raise ValueError(f"a rate at batch size {bs} is not a finite positive number")
                rows.append(
                    {
                        "host": data["environment"]["hostname"],
                        "device_label": data["device"],
                        "batch_size": int(bs),
                        "calibrated_flops_per_s": float(result["flops_per_s_median"]),
                        "numpy_flops_per_s": float((result.get("numpy") or {}).get("flops_per_s_median", math.nan)),
                        "square_flops_per_s": float(data["square"]["flops_per_s_median"]),
                        "calibration_started_at": data.get("started_at"),
                        "calibration_finished_at": data.get("finished_at"),
                    }
                )
        except records.RecordError:
            raise
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise records.RecordError(
                f"{path}: not a readable calibration record ({type(exc).__name__}: {exc}). "
                "Fix: delete it and run snakemake again."
            ) from None
    columns = ["host", "device_label", "batch_size", "calibrated_flops_per_s", "numpy_flops_per_s", "square_flops_per_s",
               "calibration_started_at", "calibration_finished_at"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns).drop_duplicates(["host", "device_label", "batch_size"], keep="last")


def _read_all(local_files, extra_dirs):
    runs = [(records.load(p), p, "local") for p in local_files]
    for folder in extra_dirs:
        runs += [(records.load(p), p, str(folder)) for p in records.run_files(folder)]
    if not runs:
        raise records.RecordError("no run records to aggregate")
    return runs


def _device_names(df: pd.DataFrame) -> list[str]:
    """``label``, or ``label@host`` where a label exists on several
    machines (``label@host-<id>`` where their hostnames collide too)."""
    machines = df.groupby("device_label")["machine_key"].nunique()
    shared = set(machines[machines > 1].index)
    ids_per_host = df.groupby("host")["machine_key"].nunique()
    names = []
    for lab, host, key in zip(df.device_label, df.host, df.machine_key):
        if lab not in shared:
            names.append(lab)
        elif ids_per_host[host] > 1:
            names.append(f"{lab}@{host}-{key[:6]}")
        else:
            names.append(f"{lab}@{host}")
    return names


def load_runs(local_files, extra_dirs=(), calibration_files=()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read and check every record; label devices uniquely across machines;
    attach each device's calibrated matrix-multiply rate. Returns the
    summary (one row per run) and the per-epoch curves."""
    runs = _read_all(local_files, extra_dirs)
    df = pd.DataFrame([summary_row(r, p, origin) for r, p, origin in runs])
    df["machine_key"] = [m if isinstance(m, str) and m else h for m, h in zip(df.machine_id, df.host)]
    calibration = list(calibration_files) + [f for d in extra_dirs for f in records.calibration_files(d)]
    df = df.merge(load_calibration(calibration), on=["host", "device_label", "batch_size"], how="left")
    df["fraction_of_calibrated"] = df.achieved_flops_per_s / df.calibrated_flops_per_s
    df.insert(0, "device", _device_names(df))
    _refuse_duplicates(df)
    names = dict(zip(df.path, df.device))
    curves = pd.DataFrame([row | {"device": names[str(p)]} for r, p, _ in runs for row in epoch_rows(r, r["device"])])
    order = ["batch_size", "device", "seed"]
    return df.sort_values(order).reset_index(drop=True), curves.sort_values([*order, "epoch"]).reset_index(drop=True)


def _refuse_duplicates(df: pd.DataFrame) -> None:
    dupes = df[df.duplicated(["device", "batch_size", "seed"], keep=False)]
    if dupes.empty:
        return
    paths = ", ".join(sorted(set(dupes.path)))
    if dupes.groupby(["device", "batch_size", "seed"]).record_sha256.nunique().max() == 1:
        raise records.RecordError(
            f"the same run record appears more than once: {paths}. Fix: remove the duplicate copies from extra_runs."
        )
    raise records.RecordError(
        "two different runs have the same device label, hostname, machine id, batch size and seed: "
        f"{paths}. They are not copies (their content differs): either two machines share a hostname "
        "and machine id (a cloned VM image?) or one machine ran the same run twice into different "
        "folders. Fix: keep the folder you mean to compare, or rename the device on one machine."
    )


def baseline_device(df: pd.DataFrame, baseline_label: str) -> str:
    """The summary's device name of the configured baseline (qualified by
    this machine's host if other machines share the label)."""
    local = df[(df.device_label == baseline_label) & (df.origin == "local")]
    if local.empty:
        local = df[df.device_label == baseline_label]
    if local.empty:
        raise records.RecordError(f"no runs of the baseline device {baseline_label!r}")
    return local.device.iloc[0]


def device_labels(df: pd.DataFrame) -> dict[str, str]:
    """Each device with what it is: ``cpu (2 threads)``, ``gpu (NVIDIA H100)``."""
    out = {}
    for device, runs in df.groupby("device"):
        r = runs.iloc[0]
        if r.device_type == "cpu":
            what = _threads(r.threads) if pd.notna(r.threads) else "? threads"
        else:
            what = r.gpu_name if isinstance(r.gpu_name, str) and r.gpu_name else f"GPU {r.gpu_index}"
        out[device] = f"{device} ({what})"
    return out


# ------------------------------------------------------------ like with like


def _same_text(value) -> str:
    """A value as text for comparison: None and NaN are the same 'null'."""
    return "null" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def check_like_with_like(df: pd.DataFrame, baseline: str) -> None:
    """Every run must share the baseline's hyperparameters; otherwise no
    speedup means anything. Raises a RecordError naming the runs."""
    base = df[df.device == baseline].iloc[0]
    for field in HYPERPARAMETERS:
        differ = df[df[field].map(_same_text) != _same_text(base[field])]
        if not differ.empty:
            other = differ.iloc[0]
            raise records.RecordError(
                f"runs with different hyperparameters cannot be compared: `{field}` is {base[field]!r} in "
                f"{base.path} (baseline {baseline}) but {other[field]!r} in {other.path}"
                + (f" and {len(differ) - 1} more" if len(differ) > 1 else "")
                + ". Fix: rerun those runs with the same configuration, or remove them from extra_runs."
            )


def software_differences(df: pd.DataFrame, baseline: str) -> list[str]:
    """Warnings for devices whose software differs from the baseline's."""
    base = df[df.device == baseline].iloc[0]
    out = []
    for device, runs in df.groupby("device", sort=True):
        first = runs.iloc[0]
        for field in SOFTWARE:
            if _same_text(first[field]) != _same_text(base[field]):
                name = "the training code" if field == "training_code" else field
                out.append(
                    f"{baseline} ran {name} {base[field]}, {device} {first[field]}: "
                    "part of the speedup may be the software"
                )
    return out


# ------------------------------------------------------------ speedup


def paired_design(base: pd.DataFrame, runs: pd.DataFrame) -> bool:
    """Both devices ran in the same complete blocks: the same machine,
    the same seeds at this batch size, interleaved in one workflow."""
    if base.empty or len(base) < 2:
        return False
    same_machine = set(base.machine_key) == set(runs.machine_key) and base.machine_key.nunique() == 1
    same_origin = base.origin.nunique() == 1 and set(base.origin) == set(runs.origin)
    return same_machine and same_origin and sorted(base.seed) == sorted(runs.seed)


def ratio(base: pd.DataFrame, runs: pd.DataFrame, column: str, paired: bool) -> stats.Ratio:
    """Baseline over device of the means of ``column``, paired by seed
    where the design allows it."""
    if base.empty:
        return stats.Ratio(math.nan, math.nan, math.nan, math.nan, stats.CI_METHOD, stats.NO_BASELINE)
    if paired:
        a = base.sort_values("seed")[column].to_numpy()
        b = runs.sort_values("seed")[column].to_numpy()
        return stats.paired_fieller_ratio(a, b)
    return stats.fieller_ratio(base[column].to_numpy(), runs[column].to_numpy())


def _time_stats(runs: pd.DataFrame, bs: int) -> dict:
    t = runs.steady_epoch_mean_s.to_numpy()
    samples = runs.samples_per_epoch.iloc[0]
    lo, hi = stats.mean_ci(t)
    return {
        "n": len(t),
        "epoch_s_mean": t.mean(),
        "epoch_s_std": t.std(ddof=1) if len(t) > 1 else math.nan,
        "cv_seeds": stats.cv(t),
        "cv_epochs": runs.epoch_cv.mean(),
        # one estimator everywhere: samples per epoch over the mean epoch time
        "samples_per_s": samples / t.mean(),
        "samples_per_s_ci_low": samples / hi if math.isfinite(hi) else math.nan,
        "samples_per_s_ci_high": samples / lo if math.isfinite(lo) and lo > 0 else math.nan,
        "achieved_flops_per_s": model.training_step_flops(bs) * (samples / bs) / t.mean(),
        "calibrated_flops_per_s": runs.calibrated_flops_per_s.mean(),
        "numpy_flops_per_s": runs.numpy_flops_per_s.mean(),
        "threads": runs.threads.iloc[0],
        "machine_key": runs.machine_key.iloc[0],
        "test_accuracy_mean": runs.test_accuracy.mean(),
        "steps_per_call": runs.steps_per_call_effective.iloc[0],
        "calls_per_epoch": runs.calls_per_epoch.iloc[0],
        "host_share_of_one_call_step": runs.host_share_of_one_call_step.mean(),
        "host_share_of_timed_epoch": runs.host_share_of_timed_epoch.mean(),
        "host_peak_rss_bytes": runs.host_peak_rss_bytes.max(),
        "gpu_peak_bytes": runs.gpu_peak_bytes.max(),
        "energy_j_per_epoch": runs.energy_j_per_epoch.mean(),
        "mean_watts": runs.mean_watts.mean(),
        "energy_reason": runs.energy_reason.dropna().iloc[0] if runs.energy_reason.notna().any() else None,
    }


def _ratio_columns(prefix: str, r: stats.Ratio) -> dict:
    return {prefix: r.estimate, f"{prefix}_ci_low": r.low, f"{prefix}_ci_high": r.high,
            f"{prefix}_ci_method": r.method, f"{prefix}_ci_note": r.reason}  # fmt: skip


def _energy_ratio(base: pd.DataFrame, runs: pd.DataFrame, paired: bool) -> stats.Ratio:
    if base.empty or base.energy_j_per_epoch.isna().any() or runs.energy_j_per_epoch.isna().any():
        return stats.Ratio(math.nan, math.nan, math.nan, math.nan, stats.CI_METHOD, "no energy counter on both")
    return ratio(base, runs, "energy_j_per_epoch", paired)


def speedup_row(bs: int, device: str, runs: pd.DataFrame, base: pd.DataFrame, baseline: str, prices: dict) -> dict:
    row = {"batch_size": bs, "device": device, "device_type": runs.device_type.iloc[0], "host": runs.host.iloc[0],
           "baseline": baseline} | _time_stats(runs, bs)  # fmt: skip
    row["baseline_n"] = len(base)
    row["baseline_epoch_s_mean"] = base.steady_epoch_mean_s.mean() if len(base) else math.nan
    row["fraction_of_calibrated"] = row["achieved_flops_per_s"] / row["calibrated_flops_per_s"]
    # the throughput this device would reach if a step ran at its calibrated rate
    row["bound_samples_per_s"] = row["calibrated_flops_per_s"] / (model.training_step_flops(bs) / bs)
    paired = device != baseline and paired_design(base, runs)
    if device == baseline:
        r = stats.Ratio(1.0, 1.0, 1.0, math.inf, "the baseline itself")
        energy = _energy_ratio(runs, runs, False) if runs.energy_j_per_epoch.isna().any() else r
    else:
        r = ratio(base, runs, "steady_epoch_mean_s", paired)
        energy = _energy_ratio(base, runs, paired)
    row |= _ratio_columns("speedup", r) | _ratio_columns("energy_ratio", energy)
    row["ci_method"] = r.method
    row["few_runs_note"] = (
        "a 2-run interval uses t with 1 degree of freedom and is very wide"
        if device != baseline and min(len(runs), max(len(base), 2)) == 2
        else None
    )
    cv_base = stats.cv(base.steady_epoch_mean_s) if len(base) else math.nan
    row["seeds_for_5pct_ci"] = math.nan if device == baseline else stats.seeds_needed(cv_base, row["cv_seeds"])
    price, base_price = prices.get(runs.device_label.iloc[0]), prices.get(baseline_label(base))
    row["price_per_hour"] = price
    row |= tta.cost(row["epoch_s_mean"], r, price, base_price, "cost_per_epoch")
    return row


def _threads(n) -> str:
    return f"{int(n)} thread{'s' if int(n) != 1 else ''}"


def efficiency_flags(speedup: pd.DataFrame) -> list[str]:
    """Efficiency rows that cannot be right: a run above its device's
    calibrated rate, or a device whose calibrated rate is below that of a
    device with fewer threads on the same machine."""
    out, fix = [], "the calibration was disturbed (another process?) or the bound does not hold"
    for _, r in speedup[speedup.fraction_of_calibrated > 1].iterrows():
        out.append(f"{r.device} at batch size {r.batch_size} ran at {r.fraction_of_calibrated:.1%} of its calibrated "
                   f"rate: {fix}.")  # fmt: skip
    cpus = speedup[(speedup.device_type == "cpu") & speedup.calibrated_flops_per_s.notna()]
    for (_, bs), group in cpus.groupby(["machine_key", "batch_size"]):
        for _, more in group.iterrows():
            fewer = group[(group.threads < more.threads) & (group.calibrated_flops_per_s > more.calibrated_flops_per_s)]
            for _, less in fewer.iterrows():
                out.append(
                    f"{more.device} ({_threads(more.threads)}) calibrated at {more.calibrated_flops_per_s / 1e9:.1f} "
                    f"GFLOP/s at batch size {bs}, below {less.device} ({_threads(less.threads)}) at "
                    f"{less.calibrated_flops_per_s / 1e9:.1f}: {fix}."
                )
    return out


def baseline_label(base: pd.DataFrame) -> str | None:
    return base.device_label.iloc[0] if len(base) else None


def speedup_table(df: pd.DataFrame, baseline: str, prices: dict | None = None) -> pd.DataFrame:
    """Per batch size and device: epoch-time statistics and the speedup
    over ``baseline`` with Fieller's 95% interval (paired where the runs
    were interleaved in blocks)."""
    out = []
    for bs, at_bs in df.groupby("batch_size", sort=True):
        base = at_bs[at_bs.device == baseline]
        for device, runs in at_bs.groupby("device", sort=True):
            out.append(speedup_row(bs, device, runs, base, baseline, prices or {}))
    return pd.DataFrame(out)


def accuracy_flags(df: pd.DataFrame, baseline: str, tolerance: float = ACCURACY_TOLERANCE) -> pd.DataFrame:
    """Per seed and batch size, test accuracy of each device against the
    baseline's; ``flag`` marks differences above ``tolerance``."""
    base = df[df.device == baseline][["batch_size", "seed", "test_accuracy"]]
    merged = df.merge(base, on=["batch_size", "seed"], suffixes=("", "_baseline"))
    merged["difference"] = merged.test_accuracy - merged.test_accuracy_baseline
    merged["flag"] = merged.difference.abs() > tolerance
    return merged[["batch_size", "seed", "device", "test_accuracy", "test_accuracy_baseline", "difference", "flag"]]
