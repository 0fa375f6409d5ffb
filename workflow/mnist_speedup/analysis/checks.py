"""Every check that warns, each with its threshold beside it.

Each check reads the aggregated tables and returns plain sentences (the
report escapes them once, where it writes them). :func:`warnings` runs
them all in the order the report lists them.
"""

from __future__ import annotations

import math

import pandas as pd

from mnist_speedup import words
from mnist_speedup.analysis import bootstrap
from mnist_speedup.analysis.summary import GPU_SOFTWARE
from mnist_speedup.spec import devices, frameworks, run

#: coefficient of variation above which a machine is called noisy
CV_WARN = 0.05
#: test accuracies further apart than this (1 percentage point) may not be the same model
ACCURACY_TOLERANCE = 0.01
#: share of the timed epoch spent in host dispatch above which the figure measures Python
HOST_OVERHEAD_WARN = 0.10
#: drift over the run is warned about above the larger of this and the seeds' CV
MIN_DRIFT_WARN = 0.03
#: a run whose steady epochs saw other processes use more than this many cores was disturbed
INTERFERENCE_WARN = 0.10
_DISTURBED = "the calibration was disturbed (another process?) or the bound does not hold"


def same_text(value) -> str:
    """A value as text for comparison: None and NaN are the same 'null'."""
    return "null" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _pct1(v: float) -> str:
    return "n/a" if not math.isfinite(v) else f"{v * 100:.1f}%"


def at(r, table: pd.DataFrame) -> str:
    """Where a row was measured, in words: ``at batch size 500``, or ``on
    workload cnn at batch size 500`` where ``table`` holds several workloads."""
    where = f"at batch size {r.batch_size}"
    return f"on workload {r.workload} {where}" if table.workload.nunique() > 1 else where


def no_accelerator(summary: pd.DataFrame, config: dict) -> list[str]:
    if not config.get("devices_auto") or any(devices.TYPES[t].platform.accelerator for t in set(summary.device_type)):
        return []
    why = config.get("no_gpu_reason") or "nvidia-smi lists none"
    return [
        f"No GPU was found on this machine (devices: auto: {why}), so this report compares CPU thread "
        "counts only; the speedups below are not GPU speedups."
    ]


def noisy(speedup: pd.DataFrame) -> list[str]:
    rows = speedup[(speedup.cv_seeds > CV_WARN) | (speedup.cv_epochs > CV_WARN)]
    return [
        f"Noisy timing: {r.device} {at(r, speedup)} has a CV of {_pct1(r.cv_seeds)} across seeds "
        f"and {_pct1(r.cv_epochs)} across steady-state epochs (above {CV_WARN:.0%}). Close other programs, "
        "pin the CPU frequency, or add seeds."
        for _, r in rows.iterrows()
    ]


def host_dispatch(speedup: pd.DataFrame) -> list[str]:
    rows = speedup[speedup.host_share_of_timed_epoch > HOST_OVERHEAD_WARN]
    return [
        f"On {r.device} {at(r, speedup)}, {r.host_share_of_timed_epoch:.0%} of each epoch is host "
        "dispatch: this figure measures the Python loop more than the device; use steps_per_call: epoch or a "
        "larger batch size."
        for _, r in rows.iterrows()
    ]


def accuracy_flags(df: pd.DataFrame, baseline: str, tolerance: float = ACCURACY_TOLERANCE) -> pd.DataFrame:
    """Per workload, batch size and seed, test accuracy of each device
    against the baseline's; ``flag`` marks differences above ``tolerance``."""
    block = [*run.SETTING, "seed"]
    base = df[df.device == baseline][[*block, "test_accuracy"]]
    merged = df.merge(base, on=block, suffixes=("", "_baseline"))
    merged["difference"] = merged.test_accuracy - merged.test_accuracy_baseline
    merged["flag"] = merged.difference.abs() > tolerance
    return merged[[*block, "device", "test_accuracy", "test_accuracy_baseline", "difference", "flag"]]


