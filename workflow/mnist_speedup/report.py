"""The Markdown report: what was found first, then the evidence.

Every value that comes from a record or the config (device labels, host
names, versions) is escaped before it goes into Markdown or HTML.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass

import pandas as pd
import yaml

from . import drift as drift_check
from .aggregate import (
    ACCURACY_TOLERANCE,
    CV_WARN,
    accuracy_flags,
    device_labels,
    efficiency_flags,
    software_differences,
)
from .tta import BEST_CAVEAT

HOST_OVERHEAD_WARN = 0.10


def esc(value) -> str:
    """Text safe in a Markdown table cell and in HTML."""
    return html.escape(str(value), quote=False).replace("|", "\\|").replace("\n", " ")


def code_block(text: str) -> str:
    """Text for a fenced code block: Markdown shows it verbatim (no HTML is
    interpreted there); only a fence inside it could end the block."""
    return text.rstrip().replace("`" * 3, "'" * 3)


def _num(x, fmt="{:.3g}") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a" if x is None or math.isnan(x) else ("∞" if x > 0 else "-∞")
    return fmt.format(x)


def _ci(low, high, note=None) -> str:
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in (low, high)):
        return f"n/a ({esc(note)})" if isinstance(note, str) and note else "n/a"
    return f"[{_num(low, '{:.2f}')}, {_num(high, '{:.2f}')}]"


def _table(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(esc(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        lines.append("| " + " | ".join(esc(row[c]) for c in cols) + " |")
    return "\n".join(lines)


@dataclass
class Tables:
    summary: pd.DataFrame
    speedup: pd.DataFrame
    tta: pd.DataFrame
    best: pd.DataFrame
    drift: pd.DataFrame

    @property
    def names(self) -> dict[str, str]:
        return device_labels(self.summary)


# ------------------------------------------------------------ headline


def _share(v) -> str:
    """A measured share; a negative one is measurement noise around zero."""
    if isinstance(v, (int, float)) and math.isfinite(v) and v < 0.005:
        return "≈0% (within noise)" if v < 0 else "≈0%"
    return _pct(v)


def _pct(v) -> str:
    return f"{v:.0%}" if isinstance(v, (int, float)) and math.isfinite(v) else "n/a"


def headline(t: Tables, baseline: str) -> list[str]:
    """One sentence per device and batch size, in words, with its interval."""
    names, out = t.names, []
    for _, r in t.speedup[t.speedup.device != baseline].iterrows():
        who, base = esc(names[r.device]), esc(names[baseline])
        n = f"{int(r.n)} and {int(r.baseline_n)} runs" if r.n != r.baseline_n else f"{int(r.n)} seeds each"
        if not (math.isfinite(r.speedup_ci_low) and math.isfinite(r.speedup_ci_high)):
            note = r.speedup_ci_note if isinstance(r.speedup_ci_note, str) else "no interval"
            out.append(f"{who} ran {_num(r.speedup, '{:.2f}')}× as fast as {base} per epoch at batch size "
                       f"{r.batch_size} ({n}), but with no confidence interval ({esc(note)}).")  # fmt: skip
            continue
        ci = f"95% CI {r.speedup_ci_low:.2f}-{r.speedup_ci_high:.2f}, {n}"
        if r.speedup_ci_low <= 1 <= r.speedup_ci_high:
            out.append(f"{who} and {base} cannot be told apart at this number of runs at batch size "
                       f"{r.batch_size} (speedup {r.speedup:.2f}×, {ci}).")  # fmt: skip
        else:
            pace = f"{r.speedup:.2f}× faster than" if r.speedup > 1 else f"at {r.speedup:.2f}× the speed of"
            out.append(f"{who} trained {pace} {base} per epoch at batch size {r.batch_size} ({ci}).")
    return out


def tta_sentences(t: Tables, baseline: str, target: float) -> list[str]:
    """The quotable sentence: time to accuracy against time per epoch."""
    names, out = t.names, []
    per_epoch = t.speedup.set_index(["batch_size", "device"])
    tta = t.tta.set_index(["batch_size", "device"])
    for _, r in t.tta[t.tta.device != baseline].iterrows():
        who, base = esc(names[r.device]), esc(names[baseline])
        if not math.isfinite(r.tta_speedup):
            out.append(f"At batch size {r.batch_size}, no time-to-accuracy speedup of {who}: {esc(r.tta_note)}.")
            continue
        ci = _ci(r.tta_speedup_ci_low, r.tta_speedup_ci_high, r.tta_note).strip("[]").replace(", ", "-")
        epoch = per_epoch.loc[(r.batch_size, r.device), "speedup"]
        if r.tta_speedup_ci_low <= 1 <= r.tta_speedup_ci_high:
            head = (f"At batch size {r.batch_size}, {who} and {base} cannot be told apart in time to "
                    f"{target:.0%} validation accuracy at this number of runs ({r.tta_speedup:.2f}×, 95% CI {ci})")  # fmt: skip
        else:
            head = (f"At batch size {r.batch_size}, {who} reached {target:.0%} validation accuracy "
                    f"{r.tta_speedup:.2f}× (95% CI {ci}) as fast as {base}")  # fmt: skip
        out.append(f"{head}. Measured per epoch it is {epoch:.2f}×{_why_different(r, tta, baseline, epoch)}")
    return out


def _why_different(r, tta: pd.DataFrame, baseline: str, epoch: float) -> str:
    if abs(epoch - r.tta_speedup) <= 0.05 * epoch:
        return "."
    base_epochs = tta.loc[(r.batch_size, baseline), "epochs_to_target_mean"]
    if abs(r.epochs_to_target_mean - base_epochs) >= 0.5:
        return (f", because the two need different numbers of epochs ({r.epochs_to_target_mean:.1f} "
                f"against {base_epochs:.1f}).")  # fmt: skip
    return (", with the same number of epochs: time to accuracy also counts the warm-up epochs, "
            "which the per-epoch figure leaves out.")  # fmt: skip


# ------------------------------------------------------------ warnings


def warnings(t: Tables, baseline: str, config: dict) -> list[str]:
    out = []
    s, sp = t.summary, t.speedup
    if config.get("devices_auto") and not (s.device_type == "gpu").any():
        out.append(
            "**No GPU was found** on this machine (`devices: auto`, nvidia-smi lists none), so this "
            "report compares CPU thread counts only; the speedups below are not GPU speedups."
        )
    for _, r in sp[(sp.cv_seeds > CV_WARN) | (sp.cv_epochs > CV_WARN)].iterrows():
        out.append(
            f"Noisy timing: {esc(r.device)} at batch size {r.batch_size} has a CV of "
            f"{_num(r.cv_seeds * 100, '{:.1f}%')} across seeds and {_num(r.cv_epochs * 100, '{:.1f}%')} "
            f"across steady-state epochs (above {CV_WARN:.0%}). Close other programs, pin the CPU "
            "frequency, or add seeds."
        )
    for _, r in sp[sp.host_share_of_timed_epoch > HOST_OVERHEAD_WARN].iterrows():
        out.append(
            f"At batch size {r.batch_size} on {esc(r.device)}, {r.host_share_of_timed_epoch:.0%} of each epoch is "
            "host dispatch: this figure measures the Python loop more than the device; use "
            "`steps_per_call: epoch` or a larger batch size."
        )
    flags = accuracy_flags(s, baseline)
    for _, r in flags[flags.flag].iterrows():
        out.append(
            f"Accuracy differs: {esc(r.device)} reached {r.test_accuracy:.2%} test accuracy at batch size "
            f"{r.batch_size}, seed {r.seed}, against {r.test_accuracy_baseline:.2%} on {esc(baseline)} "
            f"(more than {ACCURACY_TOLERANCE:.0%} apart): the devices may not train the same model."
        )
    out += [esc(w) for w in software_differences(s, baseline)]
    out += [esc(w) for w in efficiency_flags(sp)]
    out += [esc(w) for w in drift_check.warnings(t.drift, sp)]
    if s.groupby(["device", "batch_size"]).size().min() < 2:
        out.append("Some device and batch size have a single run: no confidence interval is possible. Add seeds.")
    return out


# ------------------------------------------------------------ sections


def header(t: Tables, config: dict) -> list[str]:
    s = t.summary
    r = s.iloc[0]
    machines = ", ".join(sorted({f"{esc(h)} ({esc(c)})" for h, c in zip(s.host, s.cpu_model)}))
    return [
        f"Model: TensorLayer MLP 784-800-800-10 (dropout 0.2/0.5/0.5), Adam lr {esc(config.get('learning_rate'))}. "
        f"**{int(r.epochs)} epochs** ({int(r.warmup_epochs)} warm-up), "
        f"seeds {sorted(int(x) for x in s.seed.unique())}, batch sizes {sorted(int(b) for b in s.batch_size.unique())}, "
        f"{len(s)} runs on {s.device.nunique()} devices. Machine: {machines}.",
        "",
        f"Loop timed: {esc(r.loop)}. Input pipeline: {esc(r.input_pipeline)}. ± is one standard deviation (SD) "
        "across seeds everywhere.",
        "",
    ]


def speedup_section(t: Tables, baseline: str) -> list[str]:
    sp, names = t.speedup, t.names
    table = pd.DataFrame(
        {
            "batch size": sp.batch_size,
            "device": sp.device.map(names),
            "epoch (s), mean ± SD": [
                f"{_num(m, '{:.3f}')} ± {_num(s, '{:.3f}')}" for m, s in zip(sp.epoch_s_mean, sp.epoch_s_std)
            ],  # fmt: skip
            "samples/s": sp.samples_per_s.map(lambda v: _num(v, "{:,.0f}")),
            "speedup": sp.speedup.map(lambda v: _num(v, "{:.2f}×")),
            "95% CI": [
                _ci(lo, hi, note) for lo, hi, note in zip(sp.speedup_ci_low, sp.speedup_ci_high, sp.speedup_ci_note)
            ],  # fmt: skip
            "interval method": sp.ci_method,
            "n": sp.n,
            "CV seeds": sp.cv_seeds.map(lambda v: _num(v * 100, "{:.1f}%")),
            "seeds for ±5%": sp.seeds_for_5pct_ci.map(lambda v: _num(v, "{:.0f}")),
        }
    )
    notes = [f"- batch size {r.batch_size}, {esc(r.device)}: {esc(r.few_runs_note)}."
             for _, r in sp.iterrows() if isinstance(r.few_runs_note, str)]  # fmt: skip
    return [
        f"## Speedup over {esc(names[baseline])}",
        "",
        f"S = mean(T_{esc(baseline)}) / mean(T_device) of steady-state epoch times. Where both devices ran "
        "in the same interleaved blocks, the 95% interval is Fieller's for paired means (shared drift "
        "cancels); otherwise Fieller's for independent means. An interval that would be unbounded or "
        "reach 0 is not shown.",
        "",
        _table(table),
        "",
        *notes,
        "" if notes else "",
    ]


def _bytes(v) -> str:
    return _num(v / 2**20, "{:,.0f} MiB") if isinstance(v, (int, float)) and math.isfinite(v) else "n/a"


def resources_section(t: Tables) -> list[str]:
    sp, names = t.speedup, t.names
    missing = sp[~sp.energy_j_per_epoch.map(lambda v: isinstance(v, (int, float)) and math.isfinite(v))]
    reasons = set(missing.energy_reason.dropna())
    one_reason = len(reasons) == 1 and len(missing) == len(sp)  # then said once, under the table
    table = pd.DataFrame(
        {
            "batch size": sp.batch_size,
            "device": sp.device.map(names),
            "steps per call": sp.steps_per_call,
            "host share of a one-call step": sp.host_share_of_one_call_step.map(_share),
            "host share of the timed epoch": sp.host_share_of_timed_epoch.map(_share),
            "peak host RSS": sp.host_peak_rss_bytes.map(_bytes),
            "peak GPU memory": sp.gpu_peak_bytes.map(_bytes),
            "energy per epoch": [
                f"{_num(j, '{:.1f} J')} ({_num(w, '{:.0f} W')})"
                if math.isfinite(j)
                else ("n/a" if one_reason else f"n/a ({esc(reason)})")
                for j, w, reason in zip(sp.energy_j_per_epoch, sp.mean_watts, sp.energy_reason)
            ],  # fmt: skip
            "energy ratio (95% CI)": [
                f"{_num(e, '{:.2f}×')} {_ci(lo, hi, note)}" if math.isfinite(e) else "n/a"
                for e, lo, hi, note in zip(
                    sp.energy_ratio, sp.energy_ratio_ci_low, sp.energy_ratio_ci_high, sp.energy_ratio_ci_note
                )
            ],
        }
    )
    return [
        "## Host overhead, memory and energy",
        "",
        "Host share: the host's cost of one call of the compiled training function (one-step calls "
        "against a many-step call, measured after the timed epochs) as a share of a one-call step, and "
        "times the calls per epoch as a share of the timed epoch. Energy: NVML (whole GPU board) or RAPL "
        "(the whole CPU package, every process on it, not this process alone), read around each "
        "steady-state epoch; the ratio is baseline energy / device energy, with the same interval as time.",
        "",
        _table(table),
        "",
        *([f"No energy counter on any device: {esc(next(iter(reasons)))}.", ""] if one_reason else []),
    ]


def efficiency_section(t: Tables) -> list[str]:
    sp, names = t.speedup, t.names
    if not sp.fraction_of_calibrated.notna().any():
        return []
    eff = pd.DataFrame(
        {
            "batch size": sp.batch_size,
            "device": sp.device.map(names),
            "achieved": sp.achieved_flops_per_s.map(lambda v: _num(v / 1e9, "{:.1f} GFLOP/s")),
            "calibrated matmul rate (TensorFlow)": sp.calibrated_flops_per_s.map(
                lambda v: _num(v / 1e9, "{:.1f} GFLOP/s")
            ),
            "same shapes through NumPy's BLAS": sp.get("numpy_flops_per_s", pd.Series(math.nan, sp.index)).map(
                lambda v: _num(v / 1e9, "{:.1f} GFLOP/s")
            ),
            "fraction": [
                _num(v * 100, "{:.0f}%") + (" ⚠ above the bound" if v > 1 else "") for v in sp.fraction_of_calibrated
            ],
        }
    )
    return [
        "## Efficiency against each device's own limit",
        "",
        "Achieved training FLOP/s (analytic count per step) against the calibrated float32 "
        "matrix-multiply rate of the same device at the MLP's layer shapes. On CPU devices the same "
        "products through NumPy's BLAS show whether TensorFlow, not the hardware, is the limit: where "
        "NumPy is much faster, the framework is.",
        "",
        _table(eff),
        "",
    ]


def tta_section(t: Tables, baseline: str, target: float, currency: str) -> list[str]:
    d, names = t.tta, t.names
    table = pd.DataFrame(
        {
            "batch size": d.batch_size,
            "device": d.device.map(names) + d.best_batch_size.map(lambda b: " (best)" if b else ""),
            "reached": [f"{int(k)} of {int(n)}" for k, n in zip(d.runs_reached, d.runs)],
            "time to target (s), mean ± SD": [f"{_num(m, '{:.2f}')} ± {_num(s, '{:.2f}')}"
                                              for m, s in zip(d.time_to_target_s_mean, d.time_to_target_s_std)],
            "epochs to target": d.epochs_to_target_mean.map(lambda v: _num(v, "{:.1f}")),
            "speedup": d.tta_speedup.map(lambda v: _num(v, "{:.2f}×")),
            "95% CI": [_ci(lo, hi, note) for lo, hi, note in zip(d.tta_speedup_ci_low, d.tta_speedup_ci_high,
                                                                  d.tta_note)],
        }
    )  # fmt: skip
    parts = [
        f"## Time to accuracy ({target:.0%} validation accuracy)",
        "",
        "Time to target: the sum of the epoch clocks up to the first epoch at or above the target, warm-up "
        "included; evaluation, setup and tracing excluded. No speedup where some run did not reach it.",
        "",
        *[f"- {s}" for s in tta_sentences(t, baseline, target)],
        "",
        _table(table),
        "",
    ]
    parts += best_section(t, baseline)
    if d.cost_ratio.notna().any():
        cost = d.dropna(subset=["cost_ratio"])
        parts += [
            f"Cost to target ({esc(currency)}; price per hour from the config) and the cost ratio "
            "(baseline cost / device cost: the time interval times the price ratio):",
            "",
            _table(
                pd.DataFrame(
                    {
                        "batch size": cost.batch_size,
                        "device": cost.device.map(names),
                        "cost to target": cost.cost_to_target.map(lambda v: _num(v, "{:.4g}")),
                        "cost ratio": cost.cost_ratio.map(lambda v: _num(v, "{:.2f}×")),
                        "95% CI": [_ci(lo, hi) for lo, hi in zip(cost.cost_ratio_ci_low, cost.cost_ratio_ci_high)],
                    }
                )
            ),  # fmt: skip
            "",
        ]
    return parts


def best_section(t: Tables, baseline: str) -> list[str]:
    if t.best.empty:
        return []
    names, b = t.names, t.best
    table = pd.DataFrame({
        "device (its best batch size)": [f"{names[d]} ({bs})" for d, bs in zip(b.device, b.device_batch_size)],
        f"{names[baseline]} at its best": b.baseline_batch_size,
        "speedup": b.tta_speedup.map(lambda v: _num(v, "{:.2f}×")),
        "95% CI": [_ci(lo, hi, note) for lo, hi, note in zip(b.tta_speedup_ci_low, b.tta_speedup_ci_high, b.tta_note)],
    })  # fmt: skip
    return ["Best against best (each device at its own fastest batch size to target):", "", _table(table), "",
            f"Caveat: {BEST_CAVEAT}", ""]  # fmt: skip


def drift_section(t: Tables) -> list[str]:
    d, names = t.drift, t.names

    def change(v, lo, hi):
        return "n/a (needs ≥ 3 runs)" if not math.isfinite(v) else f"{v:+.1%} [{lo:+.1%}, {hi:+.1%}]"

    table = pd.DataFrame({
        "batch size": d.batch_size, "device": d.device.map(names), "runs": d.n,
        "span (min)": (d.span_s / 60).map(lambda v: _num(v, "{:.1f}")),
        "epoch-time change over the run (95% CI)": [change(*v) for v in zip(
            d.epoch_time_drift, d.epoch_time_drift_ci_low, d.epoch_time_drift_ci_high)],
        "device-rate change (95% CI)": [change(*v) for v in zip(
            d.device_rate_drift, d.device_rate_drift_ci_low, d.device_rate_drift_ci_high)],
    })  # fmt: skip
    return [
        "## Drift check",
        "",
        "Runs are ordered in randomised complete blocks (one block per batch size and seed, every device "
        "once, in a shuffled order). Per device and batch size, the epoch time is regressed on the run's "
        "start time; the change over the run is warned about above the larger of "
        f"{drift_check.MIN_DRIFT_WARN:.0%} and the seeds' CV. The device rate is the matrix-multiply probe "
        "each run takes before its epochs.",
        "",
        _table(table),
        "",
    ]


def accuracy_section(t: Tables) -> list[str]:
    s, names = t.summary, t.names
    acc = s.groupby(["device", "batch_size"]).test_accuracy.agg(["mean", "min", "max", "count"]).reset_index()
    table = pd.DataFrame({
        "device": acc.device.map(names), "batch size": acc.batch_size,
        "test accuracy (mean)": acc["mean"].map(lambda v: f"{v:.2%}"),
        "min": acc["min"].map(lambda v: f"{v:.2%}"), "max": acc["max"].map(lambda v: f"{v:.2%}"), "n": acc["count"],
    })  # fmt: skip
    return [
        "## Test accuracy",
        "",
        "The same model should reach the same accuracy on every device "
        f"(differences above {ACCURACY_TOLERANCE:.0%} per seed are flagged under Warnings).",
        "",
        _table(table),
        "",
    ]


def figure_caption(t: Tables, baseline: str, target: float) -> str:
    """Written from the data: what each panel shows, n and the method."""
    n = t.summary.groupby(["device", "batch_size"]).size()
    runs = f"{n.min()}" if n.min() == n.max() else f"{n.min()}-{n.max()}"
    methods = sorted(set(t.speedup[t.speedup.device != baseline].ci_method))
    return (
        f"**Figure 1.** (a) Training throughput of {t.summary.device.nunique()} devices against batch size "
        f"(samples per epoch / mean epoch time, {runs} runs each, 95% t-intervals; dotted: "
        f"calibrated bound). (b) Speedup over {esc(baseline)} with its 95% interval "
        f"({esc('; '.join(methods) or 'none')}); hollow markers have no interval; the line at 1 is no speedup. "
        f"(c) Validation accuracy against cumulative timed training time, mean over seeds with 95% bands; "
        f"dashed: the {target:.0%} target."
    )


def figures_section(t: Tables, baseline: str, target: float, figures: dict[str, list[str]]) -> list[str]:
    parts = ["## Figures", ""]
    parts += [f"![speedup figure]({f})" for f in figures["speedup"] if f.endswith(".png")]
    parts += ["", figure_caption(t, baseline, target), ""]
    parts += [f"![timeline]({f})" for f in figures["timeline"] if f.endswith(".png")]
    parts += ["", "**Figure 2.** Each run's steady-state epoch time against its start; shaded: calibrations.", ""]
    parts += ["Files: " + ", ".join(f"`{f}`" for fs in figures.values() for f in fs), ""]
    return parts


def environment_section(t: Tables, environments: dict) -> list[str]:
    rows = t.summary.drop_duplicates("device")[
        ["device", "host", "device_type", "threads", "gpu_name", "cpu_model", "tensorflow", "python"]
    ]
    parts = ["## Devices and environment", "", _table(rows.fillna("—")), ""]
    for device, env in environments.items():
        parts += [
            f"<details><summary>{esc(device)}: full environment</summary>",
            "",
            "```yaml",
            code_block(yaml.safe_dump(env, sort_keys=True)),
            "```",
            "</details>",
            "",
        ]
    return parts


def render(t: Tables, baseline: str, config: dict, figures: dict[str, list[str]], environments: dict) -> str:
    public_config = {k: v for k, v in config.items() if not k.startswith("_")}
    target = config.get("target_accuracy", 0.95)
    parts = ["# MNIST MLP training speedup report", ""]
    parts += [f"**{line}**" for line in headline(t, baseline)] + [""]
    parts += header(t, config)
    warn = warnings(t, baseline, config)
    if warn:
        parts += ["## Warnings", ""] + [f"- {w}" for w in warn] + [""]
    parts += speedup_section(t, baseline)
    parts += tta_section(t, baseline, target, config.get("currency", "USD"))
    parts += resources_section(t)
    parts += efficiency_section(t)
    parts += drift_section(t)
    parts += accuracy_section(t)
    parts += figures_section(t, baseline, target, figures)
    parts += environment_section(t, environments)
    parts += ["## Configuration", "", "```yaml", code_block(yaml.safe_dump(public_config, sort_keys=False)), "```", ""]
    return "\n".join(parts)


# ------------------------------------------------------------ findings for the HTML report


def _inline_html(text: str) -> str:
    """Report text (already escaped by :func:`esc`) with its bits of
    Markdown (bold, code, escaped pipes) as HTML."""
    text = text.replace("\\|", "|")
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def findings_html(t: Tables, baseline: str, config: dict) -> str:
    """What the report found, for `snakemake --report`: the headline, the
    header and every warning, as one small self-contained HTML page."""
    items = lambda lines: "".join(f"<li>{_inline_html(x)}</li>" for x in lines)  # noqa: E731
    warn = warnings(t, baseline, config)
    header_text = " ".join(_inline_html(x) for x in header(t, config) if x)
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Findings</title></head><body>'
        f"<h1>What this run found</h1><ul>{items(headline(t, baseline))}</ul>"
        f"<p>{header_text}</p>"
        + (f"<h2>Warnings</h2><ul>{items(warn)}</ul>" if warn else "<h2>Warnings</h2><p>None.</p>")
        + "<p>The full report, with every table, is results/&lt;experiment&gt;/report.md.</p></body></html>\n"
    )
