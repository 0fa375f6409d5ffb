"""The Markdown report: environment, config, speedup with CI, accuracy."""

from __future__ import annotations

import math

import pandas as pd
import yaml

from .aggregate import ACCURACY_TOLERANCE, CV_WARN, accuracy_flags
from .stats import CI_METHOD


def _num(x, fmt="{:.3g}") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a" if x is None or math.isnan(x) else ("∞" if x > 0 else "-∞")
    return fmt.format(x)


def _ci(low, high) -> str:
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in (low, high)):
        return "n/a (needs ≥ 2 runs per device)"
    return f"[{_num(low, '{:.2f}')}, {_num(high, '{:.2f}')}]"


def _table(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        lines.append("| " + " | ".join(str(row[c]) for c in cols) + " |")
    return "\n".join(lines)


def warnings(summary: pd.DataFrame, speedup: pd.DataFrame, baseline: str, config: dict) -> list[str]:
    out = []
    if config.get("devices_auto") and not (summary.device_type == "gpu").any():
        out.append(
            "**No GPU was found** on this machine (`devices: auto`, nvidia-smi lists none), so this "
            "report compares CPU thread counts only; the speedups below are not GPU speedups."
        )
    noisy = speedup[(speedup.cv_seeds > CV_WARN) | (speedup.cv_epochs > CV_WARN)]
    for _, r in noisy.iterrows():
        out.append(
            f"Noisy timing: {r.device} at batch size {r.batch_size} has a CV of "
            f"{_num(r.cv_seeds * 100, '{:.1f}%')} across seeds and {_num(r.cv_epochs * 100, '{:.1f}%')} "
            f"across steady-state epochs (above {CV_WARN:.0%}). Close other programs, pin the CPU "
            "frequency, or add seeds."
        )
    flags = accuracy_flags(summary, baseline)
    for _, r in flags[flags.flag].iterrows():
        out.append(
            f"Accuracy differs: {r.device} reached {r.test_accuracy:.2%} test accuracy at batch size "
            f"{r.batch_size}, seed {r.seed}, against {r.test_accuracy_baseline:.2%} on {baseline} "
            f"(more than {ACCURACY_TOLERANCE:.0%} apart): the devices may not train the same model."
        )
    if summary.groupby(["device", "batch_size"]).size().min() < 2:
        out.append("Some device and batch size have a single run: no confidence interval is possible. Add seeds.")
    return out


def environment_table(summary: pd.DataFrame) -> str:
    rows = summary.drop_duplicates("device")[
        ["device", "host", "device_type", "threads", "gpu_name", "cpu_model", "tensorflow", "python"]
    ]
    return _table(rows.fillna("—"))


def render(
    summary: pd.DataFrame,
    speedup: pd.DataFrame,
    baseline: str,
    config: dict,
    figure_files: list[str],
    environments: dict,
) -> str:
    public_config = {k: v for k, v in config.items() if not k.startswith("_")}
    pipelines = ", ".join(sorted(summary.input_pipeline.dropna().unique()))
    parts = ["# MNIST MLP training speedup report", ""]
    parts += [
        f"Model: TensorLayer MLP 784-800-800-10 (dropout 0.2/0.5/0.5), Adam lr "
        f"{config.get('learning_rate')}. {len(summary)} runs on {summary.device.nunique()} devices, "
        f"batch sizes {sorted(int(b) for b in summary.batch_size.unique())}, "
        f"seeds {sorted(int(s) for s in summary.seed.unique())}. "
        f"Input pipeline: {pipelines} (`device`: data placed on the device once, outside the timing; "
        "`host`: each batch copied from host memory inside the timing, as the original did).",
        "",
    ]
    warn = warnings(summary, speedup, baseline, config)
    if warn:
        parts += ["## Warnings", ""] + [f"- {w}" for w in warn] + [""]

    parts += [
        "## Speedup over " + baseline,
        "",
        f"Speedup S = mean(T_{baseline}) / mean(T_device) of "
        "steady-state epoch times; 95% interval: " + CI_METHOD + ".",
        "",
    ]
    table = pd.DataFrame(
        {
            "batch size": speedup.batch_size,
            "device": speedup.device,
            f"{baseline} epoch (s)": speedup.baseline_epoch_s_mean.map(lambda v: _num(v, "{:.3f}")),
            "device epoch (s)": [
                f"{_num(m, '{:.3f}')} ± {_num(s, '{:.3f}')}" for m, s in zip(speedup.epoch_s_mean, speedup.epoch_s_std)
            ],
            "samples/s": speedup.samples_per_s_mean.map(lambda v: _num(v, "{:,.0f}")),
            "speedup": speedup.speedup.map(lambda v: _num(v, "{:.2f}×")),
            "95% CI": [_ci(lo, hi) for lo, hi in zip(speedup.speedup_ci_low, speedup.speedup_ci_high)],
            "n": speedup.n,
            "CV seeds": speedup.cv_seeds.map(lambda v: _num(v * 100, "{:.1f}%")),
            "seeds for ±5%": speedup.seeds_for_5pct_ci.map(lambda v: _num(v, "{:.0f}")),
        }
    )
    parts += [_table(table), ""]
    if speedup.fraction_of_calibrated.notna().any():
        eff = speedup[
            ["batch_size", "device", "achieved_flops_per_s", "calibrated_flops_per_s", "fraction_of_calibrated"]
        ].copy()
        eff["achieved_flops_per_s"] = eff.achieved_flops_per_s.map(lambda v: _num(v / 1e9, "{:.1f} GFLOP/s"))
        eff["calibrated_flops_per_s"] = eff.calibrated_flops_per_s.map(lambda v: _num(v / 1e9, "{:.1f} GFLOP/s"))
        eff["fraction_of_calibrated"] = eff.fraction_of_calibrated.map(lambda v: _num(v * 100, "{:.0f}%"))
        eff.columns = ["batch size", "device", "achieved", "calibrated matmul rate", "fraction"]
        parts += [
            "## Efficiency against each device's own limit",
            "",
            "Achieved training FLOP/s (analytic count per step) against the calibrated float32 "
            "matrix-multiply rate of the same device at the MLP's layer shapes.",
            "",
            _table(eff),
            "",
        ]

    acc = summary.groupby(["device", "batch_size"]).test_accuracy.agg(["mean", "min", "max", "count"]).reset_index()
    acc_table = pd.DataFrame(
        {
            "device": acc.device,
            "batch size": acc.batch_size,
            "test accuracy (mean)": acc["mean"].map(lambda v: f"{v:.2%}"),
            "min": acc["min"].map(lambda v: f"{v:.2%}"),
            "max": acc["max"].map(lambda v: f"{v:.2%}"),
            "n": acc["count"],
        }
    )
    parts += [
        "## Test accuracy",
        "",
        "The same model should reach the same accuracy on every device "
        f"(differences above {ACCURACY_TOLERANCE:.0%} per seed are flagged under Warnings).",
        "",
        _table(acc_table),
        "",
    ]
    parts += ["## Figure", ""] + [f"![speedup figure]({f})" for f in figure_files if f.endswith(".png")]
    parts += ["", "Files: " + ", ".join(f"`{f}`" for f in figure_files), ""]
    parts += ["## Devices and environment", "", environment_table(summary), ""]
    for device, env in environments.items():
        parts += [
            f"<details><summary>{device}: full environment</summary>",
            "",
            "```yaml",
            yaml.safe_dump(env, sort_keys=True).rstrip(),
            "```",
            "</details>",
            "",
        ]
    parts += ["## Configuration", "", "```yaml", yaml.safe_dump(public_config, sort_keys=False).rstrip(), "```", ""]
    return "\n".join(parts)