def accuracy(summary: pd.DataFrame, baseline: str) -> list[str]:
    flags = accuracy_flags(summary, baseline)
    return [
        f"Accuracy differs: {r.device} reached {r.test_accuracy:.2%} test accuracy {at(r, flags)}, "
        f"seed {r.seed}, against {r.test_accuracy_baseline:.2%} on {baseline} (more than "
        f"{ACCURACY_TOLERANCE:.0%} apart): the devices may not train the same model."
        for _, r in flags[flags.flag].iterrows()
    ]


def software_differences(df: pd.DataFrame, baseline: str) -> list[str]:
    """Warnings for devices whose software differs from the baseline's."""
    base = df[df.device == baseline].iloc[0]
    out = []
    for device, runs in df.groupby("device", sort=True):
        first = runs.iloc[0]
        used = {same_text(r.get("framework")) or frameworks.DEFAULT for r in (first, base)}
        # another framework's versions are expected to differ: the framework is part of the device
        own = {f for fw in frameworks.declarations().values() for f in fw.software if len(used) > 1}
        for field in frameworks.software():
            if field not in own and field in df and same_text(first[field]) != same_text(base[field]):
                name = "the training code" if field == "training_code" else field
                out.append(
                    f"{baseline} ran {name} {base[field]}, {device} {first[field]}: "
                    "part of the speedup may be the software"
                )
        for field in GPU_SOFTWARE:  # only between two GPU devices: a CPU has no CUDA stack
            ours, theirs = (same_text(r.get(field)) for r in (first, base))
            if "null" not in (ours, theirs) and ours != theirs:
                out.append(
                    f"{baseline} ran {field} {theirs}, {device} {ours}: part of the speedup may be the GPU "
                    "software stack"
                )
    return out


def efficiency_flags(speedup: pd.DataFrame) -> list[str]:
    """Efficiency rows that cannot be right: a run above its device's
    calibrated rate, or a device whose calibrated rate is below that of a
    device of the same type with fewer threads on the same machine."""
    out = []
    for _, r in speedup[speedup.fraction_of_calibrated > 1].iterrows():
        out.append(
            f"{r.device} {at(r, speedup)} ran at {r.fraction_of_calibrated:.1%} of its calibrated rate: {_DISTURBED}."
        )
    threaded = speedup.device_type.map(lambda t: devices.TYPES[t].compares_threads)
    rated = speedup[threaded & speedup.calibrated_flops_per_s.notna()]
    for _, group in rated.groupby(["device_type", "machine_key", "workload", "batch_size"]):
        for _, more in group.iterrows():
            fewer = group[(group.threads < more.threads) & (group.calibrated_flops_per_s > more.calibrated_flops_per_s)]
            for _, less in fewer.iterrows():
                out.append(
                    f"{more.device} ({more.device_words}) calibrated at "
                    f"{more.calibrated_flops_per_s / 1e9:.1f} GFLOP/s {at(more, speedup)}, below {less.device} "
                    f"({less.device_words}) at {less.calibrated_flops_per_s / 1e9:.1f}: "
                    f"{_DISTURBED}."
                )
    return out


def drift(drift_table: pd.DataFrame, speedup: pd.DataFrame) -> list[str]:
    """Drift beyond the larger of MIN_DRIFT_WARN and the seeds' CV, whose
    interval excludes no change (a trend, not the runs' own scatter)."""
    cv = speedup.set_index([*run.SETTING, "device"]).cv_seeds
    out = []
    for _, r in drift_table.iterrows():
        limit = max(MIN_DRIFT_WARN, cv.get((r.workload, r.batch_size, r.device), 0.0) or 0.0)
        significant = r.epoch_time_drift_ci_low > 0 or r.epoch_time_drift_ci_high < 0
        if math.isfinite(r.epoch_time_drift) and abs(r.epoch_time_drift) > limit and significant:
            out.append(
                f"{r.device} {at(r, drift_table)}: timings drifted by {r.epoch_time_drift:+.1%} over the "
                f"run (95% CI {r.epoch_time_drift_ci_low:+.1%} to {r.epoch_time_drift_ci_high:+.1%}): the machine "
                "was not steady; rerun when it is idle"
            )
    return out


def disturbed(summary: pd.DataFrame) -> pd.DataFrame:
    """The runs whose steady epochs saw other processes use more than INTERFERENCE_WARN cores."""
    if "other_cores_max" not in summary:
        return summary.iloc[0:0]
    return summary[summary.other_cores_max > INTERFERENCE_WARN]


