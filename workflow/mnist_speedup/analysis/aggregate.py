"""Merge run records (from this machine and others) into tidy tables."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from mnist_speedup.analysis import bootstrap, compare, stats, summary
from mnist_speedup.analysis.checks import same_text
from mnist_speedup.records import attempts, calibration
from mnist_speedup.records import run_record as records
from mnist_speedup.spec import devices, run
from mnist_speedup.spec.run import RUN_KEY, SETTING


def epoch_rows(record: dict, device_label: str) -> list[dict]:
    """One row per epoch: the convergence curve of one run."""
    elapsed = np.cumsum(record["timing"]["epoch_s"])
    return [
        {
            "workload": record["workload"],
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
        }
        for i, (s, c, acc, loss) in enumerate(
            zip(
                record["timing"]["epoch_s"],
                elapsed,
                record["quality"]["epoch_val_accuracy"],
                record["quality"].get("epoch_val_loss") or [math.nan] * record["epochs"],
            )
        )
    ]


def load_calibration(paths) -> tuple[pd.DataFrame, list]:
    """One row per (host, device label, workload, batch size) with the
    calibrated rate, and the checked records with their paths."""
    loaded = [(calibration.load(path), path) for path in paths]
    rows = [row for data, path in loaded for row in calibration.rows(data, path)]
    columns = [
        "host",
        "device_label",
        *CALIBRATION_KEY[2:],
        "calibrated_flops_per_s",
        "numpy_flops_per_s",
        "square_flops_per_s",
        "calibration_started_at",
        "calibration_finished_at",
    ]
    return pd.DataFrame(rows, columns=columns).drop_duplicates(CALIBRATION_KEY, keep="last"), loaded


def _check_calibrations(df: pd.DataFrame, loaded) -> None:
    """Each calibration is of the device and network that its runs trained."""
    for data, path in loaded:
        runs = df[
            (df.host == data["environment"]["hostname"])
            & (df.device_label == data["device"])
            & (df.workload == data["workload"])
        ]
        if runs.empty:
            continue
        run_row = runs.iloc[0]
        differ = devices.first_difference(devices.checked_spec(data["device_spec"]), json.loads(run_row.device_spec))
        if differ:
            key, have, ran = differ
            raise calibration.refuse_mismatch(data, path, f"device_spec.{key}", have, ran, run_row.path)
        spec = json.dumps(data["workload_spec"], sort_keys=True)
        if spec != run_row.workload_spec:
            raise calibration.refuse_mismatch(data, path, "workload_spec", spec, run_row.workload_spec, run_row.path)


#: what one calibrated rate belongs to
CALIBRATION_KEY = ["host", "device_label", "workload", "batch_size"]


def _read_all(local_files, extra_dirs, n_cut: int):
    """Every record, local and imported (``n_cut``: how many local runs the time budget cut)."""
    runs = [(records.load(p), p, "local") for p in local_files]
    for folder in extra_dirs:
        runs += [(records.load(p), p, str(folder)) for p in run.run_files(folder)]
    if not runs:
        why = f" (the time budget cut all {n_cut} runs; give it more seconds)" if n_cut else ""
        raise records.RecordError(f"no run records to aggregate{why}")
    return runs


def cut_runs(cut: list[dict]) -> pd.DataFrame:
    """The runs this machine's time budget cut (their attempts): one row each, in run order (maybe none)."""
    columns = [*RUN_KEY, *attempts.CUT_FIELDS]
    return pd.DataFrame(attempts.rows(cut), columns=columns)


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


def load_runs(local_files, extra_dirs=(), calibration_files=(), n_cut=0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read and check every record (``local_files``: this machine's records; ``n_cut``: how many of its
    runs the time budget cut); label devices uniquely across machines; attach each device's calibrated
    matrix-multiply rate. Returns the summary (one row per run) and the per-epoch curves."""
    runs = _read_all(local_files, extra_dirs, n_cut)
    df = pd.DataFrame([summary.summary_row(r, p, origin) for r, p, origin in runs])
    df["machine_key"] = [m if isinstance(m, str) and m else h for m, h in zip(df.machine_id, df.host)]
    rates, loaded = load_calibration(list(calibration_files) + [f for d in extra_dirs for f in calibration.files(d)])
    _check_calibrations(df, loaded)
    df = df.merge(rates, on=CALIBRATION_KEY, how="left")
    df["fraction_of_calibrated"] = df.achieved_flops_per_s / df.calibrated_flops_per_s
    df.insert(0, "device", _device_names(df))
    _refuse_duplicates(df)
    names = dict(zip(df.path, df.device))
    curves = pd.DataFrame([row | {"device": names[str(p)]} for r, p, _ in runs for row in epoch_rows(r, r["device"])])
    order = [*SETTING, "device", "seed"]
    return df.sort_values(order).reset_index(drop=True), curves.sort_values([*order, "epoch"]).reset_index(drop=True)


def _refuse_duplicates(df: pd.DataFrame) -> None:
    dupes = df[df.duplicated(RUN_KEY, keep=False)]
    if dupes.empty:
        return
    paths = ", ".join(sorted(set(dupes.path)))
    if dupes.groupby(RUN_KEY).record_sha256.nunique().max() == 1:
        raise records.RecordError(
            f"the same run record appears more than once: {paths}. Fix: remove the duplicate copies from extra_runs."
        )
    raise records.RecordError(
        "two different runs have the same workload, device label, hostname, machine id, batch size and seed: "
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


# ------------------------------------------------------------ like with like


def check_like_with_like(df: pd.DataFrame, baseline: str) -> None:
    """Every run must share the baseline's hyperparameters, and every run of
    a workload its spec; otherwise no speedup means anything. Raises a
    RecordError naming the runs."""
    base = df[df.device == baseline].iloc[0]
    for field in run.COMPARED:
        _same(df, base, field, f"baseline {baseline}")
    for _, runs in df.groupby("workload", sort=True):
        _same(runs, runs.iloc[0], "workload_spec", f"workload {runs.workload.iloc[0]}")


def check_against_config(df: pd.DataFrame, device_specs: dict, workload_specs: dict) -> None:
    """A local record must have run its device and workload as the config
    specifies them (a record edited and resealed, or left by another config,
    is refused); the runs of one imported device must agree with each other.
    Specs are compared as dicts (spec/devices.py's checked_spec), never as table cells."""
    local = df[df.origin == "local"]
    for _, row in local[local.device_label.isin(list(device_specs))].iterrows():
        differ = devices.first_difference(
            json.loads(row.device_spec), devices.checked_spec(device_specs[row.device_label])
        )
        if differ:
            key, found, wanted = differ
            _disagree(row.path, f"device_spec.{key}", found, wanted, f"device {row.device_label}")
        want = workload_specs.get(row.workload)
        if want is not None and row.workload_spec != json.dumps(want, sort_keys=True):
            _disagree(
                row.path,
                "workload_spec",
                row.workload_spec,
                json.dumps(want, sort_keys=True),
                f"workload {row.workload}",
            )
    for device, runs in df[df.origin != "local"].groupby("device", sort=True):
        first = runs.iloc[0]
        for _, other in runs.iterrows():
            differ = devices.first_difference(json.loads(other.device_spec), json.loads(first.device_spec))
            if differ:
                key, found, wanted = differ
                raise records.RecordError(
                    f"{other.path}: `device_spec.{key}` is {found!r} but {wanted!r} in {first.path}: the runs of "
                    f"imported device {device} differ among themselves. Fix: remove the runs that do not belong to "
                    "that device from its extra_runs folder, or ask for a fresh bundle."
                )


def _disagree(path, field: str, found, wanted, what: str) -> None:
    raise records.RecordError(
        f"{path}: `{field}` is {found!r} but the config's {what} says {wanted!r} (a record edited, or made by "
        "another config). Fix: delete it and run snakemake again to redo that run with this config, or restore the "
        "config that made it."
    )


def _same(df: pd.DataFrame, base: pd.Series, field: str, what: str) -> None:
    differ = df[df[field].map(same_text) != same_text(base[field])]
    if not differ.empty:
        other = differ.iloc[0]
        raise records.RecordError(
            f"runs with different hyperparameters cannot be compared: `{field}` is {base[field]!r} in "
            f"{base.path} ({what}) but {other[field]!r} in {other.path}"
            + (f" and {len(differ) - 1} more" if len(differ) > 1 else "")
            + ". Fix: rerun those runs with the same configuration, or remove them from extra_runs."
        )


# ------------------------------------------------------------ speedup


def _time_stats(runs: pd.DataFrame, bs: int) -> dict:
    flops_per_step = runs.flops_per_step.iloc[0]
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
        "flops_per_step": flops_per_step,
        "achieved_flops_per_s": flops_per_step * (samples / bs) / t.mean(),
        "calibrated_flops_per_s": runs.calibrated_flops_per_s.mean(),
        "numpy_flops_per_s": runs.numpy_flops_per_s.mean(),
        "threads": runs.threads.iloc[0],
        "device_words": runs.device_words.iloc[0],
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


def _no_energy(base: pd.DataFrame, runs: pd.DataFrame) -> str | None:
    if base.empty or base.energy_j_per_epoch.isna().any() or runs.energy_j_per_epoch.isna().any():
        return "no energy counter on both"
    return None


def speedup_row(
    bs: int,
    device: str,
    runs: pd.DataFrame,
    base: pd.DataFrame,
    baseline: str,
    prices: dict,
    level: float = stats.CI_LEVEL,
) -> dict:
    row = {
        "workload": runs.workload.iloc[0],
        "workload_words": runs.workload_words.iloc[0],
        "batch_size": bs,
        "device": device,
        "device_type": runs.device_type.iloc[0],
        "host": runs.host.iloc[0],
        "baseline": baseline,
    } | _time_stats(runs, bs)
    row["baseline_n"] = len(base)
    row["baseline_epoch_s_mean"] = base.steady_epoch_mean_s.mean() if len(base) else math.nan
    row["fraction_of_calibrated"] = row["achieved_flops_per_s"] / row["calibrated_flops_per_s"]
    # the throughput this device would reach if a step ran at its calibrated rate
    row["bound_samples_per_s"] = row["calibrated_flops_per_s"] / (row["flops_per_step"] / bs)
    itself = device == baseline
    r = compare.compare(base, runs, "steady_epoch_mean_s", baseline_itself=itself, level=level)
    energy = compare.compare(
        runs if itself else base, runs, "energy_j_per_epoch", baseline_itself=itself, refuse=_no_energy
    )
    row |= compare.columns("speedup", r) | compare.columns("energy_ratio", energy)
    row["ci_method"] = r.method_words  # the speedup's, as speedup_ci_method (kept for readers of older tables)
    row["ci_level"] = r.level
    row |= _bootstrap(base, runs, r, itself, level)
    row["few_runs_note"] = (
        "a 2-run interval uses t with 1 degree of freedom and is very wide"
        if device != baseline and min(len(runs), max(len(base), 2)) == 2
        else None
    )
    cv_base = stats.cv(base.steady_epoch_mean_s) if len(base) else math.nan
    row["seeds_for_5pct_ci"] = math.nan if device == baseline else stats.seeds_needed(cv_base, row["cv_seeds"])
    price, base_price = prices.get(runs.device_label.iloc[0]), prices.get(baseline_label(base))
    row["price_per_hour"] = price
    row |= compare.cost(row["epoch_s_mean"], r, price, base_price, "cost_per_epoch")
    return row


def _bootstrap(base: pd.DataFrame, runs: pd.DataFrame, r, itself: bool, level: float) -> dict:
    """The speedup's second interval (analysis/bootstrap.py) and whether it disagrees with Fieller's."""
    if itself:
        return {
            "bootstrap_ci_low": math.nan,
            "bootstrap_ci_high": math.nan,
            "bootstrap_note": None,
            "intervals_disagree": False,
        }
    low, high, note = bootstrap.interval(base, runs, "steady_epoch_mean_s", level)
    apart = bootstrap.disagree(r.estimate, (r.low, r.high), (low, high))
    return {"bootstrap_ci_low": low, "bootstrap_ci_high": high, "bootstrap_note": note, "intervals_disagree": apart}


def baseline_label(base: pd.DataFrame) -> str | None:
    return base.device_label.iloc[0] if len(base) else None


def speedup_table(df: pd.DataFrame, baseline: str, prices: dict | None = None, level: float = stats.CI_LEVEL):
    """Per workload, batch size and device: epoch-time statistics and the
    speedup over ``baseline`` with Fieller's interval (paired where the runs
    were interleaved in blocks), at 95% unless ``level`` says otherwise."""
    out = []
    for (_, bs), at_bs in df.groupby(SETTING, sort=True):
        base = at_bs[at_bs.device == baseline]
        for device, runs in at_bs.groupby("device", sort=True):
            out.append(speedup_row(bs, device, runs, base, baseline, prices or {}, level))
    return pd.DataFrame(out)