def interference(summary: pd.DataFrame) -> list[str]:
    runs = disturbed(summary)
    if runs.empty:
        return []
    named = words.listed(
        f"{r.device} {at(r, summary)}, seed {r.seed} ({r.other_cores_max:.0%} of a core)"
        for _, r in runs.sort_values(run.RUN_KEY).iterrows()
    )
    return [
        f"Other processes ran beside {len(runs)} run(s), using more than {INTERFERENCE_WARN:.0%} of a core in a "
        f"steady epoch: {named}. Their times may be slow; rerun them when the machine is idle (delete their "
        "records and run snakemake again)."
    ]


def oversubscribed(summary: pd.DataFrame) -> pd.DataFrame:
    """The runs whose threads outnumbered the cores left free by other processes in a steady epoch
    (the machine's cores less the busiest neighbour's, to the nearest core)."""
    if not {"other_cores_max", "machine_cores"} <= set(summary) or "threads" not in summary:
        return summary.iloc[0:0]
    free = (summary.machine_cores - summary.other_cores_max).round()
    return summary[summary.threads.notna() & free.notna() & (summary.threads > free)]


def oversubscription(summary: pd.DataFrame) -> list[str]:
    runs = oversubscribed(summary)
    if runs.empty:
        return []
    named = words.listed(
        f"{r.device} {at(r, summary)}, seed {r.seed} ({int(r.threads)} threads, "
        f"{r.machine_cores - r.other_cores_max:.1f} of {int(r.machine_cores)} cores free)"
        for _, r in runs.sort_values(run.RUN_KEY).iterrows()
    )
    return [
        f"{len(runs)} run(s) had more threads than free cores: {named}. Their threads waited for each other "
        "(OpenMP's spin-waiting threads, PyTorch's above all, can run several times slower), so these times "
        "measure the contention, not the device. Rerun them on an idle machine, or give the device fewer threads."
    ]


def single_runs(summary: pd.DataFrame) -> list[str]:
    if summary.groupby([*run.SETTING, "device"]).size().min() >= 2:
        return []
    return ["Some device, workload and batch size have a single run: no confidence interval is possible. Add seeds."]


def unsigned(folders) -> list[str]:
    """Folders merged although trusted_keys asks for signatures (the config's allow_unsigned_folders)."""
    if not folders:
        return []
    return [
        f"Merged unsigned although trusted_keys is set (allow_unsigned_folders): {words.listed(folders)}. "
        "Nothing shows who made these runs; bundle and sign them on their machines to know."
    ]


def dropped_bundles(dropped) -> list[str]:
    """Bundles in extra_runs left out because their signature is not (or no longer) trusted."""
    return [f"Left out bundle {d['bundle']}: none of its runs is in this report. {d['reason']}" for d in dropped]


def intervals_apart(speedup: pd.DataFrame) -> list[str]:
    """Cells where Fieller's interval and the BCa bootstrap's disagree (analysis/bootstrap.py)."""
    if "intervals_disagree" not in speedup:
        return []
    rows = speedup[speedup.intervals_disagree.fillna(False).astype(bool)]
    return [
        f"The two intervals disagree for {r.device} {at(r, speedup)}: Fieller's [{r.speedup_ci_low:.2f}, "
        f"{r.speedup_ci_high:.2f}] against the BCa bootstrap's [{r.bootstrap_ci_low:.2f}, {r.bootstrap_ci_high:.2f}] "
        f"(an end apart by more than {bootstrap.DISAGREE:.0%} of the speedup): its timings are far from normal; look at the runs "
        "behind it (summary.csv) before quoting either."
        for _, r in rows.iterrows()
    ]


def warnings(tables, baseline: str, config: dict) -> list[str]:
    """Every warning, as plain sentences, in the report's order."""
    s, sp = tables.summary, tables.speedup
    return [
        *no_accelerator(s, config),
        *noisy(sp),
        *intervals_apart(sp),
        *host_dispatch(sp),
        *accuracy(s, baseline),
        *software_differences(s, baseline),
        *efficiency_flags(sp),
        *drift(tables.drift, sp),
        *interference(s),
        *oversubscription(s),
        *single_runs(s),
    ]
